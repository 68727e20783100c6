"""Does the legacy default stream meet other blocking streams in this translation unit?

The legacy default stream (stream 0, NULL, `cudaStreamLegacy`) serializes only with *blocking* streams: streams
created without `cudaStreamNonBlocking` and the per-thread default stream. Code that uses no other stream has
nothing to serialize against, and rewriting its legacy-stream calls buys nothing; code that does mix them is
where the legacy stream costs overlap, and also where moving one call to another stream can break an ordering the
code relies on. The stream rules ask this module which case a file is.

The answer is a per-translation-unit over-approximation from the source text of the file and the project headers
it includes with `#include "..."` (resolved next to the including file, a few directories up, and in their
`include/` folders): a stream created with flags that are not provably non-blocking, a function *definition* that
receives a stream parameter (its flags are unknown), a stream held in a struct/class field or a file-scope
variable, any use of `cudaStreamPerThread`, or host threads (`std::thread`, `std::async`, `pthread_create`,
`#pragma omp parallel`), whose work all meets on the one legacy stream. Comments and string literals do not count.

A stream parameter or file-scope stream that only ever holds the legacy stream is that stream, not another one,
and no reason: in both modes when the file's own text proves it (`legacy_params.py`: every call passes `0`, `NULL`,
`nullptr`, `cudaStreamLegacy`, a macro or variable that is one of these, or leaves a null default; a file-scope
stream initialized null and never written), and in semantic mode also when libclang's whole-TU view does
(`FileFacts.null_stream_params`, the view that makes libclang read such an argument as null).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import tree_sitter as ts

from ..parse import walk
from ..core.linestart import directive, line_start_matches
from ..core.stamps import file_cache
from ..parse.treesitter import parse_header
from .context import FileContext, normalize
from .legacy_params import legacy_only
from ..read.source import read_regular

STREAM_TYPES = {"cudaStream_t", "CUstream", "::cudaStream_t", "::CUstream"}
# stream constructors and the index of their flags argument (None: no flags, always blocking)
CREATORS = {"cudaStreamCreate": None, "cudaStreamCreateWithFlags": 1, "cudaStreamCreateWithPriority": 1,
            "cuStreamCreate": 1, "cuStreamCreateWithPriority": 1}
# Patterns searched over whole decoded files start with a literal and check the word boundary behind it
# (`cu(?<!\wcu)`, not `\b(cu...)`): `re` then jumps to the literal's occurrences instead of trying a Unicode
# `\b` at every position of the str (10-40x faster on cuda-samples; the same matches)
_CREATE_RX = re.compile(r"(cu(?<!\wcu)(?:" + "|".join(n[2:] for n in sorted(CREATORS, key=len, reverse=True))
                        + r"))\s*\(")
assert all(n.startswith("cu") for n in CREATORS)
_NON_BLOCKING = re.compile(r"\b(cudaStreamNonBlocking|CU_STREAM_NON_BLOCKING)\b|^\(?(0x0*1|1)[uU]?\)?$")
_PER_THREAD = re.compile(r"\b(cudaStreamPerThread|CU_STREAM_PER_THREAD)\b")
# host threads share the one legacy stream, so their work serializes on it
_THREADS = re.compile(r"std(?<!\wstd)\s*::\s*(thread|jthread|async)\b|pthread_create(?<!\wpthread_create)\s*\("
                      r"|#\s*pragma\s+omp\s+(parallel|task)\b")
# a literal that every match of the pattern holds (`_search_if`)
_PER_THREAD_WORDS = ("PerThread", "PER_THREAD")
_THREADS_WORDS = ("thread", "async", "omp")
_INCLUDE_RX = directive(rb'#[ \t]*include[ \t]*"([^"\n]+)"')  # at a line's start (linestart.py)
_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"[^"\\\n]*(?:\\.[^"\\\n]*)*"|\'[^\'\\\n]*(?:\\.[^\'\\\n]*)*\'', re.S)
MAX_HEADERS = 64
MAX_HEADER_BYTES = 2 << 20


@dataclass(frozen=True)
class StreamUse:
    """Why the legacy stream meets another blocking stream here: the first reason found (empty: it does not, as far
    as the source shows)."""

    reasons: tuple[str, ...] = field(default_factory=tuple)

    @property
    def meets_blocking(self) -> bool:
        return bool(self.reasons)


def _strip(text: str) -> str:
    """Comments and literals blanked (newlines kept), so that only code is searched."""
    return _COMMENT_OR_STRING.sub(lambda m: "\n".join(" " * len(x) for x in m.group(0).split("\n")), text)


def _call_args(text: str, open_paren: int) -> list[str] | None:
    """Top-level arguments of the call whose `(` is at `open_paren`; None when unbalanced."""
    depth, start, out = 0, open_paren + 1, []
    for i in range(open_paren, min(len(text), open_paren + 4000)):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                out.append(text[start:i])
                return [normalize(a) for a in out]
        elif ch == "," and depth == 1:
            out.append(text[start:i])
            start = i + 1
    return None


def _creation_reasons(code: str, where: str) -> list[str]:
    out = []
    for m in _CREATE_RX.finditer(code):
        name = m.group(1)
        args = _call_args(code, m.end() - 1)
        idx = CREATORS[name]
        if idx is not None and args is not None and idx < len(args) and _NON_BLOCKING.search(args[idx]):
            continue  # a non-blocking stream never synchronizes with the legacy stream
        line = code.count("\n", 0, m.start()) + 1
        out.append(f"{where}:{line} creates a blocking stream with `{name}`")
    return out


def _is_definition_parameter(param: ts.Node) -> bool:
    """A parameter of a function or lambda *definition* (not of a prototype or a function-pointer type)."""
    cur = param.parent
    if cur is None or cur.type != "parameter_list":
        return False
    cur = cur.parent
    while cur is not None and cur.type in ("function_declarator", "abstract_function_declarator", "pointer_declarator",
                                           "reference_declarator", "lambda_declarator"):
        if cur.parent is not None and cur.parent.type in ("function_definition", "lambda_expression"):
            return cur.type in ("function_declarator", "abstract_function_declarator", "lambda_declarator")
        cur = cur.parent
    return False


# `(parameter_declaration type: (_) @t) @p (optional_parameter_declaration type: (_) @t) @p
#  (field_declaration type: (_) @t) @f (declaration type: (_) @t) @d`, walked (parse/walk.py says why)
DECLARATION_PATTERNS = (
    walk.FieldPattern("parameter_declaration", "type", tag="p"),
    walk.FieldPattern("optional_parameter_declaration", "type", tag="p"),
    walk.FieldPattern("field_declaration", "type", tag="f"),
    walk.FieldPattern("declaration", "type", tag="d"),
)


def _parameter_name_offset(param: ts.Node) -> int | None:
    """Byte offset of a parameter declaration's name (where libclang locates the parameter), or None if unnamed."""
    d = param.child_by_field_name("declarator")
    while d is not None and d.type != "identifier":
        d = d.child_by_field_name("declarator") or next((c for c in d.named_children if c.type == "identifier"), None)
    return d.start_byte if d is not None else None


