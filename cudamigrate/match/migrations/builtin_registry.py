"""What every builtin matcher (`match: {builtin: {name: ...}}`) shares: its function type and spec schema.

Each module that defines builtins (builtins.py, texture.py, npp.py, inline_ptx.py, unused_suppressions.py) keeps a
`BUILTINS` registry of its own, filled by `@BUILTINS.register(name, builtin_schema(...))` above each function;
`match/kinds.py` joins them by name. Nothing registers by being imported, and none of these modules imports
another: they all depend only on this one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ...core.registry import Schema, mapping, string, string_list

if TYPE_CHECKING:
    from ...rules.schema import Rule
    from ..context import FileContext
    from ..matchers import Match

BuiltinFn = Callable[["Rule", "FileContext", dict[str, Any]], list["Match"]]


def builtin_schema(**extra: Schema) -> Schema:
    """`match: {builtin: {name: ..., keywords: [...], <the builtin's own keys>}}`."""
    return mapping({"name": string("NAME"), "keywords": string_list(nonempty=False), **extra}, required=("name",),
                   form="{name: NAME, keywords: [...]" + "".join(f", {k}: {v.form}" for k, v in extra.items()) + "}")
