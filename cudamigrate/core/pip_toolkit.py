"""nvcc of a CUDA release from NVIDIA's wheels, installed on demand into a cache directory, nothing system-wide.

Why: `fix --target-cuda 13.5` should be verified by the compiler of 13.5, and the recall bench should ask the
release the user targets, on a machine whose toolkit is another release. NVIDIA publishes the compiler as
wheels (nvidia-cuda-nvcc, -nvvm, -crt, -runtime, -cccl): `pip install --no-deps --target DIR` of one release's
set gives `DIR/nvidia/cu13/bin/nvcc`, which finds its headers, cicc and libdevice relative to itself (checked
by hand for 13.5: `nvcc --version` says "release 13.5, V13.5.37"; it compiles a .cu and reports
`cudaThreadSynchronize` undefined). Everything that compiles (fixproof/compile_check.py, toolcheck/doctor.py,
bench/compile_recall.py) runs the `nvcc` on PATH, so `path_with(release)` is how a caller hands it this one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# release -> the wheels of its compiler, runtime headers and CCCL (pinned: what `nvcc --version` was checked with),
# plus the header-only wheels whose headers a system toolkit's include/ has and sources include: the profiler API
# (cuda_profiler_api.h, cudaProfiler.h) and NVTX 3 (nvtx3/, 197 KB). Versions as NVIDIA's `cuda-toolkit`
# metapackage of the release pins them (cuda-toolkit 13.5.0's Requires-Dist: nvidia-cuda-cccl==13.3.5.0.6.*,
# nvidia-cuda-profiler-api==13.5.25.*, nvidia-nvtx==13.5.25.*). Not installed, though /usr/local/cuda-13.0/include
# has their headers: CUPTI (cupti*.h, nvperf*.h, generated_*_meta.h, cuda_stdint.h, Openmp/, Openacc/; the
# nvidia-cuda-cupti wheel, 12.6 MB, mostly profiling libraries): a profiler's API, not what migrated sources
# include to build; nv_decode.h, in none of the wheels looked at (this set, nvidia-cuda-cupti). The library
# wheels (cuBLAS, cuFFT, ...) are the bench's --wheel-include.
WHEELS: dict[str, tuple[str, ...]] = {
    "13.5": ("nvidia-cuda-nvcc==13.5.37", "nvidia-nvvm==13.5.37", "nvidia-cuda-crt==13.5.37",
             "nvidia-cuda-runtime==13.5.37", "nvidia-cuda-cccl==13.3.5.0.6", "nvidia-cuda-profiler-api==13.5.25",
             "nvidia-nvtx==13.5.25"),
}


class ToolkitError(Exception):
    """The release has no pinned wheels, or pip could not install them; str() is one line."""


def cache_root() -> Path:
    """$CUDAMIGRATE_TOOLKITS, else ~/.cache/cudamigrate/toolkits (one directory per release)."""
    env = os.environ.get("CUDAMIGRATE_TOOLKITS")
    return Path(env) if env else Path.home() / ".cache" / "cudamigrate" / "toolkits"


def _dir(release: str, root: Path | None) -> Path:
    return (root or cache_root()) / release


def installed(release: str, root: Path | None = None) -> Path | None:
    """The release's nvcc when its wheels are installed (the stamp names exactly the pinned set), else None."""
    d = _dir(release, root)
    stamp = d / ".cudamigrate-wheels"
    nvcc = d / "nvidia" / "cu13" / "bin" / "nvcc"
    if release in WHEELS and stamp.is_file() and stamp.read_text().split() == list(WHEELS[release]) and nvcc.is_file():
        return nvcc
    return None


def install(release: str, root: Path | None = None) -> Path:
    """Install the release's wheels with pip into the cache (once) and return its nvcc."""
    if release not in WHEELS:
        raise ToolkitError(f"no pinned compiler wheels for CUDA {release} (known: {', '.join(sorted(WHEELS))})")
    found = installed(release, root)
    if found is not None:
        return found
    d = _dir(release, root)
    d.mkdir(parents=True, exist_ok=True)
    missing = _missing(release, d)
    # wheels added to an installed set go into a directory of their own first: `pip install --target --upgrade`
    # replaces each top-level directory it installs, and every wheel's is nvidia/, so installing them into `d`
    # would delete the compiler installed there
    into = d if len(missing) == len(WHEELS[release]) else Path(tempfile.mkdtemp(prefix=".added-", dir=d))
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--upgrade", "--target", str(into), *missing]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        if into != d:
            shutil.rmtree(into, ignore_errors=True)
        last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise ToolkitError(f"pip could not install the CUDA {release} compiler into {d}: {last}")
    if into != d:
        shutil.copytree(into, d, dirs_exist_ok=True, symlinks=True)
        shutil.rmtree(into, ignore_errors=True)
    # a new file, not the old one rewritten: a hard-linked copy of the cache must not change the original's stamp
    # (named per process: two installs finishing together must not write or rename one another's file)
    tmp = d / f".cudamigrate-wheels.{os.getpid()}.tmp"
    tmp.write_text("\n".join(WHEELS[release]) + "\n")
    tmp.replace(d / ".cudamigrate-wheels")
    nvcc = installed(release, root)
    if nvcc is None:
        raise ToolkitError(f"the CUDA {release} wheels installed into {d} have no nvidia/cu13/bin/nvcc")
    return nvcc


def _missing(release: str, d: Path) -> list[str]:
    """The pinned wheels `d` lacks: only those the pin set gained when `d` holds an earlier subset of it with its
    nvcc (a cache installed before the profiler-API and NVTX wheels were pinned gets those two, not 350 MB of
    compiler again); every wheel otherwise."""
    stamp = d / ".cudamigrate-wheels"
    pinned = list(WHEELS[release])
    had = stamp.read_text().split() if stamp.is_file() else []
    if had and set(had) <= set(pinned) and (d / "nvidia" / "cu13" / "bin" / "nvcc").is_file():
        return [w for w in pinned if w not in had]
    return pinned


def path_with(nvcc: Path, path: str | None = None) -> str:
    """PATH with the directory of `nvcc` first, so that every `nvcc` lookup finds this one."""
    rest = os.environ.get("PATH", "") if path is None else path
    return os.pathsep.join([str(nvcc.parent), *[p for p in rest.split(os.pathsep) if p and p != str(nvcc.parent)]])
