"""The compiler as the recall oracle: every nvcc 13.0 diagnostic caused by a CUDA API change, and whether
`cudamigrate scan` has a finding on it.

    python bench/compile_recall.py TREE [--fixed] [--json out.json] [-j N] [--compile-commands DB]
        [--syntax-only] [--nvcc-release X.Y] [--only PREFIX ...] [--wheel-include DIR ...] [-I DIR ...] [--cache DIR] [--work DIR]
        [--budget-minutes N] [--scan-args "..."] [--fix-args "..."]

Why: fixtures and NVIDIA's hand migration measure what we thought of; the compiler does not care. Every
deprecation warning nvcc 13.0 prints and every error a removed or changed API causes is a site the tool
should report, so the fraction of those sites that carry a finding is the tool's recall on that tree.

What it does:
1. (`--fixed`) copies TREE to a work dir and runs `cudamigrate fix --unsafe-fixes` on the copy; the copy is
   then the tree measured, and TREE itself is compiled too, to count compile regressions (units that
   compiled before the fix and not after);
2. compiles every `*.cu|*.cpp|*.c` translation unit (`--only` restricts them to path prefixes) with nvcc
   13.0: the unit's flags from the compile database when one is given, else the flags pinned in
   `bench/oracle_cuda_samples.py` (`-std=c++17 -arch=sm_90 -c`; include dirs: the unit's dir, its
   cuda-samples sample dir, `Common/`, every `include`/`inc` dir of the tree and the 13.0-matched wheel
   headers), always with deprecation diagnostics on (`-Wno-deprecated-declarations` and `-w` dropped,
   `-Xcompiler -Wdeprecated-declarations` added) and `LC_ALL=C` so gcc quotes with ASCII;
3. parses every diagnostic (EDG front end `file(line): error|warning #N-D: ...` and gcc
   `file:line:col: warning|error: ...`, with the instantiation context of each) and keeps the sites
   (file, line) inside the tree: a diagnostic located in a toolkit header but reached from the tree through a
   template instantiation counts at the tree line that instantiated it; sites are deduplicated across units;
4. classifies each diagnostic: a deprecation whose declaration is in a CUDA header (toolkit or wheel
   include dir) or whose name is a CUDA API, or an error naming a CUDA API (undefined identifier, missing
   member of a CUDA type, wrong argument count or type in a call of a CUDA API, a missing CUDA header) is a
   CUDA site, named by its API and library (`cudamigrate/data/cuda_api_changes.csv` first, then the name's
   prefix and the declaring header). Everything else (a missing third-party header, also one that a CUDA
   header includes, like cudaEGL.h's EGL/egl.h; a CUDA header only other platforms' toolkits ship,
   PLATFORM_HEADERS; a user's own deprecated function; an error with no CUDA name) is listed apart and not
   counted;
5. runs `cudamigrate scan --format json` on the same tree and calls a site covered when a finding of the
   same file overlaps the statement that holds the site, or, counted in a column of its own ("only a related
   location"), when a finding's related location (in any file: the uses of a texture reference listed by its
   finding at the declaration) is on the statement; apart from those, a site is "covered only by a fix
   edit" when a finding on another line has a fix that edits the statement, and "covered through its cause"
   when its diagnostic names a user type whose definition in the tree carries a finding, or when it is in a
   template of the tree and a line that instantiated it (EDG's `detected during ... at line N`) carries a
   finding naming the site's API (a `double4` template argument: its CM511 finding at the instantiation);
6. prints markdown (by library, by rule, every uncovered site, the non-CUDA diagnostics) and, with
   `--json`, the same data.

A unit whose compile stops at front-end errors never reaches the host compiler, so the gcc deprecation
warnings in it are not observable; the report counts these units. Running on the `--fixed` copy, where the
errors are gone, shows those warnings.

Compiles are cached (`--cache`) by the unit's flags, the nvcc version and the content of the unit and every
header it includes from the tree (the oracle's content key), so a re-run or the `--fixed` run only compiles
what changed.
"""

from __future__ import annotations

import argparse
import collections
import csv
import dataclasses
import functools
import hashlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

_HERE = Path(__file__).resolve().parent
oracle: Any    # bench/oracle_cuda_samples.py (not a package): its compile cache and helpers
if "oracle_cuda_samples" in sys.modules:
    oracle = sys.modules["oracle_cuda_samples"]
else:
    _spec = importlib.util.spec_from_file_location("oracle_cuda_samples", _HERE / "oracle_cuda_samples.py")
    oracle = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
    sys.modules["oracle_cuda_samples"] = oracle
    _spec.loader.exec_module(oracle)  # type: ignore[union-attr]

CSV_PATH = _HERE.parent / "cudamigrate" / "data" / "cuda_api_changes.csv"
UNIT_EXTS = (".cu", ".cpp", ".c", ".cc", ".cxx")
DIAG_FLAGS = ["-Xcompiler", "-Wdeprecated-declarations"]
# `--syntax-only`: the host compiler checks the host code and emits no object. cicc and ptxas still run: the
# device front end reports device-side errors (`__shfl` undefined) that the host passes (cudafe++, gcc) never
# see, and ptxas the inline-PTX ones, so only the host compiler's code generation is skipped (its warnings,
# -Wdeprecated-declarations among them, come from its front end).
SYNTAX_ONLY = ["-Xcompiler", "-fsyntax-only"]
# flags of a compile database entry that would hide diagnostics or write elsewhere
_DROP_FLAGS = {"-w", "-Wno-deprecated-declarations", "--Wno-deprecated-declarations", "-Werror"}
_DROP_WITH_ARG = {"-o", "--output-file", "-MF", "-MT", "-MQ"}

LIBRARY_NAMES = {"cudart": "cudart", "driver": "driver", "cublas": "cuBLAS", "cublaslt": "cuBLAS",
                 "cusparse": "cuSPARSE", "cusolver": "cuSOLVER", "cufft": "cuFFT", "npp": "NPP",
                 "curand": "cuRAND", "nvrtc": "NVRTC", "thrust": "CCCL", "cub": "CCCL", "libcudacxx": "CCCL",
                 "cccl": "CCCL", "device": "device intrinsics", "cooperative_groups": "cooperative groups",
                 "nvtx": "NVTX", "nvjitlink": "nvJitLink", "nvjpeg": "nvJPEG"}
# name prefix -> library, tried in order (longest first where they overlap)
_PREFIX_LIBS = [("cusparse", "cuSPARSE"), ("cusolver", "cuSOLVER"), ("cublas", "cuBLAS"), ("cufft", "cuFFT"),
                ("curand", "cuRAND"), ("nvrtc", "NVRTC"), ("npp", "NPP"), ("nvtx", "NVTX"),
                ("nvjitlink", "nvJitLink"), ("nvjpeg", "nvJPEG"), ("thrust::", "CCCL"), ("cub::", "CCCL"), ("cuda::", "CCCL"),
                ("cooperative_groups::", "cooperative groups"), ("cuda", "cudart"), ("tex", "cudart"), ("surf", "cudart"), ("cu", "driver"),
                ("__", "device intrinsics")]
_HEADER_LIBS = [(r"cusparse", "cuSPARSE"), (r"cusolver", "cuSOLVER"), (r"cublas", "cuBLAS"), (r"cufft", "cuFFT"),
                (r"curand", "cuRAND"), (r"nvrtc", "NVRTC"), (r"/npp", "NPP"), (r"nvToolsExt|nvtx", "NVTX"), (r"nvjpeg", "nvJPEG"),
                (r"nvJitLink", "nvJitLink"),
                (r"/(?:cccl/)?(?:thrust|cub|cuda)/", "CCCL"), (r"cooperative_groups", "cooperative groups"),
                (r"/cuda\.h$|cudaTypedefs|cudaGL\.h|cudaEGL\.h", "driver"),
                (r"intrinsics|device_functions|device_atomic|sm_\d+|math_functions", "device intrinsics"),
                (r"cuda_runtime|driver_types|vector_types|vector_functions|texture_|surface_|channel_descriptor"
                 r"|cuda_\w+\.h", "cudart")]
_API_SHAPE = re.compile(r"(?:thrust|cub|cuda|cooperative_groups)::\w|(?:cuda|cublas|cufft|cusparse|cusolver|curand"
                        r"|nvrtc|npp|nvtx|nvJitLink|nvjpeg)\w*$|cu[A-Z]\w*$|(?:CU|CUDA|CUBLAS|CUFFT|CUSPARSE|CUSOLVER"
                        r"|CURAND|NVRTC|NPP|NVJPEG|NVJITLINK)_\w+$|(?:cuda|cu)[A-Z]\w*::\w+$"
                        r"|(?:tex|surf)(?:1D|2D|3D|Cubemap)\w*$")
