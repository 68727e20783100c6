#!/usr/bin/env python3
"""Build `cudamigrate/data/api_releases.json.gz`: what changed between every two consecutive CUDA releases with wheels.

    python scripts/build_release_inventory.py --fetch   # fetch the pinned wheels' headers (range requests), then build
    python scripts/build_release_inventory.py --fetch-only   # fetch the headers and stop
    python scripts/build_release_inventory.py           # (re)write the data file from the fetched headers
    python scripts/build_release_inventory.py --check   # exit 1 if the file differs from what the headers give

Why: scripts/build_api_inventory.py compares one pair (the last 12.x wheels against 13.0). A project moving
from 11.8 to 12.4, or from 13.0 to 13.5, needs the changes of every release on the way: removals before 12.x,
and what 13.1-13.5 deprecated or announce ("will be deprecated in a future CUDA release"). The headers of
each release's wheels are the source of truth; this script reads them with the same libclang reader
(build_api_inventory.read_library) and the same comparison (build_api_inventory.compare), once per pair.

What is read (recorded in the output's `releases` and `library_wheels`)
-----------------------------------------------------------------------
Every CUDA release with wheels on the package index: 11.7, 11.8, 12.0-12.6, 12.8, 12.9 (there is no 12.7),
13.0-13.5, the newest patch of each (RELEASES below):

* cudart (cuda_runtime_api.h, driver_types.h, surface_types.h, texture_types.h, vector_types.h,
  library_types.h, cuda_profiler_api.h) and the driver API (cuda.h, cudaProfiler.h): nvidia-cuda-runtime
  (-cu11, -cu12), plus nvidia-cuda-crt of the same release for 13.x (crt/host_defines.h; the 11.x/12.x
  runtime wheels lack crt/, which the 13.0 toolkit's include supplies with -idirafter: macros only);
* NVRTC (nvrtc.h): nvidia-cuda-nvrtc (-cu11, -cu12);
* every library of build_api_inventory.LIBRARIES that the release ships as a wheel (cuBLAS, cuFFT, cuRAND,
  cuSOLVER, cuSPARSE, NPP, nvJPEG; nvJitLink from 12.0, nvFatbin from 12.4), for every release from 11.8 on, at
  the versions NVIDIA's `cuda-toolkit` metapackage on the index pins for that release (LIBRARY_WHEELS: the
  metapackage's newest patch of each release, its Requires-Dist `==` pins; the names carry the metapackage's
  -cu11 / -cu12 / no suffix). Each library is read with its own release's runtime headers, the other
  libraries of the release after it (cuSOLVER includes cublas_api.h and cusparse.h), and for 13.x the 13.0
  toolkit's include last (CCCL's <nv/target>, which 13.x's cuda_fp16.h includes: macros only);
* for names only (data/cuda_names.json.gz, CM583): the Windows runtime wheel of each release (Direct3D interop).

Each library's header set is compared too (`removed_headers`: a header its wheel no longer ships is an entry of
kind `header`): between 11.8 and 13.5 no library dropped a header; cuFFT 13.1 added cufft_device.h (device-side,
not read, as below).

How the headers are fetched: lazy_wheel.py reads each pinned wheel's zip central directory with HTTP range
requests and then only its include/ members (one request per run of headers), never the whole wheel. On this
machine (2026-12-06): all 201 wheels, 20.96 GB as wheels, took 51.4 MB of downloads in 59 s; the 138 library
wheels among them (20.16 GB) 23.2 MB.

Not read, and why: the libraries of CUDA 11.7 (the index has no cuda-toolkit metapackage for 11.7, so no
authoritative pin of which cuBLAS ... nvJPEG wheel is 11.7's: the 11.7 -> 11.8 pair has the runtime, driver and
NVRTC only). CCCL is C++ templates whose deprecations are `_CCCL_DEPRECATED` macros on class templates (its own
catalog rows). Device-only headers and graphics interop as in build_api_inventory.py. Not recorded: a removed
`__name_12_4` versioned implementation function whose public inline wrapper `name` stays declared
(nvJitLink.h, cufftXt.h: `internal_versioned`).

Entries (one per declaration and release pair, `release` the release whose headers made the change,
`previous` the release before it):

* `deprecated` / `unavailable`: newly marked so in `release` (already marked in `previous`: not repeated);
* `removed`, `signature`: as in build_api_inventory.py, between `previous` and `release`; a `signature` entry
  whose changed parameters are all integers passed by value (NPP 12.4's `int nLength` -> `size_t nLength`) says
  why old calls still compile in `compatible`;
* `announced`: the declaration's doc comment newly says it "will be deprecated" (or removed) "in a future
  release"; `message` is the header's own sentence, `replacement` the name it says to migrate to.

The math libraries' entries that no rule reports become generated catalog rules (scripts/gen_catalog_rules.py,
knowledge/releases.catalog_rows), each with the release that made the change and the header:line before it.

The output is sorted, holds no absolute paths and is gzip-compressed with a zero timestamp, so it is
deterministic. Reading all 17 releases takes about 3.5 minutes on the shared 2 cores (NPP and cuBLAS the
longest).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import sys
import tempfile
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's cudamigrate, not an installed one
import build_api_inventory as inv  # noqa: E402
import lazy_wheel  # noqa: E402

from cudamigrate.core.brackets import split_top_level  # noqa: E402

ROOT = inv.ROOT
OUT = ROOT / "cudamigrate" / "data" / "api_releases.json.gz"
ANNOUNCED_RULE = ROOT / "rules" / "announced" / "CM1900-announced-deprecations.yaml"
NAMES_OUT = ROOT / "cudamigrate" / "data" / "cuda_names.json.gz"
CACHE = inv.HEADER_CACHE / "releases"


@dataclass(frozen=True)
class Release:
    """One CUDA release and the wheels (distribution==version) whose headers stand for it."""
    version: str
    runtime: str
    nvrtc: str
    crt: str = ""  # 13.x: crt/ ships in its own wheel
    profiler: str = ""  # 13.x: cuda_profiler_api.h and cudaProfiler.h too


RELEASES: tuple[Release, ...] = (
    Release("11.7", "nvidia-cuda-runtime-cu11==11.7.99", "nvidia-cuda-nvrtc-cu11==11.7.99"),
    Release("11.8", "nvidia-cuda-runtime-cu11==11.8.89", "nvidia-cuda-nvrtc-cu11==11.8.89"),
    Release("12.0", "nvidia-cuda-runtime-cu12==12.0.146", "nvidia-cuda-nvrtc-cu12==12.0.140"),
    Release("12.1", "nvidia-cuda-runtime-cu12==12.1.105", "nvidia-cuda-nvrtc-cu12==12.1.105"),
    Release("12.2", "nvidia-cuda-runtime-cu12==12.2.140", "nvidia-cuda-nvrtc-cu12==12.2.140"),
    Release("12.3", "nvidia-cuda-runtime-cu12==12.3.101", "nvidia-cuda-nvrtc-cu12==12.3.107"),
    Release("12.4", "nvidia-cuda-runtime-cu12==12.4.127", "nvidia-cuda-nvrtc-cu12==12.4.127"),
    Release("12.5", "nvidia-cuda-runtime-cu12==12.5.82", "nvidia-cuda-nvrtc-cu12==12.5.82"),
    Release("12.6", "nvidia-cuda-runtime-cu12==12.6.77", "nvidia-cuda-nvrtc-cu12==12.6.85"),
    Release("12.8", "nvidia-cuda-runtime-cu12==12.8.90", "nvidia-cuda-nvrtc-cu12==12.8.93"),
    Release("12.9", "nvidia-cuda-runtime-cu12==12.9.79", "nvidia-cuda-nvrtc-cu12==12.9.86"),
    Release("13.0", "nvidia-cuda-runtime==13.0.96", "nvidia-cuda-nvrtc==13.0.88", "nvidia-cuda-crt==13.0.88",
            "nvidia-cuda-profiler-api==13.0.85"),
    Release("13.1", "nvidia-cuda-runtime==13.1.80", "nvidia-cuda-nvrtc==13.1.115", "nvidia-cuda-crt==13.1.115",
            "nvidia-cuda-profiler-api==13.1.115"),
    Release("13.2", "nvidia-cuda-runtime==13.2.86", "nvidia-cuda-nvrtc==13.2.86", "nvidia-cuda-crt==13.2.86",
            "nvidia-cuda-profiler-api==13.2.86"),
    Release("13.3", "nvidia-cuda-runtime==13.3.29", "nvidia-cuda-nvrtc==13.3.33", "nvidia-cuda-crt==13.3.73",
            "nvidia-cuda-profiler-api==13.3.27"),
    Release("13.4", "nvidia-cuda-runtime==13.4.92", "nvidia-cuda-nvrtc==13.4.92", "nvidia-cuda-crt==13.4.92",
            "nvidia-cuda-profiler-api==13.4.92"),
    Release("13.5", "nvidia-cuda-runtime==13.5.37", "nvidia-cuda-nvrtc==13.5.37", "nvidia-cuda-crt==13.5.37",
            "nvidia-cuda-profiler-api==13.5.25"),
)

# the libraries of build_api_inventory.LIBRARIES read for every release, and which wheel holds each
READ = {"cudart": "runtime", "driver": "runtime", "nvrtc": "nvrtc"}
# The library wheels of each release: what NVIDIA's `cuda-toolkit` metapackage on the package index pins (its
# Requires-Dist, `==` pins; nvjitlink's `>=` lower bound from 12.8.2 on), from the newest patch of the metapackage
# for each release, as RELEASES takes the newest patch of the runtime (`--check-pins` re-reads the metapackage
# wheels and compares). The distribution's name is the metapackage's own (-cu11, -cu12, no suffix for 13.x).
# CUDA 11.7 has no cuda-toolkit metapackage on the index: its libraries are not read (the 11.7 -> 11.8 pair has
# the runtime, driver and NVRTC only). nvJitLink starts in 12.0, nvFatbin in 12.4: a library first shipped in a
# release has no pair before it.
LIBRARY_WHEELS: dict[str, tuple[str, dict[str, str]]] = {
    "11.8": ("cuda-toolkit==11.8.0", {
        "cublas": "nvidia-cublas-cu11==11.11.3.6",
        "cufft": "nvidia-cufft-cu11==10.9.0.58",
        "curand": "nvidia-curand-cu11==10.3.0.86",
        "cusolver": "nvidia-cusolver-cu11==11.4.1.48",
        "cusparse": "nvidia-cusparse-cu11==11.7.5.86",
        "npp": "nvidia-npp-cu11==11.8.0.86",
        "nvjpeg": "nvidia-nvjpeg-cu11==11.9.0.86"}),
    "12.0": ("cuda-toolkit==12.0.1", {
        "cublas": "nvidia-cublas-cu12==12.0.2.224",
        "cufft": "nvidia-cufft-cu12==11.0.1.95",
        "curand": "nvidia-curand-cu12==10.3.1.124",
        "cusolver": "nvidia-cusolver-cu12==11.4.3.1",
        "cusparse": "nvidia-cusparse-cu12==12.0.1.140",
        "npp": "nvidia-npp-cu12==12.0.1.104",
        "nvjpeg": "nvidia-nvjpeg-cu12==12.0.1.102",
        "nvjitlink": "nvidia-nvjitlink-cu12==12.0.140"}),
    "12.1": ("cuda-toolkit==12.1.1", {
        "cublas": "nvidia-cublas-cu12==12.1.3.1",
        "cufft": "nvidia-cufft-cu12==11.0.2.54",
        "curand": "nvidia-curand-cu12==10.3.2.106",
        "cusolver": "nvidia-cusolver-cu12==11.4.5.107",
        "cusparse": "nvidia-cusparse-cu12==12.1.0.106",
        "npp": "nvidia-npp-cu12==12.1.0.40",
        "nvjpeg": "nvidia-nvjpeg-cu12==12.2.0.2",
        "nvjitlink": "nvidia-nvjitlink-cu12==12.1.105"}),
    "12.2": ("cuda-toolkit==12.2.2", {
        "cublas": "nvidia-cublas-cu12==12.2.5.6",
        "cufft": "nvidia-cufft-cu12==11.0.8.103",
        "curand": "nvidia-curand-cu12==10.3.3.141",
        "cusolver": "nvidia-cusolver-cu12==11.5.2.141",
        "cusparse": "nvidia-cusparse-cu12==12.1.2.141",
        "npp": "nvidia-npp-cu12==12.2.1.4",
        "nvjpeg": "nvidia-nvjpeg-cu12==12.2.2.4",
        "nvjitlink": "nvidia-nvjitlink-cu12==12.2.140"}),
    "12.3": ("cuda-toolkit==12.3.2", {
        "cublas": "nvidia-cublas-cu12==12.3.4.1",
        "cufft": "nvidia-cufft-cu12==11.0.12.1",
        "curand": "nvidia-curand-cu12==10.3.4.107",
        "cusolver": "nvidia-cusolver-cu12==11.5.4.101",
        "cusparse": "nvidia-cusparse-cu12==12.2.0.103",
        "npp": "nvidia-npp-cu12==12.2.3.2",
        "nvjpeg": "nvidia-nvjpeg-cu12==12.3.0.81",
        "nvjitlink": "nvidia-nvjitlink-cu12==12.3.101"}),
    "12.4": ("cuda-toolkit==12.4.1", {
        "cublas": "nvidia-cublas-cu12==12.4.5.8",
        "cufft": "nvidia-cufft-cu12==11.2.1.3",
        "curand": "nvidia-curand-cu12==10.3.5.147",
        "cusolver": "nvidia-cusolver-cu12==11.6.1.9",
        "cusparse": "nvidia-cusparse-cu12==12.3.1.170",
        "npp": "nvidia-npp-cu12==12.2.5.30",
        "nvjpeg": "nvidia-nvjpeg-cu12==12.3.1.117",
        "nvjitlink": "nvidia-nvjitlink-cu12==12.4.127",
        "nvfatbin": "nvidia-nvfatbin-cu12==12.4.127"}),
    "12.5": ("cuda-toolkit==12.5.1", {
        "cublas": "nvidia-cublas-cu12==12.5.2.13",
        "cufft": "nvidia-cufft-cu12==11.2.3.18",
        "curand": "nvidia-curand-cu12==10.3.6.39",
        "cusolver": "nvidia-cusolver-cu12==11.6.2.40",
        "cusparse": "nvidia-cusparse-cu12==12.4.1.24",
        "npp": "nvidia-npp-cu12==12.3.0.116",
        "nvjpeg": "nvidia-nvjpeg-cu12==12.3.2.38",
        "nvjitlink": "nvidia-nvjitlink-cu12==12.5.40",
        "nvfatbin": "nvidia-nvfatbin-cu12==12.5.39"}),
    "12.6": ("cuda-toolkit==12.6.3", {
        "cublas": "nvidia-cublas-cu12==12.6.4.1",
        "cufft": "nvidia-cufft-cu12==11.3.0.4",
        "curand": "nvidia-curand-cu12==10.3.7.77",
        "cusolver": "nvidia-cusolver-cu12==11.7.1.2",
        "cusparse": "nvidia-cusparse-cu12==12.5.4.2",
        "npp": "nvidia-npp-cu12==12.3.1.54",
        "nvjpeg": "nvidia-nvjpeg-cu12==12.3.3.54",
        "nvjitlink": "nvidia-nvjitlink-cu12==12.6.85",
        "nvfatbin": "nvidia-nvfatbin-cu12==12.6.77"}),
    "12.8": ("cuda-toolkit==12.8.2", {
        "cublas": "nvidia-cublas-cu12==12.8.5.5",
        "cufft": "nvidia-cufft-cu12==11.3.3.83",
        "curand": "nvidia-curand-cu12==10.3.9.90",
        "cusolver": "nvidia-cusolver-cu12==11.7.3.90",
        "cusparse": "nvidia-cusparse-cu12==12.5.8.93",
        "npp": "nvidia-npp-cu12==12.3.3.100",
        "nvjpeg": "nvidia-nvjpeg-cu12==12.3.5.92",
        "nvjitlink": "nvidia-nvjitlink-cu12==12.8.93",
        "nvfatbin": "nvidia-nvfatbin-cu12==12.8.90"}),
    "12.9": ("cuda-toolkit==12.9.2", {
        "cublas": "nvidia-cublas-cu12==12.9.2.10",
        "cufft": "nvidia-cufft-cu12==11.4.1.4",
        "curand": "nvidia-curand-cu12==10.3.10.19",
        "cusolver": "nvidia-cusolver-cu12==11.7.5.82",
        "cusparse": "nvidia-cusparse-cu12==12.5.10.65",
        "npp": "nvidia-npp-cu12==12.4.1.87",
        "nvjpeg": "nvidia-nvjpeg-cu12==12.4.0.76",
        "nvjitlink": "nvidia-nvjitlink-cu12==12.9.86",
        "nvfatbin": "nvidia-nvfatbin-cu12==12.9.82"}),
    "13.0": ("cuda-toolkit==13.0.3", {
        "cublas": "nvidia-cublas==13.1.1.3",
        "cufft": "nvidia-cufft==12.0.0.61",
        "curand": "nvidia-curand==10.4.0.35",
        "cusolver": "nvidia-cusolver==12.0.4.66",
        "cusparse": "nvidia-cusparse==12.6.3.3",
        "npp": "nvidia-npp==13.0.1.2",
        "nvjpeg": "nvidia-nvjpeg==13.0.1.86",
        "nvjitlink": "nvidia-nvjitlink==13.0.88",
        "nvfatbin": "nvidia-nvfatbin==13.0.85"}),
    "13.1": ("cuda-toolkit==13.1.2", {
        "cublas": "nvidia-cublas==13.2.2.2",
        "cufft": "nvidia-cufft==12.1.0.78",
        "curand": "nvidia-curand==10.4.1.81",
        "cusolver": "nvidia-cusolver==12.0.9.81",
        "cusparse": "nvidia-cusparse==12.7.3.1",
        "npp": "nvidia-npp==13.0.3.3",
        "nvjpeg": "nvidia-nvjpeg==13.0.3.75",
        "nvjitlink": "nvidia-nvjitlink==13.1.115",
        "nvfatbin": "nvidia-nvfatbin==13.1.115"}),
    "13.2": ("cuda-toolkit==13.2.2", {
        "cublas": "nvidia-cublas==13.4.1.3",
        "cufft": "nvidia-cufft==12.2.0.57",
        "curand": "nvidia-curand==10.4.2.66",
        "cusolver": "nvidia-cusolver==12.2.0.11",
        "cusparse": "nvidia-cusparse==12.7.10.12",
        "npp": "nvidia-npp==13.1.0.59",
        "nvjpeg": "nvidia-nvjpeg==13.1.0.59",
        "nvjitlink": "nvidia-nvjitlink==13.2.86",
        "nvfatbin": "nvidia-nvfatbin==13.2.86"}),
    "13.3": ("cuda-toolkit==13.3.1", {
        "cublas": "nvidia-cublas==13.6.0.2",
        "cufft": "nvidia-cufft==12.3.0.29",
        "curand": "nvidia-curand==10.4.3.29",
        "cusolver": "nvidia-cusolver==12.2.6.9",
        "cusparse": "nvidia-cusparse==12.8.2.51",
        "npp": "nvidia-npp==13.1.2.81",
        "nvjpeg": "nvidia-nvjpeg==13.2.1.68",
        "nvjitlink": "nvidia-nvjitlink==13.3.33",
        "nvfatbin": "nvidia-nvfatbin==13.3.29"}),
    "13.4": ("cuda-toolkit==13.4.3", {
        "cublas": "nvidia-cublas==13.8.0.4",
        "cufft": "nvidia-cufft==12.4.0.43",
        "curand": "nvidia-curand==10.4.4.72",
        "cusolver": "nvidia-cusolver==12.3.5.3",
        "cusparse": "nvidia-cusparse==12.8.6.72",
        "npp": "nvidia-npp==13.2.0.58",
        "nvjpeg": "nvidia-nvjpeg==13.2.3.58",
        "nvjitlink": "nvidia-nvjitlink==13.4.92",
        "nvfatbin": "nvidia-nvfatbin==13.4.92"}),
    "13.5": ("cuda-toolkit==13.5.0", {
        "cublas": "nvidia-cublas==13.10.0.20",
        "cufft": "nvidia-cufft==12.5.0.14",
        "curand": "nvidia-curand==10.4.5.25",
        "cusolver": "nvidia-cusolver==12.4.1.2",
        "cusparse": "nvidia-cusparse==12.9.4.2",
        "npp": "nvidia-npp==13.2.0.93",
        "nvjpeg": "nvidia-nvjpeg==13.3.2.43",
        "nvjitlink": "nvidia-nvjitlink==13.5.37",
        "nvfatbin": "nvidia-nvfatbin==13.5.37"}),
}


_PIN = re.compile(r"\s*([\w.-]+)\s*\(?\s*(?:==\s*([\w.]+?)(?:\.\*)?|<\d+\s*,\s*>=\s*([\w.]+))\s*\)?\s*")


def parse_pins(metadata: str) -> dict[str, str]:
    """library -> "distribution==version" from a cuda-toolkit wheel's METADATA: the Requires-Dist lines for
    Linux (or without a marker) that pin an nvidia-<library>[-cuNN] wheel with `==` (`X.*` taken as X),
    or give it a `<major,>=X` range (nvJitLink from 12.8.2 on: X, the release's own version)."""
    libs = [lib.name for lib in inv.LIBRARIES if lib.name not in READ]
    out: dict[str, str] = {}
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        req, _, marker = line.removeprefix("Requires-Dist:").partition(";")
        if marker and "linux" not in marker:  # 12.x: "sys_platform == 'linux' or ..."; 13.x names the machine too
            continue
        m = _PIN.fullmatch(req)
        if m is None:
            continue
        name = m.group(1).lower().replace("_", "-")
        lib = next((lb for lb in libs if re.fullmatch(rf"nvidia-{lb}(-cu\d+)?", name)), None)
        if lib is not None:
            out.setdefault(lib, f"{name}=={m.group(2) or m.group(3)}")
    return out


def metapackage_pins(pin: str) -> dict[str, str]:
    """What `cuda-toolkit==X` pins (parse_pins of its wheel's METADATA, read with range requests)."""
    name, _, version = pin.partition("==")
    doc, url = lazy_wheel.index_document(name)
    wheel = lazy_wheel.pick_wheel(doc, url, version, "none-any")
    fetch, size = lazy_wheel.http_fetch(wheel.url)
    with zipfile.ZipFile(lazy_wheel.RangeFile(fetch, size)) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return parse_pins(z.read(meta).decode("utf-8"))


def check_pins() -> list[str]:
    """LIBRARY_WHEELS against what each release's cuda-toolkit metapackage pins now (one small wheel each)."""
    bad = []
    for release, (pin, wheels) in LIBRARY_WHEELS.items():
        got = metapackage_pins(pin)
        if got != wheels:
            bad.append(f"{release} ({pin}): table {wheels} != index {got}")
    return bad


def wheel_dir(cache: Path, spec: str) -> Path:
    return cache / spec.replace("==", "-").replace("@", "-")


def windows(spec: str) -> str:
    """The Windows wheel of a distribution: the runtime's carries the Direct3D interop headers
    (cuda_d3d9/10/11_interop.h, cudaD3D*.h), which the Linux wheels lack; read for names only."""
    return f"{spec}@win_amd64"


def include_of(cache: Path, spec: str) -> Path:
    """The wheel's include directory (nvidia/<name>/include or nvidia/cu13/include)."""
    found = sorted(wheel_dir(cache, spec).glob("nvidia/*/include"))
    if len(found) != 1:
        raise SystemExit(f"{spec}: expected one nvidia/*/include under {wheel_dir(cache, spec)}, found {len(found)}"
                         " (python scripts/build_release_inventory.py --fetch)")
    return found[0]


def specs() -> list[str]:
    return ([s for r in RELEASES for s in (r.runtime, r.nvrtc, r.crt, r.profiler, windows(r.runtime)) if s]
            + [s for _, libs in LIBRARY_WHEELS.values() for s in libs.values()])


def fetch_one(spec: str, dest: Path, documents: dict[str, tuple[dict, str]]) -> tuple[int, int]:
    """Extract the include/ members of one pinned wheel into dest with range requests (lazy_wheel: the zip's
    central directory, then one request per run of headers), never the whole wheel; returns (bytes fetched,
    the wheel's size). `documents` caches the index's JSON document of each distribution for the run."""
    req, _, platform = spec.partition("@")
    name, _, version = req.partition("==")
    if name not in documents:
        documents[name] = lazy_wheel.index_document(name)
    doc, url = documents[name]
    wheel = lazy_wheel.pick_wheel(doc, url, version, platform)
    fetch, size = lazy_wheel.http_fetch(wheel.url)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".part-", dir=dest.parent))
    f = lazy_wheel.RangeFile(fetch, size)
    try:
        lazy_wheel.extract(f, lambda m: "/include/" in m, tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    return f.fetched + 1, size  # + the one-byte request that gave the size


def fetch(cache: Path = CACHE) -> tuple[int, int, float]:
    """Fetch the headers of each pinned wheel not in the cache yet; returns (bytes downloaded, the wheels'
    full size, seconds)."""
    total = full = 0
    t0 = time.perf_counter()
    documents: dict[str, tuple[dict, str]] = {}
    for spec in specs():
        if (wheel_dir(cache, spec) / ".done").is_file():
            continue
        got, size = fetch_one(spec, wheel_dir(cache, spec), documents)
        total, full = total + got, full + size
        (wheel_dir(cache, spec) / ".done").write_text(spec + "\n")
        print(f"fetched {spec}: {got / 1e6:.2f} MB of {size / 1e6:.0f} MB", file=sys.stderr)
    return total, full, time.perf_counter() - t0


def missing(cache: Path = CACHE) -> list[str]:
    """The pinned wheels whose headers are not in the cache (tests skip the regeneration check on them)."""
    return [s for s in specs() if not (wheel_dir(cache, s) / ".done").is_file()]


def runtime_include(rel: Release, cache: Path) -> Path:
    """The runtime's include directory; for 13.x one directory of links to the runtime's and the profiler
    API's headers (the reader owns only the headers of its first -I directory, and cuda_profiler_api.h and
    cudaProfiler.h moved to nvidia-cuda-profiler-api in 13.0)."""
    rt = include_of(cache, rel.runtime)
    if not rel.profiler:
        return rt
    merged = cache / "merged" / rel.version
    if not merged.is_dir():
        merged.mkdir(parents=True)
        for src in (rt, include_of(cache, rel.profiler)):
            for f in sorted(src.iterdir()):
                if not (merged / f.name).exists():
                    (merged / f.name).symlink_to(f)
    return merged


def read_release(rel: Release, cache: Path, lib: inv.Library) -> dict:
    rt = runtime_include(rel, cache)
    after = [str(include_of(cache, rel.crt))] if rel.crt else [str(inv.TOOLKIT / "include")]
    if READ[lib.name] == "runtime":
        dirs = [str(rt)]
    else:
        dirs = [str(include_of(cache, rel.nvrtc)), str(rt)]
    return inv.read_library(lib, dirs, after, anonymous_members=True)


def still_a_field(e: inv.Entry, new: dict) -> bool:
    """A removed `T::f` where the new T is a macro alias of a type that declares f: code writing `T x; x.f`
    compiles unchanged (11.8: `#define cudaKernelNodeAttrValue cudaLaunchAttributeValue`)."""
    if e.status != "removed" or e.kind != "field":
        return False
    owner, _, field = e.name.rpartition("::")
    alias = new.get((owner, "macro"))
    return bool(alias and alias.alias_of and (f"{alias.alias_of}::{field}", "field") in new)


def mark_restored(entries: list[inv.Entry], declared: dict[str, set[tuple[str, str, str]]]) -> None:
    """`restored` on a removal that a later release declares again (11.8 moved cudaTextureDesc::seamlessCubemap
    to cudaTextureDesc_v2; 12.0 put it back): code targeting that release or later compiles."""
    order = [r.version for r in RELEASES]
    for e in entries:
        if e.status != "removed":
            continue
        for v in order[order.index(e.release) + 1:]:
            if (e.library, e.name, e.kind) in declared[v]:
                e.restored = v
                break


_VERSIONED = re.compile(r"__(\w+?)_\d+(?:_\d+)*")


def internal_versioned(e: inv.Entry, new: dict) -> bool:
    """A removed `__nvJitLinkCreate_12_0`: the versioned implementation name that the header's public
    `static inline nvJitLinkCreate(...)` calls (nvJitLink.h; cufftXt.h's cufftXtSetJITCallback likewise); the
    next release's wrapper of the same name calls `__nvJitLinkCreate_12_1`. Code calls the wrapper, which is still
    declared; the `__` name is reserved to the implementation (C11 7.1.3, C++ [lex.name]), so its removal is
    nothing a program migrates (the wrapper's own prototype changes are entries of their own)."""
    m = _VERSIONED.fullmatch(e.name) if e.status == "removed" and e.kind == "function" else None
    return bool(m and (m.group(1), "function") in new)


_INTEGERS = {"int", "unsigned int", "short", "unsigned short", "long", "unsigned long", "long long",
             "unsigned long long", "size_t", "int64_t", "uint64_t", "int32_t", "uint32_t",
             "Npp32s", "Npp32u", "Npp64s", "Npp64u"}


def _params(signature: str) -> list[str]:
    """The parameter types of `R (A, B, ...)`, split at the top-level commas."""
    return split_top_level(signature[signature.index("(") + 1:signature.rindex(")")])


def widened_by_value(e: inv.Entry) -> str:
    """Why a prototype change keeps every old call compiling, or "": the same number of parameters, and each
    one that changed is an integer passed by value in both (NPP 12.4's signal functions: `int nLength` ->
    `size_t nLength`), to which the old argument converts implicitly. (A function pointer typed with the old
    prototype would not convert; the entry is recorded either way.)"""
    if e.status != "signature" or "(" not in e.old_signature or "(" not in e.new_signature:
        return ""
    old, new = _params(e.old_signature), _params(e.new_signature)
    if len(old) != len(new) or e.old_signature.split("(")[0] != e.new_signature.split("(")[0]:
        return ""
    changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
    strip = lambda t: t.removeprefix("const ").strip()  # noqa: E731 - a by-value parameter's own const
    if changed and all(strip(a) in _INTEGERS and strip(b) in _INTEGERS for a, b in changed):
        return "by-value integer parameters changed type (" + ", ".join(
            sorted({f"{a} -> {b}" for a, b in changed})) + "): old arguments convert implicitly"
    return ""


def pair_entries(lib: str, prev: Release, rel: Release, old: dict, new: dict,
                 wheels: tuple[str, str] | None = None) -> list[inv.Entry]:
    """The changes `rel` made to `prev`: compare()'s entries less the deprecations `prev` already had, plus
    the doc-comment announcements `prev` did not make. `wheels`: (old, new) library wheels (LIBRARY_WHEELS)."""
    if wheels is not None:
        old_wheel, wheel = wheels
    else:
        wheel = {"runtime": rel.runtime, "nvrtc": rel.nvrtc}[READ[lib]]
        old_wheel = {"runtime": prev.runtime, "nvrtc": prev.nvrtc}[READ[lib]]
    out = [e for e in inv.compare(lib, new, old, wheel, old_wheel)
           if not (e.status in ("deprecated", "unavailable") and e.deprecated_in_12) and not still_a_field(e, new)
           and not internal_versioned(e, new)]
    for e in out:
        e.compatible = widened_by_value(e)
    aliases = inv._aliases(new)
    for (name, kind), d in new.items():
        o = old.get((name, kind))
        if d.announced and not (o and o.announced) and not (d.deprecated or d.unavailable):
            m = inv._MIGRATE.search(d.announced)
            out.append(inv.Entry(lib, name, kind, "announced", d.header, d.announced, m.group(1) if m else "",
                                 old_header=o.header if o else "", source=wheel, aliases=aliases.get(name, ())))
    for e in out:
        e.release, e.previous = rel.version, prev.version
        e.deprecated_in_12 = False  # compare()'s name for "the previous release already marked it"
    return out


def header_files(include: Path) -> set[str]:
    """The headers a wheel's include/ ships (relative paths; the packaging's __init__.py left out)."""
    return {p.relative_to(include).as_posix() for p in include.rglob("*")
            if p.is_file() and p.name != "__init__.py"}


def removed_headers(lib: str, prev: Release, rel: Release, old_wheel: str, wheel: str, cache: Path) -> list[inv.Entry]:
    """A whole header the library's wheel of `prev` shipped and that of `rel` does not (`#include` of it fails:
    a build break before any declaration is read). None between 11.8 and 13.5 (2026-12-06): the libraries only
    added headers (cuFFT 13.1's device-side cufft_device.h)."""
    gone = sorted(header_files(include_of(cache, old_wheel)) - header_files(include_of(cache, wheel)))
    return [inv.Entry(lib, h, "header", "removed", old_header=h, source=old_wheel, release=rel.version,
                      previous=prev.version) for h in gone]


def read_libraries(rel: Release, cache: Path) -> dict[str, dict]:
    """The declarations of each library wheel of the release (LIBRARY_WHEELS), each read with the release's own
    runtime headers; the other libraries of the same release (cusolver includes cublas_api.h and cusparse.h)
    come with -idirafter."""
    libs = LIBRARY_WHEELS.get(rel.version, ("", {}))[1]
    # 13.x: crt/ from the release's crt wheel, then the 13.0 toolkit's include for CCCL's <nv/target> (macros
    # only), which 13.x's cuda_fp16.h includes and no wheel read here ships
    crt = [str(include_of(cache, rel.crt))] if rel.crt else []
    crt.append(str(inv.TOOLKIT / "include"))
    out = {}
    for lib in inv.LIBRARIES:
        if lib.name not in libs:
            continue
        own = include_of(cache, libs[lib.name])
        others = [str(include_of(cache, w)) for n, w in sorted(libs.items()) if n != lib.name]
        out[lib.name] = inv.read_library(lib, [str(own), str(runtime_include(rel, cache))], others + crt,
                                         anonymous_members=True)
    return out


def build(cache: Path = CACHE, timing: bool = False) -> dict:
    gone = missing(cache)
    if gone:
        raise SystemExit(f"{len(gone)} wheels not fetched into {cache} (python scripts/build_release_inventory.py --fetch)")
    libs = [lib for lib in inv.LIBRARIES if lib.name in READ]
    entries: list[inv.Entry] = []
    counts: dict[str, dict[str, int]] = {}
    prev_decls: dict[str, dict] = {}
    prev: Release | None = None
    declared: dict[str, set[tuple[str, str, str]]] = {}
    for rel in RELEASES:
        t0 = time.perf_counter()
        decls = {lib.name: read_release(rel, cache, lib) for lib in libs}
        decls.update(read_libraries(rel, cache))
        declared[rel.version] = {(lib, n, k) for lib, d in decls.items() for (n, k) in d}
        if prev is not None:
            got = [e for lib in libs for e in pair_entries(lib.name, prev, rel, prev_decls[lib.name], decls[lib.name])]
            wheels_prev = LIBRARY_WHEELS.get(prev.version, ("", {}))[1]
            wheels = LIBRARY_WHEELS.get(rel.version, ("", {}))[1]
            for name in sorted(set(wheels_prev) & set(wheels)):
                got += pair_entries(name, prev, rel, prev_decls[name], decls[name], (wheels_prev[name], wheels[name]))
                got += removed_headers(name, prev, rel, wheels_prev[name], wheels[name], cache)
            entries += got
            counts[f"{prev.version}->{rel.version}"] = {
                s: sum(1 for e in got if e.status == s)
                for s in ("deprecated", "unavailable", "removed", "signature", "announced")}
        if timing:
            print(f"{rel.version}: {time.perf_counter() - t0:.1f}s, {sum(len(d) for d in decls.values())} declarations",
                  file=sys.stderr)
        prev, prev_decls = rel, decls
    mark_restored(entries, declared)
    entries.sort(key=lambda e: (tuple(int(x) for x in e.release.split(".")), e.library, e.name, e.kind, e.status))
    return {
        "generated_by": "scripts/build_release_inventory.py",
        "releases": [asdict(r) for r in RELEASES],
        "libraries": sorted(READ),
        "library_wheels": {v: {"pinned_by": pin, **dict(sorted(w.items()))} for v, (pin, w) in LIBRARY_WHEELS.items()},
        "parser": f"{inv._libclang_dist()} (-x c++ -std=c++17)",
        "counts": counts,
        "entries": [{k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(e).items()
                     if v not in ("", None, {}, False, ())} for e in entries],
    }


_COMMENT = re.compile(rb"/\*.*?\*/|//[^\n]*", re.S)
_CUDA_NAME = re.compile(rb"\b(?:cuda|cu)[A-Z]\w*")


def release_names(cache: Path = CACHE) -> dict:
    """Every `cuda[A-Z]...` / `cu[A-Z]...` identifier outside comments in each release's runtime (Linux and
    Windows wheels: the latter adds Direct3D interop), crt, profiler-API and NVRTC headers (all of them: interop,
    cuComplex.h, the device runtime, cooperative_groups/), as name -> bitmask of the releases (bit i:
    RELEASES[i]) that have it; the names of the venv's 13.0 library wheels (cuBLAS, cuFFT's cudalibxt.h, ...,
    read once) count for every release. A token, not a parsed declaration: an over-approximation, so that the
    unknown-name check (CM583) reports only names no header spells at all."""
    names: dict[str, int] = {}
    every = (1 << len(RELEASES)) - 1
    for d in [inv.site_include_13()]:  # the venv's 13.0 library wheels (cudalibxt.h's cudaLibXtDesc, ...)
        for f in sorted(Path(d).rglob("*")):
            if f.is_file() and f.suffix in (".h", ".hpp", ".inl", ""):
                for m in _CUDA_NAME.findall(_COMMENT.sub(b" ", f.read_bytes())):
                    names[m.decode()] = every
    for i, rel in enumerate(RELEASES):
        dirs = [runtime_include(rel, cache), include_of(cache, rel.nvrtc), include_of(cache, windows(rel.runtime))]
        dirs += [include_of(cache, rel.crt)] if rel.crt else []
        seen: set[str] = set()
        for d in dirs:
            for f in sorted(Path(d).rglob("*")):
                if f.is_file() and f.suffix in (".h", ".hpp", ".inl", ""):
                    seen.update(m.decode() for m in _CUDA_NAME.findall(_COMMENT.sub(b" ", f.read_bytes())))
        for n in seen:
            names[n] = names.get(n, 0) | (1 << i)
    return {"generated_by": "scripts/build_release_inventory.py", "releases": [r.version for r in RELEASES],
            "names": dict(sorted(names.items()))}


def render(doc: dict) -> bytes:
    """Deterministic gzip (mtime 0, no file name) of the indented JSON."""
    text = json.dumps(doc, indent=0, ensure_ascii=False) + "\n"
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def announced_rule(doc: dict) -> str:
    """rules/announced/CM1900: every `announced` entry of the newest announcing release, with the header's own
    words and the replacement it names (opt-in: `--select announced` or `--select CM1900`)."""
    import yaml

    apis: dict[str, dict] = {}
    releases = set()
    for e in doc["entries"]:
        # the runtime and driver API's announcements; a library's (NPP 12.2: nppiMSSSIM_*, "will be deprecated
        # in a future release use the nppiWMSSSIM functions instead") is reported by the rule of its removal
        if e["status"] != "announced" or e["library"] not in doc["libraries"]:
            continue
        releases.add(e["release"])
        wheel = e["source"]
        info = {"release": e["release"], "words": e["message"], "replacement": e.get("replacement", ""),
                "where": f"{e['header']} of {wheel}"}
        apis[e["name"]] = info
        for a in e.get("aliases", []):
            apis.setdefault(a, dict(info, declared_as=e["name"]))
    if len(releases) > 1:
        raise SystemExit(f"announcements in several releases ({sorted(releases)}): give each release its own rule")
    (release,) = releases
    names = sorted(apis)
    rule = {
        "id": "CM1900",
        "name": "announced-deprecations",
        "family": "announced",
        "status": "opt-in",
        "summary": f"A function whose CUDA {release} header announces that it will be deprecated in a future release.",
        "severity": "info",
        "announced_in": release,
        "message": ("`{{ written }}`{% if data.apis[name].get('declared_as') %} (declared as "
                    "`{{ data.apis[name].declared_as }}`){% endif %}: CUDA {{ data.apis[name].release }} announces "
                    "\"{{ data.apis[name].words }}\" ({{ data.apis[name].where }}); not deprecated yet, it still "
                    "compiles{% if data.apis[name].replacement %}; the replacement is `{{ data.apis[name].replacement }}`"
                    "{% endif %}."),
        "match": {"identifier": {"names": names, "roles": ["call"]}},
        "fix": {"applicability": "manual"},
        "cost": {"impact": "hygiene", "effort_minutes": 15},
        "data": {"apis": {n: apis[n] for n in names}},
        "docs": {
            "what": (f"Calls of the {sum(1 for i in apis.values() if 'declared_as' not in i)} functions (and the "
                     f"{sum(1 for i in apis.values() if 'declared_as' in i)} alias macros of the driver API naming "
                     f"them) whose CUDA {release} header comment says they will be deprecated in a future CUDA release."),
            "why": ("The header announces the deprecation in a doc comment (\\warning), not an attribute: the "
                    "compiler says nothing yet. A team moving to this release can plan the migration to the generic "
                    "graph node API before the deprecation warnings arrive. Opt-in (`--select announced`): it is "
                    "advance notice, not a problem in today's build. It applies only when --target-cuda is "
                    f"{release} or later. Generated by scripts/build_release_inventory.py from the headers."),
            "fix_safety": ("Manual: the per-node-type call becomes a cudaGraphNodeParams / CUgraphNodeParams "
                           "filled for its node type, a different argument shape."),
            "example": ("cudaGraphAddKernelNode(&node, graph, NULL, 0, &kp);   // before\n"
                        "cudaGraphNodeParams p = {}; p.type = cudaGraphNodeTypeKernel; p.kernel = ...;\n"
                        "cudaGraphAddNode(&node, graph, NULL, NULL, 0, &p);     // after"),
        },
        "references": sorted({f"nvidia-cuda-runtime {release} wheel: include/{apis[n]['where'].split(':')[0]}" for n in names})
        + ["CUDA Runtime API, graph management: https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html",
           "CUDA Driver API, graph management: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html",
           "cudamigrate/data/api_releases.json.gz (scripts/build_release_inventory.py), status `announced`"],
        "tags": ["announced", "generated-from-headers"],
    }
    head = ("# GENERATED by scripts/build_release_inventory.py from cudamigrate/data/api_releases.json.gz -- do not edit;\n"
            "# change the generator and re-run it.\n")
    return head + yaml.safe_dump(rule, sort_keys=False, width=120, allow_unicode=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fetch", action="store_true", help="download the pinned wheels' headers first")
    ap.add_argument("--fetch-only", action="store_true", help="download the pinned wheels' headers and stop")
    ap.add_argument("--check", action="store_true", help="exit 1 if the data file differs from what would be written")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--timing", action="store_true", help="print each release's parse time")
    ap.add_argument("--check-pins", action="store_true",
                    help="compare LIBRARY_WHEELS with the cuda-toolkit metapackages on the index, and stop")
    args = ap.parse_args(argv)
    if args.check_pins:
        bad = check_pins()
        print("\n".join(bad) or f"LIBRARY_WHEELS: the {len(LIBRARY_WHEELS)} releases match their cuda-toolkit pins")
        return 1 if bad else 0
    if args.fetch or args.fetch_only:
        got, full, secs = fetch()
        print(f"downloaded {got / 1e6:.1f} MB (the headers of wheels of {full / 1e6:.0f} MB) in {secs:.0f}s",
              file=sys.stderr)
        if args.fetch_only:
            return 0
    t0 = time.perf_counter()
    doc = build(timing=args.timing)
    data = render(doc)
    rule = announced_rule(doc)
    names = gzip.compress(json.dumps(release_names(), separators=(",", ":")).encode("utf-8"), 9, mtime=0)
    if args.check:
        same = (args.out.is_file() and args.out.read_bytes() == data and ANNOUNCED_RULE.is_file()
                and ANNOUNCED_RULE.read_text(encoding="utf-8") == rule and NAMES_OUT.read_bytes() == names)
        print(f"{args.out}: {'up to date' if same else 'differs from the headers (re-run scripts/build_release_inventory.py)'}")
        return 0 if same else 1
    args.out.write_bytes(data)
    ANNOUNCED_RULE.parent.mkdir(exist_ok=True)
    ANNOUNCED_RULE.write_text(rule, encoding="utf-8")
    NAMES_OUT.write_bytes(names)
    print(f"wrote {args.out} ({len(doc['entries'])} entries, {len(data)} bytes) in {time.perf_counter() - t0:.1f}s")
    for pair, c in doc["counts"].items():
        print(f"  {pair}: " + ", ".join(f"{k} {v}" for k, v in c.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
