"""Semantic mode: uses of declarations that the headers themselves mark deprecated or unavailable.

The toolkit's and the libraries' headers say more than any rule catalog: `__CUDA_DEPRECATED`,
`CUSPARSE_DEPRECATED(...)`, `CUSOLVER_DEPRECATED(cuDSS)`, `[[deprecated("...")]]` in CCCL, and
`__attribute__((unavailable))`. libclang resolves each reference in project code to its declaration and
reports the declaration's availability (clang_getCursorAvailability) and the attribute's message
(clang_getCursorPlatformAvailability); `parse/clang_facts.py` keeps them as `FileFacts.deprecated`. This
builtin turns each into a finding that quotes the attribute's message and cites the declaring header and line.

It is the net under the catalog, not a replacement: a name that a rule of this run already knows
(`ctx.api_names`, the keywords of the selected rules found in the file) is that rule's to report, with its
fix and its cost. Tree-sitter mode has no such facts, so the rule never runs there (its keyword,
`DEPRECATED_KEYWORD`, is in no source text; `FileFacts.keywords()` adds it when there is something to report).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ...core.registry import Registry
from ...rules.schema import Rule
from .builtin_registry import BuiltinFn, builtin_schema
from ..context import FileContext
from ..matchers import Match, smallest_nodes

if TYPE_CHECKING:  # semantic mode's facts: a tree-sitter scan never loads their module
    from ...parse.clang_facts import DeprecatedUse

BUILTINS: Registry[BuiltinFn] = Registry("builtin matcher")  # joined with the others in match/kinds.py
BUILTIN = "header_deprecated_declaration"
__all__ = ["BUILTINS", "BUILTIN", "header_citation"]


def header_citation(path: str, line: int) -> str:
    """`cuda_runtime_api.h:7584`, `cusparse.h:...`, `cuda/std/__functional/...:N`: the path below the last
    `include/` directory (how the code includes it), else the file name; never a machine's absolute prefix."""
    norm = path.replace(os.sep, "/")
    i = norm.rfind("/include/")
    short = norm[i + len("/include/"):] if i >= 0 else os.path.basename(norm)
    return f"{short}:{line}"


@BUILTINS.register(BUILTIN, builtin_schema(), doc=(
    "semantic mode only: each reference in project code to a declaration whose header marks it deprecated or "
    "unavailable (libclang's availability), unless a rule of this run matches that name; vars: `kind` "
    "(deprecated|unavailable), `attr_message` (the attribute's text, may be empty), `header` (`file.h:LINE`), "
    "`qualified` (the declaration's qualified name)."))
def header_deprecated_declaration(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    sem = ctx.semantic
    facts = getattr(sem, "facts", None)
    if facts is None or not getattr(facts, "deprecated", None):
        return []
    from ...parse.clang_facts import DEPRECATED_KEYWORD  # here: only semantic mode has facts

    known = ctx.api_names - {DEPRECATED_KEYWORD}
    unit = ctx.main
    root = unit.root
    out: list[Match] = []
    uses = [(off, use) for off, use in sorted(facts.deprecated.items())
            if use.name.split("::")[-1] not in known and use.name not in known  # a rule of this run reports it
            and off < use.end <= len(ctx.source.data)]
    for (off, use), node in zip(uses, smallest_nodes(root, [(off, use.end) for off, use in uses]), strict=True):
        out.append(_match(rule, unit, node, off, use))
    return out


def _match(rule: Rule, unit, node, off: int, use: DeprecatedUse) -> Match:
    m = Match(rule=rule, unit=unit, node=node, name=use.name.split("::")[-1], written=use.name,
              range=(off, use.end), name_range=(off, use.end), ident_range=(off, use.end))
    m.vars.update(kind=use.kind, attr_message=use.message, header=header_citation(use.header, use.line),
                  qualified=use.name)
    return m