# headers that belong to the CUDA toolkit or its libraries (a `cannot open source file` of one is a CUDA site)
# a header no CUDA toolkit on this machine has, but whose name only NVIDIA uses: the CCCL and NVTX namespaces,
# the libraries' prefixes, the headers texture references took with them in 12.0 (when the 12.x wheels' headers
# are not there to say so). Generic prefixes (`cuda`, `device_`, `math_`) are not here: `cudacommon.h` is a
# project's own header (SHOC), and every real CUDA header of that kind is in `shipped_headers`.
_CUDA_HEADER = re.compile(r"^(?:thrust|cub|cuda|cooperative_groups|nv|nvtx3)/|^(?:cublas|cufft|curand|cusolver|cusparse|npp"
                          r"|nvrtc|nvToolsExt|nvtx|nvjpeg|nvJitLink|sm_\d+_|texture_fetch_functions|surface_functions"
                          r"|texture_indirect_functions|surface_indirect_functions|cuda_texture_types|cuda_surface_types)\w*")
# the last 12.x wheels' headers, where scripts/build_api_inventory.py --fetch-only keeps them
OLD_HEADERS = Path(os.environ.get("CUDAMIGRATE_INVENTORY_HEADERS",
                                  Path.home() / ".cache" / "cudamigrate" / "inventory-headers"))


@functools.lru_cache(maxsize=8)
def shipped_headers(dirs: tuple[str, ...]) -> frozenset[str]:
    """Every header CUDA ships, by its path under an include dir: the files under the toolkit's
    and the 13.0 wheels' include dirs (`dirs`), and under the 12.x wheels' (headers that 13.0 removed)."""
    roots = [Path(d) for d in dirs]
    if OLD_HEADERS.is_dir():
        roots += [p for p in OLD_HEADERS.glob("**/include") if p.is_dir()]
    out: set[str] = set()
    for r in roots:
        for p in r.rglob("*"):
            if p.suffix in (".h", ".hpp", ".cuh", ".inl", "") and p.is_file():
                out.add(p.relative_to(r).as_posix())  # `cuda.h`, `crt/host_config.h`, never a bare `config.h`
    return frozenset(out)

# CUDA headers that no Linux x86_64 toolkit ships: an `#include` of one fails because of the platform the tree
# is compiled on, not because of an API change, so its diagnostic is listed apart (not counted). Each entry
# names the platforms that ship it and where that fact comes from.
@dataclasses.dataclass(frozen=True)
class PlatformHeader:
    """A CUDA header shipped only by the toolkits of other platforms."""
    platforms: str
    source: str


PLATFORM_HEADERS: dict[str, PlatformHeader] = {
    "cudla.h": PlatformHeader(
        "Linux/QNX aarch64 (Jetson, DRIVE): cuDLA drives the Deep Learning Accelerator of Tegra SoCs",
        "NVIDIA's redist index lists libcudla only under linux-aarch64 "
        "(developer.download.nvidia.com/compute/cuda/redist/libcudla/linux-aarch64); the nvidia-cudla wheel is "
        "manylinux aarch64 only (pypi.org/project/nvidia-cudla); cuda-python's cudla page: 'require a Jetson "
        "platform with DLA hardware ... not available on desktop GPUs'; cuda-samples' cuDLAErrorReporting README: "
        "Supported OSes Linux, QNX; CPU aarch64; absent from the Linux x86_64 13.0 toolkit include dir"),
    **{h: PlatformHeader(
        "Windows (Direct3D is a Windows API)",
        "CUDA Runtime/Driver API docs: Direct3D 9/10/11 Interoperability modules (cudaD3D9.h, cudaD3D10.h, "
        "cudaD3D11.h); cuda-samples' simpleD3D9 README: Supported OS Windows, x86_64; absent from the Linux x86_64 "
        "13.0 toolkit include dir, which ships the GL, EGL and VDPAU interop headers only")
       for h in ("cuda_d3d9_interop.h", "cuda_d3d10_interop.h", "cuda_d3d11_interop.h",
                 "cudaD3D9.h", "cudaD3D10.h", "cudaD3D11.h",
                 "cudaD3D9Typedefs.h", "cudaD3D10Typedefs.h", "cudaD3D11Typedefs.h")},
}
PLATFORM_REASON = "platform header not shipped for this platform (not an API change)"
# OpenCL's headers (`CL/cl.h`, ...) are Khronos' API, which CUDA ships as a component of its own: the 11.x
# nvidia-cuda-runtime-cu11 wheels carry include/CL/, 12.x and 13.x put it in nvidia-cuda-opencl, which neither the
# pinned 13.5 compiler wheels (core/pip_toolkit.py) nor every toolkit install include. A missing one says which
# components are installed, not that a CUDA API changed (Parboil's parboil.h includes it).
OPENCL_REASON = "an OpenCL header (Khronos' API; CUDA's OpenCL component, not installed here): not a CUDA API change"


# ------------------------------------------------------------------------------------------ parsing
@dataclasses.dataclass(frozen=True)
class Diagnostic:
    """One compiler diagnostic: where it is, what it says, and the tree locations that led to it."""
    path: str
    line: int
    severity: str                     # 'error' | 'warning'
    message: str
    column: int | None = None
    source: str = ""                  # the source line EDG echoed ('' for gcc)
    decl_path: str = ""               # where the deprecated entity is declared ('declared here' / 'declared at')
    context: tuple[tuple[str, int], ...] = ()   # instantiation / inclusion locations, innermost first


_EDG = re.compile(r"^(?P<path>\S[^()\n]*?)\((?P<line>\d+)\): (?P<sev>error|warning|catastrophic error|fatal error)"
                  r"(?: #\d+(?:-D)?)?: (?P<msg>.*)$")
_GCC = re.compile(r"^(?P<path>[^\s:][^:\n]*):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>error|warning|fatal error|note)"
                  r": (?P<msg>.*)$")
_GCC_CTX = re.compile(r"^(?P<path>[^\s:][^:\n]*):(?P<line>\d+):(?:\d+:)?\s+required (?:from|by)\b")
_GCC_INCL = re.compile(r"^(?:In file included from|\s+from) (?P<path>[^:\n]+):(?P<line>\d+)")
_EDG_NOTE = re.compile(r"^(?P<path>\S[^()\n]*?)\((?P<line>\d+)\): note #\d+(?:-D)?: (?P<msg>.*)$")
_EDG_CTX = re.compile(r'at line (?P<line>\d+) of "?(?P<path>[^"\s]+?)"?(?:\s|$|,)')
_TOOL_ERROR = re.compile(r"^(?:ptxas|nvlink|nvcc|cicc)\b.*\berror\b|^(?:ptxas|nvcc) fatal", re.I)
_EDG_DECLARED_AT = re.compile(r'\(declared at line \d+ of "(?P<path>[^"]+)"\)')


def parse_diagnostics(output: str) -> list[Diagnostic]:
    """Every error and warning in nvcc's combined output (EDG front end, cicc and gcc formats).

    gcc's `note: declared here` after a deprecation warning gives the declaring header; gcc's
    `required from` / `In file included from` lines before a diagnostic and EDG's `detected during ... at
    line N of FILE` lines after it give the context through which the tree reached it."""
    out: list[Diagnostic] = []
    pending_ctx: list[tuple[str, int]] = []      # gcc context lines seen since the last diagnostic
    cur: dict | None = None

    def flush() -> None:
        nonlocal cur
        if cur is not None:
            out.append(Diagnostic(cur["path"], cur["line"], cur["sev"], cur["msg"], cur["col"], cur["src"],
                                  cur["decl"], tuple(cur["ctx"])))
            cur = None

    lines = output.splitlines()
    i = 0
    while i < len(lines):
        ln = lines[i]
        m = _EDG.match(ln)
        if m:
            flush()
            sev = "error" if "error" in m["sev"] else "warning"
            msg = m["msg"].strip()
            decl = _EDG_DECLARED_AT.search(msg)
            cur = {"path": m["path"], "line": int(m["line"]), "sev": sev, "msg": msg, "col": None, "src": "",
                   "decl": decl["path"] if decl else "", "ctx": []}
            # EDG: optional detail lines, the echoed source line, a caret line, then `detected during` lines
            j = i + 1
            in_note = False
            while j < len(lines) and (lines[j].startswith(" ") and not _EDG.match(lines[j]) or _EDG_NOTE.match(lines[j])):
                s = lines[j]
                if _EDG_NOTE.match(s):  # `vector_types.h(561): note #3287-D: because of a "deprecated" attribute`:
                    in_note = True      # its own source line and caret follow, then the diagnostic's context
                elif "detected during" in s or "instantiation of" in s or re.search(r"at line \d+ of", s):
                    for cm in _EDG_CTX.finditer(s):
                        cur["ctx"].append((cm["path"], int(cm["line"])))
                elif not in_note and re.fullmatch(r"\s*\^\s*", s):
                    cur["col"] = s.index("^") - 1          # EDG indents the echoed line by two spaces
                    if j > i + 1:
                        cur["src"] = lines[j - 1][2:]
                j += 1
            i = j
            flush()
            pending_ctx = []
            continue
        ctx = _GCC_CTX.match(ln) or _GCC_INCL.match(ln)
        if ctx:
            pending_ctx.insert(0, (ctx["path"].strip(), int(ctx["line"])))
            i += 1
            continue
        m = _GCC.match(ln)
        if m:
            if m["sev"] == "note":
                if cur is not None and "declared here" in m["msg"] and not cur["decl"]:
                    cur["decl"] = m["path"]
                i += 1
                continue
            flush()
            sev = "error" if "error" in m["sev"] else "warning"
            cur = {"path": m["path"], "line": int(m["line"]), "sev": sev, "msg": m["msg"].strip(),
                   "col": int(m["col"]) if m["col"] else None, "src": "", "decl": "", "ctx": pending_ctx}
            pending_ctx = []
            i += 1
            continue
        if _TOOL_ERROR.match(ln):
            flush()
            out.append(Diagnostic("", 0, "error", ln.strip()[:300]))
            i += 1
            continue
        if ln and not ln.startswith(" ") and ": In " in ln:       # gcc `x.cu: In function ...` starts a block
            pending_ctx = []
        i += 1
    flush()
    return out


