"""Configuration entries that parse but cannot be used are errors (exit 2, one line naming file and key).

Why: a `rules-dirs` entry that does not exist silently ran without the team's rules; `rules-dirs = ["/"]`
walked the whole filesystem and one outside the project pulled in rules nobody reviewed with it (a directory
given on the command line with `--rules-dir` is the user's explicit choice and stays allowed); rule options
for an unknown rule id did nothing, and an option value of the wrong type was pasted into code (`stream = 5`
became `cudaMemcpyAsync(..., 5)`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .textsafe import printable


class ConfigUseError(Exception):
    pass


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def check_rules_dirs(cfg_path: Path, entries: list[str]) -> list[Path]:
    """The configured rule directories, each an existing directory inside the project (the configuration
    file's directory, links resolved)."""
    base = cfg_path.parent
    root = os.path.realpath(base)
    out = []
    for d in entries:
        p = base / d
        real = os.path.realpath(p)
        where = f"{printable(str(cfg_path))}: `rules-dirs` entry {printable(repr(d))}"
        if not os.path.isdir(real):
            raise ConfigUseError(f"{where} is not an existing directory")
        if not _inside(real, root):
            raise ConfigUseError(f"{where} lies outside the project ({printable(root)}); "
                                 f"give it on the command line with --rules-dir to use it")
        out.append(p)
    return out


def _type_name(v: Any) -> str:
    return {str: "a string", bool: "true or false", int: "a number", float: "a number", list: "a list",
            dict: "a table"}.get(type(v), type(v).__name__)


def check_rule_options(where: str, rule_options: dict[str, dict[str, Any]], options: dict[str, Any],
                       rules: list[Any]) -> list[str]:
    """One line per unusable option: a rule id no loaded rule has, an option the rule does not declare, or a
    value whose type differs from the rule's default (a string default takes only a string: it is code)."""
    by_id = {r.id: r for r in rules}
    bad = []
    for rid, table in rule_options.items():
        rule = by_id.get(rid)
        if rule is None:
            bad.append(f"{where}: `rule-options.{printable(str(rid))}`: no loaded rule has this id")
            continue
        declared = getattr(rule, "options", None) or {}
        for k, v in table.items():
            if k not in declared:
                known = ", ".join(sorted(declared)) or "none"
                bad.append(f"{where}: `rule-options.{rid}.{printable(str(k))}`: {rid} has no such option (options: {known})")
            elif not _same_type(declared[k], v):
                bad.append(f"{where}: `rule-options.{rid}.{k}` must be {_type_name(declared[k])} like its default "
                           f"{declared[k]!r}, got {v!r}")
    for k, v in options.items():
        defaults = [r.options[k] for r in rules if isinstance(getattr(r, "options", None), dict) and k in r.options]
        if defaults and not any(_same_type(d, v) for d in defaults):
            bad.append(f"{where}: `options.{printable(str(k))}` must be {_type_name(defaults[0])} like the rules' "
                       f"default {defaults[0]!r}, got {v!r}")
    return bad


def _same_type(default: Any, v: Any) -> bool:
    if isinstance(default, bool) or isinstance(v, bool):
        return isinstance(default, bool) and isinstance(v, bool)
    if isinstance(default, (int, float)) and isinstance(v, (int, float)):
        return True
    return isinstance(v, type(default))
