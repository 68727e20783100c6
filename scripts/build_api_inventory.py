#!/usr/bin/env python3
"""Build `cudamigrate/data/api_inventory.json`: what the CUDA 13.0 headers themselves say is deprecated, removed or changed.

    python scripts/build_api_inventory.py --fetch     # download the pinned 12.x wheels, keep only their headers
    python scripts/build_api_inventory.py             # (re)write cudamigrate/data/api_inventory.json
    python scripts/build_api_inventory.py --check     # exit 1 if the file differs from what the headers give

Why: the hand-made catalog (cuda_api_changes.csv) only knows the libraries someone typed in; whole
libraries (cuSOLVER Sp/Rf, cuRAND, nvJPEG, nvJitLink) had no rows. The headers are the source of truth:
every declaration they mark `deprecated`/`unavailable` (the attribute, read through libclang, with its
message), and every declaration of the last 12.x headers of the same library that 13.0 no longer has, or
whose prototype differs, is listed with its header:line. scripts/gen_catalog_rules.py turns the entries that
the catalog does not already cover into catalog rules; tests/test_api_inventory.py fails when an entry has
neither a rule nor a reviewed exclusion (cudamigrate/data/api_inventory_exclusions.yaml).

What is read (recorded in the output's `sources` too)
-----------------------------------------------------
* CUDA 13.0 toolkit: /usr/local/cuda-13.0/include (nvcc 13.0.88; nvidia-cuda-runtime 13.0.96,
  nvidia-cuda-crt 13.0.88, CUDA_VERSION 13000): cudart (cuda_runtime_api.h, driver_types.h,
  surface_types.h, texture_types.h, vector_types.h, library_types.h, cuda_profiler_api.h) and the driver
  API (cuda.h, cudaProfiler.h).
* 13.0-matched library wheels (WHEELS_13, installed in the venv by scripts/dev-setup-and-test.sh; headers in
  <site-packages>/nvidia/cu13/include): nvidia-cublas 13.0.2.14, nvidia-cufft 12.0.0.61, nvidia-curand
  10.4.0.35, nvidia-cusolver 12.0.4.66, nvidia-cusparse 12.6.3.3, nvidia-npp 13.0.1.2, nvidia-nvjpeg
  13.0.1.86, nvidia-cuda-nvrtc 13.0.88, nvidia-nvjitlink 13.0.88, nvidia-nvfatbin 13.0.85.
* The last 12.x wheels of the same libraries (WHEELS_12, `--fetch` downloads them with pip into
  $CUDAMIGRATE_INVENTORY_HEADERS, default ~/.cache/cudamigrate/inventory-headers, and keeps only include/):
  nvidia-cuda-runtime-cu12 12.9.79 (cudart and cuda.h), nvidia-cublas-cu12 12.9.3.13, nvidia-cufft-cu12
  11.4.1.4, nvidia-curand-cu12 10.3.10.19, nvidia-cusolver-cu12 11.7.5.82, nvidia-cusparse-cu12 12.5.10.65,
  nvidia-npp-cu12 12.4.1.87, nvidia-nvjpeg-cu12 12.4.0.76, nvidia-cuda-nvrtc-cu12 12.9.86,
  nvidia-nvjitlink-cu12 12.9.86, nvidia-nvfatbin-cu12 12.9.82.

Not read: device-only headers (cuda_fp16.h, sm_*_intrinsics, curand_kernel.h, cooperative_groups; they need a
CUDA parse and are covered by hand-written rules), CCCL (its own catalog rows), CUPTI/NVTX/nvvm.h, and the
graphics-interop headers (cudaGL.h, cudaEGL.h, cudaVDPAU.h, cuda_gl_interop.h: they need GL/EGL/VDPAU headers).

How
---
Each library's public headers are parsed as C++17 by libclang (the libclang-ng wheel the package depends on,
or the `libclang` wheel; gcc's own include directory supplies stddef.h and friends). C++ mode makes the
`[[deprecated("...")]]` spellings (cuSOLVER's CUSOLVER_DEPRECATED(cuDSS)) active. Only declarations whose
location is one of the library's own headers are kept. Entries:

* `deprecated` / `unavailable`: clang's availability of the declaration, and the attribute's message
  (clang_getCursorPlatformAvailability); `replacement` is the name the message tells to use, if any.
* `removed`: a function, type, enumerator, field or macro of the 12.x headers that 13.0 no longer declares
  (a macro alias `#define f f_v2` counts as declaring `f`).
* `signature`: a function (or an alias macro's target) declared in both, whose parameter types differ;
  `old_signature`/`new_signature` and the argument counts (`old_args`, `new_args`, `new_min_args` without
  trailing defaults) tell whether an old call still compiles.

The output is sorted (library, name, status) and holds no absolute paths, so it is deterministic.
It takes about 25 s on one core (two parses per library, NPP and cuBLAS the longest; `--timing` prints each).
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "cudamigrate" / "data" / "api_inventory.json"
TOOLKIT = Path(os.environ.get("CUDAMIGRATE_CUDA_13", "/usr/local/cuda-13.0"))
HEADER_CACHE = Path(os.environ.get("CUDAMIGRATE_INVENTORY_HEADERS",
                                   Path.home() / ".cache" / "cudamigrate" / "inventory-headers"))

# library -> (distribution, version): the 13.0-matched wheels (headers in nvidia/cu13/include)
WHEELS_13: dict[str, tuple[str, str]] = {
    "cublas": ("nvidia-cublas", "13.0.2.14"),
    "cufft": ("nvidia-cufft", "12.0.0.61"),
    "curand": ("nvidia-curand", "10.4.0.35"),
    "cusolver": ("nvidia-cusolver", "12.0.4.66"),
    "cusparse": ("nvidia-cusparse", "12.6.3.3"),
    "npp": ("nvidia-npp", "13.0.1.2"),
    "nvjpeg": ("nvidia-nvjpeg", "13.0.1.86"),
    "nvrtc": ("nvidia-cuda-nvrtc", "13.0.88"),
    "nvjitlink": ("nvidia-nvjitlink", "13.0.88"),
    "nvfatbin": ("nvidia-nvfatbin", "13.0.85"),
}
# library -> (distribution, version, include dir inside the wheel): the last 12.x wheels
WHEELS_12: dict[str, tuple[str, str, str]] = {
    "cudart": ("nvidia-cuda-runtime-cu12", "12.9.79", "nvidia/cuda_runtime/include"),
    "cublas": ("nvidia-cublas-cu12", "12.9.3.13", "nvidia/cublas/include"),
    "cufft": ("nvidia-cufft-cu12", "11.4.1.4", "nvidia/cufft/include"),
    "curand": ("nvidia-curand-cu12", "10.3.10.19", "nvidia/curand/include"),
    "cusolver": ("nvidia-cusolver-cu12", "11.7.5.82", "nvidia/cusolver/include"),
    "cusparse": ("nvidia-cusparse-cu12", "12.5.10.65", "nvidia/cusparse/include"),
    "npp": ("nvidia-npp-cu12", "12.4.1.87", "nvidia/npp/include"),
    "nvjpeg": ("nvidia-nvjpeg-cu12", "12.4.0.76", "nvidia/nvjpeg/include"),
    "nvrtc": ("nvidia-cuda-nvrtc-cu12", "12.9.86", "nvidia/cuda_nvrtc/include"),
    "nvjitlink": ("nvidia-nvjitlink-cu12", "12.9.86", "nvidia/nvjitlink/include"),
    "nvfatbin": ("nvidia-nvfatbin-cu12", "12.9.82", "nvidia/nvfatbin/include"),
}
TOOLKIT_DISTS = ("nvidia_cuda_runtime", "nvidia_cuda_crt", "nvidia_cuda_nvcc")


@dataclass(frozen=True)
class Library:
    """One library: the headers a translation unit includes, and which headers' declarations it owns."""
    name: str
    units: tuple[tuple[str, ...], ...]  # each tuple is one translation unit's #includes
    owns: str  # regex over the header's file name
    toolkit: bool = False  # 13.0 headers from the toolkit (cudart, driver), 12.x from nvidia-cuda-runtime-cu12


