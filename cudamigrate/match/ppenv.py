"""What the preprocessor knows at each conditional of a translation unit.

A branch such as the `#else` of `#if CUDA_VERSION >= 13000` is dead for a CUDA 13 build only if `cuda.h` is
really included before it, and `cuda.h` often arrives through a project header (`#include "common.h"`). Likewise
`#if __CUDA_API_VERSION >= 4000` is decided when a project header says `#define __CUDA_API_VERSION 5000`. So this
module walks the file's directives in order, follows `#include` into the project's own headers, and records
before every directive:

- which CUDA version macros are *certainly* defined at the toolkit's value (a toolkit header that defines them
  was included on a live path; nvcc predefines some in .cu files) and which only *may* be (nothing says so: the
  macro may still come from a system header or `-D`, or be undefined);
- the object-like macros that the file and its project headers `#define`/`#undef` on live paths, with their
  integer values where the replacement is an integer constant expression.

The same walk answers which `#define` and `#include` lines are live at all (`live_directives`), for what gathers
macro definitions across includes: a pasting macro defined once for HIP under `#ifdef __HIPCC__` and once for
CUDA (read/project_index.py's `paste_macros`).

A condition is decided only when it has the same value in every possible world: every toolkit of the window and,
for each version macro that may or may not be defined, both possibilities. Anything defined or included under an
undecided condition becomes unknown. Nothing here runs a compiler; nothing here is guessed from names.
"""

from __future__ import annotations

import bisect
import itertools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import cast

from .ppexpr import Evaluator, PPError, cached_tokens
from ..core.stamps import file_cache
from ..read.source import read_regular

# Version macro groups and the macros each defines (one toolkit version gives all of a group's values).
GROUPS: dict[str, tuple[str, ...]] = {
    "CUDA_VERSION": ("CUDA_VERSION",),
    "CUDART_VERSION": ("CUDART_VERSION",),
    "CUDACC": ("__CUDACC_VER_MAJOR__", "__CUDACC_VER_MINOR__"),
    "CUDA_API": ("__CUDA_API_VER_MAJOR__", "__CUDA_API_VER_MINOR__"),
}
GROUP_OF = {m: g for g, ms in GROUPS.items() for m in ms}

# Toolkit headers that define CUDA_VERSION / CUDART_VERSION when included by the host compiler. Measured on the
# CUDA 13.0 headers and the 13.0-matched library wheels with
#   echo '#include <H>' | g++ -x c++ -E -dM -I$CUDA/include -I$CUDA/include/cccl -I$WHEEL/include - | grep VERSION
# for every top-level header H. (cufft.h, cusolverRf.h, cusolver_common.h, nvrtc.h, nvJitLink.h, cooperative_groups.h,
# driver_types.h and the other type-only headers define neither.)
_CUDA_H = re.compile(r"^(cuda|cudaEGL|cudaEGLTypedefs|cudaGL|cudaGLTypedefs|cudaProfiler|cudaProfilerTypedefs|cudaTypedefs"
                     r"|cupti|cupti_(activity|callbacks|checkpoint|events|metrics|pcsampling|pcsampling_util|pmsampling"
                     r"|profiler_target|range_profiler|sass_metrics)|generated_cudaGL_meta|generated_cuda_meta"
                     r"|generated_nvtx_meta)\.h$")
_CUDART_H = re.compile(r"^(channel_descriptor|cuda_bf16|cuda_egl_interop|cuda_fp16|cuda_fp4|cuda_fp6|cuda_fp8|cuda_gl_interop"
                       r"|cuda_runtime|cuda_runtime_api|cupti|generated_cuda_gl_interop_meta|generated_cuda_runtime_api_meta"
                       r"|mma|vector_functions|cublas|cublasLt|cublasXt|cublas_api|cublas_v2|cufftXt|curand|curand_kernel"
                       r"|cusolverDn|cusolverSp|cusolverMg|cusparse|cusparse_v2|npp|nppcore|nppdefs|nppi|npps|nppi_\w+|npps_\w+)\.h$")


def toolkit_groups(include: str) -> set[str]:
    """The version macro groups a toolkit header (as written in `#include <...>`) defines."""
    base = include.rsplit("/", 1)[-1]
    out = set()
    if _CUDA_H.match(base):
        out.add("CUDA_VERSION")
    if _CUDART_H.match(base):
        out.add("CUDART_VERSION")
    return out


