"""`cudamigrate scan`: findings as a report (text, json, sarif, github, json-lines, junit, html), replayed when
nothing changed."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..core.textsafe import printable
from .app import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, EXIT_INPUT, settled, main
from .options import (
    FORMATS,
    check_regular_flag,
    check_writable,
    print_tracebacks,
    color_option,
    diff_base_option,
    force_exclude_option,
    selection_options,
    stdin_option,
)
from .output import err as _err
from .output import use_color
from .request import RunFlags, refused, stdin_input
from ..workspace.preparation import Prepared, ReplayKey, diff_scope, on_changed_lines, prepare, replay_key, setup

if TYPE_CHECKING:  # imported where used: `--version`, `rules` and `explain` never load tree-sitter, libclang or Jinja
    from ..report.model import Run


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@selection_options
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("--report", "report_fmt", type=click.Choice(FORMATS), default=None, help="Alias of --format (e.g. --report html).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the report to a file.")
@color_option
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("--statistics", is_flag=True, help="Print counts per rule instead of findings.")
@click.option("--sort", type=click.Choice(["plan", "roi", "file"]), default="plan", show_default=True,
              help="plan: build breaks first (safe, unsafe, manual), then deprecated, performance, hygiene, each by ROI; "
                   "roi: by ROI alone; file: by place.")
@click.option("--baseline", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Only report findings not in this baseline.")
@click.option("--write-baseline", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Record current findings as the baseline.")
@diff_base_option
@stdin_option
@force_exclude_option
@click.option("--show-files", is_flag=True, help="List the files that would be scanned (after excludes) and exit.")
@click.option("--show-settings", is_flag=True, help="Print the resolved settings (configuration file, rules, options) and exit.")
@click.option("--shard", default=None, metavar="I/N",
              help="Scan only shard I of N (1-based) of the files, split deterministically; merge the shards' "
                   "JSON or SARIF reports with `cudamigrate merge`.")
def scan(paths: tuple[Path, ...], fmt: str, report_fmt: str | None, output: Path | None, exit_zero: bool,
         statistics: bool, sort: str, baseline: Path | None, write_baseline: Path | None, flags: RunFlags,
         show_files: bool, show_settings: bool, shard: str | None) -> None:
    """Report findings in PATHS (files or directories).

    Each finding shows `(roi N)`: impact / effort. Impact is what leaving it costs (build break 10, deprecated 5,
    performance 3, hygiene 1, scaled in context, e.g. x4 inside a loop); effort what fixing it costs (safe
    automatic fix 1, unsafe fix to review 2, suggested edit to apply by hand 4, manual 5). Build breaks come
    first whatever their ROI. `cudamigrate plan` turns the findings into steps.
    """
    fmt = report_fmt or fmt
    if fmt == "html" and output is None and not show_files and not show_settings:
        output = Path("cudamigrate-report.html")  # a whole HTML document on a terminal helps no one
        _err(f"writing the HTML report to {output} (choose the file with -o)")
    for flag, target in (("--output", output), ("--write-baseline", write_baseline)):
        check_writable(target, flag)
    if baseline is not None:
        check_regular_flag(baseline, "--baseline")
    from .semantic import clock, semantic_timed, since, timings

    color = fmt in ("text", "concise") and not statistics and use_color(flags.color, sys.stdout, output is not None)
    stdin, req = stdin_input(flags, paths)
    paths = req.paths
    with refused():
        pre = prepare(req)
    for w in pre.warnings:
        _err(w)
    if baseline is None and write_baseline is None and pre.cfg.get("baseline") \
            and not (show_files or show_settings):  # the configuration's key
        from ..workflow.baseline import configured

        baseline = configured(pre.cfg.path, str(pre.cfg.get("baseline")))
        check_regular_flag(baseline, f"`baseline` in {printable(str(pre.cfg.path))}")
    input_error = False
    if stdin is None:
        from ..pipeline.inputs import gate

        pre.files, input_error = gate(list(paths), pre.files, pre.cfg, _err, flags.force_exclude)
        if input_error and not pre.files and not show_settings:
            sys.exit(EXIT_INPUT)
    pre.files, pre.project = _shard(pre.files, shard), pre.files
    if show_files or show_settings:  # (with --shard: this shard's files)
        from .show import show

        click.echo(show(pre, show_settings), nl=False)
        sys.exit(EXIT_INPUT if input_error else EXIT_CLEAN)
    replay = None
    if stdin is None and baseline is None and write_baseline is None and req.diff_base is None and not input_error:
        replay = replay_key(req, pre, {"format": fmt, "sort": sort, "statistics": statistics,
                                       "target_source": pre.target_source}
                            | ({"shard": shard} if shard else {}) | ({"color": True} if color else {}))
    if replay is not None:
        _replay_or_continue(replay, pre, output, exit_zero)
    from .progress import Progress  # after the replay, which needs neither the engine nor the reports
    from ..report.model import Run
    from ..pipeline.runner import display_path, scan_files

    with refused():
        run_setup = setup(req, pre)
    engine, spec, files, rule_errors = run_setup.engine, run_setup.spec, run_setup.files, run_setup.rule_errors
    for e in rule_errors:  # one line per bad rule file; the other rules still run
        _err(e)
    settled()
    with refused():
        changed, files = diff_scope(req, files)
    db, t_sem = semantic_timed(paths, files, req, flags.jobs)
    c1 = clock()
    progress = Progress(len(files))
    findings: list[Any] = []
    tracebacks: list[Any] = []
    unused: list[Any] = []
    errors: list[Any] = list(run_setup.walk_errors)
    sources: dict[str, bytes] = {}
    internal = 0
    results: Iterable[Any]
    completed: list[Any] = []  # (run digest, cache.RunFiles) when every file's result is cached
    if stdin is not None:  # the buffer, reported under its name; nothing when excludes cover that name
        results = [engine.scan_bytes(p, stdin.data, display_path(p)) for p in files]
        sources.update({display_path(p): stdin.data for p in files})
    else:
        results = scan_files(engine, spec, files, flags.jobs, progress.update, facts=db,
                             use_cache=not req.no_cache, completed=completed,
                             digest=replay.run if replay is not None and engine.opts is pre.opts else None,
                             db=replay.db if replay is not None else None)
    notes: list[str] = []
    for res in results:
        findings += res.findings
        notes += res.notes
        for e in res.errors:
            errors.append(e)
        internal += res.internal
        tracebacks += res.tracebacks
        if res.suppressions is not None:
            for s in res.suppressions.items:
                if not s.used and not s.file_level:
                    unused.append({"path": res.path, "line": s.line})
    progress.close()
    from ..fix.consistency import as_scanned, minutes_of

    findings = as_scanned(findings, minutes_of(engine.rules))  # a group `fix` withholds is not shown as fixable
    c2 = clock()
    for n in notes:
        _err(f"note: {n}")
    for e in errors:
        _err(e)
    print_tracebacks(flags.debug, tracebacks)
    if fmt in ("html", "sarif") or baseline is not None or write_baseline is not None:
        real = {display_path(p): p for p in files}  # displayed names are escaped; read the real paths
        for f in findings:
            if f.path not in sources:
                try:
                    sources[f.path] = Path(real.get(f.path, f.path)).read_bytes()
                except OSError:
                    sources[f.path] = b""
    findings = on_changed_lines(findings, files, changed)
    if write_baseline is not None:
        from ..workflow.baseline import write_baseline as wb

        try:
            wb(write_baseline, findings, sources)
        except OSError as exc:
            _err(f"{write_baseline}: cannot write the baseline: {exc.strerror or exc}")
            sys.exit(EXIT_ERROR)
        click.echo(f"Wrote baseline with {len(findings)} finding(s) to {printable(str(write_baseline))}", err=True)
    if baseline is not None:
        from ..workflow.baseline import BaselineError, filter_new, foreign_warning

        try:
            warning = foreign_warning(baseline, findings)
            findings = filter_new(baseline, findings, sources)
        except BaselineError as exc:
            raise click.UsageError(printable(str(exc))) from None
        if warning:
            _err(f"warning: {warning}")
    run = Run(findings=findings, errors=errors + rule_errors, files_scanned=len(files), rules=engine.rules,
              target=engine.opts.target, sources=sources, unused_suppressions=unused, keep_compat=engine.opts.keep_compat,
              shard=_shard_identity(pre, shard), target_source=pre.target_source,
              target_default=pre.target is not None and not pre.target.explicit)
    if statistics:
        from ..report.text import statistics as stats

        text = stats(run)
    else:
        text = render_report(fmt, run, sort, color)
    if replay is not None and db is None and completed and completed[0][0] == replay.run and not errors \
            and not rule_errors and not internal:
        from ..pipeline.replay import Replay, store

        store(replay.db, replay.key, Replay(completed[0][1].files, completed[0][1].depsets, text, [f"note: {n}" for n in notes],
                                bool(findings)))
    if replay is not None:
        replay.db.close()
    write_report(text, output)
    if req.timings:
        timings(db, {"semantic": t_sem, "scan": since(c1, c2), "report": since(c2, clock())}, len(files))
    if rule_errors or internal:
        sys.exit(EXIT_ERROR)
    if input_error:
        sys.exit(EXIT_INPUT)
    if (findings or errors) and not exit_zero:
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_CLEAN)



def _shard(files: list[Path], shard: str | None) -> list[Path]:
    """`--shard I/N`: this shard's files (cudamigrate/pipeline/shard.py); all of them without the option. The project
    index still sees every file, so project-wide analyses (texture references, headers' includers) agree with
    one unsharded run."""
    if shard is None:
        return files
    from ..pipeline.shard import ShardError, parse_shard, shard_files

    try:
        return shard_files(files, *parse_shard(shard))
    except ShardError as exc:
        raise click.BadParameter(str(exc), param_hint="--shard") from None


def _shard_identity(pre: Prepared, shard: str | None) -> dict[str, Any] | None:
    """`--shard I/N`'s identity for the report (pipeline/shard.py: identity), None without the option."""
    if shard is None:
        return None
    import os

    from ..pipeline.result_cache import options_digest, ruleset_digest, unrecorded
    from ..pipeline.runner import display_path
    from ..pipeline.shard import identity, parse_shard

    with unrecorded():  # the rule files are in the result cache's run digest already
        config = options_digest(pre.opts, max_bytes=pre.max_bytes, rules=ruleset_digest(pre.rule_dirs))
    return identity(*parse_shard(shard), [display_path(p) for p in pre.project or pre.files], config, os.getcwd())


def write_report(text: str, output: Path | None) -> None:
    if output is not None:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            _err(f"{output}: cannot write the report: {exc.strerror or exc}")
            sys.exit(EXIT_ERROR)
    else:  # (report text is escaped: an ESC in it is --color's, which a pipe keeps only when asked for)
        click.echo(text, nl=False, color=True if "\x1b[" in text else None)


def _replay_or_continue(replay: ReplayKey, pre: Prepared, output: Path | None, exit_zero: bool) -> None:
    """Print the stored report of this very run and exit, when nothing it depends on changed
    (cudamigrate/pipeline/replay.py); else return, and the scan runs."""
    from ..pipeline.replay import lookup
    from ..read.source import DEFAULT_MAX_BYTES

    db, key, items = replay.db, replay.key, replay.items
    got = lookup(db, key, items, pre.max_bytes or DEFAULT_MAX_BYTES)
    if got is None:
        return  # the scan goes on with this open database (closed once the report is rendered)
    db.close()
    for n in got.notes:
        _err(n)
    write_report(got.stdout, output)
    sys.exit(EXIT_FINDINGS if got.findings and not exit_zero else EXIT_CLEAN)


def render_report(fmt: str, run: Run, sort: str = "plan", color: bool = False) -> str:
    import importlib

    if fmt in ("text", "concise"):
        from ..report.text import concise, render

        return render(run, sort=sort, color=color) if fmt == "text" else concise(run, sort=sort, color=color)
    module = {"json-lines": "jsonlines"}.get(fmt, fmt)
    try:
        mod = importlib.import_module(f"..report.{module}", __package__)
    except ModuleNotFoundError:
        raise click.UsageError(f"output format {fmt!r} is not available in this build") from None
    return mod.render(run)
