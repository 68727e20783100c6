"""A removed `cudaDeviceProp` capability flag read only to print it or to test it (CM503's guard form): the
statement is kept for the toolkits that still have the field, inside `#if CUDART_VERSION < 13000`, or removed
where the flag is always false from 13.0 on. Split from deviceprop.py, which finds the receivers and hoists the
reads that keep a meaning; this module decides what a read that lost its meaning becomes.
"""

from __future__ import annotations

import tree_sitter as ts

from ...findings.model import Edit
from ...parse.treesitter import Unit
from ...read.generated import OWN_GUARD
from ..context import FileContext, named_children, node_text, normalize_name

PRINTS = frozenset({"printf", "std::printf", "fprintf", "std::fprintf", "puts", "std::puts", "fputs", "std::fputs"})
STREAMS = frozenset({"std::cout", "cout", "std::cerr", "cerr", "std::clog", "clog"})
PRINT_LEAVES = frozenset({"string_literal", "concatenated_string", "char_literal", "number_literal", "true", "false",
                          "raw_string_literal", "escape_sequence", "string_content", "comment"})


def _leaves_other_than(node: ts.Node, reads: list[ts.Node]) -> list[ts.Node]:
    """Named leaves of `node` outside the field reads `reads` that are not literals: what else it evaluates."""
    out: list[ts.Node] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if any(r.start_byte <= n.start_byte and n.end_byte <= r.end_byte for r in reads):
            continue
        if n.type in PRINT_LEAVES:
            continue
        kids = [c for c in n.children if c.is_named]
        if not kids:
            if n.is_named:
                out.append(n)
            continue
        stack.extend(kids)
    return out


def _only_prints(stmt: ts.Node, reads: list[ts.Node]) -> bool:
    """An expression statement that only prints literals and the flag (`printf("%s", p.flag ? "Yes" : "No");`)."""
    if stmt.type != "expression_statement" or not named_children(stmt):
        return False
    expr = named_children(stmt)[0]
    if expr.type == "call_expression":
        fn = normalize_name(node_text(expr.child_by_field_name("function")))
        args = named_children(expr.child_by_field_name("arguments"))
        if fn not in PRINTS:
            return False
        if fn in ("fprintf", "std::fprintf", "fputs", "std::fputs"):
            stream = args[0] if fn.endswith("printf") and args else (args[-1] if args else None)
            if stream is None or normalize_name(node_text(stream)) not in ("stdout", "stderr"):
                return False
            args = [a for a in args if a.id != stream.id]
        return all(not _leaves_other_than(a, reads) for a in args)
    if expr.type == "binary_expression":
        parts: list[ts.Node] = []
        cur = expr
        while cur.type == "binary_expression" and node_text(cur.child_by_field_name("operator")) == "<<":
            parts.append(cur.child_by_field_name("right"))
            cur = cur.child_by_field_name("left")
        if normalize_name(node_text(cur)) not in STREAMS:
            return False
        return all(normalize_name(node_text(p)) in ("std::endl", "endl") or not _leaves_other_than(p, reads)
                   for p in parts)
    return False


def _requires_flag(cond: ts.Node, reads: list[ts.Node]) -> bool:
    """A condition that can hold only when the flag is nonzero: the flag itself, `flag != 0`, `flag == 1`, or
    `flag && x` / `x && flag` with `x` free of calls and assignments."""
    while cond.type in ("parenthesized_expression", "condition_clause") and len(named_children(cond)) == 1:
        cond = named_children(cond)[0]
    if any(r.id == cond.id for r in reads):
        return True
    if cond.type != "binary_expression":
        return False
    op = node_text(cond.child_by_field_name("operator"))
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    if op in ("!=", "==") and left is not None and right is not None:
        want = {"!=": "0", "==": "1"}[op]
        for a, b in ((left, right), (right, left)):
            if node_text(b).strip() == want and _requires_flag(a, reads):
                return True
        return False
    if op == "&&" and left is not None and right is not None:
        for a, b in ((left, right), (right, left)):
            if _requires_flag(a, reads) and not any(
                    n.type in ("call_expression", "assignment_expression", "update_expression")
                    for n in walk_named(b)):
                return True
    return False


def walk_named(node: ts.Node) -> list[ts.Node]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(c for c in n.children if c.is_named)
    return out


