"""`cudamigrate fix`'s parent side: each file's computed fix (runner.FixOutcome, in input order) is reported,
written through fix/write.py's compare-and-swap when still unchanged, and counted; then what was fixed and what
remains is listed. The edits themselves are computed by the runner, in worker processes for large inputs.
"""

from __future__ import annotations

import os
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


def list_fix_outcome(applied: list, left: list, show_fixes: bool, err: bool = False, color: bool = False) -> None:
    """What `fix` leaves (always, like ruff's --fix) and, with --show-fixes, what it changed: on stdout, as
    ruff writes its remaining diagnostics (`fix . > log` keeps them), or on stderr (`err`) when stdout holds
    the fixed buffer (`fix -`) or the diff (`--diff`, `--dry-run`); painted when `color`."""
    from ..report.plan import plan_order
    from ..report.text import finding_head

    if show_fixes and applied:
        from ..fix.commits import per_file_rules

        click.echo("Fixed:", err=err)
        for path, rules in sorted(per_file_rules(applied).items()):
            click.echo(f"  {path}: " + ", ".join(f"{rid} x{n}" for rid, n in sorted(rules.items())), err=err)
    if left:
        click.echo("Remaining:", err=err)
        for f in plan_order(left):  # (`--color`: painted as scan's findings are)
            click.echo(f"  {finding_head(f, color)} {f.message}", err=err, color=True if color else None)


def verify_fixes(engine: Any, files: list[Path], outcomes: Iterable[FixOutcome], kw: dict[str, Any], cfg: Any,
                 paths: tuple[Path, ...], unsafe: bool, display_only: frozenset[str],
                 facts: Any = None, groups: frozenset[str] = frozenset(),
                 preview: bool = False) -> tuple[Iterable[FixOutcome], Any]:
    """Compile verification (cudamigrate/fixproof/rollback.py) of the computed fixes, before anything is written:
    (the outcomes, repaired, and the summary), or the outcomes untouched and None when verification is off or,
    in `auto` mode, no compiler is known. `require` without a compiler: one line, exit 2. `groups`: the
    consistency groups the run withheld (FixRun.blocked), which a rollback's re-fix must leave out too. `preview`
    (--diff, --dry-run): nothing is written, so nothing is compiled unless the command line asks (--verify)."""
    from ..parse.clang import find_compile_db
    from ..fixproof.rollback import Verifier, resolve_mode
    from ..fixproof.units import Unit

    try:
        mode = resolve_mode(kw.get("verify_mode"), cfg.get("verify"))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if mode == "off" or (preview and mode == "auto" and kw.get("verify_mode") is None and not kw.get("show_units")):
        return outcomes, None  # --diff/--dry-run show the fix; they compile only with --verify/--require-verify
    from ..pipeline.result_cache import unrecorded

    with unrecorded():  # the ancestors' listings are no cached result's dependency (see workspace/preparation.py)
        db_path = kw.get("compile_commands") or find_compile_db(list(paths) or [Path(".")])
    assert engine.project is not None
    from .progress import StatusLine

    status = StatusLine()
    trusted = bool(kw.get("compile_commands") or kw.get("trust_compile_commands")
                   or os.environ.get("CUDAMIGRATE_TRUST_COMPILE_COMMANDS") == "1")
    engine = engine.with_run(semantic_provider=facts.facts_for if facts is not None else None)  # rollbacks refix as `fix` did
    v = Verifier(engine, engine.project, files, unsafe=unsafe, display_only=display_only, db_path=db_path,
                 jobs=kw.get("jobs"), use_cache=not kw.get("no_cache"), groups=groups, flags=_flags(kw, cfg),
                 trusted=trusted, roots=_project_roots(paths, db_path),
                 timeout=kw.get("verify_timeout") or cfg.get("verify-timeout"), progress=status)
    if kw.get("show_units"):
        from ..fixproof.units import describe

        units = v.plan(list(outcomes))
        _note_refused(v, units, db_path)
        click.echo(describe([Unit(u, v.why[u]) for u in units], v.command, v.display, v.refused), nl=False)
        sys.exit(0)
    if not v.available():
        if mode == "require":
            err("cannot verify fixes: no nvcc on PATH and no compile_commands.json (--require-verify); nothing written")
            sys.exit(2)
        return outcomes, None
    done = list(outcomes)
    try:
        with unrecorded():  # compiles in temporary directories (and /tmp's listing): no scan result depends on them
            summary = v.run(done)
    finally:
        status.close()
    _note_refused(v, list(v.why), db_path)
    for r in summary.rollbacks:
        err(r.text())
    for u in summary.unverified:
        err(f"note: {u}")
    if mode == "require" and summary.unverified:
        err(f"{summary.line()}\ncannot verify fixes: {len(summary.unverified)} unit(s) compiled neither before nor "
            "after the fix (--require-verify); nothing written")
        sys.exit(2)
    return done, summary


def _flags(kw: dict[str, Any], cfg: Any) -> tuple[str, ...]:
    """-I/-D for verification's synthesized commands: the command line's, then the configuration's."""
    from ..fixproof.units import user_flags

    base = cfg.path.parent if getattr(cfg, "path", None) is not None else None
    return user_flags(kw.get("include_dirs") or (), kw.get("defines") or ()) + \
        user_flags(cfg.get("include-dirs") or [], cfg.get("defines") or [], base)


def _project_roots(paths: tuple[Path, ...], db_path: Path | None) -> tuple[str, ...]:
    """The project tree a found database's compiler must lie outside of: the paths given and the database's
    directory (its parent too when that is a build*/ directory)."""
    roots = [os.path.realpath(p if p.is_dir() else p.parent) for p in (paths or (Path("."),))]
    if db_path is not None:
        d = Path(os.path.realpath(db_path)).parent
        roots.append(str(d.parent if d.name.startswith("build") else d))
    return tuple(dict.fromkeys(roots))


def _note_refused(v: Any, units: list[str], db_path: Path | None) -> None:
    """One line when units reached have commands of a found database that are not run (fixproof/consent.py)."""
    refused = [u for u in units if u in v.refused]
    if refused:
        err(f"note: {db_path}: found, not named: the command(s) of {len(refused)} unit(s) are not run "
            f"({v.refused[refused[0]]}); those units are not verified. To run them, name the database with "
            "--compile-commands or pass --trust-compile-commands (CUDAMIGRATE_TRUST_COMPILE_COMMANDS=1)")