LIBRARIES: tuple[Library, ...] = (
    Library("cudart", (("cuda_runtime_api.h", "cuda_profiler_api.h"),),
            r"(cuda_runtime_api|driver_types|surface_types|texture_types|vector_types|library_types|cuda_profiler_api)\.h",
            toolkit=True),
    Library("driver", (("cuda.h", "cudaProfiler.h"),), r"(cuda|cudaProfiler)\.h", toolkit=True),
    # cublas.h (legacy) and cublas_v2.h #error when both are included: two translation units
    Library("cublas", (("cublas_v2.h", "cublasLt.h", "cublasXt.h"), ("cublas.h",)),
            r"(cublas|cublas_api|cublas_v2|cublasLt|cublasXt)\.h"),
    Library("cufft", (("cufft.h", "cufftXt.h"),), r"(cufft|cufftXt|cudalibxt)\.h"),
    Library("curand", (("curand.h",),), r"curand\.h"),
    Library("cusolver", (("cusolverDn.h", "cusolverSp.h", "cusolverRf.h", "cusolverSp_LOWLEVEL_PREVIEW.h",
                          "cusolverMg.h"),), r"cusolver\w*\.h"),
    Library("cusparse", (("cusparse.h",),), r"cusparse\.h"),
    Library("npp", (("npp.h",),), r"npp\w*\.h"),
    Library("nvjpeg", (("nvjpeg.h",),), r"nvjpeg\.h"),
    Library("nvrtc", (("nvrtc.h",),), r"nvrtc\.h"),
    Library("nvjitlink", (("nvJitLink.h",),), r"nvJitLink\.h"),
    Library("nvfatbin", (("nvFatbin.h",),), r"nvFatbin\.h"),
)