def _capability_form(stmt: ts.Node, field: str, fe: ts.Node | None = None) -> tuple[str, str]:
    """(`print` | `if`, "") when the statement can be compiled out whole, else ("", why not)."""
    reads = [n for n in walk_named(stmt) if n.type == "field_expression"
             and node_text(n.child_by_field_name("field") or n) == field]
    if not reads:
        return "", "it does not read the flag"
    if stmt.type == "if_statement":
        cond = stmt.child_by_field_name("condition")
        at = fe if fe is not None else reads[0]
        if cond is None or not (cond.start_byte <= at.start_byte < cond.end_byte):
            return "", "it is read in a statement the fix cannot drop whole"
        if stmt.child_by_field_name("alternative") is not None:
            return "", "the `if` that tests it has an `else`"
        if not _requires_flag(cond, [r for r in reads if cond.start_byte <= r.start_byte < cond.end_byte]):
            return "", "the `if` that tests it could also hold without it"
        return "if", ""
    if _only_prints(stmt, reads):
        return "print", ""
    if stmt.type == "declaration":
        return "", "it is stored in a variable"
    return "", "it is read in a statement that does more than print it or test it"


def _own_lines(data: bytes, s: int, e: int) -> tuple[int, int] | None:
    """The line range of bytes s..e when nothing but blanks (and a trailing `//` comment) shares those lines."""
    ls = data.rfind(b"\n", 0, s) + 1
    le = data.find(b"\n", e)
    le = len(data) if le == -1 else le + 1
    tail = data[e:le].strip()
    if data[ls:s].strip() or (tail and not tail.startswith(b"//")):
        return None
    return ls, le


def removed_capability_edits(ctx: FileContext, unit: Unit, fe: ts.Node, field: str, guard: str,
                             remove: bool) -> tuple[list[Edit], str, str]:
    """Code that stops reading a capability flag whose feature the toolkit removed, as a reviewer writes it.

    The statement that reads the flag is either a print whose only other content is literals (NVIDIA's v13.0
    deviceQuery), or an `if` without `else` whose condition needs the flag set (its body uses the removed
    feature): it is wrapped in `#if GUARD` ... `#endif` so that older toolkits still compile it, or deleted
    when the project's declared minimum toolkit (`keep-compat`) already lacks the feature (`remove`).
    Neighbouring statements of the same kind share one guard (each read computes the same run, so the edit is
    the same and applied once). Returns (edits, form, why not): form is `print` or `if`."""
    if unit.in_macro:
        return [], "", "it is read in a macro definition"
    stmt: ts.Node | None = fe
    while stmt is not None and not (stmt.type.endswith("_statement") or stmt.type == "declaration"):
        stmt = stmt.parent
    if stmt is None:
        return [], "", "it is not read in a statement"
    form, why = _capability_form(stmt, field, fe)
    if not form:
        return [], "", why
    if stmt.parent is None or stmt.parent.type not in ("compound_statement", "case_statement"):
        return [], "", "the statement is the body of a branch or loop without braces"
    data = ctx.source.data
    if _own_lines(data, *unit.abs(stmt)) is None:
        return [], "", "the statement shares its lines with other code"
    # the run of neighbouring statements that are compiled out the same way (comments between them included)
    sibs = [c for c in stmt.parent.children if c.is_named]
    i = next(k for k, c in enumerate(sibs) if c.id == stmt.id)
    lo = hi = i

    def joins(c: ts.Node) -> bool:
        return bool(_capability_form(c, field)[0]) and _own_lines(data, *unit.abs(c)) is not None

    k = i - 1
    while k >= 0 and (sibs[k].type == "comment" or joins(sibs[k])):
        if sibs[k].type != "comment":
            lo = k
        k -= 1
    k = i + 1
    while k < len(sibs) and (sibs[k].type == "comment" or joins(sibs[k])):
        if sibs[k].type != "comment":
            hi = k
        k += 1
    first = _own_lines(data, *unit.abs(sibs[lo]))
    last = _own_lines(data, *unit.abs(sibs[hi]))
    assert first is not None and last is not None
    ls, le = first[0], last[1]
    if remove:
        return [Edit(ls, le, "")], form, ""
    nl = ctx.source.newline.decode()
    old = data[ls:le].decode("utf-8", "surrogateescape")
    if not old.endswith(("\n", "\r")):
        old += nl
    return [Edit(ls, le, f"#if {guard}  {OWN_GUARD}{nl}{old}#endif{nl}")], form, ""
