"""Compiling fixture programs with nvcc (tests and `cudamigrate selftest`).

cuBLAS, NVRTC, cuFFT, NPP and cuSPARSE are not part of the toolkit install here; their 13.0-matched pip
wheels (`nvidia-cublas`, `nvidia-cuda-nvrtc`, `nvidia-cufft`, `nvidia-npp`, `nvidia-cusparse`) put headers
and versioned libraries in `<site-packages>/nvidia/cu13/{include,lib}`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from ..core.toolkit import cuda_home, nvcc_path

LIBS: dict[str, str | list[str]] = {"cublas": "-l:libcublas.so.13", "nvrtc": "-l:libnvrtc.so.13", "cufft": "-l:libcufft.so.12",
        "cusparse": "-l:libcusparse.so.12", "curand": "-l:libcurand.so.10", "cuda": "-lcuda",
        # NPP is split by function group; nppc is the core every group needs
        "npp": [f"-l:lib{n}.so.13" for n in ("nppial", "nppicc", "nppidei", "nppif", "nppig", "nppim", "nppist",
                                            "nppisu", "nppitc", "npps", "nppc")]}


def wheel_root() -> Path | None:
    """The nvidia/cu13 tree of the pip wheels, if installed in this interpreter's environment.

    `CUDAMIGRATE_NVIDIA_ROOT` points at such a tree explicitly (the GPU stage sets it when the wheels live
    in another interpreter's site-packages)."""
    env = os.environ.get("CUDAMIGRATE_NVIDIA_ROOT")
    if env and (Path(env) / "include").is_dir():
        return Path(env)
    candidates = [Path(sysconfig.get_paths()["purelib"]), Path(sysconfig.get_paths()["platlib"])]
    candidates += [Path(p) for p in sys.path if p.endswith("site-packages")]
    for base in candidates:
        root = base / "nvidia" / "cu13"
        if (root / "include").is_dir():
            return root
    return None


# library -> (a header that proves its development files are present, the versioned library file)
LIB_FILES = {
    "cublas": ("cublas_v2.h", "libcublas.so.13"),
    "nvrtc": ("nvrtc.h", "libnvrtc.so.13"),
    "cufft": ("cufft.h", "libcufft.so.12"),
    "cusparse": ("cusparse.h", "libcusparse.so.12"),
    "curand": ("curand.h", "libcurand.so.10"),
    "npp": ("npp.h", "libnppc.so.13"),
}
INCLUDE_LIBS = [
    (re.compile(r'^\s*#\s*include\s*[<"](cublas(_v2|_api|Lt|Xt)?|nvblas)\.h[>"]', re.M), "cublas"),
    (re.compile(r'^\s*#\s*include\s*[<"]nvrtc\.h[>"]', re.M), "nvrtc"),
    (re.compile(r'^\s*#\s*include\s*[<"]cufft(Xt|w)?\.h[>"]', re.M), "cufft"),
    (re.compile(r'^\s*#\s*include\s*[<"]cusparse(_v2)?\.h[>"]', re.M), "cusparse"),
    (re.compile(r'^\s*#\s*include\s*[<"]curand\.h[>"]', re.M), "curand"),
    (re.compile(r'^\s*#\s*include\s*[<"]npp(core|defs|i\w*|s\w*)?\.h[>"]', re.M), "npp"),
    (re.compile(r'^\s*#\s*include\s*[<"]cuda\.h[>"]', re.M), "cuda"),
]


def libs_from_includes(text: str) -> list[str]:
    """Libraries a program needs at link time, judged by its #includes."""
    return [lib for rx, lib in INCLUDE_LIBS if rx.search(text)]


DRIVER_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib", "/usr/lib")


def libcuda_link() -> list[str] | None:
    """Linker arguments for the driver API: the toolkit stub, else the driver's libcuda.so[.1]."""
    home = cuda_home()
    if home is not None and (home / "lib64" / "stubs" / "libcuda.so").is_file():
        return ["-L", str(home / "lib64" / "stubs"), "-lcuda"]
    for d in DRIVER_LIB_DIRS:
        if Path(d, "libcuda.so").exists():
            return ["-L", d, "-lcuda"]
        if Path(d, "libcuda.so.1").exists():  # containers often mount only the versioned name
            return ["-L", d, "-l:libcuda.so.1"]
    return None


def lib_available(lib: str) -> bool:
    """Whether headers and library of `lib` can be found (pip wheels or the toolkit)."""
    if lib == "cuda":
        return libcuda_link() is not None
    if lib not in LIB_FILES:
        return True
    header, so = LIB_FILES[lib]
    roots = [r for r in (wheel_root(), cuda_home()) if r is not None]
    has_h = any((r / "include" / header).is_file() for r in roots)
    has_so = any((r / d / so).exists() for r in roots for d in ("lib", "lib64"))
    return has_h and has_so


@dataclass
class BuildResult:
    ok: bool
    cmd: list[str]
    output: str
    seconds: float


def nvcc_command(src: Path, out: Path, *, link: bool, libs: list[str] | None = None, flags: list[str] | None = None,
                 arch: str = "sm_90", include_dirs: list[Path] | None = None) -> list[str]:
    cmd = [nvcc_path() or "nvcc", "-std=c++17", f"-arch={arch}", "-w"]
    if not link:
        cmd.append("-c")
    root = wheel_root()
    if root is not None:
        cmd += ["-I", str(root / "include")]
    for d in include_dirs or []:
        cmd += ["-I", str(d)]
    cmd += list(flags or [])
    cmd += [str(src), "-o", str(out)]
    if link:
        if root is not None:
            cmd += ["-L", str(root / "lib"), f"-Xlinker=-rpath={root / 'lib'}"]
        for lib in libs or []:
            if lib == "cuda":
                cmd += libcuda_link() or ["-lcuda"]  # the stub links; the driver's libcuda.so.1 runs
            else:
                v = LIBS.get(lib, f"-l{lib}")
                cmd += v if isinstance(v, list) else [v]
    return cmd


def compile_file(src: Path, out: Path, *, link: bool = False, libs: list[str] | None = None,
                 flags: list[str] | None = None, arch: str = "sm_90", include_dirs: list[Path] | None = None,
                 timeout: float = 300) -> BuildResult:
    import time

    cmd = nvcc_command(src, out, link=link, libs=libs, flags=flags, arch=arch, include_dirs=include_dirs)
    t0 = time.monotonic()
    env = dict(os.environ)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, env=env)  # nvcc echoes non-UTF-8 source lines
        return BuildResult(p.returncode == 0, cmd, p.stdout + p.stderr, time.monotonic() - t0)
    except subprocess.TimeoutExpired:
        return BuildResult(False, cmd, f"timeout after {timeout}s", time.monotonic() - t0)


def run_env() -> dict[str, str]:
    """Environment for running fixture programs: NVRTC dlopens its builtins from LD_LIBRARY_PATH."""
    env = dict(os.environ)
    dirs = [str(root / "lib") for root in [wheel_root()] if root is not None]
    home = cuda_home()
    if home is not None and (home / "lib64").is_dir():
        dirs.append(str(home / "lib64"))  # toolkit cuBLAS/NVRTC when the toolkit ships them
    if dirs:
        env["LD_LIBRARY_PATH"] = ":".join(dirs + [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p])
    return env
