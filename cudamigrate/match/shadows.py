"""Is a called name the CUDA API, or the project's own declaration of that name?

Legacy code loads the driver dynamically (`extern tcuCtxCreate *cuCtxCreate;` in a project header),
wraps the runtime in functions of the same name, or passes an API-named callable to a macro. A
signature or rename fix applied to such a call rewrites a user call into one that no longer
compiles, so the call and identifier matchers ask this module first.

A name is *shadowed* when the file or a project header it includes (`#include "..."`, followed
transitively from the including file's directory) declares it as a function, a variable or field
(e.g. a function pointer), a typedef, a class/struct/union/enum it defines (`struct double4 {...}` of an
OpenCL host header: CM511 must not rename it), or a macro, or when it is a parameter of the macro whose body
the call sits in. The shadow is *certain* (the finding is dropped) when the declaration is visible
unconditionally, or when no CUDA header reaches the file at all (then the name cannot be the API).
It is *uncertain* (the finding stays, its fix is withheld) when the declaration sits in a
preprocessor branch.

A file included by another (`mummer.cu` doing `#define ulong4 uint4` then `#include "kernel.cu"`) sees the
includer's macros defined before the include: a source of the same directory that includes the file and
defines the name first shadows it too (certain when every such includer defines it unconditionally; a definition
or `#include` in a branch nvcc's preprocessor never takes does not count, as match/ppenv.py decides it). Only
the directory's own sources are read, and only those whose bytes `#define` one of the names: the run's whole
include graph is not built for this.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import tree_sitter as ts

from ..parse import walk
from ..core.linestart import directive, line_start_matches
from ..core.stamps import file_cache
from ..parse.treesitter import MACRO_WRAP_PREFIX, Unit, parse_header, query
from .context import FileContext, node_text, normalize, scope_of
from .ppenv import Liveness, live_walk
from ..read.source import read_regular

_ANY_INCLUDE = directive(rb'#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]')  # at a line's start (linestart.py)
# toolkit headers that declare (or pull in) CUDA APIs
_CUDA_HEADER = re.compile(r"^(cuda|cu[a-z]|nv|npp|thrust/|cub/|cooperative_groups|sm_\d|device_|vector_|driver_|"
                          r"texture_|surface_|channel_descriptor|math_)")
# the sources of a directory that may include the scanned file (includer_macros)
_SOURCE_EXTS = {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx", ".inl"}
_MAX_SIBLINGS = 128
# toolkit headers that projects sometimes vendor into their own tree (`#include "cuda.h"`): a copy of one
# declares the API itself, never a shadow of it
_KNOWN_TOOLKIT = {"cuda.h", "cudaGL.h", "cudaEGL.h", "cudaVDPAU.h", "cudaProfiler.h", "cudaTypedefs.h",
                  "cuda_runtime.h", "cuda_runtime_api.h", "driver_types.h", "driver_functions.h", "vector_types.h",
                  "texture_types.h", "surface_types.h", "channel_descriptor.h", "cuda_fp16.h", "cuda_bf16.h",
                  "cuda_gl_interop.h", "cuda_egl_interop.h", "cuda_profiler_api.h", "cublas.h", "cublas_v2.h",
                  "cublas_api.h", "cublasLt.h", "cufft.h", "cufftXt.h", "cusparse.h", "cusparse_v2.h", "curand.h",
                  "curand_kernel.h", "cusolverDn.h", "cusolverSp.h", "cusolver_common.h", "nvrtc.h", "npp.h",
                  "nvjpeg.h", "nvml.h", "cooperative_groups.h", "device_functions.h", "sm_20_atomic_functions.h"}
_MAX_HEADERS = 64
_MAX_HEADER_BYTES = 4 << 20
_UNWRAP = ("init_declarator", "pointer_declarator", "reference_declarator", "array_declarator",
           "parenthesized_declarator", "attributed_declarator", "function_declarator")
_DECLS = ("(function_definition declarator: (_) @d) @x (declaration declarator: (_) @d) @x "
          "(field_declaration declarator: (_) @d) @x (type_definition declarator: (_) @d) @x "
          "(parameter_declaration declarator: (_) @d) @x")
_MACROS = "(preproc_def name: (_) @n) @x (preproc_function_def name: (_) @n) @x"
# the two queries above, walked (parse/walk.py says why)
DECL_PATTERNS = tuple(walk.FieldPattern(t, "declarator") for t in (
    "function_definition", "declaration", "field_declaration", "type_definition", "parameter_declaration"))
MACRO_PATTERNS = (walk.FieldPattern("preproc_def", "name"), walk.FieldPattern("preproc_function_def", "name"))
# `struct double4 { ... }`: a class, struct, union or enum the project defines (with a body: `struct double4 x;`
# and `struct double4;` name the toolkit's own struct where it is in view)
TYPE_PATTERNS = tuple(walk.FieldPattern(t, "name") for t in (
    "struct_specifier", "class_specifier", "union_specifier", "enum_specifier"))


@dataclass(frozen=True)
class Shadow:
    name: str
    kind: str  # function | variable | field | typedef | type | macro | parameter | macro-parameter
    where: str  # "file.h:12"
    certain: bool

    @property
    def reason(self) -> str:
        what = {"function": "a function", "variable": "a variable", "field": "a member", "typedef": "a type", "type": "a type",
                "macro": "a macro", "parameter": "a parameter", "macro-parameter": "a macro parameter",
                "overload": "a project overload that this call may resolve to"}[self.kind]
        return f"`{self.name}` is also declared as {what} at {self.where}; the call may not be the CUDA API"


@dataclass(frozen=True)
class _Decl:
    kind: str
    line: int
    conditional: bool
    function: int | None  # start of the enclosing function (locals and parameters), else None
    klass: int | None  # start of the enclosing class body (fields), else None
    start: int
    arity: tuple[int, int | None] | None = None  # functions: (required, most) parameters; None = unbounded


def _arity(d: ts.Node) -> tuple[int, int | None] | None:
    """(required, most) arguments a function declarator accepts (`...` makes most unbounded)."""
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    params = d.child_by_field_name("parameters") if d is not None else None
    if params is None:
        return None
    req, most = 0, 0
    for c in params.named_children:
        if c.type == "parameter_declaration":
            if normalize(node_text(c)) == "void" and len(params.named_children) == 1:
                return (0, 0)
            req += 1
            most += 1
        elif c.type == "optional_parameter_declaration":
            most += 1
        elif c.type == "variadic_parameter":
            return (req, None)
    if "..." in node_text(params):
        return (req, None)
    return (req, most)


def _declared_name(d: ts.Node) -> tuple[str, bool] | None:
    """(name, declares a function) of a declarator: `(*fp)(int)` declares the variable `fp`."""
    is_function = False
    first = True
    while d.type in _UNWRAP:
        if d.type == "function_declarator" and first:
            inner = d.child_by_field_name("declarator")
            is_function = inner is not None and inner.type in ("identifier", "field_identifier", "qualified_identifier")
        first = d.type == "init_declarator" and first
        nxt = d.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in d.named_children if c.type.endswith("declarator") or c.type.endswith("identifier")), None)
        if nxt is None:
            return None
        d = nxt
    if d.type in ("identifier", "field_identifier", "type_identifier"):
        return node_text(d), is_function
    return None


def _guard_or_linkage(node: ts.Node) -> bool:
    """Include guards (`#ifndef HDR_H` or `#if !defined(HDR_H)`, then `#define HDR_H`) and `#ifdef __cplusplus`
    do not make code conditional."""
    if node.type == "preproc_ifdef":
        name = node.child_by_field_name("name")
        if name is None:
            return False
        guard = node_text(name)
        if guard == "__cplusplus":
            return True
        cond_end = name.end_byte
    elif node.type == "preproc_if":
        cond = node.child_by_field_name("condition")
        mo = re.fullmatch(r"\s*!\s*defined\s*\(?\s*(\w+)\s*\)?\s*", node_text(cond)) if cond is not None else None
        if mo is None:
            return False
        guard, cond_end = mo.group(1), cond.end_byte
    else:
        return False
    first = next((c for c in node.named_children if c.type != "comment" and c.start_byte >= cond_end), None)
    if first is not None and first.type == "preproc_def":
        n2 = first.child_by_field_name("name")
        return n2 is not None and node_text(n2) == guard
    return False


def _conditional(node: ts.Node) -> bool:
    cur = node.parent
    while cur is not None:
        if cur.type in ("preproc_if", "preproc_ifdef", "preproc_elif", "preproc_else", "preproc_elifdef") \
                and not _guard_or_linkage(cur):
            return True
        cur = cur.parent
    return False


def _enclosing(node: ts.Node, types: tuple[str, ...]) -> ts.Node | None:
    cur = node.parent
    while cur is not None:
        if cur.type in types:
            return cur
        cur = cur.parent
    return None


def declarations(root: ts.Node, names: set[str], local: bool) -> dict[str, list[_Decl]]:
    """Declarations of `names` in one tree. `local`: keep function-local ones (the scanned file itself)."""
    out: dict[str, list[_Decl]] = {}
    for _, x, d in walk.field_matches(root, DECL_PATTERNS):
        got = _declared_name(d)
        if got is None or got[0] not in names:
            continue
        name, is_function = got
        if _enclosing(x, ("namespace_definition",)) is not None:
            continue  # my::cudaMalloc never hides ::cudaMalloc
        fn = scope_of(x).function if x.type != "function_definition" else None
        if x.type == "parameter_declaration":
            fn = _enclosing(x, ("function_definition", "lambda_expression"))
            if fn is None:
                continue  # a parameter of a prototype names nothing outside it
            kind = "parameter"
        elif x.type == "type_definition":
            kind = "typedef"
        elif x.type == "field_declaration":
            kind = "field" if not is_function else "function"
        else:
            kind = "function" if is_function else "variable"
        if fn is not None and not local:
            continue
        klass = None
        if x.type == "field_declaration":
            body = _enclosing(x, ("field_declaration_list",))
            klass = body.start_byte if body is not None else None
            if klass is None:
                continue
        elif _enclosing(x, ("field_declaration_list",)) is not None:
            continue  # a method defined in a class body: called as obj.f() or inside the class only
        out.setdefault(name, []).append(_Decl(kind, x.start_point[0] + 1, _conditional(x),
                                              fn.start_byte if fn is not None else None, klass, x.start_byte,
                                              _arity(d) if kind == "function" else None))
    for _, x, nn in walk.field_matches(root, TYPE_PATTERNS):
        n = node_text(nn)
        if n not in names or x.child_by_field_name("body") is None or _enclosing(x, ("namespace_definition",)) is not None:
            continue
        fn = scope_of(x).function
        if fn is not None and not local:
            continue
        out.setdefault(n, []).append(_Decl("type", x.start_point[0] + 1, _conditional(x),
                                           fn.start_byte if fn is not None else None, None, x.start_byte))
    for _, x, nn in walk.field_matches(root, MACRO_PATTERNS):
        n = node_text(nn)
        if n in names:
            v = x.child_by_field_name("value")
            if x.type == "preproc_def" and v is not None and re.fullmatch(
                    rf"\s*\(?\s*{re.escape(n)}_v\d+\s*\)?\s*", node_text(v)):
                continue  # `#define cuCtxCreate cuCtxCreate_v2`: a versioned spelling of the API itself
            out.setdefault(n, []).append(_Decl("macro", x.start_point[0] + 1, _conditional(x), None, None, x.start_byte))
    return out


_HEADER_CACHE: dict[tuple[str, int, int], tuple[bytes, ts.Tree | None]] = {}


def read_header(path: Path) -> tuple[bytes, ts.Tree | None] | None:
    """Bytes and (lazily) parse tree of a project header, cached by path, size and mtime."""
    try:
        st = path.stat()
    except OSError:
        return None
    if st.st_size > _MAX_HEADER_BYTES:
        return None
    key = (str(path), st.st_size, st.st_mtime_ns)
    got = _HEADER_CACHE.get(key)
    if got is None:
        try:
            data = read_regular(path)
        except OSError:
            return None
        if len(_HEADER_CACHE) > 512:
            _HEADER_CACHE.clear()
        got = _HEADER_CACHE[key] = (data, None)
    return got


def header_tree(path: Path, data: bytes) -> ts.Tree:
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    got = _HEADER_CACHE.get(key)
    if got is not None and got[1] is not None:
        return got[1]
    tree = parse_header(data)
    _HEADER_CACHE[key] = (data, tree)
    return tree


@lru_cache(maxsize=1)
def _toolkit_names() -> frozenset[str]:
    """Base names of the toolkit's own headers (the installed toolkit's include directory, and a fixed list)."""
    names = set(_KNOWN_TOOLKIT)
    try:
        from ..core.toolkit import cuda_home

        home = cuda_home()
        if home is not None:
            names |= {p.name for p in (home / "include").glob("*.h")}
    except Exception:  # no toolkit here: the fixed list is enough
        pass
    return frozenset(names)


def included_headers(path: Path, data: bytes) -> tuple[list[Path], bool]:
    """Project headers reached by `#include` from `path` (transitively, breadth first), and whether any
    toolkit header (`<cuda.h>`, `<cublas_v2.h>`, ...) is included on the way.

    A header is followed when it exists next to the including file or next to `path` (the directories
    a compiler searches first for `"..."`, and the usual `-I.` for `<...>`)."""
    seen: list[Path] = []
    cuda = False
    root = Path(os.path.realpath(path))
    todo = [(root.parent, data)]
    while todo and len(seen) < _MAX_HEADERS:
        base, text = todo.pop(0)
        for _, mo in line_start_matches(_ANY_INCLUDE, text):
            inc = mo.group(2).decode("utf-8", "replace")
            p = next((d / inc for d in (base, root.parent) if os.path.isfile(d / inc)), None)
            if p is not None and Path(inc).name in _toolkit_names():
                cuda = True  # a vendored copy of a toolkit header declares the API itself
                continue
            if p is None:
                if _CUDA_HEADER.match(inc) or "cuda" in inc.lower():  # a toolkit header, or a helper that likely wraps one
                    cuda = True
                continue
            p = Path(os.path.realpath(p))
            if p in seen or p == root:
                continue
            got = read_header(p)
            if got is None:
                continue
            seen.append(p)
            todo.append((p.parent, got[0]))
    return seen, cuda


_CONDITIONAL = re.compile(rb"^[ \t]*#[ \t]*(?:if|elif|else)", re.M)  # a file whose every line is live has none


def _line_of(data: bytes, pos: int) -> int:
    return data.rfind(b"\n", 0, pos) + 1


def _beside(includer: str, name: str, quoted: bool) -> str | None:
    """`#include "name"` as includer_macros resolves it: next to the including file (toolkit and system headers,
    `<...>`, are not the project's)."""
    if not quoted:
        return None
    cand = os.path.normpath(os.path.join(os.path.dirname(includer), name))
    return cand if os.path.isfile(cand) else None


_LISTINGS: dict[tuple[str, int, int], tuple[tuple[str, Path, bool], ...]] = {}
file_cache(_HEADER_CACHE.clear)
file_cache(_LISTINGS.clear)


def _sources_of(d: Path) -> tuple[tuple[str, Path, bool], ...]:
    """The first `_MAX_SIBLINGS` entries of directory `d` by name, each (name, path, is a regular file), kept for
    the process by the directory's inode and mtime as `read_header` keeps files: every file of a directory with
    shadow candidates asks for the same listing (an entry added, removed or renamed changes the mtime). A
    long-lived process clears it with the others of core/stamps.py (the editor server, at each new project
    index), which also covers a filesystem whose coarse times miss a change."""
    try:
        st = os.stat(d)
    except OSError:
        return ()
    key = (str(d), st.st_ino, st.st_mtime_ns)
    got = _LISTINGS.get(key)
    if got is None:
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)[:_MAX_SIBLINGS]
        except OSError:
            return ()
        out = []
        for e in entries:
            try:
                is_file = e.is_file()
            except OSError:  # a symlink loop, a vanished entry: not an includer
                is_file = False
            out.append((e.name, Path(e.path), is_file))
        if len(_LISTINGS) >= 256:
            _LISTINGS.clear()
        got = _LISTINGS[key] = tuple(out)
    return got