# ------------------------------------------------------------------------------------- classifying
@dataclasses.dataclass(frozen=True)
class ApiCatalog:
    """Names from cuda_api_changes.csv (api -> library), split on ` / ` for rows that list several."""
    libraries: dict[str, str]

    @classmethod
    def load(cls, path: Path = CSV_PATH) -> ApiCatalog:
        libs: dict[str, str] = {}
        with path.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                for name in re.split(r"\s*/\s*|\s*,\s*", row["api"]):
                    name = re.sub(r"[<(].*$", "", name.strip())
                    if name:
                        libs.setdefault(name, LIBRARY_NAMES.get(row["library"].strip().lower(),
                                                                row["library"].strip()))
        return cls(libs)

    def library(self, api: str, decl_path: str = "") -> str:
        for name in (api, api.split("::")[-1], api.split("::")[0]):
            if name in self.libraries:
                return self.libraries[name]
        if decl_path:
            for pat, lib in _HEADER_LIBS:
                if re.search(pat, decl_path):
                    return lib
        low = api.lower()
        for prefix, lib in _PREFIX_LIBS:
            if low.startswith(prefix) or api.startswith(prefix):
                return lib
        return "other"

    def listed(self, name: str) -> bool:
        """In the change catalog (also as its last `::` component, or without a `_t`/`_v` alias suffix)."""
        cands = {name, name.split("::")[-1]}
        cands |= {re.sub(r"_[tv]$", "", c) for c in cands}
        return any(c in self.libraries for c in cands)

    def is_api(self, name: str) -> bool:
        return bool(name) and (self.listed(name) or bool(_API_SHAPE.match(name)))


@dataclasses.dataclass(frozen=True)
class Classified:
    """What a diagnostic says about the CUDA API: its kind, the API it names, and whether it counts."""
    kind: str          # deprecated | undefined | no-member | arguments | overload | conversion | missing-header | other
    api: str           # the CUDA API element ('' when none)
    library: str       # '' when not a CUDA site
    cuda: bool
    reason: str = ""   # why it is not a CUDA site


_TOKEN = re.compile(r"(?:\b(?:thrust|cub|cuda|cooperative_groups)::\w+|\b__\w+|\b[A-Za-z_]\w*)")


def _name_of_decl(decl: str) -> str:
    """`cudaError_t cudaDeviceSetSharedMemConfig(cudaSharedMemConfig)` -> the entity's qualified name."""
    decl = re.sub(r"\s*\[with .*$", "", decl)
    head = decl.split("(")[0]
    depth, keep = 0, []
    for ch in head:                      # drop template arguments
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            keep.append(ch)
    toks = re.findall(r"[\w:]+", "".join(keep))
    return toks[-1].lstrip(":") if toks else decl.strip()


def api_on_line(text: str, column: int | None, catalog: ApiCatalog) -> str:
    """The CUDA API an error on this source line is about: the API-shaped call or name nearest before the
    column (the caret), else the first one on the line."""
    text = oracle.strip_strings_and_comments(text)
    hits = [(m.start(), m.group(), text[m.end():].lstrip().startswith("(")) for m in _TOKEN.finditer(text)
            if catalog.is_api(m.group())]
    if not hits:
        return ""
    before = [h for h in hits if column is None or h[0] <= column - 1] or hits
    calls = [h for h in before if h[2]]
    return (calls or before)[-1 if column is not None else 0][1]


def classify(d: Diagnostic, source_line: str, catalog: ApiCatalog, cuda_include_dirs: list[str],
             tree_headers: frozenset[str] = frozenset()) -> Classified:
    """Is this diagnostic caused by a deprecated, removed or changed CUDA API, and which one? `tree_headers`:
    the base names of the tree's own files (a missing one is the tree's header off the include path)."""
    msg = d.message
    text = source_line or d.source

    def in_cuda_headers(p: str) -> bool:
        rp = os.path.realpath(p) if p else ""
        return bool(rp) and any(rp.startswith(os.path.realpath(i) + os.sep) for i in cuda_include_dirs)

    def site(kind: str, api: str, why_not: str = "") -> Classified:
        if api and catalog.is_api(api):
            return Classified(kind, api, catalog.library(api, d.decl_path), True)
        return Classified(kind, api, "", False, why_not or f"`{api}` is not a CUDA API" if api else
                          why_not or "names no CUDA API")

    if "deprecated" in msg and d.severity == "warning":
        m = (re.search(r"'(?P<decl>[^']+)' is deprecated", msg)
             or re.search(r'"(?P<decl>[^"]+)"(?: \(declared at line \d+ of "[^"]+"\))? was declared deprecated', msg))
        if not m:
            return Classified("deprecated", "", "", False, "a deprecation message naming no entity")
        api = _name_of_decl(m["decl"])
        if not catalog.is_api(api):
            # EDG names a device intrinsic by its internal name ("ballot" for __ballot); its message names it
            why = re.search(r'was declared deprecated \("(?P<why>.*)"\)', msg)
            named = [t for t in _TOKEN.findall(why["why"]) if catalog.is_api(t)] if why else []
            if catalog.is_api("__" + api):
                api = "__" + api
            elif named and not d.decl_path:
                api = named[0]
        if d.decl_path:
            if in_cuda_headers(d.decl_path):
                return Classified("deprecated", api, catalog.library(api, d.decl_path), True)
            if not catalog.is_api(api):
                return Classified("deprecated", api, "", False, f"declared outside CUDA's headers ({d.decl_path})")
        return site("deprecated", api)
    if d.severity != "error":
        return Classified("other", "", "", False, "a warning that is not a deprecation")
    m = re.search(r'cannot open source file "(?P<h>[^"]+)"|^(?P<g>[^:\s]+): No such file', msg)
    if m:
        h = m["h"] or m["g"]
        base = h.split("/")[-1] if not h.startswith(("thrust/", "cub/", "cuda/")) else h
        if h.split("/")[-1] in PLATFORM_HEADERS:
            ph = PLATFORM_HEADERS[h.split("/")[-1]]
            return Classified("platform-header", h, "", False, f"{PLATFORM_REASON}: <{h}> ships for {ph.platforms}")
        if h.startswith("CL/"):
            return Classified("missing-header", h, "", False, f"{OPENCL_REASON}: <{h}>")
        shipped = shipped_headers(tuple(cuda_include_dirs))
        if h in shipped:
            return Classified("missing-header", h, catalog.library(Path(h).stem, "/" + h), True)
        if h.split("/")[-1] in tree_headers:
            return Classified("missing-header", h, "", False,
                              f"the tree's own header <{h}> is not on the include path (add it with -I)")
        if _CUDA_HEADER.match(h) or _CUDA_HEADER.match(base) or catalog.listed(Path(h).stem):
            return Classified("missing-header", h, catalog.library(Path(h).stem, "/" + h), True)
        return Classified("missing-header", h, "", False, f"third-party header <{h}> not installed")
    m = (re.search(r'identifier "(?P<n>[^"]+)" is undefined', msg)
         or re.search(r"'(?P<n>[^']+)' was not declared in this scope", msg)
         or re.search(r"'(?:::)?(?P<n>[^']+)' has not been declared", msg)
         or re.search(r"use of undeclared identifier '(?P<n>[^']+)'", msg))
    if m:
        return site("undefined", m["n"])
    m = (re.search(r'(?:class|struct|union|namespace|enum)(?: template)? "(?P<s>[^"]+)" has no member '
                   r'(?:class |struct |function |template |type )?"(?P<n>[^"]+)"', msg)
         or re.search(r"'[^']+' \{aka '(?P<s>[^']+)'\} has no member named '(?P<n>[^']+)'", msg)
         or re.search(r"'(?P<s>[^']+)' has no member named '(?P<n>[^']+)'", msg)
         or re.search(r"no member named '(?P<n>[^']+)' in (?:namespace )?'(?P<s>[^']+)'", msg)
         or re.search(r"'(?P<n>[^']+)' is not a member of '(?P<s>[^']+)'", msg))
    if m:
        scope = re.sub(r"^(?:struct|class|union|enum)\s+|<.*$", "", m["s"]).strip()
        api = f"{scope}::{m['n']}"
        if catalog.is_api(api) or catalog.is_api(scope) or catalog.is_api(m["n"]):
            lib = catalog.library(api, d.decl_path)
            return Classified("no-member", api, lib if lib != "other" else catalog.library(scope, d.decl_path), True)
        return Classified("no-member", api, "", False, f"`{scope}` is not a CUDA type or namespace")
    m = (re.search(r'no instance of (?:overloaded function|function template|constructor) "(?P<n>[^"]+)"', msg)
         or re.search(r"no matching function for call to '(?P<n>[^'(]+)", msg))
    if m:
        return site("overload", _name_of_decl(m["n"]))
    if re.search(r"too (?:few|many) arguments", msg):
        m = re.search(r"to function '(?P<n>[^']+)'", msg)
        return site("arguments", _name_of_decl(m["n"]) if m else api_on_line(text, d.column, catalog))
    aka, gaka = r'(?: \(aka "[^"]+"\))?', r"(?: \{aka '[^']+'\})?"
    m = (re.search(rf'argument of type "(?P<a>[^"]+)"{aka} is incompatible with parameter of type "(?P<b>[^"]+)"', msg)
         or re.search(rf'no suitable (?:constructor|conversion function) exists to convert from "(?P<a>[^"]+)"{aka} '
                      rf'to "(?P<b>[^"]+)"', msg)
         or re.search(rf'a value of type "(?P<a>[^"]+)"{aka} cannot be (?:used to initialize|assigned to) an entity '
                      rf'of type "(?P<b>[^"]+)"', msg)
         or re.search(rf"(?:cannot|could not) convert '(?P<a>[^']+)'{gaka} (?:from '[^']+'{gaka} )?to '(?P<b>[^']+)'", msg)
         or re.search(rf"invalid conversion from '(?P<a>[^']+)'{gaka} to '(?P<b>[^']+)'", msg))
    m2 = re.search(r"incompatible types? for argument \d+ of '(?P<n>[^']+)'|passing argument \d+ of '(?P<p>[^']+)'", msg)
    if m2 and d.severity == "error":
        return site("conversion", m2["n"] or m2["p"])
    if re.search(r'name followed by "::" must be a class or namespace name', msg):
        return site("undefined", api_on_line(text, d.column, catalog))
    if m:
        api = api_on_line(text, d.column, catalog)
        if not api:
            types = [t for t in re.findall(r"\w+", f"{m['a']} {m['b']}") if catalog.is_api(t)]
            api = types[0] if types else ""
        return site("conversion", api)
    # any other error counts only on a line that calls an API the change catalog lists
    api = api_on_line(text, d.column, catalog)
    if api and not catalog.listed(api):
        return Classified("other", api, "", False, f"an error not naming a changed API (`{api}` on the line)")
    return site("other", api, "an error that names no CUDA API")


