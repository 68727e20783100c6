"""Command line: `cudamigrate scan`, `fix`, `plan`, `rules`, `explain`, `test` and the rest.

Why one module of ~750 lines: it is the CLI contract (every subcommand's options, usage errors and exit
codes) read in one place; the work behind the commands lives elsewhere (`cli_fix`, `cli_output`,
`cli_semantic`, `stdin`, `diffbase`, `runner`, `plan`, `doctor`), so what remains here is declarations
and small glue that would only be scattered by a split.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import click

from . import __version__
from .config import Config, ConfigError, find_config, load_config
from .rules.load import builtin_rules_dir, load_rules
from .rules.schema import parse_version
from .cli_output import err as _err
from .textsafe import printable

if TYPE_CHECKING:  # imported where used: `--version`, `rules` and `explain` never load tree-sitter, libclang or Jinja
    from .engine import Engine
    from .options import Options
    from .report.model import Run
    from .runner import EngineSpec

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
FORMATS = ["text", "json", "sarif", "github", "json-lines", "junit", "html"]


def _tracebacks(kw: dict[str, Any], tracebacks: list[str]) -> None:
    if kw.get("debug"):
        for tb in tracebacks:
            click.echo(tb.rstrip("\n"), err=True)


def _check_regular(path: Path, flag: str) -> None:
    """An input file given by a flag must be a regular file: a FIFO or a device would block or never end."""
    import stat as st

    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise click.BadParameter(f"{printable(str(path))}: {exc.strerror or exc}", param_hint=flag) from None
    if not st.S_ISREG(mode):
        raise click.BadParameter(f"{printable(str(path))}: not a regular file", param_hint=flag)


def _check_writable(path: Path | None, flag: str) -> None:
    """Fail before scanning, not after, when a report or baseline cannot be written where asked."""
    if path is None:
        return
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise click.BadParameter(f"{printable(str(path))}: directory {printable(str(parent))} does not exist",
                                 param_hint=flag)


def _split(values: tuple[str, ...] | list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out += [x.strip() for x in str(v).split(",") if x.strip()]
    return out


def _version(v: str | None, flag: str) -> tuple[int, int] | None:
    if v is None:
        return None
    v = str(v).strip()
    if v.isdigit():  # `--target-cuda 13` means 13.0
        v += ".0"
    try:
        return parse_version(v)
    except ValueError:
        raise click.BadParameter(f"expected a version like 13.0, got {v!r}", param_hint=flag) from None


def selection_options(fn):
    opts = [
        click.option("--select", multiple=True, help="Rule ids, id prefixes or families to enable (comma-separated)."),
        click.option("--ignore", multiple=True, help="Rule ids, id prefixes or families to disable."),
        click.option("--extend-select", multiple=True, help="Enable more rules (including opt-in rules) on top of the defaults."),
        click.option("--target-cuda", "--to", "target", default=None, help="CUDA version the code must build with (default 13.0)."),
        click.option("--from", "from_version", default=None,
                     help="CUDA version the code builds with today: rules for changes before it are skipped."),
        click.option("--keep-compat", "keep_compat", default=None,
                     help="Oldest CUDA version the fixed code must still build with: rewrites to APIs introduced after it "
                          "are wrapped in `#if CUDART_VERSION >= ...` / `#else` (old form) / `#endif`."),
        click.option("--rules-dir", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
                     help="Extra directory of rule YAML files (repeatable)."),
        click.option("--no-builtin-rules", is_flag=True, help="Only use --rules-dir rules."),
        click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
                     help="Configuration file (default: nearest .cudamigrate.toml or pyproject.toml [tool.cudamigrate])."),
        click.option("--option", "cli_options", multiple=True, help="Template option KEY=VALUE, e.g. stream=my_stream."),
        click.option("--jobs", "-j", type=int, default=None, help="Worker processes (default: CPUs)."),
        click.option("--max-file-size", type=int, default=None, help="Skip files larger than this many bytes (default 8 MiB)."),
        click.option("--compile-commands", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
                     help="Semantic mode: parse translation units with libclang using the flags in this "
                          "compile_commands.json (default: found in ., build/ or out/ upward from the paths)."),
        click.option("--no-semantic", is_flag=True, help="Never use libclang, even when a compile_commands.json is found."),
        click.option("--timings", is_flag=True, help="Print each phase's wall and CPU time on stderr."),
        click.option("--no-cache", "no_cache", is_flag=True,
                     help="Use no cache: neither read nor write the compiled rule cache or the result cache "
                          "(also: CUDAMIGRATE_NO_CACHE=1; see README: Result cache)."),
        click.option("--debug", is_flag=True, help="Print the traceback of each internal error on stderr."),
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


def stdin_option(fn):
    """`--stdin-filename`: the path a buffer piped to `-` stands for (editors)."""
    return click.option("--stdin-filename", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        help="With `-` as the path: read the source from stdin and treat it as this file (config, "
                             "exclude and reports use this name; the file itself is not read or written).")(fn)


def diff_base_option(fn):
    """`--diff-base REF`: only lines changed since a git revision (scan and plan)."""
    return click.option("--diff-base", metavar="REF", default=None,
                        help="Only report findings on lines added or changed since git revision REF (`git diff -U0 "
                             "REF`; untracked files count as wholly changed).")(fn)


def _diff_scope(paths: tuple[Path, ...], files: list[Path], kw: dict[str, Any]) -> tuple[Any, list[Path]]:
    """`--diff-base`'s changed lines (None without the flag) and the files that hold any: an unchanged file
    cannot hold a changed line, so it is not even scanned."""
    changed = _diff_base(paths, kw.get("diff_base"))
    return changed, files if changed is None else [p for p in files if changed.has_file(p)]


def _on_changed_lines(findings: list[Any], files: list[Path], changed: Any) -> list[Any]:
    """The findings on lines `--diff-base` counts as changed (all of them without the flag)."""
    if changed is None:
        return findings
    from .runner import display_path

    real_of = {display_path(p): p for p in files}
    return [f for f in findings if changed.covers(real_of.get(f.path, Path(f.path)), f.line, f.end_line)]


def _stdin_input(paths: tuple[Path, ...], kw: dict[str, Any]):
    """The buffer for `scan -`/`fix -` (a StdinInput), or None for ordinary paths. Semantic mode is off for
    it: libclang reads files from disk, and the buffer is not on disk."""
    from .stdin import StdinUsageError, read_stdin, wants_stdin

    try:
        if not wants_stdin(paths, kw.get("stdin_filename")):
            return None
    except StdinUsageError as exc:
        raise click.UsageError(str(exc)) from None
    kw["no_semantic"] = True
    return read_stdin(sys.stdin.buffer, kw.get("stdin_filename"))


def _diff_base(paths: tuple[Path, ...], ref: str | None):
    """The lines changed since `--diff-base REF` (cudamigrate/diffbase.py), or None without the flag."""
    if ref is None:
        return None
    from .diffbase import DiffBaseError, changed_lines

    try:
        return changed_lines(ref, paths[0] if paths else Path("."))
    except DiffBaseError as exc:
        raise click.UsageError(printable(str(exc))) from None


@dataclass
class Prepared:
    """What a run is, before any rule is loaded: configuration, options, rule directories and the files."""

    cfg: Config
    opts: Options
    rule_dirs: list[Path]
    max_bytes: int | None
    use_cache: bool
    files: list[Path]
    walk_errors: list[str]


def _prepare(paths: tuple[Path, ...], kw: dict[str, Any]) -> Prepared:
    """Configuration, options and discovery: all that `scan` needs to know whether a replay of an unchanged
    run applies (cudamigrate/replay.py), before loading the rules or importing the engine."""
    from .discover import discover
    from .options import Options

    if kw.get("compile_commands") is not None:
        _check_regular(kw["compile_commands"], "--compile-commands")
    try:
        cfg = load_config(kw["config_path"], None if kw["config_path"].name != "pyproject.toml" else ("tool", "cudamigrate")) \
            if kw.get("config_path") else find_config(paths[0] if paths else Path("."))
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    target = _version(kw.get("target") or cfg.get("target-cuda"), "--target-cuda") or (13, 0)
    from_v = _version(kw.get("from_version") or cfg.get("from-cuda"), "--from")
    select = _split(kw.get("select")) or _split(cfg.get("select")) or None
    ignore = _split(kw.get("ignore")) + _split(cfg.get("ignore"))
    extend = _split(kw.get("extend_select")) + _split(cfg.get("extend-select"))
    options = dict(cfg.get("options", {}) or {})
    for item in kw.get("cli_options") or ():
        if "=" not in item:
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="--option")
        k, v = item.split("=", 1)
        options[k.strip()] = v.strip()
    rule_dirs = [] if kw.get("no_builtin_rules") else [builtin_rules_dir()]
    base = cfg.path.parent if cfg.path else Path(".")
    if cfg.path and cfg.get("rules-dirs"):
        from .config_use import ConfigUseError, check_rules_dirs

        try:
            rule_dirs += check_rules_dirs(cfg.path, cfg.get("rules-dirs"))
        except ConfigUseError as exc:
            raise click.UsageError(str(exc)) from None
    rule_dirs += list(kw.get("rules_dir") or ())
    calibration = None
    from .calibration import load_calibration

    try:
        calibration = load_calibration(cfg.get("calibration"), base)
    except (OSError, AttributeError, TypeError, ValueError) as exc:  # a malformed calibration file: declared estimates
        _err(f"warning: calibration {cfg.get('calibration') or 'file'} ignored: {type(exc).__name__}: {exc}")
        calibration = None
    opts = Options(target=target, from_version=from_v, select=select, ignore=ignore, extend_select=extend,
                   options=options, rule_options=cfg.get("rule-options", {}) or {}, calibration=calibration,
                   keep_compat=_version(kw.get("keep_compat") or cfg.get("keep-compat"), "--keep-compat"),
                   include_roots=tuple(str(p if os.path.isdir(p) else p.parent) for p in (paths or (Path("."),))))
    walk_errors: list[str] = []
    files = list(discover(list(paths) or [Path(".")], cfg.get("exclude", []) or [],
                          respect_gitignore=cfg.get("respect-gitignore", True), errors=walk_errors,
                          base=cfg.path.parent if cfg.path else None))
    return Prepared(cfg, opts, rule_dirs, kw.get("max_file_size") or cfg.get("max-file-size"),
                    not kw.get("no_cache"), files, walk_errors)


def _setup(paths: tuple[Path, ...], kw: dict[str, Any],
           pre: Prepared | None = None) -> tuple[Engine, EngineSpec, list[Path], Config, list[str]]:
    from .engine import Engine
    from .project_index import ProjectIndex
    from .runner import EngineSpec

    from .cache import unrecorded

    pre = pre or _prepare(paths, kw)
    cfg, opts, files = pre.cfg, pre.opts, pre.files
    with unrecorded():  # the rule files are in the result cache's run digest; the rule cache is the tool's own
        rs = load_rules(pre.rule_dirs, use_cache=pre.use_cache)
    from .selectors import check as check_selectors

    where = f"{cfg.path}" if cfg.path else "config"
    bad = check_selectors({flag: _split(kw.get(k)) for flag, k in (("--select", "select"), ("--ignore", "ignore"),
                                                                     ("--extend-select", "extend_select"))}
                          | {f"{where}: {k}": _split(cfg.get(k)) for k in ("select", "ignore", "extend-select")}, rs.rules)
    from .versions import check as check_versions

    bad += check_versions(opts.target, opts.from_version, opts.keep_compat, rs.rules)
    from .config_use import check_rule_options

    bad += check_rule_options(where, cfg.get("rule-options") or {}, cfg.get("options") or {}, rs.rules)
    if bad:
        raise click.UsageError("; ".join(bad))
    engine = Engine(rs.rules, opts)
    spec = EngineSpec(pre.rule_dirs, opts, pre.max_bytes, use_rule_cache=pre.use_cache)
    engine.project = ProjectIndex(files=files)  # project-wide facts: headers, class members, includers
    spec.project_files = files
    for e in rs.errors:  # one line per bad rule file; the other rules still run
        _err(e)
    kw["walk_errors"] = pre.walk_errors  # what could not be walked: reported like unreadable files
    return engine, spec, files, cfg, rs.errors


def _replay_key(paths: tuple[Path, ...], pre: Prepared, kw: dict[str, Any], presentation: dict[str, Any]):
    """(result cache, replay key, run digest) when this scan may be replayed or stored as a replay
    (cudamigrate/replay.py), else None."""
    from . import cache
    from .parse.clang import find_compile_db
    from .replay import replay_key
    from .textsafe import display_paths

    if not pre.use_cache or os.environ.get("CUDAMIGRATE_NO_CACHE") or pre.walk_errors or kw.get("timings"):
        return None
    if not kw.get("no_semantic") and (kw.get("compile_commands") is not None
                                      or find_compile_db(list(paths) or [Path(".")]) is not None):
        return None  # semantic mode: not cached
    import gc

    db = cache.ResultCache(freeze=not gc.isenabled())  # the CLI's own process (see `_settled`)
    if not db.enabled:
        return None
    run = cache.run_digest(pre.rule_dirs, pre.opts, db, max_bytes=pre.max_bytes)
    items = list(zip(map(str, pre.files), display_paths(pre.files), strict=True))
    return db, replay_key(run, [(os.path.abspath(p), d) for p, d in items], presentation), run, items


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cudamigrate")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Find and fix deprecated, removed and slow CUDA API uses."""
    if ctx.invoked_subcommand != "scan":  # `scan` settles after loading its rules
        _settled()


