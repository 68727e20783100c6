"""libclang front end: finding a usable libclang, reading compile_commands.json, mapping nvcc flags.

Semantic mode parses each translation unit with the project's real flags.
`nvcc` command lines are mapped to clang's CUDA driver (`-x cuda --cuda-host-only
--cuda-gpu-arch=sm_XX --cuda-path=...`), keeping -I/-D/-U/-isystem/-include/-std and
dropping nvcc-only flags.

A usable setup needs two matching pieces of the same LLVM version:
  * libclang.so (the Python `clang.cindex` bindings load it), and
  * clang's *resource directory* (`<dir>/include/__clang_cuda_runtime_wrapper.h` and friends),
    without which `-x cuda` cannot parse anything.
The `libclang-ng` wheel (a dependency) ships both, plus the Python bindings of the same release
(`clang/native/libclang.so`, `clang/native/resource`), so `pip install` alone gives semantic mode:
no system package, no root. The `libclang` wheel (18) ships libclang.so without resource headers and
`clang-tidy`'s wheel ships resource headers without libclang.so, so neither serves alone.
$CUDAMIGRATE_LIBCLANG (a libclang.so) + $CUDAMIGRATE_CLANG_RESOURCE_DIR replace the wheel's pair when set.

C++ standard library: clang's driver finds the host's libstdc++ (the GCC installation nvcc uses) or the
SDK's libc++ on its own. The wheel also ships libc++ headers, and its bindings add them with `-isystem`
to any command line without one; those headers failed inside the CUDA wrapper (a libc++ of clang 22
against the toolkit's and the host's C library), so `cindex()` turns that off and `stdlib_args()`
uses them (`-nostdinc++ -isystem <libcxx>`) only where the host has no C++ library of its own.

CUDA 13 removed `texture_fetch_functions.h`, which clang <= 20's CUDA wrapper still includes
unconditionally, and minimal toolkits (no cuRAND) lack `curand_mtgp32_kernel.h`, which every clang's
wrapper includes: empty stand-ins live in `cudamigrate/data/clang_shims` and are searched last
(`-idirafter`), so real headers win.
"""

from __future__ import annotations

from .compile_db import DB_NAME, LONG_DEFINES, Command, compiler_option_items, find_compile_db, load_compile_db  # noqa: F401  (re-exported: semantic mode's callers)

import glob
import importlib.util
import os
import re
import sys
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

SHIMS = Path(__file__).resolve().parent.parent / "data" / "clang_shims"
WRAPPER = "include/__clang_cuda_runtime_wrapper.h"
DEFAULT_CUDA = "/usr/local/cuda-13.0"
SOURCE_EXTS = {".cu", ".cpp", ".cc", ".cxx", ".c", ".cuh", ".h", ".hpp"}
WHEEL = "libclang-ng"


@dataclass(frozen=True)
class ClangSetup:
    library: str | None  # None: the bindings' default (the wheel's own libclang.so)
    resource_dir: str
    major: int
    origin: str = "wheel"  # "wheel" (libclang-ng) or "environment" ($CUDAMIGRATE_LIBCLANG...)
    libcxx: str | None = None  # the wheel's libc++ headers (used only without a host C++ library)


def _major_of_resource(path: str) -> int | None:
    m = re.search(r"clang/(\d+)(?:\.\d+\.\d+)?/?$", path.rstrip("/"))
    return int(m.group(1)) if m else None


def _valid_resource(d: str | None) -> bool:
    return bool(d) and os.path.isfile(os.path.join(d, WRAPPER))


def _lib_name() -> str:
    return {"darwin": "libclang.dylib", "win32": "libclang.dll"}.get(sys.platform, "libclang.so")


def wheel_native_dir() -> Path | None:
    """`clang/native` of the installed bindings when they are libclang-ng's (found without importing them)."""
    try:
        spec = importlib.util.find_spec("clang")
    except (ImportError, ValueError):
        return None
    for loc in (spec.submodule_search_locations or []) if spec is not None else []:
        native = Path(loc) / "native"
        if (native / _lib_name()).is_file():
            return native
    return None


