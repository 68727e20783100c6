"""Semantic mode: facts from libclang, fed into the tree-sitter rule pipeline.

The same YAML rules run in both modes. Tree-sitter still finds the byte
ranges (so findings and fixes are located in the file's own bytes); libclang,
run with the project's real compile flags, supplies what text cannot tell:

  * the resolved callee of every call in project code (user functions and
    methods that merely share a CUDA API's name are dropped; `using namespace`,
    aliases and ADL come out resolved, also when declared in headers),
  * the evaluated value of each argument where it is constant: `cudaStream_t s = 0;`
    never written again, `constexpr` / `const` globals, macros, casts, default
    arguments of the API, and default parameters of user wrappers whose every
    call in the TU leaves them defaulted,
  * the canonical record type of a member access's receiver (typedef'd and
    referenced `cudaDeviceProp`),
  * calls expanded from macros: a finding per macro *use*, pointing at the use;
    a fix that would edit a macro definition used more than once is downgraded
    to manual.

Facts are per file (`FileFacts`), computed for every project file a TU
touches; a header included by several TUs takes its facts from the first one
(in path order), so it is reported once. Where libclang has no fact for a
location (inactive `#if` branches, code that did not compile), tree-sitter's
answer stands: semantic mode only ever refines it.

Semantic-only conditions (rules may use `semantic:` in `where:`):
  semantic: {arg_evaluates_null: stream}   libclang: the argument is a null pointer constant (or
                                           cudaStreamLegacy when `null_stream`); tree-sitter: same as
                                           `{arg: stream, is: null}` on its spelling.
  semantic: {receiver_type: cudaDeviceProp} libclang: canonical receiver record type; tree-sitter: true.
  semantic: {callee_is_api: true}          libclang: callee declared in a system/toolkit header;
                                           tree-sitter: true.
  semantic: {..., default: false}          overrides what tree-sitter mode answers.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

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
class FileFacts:
    path: str
    digest: str
    tu: str
    calls: dict[int, CallFact] = field(default_factory=dict)  # callee-name token offset -> fact
    expansions: list[CallFact] = field(default_factory=list)  # calls expanded from macros used here
    members: dict[int, str] = field(default_factory=dict)  # member-name end offset -> receiver record
    refs: dict[int, tuple[str, bool]] = field(default_factory=dict)  # identifier offset -> (decl name, api)
    expanded_bodies: dict[int, int] = field(default_factory=dict)  # callee offset in a #define body -> uses

    def keywords(self) -> set[str]:
        out = {c.callee.split("::")[-1] for c in self.calls.values() if c.api}
        out |= {c.callee.split("::")[-1] for c in self.expansions if c.api}
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
_TOOLKIT_MARKERS = ("/site-packages/nvidia/", "/dist-packages/nvidia/", "/usr/local/cuda", "/opt/nvidia/", "/nvhpc/", "/include/c++/", "/usr/include/", "/usr/lib/llvm", "/lib/clang/")


class _Extractor:
    def __init__(self, ci, tu, main: Path, cuda_path: str, include_dirs: Iterable[str] = ()):
        self.ci = ci
        self.tu = tu
        self.K = ci.CursorKind
        self.main = str(main)
        self.cuda_path = os.path.realpath(cuda_path)
        # -I directories that hold a toolkit's headers (vendored or pip-installed CUDA libraries)
        self.toolkit_dirs = tuple(os.path.realpath(d) + os.sep for d in include_dirs
                                  if any(os.path.exists(os.path.join(d, h)) for h in _TOOLKIT_HEADERS))
        self.lib = ci.conf.lib
        self.files: dict[str, FileFacts] = {}
        self.written: set[tuple] = set()
        self.calls_to: dict[tuple, list] = {}
        self.pending: list[tuple] = []  # (call cursor, is_launch, config cursor)
        self.sys_cache: dict[str, bool] = {}
        self.src_cache: dict[str, bytes] = {}
        self.real_cache: dict[str, str] = {}
        self.ptr_cache: dict[int, str] = {}
        self.skip_cache: dict[str, bool] = {}

    # -- locations
    def _loc(self, fn: str, sl) -> tuple[str | None, int]:
        import ctypes

        f = self.ci.c_object_p()
        l, c, o = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
        getattr(self.lib, fn)(sl, ctypes.byref(f), ctypes.byref(l), ctypes.byref(c), ctypes.byref(o))
        if not f:
            return None, 0
        ptr = ctypes.cast(f, ctypes.c_void_p).value
        real = self.ptr_cache.get(ptr)
        if real is None:
            real = self.ptr_cache[ptr] = self.real(self.ci.File(f).name)
        return real, o.value

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
    def qualified(self, decl) -> str:
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
        loc = decl.location
        if loc.file is None:
            return True  # builtins
        if loc.is_in_system_header:
            return True
        return self.is_toolkit_file(self.real(loc.file.name))

    @staticmethod
    def decl_key(decl) -> tuple:
        loc = decl.location
        return (loc.file.name if loc.file else None, loc.offset, decl.spelling)

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
        return self.files

    def walk(self, root) -> None:
        K = self.K
        stack = [(root, None)]
        while stack:
            c, parent_kind = stack.pop()
            k = c.kind
            if k == K.CALL_EXPR:
                cfg = None
                for ch in c.get_children():
                    inner = ch
                    while inner.kind == K.UNEXPOSED_EXPR:
                        kids = list(inner.get_children())
                        if len(kids) != 1:
                            break
                        inner = kids[0]
                    if inner.kind == K.CALL_EXPR and inner.spelling == "__cudaPushCallConfiguration":
                        cfg = inner
                        break
                if c.spelling != "__cudaPushCallConfiguration":
                    self.pending.append((c, cfg is not None, cfg))
                    ref = c.referenced
                    if ref is not None:
                        self.calls_to.setdefault(self.decl_key(ref), []).append(c)
            elif k == K.DECL_REF_EXPR:
                ref = c.referenced
                if ref is not None and ref.kind in (K.VAR_DECL, K.PARM_DECL) and parent_kind not in _WRITE_PARENTS_OK:
                    self.written.add(self.decl_key(ref))
                self.record_ref(c, ref)
            elif k == K.TYPE_REF:
                self.record_ref(c, c.referenced)
            elif k == K.MEMBER_REF_EXPR or (k == K.UNEXPOSED_EXPR and c.type.kind == self.ci.TypeKind.DEPENDENT):
                self.record_member(c)
            kname = k.name if hasattr(k, "name") else str(k)
            for ch in c.get_children():
                stack.append((ch, kname))

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
        if off in ff.refs:
            return
        if ref.kind == self.K.OVERLOADED_DECL_REF:
            n = self.lib.clang_getNumOverloadedDecls(ref)
            decls = [self.lib.clang_getOverloadedDecl(ref, i) for i in range(n)]
            names = {self.qualified(d) for d in decls}
            apis = {self.decl_is_api(d) for d in decls}
            if len(names) == 1 and len(apis) == 1:  # none: an undeclared (e.g. removed) name
                ff.refs[off] = (names.pop(), apis.pop())
            return
        ff.refs[off] = (self.qualified(ref), self.decl_is_api(ref))

    def _implicit_at(self, decl, f, off) -> bool:
        """A declaration clang made up where the name is used (error recovery for an undeclared name)."""
        loc = decl.location
        return loc.file is not None and loc.offset == off and self.real(loc.file.name) == f

    def record_member(self, c) -> None:
        K = self.K
        f, end = self.expansion(c.extent.end)
        sf, soff = self.spelling(c.location)
        if f is None or self.is_toolkit_file(f) or sf != f:
            return
        name = None
        if c.kind == K.MEMBER_REF_EXPR:
            ref = c.referenced
            if ref is not None and ref.kind == K.FIELD_DECL:
                name = self.qualified(ref.semantic_parent)
        kids = [k for k in c.get_children() if k.kind.is_expression()]
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

    def callee_decl(self, call):
        """(callee name cursor, referenced decl or overload set) of a call."""
        K = self.K
        kids = list(call.get_children())
        if not kids:
            return None, None
        fn = kids[0]
        while fn.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR):
            sub = list(fn.get_children())
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
            n = self.lib.clang_getNumOverloadedDecls(decl)
            decls = [self.lib.clang_getOverloadedDecl(decl, i) for i in range(n)]
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
        fact.macro = mo.group(0).decode()
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
        default = ext.start.file is None and ext.end.file is None and a.kind == K.UNEXPOSED_EXPR and not list(a.get_children())
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
            kids = [x for x in c.get_children() if x.kind.is_expression()]
            return 0 if not kids else (self.value(kids[0], depth + 1) if len(kids) == 1 else None)
        if k.name in _CAST_KINDS:
            kids = [x for x in c.get_children() if x.kind.is_expression()]
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
                init = [x for x in d.get_children() if x.kind.is_expression()]
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
        kids = [k for k in p.get_children() if k.kind.is_expression()]
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
        sites = self.calls_to.get(self.decl_key(fn), [])
        if not sites:
            return None
        values = set()
        for call in sites:
            args = list(call.get_arguments())
            if idx >= len(args):
                values.add(dflt)
                continue
            a = args[idx]
            if a.extent.start.file is None and not list(a.get_children()):
                values.add(dflt)
            else:
                values.add(self.value(a, depth + 1))
            if len(values) > 1:
                return None
        return values.pop() if len(values) == 1 else None


# --------------------------------------------------------------------------- parsing TUs

PARSE_OPTS_SCAN = 0x0  # macro uses come from expansion locations; no detailed preprocessing record needed
PREAMBLE_OPTS = 0x04 | 0x100  # precompiled preamble, created on the first parse (for reparses)


@dataclass
class TUResult:
    file: str
    facts: dict[str, FileFacts] = field(default_factory=dict)
    warning: str | None = None
    parse_s: float = 0.0
    facts_s: float = 0.0
    errors: int = 0
    pch_used: bool = False


def _fatal(ci, tu, main: str = "") -> tuple[int, str | None]:
    n = 0
    first = None
    for d in tu.diagnostics:
        if d.severity >= ci.Diagnostic.Error:
            n += 1
            if d.severity >= ci.Diagnostic.Fatal and first is None:
                where = f"line {d.location.line}"
                if d.location.file is not None and os.path.realpath(d.location.file.name) != os.path.realpath(main):
                    where = f"{d.location.file.name}:{d.location.line}"
                first = f"{where}: {d.spelling}"
    return n, first


def parse_tu(cmd, keep: bool = False, unsaved: list[tuple[str, bytes]] | None = None, index=None,
             pch: str | None = None):
    """Parse one command; return TUResult (and the TU when keep). `pch`: a shared CUDA runtime PCH."""
    from .parse import clang as cl


    res = TUResult(str(cmd.file))
    try:
        ci = cl.cindex()
    except Exception as exc:
        res.warning = f"libclang unavailable: {exc}"
        return (res, None) if keep else res
    args = cl.clang_args(cmd)
    t0 = time.perf_counter()
    idx = index or ci.Index.create()
    opts = PARSE_OPTS_SCAN | (PREAMBLE_OPTS if keep else 0)
    files = [(p, d.decode("utf-8", "replace")) for p, d in (unsaved or [])] or None
    tu = None
    if pch and os.path.isfile(pch):
        try:
            tu = idx.parse(str(cmd.file), args=["-include-pch", pch, *args], options=opts, unsaved_files=files)
            if _fatal(ci, tu, str(cmd.file))[1] is not None:
                tu = None  # a PCH that does not fit: parse from scratch
            else:
                res.pch_used = True
        except Exception:
            tu = None
    if tu is None:
        try:
            tu = idx.parse(str(cmd.file), args=args, options=opts, unsaved_files=files)
        except Exception as exc:
            res.warning = f"libclang could not parse it ({exc})"
            return (res, None) if keep else res
    res.parse_s = time.perf_counter() - t0
    res.errors, fatal = _fatal(ci, tu, str(cmd.file))
    if fatal is not None:
        res.warning = f"libclang: {fatal}"
        return (res, tu) if keep else res
    t1 = time.perf_counter()
    try:
        res.facts = extract(ci, tu, cmd, unsaved)
    except Exception as exc:  # never crash a scan on an extractor bug
        res.warning = f"semantic extraction failed ({exc!r})"
        res.facts = {}
    res.facts_s = time.perf_counter() - t1
    return (res, tu) if keep else res


def extract(ci, tu, cmd, unsaved=None) -> dict[str, FileFacts]:
    from .parse import clang as cl

    args = cl.clang_args(cmd)
    incs = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-I", "-isystem", "-iquote")]
    ex = _Extractor(ci, tu, cmd.file, cl.cuda_path_for(cmd.argv), incs)
    for p, d in unsaved or []:
        rp = os.path.realpath(p)
        ex.src_cache[rp] = d
        ex.files[rp] = FileFacts(path=rp, digest=digest(d), tu=str(cmd.file))
    return ex.run()


def _parse_worker(item):
    cmd, pch = item
    return parse_tu(cmd, pch=pch)


def _pch_key(args: list[str]) -> list[str]:
    """The flags that shape the precompiled wrapper: all but the project's own -I/-iquote
    directories (kept when one of them shadows a toolkit header the wrapper includes)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-I", "-iquote") and i + 1 < len(args):
            d = args[i + 1]
            if any(os.path.exists(os.path.join(d, h)) for h in ("cuda_runtime.h", "cuda_runtime_api.h", "cuda.h",
                                                                  "driver_types.h", "crt")):
                out += [a, d]
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def build_pch(args: list[str], directory: str) -> str | None:
    """Precompile clang's CUDA runtime wrapper (force-included in every `-x cuda` TU) for one flag set.

    TUs with identical flags then load it instead of re-parsing <cuda_runtime.h> (about 5x faster).
    The wrapper is included first by the driver anyway, so the PCH changes no TU's meaning.
    """
    from .parse import clang as cl

    ci = cl.cindex()
    src = os.path.join(directory, "cudamigrate_prefix.cuh")
    with open(src, "w", encoding="utf-8") as fh:
        fh.write("/* cudamigrate: precompiled CUDA runtime wrapper */\n")
    out = os.path.join(directory, f"prefix-{hashlib.blake2b(repr(args).encode(), digest_size=8).hexdigest()}.pch")
    try:
        tu = ci.Index.create().parse(src, args=args, options=0x2)  # incomplete: may be saved as a PCH
        if any(d.severity >= ci.Diagnostic.Error for d in tu.diagnostics):
            return None
        tu.save(out)
    except Exception:
        return None
    return out if os.path.isfile(out) else None