def console() -> None:
    """The `cudamigrate` command (and `python -m cudamigrate`): start-up without the cyclic collector (see
    `_settled`)."""
    import gc

    gc.disable()
    main()


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@selection_options
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("--report", "report_fmt", type=click.Choice(FORMATS), default=None, help="Alias of --format (e.g. --report html).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the report to a file.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("--statistics", is_flag=True, help="Print counts per rule instead of findings.")
@click.option("--sort", type=click.Choice(["plan", "roi", "file"]), default="plan", show_default=True,
              help="plan: build breaks first (safe, unsafe, manual), then deprecated, performance, hygiene, each by ROI; "
                   "roi: by ROI alone; file: by place.")
@click.option("--baseline", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Only report findings not in this baseline.")
@click.option("--write-baseline", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Record current findings as the baseline.")
@diff_base_option
@stdin_option
def scan(paths: tuple[Path, ...], fmt: str, report_fmt: str | None, output: Path | None, exit_zero: bool,
         statistics: bool, sort: str, baseline: Path | None, write_baseline: Path | None, **kw: Any) -> None:
    """Report findings in PATHS (files or directories).

    Each finding shows `(roi N)`: impact / effort. Impact is what leaving it costs (build break 10, deprecated 5,
    performance 3, hygiene 1, scaled in context, e.g. x4 inside a loop); effort what fixing it costs (safe
    automatic fix 1, unsafe fix to review 2, suggested edit to apply by hand 4, manual 5). Build breaks come
    first whatever their ROI. `cudamigrate plan` turns the findings into steps.
    """
    fmt = report_fmt or fmt
    for flag, target in (("--output", output), ("--write-baseline", write_baseline)):
        _check_writable(target, flag)
    if baseline is not None:
        _check_regular(baseline, "--baseline")
    from .cli_semantic import clock, semantic_timed, since, timings

    stdin = _stdin_input(paths, kw)
    paths = (stdin.path,) if stdin is not None else paths
    pre = _prepare(paths, kw)
    replay = None
    if stdin is None and baseline is None and write_baseline is None and kw.get("diff_base") is None:
        replay = _replay_key(paths, pre, kw, {"format": fmt, "sort": sort, "statistics": statistics})
    if replay is not None:
        _replay_or_continue(replay, pre, output, exit_zero)
    from .progress import Progress  # after the replay, which needs neither the engine nor the reports
    from .report.model import Run
    from .runner import display_path, scan_files

    engine, spec, files, cfg, rule_errors = _setup(paths, kw, pre)
    _settled()
    changed, files = _diff_scope(paths, files, kw)
    db, t_sem = semantic_timed(paths, files, kw)
    c1 = clock()
    progress = Progress(len(files))
    findings: list[Any] = []
    tracebacks: list[Any] = []
    unused: list[Any] = []
    errors: list[Any] = list(kw["walk_errors"])
    sources: dict[str, bytes] = {}
    internal = 0
    results: Iterable[Any]
    completed: list[Any] = []  # (run digest, cache.RunFiles) when every file's result is cached
    if stdin is not None:  # the buffer, reported under its name; nothing when excludes cover that name
        results = [engine.scan_bytes(p, stdin.data, display_path(p)) for p in files]
        sources.update({display_path(p): stdin.data for p in files})
    else:
        results = scan_files(engine, spec, files, kw.get("jobs"), progress.update, facts=db,
                             use_cache=not kw.get("no_cache"), completed=completed,
                             digest=replay[2] if replay is not None and engine.opts is pre.opts else None,
                             db=replay[0] if replay is not None else None)
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
    c2 = clock()
    for n in notes:
        _err(f"note: {n}")
    for e in errors:
        _err(e)
    _tracebacks(kw, tracebacks)
    if fmt in ("html", "sarif") or baseline is not None or write_baseline is not None:
        real = {display_path(p): p for p in files}  # displayed names are escaped; read the real paths
        for f in findings:
            if f.path not in sources:
                try:
                    sources[f.path] = Path(real.get(f.path, f.path)).read_bytes()
                except OSError:
                    sources[f.path] = b""
    findings = _on_changed_lines(findings, files, changed)
    if write_baseline is not None:
        from .baseline import write_baseline as wb

        try:
            wb(write_baseline, findings, sources)
        except OSError as exc:
            _err(f"{write_baseline}: cannot write the baseline: {exc.strerror or exc}")
            sys.exit(EXIT_ERROR)
        click.echo(f"Wrote baseline with {len(findings)} finding(s) to {printable(str(write_baseline))}", err=True)
    if baseline is not None:
        from .baseline import BaselineError, filter_new, foreign_warning

        try:
            warning = foreign_warning(baseline, findings)
            findings = filter_new(baseline, findings, sources)
        except BaselineError as exc:
            raise click.UsageError(printable(str(exc))) from None
        if warning:
            _err(f"warning: {warning}")
    run = Run(findings=findings, errors=errors + rule_errors, files_scanned=len(files), rules=engine.rules,
              target=engine.opts.target, sources=sources, unused_suppressions=unused, keep_compat=engine.opts.keep_compat)
    if statistics:
        from .report.text import statistics as stats

        text = stats(run)
    else:
        text = render_report(fmt, run, sort)
    if replay is not None and db is None and completed and completed[0][0] == replay[2] and not errors \
            and not rule_errors and not internal:
        from .replay import Replay, store

        store(replay[0], replay[1], Replay(completed[0][1].files, completed[0][1].depsets, text, [f"note: {n}" for n in notes],
                                bool(findings)))
    if replay is not None:
        replay[0].close()
    _write_report(text, output)
    if kw.get("timings"):
        timings(db, {"semantic": t_sem, "scan": since(c1, c2), "report": since(c2, clock())}, len(files))
    if rule_errors or internal:
        sys.exit(EXIT_ERROR)
    if (findings or errors) and not exit_zero:
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_CLEAN)


def _settled() -> None:
    """Start-up done (modules imported, rules loaded): when the command started without the cyclic collector
    (`console`), what start-up built lives as long as the process, so it is frozen out of the collector's
    way and the collector turned on for the work. The collector's passes over the growing heap cost 0.15 s of
    a 0.8 s re-scan and 0.04 s of a one-file scan. In a host process that has the collector on (tests calling
    `main` in-process) nothing changes."""
    import gc

    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _write_report(text: str, output: Path | None) -> None:
    if output is not None:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            _err(f"{output}: cannot write the report: {exc.strerror or exc}")
            sys.exit(EXIT_ERROR)
    else:
        click.echo(text, nl=False)


def _replay_or_continue(replay: tuple[Any, str, str, list[tuple[str, str]]], pre: Prepared, output: Path | None,
                        exit_zero: bool) -> None:
    """Print the stored report of this very run and exit, when nothing it depends on changed
    (cudamigrate/replay.py); else return, and the scan runs."""
    from .replay import lookup
    from .source import DEFAULT_MAX_BYTES

    db, key, _run, items = replay
    got = lookup(db, key, items, pre.max_bytes or DEFAULT_MAX_BYTES)
    if got is None:
        return  # the scan goes on with this open database (closed once the report is rendered)
    db.close()
    for n in got.notes:
        _err(n)
    _write_report(got.stdout, output)
    sys.exit(EXIT_FINDINGS if got.findings and not exit_zero else EXIT_CLEAN)


def render_report(fmt: str, run: Run, sort: str = "plan") -> str:
    import importlib

    if fmt == "text":
        from .report.text import render

        return render(run, sort=sort)
    module = {"json-lines": "jsonlines"}.get(fmt, fmt)
    try:
        mod = importlib.import_module(f".report.{module}", __package__)
    except ModuleNotFoundError:
        raise click.UsageError(f"output format {fmt!r} is not available in this build") from None
    return mod.render(run)


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
@click.option("--write-outside-links", is_flag=True,
              help="Also rewrite files reached through a symlink whose target lies outside the paths given.")
@stdin_option
def fix(paths: tuple[Path, ...], diff: bool, dry_run: bool, unsafe_fixes: bool, apply_display_only: bool,
        exit_zero: bool, show_fixes: bool, commit_by: str | None, **kw: Any) -> None:
    """Rewrite PATHS in place, applying automatic fixes; list the findings that remain.

    With `-` (and --stdin-filename): fix the source read from stdin and print the fixed text (or, with
    --diff, the diff) on stdout; no file is touched."""
    from .cli_fix import FixTally, list_fix_outcome, record_fix
    from .cli_semantic import clock, semantic_timed, since, timings
    from .fix.write import clean_stale, fsync_dir
    from .runner import fix_files

    stdin = _stdin_input(paths, kw)
    if stdin is not None and commit_by is not None:
        raise click.UsageError("--commit-per-rule/--commit-per-family commit files; not with `-` (stdin)")
    paths = (stdin.path,) if stdin is not None else paths
    engine, spec, files, cfg, rule_errors = _setup(paths, kw)
    display_only = _display_only_rules(engine, kw) if apply_display_only else frozenset()
    if stdin is not None:
        _fix_stdin(engine, stdin, files, unsafe_fixes, diff, exit_zero, show_fixes, display_only, rule_errors)

    db, t_sem = semantic_timed(paths, files, kw)
    c1 = clock()
    tally = FixTally(roots=None if kw.get("write_outside_links") else tuple(str(p) for p in (paths or (Path("."),))))
    if commit_by is not None:
        if db is not None:
            engine.semantic_provider = db.facts_for
        if diff or dry_run:
            raise click.UsageError("--commit-per-rule/--commit-per-family write and commit; not with --diff/--dry-run")
        _commit_per(engine, spec, files, commit_by, unsafe_fixes, show_fixes, exit_zero, display_only)
    write = not (diff or dry_run)
    for e in kw["walk_errors"]:
        _err(e)
        tally.had_error = True
    unique: list[Path] = []
    seen_real: set[str] = set()
    for p in files:
        real = os.path.realpath(p)
        if real not in seen_real:  # two names (symlinks) of one file: fix it once
            seen_real.add(real)
            unique.append(p)
    if write:  # temporaries a killed run left behind, before any worker reads or the parent writes
        for d in sorted({os.path.dirname(os.path.realpath(p)) for p in unique}):
            clean_stale(d)
    # edits are computed per file in workers (in order); writes, diffs and messages happen here, in that order
    for outcome in fix_files(engine, spec, unique, unsafe_fixes, display_only, kw.get("jobs"), facts=db):
        record_fix(outcome, write, tally)
    for d in sorted(tally.written_dirs):
        fsync_dir(d)
    _tracebacks(kw, tally.tracebacks)
    if kw.get("timings"):
        timings(db, {"semantic": t_sem, "fix": since(c1, clock())}, len(files))
    verb = "Fixed" if write else "Would fix"
    list_fix_outcome(tally.fixed_findings, tally.left_findings, show_fixes)
    msg = f"{verb} {tally.applied} finding(s) in {tally.changed} file(s); {tally.remaining} remaining"
    if tally.unsafe_left and not unsafe_fixes:
        msg += f" ({tally.unsafe_left} fixable with --unsafe-fixes)"
    if tally.suggested_left:
        msg += f"; {tally.suggested_left} with a display-only suggested edit (never applied by --unsafe-fixes: review it)"
    if tally.not_written:
        msg += f"; {tally.not_written} file(s) not written"
    click.echo(msg + ".", err=True)
    if rule_errors or tally.internal:
        sys.exit(EXIT_ERROR)
    if (tally.remaining or tally.had_error) and not exit_zero:
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_CLEAN)


def _fix_stdin(engine: Engine, stdin, files: list[Path], unsafe: bool, diff: bool, exit_zero: bool, show_fixes: bool,
               display_only: frozenset[str], rule_errors: list[str]) -> None:
    """`fix -`: the fixed buffer (or its diff) on stdout, exactly as bytes; what remains on stderr; exit.
    A buffer whose name `exclude` covers comes back unchanged, as ruff does, so an editor never loses text."""
    from .cli_fix import list_fix_outcome
    from .fix.apply import fix_bytes
    from .runner import display_path

    try:
        res = fix_bytes(engine, stdin.path, stdin.data, display_path(stdin.path), unsafe=unsafe,
                        display_only=display_only) if files else None
    except Exception as exc:  # a bug in a rule: the editor gets its buffer back, the error is one line, exit 2
        from .guard import internal_message

        _err(internal_message(display_path(stdin.path), None, exc, "internal error while fixing"))
        sys.stdout.buffer.write(stdin.data)
        sys.exit(EXIT_ERROR)
    sys.stdout.flush()
    out = sys.stdout.buffer
    for e in (res.errors if res is not None else []):
        _err(e)
    if res is None:  # excluded: the input, unchanged
        out.write(b"" if diff else stdin.data)
    else:
        out.write(res.diff().encode("utf-8", "surrogateescape") if diff else res.fixed)
    out.flush()
    applied, left = (res.applied, res.remaining) if res is not None else ([], [])
    list_fix_outcome(applied, left, show_fixes)
    click.echo(f"{'Would fix' if diff else 'Fixed'} {len(applied)} finding(s) in stdin; {len(left)} remaining.", err=True)
    if rule_errors or (res is not None and res.internal):
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if (left or (res is not None and res.errors)) and not exit_zero else EXIT_CLEAN)


