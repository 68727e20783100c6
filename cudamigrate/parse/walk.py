"""Tree walks that stand in for simple tree-sitter queries.

Compiling a query against the CUDA grammar costs 5-30 ms per query, once per process; a one-file run
(pre-commit) needs half a dozen of them, about a third of its time. A `TreeCursor` walk in pre-order visits
a node in well under a microsecond, as fast as running the compiled query on a large file, so the queries
of the form `(TYPE field: (CHILD) @c) @x` that every scanned file meets are walks instead.
`tests/test_speed_paths.py` checks that each walk finds what its former query found, in the same order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import tree_sitter as ts


@dataclass(frozen=True)
class FieldPattern:
    """`(node_type field: (child_type) @child) @node`; child_type None is `(_)` (any named node)."""

    node_type: str
    field: str
    child_type: str | None = None
    tag: str = ""  # which pattern matched, for callers whose patterns differ in meaning


def field_matches(root: ts.Node, patterns: tuple[FieldPattern, ...]) -> Iterator[tuple[FieldPattern, ts.Node, ts.Node]]:
    """(pattern, node, child) for every match of `patterns` under `root`, in the order a query's `matches`
    gives them: a match is complete when the query reaches its child, so in the pre-order of the children
    (a declaration's second declarator comes after the parameters of its first), then in pattern order."""
    fields = frozenset(p.field for p in patterns)
    cur = root.walk()
    parents: list[ts.Node] = []
    while True:
        if parents and cur.field_name in fields:
            child = cur.node
            if child is not None and child.is_named:
                parent = parents[-1]
                for p in patterns:
                    if p.node_type == parent.type and p.field == cur.field_name and \
                            (p.child_type is None or child.type == p.child_type):
                        yield p, parent, child
        node = cur.node
        if cur.goto_first_child():
            parents.append(node)  # type: ignore[arg-type]
            continue
        while not cur.goto_next_sibling():
            if not cur.goto_parent():
                return
            parents.pop()


_LAUNCH_ARGS = (FieldPattern("call_expression", "arguments", "argument_list"),)


def kernel_launches(root: ts.Node) -> list[tuple[ts.Node, ts.Node, ts.Node, ts.Node]]:
    """(call, callee, `<<<...>>>` config, argument list) of every kernel launch, in the former query's order:
    `(call_expression function: (_) @fn (kernel_call_syntax) @cfg arguments: (argument_list) @args) @launch`."""
    out = []
    for _, call, args in field_matches(root, _LAUNCH_ARGS):
        kids = call.children
        k = next(i for i, c in enumerate(kids) if c == args)
        for i in range(k):
            fn = kids[i]
            if not fn.is_named or call.field_name_for_child(i) != "function":
                continue
            for cfg in kids[i + 1:k]:
                if cfg.type == "kernel_call_syntax":
                    out.append((call, fn, cfg, args))
    return out