# What the compiler says before the first line about which compiler it is, as a condition reads it. nvcc defines
# `__NVCC__` when it compiles C, C++ or CUDA files and `__CUDACC__` when it compiles CUDA files (NVIDIA, "NVCC":
# Predefined Macros, https://docs.nvidia.com/cuda/cuda-compiler-driver-nvcc/#predefined-macros); a file that is not
# CUDA may be compiled by nvcc or by the host compiler, so both stay unknown there. `__HIPCC__` is HIP's compiler's:
# the builds this tool migrates are CUDA builds, so it is undefined unless the project defines it (`#define`, -D)
# or a HIP header may have (`_SET_BY_SYSTEM_HEADERS`).
def compiler_macros(cuda_file: bool) -> dict[str, int | str]:
    """The state of the compiler-identifying macros before the first line of a file compiled for CUDA."""
    known: int | str = DEFINED if cuda_file else UNKNOWN
    return {"__NVCC__": known, "__CUDACC__": known, "__HIPCC__": UNDEF}


# A system header (not the project's) under this directory may define these macros: HIP's headers define
# `__HIPCC__` when nvcc compiles them (hip/hip_common.h on the NVIDIA platform), so after `#include <hip/...>`
# the compiler's undefined `__HIPCC__` is no longer known.
_SET_BY_SYSTEM_HEADERS: dict[str, tuple[str, ...]] = {"hip": ("__HIPCC__",)}

HEADER_EXTS = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl", ".inc", ".ipp", ".tcc")
MAX_DEPTH = 200  # GCC's own limit on nested #include; cycles are cut by the include stack
# Header walks per translation unit. The memo below makes a tree of guarded headers cost about one walk per header
# (the largest translation unit of the CUDA 13.0 CCCL headers: 1,671 walks, median 353), but headers without guards that include one another
# can still be walked once per include path. Past the budget an #include is not followed and, since the header
# could redefine anything, every macro known at that point becomes unknown (conditions on them stay undecided).
MAX_WALKS = 20000


# --------------------------------------------------------------------------- directives
@dataclass(frozen=True)
class Directive:
    pos: int  # offset of the start of the directive's line in the file
    kind: str  # "if", "ifdef", "define", ...
    text: str  # the rest of the line: comments blanked, continuation lines joined


# (unrolled loops: `"[^"\\]*(?:\\.[^"\\]*)*"`, not `"(?:\\.|[^"\\])*"`, which `re` runs a byte at a time)
_SKIP = re.compile(rb'//[^\n]*|/\*.*?\*/|"[^"\\\n]*(?:\\.[^"\\\n]*)*"|\'[^\'\\\n]*(?:\\.[^\'\\\n]*)*\'', re.S)
_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*([A-Za-z_]\w*)(.*)$")
_BLANK = bytes(c if c in (10, 13) else 32 for c in range(256))  # a comment's bytes -> spaces, line ends kept


def _blank_comments(data: bytes) -> bytes:
    def sub(m: re.Match[bytes]) -> bytes:
        s = m.group(0)
        if s[:1] in (b'"', b"'"):
            return s
        return s.translate(_BLANK)

    return _SKIP.sub(sub, data)


def directives(data: bytes) -> tuple[Directive, ...]:
    """Every preprocessor directive of `data`, in order. Only lines holding a `#` are looked at (found with
    `find`, not by stepping through every line)."""
    if b"#" not in data:
        return ()
    clean = _blank_comments(data)
    out: list[Directive] = []
    pos = 0
    n = len(clean)
    while pos < n:
        h = clean.find(b"#", pos)
        if h == -1:
            break
        start = clean.rfind(b"\n", pos, h) + 1 or pos  # the start of the line holding it (pos starts a line)
        end = clean.find(b"\n", h)
        end = n if end == -1 else end
        line = clean[start:end]
        parts = [line]
        while line.rstrip(b"\r").endswith(b"\\") and end < n:
            parts[-1] = line.rstrip(b"\r")[:-1]
            nxt = clean.find(b"\n", end + 1)
            nxt = n if nxt == -1 else nxt
            line = clean[end + 1 : nxt]
            parts.append(line)
            end = nxt
        m = _DIRECTIVE.match(b" ".join(parts).rstrip(b"\r"))
        if m:
            out.append(Directive(start, m.group(1).decode("ascii"), m.group(2).decode("utf-8", "replace").strip()))
        pos = end + 1
    return tuple(out)


@lru_cache(maxsize=2048)
def _file_directives(path: str, mtime_ns: int, size: int) -> tuple[Directive, ...]:
    try:
        return directives(read_regular(path))
    except OSError:
        return ()