def _display_only_rules(engine: Engine, kw: dict[str, Any]) -> frozenset[str]:
    """Rules whose display-only suggestions `--apply-display-only` may apply: named by exact id, never by family,
    prefix or ALL, so a suggestion that changes behaviour is applied only by someone who asked for that rule."""
    named = set(_split(kw.get("select"))) | set(_split(kw.get("extend_select")))
    ids = frozenset(r.id for r in engine.rules if r.id in named and r.fix_applicability == "display-only")
    if not ids:
        raise click.UsageError("--apply-display-only needs the rules named by id with --select or --extend-select "
                               "(e.g. --select CM101), and they must have display-only fixes")
    return ids


def _commit_per(engine: Engine, spec: EngineSpec, files: list[Path], by: str, unsafe: bool, show_fixes: bool,
                exit_zero: bool, display_only: frozenset[str] = frozenset()) -> None:
    """`fix --commit-per-rule/--commit-per-family`: commit, report, exit (see cudamigrate/fix/commits.py)."""
    from .cli_fix import list_fix_outcome
    from .fix.commits import CommitError, commit_per_group
    from .runner import display_path
    from .source import DEFAULT_MAX_BYTES, load_source

    try:
        res = commit_per_group(engine, files, display_path, by, unsafe,
                               lambda p: load_source(p, spec.max_bytes or DEFAULT_MAX_BYTES).data, _err, display_only)
    except CommitError as exc:
        _err(str(exc))
        sys.exit(EXIT_ERROR)
    for sha, subject in res.commits:
        click.echo(f"{sha} {subject}")
    list_fix_outcome(res.applied, res.remaining, show_fixes)
    click.echo(f"Fixed {len(res.applied)} finding(s) in {res.files} file(s) in {len(res.commits)} commit(s); "
               f"{len(res.remaining)} remaining.", err=True)
    sys.exit(EXIT_FINDINGS if res.remaining and not exit_zero else EXIT_CLEAN)


