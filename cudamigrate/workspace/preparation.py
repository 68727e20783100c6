"""What `scan`, `fix` and `plan` (and the language server) do before the work: configuration, its checks,
rules, files (diff scope), the engine, and the key under which a whole scan's report is replayed.

Every check that can refuse a run lives here and raises WorkspaceError, so the terminal and the editor refuse
the same configurations with the same words (the CLI prints the error and exits 2; the server shows it and
marks the configuration file)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.config import Config, ConfigError, find_config, load_config
from ..core.per_file import from_config
from ..core.textsafe import printable
from ..knowledge.load import builtin_rules_dir, load_rules
from .request import Request, WorkspaceError, check_regular, split_values, version_value

if TYPE_CHECKING:  # imported where used: `--version`, `rules` and `explain` never load tree-sitter, libclang or Jinja
    from ..core.options import Options
    from ..scan.engine import Engine
    from ..pipeline.runner import EngineSpec
    from ..rules.schema import Rule
    from ..toolcheck.target import Target


def diff_scope(req: Request, files: list[Path]) -> tuple[Any, list[Path]]:
    """`--diff-base`'s changed lines (None without the flag) and the files that hold any: an unchanged file
    cannot hold a changed line, so it is not even scanned."""
    changed = _diff_base(req.paths, req.diff_base)
    return changed, files if changed is None else [p for p in files if changed.has_file(p)]


def on_changed_lines(findings: list[Any], files: list[Path], changed: Any) -> list[Any]:
    """The findings on lines `--diff-base` counts as changed (all of them without the flag)."""
    if changed is None:
        return findings
    from ..pipeline.runner import display_path

    real_of = {display_path(p): p for p in files}
    return [f for f in findings if changed.covers(real_of.get(f.path, Path(f.path)), f.line, f.end_line)]


def _diff_base(paths: tuple[Path, ...], ref: str | None):
    """The lines changed since `--diff-base REF` (cudamigrate/workflow/diffbase.py), or None without the flag."""
    if ref is None:
        return None
    from ..workflow.diffbase import DiffBaseError, changed_lines

    try:
        return changed_lines(ref, paths[0] if paths else Path("."))
    except DiffBaseError as exc:
        raise WorkspaceError(printable(str(exc))) from None


@dataclass
class Prepared:
    """What a run is, before any rule is loaded: configuration, options, rule directories and the files.
    `warnings` are lines for the user (a malformed calibration file ignored), in the order they arose."""

    cfg: Config
    opts: Options
    rule_dirs: list[Path]
    max_bytes: int | None
    use_cache: bool
    files: list[Path]
    walk_errors: list[str]
    project: list[Path] | None = None  # with --shard: every file of the run, for the project index
    warnings: list[str] = field(default_factory=list)
    target: Target | None = None  # the release and why (`opts.target` is its version)

    @property
    def target_source(self) -> str:
        """Why the target is what it is ("from nvcc 13.0 on PATH"), for reports."""
        return self.target.source if self.target is not None else ""


def find_configuration(req: Request) -> Config:
    """The configuration in force: the file the request names, else the nearest one above its first path."""
    try:
        if req.config_path:
            section = None if req.config_path.name != "pyproject.toml" else ("tool", "cudamigrate")
            return load_config(req.config_path, section)
        return find_config(req.paths[0] if req.paths else Path("."))
    except ConfigError as exc:
        raise WorkspaceError(str(exc), config=exc.path) from None


def prepare(req: Request) -> Prepared:
    """Configuration, options and discovery: all that `scan` needs to know whether a replay of an unchanged
    run applies (cudamigrate/pipeline/replay.py), before loading the rules or importing the engine. A refusal
    names the configuration file in force (an editor marks it: a bad value may come from there)."""
    if req.compile_commands is not None:
        check_regular(req.compile_commands, "--compile-commands")
    cfg = find_configuration(req)
    try:
        return _prepare_with(req, cfg)
    except WorkspaceError as exc:
        exc.config = exc.config or cfg.path
        raise


def _prepare_with(req: Request, cfg: Config) -> Prepared:
    from ..pipeline.discover import discover
    from ..core.options import Options

    paths = req.paths
    target = _target(req, cfg)
    from_v = version_value(req.from_version or cfg.get("from-cuda"), "--from")
    select = split_values(req.select) or split_values(cfg.get("select")) or None
    ignore = split_values(req.ignore) + split_values(cfg.get("ignore"))
    extend = split_values(req.extend_select) + split_values(cfg.get("extend-select"))
    options = dict(cfg.get("options", {}) or {})
    for item in req.options:
        if "=" not in item:
            raise WorkspaceError(f"expected KEY=VALUE, got {item!r}", "--option")
        k, v = item.split("=", 1)
        options[k.strip()] = v.strip()
    rule_dirs = [] if req.no_builtin_rules else [builtin_rules_dir()]
    base = cfg.path.parent if cfg.path else Path(".")
    if cfg.path and cfg.get("rules-dirs"):
        from ..core.config_use import ConfigUseError, check_rules_dirs

        try:
            rule_dirs += check_rules_dirs(cfg.path, cfg.get("rules-dirs"))
        except ConfigUseError as exc:
            raise WorkspaceError(str(exc), config=cfg.path) from None
    rule_dirs += list(req.rules_dirs)
    calibration = None
    warnings: list[str] = []
    from ..findings.measured import load_calibration

    try:
        calibration = load_calibration(cfg.get("calibration"), base)
    except (OSError, AttributeError, TypeError, ValueError) as exc:  # a malformed calibration file: declared estimates
        warnings.append(f"warning: calibration {cfg.get('calibration') or 'file'} ignored: {type(exc).__name__}: {exc}")
        calibration = None
    opts = Options(target=target.version, from_version=from_v, select=select, ignore=ignore, extend_select=extend,
                   options=options, rule_options=cfg.get("rule-options", {}) or {}, calibration=calibration,
                   keep_compat=version_value(req.keep_compat or cfg.get("keep-compat"), "--keep-compat"),
                   include_roots=tuple(str(p if os.path.isdir(p) else p.parent) for p in (paths or (Path("."),))),
                   per_file_ignores=from_config(str(base), cfg.get("per-file-ignores")),
                   compile_db=_compile_db(req))
    walk_errors: list[str] = []
    files = list(discover(list(paths) or [Path(".")], cfg.get("exclude", []) or [],
                          respect_gitignore=cfg.get("respect-gitignore", True), errors=walk_errors,
                          base=cfg.path.parent if cfg.path else None))
    return Prepared(cfg, opts, rule_dirs, req.max_file_size or cfg.get("max-file-size"),
                    not req.no_cache, files, walk_errors, warnings=warnings, target=target)


def _compile_db(req: Request) -> str | None:
    """The run's compile database (`--compile-commands`, else the one clangd would pick), absolute: its units'
    `-D`/`-U` flags decide preprocessor branches also in a `--no-semantic` scan (read/unit_defines.py)."""
    from ..parse.compile_db import find_compile_db  # not parse/clang.py: `--no-semantic` loads nothing of libclang
    from ..pipeline.result_cache import unrecorded

    if req.compile_commands is not None:
        return os.path.abspath(req.compile_commands)
    with unrecorded():  # the ancestors' listings: the database's path is in the run digest (Options)
        found = find_compile_db(list(req.paths) or [Path(".")])
    return None if found is None else os.path.abspath(found)


def _target(req: Request, cfg: Config) -> Target:
    """`--target-cuda`, else the configuration's `target-cuda`, else the toolkit the project builds with
    (cudamigrate/toolcheck/target.py), with the reason reports give."""
    from ..toolcheck.target import detect, explicit

    if req.target is not None:
        return explicit(version_value(req.target, "--target-cuda") or (13, 0), "--target-cuda")
    if cfg.get("target-cuda") is not None:
        where = f"target-cuda in {printable(str(cfg.path))}" if cfg.path else "the configuration's target-cuda"
        return explicit(version_value(cfg.get("target-cuda"), "--target-cuda") or (13, 0), where)
    from ..pipeline.result_cache import unrecorded

    with unrecorded():  # the ancestors' listings and nvcc: the target is in the run digest, not a result's dependency
        return detect(list(req.paths) or [Path(".")], req.compile_commands)


@dataclass
class Loaded:
    """The rules a run uses, checked against its request: the rules and one line per bad rule file (the other
    rules still run)."""

    rules: list[Rule]
    errors: list[str]


def load_checked(req: Request, pre: Prepared) -> Loaded:
    """The rules, and the checks that need them: every selector names a rule, family or prefix; the versions
    are ones the rules know; rule options name real rules and options. WorkspaceError (all problems, one line)
    when any check fails."""
    from ..pipeline.result_cache import unrecorded

    cfg = pre.cfg
    with unrecorded():  # the rule files are in the result cache's run digest; the rule cache is the tool's own
        rs = load_rules(pre.rule_dirs, use_cache=pre.use_cache)
    from ..rules.selectors import check as check_selectors

    where = f"{cfg.path}" if cfg.path else "config"
    bad = check_selectors({flag: split_values(v) for flag, v in (("--select", req.select), ("--ignore", req.ignore),
                                                                 ("--extend-select", req.extend_select))}
                          | {f"{where}: {k}": split_values(cfg.get(k)) for k in ("select", "ignore", "extend-select")}
                          | {f"{where}: per-file-ignores {g!r}": v for g, v in (cfg.get("per-file-ignores") or {}).items()},
                          rs.rules)
    from ..knowledge.versions import check as check_versions

    flag = "--target-cuda" if pre.target is None or pre.target.explicit else f"the target ({pre.target.source})"
    bad += check_versions(pre.opts.target, pre.opts.from_version, pre.opts.keep_compat, rs.rules, target_flag=flag)
    from ..core.config_use import check_rule_options

    bad += check_rule_options(where, cfg.get("rule-options") or {}, cfg.get("options") or {}, rs.rules)
    if bad:
        raise WorkspaceError("; ".join(bad), config=cfg.path)
    return Loaded(rs.rules, rs.errors)


@dataclass
class Setup:
    """A run ready to go: the engine (with the project index), the spec workers rebuild it from, the files,
    the configuration, the bad rule files' lines and what discovery could not walk."""

    engine: Engine
    spec: EngineSpec
    files: list[Path]
    cfg: Config
    rule_errors: list[str]
    walk_errors: list[str]