def includer_macros(path: Path, names: set[str], live: Callable[[Path, bytes], Liveness] | None = None
                    ) -> dict[str, list[tuple[str, _Decl]]]:
    """Macros of `names` that sources of `path`'s directory define before their `#include` of `path`: what a
    file included by another sees (legacy code includes a kernel `.cu` after `#define ulong4 uint4`). A
    definition counts as unconditional only when every includer makes it so. With `live` (the preprocessor
    model's walk of an includer: `live_directives`), as for token-pasting macros (read/project_index.py): a
    `#define` or the `#include` of `path` in a branch the preprocessor never takes does not count, and one in a
    branch it always takes is unconditional."""
    entries = _sources_of(path.parent)
    if not entries:
        return {}
    define = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+(" + b"|".join(re.escape(n.encode()) for n in sorted(names))
                        + rb")\b", re.M)
    me = Path(os.path.realpath(path))
    per: list[tuple[str, dict[str, list[_Decl]]]] = []  # (includer's name, its macros of `names` before the include)
    mine = os.fsencode(path.name)  # a name that is not UTF-8 (surrogate-escaped) is matched as its bytes
    for name, sib, is_file in entries:
        if sib.suffix not in _SOURCE_EXTS or name == path.name or not is_file:
            continue
        got = read_header(sib)
        if got is None or mine not in got[0]:
            continue
        data = got[0]
        states = (live(sib, data).get(str(sib), {}) if live is not None and _CONDITIONAL.search(data) else {})
        at = next((mo.start() for ls, mo in line_start_matches(_ANY_INCLUDE, data)
                   if os.path.basename(mo.group(2)) == mine and states.get(ls) is not False
                   and Path(os.path.realpath(sib.parent / os.fsdecode(mo.group(2)))) == me), None)
        if at is None:
            continue
        macros: dict[str, list[_Decl]] = {}
        if define.search(data, 0, at):
            for n, ds in declarations(header_tree(sib, data).root_node, names, local=False).items():
                ms = [d if not d.conditional or states.get(_line_of(data, d.start)) is not True
                      else replace(d, conditional=False)
                      for d in ds if d.kind == "macro" and d.start < at and states.get(_line_of(data, d.start)) is not False]
                if ms:
                    macros[n] = ms
        per.append((sib.name, macros))
    out: dict[str, list[tuple[str, _Decl]]] = {}
    for name, macros in per:
        for n, ds in macros.items():
            everywhere = all(any(not d.conditional for d in other.get(n, [])) for _, other in per)
            out.setdefault(n, []).extend((name, d if everywhere else replace(d, conditional=True)) for d in ds)
    return out


