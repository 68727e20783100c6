"""The `cudamigrate verify` command; the work is in fixproof/program.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .app import main

EXIT_SAME, EXIT_DIFFERENT, EXIT_ERROR = 0, 1, 2


@main.command("verify")
@click.argument("project", type=click.Path(exists=True, file_okay=False, path_type=Path), default=Path("."))
@click.option("--build", "build_cmd", default=None, metavar="CMD",
              help="Shell command that builds the program in the project directory (config key `build-command`).")
@click.option("--run", "run_cmd", default=None, metavar="CMD",
              help="Shell command that runs it; its stdout is compared (config key `run-command`).")
@click.option("--unsafe-fixes", is_flag=True, help="Fix with --unsafe-fixes.")
@click.option("--fix-option", "fix_options", multiple=True, metavar="ARG",
              help="More arguments for `cudamigrate fix` (repeat: --fix-option=--select --fix-option=CM501).")
@click.option("--reference", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Compare the fixed program's output with this file instead of running the original "
                   "(for an original that does not build with this toolkit; config key `reference`).")
@click.option("--record-reference", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Build and run the original only and write its output to this file (with the old toolkit).")
@click.option("--tolerance", type=float, default=None, help="Relative tolerance for numbers in the outputs.")
@click.option("--ignore", "ignore", multiple=True, metavar="REGEX", help="Leave out output lines matching REGEX.")
@click.option("--timeout", type=float, default=600, show_default=True, help="Seconds per build, run or fix.")
@click.option("--keep-work", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Build in this directory (new) and keep it, instead of a temporary one.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the steps, their times and the verdict as JSON to this file.")
def verify_command(project: Path, build_cmd: str | None, run_cmd: str | None, unsafe_fixes: bool,
                   fix_options: tuple[str, ...], reference: Path | None, record_reference: Path | None,
                   tolerance: float | None, ignore: tuple[str, ...], timeout: float, keep_work: Path | None,
                   json_out: Path | None) -> None:
    """Build and run the program in PROJECT before and after `cudamigrate fix` (in copies: PROJECT is never
    changed) and compare the outputs. Exit 0: identical (or reference recorded); 1: they differ or the fixed
    program does not build or run; 2: no comparison could be made."""
    from ..core.config import ConfigError, find_config
    from ..fixproof.program import verify_program

    try:
        cfg = find_config(project)
    except ConfigError as exc:
        click.echo(f"cudamigrate: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    build_cmd = build_cmd or cfg.get("build-command")
    run_cmd = run_cmd or cfg.get("run-command")
    if reference is None and cfg.get("reference") and record_reference is None:
        base = cfg.path.parent if cfg.path is not None else project
        reference = base / cfg.get("reference")
    if not run_cmd:
        raise click.UsageError("no run command: give --run CMD (or `run-command` in [tool.cudamigrate])")
    if keep_work is not None and keep_work.exists():
        raise click.UsageError(f"--keep-work {keep_work}: exists already (give a new directory)")
    fix_args = ["--unsafe-fixes"] * unsafe_fixes + list(fix_options)
    res = verify_program(project.resolve(), build_cmd, run_cmd, fix_args=fix_args, reference=reference,
                         record=record_reference, tolerance=tolerance, ignore=list(ignore), timeout=timeout,
                         keep=keep_work)
    for s in res.steps:
        click.echo(f"{s.name}: {'ok' if s.ok else f'failed (exit {s.rc})'} in {s.seconds:.1f} s", err=True)
        if s.name == "fix":
            for ln in s.output.splitlines():
                if ln.startswith(("Fixed ", "Verified ")):
                    click.echo(f"  {ln}", err=True)
    if json_out is not None:
        json_out.write_text(json.dumps(res.to_json(), indent=2) + "\n", encoding="utf-8")
    if res.error is not None:
        click.echo(f"cudamigrate: {project}: {res.error}", err=True)
        sys.exit(EXIT_ERROR)
    if record_reference is not None:
        click.echo(f"Recorded the original program's output in {record_reference}.")
        sys.exit(EXIT_SAME)
    if res.identical:
        click.echo(f"Identical output before and after the fix (compared with {res.compared_with}).")
        sys.exit(EXIT_SAME)
    if res.detail.startswith("the fixed program"):
        click.echo(f"The fixed program does not build or run: {res.detail}")
    else:
        click.echo(f"Output differs after the fix (compared with {res.compared_with}): {res.detail}")
    sys.exit(EXIT_DIFFERENT)