@main.command("plan")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@selection_options
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@diff_base_option
@stdin_option
def plan_cmd(paths: tuple[Path, ...], fmt: str, **kw: Any) -> None:
    """Print the migration as steps for a ticket: build breaks first (safe, unsafe, manual), then optional work.

    ROI = impact / effort: impact is what leaving a finding costs (build break 10, deprecated 5, performance 3,
    hygiene 1, scaled in context), effort what fixing it costs (safe fix 1, unsafe fix 2, manual 5).
    Exit 0 without build breaks, 1 with build breaks, 2 on errors.
    """
    import json

    from .cli_semantic import semantic
    from .plan import build_plan, render_text
    from .runner import display_path, scan_files

    stdin = _stdin_input(paths, kw)
    paths = (stdin.path,) if stdin is not None else paths
    engine, spec, files, cfg, rule_errors = _setup(paths, kw)
    changed, files = _diff_scope(paths, files, kw)
    results: Iterable[Any]
    if stdin is not None:  # the buffer, planned under its name; nothing when excludes cover that name
        results = [engine.scan_bytes(p, stdin.data, display_path(p)) for p in files]
    else:
        db = semantic(paths, files, kw)
        results = scan_files(engine, spec, files, kw.get("jobs"), facts=db, use_cache=not kw.get("no_cache"))
    findings: list[Any] = []
    errors: list[Any] = list(kw["walk_errors"])
    for res in results:
        findings += res.findings
        errors += res.errors
    findings = _on_changed_lines(findings, files, changed)
    for e in errors:
        _err(e)
    extra: list[str] = []  # what the fix commands must repeat to see the same findings
    for flag, key in (("--target-cuda", "target"), ("--from", "from_version"), ("--keep-compat", "keep_compat"),
                      ("--config", "config_path"), ("--compile-commands", "compile_commands")):
        if kw.get(key):
            extra += [flag, str(kw[key])]
    for d in kw.get("rules_dir") or ():
        extra += ["--rules-dir", str(d)]
    extra += ["--no-builtin-rules"] if kw.get("no_builtin_rules") else []
    extra += ["--no-semantic"] if kw.get("no_semantic") else []
    for o in kw.get("cli_options") or ():
        extra += ["--option", o]
    plan = build_plan(findings, errors, len(files), f"{engine.opts.target[0]}.{engine.opts.target[1]}", {r.id: r.name for r in engine.rules},
                      [str(p) for p in paths], extra,
                      minimum=".".join(map(str, engine.opts.keep_compat)) if engine.opts.keep_compat else None)
    click.echo(json.dumps(plan.to_dict(), indent=2) if fmt == "json" else render_text(plan), nl=fmt != "text")
    if rule_errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if plan.must else EXIT_CLEAN)


