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
