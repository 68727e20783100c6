"""`cudamigrate plan`: the migration plan of a tree."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from .app import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, EXIT_INPUT, main
from .options import diff_base_option, selection_options, stdin_option
from .output import err as _err
from .request import RunFlags, input_gate, refused, stdin_input
from ..workspace.preparation import diff_scope, on_changed_lines, prepare, setup


@main.command("plan")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@selection_options
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@diff_base_option
@stdin_option
def plan_cmd(paths: tuple[Path, ...], fmt: str, flags: RunFlags) -> None:
    """Print the migration as steps for a ticket: build breaks first (safe, unsafe, manual), then optional work.

    ROI = impact / effort: impact is what leaving a finding costs (build break 10, deprecated 5, performance 3,
    hygiene 1, scaled in context), effort what fixing it costs (safe fix 1, unsafe fix 2, manual 5).
    Exit 0 without build breaks, 1 with build breaks, 2 on errors.
    """
    import json

    from .semantic import semantic
    from ..report.plan import build_plan, render_text
    from ..pipeline.runner import display_path, scan_files

    stdin, req = stdin_input(flags, paths)
    paths = req.paths
    with refused():
        pre = prepare(req)
        for w in pre.warnings:
            _err(w)
        run_setup = setup(req, pre)
    engine, spec, files, rule_errors = run_setup.engine, run_setup.spec, run_setup.files, run_setup.rule_errors
    for e in rule_errors:  # one line per bad rule file; the other rules still run
        _err(e)
    files, input_error = input_gate(paths, files, run_setup.cfg, stdin is not None)
    with refused():
        changed, files = diff_scope(req, files)
    results: Iterable[Any]
    if stdin is not None:  # the buffer, planned under its name; nothing when excludes cover that name
        results = [engine.scan_bytes(p, stdin.data, display_path(p)) for p in files]
    else:
        db = semantic(paths, files, req, flags.jobs)
        results = scan_files(engine, spec, files, flags.jobs, facts=db, use_cache=not req.no_cache)
    findings: list[Any] = []
    errors: list[Any] = list(run_setup.walk_errors)
    for res in results:
        findings += res.findings
        errors += res.errors
    from ..fix.consistency import as_scanned, minutes_of

    findings = on_changed_lines(as_scanned(findings, minutes_of(engine.rules)), files, changed)  # a withheld group planned as manual
    for e in errors:
        _err(e)
    extra: list[str] = []  # what the fix commands must repeat to see the same findings
    for flag, value in (("--target-cuda", flags.target), ("--from", flags.from_version),
                        ("--keep-compat", flags.keep_compat), ("--config", flags.config_path),
                        ("--compile-commands", flags.compile_commands)):
        if value:
            extra += [flag, str(value)]
    for d in flags.rules_dir:
        extra += ["--rules-dir", str(d)]
    extra += ["--no-builtin-rules"] if flags.no_builtin_rules else []
    extra += ["--no-semantic"] if req.no_semantic else []  # (`plan -`: the buffer was planned without libclang)
    for o in flags.cli_options:
        extra += ["--option", o]
    plan = build_plan(findings, errors, len(files), f"{engine.opts.target[0]}.{engine.opts.target[1]}", {r.id: r.name for r in engine.rules},
                      [str(p) for p in paths], extra,
                      minimum=".".join(map(str, engine.opts.keep_compat)) if engine.opts.keep_compat else None)
    click.echo(json.dumps(plan.to_dict(), indent=2) if fmt == "json" else render_text(plan), nl=fmt != "text")
    if rule_errors:
        sys.exit(EXIT_ERROR)
    if input_error:
        sys.exit(EXIT_INPUT)
    sys.exit(EXIT_FINDINGS if plan.must else EXIT_CLEAN)