def wheel_version() -> str | None:
    import importlib.metadata as md

    try:
        return md.version(WHEEL)
    except md.PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def find_setup() -> tuple[ClangSetup | None, str]:
    """(setup, "") or (None, why not): the environment's pair when set, else the libclang-ng wheel's."""
    lib = os.environ.get("CUDAMIGRATE_LIBCLANG")
    res = os.environ.get("CUDAMIGRATE_CLANG_RESOURCE_DIR")
    if lib or res:
        if not res or not _valid_resource(res):
            return None, f"$CUDAMIGRATE_CLANG_RESOURCE_DIR={res or ''} has no {WRAPPER}"
        if lib and not os.path.isfile(lib):
            return None, f"$CUDAMIGRATE_LIBCLANG={lib} does not exist"
        return ClangSetup(lib, res, _major_of_resource(res) or 0, "environment"), ""
    native = wheel_native_dir()
    if native is None:
        return None, (f"the {WHEEL} wheel's libclang is not installed (`pip install {WHEEL}`; another `clang` "
                      "package, such as the `libclang` wheel, may shadow it)")
    rd = native / "resource"
    if not _valid_resource(str(rd)):
        return None, f"{rd} (from {WHEEL}) has no {WRAPPER}"
    version = wheel_version() or "0"
    libcxx = native / "libcxx"
    return ClangSetup(str(native / _lib_name()), str(rd), int(version.split(".")[0]), "wheel",
                      str(libcxx) if libcxx.is_dir() else None), ""


@lru_cache(maxsize=1)
def host_cxx_library() -> str | None:
    """Where the host's C++ standard library headers are (the ones clang's driver finds by itself), or None.

    libstdc++ lies in <prefix>/include/c++/<N> next to the GCC installation; macOS SDKs carry libc++ in
    usr/include/c++/v1. Without either, the wheel's libc++ is the only C++ library there is.
    """
    pats = ["/usr/include/c++/*/cstddef", "/usr/local/include/c++/*/cstddef", "/opt/*/include/c++/*/cstddef",
            "/usr/include/c++/v1/cstddef",
            "/Library/Developer/CommandLineTools/SDKs/*/usr/include/c++/v1/cstddef",
            "/Applications/Xcode*.app/Contents/Developer/Platforms/MacOSX.platform/Developer/SDKs/*/usr/include/c++/v1/cstddef"]
    for pat in pats:
        hits = sorted(glob.glob(pat))
        if hits:
            return os.path.dirname(hits[-1])
    return None


@lru_cache(maxsize=1)
def gcc_omp_dir() -> str | None:
    """The host GCC's own include directory when it holds `omp.h`, newest GCC first.

    nvcc hands host code to GCC, whose internal include directory always has `omp.h` (libgomp); clang's resource
    headers have none, so an OpenMP sample did not parse. It goes last on the search path (`-idirafter`): clang's
    own versions of every header the two share are found first, only what clang lacks comes from there."""
    def version(p: str) -> tuple[int, ...]:
        v = Path(p).parent.parent.name
        return tuple(int(x) for x in re.findall(r"\d+", v)) or (0,)

    hits = sorted(glob.glob("/usr/lib/gcc/*/*/include/omp.h") + glob.glob("/usr/local/lib/gcc/*/*/include/omp.h"),
                  key=version)
    return os.path.dirname(hits[-1]) if hits else None


def stdlib_args(setup: ClangSetup | None) -> list[str]:
    """`-nostdinc++ -isystem <wheel libc++>` on a host without a C++ library of its own, else nothing."""
    if setup is None or setup.libcxx is None or host_cxx_library() is not None:
        return []
    return ["-nostdinc++", "-isystem", setup.libcxx]


_LOCK = threading.Lock()
_LOADED: list[str | None] = []