def _path_directives(path: str) -> tuple[Directive, ...] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _file_directives(path, st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=16)
def _header_index(root: str) -> dict[str, tuple[str, ...]]:
    """Project headers under `root` by basename (for `#include <x.h>` found through an -I of the project)."""
    out: dict[str, list[str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for f in filenames:
            if f.endswith(HEADER_EXTS):
                out.setdefault(f, []).append(os.path.join(dirpath, f))
    return {k: tuple(sorted(v)) for k, v in out.items()}


# --------------------------------------------------------------------------- state
DEFINED, UNDEF, UNKNOWN = "defined", "undef", "unknown"


@dataclass
class PPState:
    """`toolkit[g]`: the group's macros are certainly defined (True) or may or may not be (False).
    `macros[name]`: an int value, DEFINED (value not an integer constant), UNDEF, or UNKNOWN."""

    toolkit: dict[str, bool]
    macros: dict[str, int | str] = field(default_factory=dict)

    def copy(self) -> "PPState":
        return PPState(dict(self.toolkit), dict(self.macros))


_IDENT = re.compile(r"[A-Za-z_]\w*")


def _values(version: tuple[int, int]) -> dict[str, int]:
    maj, mnr = version
    return {"CUDA_VERSION": maj * 1000 + mnr * 10, "CUDART_VERSION": maj * 1000 + mnr * 10,
            "__CUDACC_VER_MAJOR__": maj, "__CUDACC_VER_MINOR__": mnr,
            "__CUDA_API_VER_MAJOR__": maj, "__CUDA_API_VER_MINOR__": mnr}


@lru_cache(maxsize=8192)
def _idents(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_IDENT.findall(text)))


_DECIDED: dict[tuple, bool | None] = {}
_DECIDED_MAX = 65536


def decide(state: PPState, ctext: str, versions: list[tuple[int, int]], user_macros: bool = True) -> bool | None:
    """The value of `#if ctext` if it is the same in every world, else None (see `_decide`).

    Memoised on everything the answer depends on: the text, the state of the macros it names, the toolkit flags,
    the versions and `user_macros`. One condition is evaluated in up to 2 x 281 worlds (a few ms), and the
    same conditions come back in every header walk and every file of a tree."""
    key = (ctext, tuple(state.macros.get(n) for n in _idents(ctext)), tuple(state.toolkit.get(g) for g in GROUPS),
           tuple(versions), user_macros)
    try:
        return _DECIDED[key]
    except KeyError:
        pass
    if len(_DECIDED) >= _DECIDED_MAX:
        _DECIDED.clear()
    val = _DECIDED[key] = _decide(state, ctext, versions, user_macros)
    return val


def _decide(state: PPState, ctext: str, versions: list[tuple[int, int]], user_macros: bool = True) -> bool | None:
    """The value of `#if ctext` if it is the same in every world, else None.

    Worlds: each toolkit version in `versions`, times defined/undefined for each version macro group the condition
    names that is not certainly defined. `user_macros=False` treats every macro the project defines as unknown
    (for rewrites that must not depend on a project's configuration)."""
    names = set(_IDENT.findall(ctext))
    if not names:
        try:  # `#if 0`, `#if 1`
            v = Evaluator(lambda n: None, lambda n: None).eval(ctext)
        except PPError:
            return None
        return None if v is None else bool(v)
    try:
        cached_tokens(ctext)
    except PPError:
        return None
    overridden = {n for n in names if n in state.macros}
    used_groups = {GROUP_OF[n] for n in names if n in GROUP_OF and n not in overridden}
    maybe = sorted(g for g in used_groups if not state.toolkit.get(g))
    if not used_groups:
        versions = versions[:1]  # no version macro: one toolkit decides for all
    seen: set[bool] = set()
    for defined_groups in itertools.product((True, False), repeat=len(maybe)):
        present = {g for g in used_groups if state.toolkit.get(g)} | {g for g, d in zip(maybe, defined_groups, strict=True) if d}
        for v in versions:
            vals = _values(v)

            def lookup(n: str, vals: dict[str, int] = vals, present: set[str] = present) -> int | None:
                if n in state.macros:
                    m = state.macros[n]
                    if not user_macros or m == UNKNOWN or m == DEFINED:
                        return None
                    return 0 if m == UNDEF else int(m)
                g = GROUP_OF.get(n)
                if g is not None:
                    return vals[n] if g in present else 0
                return None

            def defined(n: str, present: set[str] = present) -> bool | None:
                if n in state.macros:
                    m = state.macros[n]
                    if not user_macros or m == UNKNOWN:
                        return None
                    return m != UNDEF
                g = GROUP_OF.get(n)
                if g is not None:
                    return g in present
                return None

            try:
                r = Evaluator(lookup, defined).eval(ctext)
            except PPError:
                return None
            if r is None:
                return None
            seen.add(bool(r))
            if len(seen) > 1:
                return None
    return seen.pop() if seen else None


# --------------------------------------------------------------------------- the walk
_INCLUDE_ARG = re.compile(r'^(?:"([^"]+)"|<([^>]+)>)')
_DEFINE = re.compile(r"^([A-Za-z_]\w*)(\()?\s*(.*)$", re.S)
CONDITIONALS = {"if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif"}


def _likelier(a: bool | None, b: bool | None) -> bool | None:
    """The liveness of a directive seen twice (a header included from two places): live on one path is live."""
    return True if True in (a, b) else (None if None in (a, b) else False)


def _and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def include_guard(dirs: tuple[Directive, ...]) -> tuple[int, str] | None:
    """(index, G) when the file is wrapped in `#ifndef G` (or `#if !defined(G)`) / `#define G` ... `#endif`, after
    any leading `#pragma`s, and that `#endif` is the last directive. The first walk of such a file takes the
    branch: nobody passes `-D` for a header guard."""
    i = 0
    while i < len(dirs) and dirs[i].kind == "pragma":
        i += 1
    if len(dirs) - i < 3 or dirs[i + 1].kind != "define" or dirs[-1].kind != "endif":
        return None
    if dirs[i].kind == "ifndef":
        name = (dirs[i].text.split() or [""])[0]
    elif dirs[i].kind == "if":
        m = re.fullmatch(r"!\s*defined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|\s([A-Za-z_]\w*))", dirs[i].text.strip())
        name = (m.group(1) or m.group(2)) if m else ""
    else:
        return None
    if not name or (dirs[i + 1].text.split() or [""])[0] != name:
        return None
    depth = 0
    for j in range(i, len(dirs)):
        d = dirs[j]
        if d.kind in ("if", "ifdef", "ifndef"):
            depth += 1
        elif d.kind == "endif":
            depth -= 1
            if depth == 0:
                return (i, name) if j == len(dirs) - 1 else None
    return None


# --------------------------------------------------------------------------- header effects (memo)
# Walking a header is a pure function of the state it reads (macro values, the toolkit flags, which headers
# `#pragma once` already closed), of the include stack where it consults it (a quoted include searches the
# includers' directories; a cycle or the depth limit cuts the walk), and of the files. Without a memo the walk is
# exponential in the include depth: a header whose guard macro was defined under an undecided condition (UNKNOWN)
# is walked again at every `#include` of it, and each of those walks again every such header it includes (the
# CUDA 13 CCCL headers: one thrust header took >10 minutes, with `cuda/std/detail/__config` walked 90,000 times).
# So each walk of a header records what it read (the value first seen, unless the walk wrote it before) and what it
# wrote (the final values); an `#include` whose recorded reads still hold and whose stack dependence matches
# replays the writes instead of walking. Replay gives exactly the state the walk would give.

_KEY_TK = "tk"
_KEY_ONCE = "once"
_NO_CUT = 1 << 30


@dataclass
class _Rec:
    """What one header walk (with the headers it includes) read and wrote so far."""

    base: int  # index of the header in the include stack
    reads: dict = field(default_factory=dict)  # key -> value first seen (before any write of this walk)
    writes: dict = field(default_factory=dict)  # key -> final value
    entered: set = field(default_factory=set)  # headers walked (a replay is invalid where one is on the stack)
    dir_low: int = _NO_CUT  # lowest stack index whose directory a quoted include consulted
    cut_low: int = _NO_CUT  # lowest stack index whose presence cut the walk (cycle); -1: the depth limit did
    deep: int = 0  # the longest stack at which an include passed the depth limit


@dataclass(frozen=True)
class _Effect:
    reads: tuple  # ((key, value), ...)
    writes: tuple
    entered: frozenset
    outer_dirs: tuple | None  # directories of the stack below the header, when a quoted include consulted them
    dir_low: int  # relative to the header's stack index when >= 0 (or _NO_CUT); absolute when outer_dirs is set
    cut_rel: int  # cut_low relative to the header's stack index (or _NO_CUT)
    deep_rel: int  # deep relative to the header's stack index: a replay deeper than MAX_DEPTH allows is invalid


def _dirs(stack: list[str], upto: int) -> tuple[str, ...]:
    return tuple(os.path.dirname(s) for s in stack[:upto])


Resolver = Callable[[str, str, bool], "str | None"]  # (including file, name as written, quoted) -> project file


class _Walker:
    memoise = True  # False: walk every include (the reference the tests compare the memo with)

    def __init__(self, roots: tuple[str, ...], versions: list[tuple[int, int]], shared: dict | None = None,
                 resolver: Resolver | None = None):
        """`shared`: a dict that outlives this translation unit, for the files of one run (their headers do not
        change during it): the memo and the include resolutions are kept there, by roots and versions, so a
        header walked for one file is replayed for the next (CCCL: every file includes the same config headers).
        `resolver`: finds a project file for `#include` instead of `resolve`'s own search (`live_directives`:
        the caller's include graph, so that what is walked is what the caller reads)."""
        self.roots = roots
        self.resolver = resolver
        self.live: dict[str, dict[int, bool | None]] | None = None  # `live_directives`' record
        self.versions = versions
        self.positions: list[int] = []  # the main file's directives walked so far, and the state before each
        self.states: list[PPState] = []
        self.once: set[str] = set()  # headers with `#pragma once` already walked
        self.recs: list[_Rec] = []  # the header walks in progress, innermost last
        self.memo: dict[tuple[str, bool], list[_Effect]]
        self.resolved: dict[tuple[str, bool, str], str | None]  # _resolve_global
        self.memo, self.resolved = ({}, {}) if shared is None else shared.setdefault((roots, tuple(versions)), ({}, {}))
        self.walks = 0  # headers walked (not replayed): the regression tests bound it

    # ----------------------------------------------------------------- state access, recorded
    def _peek(self, state: PPState, key: object) -> object:
        if type(key) is str:
            return state.macros.get(key)
        kind, name = cast("tuple[str, str]", key)
        return state.toolkit.get(name) if kind == _KEY_TK else (name in self.once)

    def _read(self, state: PPState, key: object) -> object:
        v = self._peek(state, key)
        if self.recs:
            rec = self.recs[-1]
            if key not in rec.writes and key not in rec.reads:
                rec.reads[key] = v
        return v

    def _read_text(self, state: PPState, text: str) -> None:
        """Record the reads of a `decide` or a value over `text`: its identifiers and the toolkit flags."""
        if not self.recs:
            return
        for n in _idents(text):
            self._read(state, n)
        for g in GROUPS:
            self._read(state, (_KEY_TK, g))

    def _write(self, state: PPState, key: object, value: object) -> None:
        self._apply(state, key, value)
        if self.recs:
            self.recs[-1].writes[key] = value

    def _apply(self, state: PPState, key: object, value: object) -> None:
        if type(key) is str:
            state.macros[key] = value
            return
        kind, name = cast("tuple[str, str]", key)
        if kind == _KEY_TK:
            state.toolkit[name] = value
        else:
            self.once.add(name)

    def _depend_dir(self, index: int) -> None:
        if self.recs and index < self.recs[-1].dir_low:
            self.recs[-1].dir_low = index

    def _depend_cut(self, index: int) -> None:
        if self.recs and index < self.recs[-1].cut_low:
            self.recs[-1].cut_low = index

    # ----------------------------------------------------------------- include resolution
    def resolve(self, name: str, quoted: bool, stack: list[str]) -> str | None:
        """A project file for `#include`, or None (toolkit or system header, or not found)."""
        if self.resolver is not None:  # depends on the including file only
            self._depend_dir(len(stack) - 1)
            return self.resolver(stack[-1], name, quoted)
        if quoted:
            for j in range(len(stack) - 1, -1, -1):  # the including file's directory, then its includers' (gcc's quote chain)
                cand = os.path.normpath(os.path.join(os.path.dirname(stack[j]), name))
                if os.path.isfile(cand):
                    self._depend_dir(j)
                    return cand
            self._depend_dir(0)
        here = stack[-1] if stack else ""
        key = (name, quoted, here)
        hit = self.resolved.get(key, self)
        if hit is self:
            hit = self.resolved[key] = _resolve_global(name, quoted, self.roots, here)
        return hit  # type: ignore[return-value]

    # ----------------------------------------------------------------- one header: replay or walk
    def _include(self, path: str, sub: tuple[Directive, ...], state: PPState, certain: bool, stack: list[str]) -> None:
        key = (path, certain)
        e = len(stack)  # the header's index once pushed
        for eff in self.memo.get(key, ()) if self.memoise else ():
            if e + eff.deep_rel >= MAX_DEPTH:
                continue
            if eff.outer_dirs is not None and (len(eff.outer_dirs) != e or _dirs(stack, e) != eff.outer_dirs):
                continue
            if any(s in eff.entered for s in stack):
                continue
            if any(self._peek(state, k) != v for k, v in eff.reads):
                continue
            self._replay(eff, state, e)
            return
        if self.walks >= MAX_WALKS:
            self._forget(state)
            return
        self.walks += 1
        rec = _Rec(base=e, entered={path}, deep=e)
        self.recs.append(rec)
        stack.append(path)
        try:
            self.walk(sub, state, certain, stack)
        finally:
            stack.pop()
            self.recs.pop()
        if rec.cut_low >= e:
            outer = _dirs(stack, e) if rec.dir_low < e else None
            eff = _Effect(tuple(rec.reads.items()), tuple(rec.writes.items()), frozenset(rec.entered), outer,
                          rec.dir_low if outer is not None else (rec.dir_low - e if rec.dir_low != _NO_CUT else _NO_CUT),
                          rec.cut_low - e if rec.cut_low != _NO_CUT else _NO_CUT, rec.deep - e)
            entries = self.memo.setdefault(key, [])
            entries.insert(0, eff)
            del entries[8:]
        self._merge(rec.reads.items(), rec.writes.items(), rec.entered, rec.dir_low, rec.cut_low, rec.deep)

    def _forget(self, state: PPState) -> None:
        """A header that is not walked may define or undefine any macro: none keeps a known value. The walks in
        progress are not memoised (what this forgets depends on the whole state, not on recorded reads)."""
        for name, v in list(state.macros.items()):
            if v != UNKNOWN:
                self._write(state, name, UNKNOWN)
        self._depend_cut(-1)

    def _replay(self, eff: _Effect, state: PPState, e: int) -> None:
        for k, v in eff.writes:
            self._apply(state, k, v)
        dir_low = eff.dir_low if eff.outer_dirs is not None else (e + eff.dir_low if eff.dir_low != _NO_CUT else _NO_CUT)
        self._merge(eff.reads, eff.writes, eff.entered, dir_low, e + eff.cut_rel if eff.cut_rel != _NO_CUT else _NO_CUT,
                    e + eff.deep_rel)

    def _merge(self, reads, writes, entered, dir_low: int, cut_low: int, deep: int) -> None:
        """Fold a finished (or replayed) header walk into the walk that included it."""
        if not self.recs:
            return
        parent = self.recs[-1]
        pw, pr = parent.writes, parent.reads
        for k, v in reads:
            if k not in pw and k not in pr:
                pr[k] = v
        pw.update(writes)
        parent.entered |= entered
        parent.dir_low = min(parent.dir_low, dir_low)
        parent.cut_low = min(parent.cut_low, cut_low)
        parent.deep = max(parent.deep, deep)

    def walk(self, dirs: tuple[Directive, ...], state: PPState, certain: bool, stack: list[str]) -> None:
        for _ in self.steps(dirs, state, certain, stack, False):
            pass

    def steps(self, dirs: tuple[Directive, ...], state: PPState, certain: bool, stack: list[str], record: bool):
        """Walk `dirs`; with `record`, note the state before each directive and pause there (`PPEnv` walks the
        main file only as far as the positions it is asked about: a finding inside the include guard needs no
        header walked)."""
        # frames: [live of the enclosing region, some branch certainly taken (True/None/False), live of this branch,
        # the condition under which this branch is taken when it is the `#if`'s own or its `#else` (else None)]
        frames: list[list] = []
        base: bool | None = True if certain else None

        def live() -> bool | None:
            return _and(frames[-1][0], frames[-1][2]) if frames else base

        guard = include_guard(dirs)
        for i, d in enumerate(dirs):
            if record:
                self.positions.append(d.pos)
                self.states.append(state.copy())
                yield
            k = d.kind
            if k in ("if", "ifdef", "ifndef"):
                outer = live()
                cond = d.text if k == "if" else ("!" if k == "ifndef" else "") + f"defined({d.text.split()[0] if d.text.split() else ''})"
                val: bool | None
                if guard is not None and i == guard[0]:  # an include guard: its macro is ours, not a -D
                    val = self._read(state, guard[1]) in (None, UNDEF, UNKNOWN) if outer is not False else False
                elif outer is not False:
                    self._read_text(state, cond)
                    val = decide(state, cond, self.versions)
                else:
                    val = False
                frames.append([outer, val, val, cond])
                continue
            if k in ("elif", "elifdef", "elifndef", "else"):
                if not frames:
                    continue
                f = frames[-1]
                taken = f[1]
                if k == "else":
                    val = True
                elif k == "elif":
                    self._read_text(state, d.text)
                    val = decide(state, d.text, self.versions)
                else:
                    val = None
                if taken is True:
                    branch: bool | None = False
                elif taken is None:
                    branch = False if val is False else None
                else:
                    branch = val
                f[2] = branch
                f[1] = True if (taken is True or branch is True) else (None if taken is None or branch is None else False)
                f[3] = f"!({f[3]})" if k == "else" and f[3] is not None and not f[3].startswith("!(") else None
                continue
            if k == "endif":
                if frames:
                    frames.pop()
                continue
            here = live()
            if self.live is not None and k in ("define", "include"):
                seen = self.live.setdefault(stack[-1], {})
                seen[d.pos] = _likelier(seen.get(d.pos, False), here)
            if here is False:
                continue
            if k == "pragma" and d.text.split()[:1] == ["once"]:
                self._write(state, (_KEY_ONCE, stack[-1]), True)
            elif k == "define":
                m = _DEFINE.match(d.text)
                if not m:
                    continue
                name = m.group(1)
                if here is not True and base is True and self._defines_anyway(state, name, frames):
                    self._write(state, name, DEFINED)
                elif here is not True:
                    self._write(state, name, UNKNOWN)
                elif m.group(2):  # function-like
                    self._write(state, name, DEFINED)
                else:
                    self._write(state, name, self._value(state, m.group(3).strip()))
            elif k == "undef":
                name = d.text.split()[0] if d.text.split() else ""
                if name:
                    self._write(state, name, UNDEF if here is True else UNKNOWN)
            elif k == "include":
                m = _INCLUDE_ARG.match(d.text)
                if not m:
                    continue  # `#include MACRO`: unknown target
                name = m.group(1) or m.group(2)
                path = self.resolve(name, m.group(1) is not None, stack)
                if path is None:
                    if here is True:
                        for g in toolkit_groups(name):
                            self._write(state, (_KEY_TK, g), True)
                    for macro in _SET_BY_SYSTEM_HEADERS.get(name.split("/", 1)[0] if "/" in name else "", ()):
                        if self._read(state, macro) == UNDEF:
                            self._write(state, macro, UNKNOWN)
                    continue
                if path in stack:
                    self._depend_cut(stack.index(path))
                    continue
                if self._read(state, (_KEY_ONCE, path)):
                    continue
                if len(stack) >= MAX_DEPTH:
                    self._depend_cut(-1)
                    continue
                if self.recs and len(stack) > self.recs[-1].deep:
                    self.recs[-1].deep = len(stack)
                sub = _path_directives(path)
                if sub:
                    self._include(path, sub, state, here is True, stack)

    def _defines_anyway(self, state: PPState, name: str, frames: list[list]) -> bool:
        """Whether `#define name` under undecided conditions leaves `name` defined whatever they are: every
        undecided branch around it is an `#if` (or its `#else`) that is taken once `name` is undefined, as in
        `#if __CUDACC_VER_MAJOR__ >= 9 && !defined(USE_SYNC)` / `#define USE_SYNC` (if `name` was defined before,
        it still is; if not, the branch is taken and defines it). Its value is then not known. Only where the
        walk of this file is certain (not a header included under an undecided condition)."""
        if not frames or self._read(state, name) == UNDEF:
            return False  # certainly undefined before: the branches decide, as the caller says
        trial = state.copy()
        trial.macros[name] = UNDEF
        for f in frames:
            if f[2] is True:
                continue
            if f[3] is None or decide(trial, f[3], self.versions) is not True:
                return False
        return True

    def _value(self, state: PPState, body: str) -> int | str:
        if not body:
            return DEFINED
        self._read_text(state, body)
        val = decide_value(state, body)
        return DEFINED if val is None else val


def _resolve_global(name: str, quoted: bool, roots: tuple[str, ...], here: str) -> str | None:
    """The part of include resolution that does not depend on the includers: a scan root, then the project's
    headers by basename (the closest to the including file wins)."""
    if not quoted and toolkit_groups(name):
        return None
    for root in roots:
        cand = os.path.normpath(os.path.join(root, name))
        if os.path.isfile(cand):
            return cand
    best: tuple[int, str] | None = None
    tail = "/" + name.replace("\\", "/").lstrip("./")
    for root in roots:
        for cand in _header_index(root).get(name.rsplit("/", 1)[-1], ()):
            if cand.replace("\\", "/").endswith(tail):
                score = len(os.path.commonprefix([cand, here]))
                if best is None or score > best[0]:
                    best = (score, cand)
    return best[1] if best else None


def decide_value(state: PPState, body: str) -> int | None:
    """The integer value of a macro's replacement text when it is a constant expression over known macros."""
    def lookup(n: str) -> int | None:
        m = state.macros.get(n)
        return m if isinstance(m, int) else None

    try:
        return Evaluator(lookup, lambda n: None).eval(body)
    except PPError:
        return None


class PPEnv:
    """The preprocessor state before each directive of one file, walked lazily up to the positions asked about."""

    def __init__(self, walker: _Walker, steps, initial: PPState):
        self._walker = walker
        self._steps = steps  # the paused walk of the main file, None when finished
        self.initial = initial

    def _upto(self, pos: int | None) -> None:
        w = self._walker
        while self._steps is not None and (pos is None or not w.positions or w.positions[-1] <= pos):
            if next(self._steps, StopIteration) is StopIteration:
                self._steps = None

    @property
    def positions(self) -> list[int]:
        self._upto(None)
        return self._walker.positions

    @property
    def states(self) -> list[PPState]:
        self._upto(None)
        return self._walker.states

    def state_at(self, pos: int) -> PPState:
        """The state before the directive whose line starts at or before `pos`."""
        self._upto(pos)
        w = self._walker
        i = bisect.bisect_right(w.positions, pos) - 1
        return w.states[i] if i >= 0 else self.initial

    def decide(self, ctext: str, pos: int, versions: list[tuple[int, int]], user_macros: bool = True) -> bool | None:
        return decide(self.state_at(pos), ctext, versions, user_macros)


def build_env(data: bytes, path: Path | str, cuda_file: bool, roots: tuple[str, ...], versions: list[tuple[int, int]],
              assume: set[str] = frozenset(), shared: dict | None = None,
              defines: tuple[tuple[str, str | None], ...] = ()) -> PPEnv:
    """Walk `data` (the file at `path`) and its project headers. `cuda_file`: nvcc compiles it as CUDA, so
    CUDART_VERSION (cuda_runtime.h is force-included) and the `__CUDACC_VER_*__`/`__CUDA_API_VER_*__` macros
    are defined. `assume`: macros the user declares defined everywhere (CM410's `assume_defined`). `shared`:
    header walks kept for the other files of the run (`_Walker`). `defines`: the command line's `-D`/`-U`
    (`command_line`; read/unit_defines.py's `file_defines`, as for `live_walk`)."""
    toolkit = {g: False for g in GROUPS}
    if cuda_file:
        toolkit.update(CUDART_VERSION=True, CUDACC=True, CUDA_API=True)
    for m in assume:
        if m in GROUP_OF:
            toolkit[GROUP_OF[m]] = True
    initial = PPState(toolkit)
    command_line(initial, defines)
    w = _Walker(tuple(os.path.abspath(r) for r in roots), versions, shared)
    main = os.path.abspath(str(path))
    return PPEnv(w, w.steps(directives(data), initial.copy(), True, [main], True), initial)


def toolkits_from(target: tuple[int, int]) -> list[tuple[int, int]]:
    """The toolkit versions a guard must agree on: the target and every later major.minor (minors 0-9, majors up
    to 40, and 99.9 for "far future"). A guard is decided only when all of them give the same answer, so
    `__CUDACC_VER_MAJOR__ == 13 && __CUDACC_VER_MINOR__ >= 2` (false at 13.0, true at 13.2) stays undecided."""
    out = [(maj, mnr) for maj in range(target[0], 41) for mnr in range(10) if (maj, mnr) >= target]
    return out + [(99, 9)]


Liveness = dict[str, dict[int, "bool | None"]]  # file -> start of a `#define`/`#include` line -> live?


def live_directives(data: bytes, path: str, cuda_file: bool, versions: list[tuple[int, int]], resolver: Resolver,
                    defines: tuple[tuple[str, str | None], ...] = ()) -> Liveness:
    """Whether each `#define` and `#include` of `data` (the file at `path`) and of the project files it reaches
    (`resolver`: the caller's include graph) is on a path the preprocessor takes: True (always), None (a
    condition this model cannot decide), False (never: a dead `#if`/`#ifdef`/`#elif`/`#else` branch, a header
    included only from dead branches). A directive a header shows on several include paths counts as live when
    one of them is; a directive no walk reached is absent (the caller treats it as undecided). The state at the
    first line is `compiler_macros`, then the command line's `defines` in order: (NAME, VALUE) for `-DNAME=VALUE`
    (`-DNAME` is `-DNAME=1`), (NAME, None) for `-UNAME`."""
    initial = PPState({g: False for g in GROUPS})
    if cuda_file:
        initial.toolkit.update(CUDART_VERSION=True, CUDACC=True, CUDA_API=True)
    initial.macros.update(compiler_macros(cuda_file))
    command_line(initial, defines)
    w = _Walker((), versions, None, resolver)
    w.live = {}
    w.walk(directives(data), initial, True, [path])
    return w.live


def command_line(state: PPState, defines: tuple[tuple[str, str | None], ...]) -> None:
    """Apply the command line's `-D`/`-U` flags (`live_directives`' `defines`) to the state before the first
    line, in order: `-DNAME=VALUE` defines NAME with VALUE's integer value when it has one, `-UNAME` undefines it."""
    for name, value in defines:
        if value is None:
            state.macros[name] = UNDEF
        else:
            got = decide_value(state, value)
            state.macros[name] = DEFINED if got is None else got


Defines = Callable[[], tuple[tuple[str, str | None], ...]]  # the file's command-line flags, asked for when needed


def live_walk(path: Path, target: tuple[int, int], defines: Defines | None = None
              ) -> Callable[[str, bytes, Resolver], Liveness]:
    """`live_directives` for the file at `path` (CUDA when nvcc compiles it as CUDA: `.cu`, `.cuh`, as
    `FileContext.is_cuda_file` says) compiled for `target` (and every later toolkit: `toolkits_from`) with the
    `-D`/`-U` flags `defines` gives (read/unit_defines.py's `file_defines`: asked only when a walk is made), as
    read/project_index.py's `paste_macros` calls it: the scan and every matcher that parses another file the
    way the scan does ask with this one, so both see the same macros."""
    versions = toolkits_from(target)
    cuda_file = path.suffix.lower() in (".cu", ".cuh")

    def walk(key: str, data: bytes, resolver: Resolver) -> Liveness:
        return live_directives(data, key, cuda_file, versions, resolver, defines() if defines is not None else ())

    return walk


file_cache(_file_directives.cache_clear)  # kept per path and stat for the process: a long-lived one clears it (core/stamps.py)
