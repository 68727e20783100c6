"""Jinja's compiled code of the rule set's templates, as the rule cache keeps it (knowledge/load.py).

Why: compiling a template (Jinja's lexer, parser and code generator, in Python) costs 1-5 ms, and every process
paid it again for each template its findings rendered: ~40 ms in each worker of a parallel run on cuda-samples,
and in every one-file run (an editor's save, a pre-commit hook). The rule cache is built once per rule set, tool
and environment (its key holds the Python and Jinja versions, so marshalled code stays valid), so the code is
compiled there and preloaded by every process that reads the cache. A module of its own, below both
`templates` (which preloads without importing Jinja) and `jinja_sandbox` (which compiles and uses the code).
"""

from __future__ import annotations

# template text -> (its code object, marshalled; the variables the template reads)
Precompiled = dict[str, tuple[bytes, tuple[str, ...]]]
_PRECOMPILED: Precompiled = {}


def preload(code: Precompiled) -> None:
    """Templates compiled by an earlier process (the rule cache): rendering uses their code instead of compiling."""
    _PRECOMPILED.update(code)


def precompiled(text: str) -> tuple[bytes, tuple[str, ...]] | None:
    return _PRECOMPILED.get(text)
