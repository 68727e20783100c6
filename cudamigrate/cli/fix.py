"""`cudamigrate fix`: compute each file's fix in the pipeline, then write, diff, list, or commit per rule."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .app import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, EXIT_INPUT, main
from .options import color_option, force_exclude_option, print_tracebacks, selection_options, stdin_option
from .output import err as _err
from .request import RunFlags, input_gate, refused, stdin_input
from ..workspace.preparation import prepare, setup
from ..workspace.request import Request
from .scan import write_report

if TYPE_CHECKING:  # imported where used: `--version`, `rules` and `explain` never load tree-sitter, libclang or Jinja
    from ..scan.engine import Engine
    from ..pipeline.runner import EngineSpec
    from ..workspace.fixing import FixOptions


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@selection_options
@click.option("--diff", is_flag=True, help="Print a unified diff instead of writing files.")
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that change behaviour and need review.")
@click.option("--apply-display-only", is_flag=True,
              help="Also apply the display-only suggested edits (e.g. stream changes in code with several streams) "
                   "of the rules named by id in --select/--extend-select; never of rules selected by family or prefix.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("--show-fixes", is_flag=True, help="List what was fixed, per file and rule.")
@click.option("--commit-per-rule", "commit_by", flag_value="rule", default=None,
              help="On a clean git work tree: one commit per rule, with a generated message; the final tree equals "
                   "a single `fix` run.")
@click.option("--commit-per-family", "commit_by", flag_value="family", help="Like --commit-per-rule, one commit per family.")
@click.option("--verify", "verify_mode", flag_value="auto", default=None,
              help="Compile every translation unit the fix reaches with the edits (and, where that fails, without "
                   "them); roll back edits that make one worse (default when nvcc or a compile_commands.json is "
                   "found, except with --diff/--dry-run; config key `verify`). The "
                   "units and their flags come from the compile database (--compile-commands, or one found as "
                   "clangd finds it); without one, units are the files no other file includes, compiled with nvcc, "
                   "the -I/-D given here or in the config and the include dirs the #includes point at "
                   "(see --show-units).")
@click.option("--no-verify", "verify_mode", flag_value="off", help="Do not compile to verify the fix.")
@click.option("--require-verify", "verify_mode", flag_value="require",
              help="Like --verify, but exit 2 (writing nothing) when no compiler or compile command is known or "
                   "a unit reached compiles neither before nor after the fix (unverified).")
@click.option("--include-dir", "-I", "include_dirs", multiple=True, metavar="DIR",
              help="An include directory for verification's compiles without a compile database (repeatable; "
                   "config key `include-dirs`).")
@click.option("--define", "-D", "defines", multiple=True, metavar="NAME[=VALUE]",
              help="A macro for verification's compiles without a compile database (repeatable; config key "
                   "`defines`).")
@click.option("--show-units", is_flag=True,
              help="List the translation units verification would compile for this fix (each with why it was "
                   "chosen and its command) and exit; nothing is compiled or written.")
@click.option("--trust-compile-commands", is_flag=True,
              help="Run the commands of a compile database that was found, not named with --compile-commands, "
                   "even when its compiler is not a known driver outside the project (env "
                   "CUDAMIGRATE_TRUST_COMPILE_COMMANDS=1).")
@click.option("--verify-timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Kill a verification compile (its whole process group) after this long (default 600; config "
                   "key `verify-timeout`).")
@click.option("--verify-report", type=click.Path(path_type=Path), default=None,
              help="Write compile verification's counts and rollbacks as JSON to this file.")
@click.option("--write-outside-links", is_flag=True,
              help="Also rewrite files reached through a symlink whose target lies outside the paths given.")
@stdin_option
@force_exclude_option
@color_option
def fix(paths: tuple[Path, ...], diff: bool, dry_run: bool, unsafe_fixes: bool, apply_display_only: bool,
        exit_zero: bool, show_fixes: bool, commit_by: str | None, verify_mode: str | None,
        include_dirs: tuple[str, ...], defines: tuple[str, ...], show_units: bool, trust_compile_commands: bool,
        verify_timeout: float | None, verify_report: Path | None, write_outside_links: bool, flags: RunFlags) -> None:
    """Rewrite PATHS in place, applying automatic fixes; list the findings that remain.

    With `-` (and --stdin-filename): fix the source read from stdin and print the fixed text (or, with
    --diff, the diff) on stdout; no file is touched."""
    from .fix_report import list_fix_outcome, show_file, show_shared, show_verification
    from .progress import StatusLine
    from .semantic import clock, semantic_timed, since, timings
    from ..workspace import fixing

    stdin, req = stdin_input(flags, paths)
    if stdin is not None and commit_by is not None:
        raise click.UsageError("--commit-per-rule/--commit-per-family commit files; not with `-` (stdin)")
    paths = req.paths
    opts = fixing.FixOptions(unsafe=unsafe_fixes, apply_display_only=apply_display_only, write=not (diff or dry_run),
                             verify=verify_mode, show_units=show_units, include_dirs=include_dirs, defines=defines,
                             trust_compile_commands=trust_compile_commands, verify_timeout=verify_timeout,
                             write_outside_links=write_outside_links, jobs=flags.jobs)
    with refused():
        pre = prepare(req)
        for w in pre.warnings:
            _err(w)
        run_setup = setup(req, pre)
    engine, spec, files, cfg, rule_errors = (run_setup.engine, run_setup.spec, run_setup.files, run_setup.cfg,
                                             run_setup.rule_errors)
    for e in rule_errors:  # one line per bad rule file; the other rules still run
        _err(e)
    files, input_error = input_gate(paths, files, cfg, stdin is not None, flags.force_exclude)
    run_setup.files = files
    with refused():
        display_only = fixing.display_only_rules(engine, req) if apply_display_only else frozenset()
    if stdin is not None:
        _fix_stdin(engine, stdin, files, unsafe_fixes, diff, exit_zero, show_fixes, display_only, rule_errors)

    db, t_sem = semantic_timed(paths, files, req, flags.jobs)
    c1 = clock()
    if commit_by is not None:
        if db is not None:
            engine = engine.with_run(semantic_provider=db.facts_for)
        if diff or dry_run:
            raise click.UsageError("--commit-per-rule/--commit-per-family write and commit; not with --diff/--dry-run")
        _commit_per(engine, spec, files, commit_by, unsafe_fixes, show_fixes, exit_zero, display_only,
                    lambda computed, groups: _verify_computed(engine, files, computed, groups, req, opts, cfg,
                                                              display_only, db), tuple(req.paths))
    for e in run_setup.walk_errors:
        _err(e)
    status = StatusLine()
    try:
        with refused():
            result = fixing.run(run_setup, req, opts, display_only, facts=db, progress=status)
    finally:
        status.close()
    verified = show_verification(result.verification)
    for header in result.shared:
        show_shared(header)
    for one in result.files:
        show_file(one)
    for line in result.withheld:
        _err(f"note: {line}")
    print_tracebacks(flags.debug, result.tracebacks)
    if req.timings:
        timings(db, {"semantic": t_sem, "fix": since(c1, clock())}, len(files))
    write = opts.write
    verb = "Fixed" if write else "Would fix"
    from .output import use_color

    list_fix_outcome(result.applied, result.remaining, show_fixes, err=not write,
                     color=use_color(flags.color, sys.stderr if not write else sys.stdout))
    msg = f"{verb} {len(result.applied)} finding(s) in {result.changed} file(s); {result.remaining_count} remaining"
    if result.unsafe_left and not unsafe_fixes:
        msg += f" ({result.unsafe_left} fixable with --unsafe-fixes)"
    if result.suggested_left:
        msg += f"; {result.suggested_left} with a display-only suggested edit (never applied by --unsafe-fixes: review it)"
    if result.not_written:
        msg += f"; {result.not_written} file(s) not written"
    click.echo(msg + ".", err=not write)  # stdout beside the remaining findings, unless it holds the diff
    if verified is not None and (verified.units or verified.unverified):  # nothing changed: nothing to say
        click.echo(verified.line(), err=True)
    if verify_report is not None:
        import json

        write_report(json.dumps(verified.to_json() if verified is not None else None, indent=2) + "\n",
                      verify_report)
    if rule_errors or result.internal or (verified is not None and verified.worse):
        sys.exit(EXIT_ERROR)
    if input_error:
        sys.exit(EXIT_INPUT)
    if (result.remaining_count or result.had_error) and not exit_zero:
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_CLEAN)


def _fix_stdin(engine: Engine, stdin, files: list[Path], unsafe: bool, diff: bool, exit_zero: bool, show_fixes: bool,
               display_only: frozenset[str], rule_errors: list[str]) -> None:
    """`fix -`: the fixed buffer (or its diff) on stdout, exactly as bytes; what remains on stderr; exit.
    A buffer whose name `exclude` covers comes back unchanged, as ruff does, so an editor never loses text."""
    from .fix_report import list_fix_outcome
    from ..pipeline.runner import display_path
    from ..workspace.fixing import fix_buffer

    try:
        res = fix_buffer(engine, stdin.path, stdin.data, display_path(stdin.path), unsafe=unsafe,
                         display_only=display_only) if files else None
    except Exception as exc:  # a bug in a rule: the editor gets its buffer back, the error is one line, exit 2
        from ..core.errors import internal_message

        _err(internal_message(display_path(stdin.path), None, exc, "internal error while fixing"))
        sys.stdout.buffer.write(stdin.data)
        sys.exit(EXIT_ERROR)
    sys.stdout.flush()
    out = sys.stdout.buffer
    for e in (res.errors if res is not None else []):
        _err(e)
    if res is not None:
        from ..fix.consistency import report

        for line in report(res.withheld, [res]):
            _err(f"note: {line}")
    if res is None:  # excluded: the input, unchanged
        out.write(b"" if diff else stdin.data)
    else:
        out.write(res.diff().encode("utf-8", "surrogateescape") if diff else res.fixed)
    out.flush()
    applied, left = (res.applied, res.remaining) if res is not None else ([], [])
    if res is not None and res.withheld.stuck:
        from ..fix.consistency import as_left

        left = as_left(left, frozenset(res.withheld.stuck), unsafe)
    list_fix_outcome(applied, left, show_fixes, err=True)  # stdout holds the buffer
    click.echo(f"{'Would fix' if diff else 'Fixed'} {len(applied)} finding(s) in stdin; {len(left)} remaining.", err=True)
    if rule_errors or (res is not None and res.internal):
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if (left or (res is not None and res.errors)) and not exit_zero else EXIT_CLEAN)


def _verify_computed(engine: Engine, files: list[Path], computed: list, groups: frozenset[str], req: Request,
                     opts: FixOptions, cfg: Any, display_only: frozenset[str], db: Any):
    """Compile verification for --commit-per-rule: the settled (path, FixResult) pairs as `fix` outcomes through the
    same Verifier (rollback lines and the summary on stderr), back as pairs plus the rolled-back findings per file."""
    from ..pipeline.runner import FixOutcome, display_path
    from .fix_report import show_verification
    from .progress import StatusLine
    from ..workspace.fixing import verify

    outcomes = [FixOutcome(display_path(p), str(p), res) for p, res in computed]
    status = StatusLine()
    try:
        with refused():
            verification = verify(engine, files, outcomes, req, opts, cfg, display_only, db, groups, progress=status)
    finally:
        status.close()
    summary = show_verification(verification)
    if summary is None:
        return computed, {}
    if summary.units or summary.unverified:
        click.echo(summary.line(), err=True)
    rolled: dict[str, set[tuple[str, str]]] = {}
    for r in summary.rollbacks:
        rolled.setdefault(r.path, set()).add((r.rule_id, r.fingerprint))
    done = verification.outcomes
    out = [(p, o.result if o.result is not None else res) for (p, res), o in zip(computed, done, strict=True)]
    return out, {p: frozenset(rolled.get(display_path(p), ())) for p, _ in computed}


def _commit_per(engine: Engine, spec: EngineSpec, files: list[Path], by: str, unsafe: bool, show_fixes: bool,
                exit_zero: bool, display_only: frozenset[str] = frozenset(), verify=None,
                roots: tuple[Path, ...] = ()) -> None:
    """`fix --commit-per-rule/--commit-per-family`: commit, report, exit (see cudamigrate/fix/commits.py)."""
    from .fix_report import list_fix_outcome
    from ..fix.commits import CommitError, commit_per_group
    from ..pipeline.runner import display_path
    from ..read.source import DEFAULT_MAX_BYTES, load_source

    try:
        res = commit_per_group(engine, files, display_path, by, unsafe,
                               lambda p: load_source(p, spec.max_bytes or DEFAULT_MAX_BYTES).data, _err, display_only,
                               verify, roots)
    except CommitError as exc:
        _err(str(exc))
        sys.exit(EXIT_ERROR)
    for sha, subject in res.commits:
        click.echo(f"{sha} {subject}")
    list_fix_outcome(res.applied, res.remaining, show_fixes)
    click.echo(f"Fixed {len(res.applied)} finding(s) in {res.files} file(s) in {len(res.commits)} commit(s); "
               f"{len(res.remaining)} remaining.")
    sys.exit(EXIT_FINDINGS if res.remaining and not exit_zero else EXIT_CLEAN)
