"""Compiling fixture programs with nvcc (tests and `cudamigrate selftest`).

cuBLAS and NVRTC are not part of the toolkit install here; the pip wheels
`nvidia-cublas` and `nvidia-cuda-nvrtc` put headers and versioned libraries in
`<site-packages>/nvidia/cu13/{include,lib}` (see shared/cuda/README.md §4).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

LIBS = {"cublas": "-l:libcublas.so.13", "nvrtc": "-l:libnvrtc.so.13", "cufft": "-l:libcufft.so.12", "cuda": "-lcuda"}


def nvcc_path() -> str | None:
    return shutil.which("nvcc")


def wheel_root() -> Path | None:
    """The nvidia/cu13 tree of the pip wheels, if installed in this interpreter's environment."""
    candidates = [Path(sysconfig.get_paths()["purelib"]), Path(sysconfig.get_paths()["platlib"])]
    candidates += [Path(p) for p in sys.path if p.endswith("site-packages")]
    for base in candidates:
        root = base / "nvidia" / "cu13"
        if (root / "include").is_dir():
            return root
    return None


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
        cmd += [LIBS.get(lib, f"-l{lib}") for lib in libs or []]
    return cmd


def compile_file(src: Path, out: Path, *, link: bool = False, libs: list[str] | None = None,
                 flags: list[str] | None = None, arch: str = "sm_90", include_dirs: list[Path] | None = None,
                 timeout: float = 300) -> BuildResult:
    import time

    cmd = nvcc_command(src, out, link=link, libs=libs, flags=flags, arch=arch, include_dirs=include_dirs)
    t0 = time.monotonic()
    env = dict(os.environ)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        return BuildResult(p.returncode == 0, cmd, p.stdout + p.stderr, time.monotonic() - t0)
    except subprocess.TimeoutExpired:
        return BuildResult(False, cmd, f"timeout after {timeout}s", time.monotonic() - t0)


def run_env() -> dict[str, str]:
    """Environment for running fixture programs: NVRTC dlopens its builtins from LD_LIBRARY_PATH."""
    env = dict(os.environ)
    root = wheel_root()
    if root is not None:
        env["LD_LIBRARY_PATH"] = f"{root / 'lib'}:{env.get('LD_LIBRARY_PATH', '')}"
    return env
