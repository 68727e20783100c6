"""Semantic mode, front end: the facts libclang knows about each project file.

Semantic mode runs the same YAML rules as tree-sitter mode; libclang, run with
the project's real compile flags, supplies what text cannot tell:

  * the resolved callee of every call in project code (user functions and
    methods that merely share a CUDA API's name are dropped; `using namespace`,
    aliases and ADL come out resolved, also when declared in headers),
  * the evaluated value of each argument where it is constant: `cudaStream_t s = 0;`
    never written again, `constexpr` / `const` globals, macros, casts, default
    arguments of the API, and default parameters of user wrappers whose every
    call in the TU leaves them defaulted,
  * the canonical record type of a member access's receiver (typedef'd and
    referenced `cudaDeviceProp`),
  * calls expanded from macros (a finding per macro *use*, pointing at the use).

This module holds the picklable facts (`FileFacts`, shipped to worker processes)
and the extractor that walks one translation unit's cursors to compute them.
Parsing TUs, the precompiled-preamble cache and the project database are in
`parse/clang_db.py`; how the matchers consult the facts is `match/semantic.py`.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable

# --------------------------------------------------------------------------- facts (picklable)


@dataclass
class ArgFact:
    value: int | None = None  # integer / pointer constant value, None when unknown
    start: int | None = None  # spelling offset in the fact's file when spelled there at the call/use site
    text: str | None = None
    default: bool = False  # supplied by a default argument
    in_body: bool = False  # spelled inside a macro body


@dataclass
class CallFact:
    callee: str  # qualified name, inline/anonymous namespaces dropped
    api: bool  # declared in a toolkit/system header, not by the project
    args: list[ArgFact] = field(default_factory=list)
    launch: bool = False
    # macro expansions: the macro use in this file
    macro: str | None = None
    use_range: tuple[int, int] | None = None
    body_file: str | None = None
    body_offset: int | None = None  # callee token in the macro body


@dataclass
class DeprecatedUse:
    """A reference, in project code, to a declaration the headers mark deprecated or unavailable."""

    name: str  # qualified name of the declaration
    end: int  # end offset of the referencing name in this file
    kind: str  # "deprecated" | "unavailable"
    message: str  # the attribute's message ("" when it has none)
    header: str  # real path of the declaring header
    line: int  # line of the declaration in it


# FileFacts.keywords() holds this when the file has a DeprecatedUse: the keyword of the rule that reports them
# (rules/removals/CM590-header-deprecated-declaration.yaml), which no source text contains
DEPRECATED_KEYWORD = "__cudamigrate_header_deprecated__"


@dataclass
class FileFacts:
    path: str
    digest: str
    tu: str
    calls: dict[int, CallFact] = field(default_factory=dict)  # callee-name token offset -> fact
    expansions: list[CallFact] = field(default_factory=list)  # calls expanded from macros used here
    members: dict[int, str] = field(default_factory=dict)  # member-name end offset -> receiver record
    refs: dict[int, tuple[str, bool]] = field(default_factory=dict)  # identifier offset -> (decl name, api)
    expanded_bodies: dict[int, int] = field(default_factory=dict)  # callee offset in a #define body -> uses
    # name offsets of stream parameters (of function definitions) that every call in the TU passes the legacy
    # stream (0 or cudaStreamLegacy): the legacy stream itself, no other stream (match/streams.py)
    null_stream_params: set[int] = field(default_factory=set)
    # name offset -> a use of a declaration its header marks deprecated/unavailable (toolkit and system headers)
    deprecated: dict[int, DeprecatedUse] = field(default_factory=dict)

    def keywords(self) -> set[str]:
        out = {c.callee.split("::")[-1] for c in self.calls.values() if c.api}
        out |= {c.callee.split("::")[-1] for c in self.expansions if c.api}
        if self.deprecated:
            out.add(DEPRECATED_KEYWORD)
        return out

    @property
    def has_launch(self) -> bool:
        return any(c.launch for c in self.expansions)


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


# --------------------------------------------------------------------------- extraction

_IDENT = re.compile(rb"[A-Za-z_]\w*")
_CAST_KINDS = {"UNEXPOSED_EXPR", "PAREN_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_REINTERPRET_CAST_EXPR",
               "CXX_FUNCTIONAL_CAST_EXPR", "CXX_CONST_CAST_EXPR"}
_WRITE_PARENTS_OK = {"UNEXPOSED_EXPR", "MEMBER_REF_EXPR", "ARRAY_SUBSCRIPT_EXPR"}
_TOOLKIT_HEADERS = ("cuda_runtime_api.h", "cuda.h", "cublas_api.h", "cublas_v2.h", "cublas.h", "nvrtc.h", "cufft.h",
                    "curand.h", "cusparse.h", "cusolverDn.h", "cudnn.h", "nccl.h", "thrust", "cub", "cuda")
_TOOLKIT_MARKERS = ("/site-packages/nvidia/", "/dist-packages/nvidia/", "/usr/local/cuda", "/opt/nvidia/", "/nvhpc/",
                    "/include/c++/", "/usr/include/", "/usr/lib/llvm", "/lib/clang/")


@lru_cache(maxsize=256)
def _toolkit_dirs(include_dirs: tuple[str, ...]) -> tuple[str, ...]:
    """The -I directories that hold a toolkit's headers (once per include list, not per TU: ~15 stat calls each)."""
    return tuple(os.path.realpath(d) + os.sep for d in include_dirs
                 if any(os.path.exists(os.path.join(d, h)) for h in _TOOLKIT_HEADERS))


