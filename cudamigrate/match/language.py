"""The language a file is compiled in, so that a fix is written in it.

nvcc hands `.c` files to the host C compiler: a fix that writes `nullptr`, a lambda, `T{...}`, a
reference or `std::` into one turns a file that compiled into one that does not. Headers are
compiled in the language of the files that include them: a `.h` that only `.c` files of its
directory include is C, any other header is C++ (the safe guess for `.cuh`/`.hpp`, and for a
header with no includer in sight the C++ forms are what the rest of the project expects).

Rules read the result as the template variable `lang` (`c` or `cxx`) and the condition `lang: c`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

C_EXTS = {".c"}
_HEADER_EXTS = {".h"}  # .hpp/.cuh/.hh/.hxx are C++ by convention
_SOURCE_EXTS = {".c", ".cc", ".cpp", ".cxx", ".cu", ".h", ".hpp", ".cuh", ".hh", ".hxx"}
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.M)
_MAX_FILES = 400
_MAX_BYTES = 1 << 20


@lru_cache(maxsize=256)
def _includers(directory: str, mtime_ns: int) -> dict[str, frozenset[str]]:
    """Header base name -> extensions of the files in `directory` that include it (one level)."""
    out: dict[str, set[str]] = {}
    try:
        files = sorted(p for p in Path(directory).iterdir() if p.suffix.lower() in _SOURCE_EXTS)[:_MAX_FILES]
    except OSError:
        return {}
    for p in files:
        try:
            with p.open("rb") as fh:
                data = fh.read(_MAX_BYTES)
        except OSError:
            continue
        for mo in _INCLUDE.finditer(data):
            name = Path(mo.group(1).decode("utf-8", "replace")).name
            out.setdefault(name, set()).add(p.suffix.lower())
    return {k: frozenset(v) for k, v in out.items()}


def includer_exts(path: Path) -> frozenset[str]:
    try:
        d = path.resolve().parent
        mt = d.stat().st_mtime_ns
    except OSError:
        return frozenset()
    return _includers(str(d), mt).get(path.name, frozenset())


def _header_language(path: Path) -> str:
    """C when the header's includers in its directory are all C (`.c`, or C headers themselves)."""
    exts = includer_exts(path)
    if not exts:
        return "cxx"
    for ext in exts:
        if ext in C_EXTS:
            continue
        return "cxx"  # a C++ or CUDA file includes it (a header includer is judged conservatively as C++)
    return "c"


def file_language(path: Path) -> str:
    """`c` or `cxx` (C++ and CUDA): the language a fix written into `path` must be valid in."""
    ext = path.suffix.lower()
    if ext in C_EXTS:
        return "c"
    if ext in _HEADER_EXTS:
        return _header_language(path)
    return "cxx"