def _declaration_reasons(root: ts.Node, data: bytes, where: str, null_params: frozenset[int] = frozenset()) -> list[str]:
    out = []
    legacy: frozenset[int] | None = None  # legacy_params.legacy_only, computed when a declaration needs it

    def exempt(offsets: list[int | None]) -> bool:
        """Every declared name is the legacy stream (semantic mode's facts, or the file's own text)."""
        nonlocal legacy
        if not offsets or any(o is None for o in offsets):
            return False
        if all(o in null_params for o in offsets):
            return True
        if legacy is None:
            legacy = legacy_only(root, data)
        return all(o in null_params or o in legacy for o in offsets)

    for pat, x, tn in walk.field_matches(root, DECLARATION_PATTERNS):
        t = normalize(tn.text.decode("utf-8", "replace"))
        if t not in STREAM_TYPES:
            continue
        line = tn.start_point[0] + 1
        if pat.tag == "p":
            if _is_definition_parameter(x) and not exempt([_parameter_name_offset(x)]):
                out.append(f"{where}:{line} receives a stream as a parameter")
        elif pat.tag == "f":
            out.append(f"{where}:{line} holds a stream in a field")
        elif pat.tag == "d":
            d = x
            if d.parent is not None and d.parent.type in ("translation_unit", "declaration_list") \
                    and not exempt([_variable_name_offset(v) for v in d.children_by_field_name("declarator")]):
                out.append(f"{where}:{line} declares a file-scope stream")
    return out


def _variable_name_offset(d: ts.Node) -> int | None:
    """Byte offset of the name a file-scope declarator declares as a stream object (None: a pointer, array...)."""
    if d.type == "init_declarator":
        d = d.child_by_field_name("declarator")
    return d.start_byte if d is not None and d.type == "identifier" else None


def _search_if(rx: re.Pattern[str], code: str, *words: str) -> re.Match[str] | None:
    """`rx.search(code)` when one of the literal words every match of `rx` contains is in `code`: the `\\b`-led
    alternations scan slowly (0.3 s of a cuda-samples scan), a substring test does not."""
    return rx.search(code) if any(w in code for w in words) else None


def _text_reasons(code: str, where: str, first: bool) -> list[str]:
    """The reasons the code's text shows by itself (stream creation, the per-thread stream, host threads)."""
    reasons = _creation_reasons(code, where)
    if first and reasons:
        return reasons[:1]
    pt = _search_if(_PER_THREAD, code, *_PER_THREAD_WORDS)
    if pt is not None:
        reasons.append(f"{where}:{code.count(chr(10), 0, pt.start()) + 1} uses `{pt.group(1)}`")
    th = _search_if(_THREADS, code, *_THREADS_WORDS)
    if th is not None:
        reasons.append(f"{where}:{code.count(chr(10), 0, th.start()) + 1} runs host threads, which share the legacy stream")
    return reasons


