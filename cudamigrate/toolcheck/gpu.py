"""The GPU and its toolchain, asked in one place: nvidia-smi, the GPU's architecture, the nvcc version, and
running a built program with a timeout.

`selftest --gpu`, `calibrate`, the calibration lookup (which GPU's figures to show) and the test suite's
`gpu_available()` all go through here, so `CUDAMIGRATE_NO_GPU=1` hides the GPU from every one of them alike.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from . import build

NO_GPU_ENV = "CUDAMIGRATE_NO_GPU"


@dataclass
class GpuInfo:
    name: str
    driver: str
    compute_cap: str  # "9.0"
    count: int = 1

    @property
    def arch(self) -> str:
        return "sm_" + self.compute_cap.replace(".", "")


def smi(*args: str, timeout: float = 20) -> str | None:
    """nvidia-smi's standard output, or None when it is missing, fails or hangs."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout if p.returncode == 0 else None


def detect_gpu() -> GpuInfo | None:
    """The first GPU nvidia-smi reports (CUDAMIGRATE_NO_GPU=1 hides it), or None."""
    if os.environ.get(NO_GPU_ENV):
        return None
    out = smi("--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader")
    if not out or not out.strip():
        return None
    rows = [[x.strip() for x in line.split(",")] for line in out.strip().splitlines() if line.strip()]
    rows = [r for r in rows if len(r) >= 3]
    if not rows:
        return None
    name, driver, cap = rows[0][:3]
    if not re.fullmatch(r"\d+\.\d+", cap):
        cap = "9.0"
    return GpuInfo(name, driver, cap, len(rows))


def gpu_available() -> bool:
    """A GPU that programs can run on (the test suite's skip condition)."""
    return detect_gpu() is not None


@lru_cache(maxsize=1)
def first_gpu_name() -> str | None:
    """The first GPU's name, asked once per process (the calibration lookup runs per scan), and kept in the
    user's cache directory for the next processes while what it depends on is unchanged (`_gpu_fingerprint`):
    nvidia-smi starts the driver's management library for one line, a process every one-file scan (an editor's
    save, a pre-commit hook) ran again (scripts/device_speed.sh times it on the GPU machine)."""
    if os.environ.get(NO_GPU_ENV):
        return None
    exe = shutil.which("nvidia-smi")
    key = _gpu_fingerprint(exe) if exe is not None else None
    kept = _kept_gpu_name(key) if key is not None else None
    if kept is not None:
        return kept
    out = smi("--query-gpu=name", "--format=csv,noheader")
    names = [x.strip() for x in (out or "").splitlines() if x.strip()]
    if names and key is not None:
        _keep_gpu_name(key, names[0])  # a failed or empty answer is asked again next time, never kept
    return names[0] if names else None


PROC_NVIDIA = "/proc/driver/nvidia"  # the driver's procfs: its version, and a directory per GPU it drives
GPU_NAME_FILE = "gpu-name.json"


def _gpu_fingerprint(exe: str) -> str | None:
    """What nvidia-smi's list of GPUs depends on, read without running it: nvidia-smi itself, the driver (its
    procfs `version`), each GPU the driver drives (`gpus/<bus id>/information`) and the GPU device nodes this
    process sees (`/dev/nvidia*`: a container's). None where the driver's procfs cannot be read: the name is
    then asked at every run, as before."""
    import hashlib

    h = hashlib.sha256()
    try:
        st = os.stat(exe)
        h.update(f"{os.path.realpath(exe)}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\0".encode())
        with open(os.path.join(PROC_NVIDIA, "version"), "rb") as fh:
            h.update(fh.read() + b"\0")
        gpus = sorted(os.listdir(os.path.join(PROC_NVIDIA, "gpus")))
        for g in gpus:
            with open(os.path.join(PROC_NVIDIA, "gpus", g, "information"), "rb") as fh:
                h.update(g.encode("utf-8", "surrogateescape") + b"\0" + fh.read() + b"\0")
        nodes = sorted(n for n in os.listdir("/dev") if n.startswith("nvidia"))
    except OSError:
        return None
    if not gpus:
        return None
    h.update("\0".join(nodes).encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _gpu_name_path() -> Path | None:
    from ..knowledge.rule_cache import cache_dir, disabled

    return None if disabled() else cache_dir() / GPU_NAME_FILE


def _kept_gpu_name(key: str) -> str | None:
    import json

    path = _gpu_name_path()
    try:
        doc = json.loads(path.read_text(encoding="utf-8")) if path is not None else None
    except (OSError, ValueError, RecursionError):
        return None
    if isinstance(doc, dict) and doc.get("key") == key and isinstance(doc.get("name"), str) and doc["name"]:
        return doc["name"]
    return None


def _keep_gpu_name(key: str, name: str) -> None:
    import json
    import tempfile

    path = _gpu_name_path()
    if path is None:
        return
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".gpu-name-", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"key": key, "name": name}, fh)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or this whole one
    except OSError:  # a read-only or full cache directory only costs speed
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def resolve_arch(arch: str, gpu: GpuInfo | None) -> str:
    """`auto` -> the GPU's sm_XY (sm_90 without a GPU); nvcc 13.0 needs sm_75 or newer."""
    if arch and arch != "auto":
        return arch if arch.startswith(("sm_", "compute_")) else f"sm_{arch.replace('.', '')}"
    return gpu.arch if gpu is not None else "sm_90"


def nvcc_version() -> str | None:
    """`13.0.88` from `nvcc --version`, or None without nvcc."""
    nv = build.nvcc_path()
    if not nv:
        return None
    try:
        out = subprocess.run([nv, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"release (\d+\.\d+), V([\d.]+)", out)
    return m.group(2) if m else None


@dataclass
class RunOutput:
    rc: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False


def run_program(exe: Path, timeout: float, args: list[str] | None = None, cwd: Path | None = None) -> RunOutput:
    """Run a built program with the toolkit's libraries on the path; a timeout or an OS error is an output too."""
    t0 = time.monotonic()
    try:
        p = subprocess.run([str(exe), *(args or [])], capture_output=True, text=True, timeout=timeout,
                           env=build.run_env(), cwd=str(cwd or exe.parent), errors="replace")
        return RunOutput(p.returncode, p.stdout, p.stderr, time.monotonic() - t0)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return RunOutput(None, out, f"timed out after {timeout}s", time.monotonic() - t0, timed_out=True)
    except OSError as exc:
        return RunOutput(None, "", f"cannot run: {exc}", time.monotonic() - t0)