# --------------------------------------------------------------------------- the project database


@dataclass
class Timings:
    phases: dict[str, float] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)

    def add(self, phase: str, seconds: float) -> None:
        self.phases[phase] = self.phases.get(phase, 0.0) + seconds

    def line(self) -> str:
        parts = [f"{k} {v:.2f}s" for k, v in self.phases.items()]
        extra = [f"{k}={v}" for k, v in self.counts.items()]
        return "timings: " + ", ".join(parts + extra)


class SemanticDB:
    """Facts for every project file reached from the compile database's TUs."""

    def __init__(self, commands: list, warnings: list[str] | None = None):
        self.commands = sorted(commands, key=lambda c: str(c.file))
        self.by_file = {str(c.file): c for c in self.commands}
        self.facts: dict[str, FileFacts] = {}
        self.owner: dict[str, str] = {}  # file -> TU its facts came from
        self.failed: dict[str, str] = {}  # TU -> warning
        self.warnings: list[str] = list(warnings or [])
        self.timings = Timings()
        self._tus: dict[str, Any] = {}
        self._index = None
        self.use_pch = True
        self._pch: dict[str, str] = {}  # TU -> PCH file
        self._pch_dir = None
        self._pch_by_key: dict[tuple, str | None] = {}

    # scanning: all TUs in parallel, facts shipped back
    def build(self, jobs: int | None = None, only: set[str] | None = None, min_group: int = 2) -> None:
        cmds = [c for c in self.commands if only is None or str(c.file) in only]
        t0 = time.perf_counter()
        jobs = jobs or min(os.cpu_count() or 1, 8)
        results: list[TUResult] = []
        if self.use_pch:
            self._build_pchs(cmds, min_group)
        self.timings.add("pch", time.perf_counter() - t0)
        items = [(c, self._pch.get(str(c.file))) for c in cmds]
        if jobs <= 1 or len(cmds) <= 1:
            results = [_parse_worker(i) for i in items]
        else:
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(max_workers=min(jobs, len(cmds))) as pool:
                results = list(pool.map(_parse_worker, items, chunksize=max(1, len(cmds) // (jobs * 4))))
        for r in results:
            self._merge(r)
        self.timings.add("libclang-wall", time.perf_counter() - t0)
        self.timings.add("libclang-parse-cpu", sum(r.parse_s for r in results))
        self.timings.add("facts-cpu", sum(r.facts_s for r in results))
        self.timings.counts["tus"] = len(cmds)
        self.timings.counts["tus_with_pch"] = sum(1 for r in results if r.pch_used)
        self.timings.counts["jobs"] = jobs

    def _build_pchs(self, cmds, min_group: int = 2) -> None:
        """One PCH per distinct `-x cuda` flag set shared by two or more TUs."""
        import tempfile

        from .parse import clang as cl

        groups: dict[tuple, list] = {}
        for c in cmds:
            a = tuple(_pch_key(cl.clang_args(c)))
            if a[:2] == ("-x", "cuda"):
                groups.setdefault(a, []).append(c)
        for a, cs in groups.items():
            if len(cs) < min_group:
                continue
            if self._pch_dir is None:
                self._pch_dir = tempfile.TemporaryDirectory(prefix="cudamigrate-pch-")
            if a not in self._pch_by_key:
                self._pch_by_key[a] = build_pch(list(a), self._pch_dir.name)
            pch = self._pch_by_key[a]
            if pch:
                for c in cs:
                    self._pch[str(c.file)] = pch
        self.timings.counts["pch"] = len(set(self._pch.values()))

    def _merge(self, r: TUResult) -> None:
        if r.warning:
            self.failed[r.file] = r.warning
            return
        for path, ff in r.facts.items():
            if path not in self.facts:
                self.facts[path] = ff
                self.owner[path] = r.file
            elif ff.digest == self.facts[path].digest:
                # a header's macro bodies are expanded by every TU that uses them
                mine = self.facts[path].expanded_bodies
                for off, n in ff.expanded_bodies.items():
                    mine[off] = mine.get(off, 0) + n

    def tu_for(self, path: str) -> Any:
        if path in self.by_file:
            return self.by_file[path]
        owner = self.owner.get(path)
        return self.by_file.get(owner) if owner else None

    # fixing: keep TUs, reparse with the edited bytes (precompiled preamble makes that cheap)
    def facts_for(self, path: Path, data: bytes) -> FileFacts | None:
        rp = os.path.realpath(path)
        ff = self.facts.get(rp)
        if ff is not None and ff.digest == digest(data):
            return ff
        cmd = self.tu_for(rp)
        if cmd is None or str(cmd.file) in self.failed:
            return None
        t0 = time.perf_counter()
        res = self._reparse(cmd, [(rp, data)])
        self.timings.add("libclang-reparse", time.perf_counter() - t0)
        if res is None:
            return None
        got = res.get(rp)
        if got is not None and got.digest == digest(data):
            return got
        return None

    def _reparse(self, cmd, unsaved):
        from .parse import clang as cl

        try:
            ci = cl.cindex()
        except Exception:
            return None
        key = str(cmd.file)
        tu = self._tus.get(key)
        if tu is None:
            if self._index is None:
                self._index = ci.Index.create()
            res, tu = parse_tu(cmd, keep=True, unsaved=unsaved, index=self._index, pch=self._pch.get(key))
            if tu is None or res.warning:
                return None
            self._tus[key] = tu
            return res.facts
        try:
            tu.reparse(unsaved_files=[(p, d.decode("utf-8", "replace")) for p, d in unsaved], options=PARSE_OPTS_SCAN)
        except Exception:
            return None
        n, fatal = _fatal(ci, tu)
        if fatal is not None:
            return None
        return extract(ci, tu, cmd, unsaved)


def open_db(db_path: Path, warn: Callable[[str], None]) -> SemanticDB | None:
    """Load compile_commands.json; None (after ONE warning) when libclang is not usable."""
    from .parse import clang as cl

    ok, why = cl.available()
    if not ok:
        warn(f"semantic mode unavailable: {why}; scanning with tree-sitter only")
        return None
    try:
        cmds = cl.load_compile_db(db_path)
    except (OSError, ValueError, KeyError) as exc:
        warn(f"{db_path}: cannot read compile database ({exc}); scanning with tree-sitter only")
        return None
    return SemanticDB(cmds)


# --------------------------------------------------------------------------- feeding the matchers


class FakeNode:
    """Stands in for a tree-sitter node where an argument is spelled in a macro body."""

    is_named = True
    named_children: list = []
    children: list = []
    parent = None

    def __init__(self, text: bytes, start: int | None, kind: str = "macro_argument"):
        self.text = text
        self.type = kind
        self.start_byte = start if start is not None else -1
        self.end_byte = start + len(text) if start is not None else -1
        self.located = start is not None

    def child_by_field_name(self, _name):
        return None


_ARG_END = re.compile(rb"[^,()\n]*(?:\([^()\n]*\)[^,()\n]*)*")


def _spelled_text(data: bytes, start: int) -> bytes:
    m = _ARG_END.match(data, start)
    return (m.group(0) if m else b"").strip()


def resolve_callee(fact: CallFact, names: Iterable[str]) -> str | None:
    if not fact.api:
        return None
    for n in names:
        if fact.callee == n or fact.callee.endswith("::" + n):
            return n
    return None


def _same_library(fact: CallFact, names: Iterable[str]) -> bool:
    """The callee and one of the rule's names share their top namespace (or the rule spells `obj.method`)."""
    root = fact.callee.split("::")[0] if "::" in fact.callee else ""
    for n in names:
        if "." in n.split("::")[-1]:
            return True
        if root and "::" in n and n.split("::")[0] == root:
            return True
    return False


class SemanticContext:
    """What the engine consults for one file in semantic mode."""

    def __init__(self, facts: FileFacts):
        self.facts = facts

    def keywords(self) -> set[str]:
        return self.facts.keywords()

    @property
    def has_launch(self) -> bool:
        return self.facts.has_launch or any(c.launch for c in self.facts.calls.values())

    # -- hit matchers: refine tree-sitter's answer where libclang knows better
    def wrap(self, kind: str, matcher: Callable) -> Callable:
        if kind == "call":
            return self._match_call(matcher)
        if kind == "member":
            return self._match_member(matcher)
        if kind == "identifier":
            return self._match_identifier(matcher)
        return matcher

    def _match_call(self, original):
        from .match.matchers import Match, call_of, climb_name
        from .match.context import named_children, node_text, normalize_name

        def run(rule, ctx, unit, hit):
            if hit.type not in ("identifier", "field_identifier"):
                return None
            key = unit.abs(hit)[0]
            if unit.in_macro:
                if self.facts.expanded_bodies.get(key):
                    return None  # reported at each macro use instead
                return original(rule, ctx, unit, hit)
            fact = self.facts.calls.get(key)
            if fact is None or fact.launch or fact.callee.split("::")[-1] != node_text(hit):
                # no fact, or libclang resolved another spelling (a renaming macro): the spelling decides
                return original(rule, ctx, unit, hit)
            name = resolve_callee(fact, rule.spec["names"])
            if name is None:
                if fact.api and _same_library(fact, rule.spec["names"]):
                    # e.g. `thrust::cuda::par.on` (a method of an internal type): the spelling decides
                    m = original(rule, ctx, unit, hit)
                    if m is not None:
                        m.sem = fact
                    return m
                return None  # a user function/method, or another API
            m = original(rule, ctx, unit, hit)
            if m is not None and m.name == name:
                m.sem = fact  # tree-sitter agrees on the name: keep everything it computed
                return m
            got = call_of(hit)
            if got is None:
                return None
            call, callee = got
            arglist = call.child_by_field_name("arguments")
            m = Match(rule=rule, unit=unit, node=call, name=name, written=normalize_name(node_text(callee)),
                      callee=callee, arglist=arglist, args=named_children(arglist),
                      params=list(rule.spec["names"][name] or []),
                      name_range=unit.abs(climb_name(hit)[1]) if hit.type == "identifier" else unit.abs(hit))
            if hasattr(m, "ident_range"):
                m.ident_range = unit.abs(hit)
            m.sem = fact
            return m

        return run

    def _match_member(self, original):
        from .match.context import node_text  # noqa: F401

        import copy

        def run(rule, ctx, unit, hit):
            types = rule.spec.get("receiver_types")
            end = unit.abs(hit)[1]
            rec = self.facts.members.get(end) if not unit.in_macro else None
            if not types or rec is None:
                return original(rule, ctx, unit, hit)
            if not any(rec == t or rec.endswith("::" + t) for t in types):
                return None
            relaxed = copy.copy(rule)
            relaxed.match = {"member": {k: v for k, v in rule.spec.items() if k != "receiver_types"}}
            m = original(relaxed, ctx, unit, hit)
            if m is not None:
                m.rule = rule
                m.vars["receiver_type"] = rec
            return m

        return run

    def _match_identifier(self, original):
        from .match.context import node_text

        def run(rule, ctx, unit, hit):
            m = original(rule, ctx, unit, hit)
            if m is None or unit.in_macro:
                return m
            ref = self.facts.refs.get(unit.abs(hit)[0])
            if ref is not None and not ref[1] and ref[0].split("::")[-1] == node_text(hit):
                return None  # the project's own declaration of that name
            if m.vars.get("role") == "call":
                fact = self.facts.calls.get(unit.abs(hit)[0])
                if fact is not None and fact.callee.split("::")[-1] != node_text(hit):
                    fact = None
                if fact is not None and not fact.api:
                    return None
                m.sem = fact
            return m

        return run

    # -- launches: attach facts
    def refine_launches(self, matches: list) -> list:
        out = []
        for m in matches:
            if m.unit.in_macro:
                if self.facts.expanded_bodies.get(m.abs(m.callee)[0] if m.callee is not None else -1):
                    continue
                out.append(m)
                continue
            if m.callee is not None:
                m.sem = self.facts.calls.get(m.abs(m.callee)[0])
            out.append(m)
        return out

    # -- calls and launches expanded from macros, reported at the macro use
    def expansion_matches(self, rules: list, ctx) -> list:
        from .match.matchers import LAUNCH_PARAMS, Match

        out = []
        data = ctx.source.data
        root = ctx.main.root
        for fact in self.facts.expansions:
            s, e = fact.use_range
            if e <= s or e > len(data):
                continue
            node = root.descendant_for_byte_range(s, e)
            while node is not None and node.parent is not None and (node.end_byte - node.start_byte) < (e - s):
                node = node.parent
            for rule in rules:
                if fact.launch:
                    if rule.kind != "launch":
                        continue
                    name, params = "<<<>>>", LAUNCH_PARAMS
                else:
                    if rule.kind != "call":
                        continue
                    name = resolve_callee(fact, rule.spec["names"])
                    if name is None:
                        continue
                    params = list(rule.spec["names"][name] or [])
                args = []
                use_args = self._use_args(node, s, e)
                for af in fact.args:
                    if af.default:
                        continue  # like tree-sitter: a defaulted argument is `missing`
                    if not af.in_body and af.start is not None and af.start in use_args:
                        args.append(use_args[af.start])
                    elif af.in_body and fact.body_file == str(os.path.realpath(ctx.source.path)) and af.start is not None:
                        args.append(FakeNode(_spelled_text(data, af.start), af.start, "macro_body"))
                    else:
                        text = b""
                        if af.start is not None and fact.body_file:
                            try:
                                text = _spelled_text(Path(fact.body_file).read_bytes(), af.start)
                            except OSError:
                                pass
                        args.append(FakeNode(text, None, "macro_body"))
                m = Match(rule=rule, unit=ctx.main, node=node, name=name, written=fact.callee, callee=None,
                          arglist=FakeNode(b"", None, "argument_list"), args=args, params=params, range=(s, e),
                          name_range=(s, s + len(fact.macro or "")))
                m.sem = fact
                m.vars["macro"] = fact.macro
                out.append(m)
        return out

    @staticmethod
    def _use_args(node, s: int, e: int) -> dict[int, Any]:
        """Tree-sitter nodes spelled inside the macro use, by start offset (largest first)."""
        found: dict[int, Any] = {}
        if node is None:
            return found
        stack = [node]
        while stack:
            n = stack.pop()
            if n.start_byte < s or n.end_byte > e:
                stack.extend(n.named_children)
                continue
            if n.is_named and n.start_byte not in found and n.type not in ("argument_list",):
                found[n.start_byte] = n
            stack.extend(reversed(n.named_children))
        return found

    # -- fixes that would edit a shared macro definition
    def fix_blocker(self, m, edits, ctx) -> str | None:
        try:
            return self._fix_blocker(m, edits, ctx)
        except Exception as exc:  # be safe: no automatic fix rather than a wrong one
            return f"semantic check of the fix failed ({exc!r})"

    def _fix_blocker(self, m, edits, ctx) -> str | None:
        if not m.vars.get("macro"):
            return None  # only fixes computed for one macro use can be wrong for the others
        for e in edits or []:
            if e.start < 0:
                return "the edit lies in a macro defined in another file"
            for name, (bs, be) in _define_bodies(ctx).items():
                if bs <= e.start <= be:
                    uses = max([n for off, n in self.facts.expanded_bodies.items() if bs <= off <= be] or [0])
                    if uses > 1:
                        return f"the edit would change macro `{name}`, which is expanded {uses} times"
        return None

    # -- conditions
    def arg_value(self, m, key) -> tuple[bool, int | None]:
        """(known, value) of a match's argument."""
        fact = getattr(m, "sem", None)
        if fact is None:
            return False, None
        idx = m.arg_index(str(key))
        if idx is None or idx >= len(fact.args):
            return False, None
        v = fact.args[idx].value
        return v is not None, v


def _define_bodies(ctx) -> dict[str, tuple[int, int]]:
    cached = getattr(ctx, "_define_bodies", None)
    if cached is not None:
        return cached
    import tree_sitter as ts

    from .parse.treesitter import query

    out = {}
    q = query("(preproc_def name: (_) @name value: (preproc_arg) @body) "
              "(preproc_function_def name: (_) @name value: (preproc_arg) @body)")
    for _, caps in ts.QueryCursor(q).matches(ctx.main.root):
        b = caps["body"][0]
        out[caps["name"][0].text.decode("utf-8", "replace")] = (b.start_byte, b.end_byte)
    try:
        ctx._define_bodies = out
    except Exception:
        pass
    return out


def semantic_condition(spec: dict, m, ctx) -> bool:
    """`semantic:` conditions; tree-sitter mode answers per the documented defaults."""
    from .match.conditions import ConditionError, _arg_is

    sem = getattr(ctx, "semantic", None)
    default = spec.get("default")
    for key, val in spec.items():
        if key == "default":
            continue
        if key in ("arg_evaluates_null", "arg_evaluates_null_stream"):
            known, v = sem.arg_value(m, val) if sem is not None else (False, None)
            if known:
                ok = v == 0 or (key.endswith("stream") and v == 1)
            elif default is not None:
                ok = bool(default)
            else:
                node = m.arg(str(val))
                ok = node is not None and _arg_is(node, "null_stream" if key.endswith("stream") else "null")
        elif key == "receiver_type":
            types = val if isinstance(val, list) else [val]
            rec = m.vars.get("receiver_type")
            if rec is None and sem is not None and m.field_node is not None:
                rec = sem.facts.members.get(m.abs(m.field_node)[1])
            ok = (rec in types or any(rec.endswith("::" + t) for t in types)) if rec else (True if default is None else bool(default))
        elif key == "callee_is_api":
            fact = getattr(m, "sem", None)
            ok = (fact.api == bool(val)) if fact is not None else (True if default is None else bool(default))
        else:
            raise ConditionError(f"unknown semantic condition {key!r}")
        if not ok:
            return False
    return True


# --------------------------------------------------------------------------- CLI glue


def setup_for_cli(paths: list[Path], files: list[Path], compile_commands: Path | None, enabled: bool,
                  jobs: int | None, warn: Callable[[str], None]) -> SemanticDB | None:
    """Find/load the compile database, parse the TUs of the files being scanned, warn once per problem."""
    from .parse import clang as cl

    if not enabled:
        return None
    t0 = time.perf_counter()
    db_path = compile_commands or cl.find_compile_db(paths or [Path(".")])
    if db_path is None:
        return None
    db = open_db(db_path, warn)
    if db is None:
        return None
    db.timings.add("compile-db", time.perf_counter() - t0)
    wanted = {os.path.realpath(p) for p in files}
    tus = {f for f in db.by_file if f in wanted}
    if not tus and files:
        tus = set(db.by_file)  # only headers asked for: every TU may include them
    db.build(jobs, only=tus)
    for tu, why in sorted(db.failed.items()):
        warn(f"semantic mode: {os.path.relpath(tu)}: {why}; this translation unit is scanned with tree-sitter only")
    uncovered = [p for p in files if os.path.realpath(p) not in db.facts and os.path.realpath(p) not in db.failed]
    if uncovered:
        ex = ", ".join(str(p) for p in uncovered[:3])
        warn(f"semantic mode: {len(uncovered)} file(s) not reached from {db_path} are scanned with tree-sitter only "
             f"(e.g. {ex})")
    return db


_SEM_WORKER = None


def _sem_init(spec) -> None:
    global _SEM_WORKER
    _SEM_WORKER = spec.build()


def _sem_scan_one(item):
    path, display, facts = item
    eng = _SEM_WORKER
    eng.semantic_provider = (lambda p, d: facts if facts is not None and facts.digest == digest(d) else None)
    return eng.scan_path(Path(path), display, None)


def scan_files(engine, spec, files: list[Path], db: SemanticDB, jobs: int | None = None, progress=None):
    """Like runner.scan_files, shipping each file's facts to the worker that scans it."""
    from .runner import display_path

    jobs = jobs or min(os.cpu_count() or 1, 8)
    items = [(str(p), display_path(p), db.facts.get(os.path.realpath(p))) for p in files]
    if jobs <= 1 or len(items) < 64:
        for path, disp, facts in items:
            engine.semantic_provider = (lambda p, d, f=facts: f if f is not None and f.digest == digest(d) else None)
            r = engine.scan_path(Path(path), disp, spec.max_bytes)
            if progress:
                progress(r)
            yield r
        engine.semantic_provider = None
        return
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs, initializer=_sem_init, initargs=(spec,)) as pool:
        from .runner import pool_map

        for r in pool_map(pool, _sem_scan_one, items, lambda it: it[1]):
            if progress:
                progress(r)
            yield r
