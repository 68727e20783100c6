"""The CUDA grammar and its compiled queries, one of each per process.

Below both `treesitter` (parsing) and `walk` (tree walks that fall back to queries), so neither imports the
other's module to reach the grammar.
"""

from __future__ import annotations

from functools import lru_cache

import tree_sitter as ts
import tree_sitter_cuda


@lru_cache(maxsize=1)
def language() -> ts.Language:
    return ts.Language(tree_sitter_cuda.language())


@lru_cache(maxsize=256)
def query(pattern: str) -> ts.Query:
    return ts.Query(language(), pattern)
