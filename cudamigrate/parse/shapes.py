"""Where a node sits in its tree: the statement around it, the case label it is.

Shared by match/conditions.py (a condition on the statement or the case) and match/edits.py (edits of the
statement or the case); here, below both, so that neither imports the other for them.
"""

from __future__ import annotations

import tree_sitter as ts

from .treesitter import parent_of

STATEMENT_STOP = {"compound_statement", "translation_unit", "declaration_list", "field_declaration_list",
                  "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "case_statement"}


def statement_of(node: ts.Node) -> ts.Node:
    cur = node
    while parent_of(cur) is not None and parent_of(cur).type not in STATEMENT_STOP:
        cur = parent_of(cur)
    return cur


def case_of(node: ts.Node) -> ts.Node | None:
    """The case_statement whose label value is `node` (through parentheses and `::` qualification)."""
    cur = node
    while parent_of(cur) is not None and parent_of(cur).type in ("parenthesized_expression", "qualified_identifier"):
        cur = parent_of(cur)
    p = parent_of(cur)
    if p is not None and p.type == "case_statement":
        v = p.child_by_field_name("value")
        if v is not None and v.start_byte == cur.start_byte and v.end_byte == cur.end_byte:
            return p
    return None
