"""tree-sitter front end.

One grammar (tree-sitter-cuda, a superset of tree-sitter-cpp) parses every
C, C++ and CUDA file: host `.cpp` files call the runtime too, and the CUDA
grammar handles `<<<...>>>`, `__global__` and friends without ERROR nodes.

Macro bodies are opaque `preproc_arg` text in the main tree, yet legacy code
hides API calls in them (`#define SYNC() cudaThreadSynchronize()`). We parse
each interesting body again as a tiny function and remember its byte offset,
so every node maps back to absolute offsets in the original file.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter as ts

# the grammar's two entry points, reached through this module by most callers
from .grammar import language as language, query as query
from .walk import FieldPattern, pair_matches

MACRO_WRAP_PREFIX = b"void __cudamigrate_macro__(){\n"
MACRO_WRAP_SUFFIX = b"\n;}\n"


@lru_cache(maxsize=1)
def _parser() -> ts.Parser:
    return ts.Parser(language())


@dataclass(frozen=True)
class Paste:
    """Where a pasted unit's view comes from (parse/pasting.py): the use of macro `macro` that pastes `prefix`
    onto the argument at `arg` (absolute offsets); `site` is the whole use."""

    macro: str
    prefix: bytes
    arg: tuple[int, int]
    site: tuple[int, int]
    blocked: str | None = None  # why rewriting the argument is not what the expansion needs


@dataclass
class Unit:
    """A parsed buffer: the whole file (base 0), a macro body (base = its offset), or the expression a
    token-pasting macro's use expands to (`paste`; its argument's bytes keep their offsets)."""

    tree: ts.Tree
    base: int  # absolute offset = node.start_byte + base
    in_macro: bool = False
    macro_name: str | None = None
    paste: Paste | None = None

    @property
    def root(self) -> ts.Node:
        return self.tree.root_node

    def abs(self, node: ts.Node) -> tuple[int, int]:
        return node.start_byte + self.base, node.end_byte + self.base


def parse(data: bytes) -> ts.Tree:
    return _parser().parse(data)


# The trees of the project headers read lately (least recently used last), keyed by their bytes: the analyses
# that look into included headers (texture references, shadowing declarations, stream facts) each parsed the
# same helper header again. Bounded by source bytes, not count: a tree takes many times its source in memory.
_HEADER_TREES: dict[bytes, ts.Tree] = {}
_header_bytes = 0  # the source bytes of the trees kept
HEADER_TREES_MAX_BYTES = 2_000_000


def parse_header(data: bytes) -> ts.Tree:
    """`parse(data)` shared with the other analyses that read the same header in this process. The tree must
    not be edited."""
    global _header_bytes
    tree = _HEADER_TREES.pop(data, None)
    if tree is None:
        tree = parse(data)
        _header_bytes += len(data)
    _HEADER_TREES[data] = tree  # most recent last
    while _header_bytes > HEADER_TREES_MAX_BYTES and len(_HEADER_TREES) > 1:
        oldest = next(iter(_HEADER_TREES))
        _header_bytes -= len(oldest)
        del _HEADER_TREES[oldest]
    return tree


def count_errors(tree: ts.Tree) -> int:
    """Number of ERROR/MISSING nodes: used to refuse fixes that break syntax."""
    q = query("(ERROR) @e")
    n = len(ts.QueryCursor(q).captures(tree.root_node).get("e", []))
    # MISSING nodes are not queryable by type; walk only when the tree says it has errors.
    if tree.root_node.has_error:
        stack = [tree.root_node]
        while stack:
            node = stack.pop()
            if node.is_missing:
                n += 1
            if node.has_error:
                stack.extend(node.children)
    return n


_CONT = re.compile(rb"\\\r?\n")


MACRO_BODIES = tuple(FieldPattern(t, "value", "preproc_arg") for t in ("preproc_def", "preproc_function_def"))


def macro_units(tree: ts.Tree, data: bytes, keywords: re.Pattern[bytes] | None) -> list[Unit]:
    """Parse `#define` bodies that mention a keyword, each as the body of a function."""
    units: list[Unit] = []
    # `(preproc_def name: (_) @name value: (preproc_arg) @body) (preproc_function_def ...)`, walked
    for _, name_node, body in pair_matches(tree.root_node, MACRO_BODIES, "name"):
        text = data[body.start_byte : body.end_byte]
        if keywords is not None and not keywords.search(text):
            continue
        # Keep offsets: a line continuation becomes spaces and a newline of the same length.
        text = _CONT.sub(lambda m: b" " * (len(m.group(0)) - 1) + b"\n", text)
        buf = MACRO_WRAP_PREFIX + text + MACRO_WRAP_SUFFIX
        sub = parse(buf)
        name = name_node.text.decode("utf-8", "replace")
        units.append(Unit(tree=sub, base=body.start_byte - len(MACRO_WRAP_PREFIX), in_macro=True, macro_name=name))
    return units


def error_nodes(tree: ts.Tree) -> list[tuple[str, int, int]]:
    """(kind, start, end) of every ERROR node and MISSING node, in document order (walks only the subtrees
    that the tree marks as holding errors)."""
    out: list[tuple[str, int, int]] = []
    root = tree.root_node
    if not root.has_error:
        return out
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_missing:
            out.append(("MISSING " + node.type, node.start_byte, node.end_byte))
        elif node.type == "ERROR":
            out.append(("ERROR", node.start_byte, node.end_byte))
        if node.has_error:
            stack.extend(reversed(node.children))
    return out


@dataclass
class ErrorSpans:
    """Where a file has syntax errors, as sorted disjoint closed intervals of absolute offsets.

    A fix that touches such a span edits code the parser did not understand (`cub::WARP_ANY(v t(f());=a;`):
    its match and argument boundaries are guesses, so the fix is not offered."""

    starts: list[int]
    ends: list[int]

    @classmethod
    def of_units(cls, units: list[Unit]) -> "ErrorSpans":
        raw: list[tuple[int, int]] = []
        for u in units:
            if not u.tree.root_node.has_error:
                continue
            lo, hi = u.base, u.base + u.tree.root_node.end_byte
            if u.in_macro:  # the wrapper around a macro body is ours: clamp its errors to the body
                lo, hi = lo + len(MACRO_WRAP_PREFIX), hi - len(MACRO_WRAP_SUFFIX)
            for _, s, e in error_nodes(u.tree):
                s, e = min(max(s + u.base, lo), hi), min(max(e + u.base, lo), hi)
                raw.append((s, e))
        raw.sort()
        starts: list[int] = []
        ends: list[int] = []
        for s, e in raw:
            if ends and s <= ends[-1]:
                ends[-1] = max(ends[-1], e)
            else:
                starts.append(s)
                ends.append(e)
        return cls(starts, ends)

    def touches(self, start: int, end: int) -> bool:
        """Whether [start, end] overlaps or touches an error span."""
        import bisect

        i = bisect.bisect_right(self.starts, end) - 1
        return i >= 0 and self.ends[i] >= start


def syntax_blocker(spans: ErrorSpans, arglist: tuple[int, int] | None, edits, data: bytes = b"",
                   rename: tuple[int, int] | None = None) -> str | None:
    """Why a fix must not be offered: an edit touches a syntax error of the input, or the argument list the
    rule reads does (its argument boundaries are guesses). An error elsewhere in the match (an `#if` among a
    launch's kernel arguments) does not block an edit of the launch configuration.

    `rename`: the identifier token an `identifier` rule matched. Edits that only replace that one token by
    another identifier change no token boundary, so they cannot move or make a syntax error: the error around
    a return type after an unexpanded macro (`HOST_DEVICE_INLINE double4 f()`) does not block renaming it."""
    if not spans.starts:
        return None
    if rename is not None and edits and all(is_token_rename(data, e, rename) for e in edits):
        return None
    if (arglist is not None and spans.touches(*arglist)) or any(spans.touches(e.start, e.end) for e in edits):
        return "no automatic fix: the code around the match has a syntax error"
    return None


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def is_token_rename(data: bytes, edit, token: tuple[int, int]) -> bool:
    """`edit` replaces exactly the identifier token [start, end) of `data` with another identifier."""
    return ((edit.start, edit.end) == token and bool(_IDENT.match(edit.text))
            and bool(_IDENT.match(data[edit.start : edit.end].decode("latin-1"))))


# ------------------------------------------------------------------ cheap parents
# `Node.parent` descends from the root (O(depth)), so walking a node's ancestors is quadratic in nesting and
# matching every call of a deeply nested expression cubic. `parent_of` is `Node.parent` with a per-scan
# cache: once a walk turns out deep, the parents of its whole tree are indexed in one traversal.
DEEP_WALK = 100
_PARENTS: dict[int, ts.Node | None] = {}
_INDEXED: set[int] = set()
_KEEP: list[ts.Node] = []  # the roots indexed: keeps their trees (and so the node ids) alive until reset
_ROOTS: list[ts.Node] = []
_SPENT = 0.0  # seconds spent in uncached Node.parent during this scan
INDEX_AFTER_S = 0.02
# One lookup counts at most this long: a lookup measured longer was interrupted (the process descheduled on a
# loaded machine, or by one of many workers), not deep. Wall time is what is cheap to read (a CPU clock costs
# 1.8 us a call, more than a lookup); uncapped, one preemption (milliseconds) indexed the tree of a shallow
# file, so a parallel or loaded scan spent CPU that a quiet one does not.
MAX_LOOKUP_S = 0.0005


def reset_parent_cache() -> None:
    """Forget cached parents (the engine calls it before each file)."""
    global _SPENT
    _SPENT = 0.0
    _PARENTS.clear()
    _INDEXED.clear()
    _KEEP.clear()
    _ROOTS.clear()


def _index_tree(root: ts.Node) -> None:
    if root.id in _INDEXED:
        return
    _INDEXED.add(root.id)
    _KEEP.append(root)
    _PARENTS[root.id] = None
    cur = root.walk()
    stack: list[ts.Node] = [root]
    # iterative pre-order walk; the stack holds the current node's ancestors
    while True:
        if cur.goto_first_child():
            node = cur.node
            _PARENTS[node.id] = stack[-1]
            stack.append(node)
            continue
        while not cur.goto_next_sibling():
            if not cur.goto_parent():
                return
            stack.pop()
        stack.pop()
        node = cur.node
        _PARENTS[node.id] = stack[-1]
        stack.append(node)


def parent_of(node: ts.Node) -> ts.Node | None:
    """`node.parent`, O(1) once the node's tree has been indexed: the scan's trees are indexed once the
    uncached lookups of this scan have taken INDEX_AFTER_S (deep trees), so shallow files never pay for it."""
    global _SPENT
    nid = node.id
    if nid in _PARENTS:
        return _PARENTS[nid]
    t0 = time.perf_counter()
    p = node.parent
    _SPENT += min(time.perf_counter() - t0, MAX_LOOKUP_S)
    if _SPENT > INDEX_AFTER_S and _ROOTS:
        note_deep(DEEP_WALK)
    return p


def register_roots(roots: list[ts.Node]) -> None:
    """The trees of the file being scanned (the engine calls it with its units' roots)."""
    _ROOTS[:] = roots


def note_deep(steps: int) -> None:
    """Called by ancestor walks: after a walk of DEEP_WALK steps, index the registered trees once."""
    if steps >= DEEP_WALK and _ROOTS:
        for root in _ROOTS:
            _index_tree(root)
        _ROOTS.clear()
