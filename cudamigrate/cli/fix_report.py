"""`cudamigrate fix`'s parent side: each file's computed fix (runner.FixOutcome, in input order) is reported,
written through fix/write.py's compare-and-swap when still unchanged, and counted; then what was fixed and what
remains is listed. The edits themselves are computed by the runner, in worker processes for large inputs.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import click

from .output import err
from ..pipeline.runner import FixOutcome
from ..core.textsafe import printable


@dataclass
class FixTally:
    """What `fix` did, counted only once a file is really written (or, with --diff, would be)."""

    changed: int = 0
    applied: int = 0
    remaining: int = 0
    unsafe_left: int = 0
    suggested_left: int = 0  # findings with a display-only suggested edit, never applied by --unsafe-fixes
    not_written: int = 0
    internal: int = 0
    had_error: bool = False
    tracebacks: list[str] = field(default_factory=list)
    written_dirs: set[str] = field(default_factory=set)
    roots: tuple[str, ...] | None = None  # the paths named: a symlink out of them is not written (None: any)
    fixed_findings: list = field(default_factory=list)  # for --show-fixes
    left_findings: list = field(default_factory=list)  # what remains, always listed


def record_fix(outcome: FixOutcome, write: bool, tally: FixTally) -> None:
    """One file's computed fix: report its notes and errors, write it if still unchanged, count it."""
    from ..fix.write import WriteRefused, write_checked

    disp, p = outcome.display, Path(outcome.path)
    if outcome.internal is not None:
        err(outcome.internal)
        tally.internal += 1
        tally.tracebacks.append(outcome.traceback or outcome.internal)
        return
    if outcome.error is not None:
        err(outcome.error)
        tally.had_error = True
        return
    res = outcome.result
    assert res is not None and outcome.snapshot is not None
    for w in outcome.warnings:
        err(f"note: {disp}: {w}")
    for e in res.errors:
        err(e)
        tally.had_error = True
    tally.internal += res.internal
    tally.tracebacks += res.tracebacks
    unsafe_left = sum(1 for f in res.remaining if f.applicability == "unsafe")
    tally.suggested_left += sum(1 for f in res.remaining if f.applicability == "display-only")
    if res.changed and write:
        try:
            tally.written_dirs.add(write_checked(p, res.fixed, outcome.snapshot, tally.roots))
        except (WriteRefused, OSError) as exc:
            why = str(exc) if isinstance(exc, WriteRefused) else f"cannot write: {exc.strerror or exc}"
            err(f"{disp}: {why}")
            tally.had_error = True
            tally.not_written += 1
            tally.remaining += len(res.applied) + len(res.remaining)  # the file still holds them all
            tally.unsafe_left += unsafe_left
            tally.left_findings += res.remaining
            return
    tally.fixed_findings += res.applied
    tally.left_findings += res.remaining
    tally.applied += len(res.applied)
    tally.remaining += len(res.remaining)
    tally.unsafe_left += unsafe_left
    if res.changed:
        tally.changed += 1
        if not write:
            text = res.diff()
            if sys.stdout.isatty():  # code's ESC/OSC bytes must not drive the terminal
                click.echo("\n".join(printable(ln) for ln in text.split("\n")), nl=False)
            else:  # piped: exact (click.echo would strip ANSI sequences), so `patch` applies it
                sys.stdout.flush()
                sys.stdout.buffer.write(text.encode("utf-8"))
                sys.stdout.buffer.flush()


def list_fix_outcome(applied: list, left: list, show_fixes: bool) -> None:
    """What `fix` leaves (always, like ruff's --fix) and, with --show-fixes, what it changed; on stderr."""
    from ..report.plan import plan_order
    from ..report.text import MARK

    if show_fixes and applied:
        from ..fix.commits import per_file_rules

        click.echo("Fixed:", err=True)
        for path, rules in sorted(per_file_rules(applied).items()):
            click.echo(f"  {path}: " + ", ".join(f"{rid} x{n}" for rid, n in sorted(rules.items())), err=True)
    if left:
        click.echo("Remaining:", err=True)
        for f in plan_order(left):
            click.echo(f"  {f.path}:{f.line}:{f.column}: {f.rule_id} {MARK[f.applicability]} {f.message}", err=True)


def verify_fixes(engine: Any, files: list[Path], outcomes: Iterable[FixOutcome], kw: dict[str, Any], cfg: Any,
                 paths: tuple[Path, ...], unsafe: bool, display_only: frozenset[str],
                 facts: Any = None, groups: frozenset[str] = frozenset()) -> tuple[Iterable[FixOutcome], Any]:
    """Compile verification (cudamigrate/fixproof/rollback.py) of the computed fixes, before anything is written:
    (the outcomes, repaired, and the summary), or the outcomes untouched and None when verification is off or,
    in `auto` mode, no compiler is known. `require` without a compiler: one line, exit 2. `groups`: the
    consistency groups the run withheld (FixRun.blocked), which a rollback's re-fix must leave out too."""
    from ..parse.clang import find_compile_db
    from ..fixproof.rollback import Verifier, resolve_mode

    try:
        mode = resolve_mode(kw.get("verify_mode"), cfg.get("verify"))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if mode == "off":
        return outcomes, None
    from ..pipeline.result_cache import unrecorded

    with unrecorded():  # the ancestors' listings are no cached result's dependency (see workspace/preparation.py)
        db_path = kw.get("compile_commands") or find_compile_db(list(paths) or [Path(".")])
    assert engine.project is not None
    engine = engine.with_run(semantic_provider=facts.facts_for if facts is not None else None)  # rollbacks refix as `fix` did
    v = Verifier(engine, engine.project, files, unsafe=unsafe, display_only=display_only, db_path=db_path,
                 jobs=kw.get("jobs"), use_cache=not kw.get("no_cache"), groups=groups)
    if not v.available():
        if mode == "require":
            err("cannot verify fixes: no nvcc on PATH and no compile_commands.json (--require-verify); nothing written")
            sys.exit(2)
        return outcomes, None
    done = list(outcomes)
    with unrecorded():  # compiles in temporary directories (and /tmp's listing): no scan result depends on them
        summary = v.run(done)
    for r in summary.rollbacks:
        err(r.text())
    for u in summary.unverified:
        err(f"note: {u}")
    return done, summary
