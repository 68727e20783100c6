"""`called_once_from_main`: the function around the match runs once per program run.

Why: a per-call cost (CM214: a cuBLAS handle created and destroyed by the function that uses it) only matters when
the function is called repeatedly. In a program whose `main` (in the same file) calls the function exactly once,
outside any loop, and nothing else in the file calls it, the cost is paid once; the team's best CUDA engineer
would not restructure it (cuda-samples' matrixMulCUBLAS and cuSolverDn_LinearSolver).

Syntactic and conservative: the file must define `main`; a function that is never called in the file, called
twice, called in a loop, through a pointer, or from another function, is not "called once".
"""

from __future__ import annotations

import tree_sitter as ts

from ..parse.treesitter import parent_of

LOOPS = {"for_statement", "for_range_loop", "while_statement", "do_statement"}


def _name_of(function: ts.Node) -> str:
    d = function.child_by_field_name("declarator")
    while d is not None and d.type not in ("identifier", "field_identifier", "qualified_identifier"):
        d = d.child_by_field_name("declarator")
    return d.text.decode("utf-8", "replace") if d is not None and d.text is not None else ""


def use_index(root: ts.Node) -> tuple[bool, dict[str, list[ts.Node]]]:
    """(the tree defines `main`, identifier -> its uses that are not a declarator of a function): one walk
    per tree, shared by every match (a walk per match made 1,000 matches in a 100 KB file cost 7 s)."""
    uses: dict[str, list[ts.Node]] = {}
    has_main = False
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "function_definition" and _name_of(n) == "main":
            has_main = True
        if n.type == "identifier" and n.text is not None:
            p = parent_of(n)
            if p is None or p.type != "function_declarator":  # not the definition or a prototype
                uses.setdefault(n.text.decode("utf-8", "replace"), []).append(n)
        stack.extend(n.children)
    return has_main, uses


def called_once_from_main(function: ts.Node | None, root: ts.Node,
                          index: tuple[bool, dict[str, list[ts.Node]]] | None = None) -> bool:
    """See the module docstring; `index`: `use_index(root)`, when the caller keeps it for the file."""
    if function is None:
        return False
    name = _name_of(function)
    if not name or name == "main":
        return False
    has_main, by_name = index if index is not None else use_index(root)
    uses = by_name.get(name, [])
    if not has_main or len(uses) != 1:
        return False
    call = parent_of(uses[0])
    if call is None or call.type != "call_expression" or call.child_by_field_name("function") != uses[0]:
        return False  # taken as a pointer, or another use
    p = parent_of(call)
    while p is not None:
        if p.type in LOOPS or p.type == "lambda_expression":
            return False
        if p.type == "function_definition":
            return _name_of(p) == "main"
        p = parent_of(p)
    return False
