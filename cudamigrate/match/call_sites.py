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


def called_once_from_main(function: ts.Node | None, root: ts.Node) -> bool:
    if function is None:
        return False
    name = _name_of(function)
    if not name or name == "main":
        return False
    uses: list[ts.Node] = []
    has_main = False
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "function_definition" and _name_of(n) == "main":
            has_main = True
        if n.type == "identifier" and n.text is not None and n.text.decode("utf-8", "replace") == name:
            p = parent_of(n)
            if p is not None and p.type == "function_declarator":
                pass  # the definition or a prototype
            else:
                uses.append(n)
        stack.extend(n.children)
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
