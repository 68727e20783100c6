"""Where the CUDA toolkit is: the `nvcc` on PATH and the install it belongs to.

Asked by the scan (match/shadows.py: the toolkit's headers, for names they declare), by the result cache (the
toolkit is part of what a cached result depends on) and by toolcheck/build.py (compiling fixtures): here, on the
ground floor, so that none of them imports another's package for it.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path


def nvcc_path() -> str | None:
    return shutil.which("nvcc")


def cuda_home() -> Path | None:
    """The toolkit that `nvcc` belongs to (…/bin/nvcc -> …)."""
    nv = nvcc_path()
    if nv:
        home = Path(nv).resolve().parent.parent
        if (home / "include" / "cuda_runtime.h").is_file():
            return home
        try:  # a wrapper script (`exec /usr/local/cuda-13.0/bin/nvcc "$@"`)
            m = re.search(r"(/\S+)/bin/nvcc", Path(nv).read_text(errors="replace")[:4096])
        except OSError:
            m = None
        if m and Path(m.group(1), "include", "cuda_runtime.h").is_file():
            return Path(m.group(1))
    for d in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if d and Path(d, "include", "cuda_runtime.h").is_file():
            return Path(d)
    return None


_RELEASE_LINE = re.compile(r"release (\d+)\.(\d+)")
_RELEASE_IN_PATH = re.compile(r"cuda-(\d+)\.(\d+)(?:/|$)")


def parse_nvcc_version(text: str) -> tuple[int, int] | None:
    """`Cuda compilation tools, release 13.0, V13.0.88` -> (13, 0)."""
    m = _RELEASE_LINE.search(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def release_in_path(path: str) -> tuple[int, int] | None:
    """The release an installer's directory names (`/usr/local/cuda-12.4/bin/nvcc` -> (12, 4)): the witness left
    when a compile database names a compiler this machine does not have."""
    m = _RELEASE_IN_PATH.search(path)
    return (int(m.group(1)), int(m.group(2))) if m else None


_RELEASES: dict[tuple[str, int, int], tuple[int, int] | None] = {}


def nvcc_release(nvcc: str) -> tuple[int, int] | None:
    """The release `nvcc --version` of that executable says, else None (missing, not runnable, no release line).

    Asked once per executable and change of it in a process (a scan's preparation and the language server ask
    for every run); `nvcc --version` prints its release without loading the front end (about 10 ms)."""
    try:
        st = os.stat(nvcc)
    except OSError:
        return None
    key = (os.path.realpath(nvcc), st.st_mtime_ns, st.st_size)
    if key not in _RELEASES:
        import subprocess

        try:
            done = subprocess.run([nvcc, "--version"], capture_output=True, text=True, errors="replace", timeout=30)
            _RELEASES[key] = parse_nvcc_version(done.stdout + done.stderr) if done.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            _RELEASES[key] = None
    return _RELEASES[key]
