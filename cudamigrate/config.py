"""Configuration from `[tool.cudamigrate]` in pyproject.toml or a `.cudamigrate.toml`.

Searched upwards from the first path given (like ruff); command-line flags win.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KNOWN = {"select", "ignore", "extend-select", "exclude", "target-cuda", "from-cuda", "options", "rule-options",
         "rules-dirs", "max-file-size", "respect-gitignore", "calibration", "keep-compat"}


class ConfigError(Exception):
    pass


@dataclass
class Config:
    path: Path | None = None
    values: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


def find_config(start: Path) -> Config:
    start = start.resolve()
    d = start if start.is_dir() else start.parent
    for cur in [d, *d.parents]:
        dot = cur / ".cudamigrate.toml"
        if dot.is_file():
            return load_config(dot, section=None)
        py = cur / "pyproject.toml"
        if py.is_file():
            cfg = load_config(py, section=("tool", "cudamigrate"))
            if cfg.values:
                return cfg
    return Config()


def load_config(path: Path, section: tuple[str, ...] | None) -> Config:
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc}") from None
    if section:
        for s in section:
            doc = doc.get(s, {}) if isinstance(doc, dict) else {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: configuration must be a table")
    for k in doc:
        if k not in KNOWN:
            raise ConfigError(f"{path}: unknown key {k!r} (known: {', '.join(sorted(KNOWN))})")
    from .config_check import ConfigValueError, check_values

    try:
        return Config(path, check_values(path, doc))
    except ConfigValueError as exc:
        raise ConfigError(str(exc)) from None
