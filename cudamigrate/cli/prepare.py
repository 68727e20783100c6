"""What `scan`, `fix` and `plan` do before the work: configuration, rules, files (stdin, diff scope), the engine,
and the key under which a whole scan's report is replayed."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..core.config import Config, ConfigError, find_config, load_config
from ..core.per_file import from_config
from ..core.textsafe import printable
from ..knowledge.load import builtin_rules_dir, load_rules
from .options import _check_regular, _split, _version
from .output import err as _err

if TYPE_CHECKING:  # imported where used: `--version`, `rules` and `explain` never load tree-sitter, libclang or Jinja
    from ..core.options import Options
    from ..scan.engine import Engine
    from ..pipeline.runner import EngineSpec


def _diff_scope(paths: tuple[Path, ...], files: list[Path], kw: dict[str, Any]) -> tuple[Any, list[Path]]:
    """`--diff-base`'s changed lines (None without the flag) and the files that hold any: an unchanged file
    cannot hold a changed line, so it is not even scanned."""
    changed = _diff_base(paths, kw.get("diff_base"))
    return changed, files if changed is None else [p for p in files if changed.has_file(p)]


def _on_changed_lines(findings: list[Any], files: list[Path], changed: Any) -> list[Any]:
    """The findings on lines `--diff-base` counts as changed (all of them without the flag)."""
    if changed is None:
        return findings
    from ..pipeline.runner import display_path

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
    """The lines changed since `--diff-base REF` (cudamigrate/workflow/diffbase.py), or None without the flag."""
    if ref is None:
        return None
    from ..workflow.diffbase import DiffBaseError, changed_lines

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
    project: list[Path] | None = None  # with --shard: every file of the run, for the project index


def _prepare(paths: tuple[Path, ...], kw: dict[str, Any]) -> Prepared:
    """Configuration, options and discovery: all that `scan` needs to know whether a replay of an unchanged
    run applies (cudamigrate/pipeline/replay.py), before loading the rules or importing the engine."""
    from ..pipeline.discover import discover
    from ..core.options import Options

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
        from ..core.config_use import ConfigUseError, check_rules_dirs

        try:
            rule_dirs += check_rules_dirs(cfg.path, cfg.get("rules-dirs"))
        except ConfigUseError as exc:
            raise click.UsageError(str(exc)) from None
    rule_dirs += list(kw.get("rules_dir") or ())
    calibration = None
    from ..findings.measured import load_calibration

    try:
        calibration = load_calibration(cfg.get("calibration"), base)
    except (OSError, AttributeError, TypeError, ValueError) as exc:  # a malformed calibration file: declared estimates
        _err(f"warning: calibration {cfg.get('calibration') or 'file'} ignored: {type(exc).__name__}: {exc}")
        calibration = None
    opts = Options(target=target, from_version=from_v, select=select, ignore=ignore, extend_select=extend,
                   options=options, rule_options=cfg.get("rule-options", {}) or {}, calibration=calibration,
                   keep_compat=_version(kw.get("keep_compat") or cfg.get("keep-compat"), "--keep-compat"),
                   include_roots=tuple(str(p if os.path.isdir(p) else p.parent) for p in (paths or (Path("."),))),
                   per_file_ignores=from_config(str(base), cfg.get("per-file-ignores")))
    walk_errors: list[str] = []
    files = list(discover(list(paths) or [Path(".")], cfg.get("exclude", []) or [],
                          respect_gitignore=cfg.get("respect-gitignore", True), errors=walk_errors,
                          base=cfg.path.parent if cfg.path else None))
    return Prepared(cfg, opts, rule_dirs, kw.get("max_file_size") or cfg.get("max-file-size"),
                    not kw.get("no_cache"), files, walk_errors)


def _setup(paths: tuple[Path, ...], kw: dict[str, Any],
           pre: Prepared | None = None) -> tuple[Engine, EngineSpec, list[Path], Config, list[str]]:
    from ..scan.engine import Engine
    from ..pipeline.result_cache import unrecorded
    from ..pipeline.runner import EngineSpec
    from ..read.project_index import ProjectIndex

    pre = pre or _prepare(paths, kw)
    cfg, opts, files = pre.cfg, pre.opts, pre.files
    with unrecorded():  # the rule files are in the result cache's run digest; the rule cache is the tool's own
        rs = load_rules(pre.rule_dirs, use_cache=pre.use_cache)
    from ..rules.selectors import check as check_selectors

    where = f"{cfg.path}" if cfg.path else "config"
    bad = check_selectors({flag: _split(kw.get(k)) for flag, k in (("--select", "select"), ("--ignore", "ignore"),
                                                                     ("--extend-select", "extend_select"))}
                          | {f"{where}: {k}": _split(cfg.get(k)) for k in ("select", "ignore", "extend-select")}
                          | {f"{where}: per-file-ignores {g!r}": v for g, v in (cfg.get("per-file-ignores") or {}).items()},
                          rs.rules)
    from ..knowledge.versions import check as check_versions

    bad += check_versions(opts.target, opts.from_version, opts.keep_compat, rs.rules)
    from ..core.config_use import check_rule_options

    bad += check_rule_options(where, cfg.get("rule-options") or {}, cfg.get("options") or {}, rs.rules)
    if bad:
        raise click.UsageError("; ".join(bad))
    engine = Engine(rs.rules, opts)
    spec = EngineSpec(pre.rule_dirs, opts, pre.max_bytes, use_rule_cache=pre.use_cache)
    engine.project = ProjectIndex(files=pre.project or files)  # project-wide facts: headers, class members, includers
    spec.project_files = pre.project or files
    for e in rs.errors:  # one line per bad rule file; the other rules still run
        _err(e)
    kw["walk_errors"] = pre.walk_errors  # what could not be walked: reported like unreadable files
    return engine, spec, files, cfg, rs.errors


def _replay_key(paths: tuple[Path, ...], pre: Prepared, kw: dict[str, Any], presentation: dict[str, Any]):
    """(result cache, replay key, run digest) when this scan may be replayed or stored as a replay
    (cudamigrate/pipeline/replay.py), else None."""
    from ..pipeline import result_cache as cache
    from ..parse.clang import find_compile_db
    from ..pipeline.replay import replay_key
    from ..core.textsafe import display_paths

    if not pre.use_cache or os.environ.get("CUDAMIGRATE_NO_CACHE") or pre.walk_errors or kw.get("timings"):
        return None
    with cache.unrecorded():  # the ancestors' listings: asked again every run, never a result's dependency
        semantic = not kw.get("no_semantic") and (kw.get("compile_commands") is not None
                                                  or find_compile_db(list(paths) or [Path(".")]) is not None)
    if semantic:
        return None  # semantic mode: not cached
    import gc

    db = cache.ResultCache(freeze=not gc.isenabled())  # the CLI's own process (see `_settled`)
    if not db.enabled:
        return None
    run = cache.run_digest(pre.rule_dirs, pre.opts, db, max_bytes=pre.max_bytes)
    items = list(zip(map(str, pre.files), display_paths(pre.files), strict=True))
    return db, replay_key(run, [(os.path.abspath(p), d) for p, d in items], presentation), run, items

def _input_gate(paths: tuple[Path, ...], files: list[Path], cfg: Config, stdin: bool,
                force_exclude: bool = False) -> tuple[list[Path], bool]:
    """`fix` and `plan`: the named paths that give no file, one line each (pipeline/inputs.py); exit 3 at
    once when nothing is left to read. (stdin: a buffer whose name is excluded is handled as ruff does.)"""
    if stdin:
        return files, False
    from ..pipeline.inputs import gate
    from .app import EXIT_INPUT

    files, input_error = gate(list(paths), files, cfg, _err, force_exclude)
    if input_error and not files:
        sys.exit(EXIT_INPUT)
    return files, input_error