def cindex():
    """The `clang.cindex` module, bound to the library of `find_setup()` (once per process)."""
    import clang.cindex as ci

    setup, why = find_setup()
    if setup is None:
        raise RuntimeError(why)
    with _LOCK:
        if not _LOADED:
            # another user of clang.cindex in this process (the API inventory script, a test) may have loaded
            # the library already: setting it again raises, and the bindings' default is the same wheel's
            if setup.library and not getattr(ci.Config, "loaded", False):
                ci.Config.set_library_file(setup.library)
            # libclang-ng's bindings add their libc++ (`-isystem`) and resource dir to command lines that lack
            # them; clang_args() decides both itself (see the module's docstring)
            for attr in ("libcxx_dir", "resource_dir"):
                if hasattr(ci.Config, attr):
                    setattr(ci.Config, attr, None)
            _register_extra(ci)
            _LOADED.append(setup.library)
    return ci


def _register_extra(ci) -> None:
    """C entry points the Python bindings of some versions do not declare."""
    import ctypes

    lib = ci.conf.lib
    loc_out = [ci.SourceLocation, ctypes.POINTER(ci.c_object_p), ctypes.POINTER(ctypes.c_uint),
               ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint)]
    for name in ("clang_getSpellingLocation", "clang_getFileLocation", "clang_getExpansionLocation"):
        fn = getattr(lib, name)
        fn.argtypes = loc_out
        fn.restype = None
    lib.clang_Cursor_Evaluate.argtypes = [ci.Cursor]
    lib.clang_Cursor_Evaluate.restype = ctypes.c_void_p
    lib.clang_EvalResult_getKind.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_getKind.restype = ctypes.c_int
    lib.clang_EvalResult_getAsLongLong.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_getAsLongLong.restype = ctypes.c_longlong
    lib.clang_EvalResult_dispose.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_dispose.restype = None
    lib.clang_Cursor_isInlineNamespace.argtypes = [ci.Cursor]
    lib.clang_Cursor_isInlineNamespace.restype = ctypes.c_uint


def clang_version() -> str | None:
    """The loaded libclang's own version line (`clang version 22.1.4 ...`), or None."""
    try:
        ci = cindex()
        fn = ci.conf.lib["clang_getClangVersion"]
        fn.argtypes = []
        fn.restype = ci._CXString
        return ci._CXString.from_result(fn()) or None
    except Exception:
        return None


def available() -> tuple[bool, str]:
    setup, why = find_setup()
    if setup is None:
        return False, why
    try:
        cindex()
    except Exception as exc:  # a broken libclang must not crash a scan
        return False, f"cannot load libclang: {exc}"
    return True, ""


# --------------------------------------------------------------------------- compile database
# (`Command` and `load_compile_db` live in parse/compile_db.py: the preprocessor model reads the same units' -D/-U
# without loading semantic mode)


# --------------------------------------------------------------------------- flag mapping
_KEEP_WITH_ARG = {"-I", "-D", "-U", "-isystem", "-include", "-iquote", "-idirafter", "-imacros"}
_NVCC_WITH_ARG = {
    "-o", "-arch", "--gpu-architecture", "-code", "--gpu-code", "-gencode", "--generate-code", "-ccbin",
    "--compiler-bindir", "-Xcompiler", "--compiler-options", "-Xptxas", "--ptxas-options", "-Xlinker",
    "--linker-options", "-Xnvlink", "--nvlink-options", "-Xarchive", "-maxrregcount", "--maxrregcount",
    "-rdc", "--relocatable-device-code", "--default-stream", "-default-stream", "-t", "--threads",
    "-MF", "-MT", "-MQ", "-x", "--x", "-L", "-l", "--library", "--library-path", "-odir", "--output-directory",
    "--resource-usage", "-ftz", "-prec-div", "-prec-sqrt", "-fmad", "--fmad", "--use_fast_math", "-split-compile",
    "--split-compile", "-diag-suppress", "--diag-suppress", "-Werror", "--Werror", "-forward-unknown-to-host-compiler",
    "--std", "-std", "-dlink", "--options-file", "-optf",
}
_ARCH_RE = re.compile(r"(?:sm|compute)_(\d+[a-z]?)")


