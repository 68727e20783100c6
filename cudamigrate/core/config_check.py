"""Type checks for configuration values, each error naming the file and the key.

Without them `ignore = 5` crashed with a traceback, `select = "streams"` was
iterated per character (selecting nothing), and `target-cuda = 13` (a TOML
integer) was reported as a bad `--target-cuda`. Versions given as numbers are
accepted (`13` means 13.0, `12.4` means 12.4) and normalised to strings.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

LIST_KEYS = ("select", "ignore", "extend-select", "exclude", "rules-dirs")
VERSION_KEYS = ("target-cuda", "from-cuda", "keep-compat")


class ConfigValueError(Exception):
    pass


def normalize_version(v: Any) -> str | None:
    """`13` / `"13"` -> "13.0"; `12.4` / `"12.4"` -> "12.4"; anything else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return f"{v}.0"
    s = str(v).strip() if isinstance(v, (str, float)) else ""
    if re.fullmatch(r"\d+", s):
        return s + ".0"
    return s if re.fullmatch(r"\d+\.\d+", s) else None


def glob_problem(pattern: str) -> str | None:
    """Why a gitignore-style pattern cannot be used (None: it can). pathspec turns `[z-a]` into a regex
    Python's `re` refuses, and a trailing `\\` is no pattern; git itself accepts both and matches nothing."""
    import pathspec

    try:
        pathspec.PathSpec.from_lines("gitignore", [pattern])
    except (re.error, ValueError, RecursionError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def check_values(path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    """The configuration with versions normalised; ConfigValueError naming the key on a wrong type."""
    out = dict(doc)

    def bad(key: str, want: str) -> ConfigValueError:
        return ConfigValueError(f"{path}: `{key}` must be {want}, got {doc[key]!r}")

    for k in LIST_KEYS:
        if k in doc and not (isinstance(doc[k], list) and all(isinstance(x, str) for x in doc[k])):
            example = '["streams"]' if k != "exclude" else '["third_party/"]'
            raise bad(k, f"a list of strings, e.g. {k} = {example}")
    for pattern in doc.get("exclude", []):
        why = glob_problem(pattern)
        if why is not None:
            raise ConfigValueError(f"{path}: `exclude` pattern {pattern!r} cannot be used: {why}")
    for k in VERSION_KEYS:
        if k in doc:
            v = normalize_version(doc[k])
            if v is None:
                raise bad(k, 'a CUDA version such as "13.0"')
            out[k] = v
    if "max-file-size" in doc and (isinstance(doc["max-file-size"], bool) or not isinstance(doc["max-file-size"], int)
                                   or doc["max-file-size"] <= 0):
        raise bad("max-file-size", "a positive integer (bytes)")
    if "respect-gitignore" in doc and not isinstance(doc["respect-gitignore"], bool):
        raise bad("respect-gitignore", "true or false")
    if "calibration" in doc and not isinstance(doc["calibration"], str):
        raise bad("calibration", "a path (string)")
    if "options" in doc and not isinstance(doc["options"], dict):
        raise bad("options", "a table, e.g. [tool.cudamigrate.options] stream = \"s\"")
    if "rule-options" in doc and not (isinstance(doc["rule-options"], dict)
                                      and all(isinstance(v, dict) for v in doc["rule-options"].values())):
        raise bad("rule-options", "a table of tables, e.g. [tool.cudamigrate.rule-options.CM101]")
    if "baseline" in doc and not (isinstance(doc["baseline"], str) and doc["baseline"].strip()):
        raise bad("baseline", 'a file name, e.g. baseline = "cudamigrate-baseline.json"')
    if "per-file-ignores" in doc:
        table = doc["per-file-ignores"]
        if not (isinstance(table, dict) and all(
                isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)) for v in table.values())):
            raise bad("per-file-ignores", 'a table of glob = [rule ids], e.g. per-file-ignores = {"tests/**" = ["CM101"]}')
        from .per_file import PerFileIgnoresError, check_glob

        for glob in table:
            try:
                check_glob(glob)
            except PerFileIgnoresError as exc:
                raise ConfigValueError(f"{path}: `per-file-ignores` {exc}") from None
        out["per-file-ignores"] = {g: [v] if isinstance(v, str) else list(v) for g, v in table.items()}
    return out