# ----------------------------------------------------------------------------------------- sites
@dataclasses.dataclass
class Site:
    """One tree line with CUDA-caused diagnostics, from every unit that reported it."""
    relpath: str
    line: int
    kinds: set[str] = dataclasses.field(default_factory=set)
    apis: set[str] = dataclasses.field(default_factory=set)
    libraries: set[str] = dataclasses.field(default_factory=set)
    messages: list[str] = dataclasses.field(default_factory=list)
    severities: set[str] = dataclasses.field(default_factory=set)
    units: set[str] = dataclasses.field(default_factory=set)
    via_instantiation: bool = False
    via_macro: bool = False       # covered by a finding on the #define of a macro the statement uses
    rules: list[str] = dataclasses.field(default_factory=list)        # findings on the site's statement
    related_rules: list[str] = dataclasses.field(default_factory=list)  # else: a related location on it
    fix_rules: list[str] = dataclasses.field(default_factory=list)    # else: fixes that edit the statement
    cause_rules: list[str] = dataclasses.field(default_factory=list)  # else: findings on a named user type
    cause_types: list[str] = dataclasses.field(default_factory=list)  # that user type (its definition in the tree)
    # tree lines whose template instantiation produced the diagnostic (EDG `detected during ... at line N of F`)
    instantiations: set[tuple[str, int]] = dataclasses.field(default_factory=set)

    @property
    def key(self) -> tuple[str, int]:
        return (self.relpath, self.line)

    @property
    def library(self) -> str:
        return sorted(self.libraries)[0] if self.libraries else "other"


def tree_location(d: Diagnostic, root: Path, cwd: Path) -> tuple[str, int, bool] | None:
    """(relpath, line, via_instantiation) inside `root` for a diagnostic, or None when it is outside."""
    def rel(p: str) -> str | None:
        ap = Path(p) if os.path.isabs(p) else cwd / p
        try:
            return str(Path(os.path.realpath(ap)).relative_to(os.path.realpath(root))).replace(os.sep, "/")
        except ValueError:
            return None
    if not d.path:
        return None
    r = rel(d.path)
    if r is not None:
        return r, d.line, False
    for p, ln in d.context:
        r = rel(p)
        if r is not None:
            return r, ln, True
    return None


def collect_sites(per_unit: dict[str, tuple[list[Diagnostic], Path]], root: Path, catalog: ApiCatalog,
                  cuda_include_dirs: list[str]) -> tuple[list[Site], list[dict]]:
    """Merge every unit's diagnostics into CUDA sites (deduplicated by tree line) and the others."""
    sites: dict[tuple[str, int], Site] = {}
    others: dict[tuple[str, int, str], dict] = {}
    lines_cache: dict[str, list[str]] = {}

    def statement_to(relpath: str, line: int, column: int | None) -> tuple[str, int | None]:
        """The statement's text from its first line to `line` (a call's name may be lines above an error on
        one of its arguments), and the column moved to match."""
        if relpath not in lines_cache:
            try:
                lines_cache[relpath] = (root / relpath).read_bytes().decode("utf-8", "replace").splitlines()
            except OSError:
                lines_cache[relpath] = []
        ls = lines_cache[relpath]
        if not 0 < line <= len(ls):
            return "", column
        lo, _ = oracle.statement_span(ls, line)
        prefix = " ".join(ls[lo - 1:line - 1])
        if not prefix:
            return ls[line - 1], column
        return prefix + " " + ls[line - 1], (column + len(prefix) + 1 if column is not None else None)

    tk = [os.path.realpath(i) + os.sep for i in cuda_include_dirs]
    tree_headers = frozenset(p.name for p in root.rglob("*") if p.is_file())
    macros: dict[str, dict[str, str]] = {}

    def macro_bodies(relpath: str, text: str) -> str:
        """The bodies of the file's own macros that `text` uses (an error at a macro's use names no API)."""
        if relpath not in macros:
            macros[relpath] = {m.group(1): m.group(2) for m in re.finditer(
                r"^[ \t]*#[ \t]*define[ \t]+(\w+)(?:\([^)]*\))?[ \t]*(.*)$", "\n".join(lines_cache.get(relpath, [])),
                re.M)}
        return " ".join(macros[relpath][w] for w in dict.fromkeys(re.findall(r"\w+", text)) if w in macros[relpath])

    for unit, (diags, cwd) in sorted(per_unit.items()):
        for d in diags:
            loc = tree_location(d, root, cwd)
            if loc is None:
                if not d.path and d.severity == "error":     # ptxas/nvcc: no source location
                    others[(unit, 0, d.message)] = {"relpath": unit, "line": 0, "severity": "error", "kind": "tool",
                                                    "message": d.message, "units": [unit],
                                                    "reason": "no source location (ptxas/nvcc error)"}
                continue
            relpath, line, via = loc
            text, col = statement_to(relpath, line, d.column if not via else None)
            c = classify(dataclasses.replace(d, column=col), text, catalog, cuda_include_dirs, tree_headers)
            if not c.cuda and not via and c.kind in ("conversion", "arguments", "overload", "other"):
                body = macro_bodies(relpath, text)
                if body:
                    c2 = classify(dataclasses.replace(d, column=None), body, catalog, cuda_include_dirs, tree_headers)
                    c = c2 if c2.cuda else c
            if via and c.kind in ("missing-header", "platform-header") and not c.cuda and os.path.realpath(d.path).startswith(tuple(tk)):
                # a CUDA header fails only because ITS OWN third-party include is missing (cudaEGL.h ->
                # EGL/egl.h): the same case as the tree including that header itself, with the chain named
                c = dataclasses.replace(c, reason=f"{c.reason} (included by CUDA header {Path(d.path).name})")
            elif via and not c.cuda and d.severity == "error" and os.path.realpath(d.path).startswith(tuple(tk)):
                # an error inside a CUDA header, reached from this tree line (an #include or an instantiation)
                hdr = os.path.realpath(d.path)
                api = c.api if catalog.listed(c.api) else Path(hdr).name
                c = Classified("header-error", api, catalog.library(api if catalog.listed(api) else "", hdr), True)
            if not c.cuda:
                if c.kind == "other" and d.severity == "warning":
                    continue                      # not a deprecation: outside this measure
                k = (relpath, line, d.message)
                o = others.setdefault(k, {"relpath": relpath, "line": line, "severity": d.severity,
                                          "kind": c.kind, "message": d.message[:300], "reason": c.reason,
                                          "units": []})
                o["units"].append(unit)
                continue
            s = sites.setdefault((relpath, line), Site(relpath, line))
            s.kinds.add(c.kind)
            s.apis.add(c.api)
            s.libraries.add(c.library)
            s.severities.add(d.severity)
            s.units.add(unit)
            s.via_instantiation = s.via_instantiation or via
            if not via:
                for p, ln in d.context:
                    at = tree_location(Diagnostic(p, ln, d.severity, ""), root, cwd)
                    if at is not None:
                        s.instantiations.add((at[0], at[1]))
            if d.message[:300] not in s.messages:
                s.messages.append(d.message[:300])
    # an uncounted diagnostic on a line that is a site already (a cascade on the same line) says nothing more
    rest = [o for o in others.values() if (o["relpath"], o["line"]) not in sites]
    return sorted(sites.values(), key=lambda s: s.key), sorted(rest, key=lambda o: (o["relpath"], o["line"]))


