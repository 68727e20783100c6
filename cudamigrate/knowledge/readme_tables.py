"""The vocabulary tables of `rules/README.md`, written from the registries' own docs.

Why: the README's lists of conditions and matchers were written by hand and fell behind the code (`preceded_by`,
`arg_type`, `semantic:` ... were missing). Each table sits between `<!-- BEGIN generated: NAME -->` and
`<!-- END generated: NAME -->`; `python scripts/gen_rules_doc.py` rewrites them, `--check` (and
tests/test_rules_doc.py) fails when the README and the registries disagree.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from ..findings import cost as costmod
from ..match import conditions as cond
from ..match import edits as editmod
from ..match.kinds import BUILTINS, MATCHER_KINDS
from ..match.semantic import SEMANTIC_TESTS
from ..core.registry import Registry

GENERATOR = "scripts/gen_rules_doc.py"


def _cell(text: str) -> str:
    """A markdown table cell: `|` escaped (also inside backticks, as GitHub needs), no line breaks."""
    return " ".join(text.split()).replace("|", "\\|")


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def _rows(reg: Registry[Any], key: Callable[[str], str] = lambda n: n) -> list[tuple[str, ...]]:
    return [(_code(key(e.name)), _code(e.schema.form), e.doc) for e in reg]


def tables() -> dict[str, str]:
    """Section name -> its markdown, in README order."""
    return {
        "matchers": _table(("matcher", "spec", "matches"),
                           [(_code(e.name), _code(e.schema.form), e.doc) for e in MATCHER_KINDS]),
        "builtins": _table(("builtin `name`", "spec", "matches"),
                           [(_code(e.name), _code(e.schema.form), e.doc) for e in sorted(BUILTINS, key=lambda e: e.name)]),
        "conditions": _table(("condition", "value", "holds when"), _rows(cond.CONDITIONS)),
        "argument-tests": _table(("with `arg:`", "value", "holds when"), _rows(cond.ARG_TESTS)),
        "semantic-tests": _table(("in `semantic:`", "value", "holds when"), _rows(SEMANTIC_TESTS)
                                 + [("`default`", "`true|false`", "answers a test libclang cannot (without it: "
                                     "true, or the spelling for the `arg_evaluates_*` tests).")]),
        "edit-operations": _table(("operation", "value", "does"), _rows(editmod.EDIT_OPS)
                                  + [(_code(k), _code(s.form), doc) for k, (s, doc) in editmod.EDIT_MODIFIERS.items()]),
        "edit-targets": _table(("target", "range"),
                               [(_code(e.name.replace("*", "NAME")), e.doc) for e in editmod.EDIT_TARGETS]),
        "cost": _table(("`cost:` key", "value", "meaning"), _rows(costmod.COST_KEYS)),
    }


_BLOCK = re.compile(r"(<!-- BEGIN generated: (?P<name>[\w-]+) .*?-->\n)(?P<body>.*?)(<!-- END generated: (?P=name) -->)",
                    re.S)


def update(text: str) -> tuple[str, list[str]]:
    """`text` with every generated block rewritten, and the names of the tables it lacks a block for."""
    want = tables()
    seen: set[str] = set()

    def sub(mo: re.Match[str]) -> str:
        name = mo.group("name")
        if name not in want:
            raise ValueError(f"rules/README.md: unknown generated block {name!r} (known: {', '.join(want)})")
        seen.add(name)
        return mo.group(1) + want[name] + "\n" + mo.group(4)

    out = _BLOCK.sub(sub, text)
    return out, [n for n in want if n not in seen]


def marker(name: str) -> str:
    return f"<!-- BEGIN generated: {name} (by {GENERATOR} from the registries; do not edit) -->"