@dataclass
class Decl:
    """One declaration as read from a header."""
    name: str
    kind: str  # function, type, enumerator, field, macro
    header: str  # file name:line
    deprecated: bool = False
    unavailable: bool = False
    message: str = ""
    signature: str = ""  # functions: the prototype's type, parameter names left out
    args: int = 0
    min_args: int = 0
    alias_of: str = ""  # macros `#define f f_v2`: the target
    announced: str = ""  # the doc comment's "will be deprecated in a future ... release" sentence(s)


@dataclass
class Entry:
    """One inventory line: a 13.0 declaration that is deprecated/unavailable, or a 12.x one removed or changed."""
    library: str
    name: str
    kind: str
    status: str  # deprecated, unavailable, removed, signature
    header: str = ""  # 13.0 header:line (empty for removed)
    message: str = ""
    replacement: str = ""
    deprecated_in_12: bool = False  # already marked deprecated in the 12.x header
    old_header: str = ""  # 12.x header:line
    old_signature: str = ""
    new_signature: str = ""
    old_args: int | None = None
    new_args: int | None = None
    new_min_args: int | None = None
    source: str = ""  # the distribution and version the 13.0 (or, for removals, 12.x) header came from
    aliases: tuple[str, ...] = ()  # macros `#define alias name` of the same header: what user code writes
    release: str = ""  # --releases: the release whose headers made the change
    previous: str = ""  # --releases: the release compared against
    restored: str = ""  # --releases: a later release that declares a removed name again
    compatible: str = ""  # --releases: why a changed prototype still accepts every old call (by-value widening)


# --------------------------------------------------------------------------------------------- libclang

def _cindex():
    from clang import cindex  # libclang-ng (the package's dependency) or the `libclang` wheel
    return cindex


def _libclang_dist() -> str:
    """The wheel that provides `clang.cindex` here, with its version (recorded in the inventory's sources)."""
    for dist in ("libclang-ng", "libclang"):
        try:
            return f"{dist} {importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return "libclang (unknown wheel)"


def _availability_fn(ci):
    fn = ci.conf.lib.clang_getCursorPlatformAvailability
    fn.argtypes = [ci.Cursor, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ci._CXString), ctypes.POINTER(ctypes.c_int),
                   ctypes.POINTER(ci._CXString), ctypes.c_void_p, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