def edit_lines(data: bytes, edits: list[dict]) -> set[int]:
    """1-based lines a finding's fix edits touch (byte offsets into the file)."""
    out: set[int] = set()
    for e in edits:
        lo = data.count(b"\n", 0, e["start"]) + 1
        hi = data.count(b"\n", 0, max(e["start"], e["end"] - 1)) + 1
        out.update(range(lo, hi + 1))
    return out


_NOT_TYPES = frozenset("""unsigned signed int char short long float double bool void const volatile auto struct class
union enum typename template size_t aka std""".split())


def type_definitions(text: str, names: set[str]) -> dict[str, list[tuple[int, int]]]:
    """1-based line spans of `struct|class|union NAME ... { ... }` definitions of `names` in a file's text:
    from the head to the closing brace (comments and strings blanked, so their braces do not count)."""
    clean = oracle.strip_strings_and_comments(text)
    out: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
    for m in re.finditer(r"\b(?:struct|class|union)\s+(?:__\w+(?:\([^)]*\))?\s+)*(\w+)\b[^;{()]*\{", clean):
        if m.group(1) not in names:
            continue
        depth, i = 0, m.end() - 1
        while i < len(clean):
            depth += {"{": 1, "}": -1}.get(clean[i], 0)
            if depth == 0:
                break
            i += 1
        out[m.group(1)].append((clean.count("\n", 0, m.start()) + 1, clean.count("\n", 0, i) + 1))
    return out


def match_causes(sites: list[Site], by_file: dict[str, list[dict]], root: Path) -> None:
    """For each site still uncovered, the findings inside the tree definition of a user type its diagnostic
    names: `no suitable constructor ... to "IsGreaterEqualThan<uint>"` at a thrust::find_if call is a knock-on of
    the functor's removed base `thrust::unary_function`, flagged where the functor is defined. Counted apart
    from a finding on the statement: the finding is on the cause, not on the line the compiler reports."""
    want = {s.key: {t for msg in s.messages for q in re.findall(r'"([^"]+)"|\'([^\']+)\'', msg) for t in
                    re.findall(r"[A-Za-z_]\w*", q[0] or q[1]) if t not in _NOT_TYPES}
            for s in sites if not s.rules and not s.related_rules and not s.fix_rules}
    names = set().union(*want.values()) if want else set()
    if not names:
        return
    spans: dict[str, list[tuple[str, int, int]]] = collections.defaultdict(list)   # type -> (file, lo, hi)
    for relpath in by_file:
        try:
            text = (root / relpath).read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        for name, ss in type_definitions(text, names).items():
            spans[name] += [(relpath, lo, hi) for lo, hi in ss]
    for s in sites:
        for name in sorted(want.get(s.key, ())):
            rules = {f["rule"] for relpath, lo, hi in spans.get(name, ()) for f in by_file[relpath]
                     if lo <= f["line"] <= hi}
            if rules:
                s.cause_rules = sorted(set(s.cause_rules) | rules)
                s.cause_types.append(name)


def match_instantiations(sites: list[Site], by_file: dict[str, list[dict]], root: Path) -> None:
    """For each site still uncovered in a template of the tree, the findings on a tree line that instantiated it
    and that name the site's API: `vecT *p` warns that `double4` is deprecated inside `bottom_scan<double,
    double4>`, whose `RunTest<double, double4>(...)` line carries the CM511 finding whose fix removes it. Counted
    with the causes: the finding is on the instantiation, not on the line the compiler reports."""
    texts: dict[str, list[str]] = {}
    for s in sites:
        if s.rules or s.related_rules or s.fix_rules or not s.instantiations:
            continue
        apis = {a.split("::")[-1] for a in s.apis if a}
        for relpath, line in sorted(s.instantiations):
            if relpath not in texts:
                try:
                    texts[relpath] = (root / relpath).read_bytes().decode("utf-8", "replace").splitlines()
                except OSError:
                    texts[relpath] = []
            lines = texts[relpath]
            lo, hi = oracle.statement_span(lines, line) if 0 < line <= len(lines) else (line, line)
            rules = {f["rule"] for f in by_file.get(relpath, ())
                     if f["line"] <= hi and f.get("end_line", f["line"]) >= lo
                     and any(re.search(rf"\b{re.escape(a)}\b", f.get("message", "")) for a in apis)}
            if rules:
                s.cause_rules = sorted(set(s.cause_rules) | rules)
                s.cause_types.append(f"instantiated at {relpath}:{line}")


def match_findings(sites: list[Site], findings: list[dict], root: Path) -> None:
    """Record on each site the rules of the findings that overlap its statement (same file), and, apart,
    the rules of findings one of whose related locations is on the statement (any file: a texture reference's
    finding is on its declaration and lists each use as a related location), and the rules whose fix edits the
    statement from a finding reported on another line (its fix rewrites the bind and fetch calls too)."""
    by_file: dict[str, list[dict]] = collections.defaultdict(list)
    macro_rules: dict[str, set[str]] = collections.defaultdict(set)   # macro name -> rules flagging its #define
    related: dict[str, list[tuple[int, int, str]]] = collections.defaultdict(list)  # relpath -> (line, end, rule)
    for f in findings:
        by_file[f["relpath"]].append(f)
        for r in f.get("related") or ():
            # a report path is the scanned tree's name, then its path in the tree (oracle.load_scan)
            rel = r["path"].split("/", 1)[1] if "/" in r["path"] else r["path"]
            related[rel].append((r["line"], r.get("end_line") or r["line"], f["rule"]))
        m = re.match(r"\s*#\s*define\s+(\w+)", f.get("snippet", ""))
        if m:
            macro_rules[m.group(1)].add(f["rule"])
    for s in sites:
        fl = by_file.get(s.relpath, [])
        try:
            data = (root / s.relpath).read_bytes()
        except OSError:
            data = b""
        lines = data.decode("utf-8", "replace").splitlines()
        lo, hi = oracle.statement_span(lines, s.line) if lines else (s.line, s.line)
        s.rules = sorted({f["rule"] for f in fl if f["line"] <= hi and f.get("end_line", f["line"]) >= lo})
        if not s.rules and macro_rules:
            # the API is in a macro the statement uses, and the finding is on the macro's #define
            words = set(re.findall(r"\w+", oracle.strip_strings_and_comments("\n".join(lines[lo - 1:hi]))))
            s.rules = sorted(set().union(*(macro_rules[w] for w in words & macro_rules.keys())))
            s.via_macro = bool(s.rules)
        if not s.rules:
            s.related_rules = sorted({rule for line, end, rule in related.get(s.relpath, ()) if line <= hi and end >= lo})
        if not s.rules and not s.related_rules:
            span = set(range(lo, hi + 1))
            s.fix_rules = sorted({f["rule"] for f in fl
                                  if (f.get("fix") or {}).get("edits") and edit_lines(data, f["fix"]["edits"]) & span})
    match_causes(sites, by_file, root)
    match_instantiations(sites, by_file, root)