@dataclass
class ShadowIndex:
    """The declarations of API names that a file can see, computed once per file."""

    local: dict[str, list[_Decl]]  # the file's own (with function-local scopes)
    headers: dict[str, list[tuple[str, _Decl]]]  # included project headers: name -> [(file name, decl)]
    cuda_visible: bool
    path_name: str


def build_index(ctx: FileContext, names: set[str]) -> ShadowIndex:
    src = ctx.source
    data = src.data
    path = src.path
    local = declarations(ctx.main.root, names, local=True)
    headers: dict[str, list[tuple[str, _Decl]]] = {}
    word = re.compile(rb"\b(" + b"|".join(re.escape(n.encode()) for n in sorted(names)) + rb")\b") if names else None
    try:
        incs, cuda = included_headers(path, data) if path.is_file() else ([], False)
    except OSError:
        incs, cuda = [], False
    cuda = cuda or ctx.is_cuda_file  # nvcc includes cuda_runtime.h into .cu files
    if word is not None:
        for p in incs:
            got = read_header(p)
            if got is None or not word.search(got[0]):
                continue
            for n, ds in declarations(header_tree(p, got[0]).root_node, names, local=False).items():
                headers.setdefault(n, []).extend((p.name, d) for d in ds)
        if path.is_file():
            def live(sib: Path, text: bytes) -> Liveness:
                return live_walk(sib, ctx.target, ctx.command_defines(sib))(str(sib), text, _beside)

            for n, ds2 in includer_macros(path, names, live).items():
                headers.setdefault(n, []).extend(ds2)
    return ShadowIndex(local, headers, cuda, path.name)


