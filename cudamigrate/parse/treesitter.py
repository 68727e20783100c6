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
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter as ts
import tree_sitter_cuda

MACRO_WRAP_PREFIX = b"void __cudamigrate_macro__(){\n"
MACRO_WRAP_SUFFIX = b"\n;}\n"


@lru_cache(maxsize=1)
def language() -> ts.Language:
    return ts.Language(tree_sitter_cuda.language())


@lru_cache(maxsize=1)
def _parser() -> ts.Parser:
    return ts.Parser(language())


@lru_cache(maxsize=256)
def query(pattern: str) -> ts.Query:
    return ts.Query(language(), pattern)


@dataclass
class Unit:
    """A parsed buffer: the whole file (base 0) or a macro body (base = its offset)."""

    tree: ts.Tree
    base: int  # absolute offset = node.start_byte + base
    in_macro: bool = False
    macro_name: str | None = None

    @property
    def root(self) -> ts.Node:
        return self.tree.root_node

    def abs(self, node: ts.Node) -> tuple[int, int]:
        return node.start_byte + self.base, node.end_byte + self.base


def parse(data: bytes) -> ts.Tree:
    return _parser().parse(data)


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


def macro_units(tree: ts.Tree, data: bytes, keywords: re.Pattern[bytes] | None) -> list[Unit]:
    """Parse `#define` bodies that mention a keyword, each as the body of a function."""
    units: list[Unit] = []
    q = query("(preproc_def name: (_) @name value: (preproc_arg) @body) "
              "(preproc_function_def name: (_) @name value: (preproc_arg) @body)")
    for _, caps in ts.QueryCursor(q).matches(tree.root_node):
        body = caps["body"][0]
        text = data[body.start_byte : body.end_byte]
        if keywords is not None and not keywords.search(text):
            continue
        # Keep offsets: a line continuation becomes spaces and a newline of the same length.
        text = _CONT.sub(lambda m: b" " * (len(m.group(0)) - 1) + b"\n", text)
        buf = MACRO_WRAP_PREFIX + text + MACRO_WRAP_SUFFIX
        sub = parse(buf)
        name = caps["name"][0].text.decode("utf-8", "replace")
        units.append(Unit(tree=sub, base=body.start_byte - len(MACRO_WRAP_PREFIX), in_macro=True, macro_name=name))
    return units