@main.command()
@click.option("--target-cuda", "--to", "target", default=None, help="CUDA version the code must build with (default 13.0).")
@click.option("--require-cuda", default=None, help="Blocker unless nvcc is at least this version (and a GPU's driver can run it).")
@click.option("--require-driver", type=int, default=None, help="Blocker unless the driver's major version is at least this "
              "(skipped, not failed, without a GPU).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def doctor(target: str | None, require_cuda: str | None, require_driver: int | None, fmt: str) -> None:
    """Check toolkit, driver, libraries, libclang, Chromium and calibration; exit 1 only on a --require-* blocker."""
    import json

    from . import doctor as dr

    tgt = _version(target, "--target-cuda") or (13, 0)
    checks = dr.gather(tgt, _version(require_cuda, "--require-cuda"), require_driver)
    click.echo(json.dumps(dr.to_json(checks, tgt), indent=2) if fmt == "json" else dr.render_table(checks), nl=fmt != "text")
    sys.exit(EXIT_FINDINGS if dr.blockers(checks) else EXIT_CLEAN)


@main.command("rules")
@click.option("--stats", is_flag=True, help="Catalog coverage by library and fix kind.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.option("--all", "show_all", is_flag=True,
              help="Every rule: also the catalog-generated ones and the opt-in ones (default: hand-written rules "
                   "that run by default).")
@click.option("--rules-dir", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Also load (and check) the rules of this directory; repeatable.")
@click.option("--no-builtin-rules", is_flag=True, help="Only the --rules-dir rules.")
def rules_cmd(stats: bool, fmt: str, show_all: bool, rules_dir: tuple[Path, ...], no_builtin_rules: bool) -> None:
    """List the rules; exit 2 when a rule file is invalid (each such file gets one `file: key: reason` line)."""
    import json

    rs = load_rules(([] if no_builtin_rules else [builtin_rules_dir()]) + list(rules_dir))
    for e in rs.errors:
        _err(e)
    code = EXIT_ERROR if rs.errors else EXIT_CLEAN
    if stats:
        from .coverage import coverage_report

        click.echo(coverage_report(rs.rules, fmt))
        sys.exit(code)
    rows = [r for r in rs.rules if show_all or (r.status != "opt-in" and not r.generated)]
    if fmt == "json":
        click.echo(json.dumps([{
            "id": r.id, "name": r.name, "family": r.family, "status": r.status, "severity": r.severity,
            "summary": r.summary, "fix": r.fix_applicability, "deprecated_in": r.deprecated_in, "removed_in": r.removed_in,
            "generated": r.generated,
        } for r in rows], indent=2))
        sys.exit(code)
    for r in rows:
        mark = {"safe": "[*]", "unsafe": "[~]", "display-only": "[?]", "manual": "[ ]"}[r.fix_applicability]
        status = f" ({r.status})" if r.status != "stable" else ""
        click.echo(f"{r.id:7s} {mark} {r.family:10s} {r.name}{status}: {r.summary}")
    hidden = len(rs.rules) - len(rows)
    if hidden:
        gen = sum(1 for r in rs.rules if r.generated)
        opt = sum(1 for r in rs.rules if r.status == "opt-in" and not r.generated)
        click.echo(f"... and {hidden} more ({gen} generated from the API change catalog, {opt} opt-in): "
                   "`cudamigrate rules --all` lists every rule")
    sys.exit(code)


@main.command()
@click.argument("rule_id")
def explain(rule_id: str) -> None:
    """Explain a rule: what, why, how it is fixed, and where the facts come from."""
    from .explain import explain_text

    rs = load_rules()
    rule = rs.by_id().get(rule_id.upper())
    if rule is None:
        _err(f"unknown rule {rule_id!r}; `cudamigrate rules` lists them")
        sys.exit(EXIT_ERROR)
    from .calibration import all_measurements, current_gpu

    try:
        cfg = find_config(Path("."))
    except ConfigError:
        cfg = None
    base = cfg.path.parent if cfg is not None and cfg.path else Path(".")
    measured = all_measurements(rule, cfg.get("calibration") if cfg is not None else None, base)
    click.echo(explain_text(rule, measured, current_gpu() if measured else None))


@main.command()
@click.option("--gpu", is_flag=True, help="GPU stage: build the original and fixed programs with nvcc, run both, compare outputs.")
@click.option("--fixtures", "fixtures_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Fixture root (default: the repository's fixtures/).")
@click.option("--jobs", "-j", type=int, default=0, help="Parallel nvcc builds (default: CPUs).")
@click.option("--run-jobs", type=int, default=1, show_default=True, help="Programs run at once (1 keeps GPU timings fair).")
@click.option("--timeout", type=float, default=120, show_default=True, help="Seconds per program run.")
@click.option("--arch", default="auto", show_default=True, help="GPU architecture: auto (nvidia-smi compute_cap) or sm_XY.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write selftest.json and selftest.txt here.")
@click.option("--build-only", is_flag=True, help="With --gpu: build everything, run nothing (works without a GPU).")
@click.option("--budget", type=float, default=None, help="Seconds for the whole stage; what is left is reported as failed.")
@click.option("--record-expected", is_flag=True,
              help="Cases without their expected.txt record the fixed program's output (OUT/expected/) instead of failing.")
def selftest(gpu: bool, fixtures_dir: Path | None, jobs: int, run_jobs: int, timeout: float, arch: str,
             out_dir: Path | None, build_only: bool, budget: float | None, record_expected: bool) -> None:
    """Check every fixture case; with --gpu, run the original and fixed programs on the GPU."""
    from . import selftest as st

    fixtures_dir = fixtures_dir or st.default_fixtures_dir()
    if not fixtures_dir.is_dir():
        _err(f"no fixture cases found (looked next to the package, {fixtures_dir}, and for a cudamigrate checkout "
             "containing the current directory): selftest checks the cases of a source checkout "
             "(fixtures/<family>/<case>/); run it inside a checkout of cudamigrate or pass --fixtures DIR")
        sys.exit(EXIT_ERROR)
    if not gpu:
        fails, n = st.static_selftest(fixtures_dir)
        for f in fails:
            click.echo(f"FAIL {f}")
        click.echo(f"{n} fixture case(s): {'all good' if not fails else f'{len(fails)} failure(s)'}")
        sys.exit(EXIT_FINDINGS if fails else EXIT_CLEAN)
    info = None
    if not build_only:
        info = st.detect_gpu()
        if info is None:
            click.echo(st.NO_GPU_LINE)
            sys.exit(EXIT_CLEAN)
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="cudamigrate-gpu-"))  # builds stay out of --out (only results go there)
    report = st.run_gpu_stage(fixtures_dir, work=work, jobs=jobs, timeout=timeout, arch=arch, gpu=info,
                              build_only=build_only, run_jobs=run_jobs, log=lambda m: click.echo(m, err=True),
                              budget=budget, record_expected=record_expected)
    click.echo(st.table(report), nl=False)
    if out_dir is not None:
        j, _ = st.write_outputs(report, out_dir)
        click.echo(f"results: {j}", err=True)
    sys.exit(EXIT_CLEAN if report.ok else EXIT_FINDINGS)


