"""The language a file is compiled in, so that a fix is written in it.

nvcc hands `.c` files to the host C compiler: a fix that writes `nullptr`, a lambda, `T{...}`, a
reference or `std::` into one turns a file that compiled into one that does not. Headers are
compiled in the language of the files that include them: a `.h` that only `.c` files include is C
(its own directory is searched, else a small part of the parent directory's tree), any other header is
C++ (the safe guess for `.cuh`/`.hpp`, and for a header with no includer in sight the C++ forms are what
the rest of the project expects).

Rules read the result as the template variable `lang` (`c` or `cxx`) and the condition `lang: c`.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from ..read.source import read_regular
from ..core.linestart import directive, line_start_matches
from ..core.stamps import file_cache

C_EXTS = {".c"}
_HEADER_EXTS = {".h"}  # .hpp/.cuh/.hh/.hxx are C++ by convention
_SOURCE_EXTS = {".c", ".cc", ".cpp", ".cxx", ".cu", ".h", ".hpp", ".cuh", ".hh", ".hxx"}
_INCLUDE = directive(rb'#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]')  # at a line's start (linestart.py)
_MAX_FILES = 400
_MAX_DIRS = 64  # the search around a header stays small: a project's neighbourhood, never a whole disk
_MAX_DEPTH = 3
_MAX_BYTES = 1 << 20


@lru_cache(maxsize=256)
def _includers(directory: str, mtime_ns: int, recursive: bool = False) -> dict[str, frozenset[str]]:
    """Header base name -> extensions of the files in `directory` (and below, when `recursive`) that include it."""
    out: dict[str, set[str]] = {}
    files: list[Path] = []
    dirs, visited = [(Path(directory), 0)], 0
    while dirs and visited < _MAX_DIRS and len(files) < _MAX_FILES:
        d, depth = dirs.pop(0)
        visited += 1
        try:
            entries = sorted(d.iterdir())
        except OSError:
            continue
        for p in entries:
            if p.is_dir() and not p.is_symlink():
                if recursive and depth < _MAX_DEPTH and not p.name.startswith("."):
                    dirs.append((p, depth + 1))
            elif p.suffix.lower() in _SOURCE_EXTS and len(files) < _MAX_FILES:
                files.append(p)
    for p in files:
        try:
            data = read_regular(p, _MAX_BYTES)
        except OSError:
            continue
        for _, mo in line_start_matches(_INCLUDE, data):
            name = Path(mo.group(1).decode("utf-8", "replace")).name
            out.setdefault(name, set()).add(p.suffix.lower())
    return {k: frozenset(v) for k, v in out.items()}


def includer_exts(path: Path) -> frozenset[str]:
    """Extensions of the files that include `path`: its own directory first, else the project around it
    (the parent directory tree, e.g. `include/x.h` included from `src/*.c`)."""
    try:
        d = path.resolve().parent
        got = _includers(str(d), d.stat().st_mtime_ns).get(path.name, frozenset())
        if got:
            return got
        up = d.parent
        if up != d:
            return _includers(str(up), up.stat().st_mtime_ns, True).get(path.name, frozenset())
    except OSError:
        pass
    return frozenset()


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


file_cache(_includers.cache_clear)  # kept per path and stat for the process: a long-lived one clears it (core/stamps.py)