# ------------------------------------------------------------------------------------- compiling
@dataclasses.dataclass
class UnitResult:
    ok: bool | None       # None: not compiled (budget reached, or the compile timed out: no verdict)
    output: str
    seconds: float
    cached: bool = False


def cuda_include_dirs(extra: list[str]) -> list[str]:
    """Include dirs of the toolkit (nvcc's) and of the 13.0-matched wheels: flag, $CUDAMIGRATE_WHEEL_INCLUDE,
    nvidia/cu13/include of this interpreter (cudamigrate.toolcheck.build.wheel_root), the oracle's site-packages glob.
    Absolute (against the invocation's cwd): nvcc runs in each unit's directory, where a relative dir names nothing."""
    dirs = list(extra)
    env = os.environ.get("CUDAMIGRATE_WHEEL_INCLUDE")
    if env:
        dirs += [p for p in env.split(os.pathsep) if p]
    if not dirs:
        try:
            from cudamigrate.toolcheck.build import wheel_root
            w = wheel_root()
            if w is not None:
                dirs.append(str(w / "include"))
        except ImportError:
            pass
        dirs += [p for p in oracle.wheel_includes() if p not in dirs]
    return [d for d in dict.fromkeys(os.path.abspath(p) for p in dirs) if Path(d).is_dir()]


def toolkit_include_dirs() -> list[str]:
    nv = shutil.which("nvcc")
    cands = []
    if nv:
        home = Path(nv).resolve().parent.parent
        cands += [home / "include", home / "targets" / "x86_64-linux" / "include"]
    cands += [Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"]
    return [str(p) for p in dict.fromkeys(cands) if p.is_dir()]


def tree_include_dirs(root: Path) -> list[Path]:
    """`Common/` and every directory named include/inc in the tree (not under hidden dirs)."""
    out = [root / "Common"] if (root / "Common").is_dir() else []
    for p in sorted(root.rglob("*")):
        if p.is_dir() and p.name in ("include", "inc") and not any(x.startswith(".") for x in p.relative_to(root).parts):
            out.append(p)
    return out


def db_flags(entry: dict) -> list[str]:
    """A compile database entry's flags for nvcc: the compiler, the source, -o/-M* outputs and flags that
    hide diagnostics dropped. A host compiler's entry keeps only -I/-isystem/-D/-U/-std/-include."""
    args = entry.get("arguments") or shlex.split(entry.get("command", ""))
    is_nvcc = bool(args) and Path(args[0]).name.startswith("nvcc")
    out: list[str] = []
    it = iter(args[1:])
    for a in it:
        if a in _DROP_WITH_ARG:
            next(it, None)
            continue
        if a in _DROP_FLAGS or a.startswith("-Werror") or a == entry.get("file") or a.endswith(entry.get("file", "\0")):
            continue
        if a in ("-c",):
            continue
        if not is_nvcc:
            if a in ("-I", "-isystem", "-D", "-U", "-include"):
                out += [a, next(it, "")]
            elif a.startswith(("-I", "-D", "-U", "-std=", "-isystem")):
                out.append(a)
            continue
        out.append(a)
    return out + ["-c"]


def syntax_only(flags: dict[str, list[str]]) -> dict[str, list[str]]:
    """Every unit's flags with the host compiler limited to its front end (SYNTAX_ONLY); they are part of the
    cache key, so outputs of full compiles are never served for these, nor the reverse."""
    return {rel: [*fl, *SYNTAX_ONLY] for rel, fl in flags.items()}


def rebase_output(output: str, compiled_root: str, root: str) -> str:
    """nvcc's output of a cache hit, with the paths of the tree it was compiled in moved to `root`: the key is
    the content, so a unit that `fix` left unchanged hits the entry compiled in the original tree, and without
    this its diagnostics name files outside the measured copy and are dropped."""
    if not compiled_root or compiled_root == root:
        return output
    return output.replace(compiled_root.rstrip("/") + "/", root.rstrip("/") + "/")


def dirs_signature(dirs: Iterable[str]) -> str:
    """A digest of every file under `dirs` (path, size, mtime): what a compile against them may have read."""
    h = hashlib.sha256()
    for d in dirs:
        for p in sorted(Path(d).rglob("*")):
            if p.is_file():
                st = p.stat()
                h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


class RecallCompiler(oracle.Compiler):
    """The oracle's content-keyed compile cache, keeping nvcc's whole output (the oracle keeps only the first
    error) and taking per-unit flags."""

    def __init__(self, cache: Path, timeout: int, nvcc_version: str, root_flags: dict[str, list[str]],
                 search: dict[str, list[Path]], cwd: dict[str, Path], extra_include: Iterable[str] = (),
                 origin: Path | None = None):
        self.cache, self.timeout = cache, timeout
        # the tree `search` was planned in: its dirs are the measured copy's own in a --fixed run
        self.origin = origin.resolve() if origin is not None else None
        self.includes: list[str] = []
        # the headers of `-I` dirs given on the command line are outside the tree's closure: a changed stub
        # header there must not reuse an output compiled against the old one
        extra = list(extra_include)
        self.salt = json.dumps(["compile_recall/1", nvcc_version] + ([dirs_signature(extra)] if extra else []))
        self.flags, self.search, self.cwd = root_flags, search, cwd
        cache.mkdir(parents=True, exist_ok=True)

    def key(self, root: Path, rel: str) -> str:
        h = hashlib.sha256((self.salt + json.dumps(self.flags[rel])).encode())
        rroot = root.resolve()
        for f in oracle.local_closure((root / rel).resolve(), self.search_in(rroot, rel), rroot):
            h.update(str(f.relative_to(rroot)).encode() + b"\0" + f.read_bytes() + b"\0")
        return h.hexdigest()

    def search_in(self, rroot: Path, rel: str) -> list[Path]:
        """The unit's search dirs in the tree being keyed: without this, a --fixed copy's key looked for its
        `Common/` (or chLib/) headers in the original tree, left them out of its closure (only files inside the
        tree count), and so neither matched the original's key nor changed when fix edited those headers."""
        out = []
        for s in self.search[rel]:
            s = s.resolve()
            if self.origin is not None and s.is_relative_to(self.origin):
                s = rroot / s.relative_to(self.origin)
            out.append(s)
        return out

    def compile(self, root: Path, rel: str, deadline: float | None = None) -> UnitResult:
        key = self.key(root, rel)
        hit = self.cache / f"{key}.json"
        if hit.is_file():
            data = json.loads(hit.read_text())
            data["output"] = rebase_output(data["output"], data.pop("root", ""), str(root))
            cached = UnitResult(**{**data, "cached": True})
            if "requires separate compilation mode" not in cached.output:    # written before the -rdc retry
                return cached
        if deadline is not None and time.time() > deadline:
            return UnitResult(None, "not compiled (--budget-minutes reached)", 0.0)
        src = root / rel
        cwd = Path(str(self.cwd.get(rel, src.parent)).replace("{ROOT}", str(root)))
        if not cwd.is_dir():
            cwd = src.parent
        # flags name paths of the measured tree; a --fixed copy has the same layout under another root
        with tempfile.TemporaryDirectory(prefix="recall-obj-") as tmp:
            cmd = ["nvcc", *[f.replace("{ROOT}", str(root)) for f in self.flags[rel]], *DIAG_FLAGS,
                   str(src), "-o", str(Path(tmp) / "x.o")]
            t0 = time.time()
            env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
            try:
                p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                                   errors="replace", timeout=self.timeout, env=env)
                if p.returncode != 0 and "requires separate compilation mode" in p.stdout + p.stderr:
                    # dynamic parallelism: the project builds this unit with -rdc=true (cuda-samples' CDP
                    # samples do); the pinned flags cannot know it, the compiler's message does
                    p = subprocess.run([cmd[0], "-rdc=true", *cmd[1:]], cwd=cwd, capture_output=True, text=True,
                                       errors="replace", timeout=self.timeout, env=env)
                res = UnitResult(p.returncode == 0, p.stdout + p.stderr, round(time.time() - t0, 1))
            except subprocess.TimeoutExpired:
                # no verdict: a loaded machine can stretch a heavy unit (Thrust's sorts) past any limit, and a
                # timeout counted as a failure showed up as a compile regression of the fix; not cached, so a
                # re-run compiles it again
                return UnitResult(None, f"not compiled (timeout after {self.timeout}s)", float(self.timeout))
        d = dataclasses.asdict(res)
        d.pop("cached")
        d["root"] = str(root)
        hit.write_text(json.dumps(d))
        return res