@main.command("test")
@click.argument("rule_ids", nargs=-1)
@click.option("--update", is_flag=True, help="Rewrite each case's findings.txt (the pinned messages) first; review the diff.")
@click.option("--fixtures", "fixtures_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Fixture root (default: the repository's fixtures/).")
def test_cmd(rule_ids: tuple[str, ...], update: bool, fixtures_dir: Path | None) -> None:
    """Check the fixture cases of the given rules (all without ids): findings, messages, fix, idempotence, lookalikes.

    A rule's cases are those named after it (fixtures/<family>/<rule stem>[--variant]/) and those whose
    fixture.yaml selects it (`rules: [...]`). Semantic-mode cases are checked by tests/test_semantic.py."""
    from . import selftest as st

    fixtures_dir = fixtures_dir or st.default_fixtures_dir()
    if not fixtures_dir.is_dir():
        _err(f"{fixtures_dir}: no fixture cases (run inside a cudamigrate checkout or pass --fixtures DIR)")
        sys.exit(EXIT_ERROR)
    try:
        fails, notes, n = st.rule_tests(fixtures_dir, list(rule_ids), update=update)
    except ValueError as exc:
        _err(str(exc))
        sys.exit(EXIT_ERROR)
    for line in notes:
        click.echo(line, err=True)
    for f in fails:
        click.echo(f"FAIL {f}")
    click.echo(f"{n} fixture case(s): {'all good' if not fails else f'{len(fails)} failure(s)'}")
    sys.exit(EXIT_FINDINGS if fails else EXIT_CLEAN)