def _macro_parameters(ctx: FileContext, unit: Unit) -> set[str]:
    if not unit.in_macro:
        return set()
    pos = unit.base
    for _, caps in ts.QueryCursor(query("(preproc_function_def parameters: (_) @p value: (_) @v) @x")).matches(ctx.main.root):
        v = caps["v"][0]
        if v.start_byte == pos + len(MACRO_WRAP_PREFIX):
            return {node_text(c) for c in caps["p"][0].named_children if c.type == "identifier"}
    return set()


def shadow_of(ctx: FileContext, unit: Unit, hit: ts.Node, names: set[str], argc: int | None = None) -> Shadow | None:
    """The project declaration that `hit` (an unqualified identifier) may denote instead of the API.
    `argc`: the call's argument count (None when `hit` is not called), to tell overloads apart."""
    name = node_text(hit)
    if name in _macro_parameters(ctx, unit):
        return Shadow(name, "macro-parameter", f"{ctx.source.path.name} (macro {unit.macro_name})", True)
    idx = ctx.__dict__.get("_shadow_index")
    if idx is None or name not in idx[0]:
        wanted = set(ctx.api_names) | set(names) | {name}
        idx = ctx.__dict__["_shadow_index"] = (wanted, build_index(ctx, wanted))
    idx = idx[1]
    at = hit.start_byte
    fn = scope_of(hit).function if not unit.in_macro else None
    found: list[Shadow] = []
    for d in idx.local.get(name, []):
        if d.function is not None:
            if unit.in_macro or fn is None or fn.start_byte != d.function or d.start > at:
                continue
        if d.klass is not None:
            body = _enclosing(hit, ("field_declaration_list",))
            if unit.in_macro or body is None or body.start_byte != d.klass:
                continue
        if d.kind == "function":
            continue  # the matchers' own `defined_functions` check handles these (same result, no need twice)
        found.append(Shadow(name, d.kind, f"{idx.path_name}:{d.line}", not d.conditional or not idx.cuda_visible))
    for fname, d in idx.headers.get(name, []):
        if d.klass is not None:
            continue
        if d.kind == "function" and idx.cuda_visible:
            # with the toolkit's declaration in sight a project function of that name is an overload, not a
            # replacement: a call it cannot take is the API's; one it can take is undecided (fix withheld)
            if argc is None or (d.arity is not None and not (d.arity[0] <= argc and (d.arity[1] is None or argc <= d.arity[1]))):
                continue
            found.append(Shadow(name, "overload", f"{fname}:{d.line}", False))
            continue
        found.append(Shadow(name, d.kind, f"{fname}:{d.line}", not d.conditional or not idx.cuda_visible))
    if not found:
        return None
    found.sort(key=lambda s: (not s.certain, s.where))
    return found[0]