# (bytes, where, first text reason) of the last buffer asked about: the engine's precheck and then the stream
# condition ask about the same file
_LAST_TEXT: list = [None, "", []]


def _first_text_reason(data: bytes, where: str) -> list[str]:
    if _LAST_TEXT[0] is not data or _LAST_TEXT[1] != where:
        _LAST_TEXT[:] = [data, where, _text_reasons(_strip(data.decode("utf-8", "replace")), where, True)]
    return list(_LAST_TEXT[2])


def analyse(data: bytes, root: ts.Node | None, where: str, first: bool = False,
            null_params: frozenset[int] = frozenset()) -> list[str]:
    """The reasons one buffer shows for blocking streams besides the legacy one; with `first`, only the first
    found (the text searches run before the tree walk, which parses a header that has no tree yet). `null_params`:
    offsets of stream parameters that semantic mode proves always hold the legacy stream (no reason)."""
    if first:
        reasons = _first_text_reason(data, where)
        if reasons:
            return reasons[:1]
    else:
        reasons = _text_reasons(_strip(data.decode("utf-8", "replace")), where, False)
    if not may_declare_streams(data):
        return reasons  # no stream type in the text: no declaration to find
    if root is None:
        root = parse_header(data).root_node
    reasons += _declaration_reasons(root, data, where, null_params)
    return reasons[:1] if first else reasons


def may_declare_streams(data: bytes) -> bool:
    """A declaration of a stream needs a type in STREAM_TYPES, whose text holds one of these words."""
    return b"cudaStream_t" in data or b"CUstream" in data


@lru_cache(maxsize=512)
def _header_facts(path: str, mtime_ns: int, size: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(reasons, included project headers) of one header, cached by path and stat."""
    try:
        data = read_regular(path, MAX_HEADER_BYTES)
    except OSError:
        return (), ()
    incs = tuple(m.group(1).decode("utf-8", "replace") for _, m in line_start_matches(_INCLUDE_RX, data))
    return tuple(analyse(data, None, Path(path).name, first=True)), incs


def _resolve_include(name: str, here: Path) -> Path | None:
    """`#include "x.h"` next to the including file, or up to three directories up (also in their include/)."""
    d = here
    for _ in range(4):
        for cand in (d / name, d / "include" / name):
            if os.path.isfile(cand):
                return cand
        if d.parent == d:
            break
        d = d.parent
    return None


def stream_use(ctx: FileContext) -> StreamUse:
    """Cached per file: the file itself plus the project headers it includes, transitively (bounded). The rules
    only ask whether there is a reason (`meets_blocking`), so the search stops at the first one found."""
    got = ctx.__dict__.get("_stream_use")
    if got is not None:
        return got
    data = ctx.source.data
    sem = getattr(ctx, "semantic", None)
    null_params = frozenset(getattr(sem.facts, "null_stream_params", ())) if sem is not None else frozenset()
    reasons = analyse(data, ctx.main.root, ctx.source.path.name, first=True, null_params=null_params)
    got = StreamUse(tuple(reasons or _header_reasons(data, ctx.source.path)))
    ctx.__dict__["_stream_use"] = got
    return got


def meets_blocking_before_parse(data: bytes, path: Path) -> bool | None:
    """`stream_use(ctx).meets_blocking` for the file `path` holding `data`, decided from its text and its headers
    before it is parsed; None when only its tree can tell (it names a stream type: a declaration may be a reason).
    The engine drops the rules that require `meets_blocking_streams: true` from a file where this is False, and
    does not parse a file that no other rule needs (a third of the parsed cuda-samples files)."""
    if _first_text_reason(data, path.name):
        return True
    if may_declare_streams(data):
        return None
    return bool(_header_reasons(data, path))


def _header_reasons(data: bytes, path: Path) -> list[str]:
    """The first reason found in the project headers that `data` (the file at `path`) includes, transitively."""
    reasons: list[str] = []
    seen: set[str] = set()  # real paths (os.path.realpath: Path.resolve raises RuntimeError on a symlink loop)
    todo = [(m.group(1).decode("utf-8", "replace"), path.parent) for _, m in line_start_matches(_INCLUDE_RX, data)]
    while todo and len(seen) < MAX_HEADERS and not reasons:
        name, here = todo.pop(0)
        try:
            p = _resolve_include(name, here)
        except OSError:
            p = None
        if p is None or os.path.realpath(p) in seen or os.path.realpath(p) == os.path.realpath(path):
            continue
        seen.add(os.path.realpath(p))
        try:
            st = p.stat()
        except OSError:
            continue
        more, incs = _header_facts(str(p), st.st_mtime_ns, st.st_size)
        reasons += more
        todo += [(i, p.parent) for i in incs]
    return reasons


file_cache(_header_facts.cache_clear)  # kept per path and stat for the process: a long-lived one clears it (core/stamps.py)
