"""Tree walks that stand in for simple tree-sitter queries.

Compiling a query against the CUDA grammar costs 5-30 ms per query, once per process; a one-file run
(pre-commit) needed half a dozen of them, a third of its time. A `TreeCursor` walk in pre-order costs ~15 %
more than running the compiled query, nothing to compile: the queries of the form `(TYPE field: (CHILD) @c) @x`
that every scanned file meets are walked until a process has seen enough source for the compilation to pay.
`tests/test_speed_paths.py` checks that walk and query find what the former queries found, in the same order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import tree_sitter as ts

from .grammar import query


@dataclass(frozen=True)
class FieldPattern:
    """`(node_type field: (child_type) @child) @node`; child_type None is `(_)` (any named node)."""

    node_type: str
    field: str
    child_type: str | None = None
    tag: str = ""  # which pattern matched, for callers whose patterns differ in meaning


# Bytes of source a process walks for one pattern set before it compiles the query instead: a walk costs
# ~15 % more than running the compiled query, so compiling (5-30 ms) pays off after a few MB.
QUERY_AFTER_BYTES = 2_000_000
_walked: dict[tuple[FieldPattern, ...] | frozenset[str], int] = {}

# A file's tree is met by half a dozen pattern sets (declarations for shadows and streams, launches, templates,
# function definitions...), and each used to traverse the whole tree: ~3 traversals of every source byte on
# cuda-samples, 15-20 % of a scan. Instead the first set asked about a tree root builds an index of every
# (node type, field) any set has asked for so far, in one traversal, and each set reads its pairs from it.
# The traversal is a walk: one query of all 19 keys of a cuda-samples scan took as long (0.67 s against
# 0.64 s over its 790 files), its matches being Python objects too, and a query costs its compilation.
Key = tuple[str, str]  # (node type, field)
_KEYS: dict[Key, None] = {}  # every key asked for in this process, in first-asked order
_INDEXES: list[tuple[ts.Node, frozenset[Key], dict[Key, list[tuple[int, ts.Node, ts.Node]]]]] = []
_INDEXED_ROOTS = 4  # the roots indexed last (a file's tree, its macro bodies, a header): most recent first


def field_matches(root: ts.Node, patterns: tuple[FieldPattern, ...]) -> Iterator[tuple[FieldPattern, ts.Node, ts.Node]]:
    """(pattern, node, child) for every match of `patterns` under `root`, in the order a query's `matches`
    gives them. A tree's root is answered from its index (one traversal for every pattern set); a subtree is
    walked while the process has seen little source (a one-file run never compiles the query), queried once
    it has walked QUERY_AFTER_BYTES (a large tree); all give the same matches."""
    if root.parent is None:
        return _indexed_matches(root, patterns)
    walked = _walked.get(patterns, 0)
    if walked >= QUERY_AFTER_BYTES:
        return query_field_matches(root, patterns)
    _walked[patterns] = walked + root.end_byte - root.start_byte
    return walk_field_matches(root, patterns)


def _keys(patterns: tuple[FieldPattern, ...]) -> list[Key]:
    return list(dict.fromkeys((p.node_type, p.field) for p in patterns))


def _indexed_matches(root: ts.Node, patterns: tuple[FieldPattern, ...]) -> Iterator[tuple[FieldPattern, ts.Node, ts.Node]]:
    keys = _keys(patterns)
    return _matches_in(_index(root, keys), keys, patterns)


def _matches_in(index: dict[Key, list[tuple[int, ts.Node, ts.Node]]], keys: list[Key],
                patterns: tuple[FieldPattern, ...]) -> Iterator[tuple[FieldPattern, ts.Node, ts.Node]]:
    """The matches of `patterns` among an index's pairs, in the walk's order, then pattern order."""
    if len(keys) == 1:
        pairs: list[tuple[int, Key, ts.Node, ts.Node]] = [(seq, keys[0], x, c) for seq, x, c in index[keys[0]]]
    else:
        pairs = sorted((seq, k, x, c) for k in keys for seq, x, c in index[k])
    for _, (ptype, field), parent, child in pairs:
        ctype = child.type
        for p in patterns:
            if p.node_type == ptype and p.field == field and (p.child_type is None or ctype == p.child_type):
                yield p, parent, child


def _index(root: ts.Node, keys: list[Key]) -> dict[Key, list[tuple[int, ts.Node, ts.Node]]]:
    for k in keys:
        _KEYS.setdefault(k)
    for i, (r, covered, index) in enumerate(_INDEXES):
        if r == root:
            if covered.issuperset(keys):
                return index
            del _INDEXES[i]  # a set with a key not indexed yet: index again, for every key known now
            break
    every = list(_KEYS)
    index = _walk_index(root, every)
    _INDEXES.insert(0, (root, frozenset(every), index))
    del _INDEXES[_INDEXED_ROOTS:]
    return index


def _walk_index(root: ts.Node, keys: list[Key]) -> dict[Key, list[tuple[int, ts.Node, ts.Node]]]:
    """(order, node, child) of every named child in a field of `keys`, in pre-order of the children."""
    index: dict[Key, list[tuple[int, ts.Node, ts.Node]]] = {k: [] for k in keys}
    by_field: dict[str, frozenset[str]] = {}
    for t, f in keys:
        by_field[f] = by_field.get(f, frozenset()) | {t}
    seq = 0
    cur = root.walk()
    while True:
        f = cur.field_name
        if f is not None:
            types = by_field.get(f)
            if types is not None:
                child = cur.node
                if child is not None and child.is_named:
                    parent = child.parent
                    if parent is not None and parent.type in types:
                        index[(parent.type, f)].append((seq, parent, child))
                        seq += 1
        if cur.goto_first_child():
            continue
        while not cur.goto_next_sibling():
            if not cur.goto_parent():
                return index


def walk_field_matches(root: ts.Node, patterns: tuple[FieldPattern, ...]) -> Iterator[tuple[FieldPattern, ts.Node, ts.Node]]:
    """field_matches by a TreeCursor walk of `root` for these patterns alone. A query completes a match when it
    reaches the match's child, so matches come in the pre-order of the children (a declaration's second
    declarator after the parameters of its first), then in pattern order."""
    keys = _keys(patterns)
    return _matches_in(_walk_index(root, keys), keys, patterns)


def query_field_matches(root: ts.Node, patterns: tuple[FieldPattern, ...]) -> Iterator[tuple[FieldPattern, ts.Node, ts.Node]]:
    """field_matches by the query `(TYPE field: (CHILD) @c) @x ...`, compiled once per process."""
    q = query(" ".join(f"({p.node_type} {p.field}: ({p.child_type or '_'}) @c) @x" for p in patterns))
    for i, caps in ts.QueryCursor(q).matches(root):
        yield patterns[i], caps["x"][0], caps["c"][0]


def typed_nodes(root: ts.Node, types: frozenset[str]) -> list[ts.Node]:
    """The nodes of `types` under `root` (itself included) in document order (ancestors first): the captures
    of `(TYPE) @n ...` (whose own order is not the document's), walked or queried as field_matches is."""
    walked = _walked.get(types, 0)
    if walked >= QUERY_AFTER_BYTES:
        return query_typed_nodes(root, types)
    _walked[types] = walked + root.end_byte - root.start_byte
    return walk_typed_nodes(root, types)


def walk_typed_nodes(root: ts.Node, types: frozenset[str]) -> list[ts.Node]:
    out: list[ts.Node] = []
    cur = root.walk()
    while True:
        if cur.node.type in types:
            out.append(cur.node)
        if cur.goto_first_child():
            continue
        while not cur.goto_next_sibling():
            if not cur.goto_parent():
                return out


def captured(q: ts.Query, root: ts.Node, name: str) -> list[ts.Node]:
    """The nodes a query captures as `name` under `root`, in document order. A QueryCursor's captures are not
    always in that order (several patterns; trees with errors), and a matcher that stops at the first capture
    that decides something must see the same first capture whatever else the run holds (bench/fuzz.py found a
    manual reason that changed between a file scanned alone and in a batch)."""
    got = ts.QueryCursor(q).captures(root).get(name, [])
    return sorted(got, key=lambda n: (n.start_byte, -n.end_byte))


def query_typed_nodes(root: ts.Node, types: frozenset[str]) -> list[ts.Node]:
    """typed_nodes by a query; sorted, as a query's captures of several patterns are not in document order."""
    got = ts.QueryCursor(query(" ".join(f"({t}) @n" for t in sorted(types)))).captures(root).get("n", [])
    return sorted(got, key=lambda n: (n.start_byte, -n.end_byte))


def pair_matches(root: ts.Node, lasts: tuple[FieldPattern, ...], first_field: str, first_type: str | None = None
                 ) -> list[tuple[ts.Node, ts.Node, ts.Node]]:
    """(node, first, last) for `(TYPE first_field: (FIRST) @f last_field: (LAST) @l) @x ...` (one pattern per
    entry of `lasts`, which gives TYPE, last_field and LAST), in that query's order (a match completes at its
    last child)."""
    out = []
    for _, node, lc in field_matches(root, lasts):
        kids = node.children
        k = next(i for i, c in enumerate(kids) if c == lc)
        for i in range(k):
            c = kids[i]
            if c.is_named and node.field_name_for_child(i) == first_field and (first_type is None or c.type == first_type):
                out.append((node, c, lc))
    return out


def leaves_named(root: ts.Node, names: Iterable[str]) -> list[ts.Node]:
    """The leaves under `root` whose text is one of `names`, in document order: every occurrence of a name in
    the text (overlapping ones too) whose bytes are exactly one leaf's (`descendant_for_byte_range`)."""
    text = root.text or b""
    base = root.start_byte
    spots = set()
    for w in {n.encode() for n in names if n}:
        i = text.find(w)
        while i >= 0:
            spots.add((base + i, base + i + len(w)))
            i = text.find(w, i + 1)
    out = []
    for start, end in sorted(spots):
        node = root.descendant_for_byte_range(start, end)
        if node is not None and node.start_byte == start and node.end_byte == end and not node.child_count:
            out.append(node)
    return out


def identifiers_starting(root: ts.Node, prefixes: Iterable[str]) -> list[ts.Node]:
    """The `identifier` nodes under `root` whose text starts with one of `prefixes`, in document order: what
    `((identifier) @id (#match? @id "^(p1|p2)"))` captures, found where the prefixes occur in the text (the node
    starting exactly there, `descendant_for_byte_range`) instead of by that query, which costs 10-20 ms to
    compile against the CUDA grammar in every process that meets an NPP name (each worker of a parallel run)."""
    text = root.text or b""
    base = root.start_byte
    spots: set[tuple[int, int]] = set()
    for w in {p.encode() for p in prefixes if p}:
        i = text.find(w)
        while i >= 0:
            spots.add((base + i, base + i + len(w)))
            i = text.find(w, i + 1)
    out: list[ts.Node] = []
    last = -1
    for start, end in sorted(spots):
        node = root.descendant_for_byte_range(start, end)
        if node is not None and node.start_byte == start and node.type == "identifier" and start != last:
            out.append(node)
            last = start  # two prefixes of one identifier ("npp", "nppi"): the node once
    return out


# Limits of `holders`: past them a caller indexes the whole tree instead (the same answer, at a known cost)
HOLDERS_MAX_LEAVES = 64  # occurrences of the name
HOLDERS_MAX_DEPTH = 256  # ancestors climbed from one occurrence (`Node.parent` costs the depth itself)


def holders(root: ts.Node, name: str, types: frozenset[str]) -> list[ts.Node] | None:
    """The nodes of `types` under `root` (itself included) that hold a leaf spelled `name`, each once: the only
    nodes whose declarations, calls... can be keyed by that name, so a lookup of one name need not index the
    whole tree (the editor re-scans the file at every keystroke). None past HOLDERS_MAX_LEAVES occurrences or
    HOLDERS_MAX_DEPTH ancestors of one: the caller then indexes the whole tree."""
    leaves = leaves_named(root, [name])
    if len(leaves) > HOLDERS_MAX_LEAVES:
        return None
    out: dict[int, ts.Node] = {}
    for leaf in leaves:
        node: ts.Node | None = leaf
        for _ in range(HOLDERS_MAX_DEPTH):
            if node is None:
                break
            if node.type in types:
                out.setdefault(node.id, node)
            if node == root:
                break
            node = node.parent
        else:
            return None
    return list(out.values())


def named_pair_matches(root: ts.Node, lasts: tuple[FieldPattern, ...], first_field: str, names: Iterable[str]
                       ) -> list[tuple[ts.Node, ts.Node, ts.Node]]:
    """pair_matches(root, lasts, first_field) whose last child's text is one of `names`, in the same order,
    found from where the names occur in the text, not by a walk of the tree. A builtin that looks for a few
    field names (`prop.clockRate`) read the whole tree's field index at every scan - the language server's
    warm re-scan of a 1,700-line file spent most of its time there - though the names occur a handful of
    times. Each occurrence is the node exactly at its bytes (`descendant_for_byte_range`), kept when it is a
    `last` child of its parent in the pattern's field; those children are leaves, so their document order is
    the walk's pre-order. For patterns whose last child has no text of its own (a subtree) use pair_matches."""
    out = []
    for node in leaves_named(root, names):
        if not node.is_named:
            continue
        parent = node.parent
        if parent is None:
            continue
        kids = parent.children
        k = next((i for i, c in enumerate(kids) if c == node), None)
        if k is None or not any(p.node_type == parent.type and parent.field_name_for_child(k) == p.field
                                and (p.child_type is None or node.type == p.child_type) for p in lasts):
            continue
        for i in range(k):
            c = kids[i]
            if c.is_named and parent.field_name_for_child(i) == first_field:
                out.append((parent, c, node))
    return out


_LAUNCH_ARGS = (FieldPattern("call_expression", "arguments", "argument_list"),)


def kernel_launches(root: ts.Node) -> list[tuple[ts.Node, ts.Node, ts.Node, ts.Node]]:
    """(call, callee, `<<<...>>>` config, argument list) of every kernel launch, in the former query's order:
    `(call_expression function: (_) @fn (kernel_call_syntax) @cfg arguments: (argument_list) @args) @launch`."""
    return [(call, fn, cfg, args) for call, fn, args in pair_matches(root, _LAUNCH_ARGS, "function")
            for cfg in call.children
            if cfg.type == "kernel_call_syntax" and fn.end_byte <= cfg.start_byte and cfg.end_byte <= args.start_byte]