def setup(req: Request, pre: Prepared | None = None) -> Setup:
    """The engine and what goes with it, for `scan`, `fix` and `plan` (`pre`: the preparation already made)."""
    from ..scan.engine import Engine
    from ..pipeline.runner import EngineSpec
    from ..read.project_index import ProjectIndex

    pre = pre or prepare(req)
    loaded = load_checked(req, pre)
    files = pre.files
    # project-wide facts: headers, class members, includers
    engine = Engine(loaded.rules, pre.opts, project=ProjectIndex(files=pre.project or files))
    spec = EngineSpec(pre.rule_dirs, pre.opts, pre.max_bytes, use_rule_cache=pre.use_cache)
    spec.project_files = pre.project or files
    return Setup(engine, spec, files, pre.cfg, loaded.errors, pre.walk_errors)


@dataclass
class ReplayKey:
    """Where and under which key a whole scan's report is replayed or stored (cudamigrate/pipeline/replay.py):
    the open result cache, the key, the run digest and the (path, displayed name) of each file."""

    db: Any
    key: str
    run: str
    items: list[tuple[str, str]]


def replay_key(req: Request, pre: Prepared, presentation: dict[str, Any]) -> ReplayKey | None:
    """The replay key when this scan may be replayed or stored as a replay, else None."""
    from ..pipeline import result_cache as cache
    from ..pipeline.replay import replay_key as key_of
    from ..core.textsafe import display_paths

    if not pre.use_cache or os.environ.get("CUDAMIGRATE_NO_CACHE") or pre.walk_errors or req.timings:
        return None
    semantic = not req.no_semantic and req.compile_commands is not None
    if not req.no_semantic and not semantic:
        from ..parse.compile_db import find_compile_db  # here: `--no-semantic` loads nothing of semantic mode

        with cache.unrecorded():  # the ancestors' listings: asked again every run, never a result's dependency
            semantic = find_compile_db(list(req.paths) or [Path(".")]) is not None
    if semantic:
        return None  # semantic mode: not cached
    import gc

    db = cache.ResultCache(freeze=not gc.isenabled())  # the CLI's own process (see `_settled`)
    if not db.enabled:
        return None
    run = cache.run_digest(pre.rule_dirs, pre.opts, db, max_bytes=pre.max_bytes)
    items = list(zip(map(str, pre.files), display_paths(pre.files), strict=True))
    return ReplayKey(db, key_of(run, [(os.path.abspath(p), d) for p, d in items], presentation), run, items)
