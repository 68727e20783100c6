"""`scan --show-files` and `--show-settings`: what a run would scan and with which settings, without scanning.

Like ruff's flags of the same names: the first answer to "why is this file not reported" or "which
configuration file is in force" when a CI gate behaves unexpectedly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.textsafe import path_text

if TYPE_CHECKING:
    from ..workspace.preparation import Prepared


def _value(v: Any) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, int) for x in v):
        return f"{v[0]}.{v[1]}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(str(x) for x in v) + "]" if v else "[]"
    return str(v)


def settings(pre: Prepared) -> list[tuple[str, str]]:
    """(name, value) of every setting a scan resolves from flags and the configuration file."""
    cfg, opts = pre.cfg, pre.opts
    return [
        ("configuration", path_text(cfg.path) if cfg.path else "(none found; defaults)"),
        ("target-cuda", _value(opts.target)),
        ("target-source", pre.target_source or "(not recorded)"),  # why the target: flag, configuration, nvcc
        ("from-cuda", _value(opts.from_version)),
        ("keep-compat", _value(opts.keep_compat)),
        ("select", _value(opts.select) if opts.select else "(default rules)"),
        ("ignore", _value(opts.ignore)),
        ("extend-select", _value(opts.extend_select)),
        ("exclude", _value(cfg.get("exclude", []) or [])),
        ("respect-gitignore", _value(cfg.get("respect-gitignore", True))),
        ("max-file-size", _value(pre.max_bytes or "8388608 (default)")),
        ("options", _value(sorted(f"{k}={v}" for k, v in opts.options.items()))),
        ("rule-options", _value(sorted(opts.rule_options))),
        ("per-file-ignores", _value([f"{g}: {','.join(v)}" for g, v in opts.per_file_ignores.table]
                                    if opts.per_file_ignores else [])),
        ("baseline", path_text(cfg.path.parent / cfg.get("baseline")) if cfg.path and cfg.get("baseline") else "(none)"),
        ("rules-dirs", _value([path_text(d) for d in pre.rule_dirs])),
        ("cache", "on" if pre.use_cache else "off"),
        ("files", str(len(pre.files))),
    ]


def show(pre: Prepared, with_settings: bool) -> str:
    """--show-files: one file per line; --show-settings: `name = value` lines (then the files are not listed)."""
    if with_settings:
        return "".join(f"{k} = {v}\n" for k, v in settings(pre))
    return "".join(path_text(f) + "\n" for f in pre.files)