def _arches(value: str) -> list[str]:
    return [f"sm_{m.group(1)}" for m in _ARCH_RE.finditer(value)]


def cuda_path_for(argv: list[str]) -> str:
    """Toolkit of the command's own nvcc when it looks like <cuda>/bin/nvcc, else $CUDA_HOME or 13.0."""
    if argv:
        exe = Path(argv[0])
        if exe.name.startswith("nvcc") and exe.exists():
            exe = exe.resolve()  # /usr/local/bin/nvcc -> <toolkit>/bin/nvcc
        if exe.name.startswith("nvcc") and exe.parent.name == "bin" and (exe.parent.parent / "include" / "cuda_runtime.h").is_file():
            return str(exe.parent.parent)
    for var in ("CUDAMIGRATE_CUDA_PATH", "CUDA_HOME", "CUDA_PATH"):
        v = os.environ.get(var)
        if v and os.path.isfile(os.path.join(v, "include", "cuda_runtime.h")):
            return v
    return DEFAULT_CUDA


_CXX_EXTS = {".cpp", ".cc", ".cxx", ".c++", ".cp"}
_LANG_OF_X = {"cu": "cuda", "cuda": "cuda", "c++": "c++", "cpp": "c++", "c": "c"}


def source_language(cmd: Command) -> str:
    """"cuda", "c++" or "c": the language the command's own compiler gives `cmd.file`.

    nvcc compiles `.cu` as CUDA but hands `.cpp/.cc/.cxx` to the host compiler as plain C++ and `.c` as C
    (no `__CUDACC__`, no kernels); only `-x cu` (`--x=cu`, `-xcu`) makes it treat them as CUDA. Parsing such a
    file as CUDA would see declarations nvcc never compiles for it (and force-include clang's CUDA wrapper).
    clang/gcc commands follow `-x cuda|c++|c` the same way. Headers and unknown suffixes given to nvcc stay
    CUDA (they are normally included from `.cu` files).
    """
    argv = cmd.argv
    forced: str | None = None
    for i, a in enumerate(argv[1:], 1):
        v = None
        if a in ("-x", "--x") and i + 1 < len(argv):
            v = argv[i + 1]
        elif a.startswith(("--x=", "-x=")):
            v = a.split("=", 1)[1]
        elif a.startswith("-x") and len(a) > 2 and a[2:] in _LANG_OF_X:
            v = a[2:]
        if v is not None:
            forced = _LANG_OF_X.get(v.lower(), forced)
    if forced is not None:
        return forced
    ext = cmd.file.suffix.lower()
    exe = os.path.basename(argv[0]) if argv else ""
    if ext in (".cu", ".cuh"):
        return "cuda"
    if ext in _CXX_EXTS or cmd.file.suffix == ".C":
        return "c++"
    if ext == ".c":
        return "c"
    return "cuda" if exe.startswith("nvcc") else "c++"