def plan_units(root: Path, only: list[str], db: Path | None, extra_inc: list[str],
               wheel_inc: list[str]) -> tuple[list[str], dict[str, list[str]], dict[str, list[Path]], dict[str, Path]]:
    """The units to compile and, per unit, nvcc flags (paths under the tree written as {ROOT}), the tree
    dirs to search for its included headers (for the cache key), and its working directory. A relative
    `extra_inc` dir is taken against the invocation's cwd (nvcc runs in the unit's directory)."""
    rroot = root.resolve()
    extra_inc = [os.path.abspath(i) for i in extra_inc]
    flags: dict[str, list[str]] = {}
    search: dict[str, list[Path]] = {}
    cwd: dict[str, Path] = {}

    def templ(s: str) -> str:
        return s.replace(str(rroot), "{ROOT}")

    if db is not None:
        for e in json.loads(db.read_text()):
            f = Path(e["file"]) if os.path.isabs(e["file"]) else Path(e.get("directory", ".")) / e["file"]
            try:
                rel = str(f.resolve().relative_to(rroot)).replace(os.sep, "/")
            except ValueError:
                continue
            fl = db_flags({**e, "file": str(f)})
            if not any(x.startswith("-I") and x[2:] in wheel_inc for x in fl):
                fl += [f"-I{i}" for i in wheel_inc]
            flags[rel] = [templ(x) for x in fl]
            incs = [Path(x[2:]) if os.path.isabs(x[2:]) else Path(e.get("directory", ".")) / x[2:]
                    for x in fl if x.startswith("-I") and len(x) > 2]
            search[rel] = [p for p in incs if str(p.resolve()).startswith(str(rroot))]
            cwd[rel] = Path(templ(str(Path(e.get("directory", str(f.parent))).resolve())))
        units = sorted(flags)
    else:
        units = [r for r in oracle.rel_files(root, UNIT_EXTS)
                 if not any(part.startswith(".") for part in r.split("/"))]
        tinc = tree_include_dirs(root)
        # an -I dir inside the tree (cudahandbook's chLib/) is the measured copy's own dir in a --fixed run
        # (fix may edit its headers) and part of the cache key's closure
        inside = [Path(i).resolve() for i in extra_inc if Path(i).resolve().is_relative_to(rroot)]
        outside = [i for i in extra_inc if not Path(i).resolve().is_relative_to(rroot)]
        for rel in units:
            sd = oracle.sample_dir_of(root, rel)
            dirs = list(dict.fromkeys([(root / rel).parent, sd, *tinc, *inside]))
            search[rel] = dirs
            flags[rel] = [*oracle.NVCC_FLAGS, *[f"-I{templ(str(d.resolve()))}" for d in dirs],
                          *[f"-I{i}" for i in outside], *[f"-I{i}" for i in wheel_inc]]
    if only:
        units = [u for u in units if any(u == o.rstrip("/") or u.startswith(o.rstrip("/") + "/") for o in only)]
    return units, flags, search, cwd


# ------------------------------------------------------------------------------------------ report
def pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.1f} %" if b else "–"


def summarise(sites: list[Site]) -> dict:
    by_lib: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    by_rule: collections.Counter = collections.Counter()
    uncovered_apis: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for s in sites:
        c = by_lib[s.library]
        c["sites"] += 1
        c["deprecation" if s.severities == {"warning"} else "error"] += 1
        c["covered" if s.rules else "related_only" if s.related_rules else "fix_only" if s.fix_rules
          else "via_cause" if s.cause_rules else "uncovered"] += 1
        for r in s.rules or s.related_rules or s.fix_rules or s.cause_rules:
            by_rule[r] += 1
        if not s.rules and not s.related_rules and not s.fix_rules and not s.cause_rules:
            for a in s.apis:
                uncovered_apis[s.library][a] += 1
    total: collections.Counter = collections.Counter()
    for c in by_lib.values():
        total.update(c)
    return {"by_library": {k: dict(v) for k, v in sorted(by_lib.items())}, "total": dict(total),
            "by_rule": dict(sorted(by_rule.items())),
            "uncovered_apis": {k: dict(v.most_common()) for k, v in sorted(uncovered_apis.items())}}