@main.command()
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Calibration file to write (default: print it).")
@click.option("--bench-dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Benchmark sources (default: the repository's bench/gpu/).")
@click.option("--merge", is_flag=True, help="Keep other GPUs' entries already in --out.")
@click.option("--arch", default="auto", show_default=True)
@click.option("--timeout", type=float, default=240, show_default=True, help="Seconds per benchmark.")
@click.option("--budget", type=float, default=None, help="Seconds for all benchmarks; the rest are skipped.")
def calibrate(out_file: Path | None, bench_dir: Path | None, merge: bool, arch: str, timeout: float,
              budget: float | None) -> None:
    """Measure the performance rules' costs on this GPU and write a calibration file."""
    import json

    from . import calibrate as cal
    from .selftest import NO_GPU_LINE, detect_gpu

    info = detect_gpu()
    if info is None:
        click.echo(NO_GPU_LINE)
        sys.exit(EXIT_CLEAN)
    bench_dir = bench_dir or cal.default_bench_dir()
    if not bench_dir.is_dir():
        _err(f"no benchmarks at {bench_dir}: pass --bench-dir DIR (a source checkout's bench/gpu/)")
        sys.exit(EXIT_ERROR)
    doc, problems = cal.calibrate(info, bench_dir, arch=arch, timeout=timeout,
                                  log=lambda m: click.echo(m, err=True), budget=budget)
    for p in problems:
        _err(p)
    if not doc["gpus"][0]["rules"]:
        _err("no benchmark produced figures: no calibration written")
        sys.exit(EXIT_FINDINGS)
    if out_file is not None:
        doc = cal.merge_into(out_file, doc) if merge else doc
        out_file.parent.mkdir(parents=True, exist_ok=True)
        out_file.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        click.echo(f"wrote {out_file}", err=True)
    else:
        click.echo(json.dumps(doc, indent=2))
    sys.exit(EXIT_FINDINGS if problems else EXIT_CLEAN)


if __name__ == "__main__":  # pragma: no cover
    main()
