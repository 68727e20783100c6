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
import subprocess
import sys
from pathlib import Path

# release -> the wheels of its compiler, runtime headers and CCCL (pinned: what `nvcc --version` was checked with).
# nvidia-cuda-cccl's newest wheel is 13.3.5.0.6 (CCCL's own numbering after 13.2.86); no 13.4/13.5-numbered one.
WHEELS: dict[str, tuple[str, ...]] = {
    "13.5": ("nvidia-cuda-nvcc==13.5.37", "nvidia-nvvm==13.5.37", "nvidia-cuda-crt==13.5.37",
             "nvidia-cuda-runtime==13.5.37", "nvidia-cuda-cccl==13.3.5.0.6"),
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
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--upgrade", "--target", str(d), *WHEELS[release]]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise ToolkitError(f"pip could not install the CUDA {release} compiler into {d}: {last}")
    (d / ".cudamigrate-wheels").write_text("\n".join(WHEELS[release]) + "\n")
    nvcc = installed(release, root)
    if nvcc is None:
        raise ToolkitError(f"the CUDA {release} wheels installed into {d} have no nvidia/cu13/bin/nvcc")
    return nvcc


def path_with(nvcc: Path, path: str | None = None) -> str:
    """PATH with the directory of `nvcc` first, so that every `nvcc` lookup finds this one."""
    rest = os.environ.get("PATH", "") if path is None else path
    return os.pathsep.join([str(nvcc.parent), *[p for p in rest.split(os.pathsep) if p and p != str(nvcc.parent)]])
