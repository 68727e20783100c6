"""`cudamigrate doctor`: is this machine ready to build and run the migrated code?

An upgrade guide asks CI to assert the toolkit, driver and library versions
before trusting a build; this module gathers them in one place:

- nvcc and the toolkit (`CUDART_VERSION`) against `--target-cuda`;
- the driver (nvidia-smi) and whether it can run that toolkit's binaries. The
  minimum driver per CUDA major family comes from NVIDIA's CUDA Compatibility
  guide, "Minor Version Compatibility", Table 1 (CUDA 13.x >= 580, 12.x >= 525,
  11.x >= 450): https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
  (NVIDIA's data-center driver matrix likewise lists R580 as the branch that
  supports CUDA 13.0+);
- cuBLAS, cuFFT, cuSPARSE, NPP, NVRTC, CCCL: the headers' version macros and
  the libraries' sonames, in the toolkit and in pip `nvidia/*` wheels;
- libclang (semantic mode), Chromium (HTML report tests), and whether the
  bundled calibration has an entry for the local GPU.

Only `--require-*` assertions, and a Python package that rule loading needs
missing, make a blocker; everything else informs. A
machine without a GPU is reported as such and is not a failure.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core.toolkit import parse_nvcc_version

# Minimum driver (major branch) per CUDA major family, Linux; NVIDIA CUDA Compatibility guide, Table 1.
MIN_DRIVER = {13: 580, 12: 525, 11: 450}
COMPAT_SOURCE = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"
CHROMIUM = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


@dataclass
class Check:
    """One line of the table. status: ok | warn | fail | skip | info."""

    name: str
    status: str
    found: str
    note: str = ""
    blocker: bool = False


@dataclass
class Library:
    """How to recognise a library: header(s) with version macros, and the soname prefix."""

    name: str
    headers: tuple[str, ...]
    macros: tuple[str, ...]  # MAJOR, MINOR, PATCH macro names, or one packed macro (see `_packed`)
    soname: str


LIBRARIES = (
    Library("CUDA runtime", ("cuda_runtime_api.h",), ("CUDART_VERSION",), "libcudart.so"),
    Library("cuBLAS", ("cublas_api.h",), ("CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR", "CUBLAS_VER_PATCH"), "libcublas.so"),
    Library("cuFFT", ("cufft.h",), ("CUFFT_VER_MAJOR", "CUFFT_VER_MINOR", "CUFFT_VER_PATCH"), "libcufft.so"),
    Library("cuSPARSE", ("cusparse.h",), ("CUSPARSE_VER_MAJOR", "CUSPARSE_VER_MINOR", "CUSPARSE_VER_PATCH"),
            "libcusparse.so"),
    Library("NPP", ("nppversion.h", "npp.h"), ("NPP_VER_MAJOR", "NPP_VER_MINOR", "NPP_VER_PATCH"), "libnppc.so"),
    Library("NVRTC", ("nvrtc.h",), (), "libnvrtc.so"),  # no version macro: the soname's major tells
    Library("CCCL", ("cccl/cuda/std/__cccl/version.h", "cuda/std/__cccl/version.h"), ("CCCL_VERSION",), ""),
)


def run_text(args: list[str], timeout: float = 20) -> str | None:
    """stdout+stderr of a command, or None when it cannot run or fails."""
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (p.stdout + p.stderr) if p.returncode == 0 else None


def parse_smi(text: str) -> list[dict[str, str]]:
    """Rows of `nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader`."""
    rows = []
    for line in text.strip().splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) >= 2 and re.match(r"\d+(\.\d+)*$", parts[1]):
            rows.append({"name": parts[0], "driver": parts[1], "compute_cap": parts[2] if len(parts) > 2 else ""})
    return rows


def driver_major(version: str) -> int:
    return int(version.split(".")[0])


def min_driver_for(cuda: tuple[int, int]) -> int | None:
    return MIN_DRIVER.get(cuda[0])


def header_macros(path: Path) -> dict[str, str]:
    """`#define NAME value` lines of a header (first definition wins)."""
    out: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return out
    for m in re.finditer(r"^\s*#\s*define\s+(\w+)\s+(\d+)\b", text, re.M):
        out.setdefault(m.group(1), m.group(2))
    return out


def _packed(name: str, value: int) -> str:
    if name == "CUDART_VERSION":  # 13000 -> 13.0
        return f"{value // 1000}.{value % 1000 // 10}"
    if name == "CCCL_VERSION":  # 3000001 -> 3.0.1
        return f"{value // 1000000}.{value // 1000 % 1000}.{value % 1000}"
    return str(value)


def header_version(lib: Library, include: Path) -> tuple[str | None, str | None]:
    """(version or None, header path or None) of `lib` under one include directory."""
    for h in lib.headers:
        p = include / h
        if not p.is_file():
            continue
        macros = header_macros(p)
        if len(lib.macros) == 1 and lib.macros[0] in macros:
            return _packed(lib.macros[0], int(macros[lib.macros[0]])), str(p)
        if lib.macros and all(m in macros for m in lib.macros):
            return ".".join(macros[m] for m in lib.macros), str(p)
        return None, str(p)
    return None, None


def sonames(lib: Library, libdir: Path) -> list[str]:
    if not lib.soname:
        return []
    return sorted({Path(p).name for p in glob.glob(str(libdir / (lib.soname + ".*")))
                   if re.search(r"\.so\.\d+$", p)})


@dataclass
class Location:
    label: str  # "toolkit /usr/local/cuda-13.0" or "wheel nvidia/cu13"
    include: Path
    libdirs: list[Path] = field(default_factory=list)


def toolkit_root(nvcc: str | None) -> Path | None:
    """CUDA_HOME / CUDA_PATH, else the nvcc binary's parent (through wrappers: nvcc --dryrun prints TOP)."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        v = os.environ.get(var)
        if v and Path(v, "include").is_dir():
            return Path(v)
    if nvcc is None:
        return None
    real = Path(nvcc).resolve().parent.parent
    if (real / "include" / "cuda_runtime_api.h").is_file():
        return real
    out = run_text([nvcc, "--dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull]) or ""
    m = re.search(r"TOP=(\S+)", out)
    if m and Path(m.group(1), "include").is_dir():
        return Path(os.path.normpath(m.group(1)))
    return None


def wheel_locations() -> list[Location]:
    """`site-packages/nvidia/<pkg>/{include,lib}` of the running Python's pip wheels."""
    out = []
    for sp in sys.path:
        base = Path(sp) / "nvidia"
        if not base.is_dir():
            continue
        for pkg in sorted(base.iterdir()):
            if (pkg / "include").is_dir():
                out.append(Location(f"wheel nvidia/{pkg.name}", pkg / "include", [pkg / "lib"]))
    return out


def library_checks(locations: list[Location]) -> list[Check]:
    checks = []
    for lib in LIBRARIES:
        seen = []
        for loc in locations:
            ver, header = header_version(lib, loc.include)
            libs = sorted({s for d in loc.libdirs for s in sonames(lib, d)})
            if ver is None and not lib.macros and libs:  # NVRTC: the soname's major is the version we have
                ver = libs[-1].rsplit(".so.", 1)[1] + ".x (soname)"
            if header is None and not libs:
                continue
            what = ver or ("header without version macro" if header else "no header")
            seen.append(f"{what} ({loc.label}{'; ' + ', '.join(libs) if libs else ''})")
        if seen:
            checks.append(Check(lib.name, "ok", "; ".join(seen)))
        else:
            checks.append(Check(lib.name, "info", "not found", "in the toolkit or pip nvidia/* wheels"))
    return checks


def gather(target: tuple[int, int], require_cuda: tuple[int, int] | None = None,
           require_driver: int | None = None, target_source: str = "") -> list[Check]:
    """`target_source`: why the target is what it is (cudamigrate/toolcheck/target.py), its own row when given."""
    tstr = f"{target[0]}.{target[1]}"
    checks: list[Check] = [Check("target", "info", tstr, target_source)] if target_source else []
    # -- toolkit
    nvcc = shutil.which("nvcc")
    nv = parse_nvcc_version(run_text([nvcc, "--version"]) or "") if nvcc else None
    if nv is None:
        c = Check("nvcc", "warn", "not found on PATH" if nvcc is None else f"{nvcc}: no version",
                  "fixed code cannot be compiled here")
    elif nv < target:
        c = Check("nvcc", "warn", f"{nv[0]}.{nv[1]} ({nvcc})", f"older than --target-cuda {tstr}")
    else:
        c = Check("nvcc", "ok", f"{nv[0]}.{nv[1]} ({nvcc})", f"builds for --target-cuda {tstr}")
    if require_cuda is not None and (nv is None or nv < require_cuda):
        c.status, c.blocker = "fail", True
        c.note = f"--require-cuda {require_cuda[0]}.{require_cuda[1]} not met"
    checks.append(c)
    root = toolkit_root(nvcc)
    locations = []
    if root is not None:
        libdirs = [root / "lib64", root / "lib"] + [Path(p) for p in glob.glob(str(root / "targets" / "*" / "lib"))]
        locations.append(Location(f"toolkit {root}", root / "include", libdirs))
    locations += wheel_locations()
    # -- driver
    smi = shutil.which("nvidia-smi")
    rows = parse_smi(run_text([smi, "--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"]) or "") \
        if smi else []
    gpu_name = None
    if not rows:
        c = Check("driver", "skip", "no GPU (nvidia-smi " + ("found no GPU" if smi else "not on PATH") + ")",
                  "driver checks skipped")
        if require_driver is not None:
            c.note += f"; --require-driver {require_driver} not checked"
        checks.append(c)
    else:
        gpu_name = rows[0]["name"]
        drv = rows[0]["driver"]
        need_cuda = require_cuda or target
        need = min_driver_for(need_cuda)
        major = driver_major(drv)
        if need is None:
            c = Check("driver", "info", drv, f"no known minimum for CUDA {need_cuda[0]}.x")
        elif major >= need:
            c = Check("driver", "ok", drv, f"runs CUDA {need_cuda[0]}.x (needs >= {need}, NVIDIA CUDA Compatibility)")
        else:
            c = Check("driver", "fail", drv, f"cannot run CUDA {need_cuda[0]}.x binaries: needs >= {need} "
                                             f"(NVIDIA CUDA Compatibility, {COMPAT_SOURCE})",
                      blocker=require_cuda is not None)
        if require_driver is not None and major < require_driver:
            c.status, c.blocker = "fail", True
            c.note = f"--require-driver {require_driver} not met; " + c.note
        checks.append(c)
        caps = ", ".join(f"{r['name']} (sm {r['compute_cap']})" for r in rows)
        checks.append(Check("GPU", "ok", caps))
    # -- libraries
    checks += library_checks(locations)
    wheels = pip_wheels()
    checks.append(Check("pip wheels", "ok" if wheels else "info", ", ".join(f"{n} {v}" for n, v in wheels) or "none",
                        "" if wheels else "no nvidia-* wheels in this Python"))
    # -- semantic mode
    checks.append(_libclang_check())
    checks.append(_compile_db_check())
    # -- Chromium
    chrome = next((shutil.which(n) for n in CHROMIUM if shutil.which(n)), None)
    if chrome:
        ver = (run_text([chrome, "--version"], timeout=15) or "").strip().splitlines()
        checks.append(Check("Chromium", "ok", (ver[0] if ver else "") + f" ({chrome})", "HTML report browser tests"))
    else:
        checks.append(Check("Chromium", "info", "not found", "needed only for the HTML report's browser tests"))
    # -- calibration
    checks.append(_calibration_check(gpu_name))
    checks.append(_dependencies_check())
    return checks


def pip_wheels() -> list[tuple[str, str]]:
    """(name, version) of the installed `nvidia-*` distributions (cuBLAS, NVRTC, NPP, ... wheels)."""
    import importlib.metadata as md

    out = set()
    for d in md.distributions():
        name = d.metadata["Name"] or ""
        if name.lower().startswith("nvidia-"):
            out.add((name, d.version))
    return sorted(out)


def _dependencies_check() -> Check:
    """The Python packages rule loading imports (tree-sitter, its CUDA grammar, YAML, Jinja): without one,
    no rule loads and scan, fix and test stop with that one line."""
    from ..knowledge.environment import RULE_LOADING_PACKAGES, missing_dependency

    problem = missing_dependency()
    if problem is not None:
        return Check("python packages", "fail", problem, "no rule loads until it is installed", blocker=True)
    return Check("python packages", "ok", ", ".join(RULE_LOADING_PACKAGES.values()))


def _libclang_check() -> Check:
    """Semantic mode: which libclang, which resource directory, which C++ library (see parse/clang.py)."""
    try:
        from ..parse import clang as cl
    except Exception as exc:  # pragma: no cover - a broken install
        return Check("libclang", "warn", f"cannot load: {exc}", "semantic mode unavailable")
    setup, why = cl.find_setup()
    if setup is None:
        return Check("libclang", "warn", "not usable", why + "; scans use tree-sitter only")
    ok, why = cl.available()
    if not ok:
        return Check("libclang", "warn", f"{setup.library or 'libclang'}: {why}", "scans use tree-sitter only")
    version = cl.clang_version() or f"clang {setup.major}"
    where = f"{cl.WHEEL} {cl.wheel_version()} wheel" if setup.origin == "wheel" else "$CUDAMIGRATE_LIBCLANG"
    host = cl.host_cxx_library()
    cxx = f"host C++ library {host}" if host else (f"the wheel's libc++ {setup.libcxx}" if setup.libcxx
                                                   else "no C++ library headers found")
    return Check("libclang", "ok", f"{version} ({where}: {setup.library or 'default library'}); "
                 f"resource dir {setup.resource_dir}; {cxx}", "semantic mode ready")


def _compile_db_check(start: Path | None = None) -> Check:
    """The compile_commands.json a scan of `start` (default: the working directory) would use."""
    from ..parse.compile_db import find_compile_db, load_compile_db, load_error

    found = find_compile_db([start or Path(".")])
    if found is None:
        return Check("compile database", "info", "none found",
                     "semantic mode needs one: compile_commands.json in the project root or a build*/ directory, "
                     "or --compile-commands")
    try:  # the reader scans and fixes use, so doctor says what they will say (parse/compile_db.CompileDbError)
        n = len(load_compile_db(found))
    except (OSError, ValueError) as exc:
        return Check("compile database", "warn", f"{found}: cannot be used ({load_error(exc)})",
                     "scans use tree-sitter only; fix verifies with the units and flags it infers")
    return Check("compile database", "ok", f"{found} ({n} translation unit(s))",
                 "scans of files it covers use semantic mode")


def _calibration_check(gpu: str | None) -> Check:
    from ..findings.measured import DEFAULT_FILE, read_doc, select_entry

    doc = read_doc(DEFAULT_FILE)
    gpus = [str(e.get("gpu")) for e in (doc or {}).get("gpus", []) or [] if isinstance(e, dict)]
    if gpu is None:
        return Check("calibration", "skip", f"entries for: {', '.join(gpus) or 'none'}", "no GPU here")
    entry = select_entry(doc, gpu)
    if entry is None:
        return Check("calibration", "info", f"no entry for {gpu}",
                     "declared estimates apply; `cudamigrate calibrate --out FILE` measures this GPU")
    n = len(entry.get("rules", {}) or {})
    return Check("calibration", "ok", f"{entry.get('gpu')} ({entry.get('date', 'undated')}, {n} rule(s))")


def blockers(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.blocker]


def render_table(checks: list[Check]) -> str:
    w = max(len(c.name) for c in checks)
    lines = [f"{'check':{w}s}  {'status':6s}  found", f"{'-' * w}  ------  -----"]
    for c in checks:
        lines.append(f"{c.name:{w}s}  {c.status:6s}  {c.found}" + (f"  ({c.note})" if c.note else ""))
    b = blockers(checks)
    lines.append("")
    lines.append(f"{len(b)} blocker(s): " + ", ".join(c.name for c in b) if b else "No blockers.")
    return "\n".join(lines) + "\n"


def to_json(checks: list[Check], target: tuple[int, int], target_source: str = "") -> dict[str, Any]:
    return {"target": f"{target[0]}.{target[1]}", "target_source": target_source, "ok": not blockers(checks),
            "blockers": [c.name for c in blockers(checks)],
            "checks": [asdict(c) for c in checks], "driver_source": COMPAT_SOURCE}