def gcc_include_dirs() -> list[str]:
    """gcc's own include directory (stddef.h, stdarg.h): the libclang wheel ships no resource headers."""
    dirs = sorted(glob.glob("/usr/lib/gcc/x86_64-linux-gnu/*/include") + glob.glob("/usr/lib/gcc/*-linux-gnu/*/include"),
                  key=lambda d: [int(x) for x in re.findall(r"/(\d+)/include$", d)] or [0])
    if not dirs:
        raise SystemExit("no gcc include directory (stddef.h) under /usr/lib/gcc: install gcc")
    return [dirs[-1]]


_WS = re.compile(r"\s+")


def _norm(t: str) -> str:
    return _WS.sub(" ", t).replace("( ", "(").replace(" )", ")").strip()


def _param_has_default(c) -> bool:
    return any(t.spelling == "=" for t in c.get_tokens())


def read_unit(includes: tuple[str, ...], dirs: list[str], owns: str, after: list[str],
              anonymous_members: bool = False) -> dict[tuple[str, str], Decl]:
    """Parse one translation unit; the declarations of the owned headers, keyed by (name, kind).

    Only headers found in dirs[0] (the library's own include directory) are owned; `after` directories
    (-idirafter) supply headers the 12.x wheels do not ship (crt/host_defines.h: macros only)."""
    ci = _cindex()
    avail = _availability_fn(ci)
    args = ["-x", "c++", "-std=c++17", "-w"]
    for d in gcc_include_dirs():
        args += ["-isystem", d]
    for d in dirs:
        args += ["-I", d]
    for d in after:
        args += ["-idirafter", d]
    src = "".join(f"#include <{h}>\n" for h in includes)
    idx = ci.Index.create()
    tu = idx.parse("inventory_unit.cpp", args=args, unsaved_files=[("inventory_unit.cpp", src)],
                   options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD | ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES)
    errors = [str(d) for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errors:
        raise SystemExit(f"cannot parse {', '.join(includes)} with {dirs}: {errors[0]}")
    owned_rx = re.compile(owns + r"$")
    primary = os.path.normpath(dirs[0])
    out: dict[tuple[str, str], Decl] = {}
    K = ci.CursorKind

    # each declaration's file, by its libclang file handle (unique within one unit): the owned base name and
    # whether it is a system header. cindex's `c.location.file` builds two Python objects a cursor, which made
    # this check over the ~2 million cursors of the 17 releases (most of them the C++ library's, whose
    # namespaces are now skipped whole) the script's largest cost
    lib = ci.conf.lib
    handle = ci.c_object_p()
    owners: dict[int, tuple[str | None, bool]] = {}
    system = tuple(os.path.normpath(d) + os.sep for d in ("/usr/include", *gcc_include_dirs()))

    def file_of(c) -> tuple[str | None, bool]:
        lib.clang_getInstantiationLocation(lib.clang_getCursorLocation(c), ctypes.byref(handle), None, None, None)
        key = ctypes.cast(handle, ctypes.c_void_p).value
        if key is None:
            return None, False
        got = owners.get(key)
        if got is None:
            name = ci.File(ctypes.cast(key, ci.c_object_p)).name
            base = os.path.basename(name)
            inside = os.path.dirname(os.path.normpath(name)) == primary
            got = owners[key] = (base if inside and owned_rx.fullmatch(base) else None,
                                 os.path.normpath(name).startswith(system))
        return got

    def add(d: Decl) -> None:
        key = (d.name, d.kind)
        old = out.get(key)
        if old is None:
            out[key] = d
            return
        # a redeclaration: deprecated if any declaration is; keep the first location
        if d.deprecated and not old.deprecated:
            old.deprecated, old.message = True, d.message or old.message
        if d.unavailable and not old.unavailable:
            old.unavailable, old.message = True, d.message or old.message

    def availability(c) -> tuple[bool, bool, str]:
        kind = c.availability
        if kind == ci.AvailabilityKind.AVAILABLE:
            return False, False, ""
        ad, au = ctypes.c_int(), ctypes.c_int()
        dm, um = ci._CXString(), ci._CXString()
        avail(c, ctypes.byref(ad), ctypes.byref(dm), ctypes.byref(au), ctypes.byref(um), None, 0)
        dmsg, umsg = ci._CXString.from_result(dm), ci._CXString.from_result(um)
        dep = kind == ci.AvailabilityKind.DEPRECATED or bool(ad.value)
        unav = kind == ci.AvailabilityKind.NOT_AVAILABLE or bool(au.value)
        return dep, unav, _norm(umsg or dmsg or "")

    def type_name(c) -> str:
        if c.spelling and "(unnamed" not in c.spelling and "(anonymous" not in c.spelling:
            return c.spelling
        t = c.type.spelling
        return "" if "(unnamed" in t or "(anonymous" in t else t.replace("struct ", "").replace("union ", "").replace("enum ", "")

    def children(c) -> list:
        """cindex's get_children without its per-child null check (a libclang call each: a visited child is never
        null) and without the null guard of the `kind` property (`_kind_id` is the kind's number)."""
        out: list = []

        def each(child, _parent, _data) -> int:
            child._tu = c._tu  # keep the unit alive as long as the cursor, as cindex does
            out.append(child)
            return 1

        lib.clang_visitChildren(c, ci.cursor_visit_callback(each), out)
        return out

    scopes = (K.LINKAGE_SPEC.value, K.NAMESPACE.value)
    # the kinds the walk below records or descends into; any other child (macro expansions and inclusion
    # directives of the detailed processing record, most of the children) is passed over before its file is asked
    wanted = frozenset(scopes) | {k.value for k in (K.MACRO_DEFINITION, K.FUNCTION_DECL, K.TYPEDEF_DECL, K.STRUCT_DECL,
                                                     K.UNION_DECL, K.ENUM_DECL, K.ENUM_CONSTANT_DECL, K.FIELD_DECL,
                                                     K.VAR_DECL)}

    def visit(c, parent_type: str = "") -> None:
        for ch in children(c):
            if ch._kind_id not in wanted:
                continue
            hdr, in_system = file_of(ch)
            if in_system:
                continue  # the C and C++ libraries' own declarations and namespace blocks: never a library's
            if ch._kind_id in scopes:
                visit(ch)
                continue
            if hdr is None:
                continue
            k = ch.kind
            loc = f"{hdr}:{ch.location.line}"
            if k == K.MACRO_DEFINITION:
                name = ch.spelling
                toks = [t.spelling for t in ch.get_tokens()]
                if name.startswith("_") or len(toks) <= 1:
                    continue  # internal macros, include guards and empty markers
                alias = toks[1] if len(toks) == 2 and re.fullmatch(r"[A-Za-z_]\w*", toks[1]) else ""
                add(Decl(name, "macro", loc, alias_of=alias))
                continue
            dep, unav, msg = availability(ch)
            if k == K.FUNCTION_DECL:
                n = max(0, lib.clang_Cursor_getNumArguments(ch))  # only the trailing defaults' cursors are made
                req = n
                while req and _param_has_default(ci.Cursor.from_result(lib.clang_Cursor_getArgument(ch, req - 1), ch)):
                    req -= 1
                add(Decl(ch.spelling, "function", loc, dep, unav, msg, _norm(ch.type.spelling), n, req,
                         announced=announcement_of(ch.raw_comment or "")))
            elif k == K.TYPEDEF_DECL:
                add(Decl(ch.spelling, "type", loc, dep, unav, msg))
            elif k in (K.STRUCT_DECL, K.UNION_DECL, K.ENUM_DECL):
                tn = type_name(ch)
                if tn and ch.is_definition():
                    add(Decl(tn, "type", loc, dep, unav, msg))
                elif tn and (dep or unav):
                    add(Decl(tn, "type", loc, dep, unav, msg))
                inner = tn
                if not inner:  # `typedef struct { ... } Name;`: fields are Name::field
                    nxt = ch.type.get_canonical().spelling
                    inner = "" if "(unnamed" in nxt or "(anonymous" in nxt else nxt
                if not inner and anonymous_members and parent_type:
                    inner = parent_type  # `struct S { union { int id; }; }`: S::id, as code writes it
                visit(ch, inner)
            elif k == K.ENUM_CONSTANT_DECL:
                add(Decl(ch.spelling, "enumerator", loc, dep, unav, msg))
            elif k == K.FIELD_DECL and parent_type:
                add(Decl(f"{parent_type}::{ch.spelling}", "field", loc, dep, unav, msg))
            elif k == K.VAR_DECL:
                add(Decl(ch.spelling, "variable", loc, dep, unav, msg))

    visit(tu.cursor)
    return out


def read_library(lib: Library, dirs: list[str], after: list[str],
                 anonymous_members: bool = False) -> dict[tuple[str, str], Decl]:
    """The library's declarations; `anonymous_members` also lists the fields of an anonymous struct or union
    as fields of the enclosing type (build_release_inventory.py: 13.2 moved CUmemLocation::id into one)."""
    decls: dict[tuple[str, str], Decl] = {}
    for unit in lib.units:
        for key, d in read_unit(unit, dirs, lib.owns, after, anonymous_members).items():
            decls.setdefault(key, d)
    return decls


# --------------------------------------------------------------------------------------------- comparing

# A match starts where a run of characters other than `.`, newline and `*` starts (the lookbehind): the matches are
# those without it (leftmost: a later start in the same run cannot succeed where the run's start failed, and each
# match ends after a `.`), but the search no longer rescans every run from each of its positions (2 ms a doc comment)
_ANNOUNCE = re.compile(r"(?:^|(?<=[.\n*]))[^.\n*]*\bwill be (?:deprecated|removed)\b[^.]*\.(?:\s*Please[^.]*\.)?", re.I)
_MIGRATE = re.compile(r"\b(?:migrate to|use)\s+(?:the\s+)?(?:::)?([A-Za-z_]\w*)", re.I)


def announcement_of(comment: str) -> str:
    """The doc comment's announcement of a future deprecation or removal, in the header's own words.

    CUDA 13.5's cuda_runtime_api.h: "\\warning This function will be deprecated in a future CUDA release.
    Please migrate to ::cudaGraphAddNode." (a Doxygen comment, not an attribute: clang reports it available)."""
    if "will be " not in comment.lower():  # what _ANNOUNCE needs; its search costs ~0.2 ms a comment otherwise
        return ""
    found = [_norm(m.group(0).replace("*", " ")).removeprefix("\\warning ").strip() for m in _ANNOUNCE.finditer(comment)]
    return " ".join(dict.fromkeys(f for f in found if f))


_USE = re.compile(r"\b(?:please\s+)?use\s+(?:the\s+)?[`'\"]?([A-Za-z_][\w:]*(?:\(\))?)", re.I)


def replacement_of(message: str) -> str:
    m = _USE.search(message or "")
    if not m:
        return ""
    name = m.group(1).removesuffix("()")
    return "" if name.lower() in ("the", "a", "an", "instead") else name


def _functions(decls: dict[tuple[str, str], Decl]) -> dict[str, Decl]:
    """User-visible function names: declared functions, and alias macros (`#define f f_v2`) resolved to their target."""
    fns = {n: d for (n, k), d in decls.items() if k == "function"}
    out = dict(fns)
    for (n, k), d in decls.items():
        if k == "macro" and d.alias_of in fns and n not in fns:
            out[n] = fns[d.alias_of]
    return out


def _aliases(decls: dict[tuple[str, str], Decl]) -> dict[str, tuple[str, ...]]:
    """function name -> the alias macros naming it (`#define cuTexRefSetAddress2D cuTexRefSetAddress2D_v3`)."""
    out: dict[str, list[str]] = {}
    for (n, k), d in decls.items():
        if k == "macro" and d.alias_of and d.alias_of != n:
            out.setdefault(d.alias_of, []).append(n)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def compare(lib: str, new: dict[tuple[str, str], Decl], old: dict[tuple[str, str], Decl],
            new_src: str, old_src: str) -> list[Entry]:
    entries: list[Entry] = []
    new_alias, old_alias = _aliases(new), _aliases(old)
    new_names = {n for n, _ in new}
    for (name, kind), d in new.items():
        if not (d.deprecated or d.unavailable):
            continue
        o = old.get((name, kind))
        entries.append(Entry(lib, name, kind, "unavailable" if d.unavailable else "deprecated", d.header, d.message,
                             replacement_of(d.message), bool(o and (o.deprecated or o.unavailable)),
                             o.header if o else "", source=new_src, aliases=new_alias.get(name, ())))
    for (name, kind), o in old.items():
        if name in new_names:
            continue  # still declared (possibly as another kind: a function that became a macro alias)
        entries.append(Entry(lib, name, kind, "removed", "", o.message, replacement_of(o.message),
                             o.deprecated or o.unavailable, o.header, o.signature if kind == "function" else "",
                             old_args=o.args if kind == "function" else None, source=old_src,
                             aliases=tuple(a for a in old_alias.get(name, ()) if a not in new_names)))
    nf, of = _functions(new), _functions(old)
    for name in sorted(set(nf) & set(of)):
        n, o = nf[name], of[name]
        if n.signature == o.signature:
            continue
        entries.append(Entry(lib, name, "function", "signature", n.header, n.message, "", o.deprecated, o.header,
                             o.signature, n.signature, o.args, n.args, n.min_args, source=new_src))
    return entries


# --------------------------------------------------------------------------------------------- sources

def site_include_13() -> Path:
    """<site-packages>/nvidia/cu13/include of the running interpreter."""
    for p in sys.path:
        d = Path(p) / "nvidia" / "cu13" / "include"
        if d.is_dir():
            return d
    raise SystemExit("no nvidia/cu13/include on sys.path: install the 13.0 wheels (scripts/dev-setup-and-test.sh)")


def check_installed_13() -> list[str]:
    """Mismatches between WHEELS_13 and what is installed (the inventory must say what it read)."""
    bad = []
    for dist, ver in WHEELS_13.values():
        try:
            have = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            have = "not installed"
        if have != ver:
            bad.append(f"{dist}=={ver} (have {have})")
    return bad


def toolkit_versions(toolkit: Path) -> list[str]:
    out = []
    for name in TOOLKIT_DISTS:
        for d in sorted(glob.glob(str(toolkit / "dist-info" / f"{name}-*.dist-info"))):
            dist, _, version = os.path.basename(d).removesuffix(".dist-info").partition("-")
            out.append(f"{dist.replace('_', '-')}=={version}")
    hdr = toolkit / "include" / "cuda.h"
    m = re.search(r"#define CUDA_VERSION (\d+)", hdr.read_text(encoding="utf-8", errors="replace")) if hdr.is_file() else None
    if m:
        out.append(f"cuda.h CUDA_VERSION {m.group(1)}")
    return out


def stamp_12(cache: Path) -> Path:
    return cache / "cu12.json"


def fetch_12(cache: Path) -> None:
    """Download the pinned 12.x wheels with pip and keep only their include/ trees (the wheels are deleted)."""
    cache.mkdir(parents=True, exist_ok=True)
    want = {lib: f"{d}=={v}" for lib, (d, v, _) in WHEELS_12.items()}
    if stamp_12(cache).is_file() and json.loads(stamp_12(cache).read_text()) == want:
        print(f"12.x headers already in {cache}")
        return
    with tempfile.TemporaryDirectory(prefix="inv-wheels-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", tmp, *want.values()]
        subprocess.run(cmd, check=True)
        for whl in sorted(Path(tmp).glob("*.whl")):
            with zipfile.ZipFile(whl) as z:
                for m in z.namelist():
                    if "/include/" in m and not m.endswith("/"):
                        z.extract(m, cache)
    stamp_12(cache).write_text(json.dumps(want, indent=1, sort_keys=True) + "\n")
    print(f"12.x headers of {len(want)} wheels in {cache}")


def have_sources(cache: Path = HEADER_CACHE, toolkit: Path = TOOLKIT) -> str | None:
    """None when everything the inventory reads is here, else why not (tests skip with it)."""
    if not (toolkit / "include" / "cuda.h").is_file():
        return f"no CUDA 13.0 toolkit headers at {toolkit}/include"
    try:
        site_include_13()
    except SystemExit as e:
        return str(e)
    bad = check_installed_13()
    if bad:
        return "13.0 wheels not installed as pinned: " + ", ".join(bad)
    want = {lib: f"{d}=={v}" for lib, (d, v, _) in WHEELS_12.items()}
    if not stamp_12(cache).is_file() or json.loads(stamp_12(cache).read_text()) != want:
        return f"12.x headers not fetched into {cache} (python scripts/build_api_inventory.py --fetch)"
    try:
        _cindex().conf.lib  # noqa: B018 - loads libclang.so
    except Exception as e:  # noqa: BLE001 - any failure to load libclang means: cannot build here
        return f"libclang not loadable: {e}"
    return None


def build(cache: Path = HEADER_CACHE, toolkit: Path = TOOLKIT, timing: bool = False) -> dict:
    why = have_sources(cache, toolkit)
    if why:
        raise SystemExit(why)
    inc13 = site_include_13()
    tk_inc = toolkit / "include"
    rt12 = cache / WHEELS_12["cudart"][2]
    entries: list[Entry] = []
    counts: dict[str, dict[str, int]] = {}
    for lib in LIBRARIES:
        t0 = time.perf_counter()
        if lib.toolkit:
            new_dirs, old_dirs = [str(tk_inc)], [str(rt12)]
            new_src = "cuda-13.0 include"
            old_src = "{}=={}".format(*WHEELS_12["cudart"][:2])
        else:
            new_dirs, old_dirs = [str(inc13), str(tk_inc)], [str(cache / WHEELS_12[lib.name][2]), str(rt12)]
            new_src = "{}=={}".format(*WHEELS_13[lib.name])
            old_src = "{}=={}".format(*WHEELS_12[lib.name][:2])
        new = read_library(lib, new_dirs, [])
        others = [str(cache / w[2]) for n, w in sorted(WHEELS_12.items()) if n not in (lib.name, "cudart")]
        old = read_library(lib, old_dirs, others + [str(tk_inc)])
        got = compare(lib.name, new, old, new_src, old_src)
        entries += got
        counts[lib.name] = {s: sum(1 for e in got if e.status == s) for s in ("deprecated", "unavailable", "removed", "signature")}
        counts[lib.name]["declarations_13"] = len(new)
        counts[lib.name]["declarations_12"] = len(old)
        if timing:
            print(f"{lib.name}: {time.perf_counter() - t0:.1f}s, {counts[lib.name]}", file=sys.stderr)
    entries.sort(key=lambda e: (e.library, e.name, e.kind, e.status))
    return {
        "generated_by": "scripts/build_api_inventory.py",
        "sources": {
            "toolkit_13": {"include": "/usr/local/cuda-13.0/include", "versions": toolkit_versions(toolkit)},
            "wheels_13": {lib: f"{d}=={v}" for lib, (d, v) in sorted(WHEELS_13.items())},
            "wheels_12": {lib: f"{d}=={v}" for lib, (d, v, _) in sorted(WHEELS_12.items())},
            "parser": f"{_libclang_dist()} (-x c++ -std=c++17)",
        },
        "counts": counts,
        "entries": [{k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(e).items()
                     if v not in ("", None, {}, False, ())} for e in entries],
    }


def render(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=False, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fetch", action="store_true", help="download the pinned 12.x wheels' headers, then build")
    ap.add_argument("--fetch-only", action="store_true", help="download the pinned 12.x wheels' headers and stop")
    ap.add_argument("--check", action="store_true", help="exit 1 if the inventory file differs from what would be written")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--timing", action="store_true", help="print each library's parse time and counts")
    args = ap.parse_args(argv)
    if args.fetch or args.fetch_only:
        fetch_12(HEADER_CACHE)
        if args.fetch_only:
            return 0
    t0 = time.perf_counter()
    text = render(build(timing=args.timing))
    if args.check:
        same = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        print(f"{args.out}: {'up to date' if same else 'differs from the headers (re-run scripts/build_api_inventory.py)'}")
        return 0 if same else 1
    args.out.write_text(text, encoding="utf-8")
    n = text.count('"status"')
    print(f"wrote {args.out} ({n} entries) in {time.perf_counter() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