def clang_args(cmd: Command, setup: ClangSetup | None = None) -> list[str]:
    """Map an nvcc/clang/gcc command line of `cmd.file` to libclang arguments (without the file)."""
    argv = cmd.argv
    exe = os.path.basename(argv[0]) if argv else ""
    is_nvcc = exe.startswith("nvcc")
    language = source_language(cmd)
    is_cuda = language == "cuda"
    out: list[str] = []
    arches: list[str] = []
    std: str | None = None
    i = 1
    n = len(argv)

    def norm_path(p: str) -> str:
        return p if os.path.isabs(p) else str((cmd.directory / p).resolve())

    while i < n:
        a = argv[i]
        nxt = argv[i + 1] if i + 1 < n else ""
        # joined forms: -Ifoo, -DX=1, --gpu-architecture=sm_80, -std=c++17
        key, eq, val = a.partition("=")
        if a in _KEEP_WITH_ARG:
            out += [a, norm_path(nxt) if a in ("-I", "-isystem", "-iquote", "-idirafter", "-include", "-imacros") else nxt]
            i += 2
            continue
        if a.startswith(("-I", "-isystem", "-iquote", "-idirafter")) and len(a) > 2:
            for flag in ("-isystem", "-iquote", "-idirafter", "-I"):
                if a.startswith(flag):
                    out += [flag, norm_path(a[len(flag):].lstrip("="))]
                    break
            i += 1
            continue
        if a.startswith(("-D", "-U")) and len(a) > 2:
            out.append(a)
            i += 1
            continue
        if key in LONG_DEFINES:  # nvcc's --define-macro / --undefine-macro
            if (val if eq else nxt):
                out.append(LONG_DEFINES[key] + (val if eq else nxt))
            i += 1 if eq else 2
            continue
        if key in ("-std", "--std"):
            std = val if eq else nxt
            i += 1 if eq else 2
            continue
        if key in ("-arch", "--gpu-architecture", "-code", "--gpu-code", "-gencode", "--generate-code"):
            arches += _arches(val if eq else nxt)
            i += 1 if eq else 2
            continue
        if a.startswith("--cuda-gpu-arch="):
            arches += _arches(a)
            i += 1
            continue
        if key in ("-Xcompiler", "--compiler-options"):
            for x in compiler_option_items(val if eq else nxt):
                if x.startswith(("-D", "-U", "-I", "-std=", "-f", "-m")) and not x.startswith(("-fPIC", "-fopenmp")):
                    out.append(x)
            i += 1 if eq else 2
            continue
        if key in _NVCC_WITH_ARG:
            i += 1 if eq or a in ("-dlink",) else 2
            continue
        if a in ("-c", "-g", "-G", "-lineinfo", "-O0", "-O1", "-O2", "-O3", "-Os", "-w") or a.startswith(("-O", "-W", "-M", "-o")):
            i += 1
            continue
        if a.startswith("--expt") or a.startswith("--extended-lambda") or a.startswith("-extended-lambda"):
            i += 1
            continue
        if not a.startswith("-"):
            i += 1  # the source file itself, or an nvcc-only positional
            continue
        if not is_nvcc and a.startswith(("-f", "-m", "-pthread")):
            out.append(a)
        i += 1
    if std is None:
        std = "c++17"
    lang = ["-x", "cuda", "--cuda-host-only"] if is_cuda else (["-x", "c"] if language == "c" else ["-x", "c++"])
    extra: list[str] = []
    if is_cuda:
        cuda = cuda_path_for(argv)
        extra += [f"--cuda-path={cuda}", f"--cuda-gpu-arch={(arches or ['sm_80'])[0]}"]
        cccl = os.path.join(cuda, "include", "cccl")
        if os.path.isdir(cccl):
            extra += ["-isystem", cccl]  # nvcc adds CCCL (Thrust, CUB, libcu++) implicitly
    else:
        cuda = cuda_path_for(argv)
        extra += ["-isystem", os.path.join(cuda, "include")]
        cccl = os.path.join(cuda, "include", "cccl")
        if os.path.isdir(cccl):
            extra += ["-isystem", cccl]
    if language != "c":
        extra.append(f"-std={std}")
    setup = setup or find_setup()[0]
    if setup is not None:
        extra += ["-resource-dir", setup.resource_dir]
        if language != "c":
            extra += stdlib_args(setup)
    # -fno-spell-checking: a call of a removed API must stay unresolved, not be "corrected" to a similar name
    extra += ["-Wno-unknown-cuda-version", "-Wno-everything", "-ferror-limit=0", "-fno-spell-checking",
              "-idirafter", str(SHIMS)]
    omp = gcc_omp_dir()
    if omp is not None:
        extra += ["-idirafter", omp]
    return lang + extra + out


def default_command(path: Path) -> Command:
    """A command for files the database does not list (headers, stray sources)."""
    p = path.resolve()
    return Command(p, p.parent, ["nvcc", "-c", str(p)])