class Extractor:
    def __init__(self, ci, tu, main: Path, cuda_path: str, include_dirs: Iterable[str] = ()):
        self.ci = ci
        self.tu = tu
        self.K = ci.CursorKind
        self.main = str(main)
        self.cuda_path = os.path.realpath(cuda_path)
        # -I directories that hold a toolkit's headers (vendored or pip-installed CUDA libraries)
        self.toolkit_dirs = _toolkit_dirs(tuple(include_dirs))
        self.lib = ci.conf.lib
        self.files: dict[str, FileFacts] = {}
        self.written: set[tuple] = set()
        self.calls_to: dict[tuple, list] = {}
        self.fn_refs: dict[tuple, int] = {}  # function declaration -> DeclRefExprs naming it (calls included)
        self.fn_escaped: set[tuple] = set()  # functions whose address is taken (`&f`, `&S::m`)
        self.pending: list[tuple] = []  # (call cursor, is_launch, config cursor)
        self.stream_params: list = []  # PARM_DECL cursors of a stream type in project code
        self.sys_cache: dict[str, bool] = {}
        self.src_cache: dict[str, bytes] = {}
        self.real_cache: dict[str, str] = {}
        self.ptr_cache: dict[int, str] = {}
        self.skip_cache: dict[str, bool] = {}
        # memos per declaration (keyed by the Decl pointer inside the cursor): the same declarations are
        # referenced thousands of times, and each answer costs several calls into libclang
        self.qual_cache: dict[tuple, str] = {}
        self.api_cache: dict[tuple, bool] = {}
        self.key_cache: dict[tuple, tuple] = {}
        self.where_cache: dict[tuple, tuple[str | None, int]] = {}
        self.avail_cache: dict[tuple, tuple[str, str, str, int] | None] = {}
        self._platform_availability = None
        self._get_cstring = None
        self._setup_fast_calls()

    def _setup_fast_calls(self) -> None:
        """Cursor kinds as ints and private ctypes handles for the hot calls.

        Why: a cursor walk in Python spends most of its time in the bindings' conveniences (`Cursor.kind`
        builds an enum through a dict, `get_children` defines a closure and a callback per node, every
        location call allocates four ctypes out-parameters). Comparing `_kind_id` ints, one callback object
        for every child list and reused out-parameters keep the same walk, in the same order, at about half
        the CPU (docs/semantic-mode.md).
        """
        import ctypes

        ci = self.ci
        K = self.K
        self.k_call = K.CALL_EXPR.value
        self.k_dref = K.DECL_REF_EXPR.value
        self.k_tref = K.TYPE_REF.value
        self.k_mref = K.MEMBER_REF_EXPR.value
        self.k_unexposed = K.UNEXPOSED_EXPR.value
        self.k_vars = {K.VAR_DECL.value, K.PARM_DECL.value}
        self.k_funcs = {K.FUNCTION_DECL.value, K.CXX_METHOD.value, K.FUNCTION_TEMPLATE.value}
        self.k_parm = K.PARM_DECL.value
        self.k_write_ok = {getattr(K, n).value for n in _WRITE_PARENTS_OK}
        self.t_dependent = ci.TypeKind.DEPENDENT.value
        # `lib[name]` makes a new function object: its argtypes are ours alone (an out-pointer read as an int)
        self._locfn = {}
        for name in ("clang_getSpellingLocation", "clang_getFileLocation", "clang_getExpansionLocation"):
            fn = self.lib[name]
            fn.argtypes = [ci.SourceLocation, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint),
                           ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint)]
            fn.restype = None
            self._locfn[name] = fn
        self._f, self._line, self._col, self._off = ctypes.c_void_p(), ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
        self._outs = (ctypes.byref(self._f), ctypes.byref(self._line), ctypes.byref(self._col), ctypes.byref(self._off))
        tu = self.tu

        def visit(child, _parent, out):
            child._tu = tu  # keeps the TU alive, as the bindings' own get_children does
            out.append(child)
            return 1  # CXChildVisit_Continue

        # the bindings name the callback type `cursor_visit_callback` (libclang-ng 22), `callbacks[...]` before
        cb_type = getattr(ci, "cursor_visit_callback", None) or ci.callbacks["cursor_visit"]
        self._visit_cb = cb_type(visit)
        self._visit_children = self.lib.clang_visitChildren

    def children(self, c) -> list:
        """`list(c.get_children())`, without a new closure and callback object per call."""
        out: list = []
        self._visit_children(c, self._visit_cb, out)
        return out

    # -- locations
    def _loc(self, fn: str, sl) -> tuple[str | None, int]:
        f = self._f
        f.value = None
        self._locfn[fn](sl, *self._outs)
        ptr = f.value
        if not ptr:
            return None, 0
        real = self.ptr_cache.get(ptr)
        if real is None:
            import ctypes

            real = self.ptr_cache[ptr] = self.real(self.ci.File(ctypes.cast(ptr, self.ci.c_object_p)).name)
        return real, self._off.value

    def real(self, raw: str) -> str:
        real = self.real_cache.get(raw)
        if real is None:
            real = self.real_cache[raw] = os.path.realpath(raw)
        return real

    def spelling(self, sl):
        return self._loc("clang_getSpellingLocation", sl)

    def expansion(self, sl):
        return self._loc("clang_getExpansionLocation", sl)

    def is_toolkit_file(self, name: str | None) -> bool:
        if name is None:
            return True
        hit = self.sys_cache.get(name)
        if hit is None:
            hit = (name.startswith(self.cuda_path) or name.startswith(self.toolkit_dirs)
                   or any(m in name for m in _TOOLKIT_MARKERS))
            self.sys_cache[name] = hit
        return hit

    def facts(self, path: str) -> FileFacts:
        ff = self.files.get(path)
        if ff is None:
            try:
                data = Path(path).read_bytes()
            except OSError:
                data = b""
            self.src_cache[path] = data
            ff = self.files[path] = FileFacts(path=path, digest=digest(data), tu=self.main)
        return ff

    # -- names
    @staticmethod
    def _memo_key(decl) -> tuple:
        """Identity of a declaration cursor: its kind and the Decl pointer (one per declaration, also per
        template instantiation, so memoized answers are exactly the uncached ones)."""
        return (decl._kind_id, decl.data[0])

    def qualified(self, decl) -> str:
        key = self._memo_key(decl)
        got = self.qual_cache.get(key)
        if got is None:
            got = self.qual_cache[key] = self._qualified(decl)
        return got

    def _qualified(self, decl) -> str:
        parts = []
        cur = decl
        K = self.K
        while cur is not None and cur.kind != K.TRANSLATION_UNIT:
            if cur.kind == K.NAMESPACE:
                if cur.spelling and not self.lib.clang_Cursor_isInlineNamespace(cur):
                    parts.append(cur.spelling)
            elif cur.kind in (K.LINKAGE_SPEC,):
                pass
            elif cur.spelling:
                parts.append(cur.spelling)
            cur = cur.semantic_parent
        return "::".join(reversed(parts))

    def decl_is_api(self, decl) -> bool:
        key = self._memo_key(decl)
        got = self.api_cache.get(key)
        if got is None:
            got = self.api_cache[key] = self._decl_is_api(decl)
        return got

    def _decl_is_api(self, decl) -> bool:
        loc = decl.location
        if loc.file is None:
            return True  # builtins
        if loc.is_in_system_header:
            return True
        return self.is_toolkit_file(self.real(loc.file.name))

    def decl_key(self, decl) -> tuple:
        key = self._memo_key(decl)
        got = self.key_cache.get(key)
        if got is None:
            loc = decl.location
            got = self.key_cache[key] = (loc.file.name if loc.file else None, loc.offset, decl.spelling)
        return got

    # -- walking
    def run(self) -> dict[str, FileFacts]:
        K = self.K
        for top in self.tu.cursor.get_children():
            if top.kind in (K.MACRO_INSTANTIATION, K.MACRO_DEFINITION, K.INCLUSION_DIRECTIVE):
                continue
            loc = top.location
            f, _ = self.expansion(loc)  # one C call, file path cached by pointer
            if f is None:
                continue
            skip = self.skip_cache.get(f)
            if skip is None:
                skip = self.skip_cache[f] = bool(loc.is_in_system_header) or self.is_toolkit_file(f)
            if not skip:
                self.walk(top)
        for call, is_launch, cfg in self.pending:
            try:
                self.record_call(call, is_launch, cfg)
            except Exception:  # one odd AST node must not lose the TU
                continue
        for p in self.stream_params:
            try:
                self.record_stream_param(p)
            except Exception:
                continue
        return self.files

    def _is_stream_type(self, t) -> bool:
        """`cudaStream_t` / `CUstream` (both `CUstream_st *`), through typedefs and const."""
        t = t.get_canonical()
        if t.kind != self.ci.TypeKind.POINTER:
            return False
        return t.get_pointee().get_canonical().spelling.replace("const ", "").strip() in ("CUstream_st", "struct CUstream_st")

    def record_stream_param(self, p) -> None:
        """A stream parameter that every call in the TU passes the legacy stream (0, or 1: cudaStreamLegacy)."""
        f, off = self.spelling(p.location)
        if f is None or self.is_toolkit_file(f) or self.expansion(p.location)[0] != f:
            return
        if self.param_value(p, 0) in (0, 1):
            self.facts(f).null_stream_params.add(off)

    def walk(self, root) -> None:
        """Every cursor under `root`, depth first, last child first (the order decides which of two facts at one
        offset is kept, so it is the order of the original `get_children` walk)."""
        k_call, k_dref, k_tref, k_mref, k_unexposed = self.k_call, self.k_dref, self.k_tref, self.k_mref, self.k_unexposed
        k_vars, k_write_ok, t_dependent, k_parm = self.k_vars, self.k_write_ok, self.t_dependent, self.k_parm
        children = self.children
        stack = [(root, None)]
        while stack:
            c, parent_kind = stack.pop()
            k = c._kind_id
            kids = children(c)
            if k == k_call:
                cfg = None
                for ch in kids:
                    inner = ch
                    while inner._kind_id == k_unexposed:
                        sub = children(inner)
                        if len(sub) != 1:
                            break
                        inner = sub[0]
                    if inner._kind_id == k_call and inner.spelling == "__cudaPushCallConfiguration":
                        cfg = inner
                        break
                if c.spelling != "__cudaPushCallConfiguration":
                    self.pending.append((c, cfg is not None, cfg))
                    ref = c.referenced
                    if ref is not None:
                        self.calls_to.setdefault(self.decl_key(ref), []).append(c)
            elif k == k_dref:
                ref = c.referenced
                if ref is not None and ref._kind_id in k_vars and parent_kind not in k_write_ok:
                    self.written.add(self.decl_key(ref))
                elif ref is not None and ref._kind_id in self.k_funcs:
                    # every mention of a function: more mentions than calls, or one under `&`, and the function
                    # may be called through a pointer with any argument (param_value then knows nothing)
                    fkey = self.decl_key(ref)
                    self.fn_refs[fkey] = self.fn_refs.get(fkey, 0) + 1
                    if parent_kind not in (k_call, k_unexposed):
                        self.fn_escaped.add(fkey)
                self.record_ref(c, ref)
            elif k == k_tref:
                self.record_ref(c, c.referenced)
            elif k == k_mref or (k == k_unexposed and c.type._kind_id == t_dependent):
                self.record_member(c)
            elif k == k_parm and self._is_stream_type(c.type):
                self.stream_params.append(c)
            for ch in kids:
                stack.append((ch, k))

    def record_ref(self, c, ref) -> None:
        if ref is None:
            return
        f, off = self.spelling(c.location)
        if f is None or self.is_toolkit_file(f):
            return
        ef, _ = self.expansion(c.location)
        if ef != f:
            return
        if self._implicit_at(ref, f, off):
            return
        ff = self.facts(f)
        if off not in ff.deprecated and ref.kind != self.K.OVERLOADED_DECL_REF:
            self.record_availability(ff, ref, off, c)
        if off in ff.refs:
            return
        if ref.kind == self.K.OVERLOADED_DECL_REF:
            decls = self.overloaded_decls(ref)
            names = {self.qualified(d) for d in decls}
            apis = {self.decl_is_api(d) for d in decls}
            if len(names) == 1 and len(apis) == 1:  # none: an undeclared (e.g. removed) name
                ff.refs[off] = (names.pop(), apis.pop())
            return
        ff.refs[off] = (self.qualified(ref), self.decl_is_api(ref))

    def record_availability(self, ff: FileFacts, decl, off: int, use) -> None:
        """A use of a toolkit/system declaration that its header marks deprecated or unavailable."""
        if not self.decl_is_api(decl):
            return
        key = self._memo_key(decl)
        if key in self.avail_cache:
            got = self.avail_cache[key]
        else:
            got = self.avail_cache[key] = self._availability(decl)
        if got is None:
            return
        kind, message, header, line = got
        text = self.src_cache.get(ff.path, b"")
        mo = _IDENT.match(text, off)
        end = mo.end() if mo else off
        ff.deprecated[off] = DeprecatedUse(self.qualified(decl), end, kind, message, header, line)

    def _availability(self, decl) -> tuple[str, str, str, int] | None:
        """(kind, message, header, line) when the declaration is deprecated or unavailable, else None."""
        avail = self.lib.clang_getCursorAvailability(decl)
        if avail not in (1, 2):  # CXAvailability_Deprecated, CXAvailability_NotAvailable
            return None
        kind = "deprecated" if avail == 1 else "unavailable"
        message = self._availability_message(decl, kind)
        loc = decl.location
        header = self.real(loc.file.name) if loc.file is not None else "<built-in>"
        return kind, message, header, loc.line

    def _availability_message(self, decl, kind: str) -> str:
        """The attribute's message (`__attribute__((deprecated("use X")))`), through
        clang_getCursorPlatformAvailability, which the bindings do not wrap."""
        import ctypes

        ci = self.ci
        fn = self._platform_availability
        if fn is None:
            fn = self.lib["clang_getCursorPlatformAvailability"]
            fn.argtypes = [ci.Cursor, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ci._CXString),
                           ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ci._CXString), ctypes.c_void_p, ctypes.c_int]
            fn.restype = ctypes.c_int
            self._platform_availability = fn
        dep, unav = ctypes.c_int(), ctypes.c_int()
        dep_msg, unav_msg = ci._CXString(), ci._CXString()
        fn(decl, ctypes.byref(dep), ctypes.byref(dep_msg), ctypes.byref(unav), ctypes.byref(unav_msg), None, 0)
        out = []
        for s in (dep_msg, unav_msg):
            out.append(self._cxstring(s))
        return (out[0] if kind == "deprecated" else out[1]) or out[0] or out[1]

    def _cxstring(self, s) -> str:
        """The text of a CXString; the bindings' `_CXString.__del__` disposes of it."""
        import ctypes

        get = self._get_cstring
        if get is None:
            get = self._get_cstring = self.lib["clang_getCString"]
            get.argtypes = [self.ci._CXString]
            get.restype = ctypes.c_char_p
        raw = get(s)
        return raw.decode("utf-8", "replace") if raw else ""

    def _implicit_at(self, decl, f, off) -> bool:
        """A declaration clang made up where the name is used (error recovery for an undeclared name)."""
        key = self._memo_key(decl)
        where = self.where_cache.get(key)
        if where is None:
            where = self.where_cache[key] = self.expansion(decl.location)
        return where[0] is not None and where == (f, off)

    def record_member(self, c) -> None:
        K = self.K
        f, end = self.expansion(c.extent.end)
        sf, soff = self.spelling(c.location)
        if f is None or self.is_toolkit_file(f) or sf != f:
            return
        name = None
        if c.kind == K.MEMBER_REF_EXPR:
            ref = c.referenced
            if ref is not None and ref.kind in (K.FIELD_DECL, K.CXX_METHOD):
                ff = self.facts(f)
                if soff not in ff.deprecated:
                    self.record_availability(ff, ref, soff, c)
            if ref is not None and ref.kind == K.FIELD_DECL:
                name = self.qualified(ref.semantic_parent)
        kids = [k for k in self.children(c) if k.kind.is_expression()]
        if name is None and kids:
            data = self.src_cache.get(f) if f in self.src_cache else self.facts(f) and self.src_cache.get(f)
            if not data or not re.search(rb"(?:\.|->)\s*\w+\s*$", data[max(0, end - 200):end]):
                return
            t = kids[0].type
            if t.kind in (self.ci.TypeKind.POINTER, self.ci.TypeKind.LVALUEREFERENCE, self.ci.TypeKind.RVALUEREFERENCE):
                t = t.get_pointee()
            t = t.get_canonical()
            if t.kind == self.ci.TypeKind.POINTER:
                t = t.get_pointee().get_canonical()
            d = t.get_declaration()
            if d is not None and d.kind != K.NO_DECL_FOUND:
                name = self.qualified(d)
        if name:
            self.facts(f).members.setdefault(end, name)

    def overloaded_decls(self, ref) -> list:
        """The declarations of an overload set. The raw C call returns cursors without their TU, which the
        bindings (libclang-ng 22) need for every later property: it is attached here, as `Cursor.referenced` does."""
        out = []
        for i in range(self.lib.clang_getNumOverloadedDecls(ref)):
            d = self.lib.clang_getOverloadedDecl(ref, i)
            d._tu = ref._tu
            out.append(d)
        return out

    def callee_decl(self, call):
        """(callee name cursor, referenced decl or overload set) of a call."""
        K = self.K
        kids = self.children(call)
        if not kids:
            return None, None
        fn = kids[0]
        while fn.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR):
            sub = self.children(fn)
            if not sub:
                break
            fn = sub[0]
        if fn.kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR):
            return fn, fn.referenced
        if fn.kind == K.OVERLOADED_DECL_REF:
            return fn, fn
        return fn, call.referenced

    def record_call(self, call, is_launch: bool, cfg) -> None:
        K = self.K
        name_cur, decl = self.callee_decl(call)
        if name_cur is None or decl is None:
            return
        if decl.kind == K.OVERLOADED_DECL_REF:
            decls = self.overloaded_decls(decl)
            if not decls:
                return
            names = {self.qualified(d) for d in decls}
            if len(names) != 1:
                return
            callee = names.pop()
            kinds = {self.decl_is_api(d) for d in decls}
            if len(kinds) != 1:
                return  # the API and a project overload: overload resolution waits for instantiation
            api = kinds.pop()
            params = decls[0] if len(decls) == 1 else None
        else:
            callee = self.qualified(decl)
            api = self.decl_is_api(decl)
            params = decl
        sf, soff = self.spelling(name_cur.location)
        ef, eoff = self.expansion(call.location)
        if params is not None and sf is not None and self._implicit_at(params, sf, soff):
            return  # a call of an undeclared (e.g. removed) function: no fact, tree-sitter decides
        use_end = call.extent.end.offset
        if ef is not None and (sf, soff) != (ef, eoff):
            use_end = max(use_end, self.macro_use_end(ef, eoff))
        callee_floc = self._loc("clang_getFileLocation", name_cur.location)[1]
        if is_launch:
            arg_curs = list(cfg.get_arguments()) if cfg is not None else []
            api = True  # the launch itself is the construct, the kernel is the user's
            params = cfg.referenced if cfg is not None else None
        else:
            arg_curs = list(call.get_arguments())
        fact = CallFact(callee=callee, api=api, launch=is_launch)
        for i, a in enumerate(arg_curs):
            fact.args.append(self.arg_fact(a, params, i, use_end, callee_floc))
        if sf is None or ef is None:
            return
        if not self.is_toolkit_file(sf) and self._spelled_at_use(sf, soff, ef, eoff, use_end):
            self.facts(sf).calls.setdefault(soff, fact)
            return
        # expanded from a macro: report at the use, in the file of the use
        if self.is_toolkit_file(ef) or self.is_toolkit_file(sf):
            return  # a toolkit's own renaming macro (`cublasCreate` -> `cublasCreate_v2`): the spelling decides
        data = self.src_cache.get(ef)
        if data is None:
            self.facts(ef)
            data = self.src_cache.get(ef, b"")
        mo = _IDENT.match(data, eoff)
        if mo is None or use_end <= eoff:
            return
        fact.macro = mo.group(0).decode("utf-8", "replace")
        fact.use_range = (eoff, use_end)
        fact.body_file = sf
        fact.body_offset = soff
        self.facts(ef).expansions.append(fact)
        if sf is not None and not self.is_toolkit_file(sf):
            bf = self.facts(sf)
            bf.expanded_bodies[soff] = bf.expanded_bodies.get(soff, 0) + 1

    def macro_use_end(self, f: str, off: int) -> int:
        """End of the macro use starting at `off` (its name and balanced argument list)."""
        data = self.src_cache.get(f)
        if data is None:
            self.facts(f)
            data = self.src_cache.get(f, b"")
        mo = _IDENT.match(data, off)
        if mo is None:
            return off
        i = mo.end()
        n = len(data)
        j = i
        while j < n and data[j : j + 1] in b" \t\r\n":
            j += 1
        if j >= n or data[j : j + 1] != b"(":
            return i
        depth = 0
        quote = None
        while j < n:
            ch = data[j : j + 1]
            if quote:
                if ch == b"\\":
                    j += 1
                elif ch == quote:
                    quote = None
            elif ch in (b'"', b"'"):
                quote = ch
            elif ch == b"(":
                depth += 1
            elif ch == b")":
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return i

    @staticmethod
    def _spelled_at_use(sf, soff, ef, eoff, use_end) -> bool:
        """Written in the file itself: not in a macro, or inside a macro use's arguments."""
        if (sf, soff) == (ef, eoff):
            return True
        return sf == ef and eoff <= soff < use_end

    # -- values
    def arg_fact(self, a, params, i: int, use_end: int, callee_floc: int = -1) -> ArgFact:
        K = self.K
        ext = a.extent
        default = ext.start.file is None and ext.end.file is None and a.kind == K.UNEXPOSED_EXPR and not self.children(a)
        af = ArgFact(default=default)
        if default:
            af.value = self.default_value(params, i)
            return af
        sf, soff = self.spelling(a.location)
        ef, eoff = self.expansion(a.location)
        af.value = self.value(a, 0)
        af.start = soff if sf is not None else None
        af.in_body = not self._spelled_at_use(sf, soff, ef, eoff, use_end)
        if af.in_body:
            # a macro used as the argument (`COPY(d, h, n, MY_STREAM)`): its name is at the use
            ff, foff = self._loc("clang_getFileLocation", a.location)
            if ff == ef and eoff < foff < use_end and foff != callee_floc:
                af.start, af.in_body = foff, False
        return af

    def default_value(self, fn, i: int) -> int | None:
        if fn is None:
            return None
        try:
            ps = list(fn.get_arguments())
        except Exception:
            return None
        if i >= len(ps):
            return None
        kids = [k for k in ps[i].get_children() if k.kind.is_expression()]
        return self.value(kids[-1], 0) if kids else None

    def evaluate_int(self, c) -> int | None:
        r = self.lib.clang_Cursor_Evaluate(c)
        if not r:
            return None
        try:
            if self.lib.clang_EvalResult_getKind(r) == 1:  # CXEval_Int
                return int(self.lib.clang_EvalResult_getAsLongLong(r))
            return None
        finally:
            self.lib.clang_EvalResult_dispose(r)

    def value(self, c, depth: int) -> int | None:
        if depth > 12:
            return None
        K = self.K
        k = c.kind
        if k == K.INTEGER_LITERAL:
            return self.evaluate_int(c)
        if k in (K.CXX_NULL_PTR_LITERAL_EXPR, K.GNU_NULL_EXPR):
            return 0
        if k == K.INIT_LIST_EXPR:
            kids = [x for x in self.children(c) if x.kind.is_expression()]
            return 0 if not kids else (self.value(kids[0], depth + 1) if len(kids) == 1 else None)
        if k.name in _CAST_KINDS:
            kids = [x for x in self.children(c) if x.kind.is_expression()]
            if len(kids) == 1:
                return self.value(kids[0], depth + 1)
            if not kids and k == K.CXX_FUNCTIONAL_CAST_EXPR:
                return 0
            return None  # `cudaStream_t()` value-initialization and the like: unknown
        if k == K.DECL_REF_EXPR:
            d = c.referenced
            if d is None:
                return None
            if d.kind == K.ENUM_CONSTANT_DECL:
                return d.enum_value
            if d.kind == K.VAR_DECL:
                key = self.decl_key(d)
                const = d.type.is_const_qualified()
                if not const and key in self.written:
                    return None
                if not const and not self._local_or_internal(d):
                    return None
                init = [x for x in self.children(d) if x.kind.is_expression()]
                if not init:
                    return None
                return self.value(init[-1], depth + 1)
            if d.kind == K.PARM_DECL:
                return self.param_value(d, depth)
            return None
        if c.type.kind in (self.ci.TypeKind.INT, self.ci.TypeKind.UINT, self.ci.TypeKind.LONG, self.ci.TypeKind.ULONG,
                           self.ci.TypeKind.LONGLONG, self.ci.TypeKind.ULONGLONG):
            return self.evaluate_int(c)
        return None

    def _local_or_internal(self, d) -> bool:
        K = self.K
        p = d.semantic_parent
        if p is not None and p.kind in (K.FUNCTION_DECL, K.CXX_METHOD, K.FUNCTION_TEMPLATE, K.LAMBDA_EXPR,
                                        K.CONSTRUCTOR, K.DESTRUCTOR):
            return True
        sc = d.storage_class
        return sc == self.ci.StorageClass.STATIC

    def param_value(self, p, depth: int) -> int | None:
        """A defaulted parameter never written: null when every call in the TU leaves it null."""
        key = self.decl_key(p)
        if key in self.written:
            return None
        kids = [k for k in self.children(p) if k.kind.is_expression()]
        if not kids:
            return None
        dflt = self.value(kids[-1], depth + 1)
        fn = p.semantic_parent
        if fn is None:
            return None
        idx = None
        for i, q in enumerate(fn.get_arguments() or []):
            if self.decl_key(q) == key:
                idx = i
                break
        if idx is None:
            return None
        fkey = self.decl_key(fn)
        sites = self.calls_to.get(fkey, [])
        if not sites or fkey in self.fn_escaped or self.fn_refs.get(fkey, 0) > len(sites):
            return None  # never called here, or also called through a pointer
        values = set()
        for call in sites:
            args = list(call.get_arguments())
            if idx >= len(args):
                values.add(dflt)
                continue
            a = args[idx]
            if a.extent.start.file is None and not self.children(a):
                values.add(dflt)
            else:
                values.add(self.value(a, depth + 1))
            if len(values) > 1:
                return None
        return values.pop() if len(values) == 1 else None

