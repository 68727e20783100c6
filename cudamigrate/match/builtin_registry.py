"""The table of builtin matchers (`match: {builtin: {name: ...}}`): name -> function.

Its own module so that the modules defining builtins (builtins.py, texture.py, npp.py, inline_ptx.py,
unused_suppressions.py) register into it without importing one another; `match/builtins.py` imports them all,
so importing it is what makes every builtin available to `run`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..rules.schema import Rule
    from .context import FileContext
    from .matchers import Match

REGISTRY: dict[str, Callable[["Rule", "FileContext", dict[str, Any]], list["Match"]]] = {}


def builtin(name: str):
    def deco(fn):
        REGISTRY[name] = fn
        return fn

    return deco


def run(rule: "Rule", ctx: "FileContext", options: dict[str, Any]) -> list["Match"]:
    name = rule.spec["name"]
    if name not in REGISTRY:
        raise KeyError(f"unknown builtin matcher {name!r}")
    return REGISTRY[name](rule, ctx, options)
