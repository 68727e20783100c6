"""Configuration from `[tool.cudamigrate]` in pyproject.toml or a `.cudamigrate.toml`.

Searched upwards from the first path given (like ruff); command-line flags win.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .textsafe import one_line, printable

KNOWN = {"select", "ignore", "extend-select", "exclude", "target-cuda", "from-cuda", "options", "rule-options",
         "rules-dirs", "max-file-size", "respect-gitignore", "calibration", "keep-compat",
         "verify", "build-command", "run-command", "reference", "include-dirs", "defines",
         "verify-timeout", "baseline", "per-file-ignores"}

MAX_CONFIG_BYTES = 4 * 1024 * 1024


class ConfigError(Exception):
    """A configuration file that cannot be used; `path` is that file (the editor marks it)."""

    path: Path | None = None


@dataclass
class Config:
    path: Path | None = None
    values: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


def find_config(start: Path) -> Config:
    # os.path's predicates: an unsearchable directory or a symlink loop on the way is skipped, not a crash
    start = Path(os.path.realpath(start))
    d = start if os.path.isdir(start) else start.parent
    for cur in [d, *d.parents]:
        dot = cur / ".cudamigrate.toml"
        if os.path.isfile(dot):
            return load_config(dot, section=None)
        py = cur / "pyproject.toml"
        if os.path.isfile(py):
            cfg = load_config(py, section=("tool", "cudamigrate"))
            if cfg.values:
                return cfg
    return Config()


def load_config(path: Path, section: tuple[str, ...] | None) -> Config:
    try:
        return _read_config(path, section)
    except ConfigError as exc:
        exc.path = path
        raise


def _read_config(path: Path, section: tuple[str, ...] | None) -> Config:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ConfigError(f"{printable(str(path))}: cannot read configuration: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # a FIFO or device would block or never end
                raise ConfigError(f"{printable(str(path))}: cannot read configuration: not a regular file")
            raw = fh.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{printable(str(path))}: configuration larger than {MAX_CONFIG_BYTES} bytes")
        doc = tomllib.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else one_line(str(exc))
        raise ConfigError(f"{printable(str(path))}: cannot read configuration: {why}") from None
    if section:
        for s in section:
            doc = doc.get(s, {}) if isinstance(doc, dict) else {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: configuration must be a table")
    for k in doc:
        if k not in KNOWN:
            import difflib

            near = difflib.get_close_matches(str(k), sorted(KNOWN), n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise ConfigError(f"{printable(str(path))}: unknown key {printable(repr(k))}{hint} "
                              f"(known: {', '.join(sorted(KNOWN))})")
    for k, v in doc.items():
        problem = _type_problem(k, v)
        if problem:
            raise ConfigError(f"{printable(str(path))}: `{k}` {problem}")
    from .config_check import ConfigValueError, check_values

    try:
        checked = check_values(path, doc)
    except ConfigValueError as exc:
        raise ConfigError(printable(str(exc))) from None
    return Config(path, _normalized(checked))


_STR_LISTS = {"select", "ignore", "extend-select", "exclude", "rules-dirs", "include-dirs", "defines"}
_SCALAR = (str, int, float, bool)


def _plain(x: Any) -> bool:
    """An option value: a scalar or a flat list of scalars."""
    return isinstance(x, _SCALAR) or (isinstance(x, list) and all(isinstance(y, _SCALAR) for y in x))


def _type_problem(key: str, v: Any) -> str | None:
    """Why a configuration value has the wrong type (None when it is fine): checked here so a typo
    in a configuration is one line naming the key, not a traceback later."""
    if key in _STR_LISTS:
        if isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            return None
        return "must be a string or a list of strings"
    if key in ("target-cuda", "from-cuda"):
        return None if isinstance(v, (str, int, float)) and not isinstance(v, bool) else 'must be a version like "13.0"'
    if key == "max-file-size":
        return None if isinstance(v, int) and not isinstance(v, bool) and v > 0 else "must be a positive integer"
    if key == "respect-gitignore":
        return None if isinstance(v, bool) else "must be true or false"
    if key == "verify-timeout":
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
        return None if ok else "must be a positive number of seconds"
    if key == "calibration":
        return None if isinstance(v, str) else "must be a file name"
    if key == "verify":
        return None if v in ("auto", "off", "require") else 'must be "auto", "off" or "require"'
    if key in ("build-command", "run-command", "reference"):
        return None if isinstance(v, str) and v.strip() else "must be a non-empty string"
    if key == "options":
        if isinstance(v, dict) and all(_plain(x) for x in v.values()):
            return None
        return "must be a table of KEY = value (strings, numbers, booleans or lists of them)"
    if key == "rule-options":
        if isinstance(v, dict) and all(isinstance(t, dict) and all(_plain(x) for x in t.values())
                                       for t in v.values()):
            return None
        return "must be tables of KEY = value per rule id ([tool.cudamigrate.rule-options.CM101])"
    return None


def _normalized(doc: dict[str, Any]) -> dict[str, Any]:
    out = dict(doc)
    for k in ("target-cuda", "from-cuda"):
        if k in out and not isinstance(out[k], str):
            out[k] = str(out[k])
    for k in _STR_LISTS:
        if isinstance(out.get(k), str):
            out[k] = [out[k]]
    return out