def render(d: dict) -> str:
    s = d["summary"]
    t = s["total"]
    out = [f"### compile recall: `{d['tree']}`{' after `fix --unsafe-fixes`' if d['fixed'] else ''}", "",
           f"{d['nvcc']}; {d['units']['total']} units: {d['units']['ok']} compiled, {d['units']['failed']} failed "
           f"({d['units']['failed_before_host']} stopped in the front end, so their host deprecation warnings are "
           f"not observable), {d['units']['not_compiled']} not compiled. Findings: {d['findings']}.", ""]
    if d.get("regressions") is not None:
        out += [f"Compile regressions after fix (compiled before, not after): **{len(d['regressions'])}**"
                + ("" if not d["regressions"] else ": " + ", ".join(f"`{r}`" for r in d["regressions"][:30])), ""]
    out += ["| library | sites | deprecation warnings | error sites | finding on the statement | "
            "only a related location | only a fix edit from another line's finding | covered through its cause | "
            "not covered | recall | recall with fix edits | recall with fix edits and causes |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    rows = [(lib, c, False) for lib, c in s["by_library"].items()] + [("all", t, True)]
    for lib, c, bold in rows:
        b = "**" if bold else ""
        n, cov, fo, vc = c.get("sites", 0), c.get("covered", 0), c.get("fix_only", 0), c.get("via_cause", 0)
        ro = c.get("related_only", 0)   # covered: the finding names the site as one of its related locations
        out.append(f"| {b}{lib}{b} | {b}{n}{b} | {c.get('deprecation', 0)} | {c.get('error', 0)} | {b}{cov}{b} | {ro} | "
                   f"{fo} | {vc} | {b}{c.get('uncovered', 0)}{b} | {b}{pct(cov + ro, n)}{b} | {pct(cov + ro + fo, n)} | "
                   f"{pct(cov + ro + fo + vc, n)} |")
    if s["by_rule"]:
        out += ["", "Sites covered, by rule (a site may be covered by several): "
                + ", ".join(f"{r} {n}" for r, n in s["by_rule"].items())]
    vm = [x for x in d["sites"] if x.get("via_macro")]
    if vm:
        out += ["", f"Covered through a finding on the `#define` of a macro the statement uses ({len(vm)}): "
                + ", ".join(f"`{x['relpath']}:{x['line']}` ({'/'.join(x['apis'])}: {'/'.join(x['rules'])})"
                            for x in vm[:40]) + (" …" if len(vm) > 40 else "")]
    ro = [x for x in d["sites"] if not x["rules"] and x.get("related_rules")]
    if ro:
        out += ["", f"Covered only by a related location of a finding on another line ({len(ro)}): "
                + ", ".join(f"`{x['relpath']}:{x['line']}` ({'/'.join(x['apis'])}: {'/'.join(x['related_rules'])})"
                            for x in ro[:40]) + (" …" if len(ro) > 40 else "")]
    fo = [x for x in d["sites"] if not x["rules"] and not x.get("related_rules") and x["fix_rules"]]
    if fo:
        out += ["", f"Covered only by a fix edit from a finding on another line ({len(fo)}): "
                + ", ".join(f"`{x['relpath']}:{x['line']}` ({'/'.join(x['apis'])}: {'/'.join(x['fix_rules'])})"
                            for x in fo[:40]) + (" …" if len(fo) > 40 else "")]
    vc = [x for x in d["sites"] if not x["rules"] and not x.get("related_rules") and not x["fix_rules"] and x.get("cause_rules")]
    if vc:
        def cause(t: str) -> str:
            return t if t.startswith("instantiated at ") else f"type `{t}`"
        out += ["", f"Covered through its cause: the diagnostic names a user type whose definition carries a finding, "
                f"or it is in a template whose instantiating line carries a finding on its API "
                f"({len(vc)}): " + ", ".join(f"`{x['relpath']}:{x['line']}` ({'/'.join(x['apis'])}: "
                                             f"{', '.join(cause(t) for t in x['cause_types'])}; {'/'.join(x['cause_rules'])})"
                                             for x in vc[:40]) + (" …" if len(vc) > 40 else "")]
    unc = [x for x in d["sites"] if not x["rules"] and not x.get("related_rules") and not x["fix_rules"]
           and not x.get("cause_rules")]
    if s["uncovered_apis"]:
        out += ["", "Not covered, by API (sites):", "", "| library | API (sites) |", "|---|---|"]
        for lib, apis in s["uncovered_apis"].items():
            out.append(f"| {lib} | " + ", ".join(f"`{a}` {n}" for a, n in apis.items()) + " |")
    out += ["", f"Not covered ({len(unc)}):", ""]
    if unc:
        out += ["| site | library | API | kind | diagnostic |", "|---|---|---|---|---|"]
        for x in unc:
            out.append(f"| `{x['relpath']}:{x['line']}` | {x['library']} | {', '.join(f'`{a}`' for a in x['apis'] if a)} "
                       f"| {', '.join(x['kinds'])} | {oracle.md_escape(x['messages'][0])[:160]} |")
    oth = d["other_diagnostics"]
    reasons = collections.Counter(o["reason"].split(" (")[0] if "declared outside" in o["reason"]
                                  else o["reason"].split(" ships for ")[0] for o in oth)
    plat = collections.Counter(Path(re.search(r"<([^>]+)>", o["reason"])[1]).name for o in oth  # type: ignore[index]
                               if o["reason"].startswith(PLATFORM_REASON))
    if plat:
        out += ["", f"{PLATFORM_REASON[0].upper()}{PLATFORM_REASON[1:]}, listed apart and not counted "
                f"({sum(plat.values())}): " + "; ".join(
                    f"`{h}` {n} (ships for {PLATFORM_HEADERS[h].platforms if h in PLATFORM_HEADERS else '?'})"
                    for h, n in plat.most_common())]
    out += ["", f"Diagnostics not counted as caused by the CUDA API ({len(oth)}): "
            + ("; ".join(f"{r}: {n}" for r, n in reasons.most_common(12)) or "none")]
    errs = [o for o in oth if o["severity"] == "error"]
    if errs:
        out += ["", "| site | why not counted | diagnostic |", "|---|---|---|"]
        for o in errs[:60]:
            out.append(f"| `{o['relpath']}:{o['line']}` | {oracle.md_escape(o['reason'])[:100]} | "
                       f"{oracle.md_escape(o['message'])[:160]} |")
        if len(errs) > 60:
            out.append(f"| … {len(errs) - 60} more in the JSON | | |")
    return "\n".join(out) + "\n"


def scan(tree: Path, work: Path, extra: list[str]) -> list[dict]:
    out = work / f"scan-{tree.name}.json"
    p = subprocess.run([sys.executable, "-m", "cudamigrate", "scan", tree.name, "--format", "json", "--exit-zero",
                        "-o", str(out), *extra], cwd=tree.parent, capture_output=True, text=True, errors="replace")
    if not out.is_file():
        raise SystemExit(f"compile_recall: scan of {tree} failed: {p.stderr[-2000:]}")
    return oracle.load_scan(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("tree", type=Path)
    ap.add_argument("--fixed", action="store_true", help="measure a copy of TREE after `cudamigrate fix`")
    ap.add_argument("--fix-args", default="--unsafe-fixes", help="arguments of `fix` for --fixed")
    ap.add_argument("--json", type=Path)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--compile-commands", type=Path, help="compile_commands.json with each unit's flags")
    ap.add_argument("--only", action="append", default=[], help="compile only units under this tree path (repeatable)")
    ap.add_argument("--wheel-include", action="append", default=[],
                    help="include dir of the 13.0-matched library wheels (default: $CUDAMIGRATE_WHEEL_INCLUDE, "
                         "else nvidia/cu13/include of this interpreter)")
    ap.add_argument("-I", dest="include", action="append", default=[], help="extra include dir for every unit")
    ap.add_argument("--scan-args", default="", help="extra arguments of `cudamigrate scan`")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per compile")
    ap.add_argument("--budget-minutes", type=float, default=0,
                    help="start no compile after this many minutes (0: no limit); the rest show as not compiled "
                         "and a re-run continues from the cache")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "cudamigrate-recall")
    ap.add_argument("--work", type=Path, help="work dir (default: a temp dir, removed at the end)")
    ap.add_argument("--syntax-only", action="store_true",
                    help="the host compiler only checks syntax (-Xcompiler -fsyntax-only): no host code generation; "
                         "device compilation (cicc, ptxas) still runs, so every diagnostic is still printed")
    ap.add_argument("--nvcc-release", metavar="X.Y",
                    help="compile (and verify `--fixed`) with nvcc of this CUDA release from NVIDIA's wheels, installed "
                         "on demand into ~/.cache/cudamigrate/toolkits (cudamigrate/core/pip_toolkit.py); pass the "
                         "same --target-cuda in --scan-args and --fix-args")
    a = ap.parse_args(argv)
    root = a.tree.resolve()
    if not root.is_dir():
        print(f"compile_recall: {a.tree}: not a directory", file=sys.stderr)
        return 2
    if a.nvcc_release:
        from cudamigrate.core import pip_toolkit
        try:
            nvcc = pip_toolkit.install(a.nvcc_release)
        except pip_toolkit.ToolkitError as e:
            print(f"compile_recall: {e}", file=sys.stderr)
            return 2
        os.environ["PATH"] = pip_toolkit.path_with(nvcc)  # the compiles and the `fix` subprocess find this nvcc
    if shutil.which("nvcc") is None:
        print("compile_recall: nvcc not on PATH", file=sys.stderr)
        return 2
    work = a.work.resolve() if a.work else Path(tempfile.mkdtemp(prefix="compile-recall-"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    measured = root
    if a.fixed:
        measured = work / root.name
        if measured.exists():
            shutil.rmtree(measured)
        shutil.copytree(root, measured, symlinks=True)
        p = subprocess.run([sys.executable, "-m", "cudamigrate", "fix", *shlex.split(a.fix_args), root.name],
                           cwd=work, capture_output=True, text=True, errors="replace")
        (work / "fix.log").write_text(p.stdout + p.stderr)
        print(f"fix: {next((ln for ln in reversed((p.stdout + p.stderr).splitlines()) if ln.startswith('Fixed ')), f'rc={p.returncode}')}",
              file=sys.stderr)
    findings = scan(measured, work, shlex.split(a.scan_args))
    wheel_inc = cuda_include_dirs(a.wheel_include)
    units, flags, search, cwd = plan_units(root, a.only, a.compile_commands, a.include, wheel_inc)
    if a.syntax_only:
        flags = syntax_only(flags)
    nvcc_version = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    if a.nvcc_release:
        # the wheels' set is part of what compiles (a wheel added to the pinned set, such as cuda_profiler_api.h's,
        # leaves `nvcc --version` unchanged): cached results of the earlier set are not served for the new one
        nvcc_version += " " + " ".join(pip_toolkit.WHEELS[a.nvcc_release])
    comp = RecallCompiler(a.cache.resolve(), a.timeout, nvcc_version, flags, search, cwd,
                          [os.path.abspath(i) for i in a.include], origin=root)
    print(f"{len(units)} units, {len(findings)} findings; compiling with {a.jobs} jobs ...", file=sys.stderr)
    jobs = [(measured, r) for r in units] + ([(root, r) for r in units] if a.fixed else [])
    res = comp.many(jobs, a.jobs, "nvcc", t0 + 60 * a.budget_minutes if a.budget_minutes else None)
    after = {r: res[(measured, r)] for r in units}
    regressions = ([r for r in units if res[(root, r)].ok is True and after[r].ok is False] if a.fixed else None)
    per_unit: dict[str, tuple[list[Diagnostic], Path]] = {}
    failed_front = 0
    for r in units:
        diags = parse_diagnostics(after[r].output)
        c = cwd.get(r)
        per_unit[r] = (diags, Path(str(c).replace("{ROOT}", str(measured))) if c else (measured / r).parent)
        if after[r].ok is False and not re.search(r"^\S+:\d+:\d+: (?:warning|error)", after[r].output, re.M):
            failed_front += 1
    catalog = ApiCatalog.load()
    sites, others = collect_sites(per_unit, measured, catalog, toolkit_include_dirs() + wheel_inc)
    match_findings(sites, findings, measured)
    d = {
        "tree": str(a.tree), "fixed": a.fixed, "syntax_only": a.syntax_only, "nvcc": nvcc_version, "include_dirs": wheel_inc,
        "seconds": round(time.time() - t0, 1), "findings": len(findings),
        "units": {"total": len(units), "ok": sum(1 for r in units if after[r].ok),
                  "failed": sum(1 for r in units if after[r].ok is False),
                  "failed_before_host": failed_front,
                  "not_compiled": sum(1 for r in units if after[r].ok is None),
                  "failed_units": [r for r in units if after[r].ok is False]},
        "regressions": regressions,
        "summary": summarise(sites),
        "sites": [{"relpath": s.relpath, "line": s.line, "library": s.library, "apis": sorted(s.apis),
                   "kinds": sorted(s.kinds), "severities": sorted(s.severities), "rules": s.rules,
                   "related_rules": s.related_rules,
                   "fix_rules": s.fix_rules, "cause_rules": s.cause_rules, "cause_types": s.cause_types,
                   "via_macro": s.via_macro,
                   "via_instantiation": s.via_instantiation, "units": sorted(s.units)[:5],
                   "messages": s.messages[:4]} for s in sites],
        "other_diagnostics": others,
    }
    sys.stdout.write(render(d))
    if a.json:
        a.json.write_text(json.dumps(d, indent=1))
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
