#!/usr/bin/env python3
"""Build `cudamigrate/data/api_releases.json.gz`: what changed between every two consecutive CUDA releases with wheels.

    python scripts/build_release_inventory.py --fetch   # download the pinned wheels (headers only kept), then build
    python scripts/build_release_inventory.py           # (re)write the data file from the fetched headers
    python scripts/build_release_inventory.py --check   # exit 1 if the file differs from what the headers give

Why: scripts/build_api_inventory.py compares one pair (the last 12.x wheels against 13.0). A project moving
from 11.8 to 12.4, or from 13.0 to 13.5, needs the changes of every release on the way: removals before 12.x,
and what 13.1-13.5 deprecated or announce ("will be deprecated in a future CUDA release"). The headers of
each release's wheels are the source of truth; this script reads them with the same libclang reader
(build_api_inventory.read_library) and the same comparison (build_api_inventory.compare), once per pair.

What is read (recorded in the output's `releases`)
--------------------------------------------------
Every CUDA release with wheels on the package index: 11.7, 11.8, 12.0-12.6, 12.8, 12.9 (there is no 12.7),
13.0-13.5, the newest patch of each (RELEASES below):

* cudart (cuda_runtime_api.h, driver_types.h, surface_types.h, texture_types.h, vector_types.h,
  library_types.h, cuda_profiler_api.h) and the driver API (cuda.h, cudaProfiler.h): nvidia-cuda-runtime
  (-cu11, -cu12), plus nvidia-cuda-crt of the same release for 13.x (crt/host_defines.h; the 11.x/12.x
  runtime wheels lack crt/, which the 13.0 toolkit's include supplies with -idirafter: macros only);
* NVRTC (nvrtc.h): nvidia-cuda-nvrtc (-cu11, -cu12).

* the math libraries (cuBLAS, cuFFT, cuRAND, cuSOLVER, cuSPARSE, NPP, nvJPEG) for the pair where they changed
  most, 11.8 -> 12.0 (LIBRARY_PAIRS: the -cu11 wheels of CUDA 11.8 against the -cu12 wheels numbered for 12.0;
  2.1 GB, 46 s to download here); their 12.9 -> 13.0 changes are in api_inventory.json;
* for names only (data/cuda_names.json.gz, CM583): the Windows runtime wheel of each release (Direct3D interop).

Not read, and why: the library wheels of every other release are 300-700 MB each (17 releases: over
10 GB). CCCL is C++ templates whose deprecations are `_CCCL_DEPRECATED` macros on class
templates (its own catalog rows). Device-only headers and graphics interop as in build_api_inventory.py.

Entries (one per declaration and release pair, `release` the release whose headers made the change,
`previous` the release before it):

* `deprecated` / `unavailable`: newly marked so in `release` (already marked in `previous`: not repeated);
* `removed`, `signature`: as in build_api_inventory.py, between `previous` and `release`;
* `announced`: the declaration's doc comment newly says it "will be deprecated" (or removed) "in a future
  release"; `message` is the header's own sentence, `replacement` the name it says to migrate to.

The output is sorted, holds no absolute paths and is gzip-compressed with a zero timestamp, so it is
deterministic. Reading all 17 releases takes about 2 minutes on one core; the download is about 47 MB for
the runtime and crt wheels and about 1.1 GB for NVRTC's (the wheels are deleted once their include/ is kept).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_api_inventory as inv  # noqa: E402

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
# the library wheels read for the one pair where the math libraries changed most (the 11 -> 12 major step):
# library -> (11.8 wheel, 12.0 wheel); the 12.9 -> 13.0 pair is api_inventory.json's
LIBRARY_PAIRS: dict[tuple[str, str], dict[str, tuple[str, str]]] = {
    ("11.8", "12.0"): {
        "cublas": ("nvidia-cublas-cu11==11.11.3.6", "nvidia-cublas-cu12==12.0.1.189"),
        "cufft": ("nvidia-cufft-cu11==10.9.0.58", "nvidia-cufft-cu12==11.0.0.21"),
        "curand": ("nvidia-curand-cu11==10.3.0.86", "nvidia-curand-cu12==10.3.1.50"),
        "cusolver": ("nvidia-cusolver-cu11==11.4.1.48", "nvidia-cusolver-cu12==11.4.2.57"),
        "cusparse": ("nvidia-cusparse-cu11==11.7.5.86", "nvidia-cusparse-cu12==12.0.0.76"),
        "npp": ("nvidia-npp-cu11==11.8.0.86", "nvidia-npp-cu12==12.0.0.30"),
        "nvjpeg": ("nvidia-nvjpeg-cu11==11.9.0.86", "nvidia-nvjpeg-cu12==12.0.0.28"),
    },
}


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
            + [s for libs in LIBRARY_PAIRS.values() for pair in libs.values() for s in pair])


def fetch(cache: Path = CACHE) -> tuple[int, float]:
    """Download each pinned wheel with pip (one at a time: versions of one distribution conflict) and keep
    only its include/ tree; returns (bytes downloaded, seconds)."""
    total, t0 = 0, time.perf_counter()
    for spec in specs():
        if (wheel_dir(cache, spec) / ".done").is_file():
            continue
        with tempfile.TemporaryDirectory(prefix="rel-wheel-") as tmp:
            req, _, platform = spec.partition("@")
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                            *(["--platform", platform] if platform else []), "-d", tmp, req], check=True)
            for whl in Path(tmp).glob("*.whl"):
                total += whl.stat().st_size
                with zipfile.ZipFile(whl) as z:
                    for m in z.namelist():
                        if "/include/" in m and not m.endswith("/"):
                            z.extract(m, wheel_dir(cache, spec))
        (wheel_dir(cache, spec) / ".done").write_text(spec + "\n")
        print(f"fetched {spec}", file=sys.stderr)
    return total, time.perf_counter() - t0


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


def pair_entries(lib: str, prev: Release, rel: Release, old: dict, new: dict,
                 wheels: tuple[str, str] | None = None) -> list[inv.Entry]:
    """The changes `rel` made to `prev`: compare()'s entries less the deprecations `prev` already had, plus
    the doc-comment announcements `prev` did not make. `wheels`: (old, new) library wheels (LIBRARY_PAIRS)."""
    if wheels is not None:
        old_wheel, wheel = wheels
    else:
        wheel = {"runtime": rel.runtime, "nvrtc": rel.nvrtc}[READ[lib]]
        old_wheel = {"runtime": prev.runtime, "nvrtc": prev.nvrtc}[READ[lib]]
    out = [e for e in inv.compare(lib, new, old, wheel, old_wheel)
           if not (e.status in ("deprecated", "unavailable") and e.deprecated_in_12) and not still_a_field(e, new)]
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


def library_pair(prev: Release, rel: Release, cache: Path) -> list[inv.Entry]:
    """LIBRARY_PAIRS' libraries of this pair: each read with its own release's runtime headers; the other
    libraries of the same release (cusolver includes cublas_api.h and cusparse.h) come with -idirafter."""
    libs = LIBRARY_PAIRS.get((prev.version, rel.version), {})
    out: list[inv.Entry] = []
    for lib in inv.LIBRARIES:
        if lib.name not in libs:
            continue
        sides = []
        for side, r in ((0, prev), (1, rel)):
            own = include_of(cache, libs[lib.name][side])
            others = [str(include_of(cache, w[side])) for n, w in sorted(libs.items()) if n != lib.name]
            crt = [str(include_of(cache, r.crt))] if r.crt else [str(inv.TOOLKIT / "include")]
            sides.append(inv.read_library(lib, [str(own), str(runtime_include(r, cache))], others + crt,
                                          anonymous_members=True))
        out += pair_entries(lib.name, prev, rel, sides[0], sides[1], libs[lib.name])
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
        declared[rel.version] = {(lib, n, k) for lib, d in decls.items() for (n, k) in d}
        if prev is not None:
            got = [e for lib in libs for e in pair_entries(lib.name, prev, rel, prev_decls[lib.name], decls[lib.name])]
            got += library_pair(prev, rel, cache)
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
        "library_pairs": {f"{a}->{b}": {lib: list(w) for lib, w in sorted(libs.items())}
                          for (a, b), libs in LIBRARY_PAIRS.items()},
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
        if e["status"] != "announced":
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
    ap.add_argument("--check", action="store_true", help="exit 1 if the data file differs from what would be written")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--timing", action="store_true", help="print each release's parse time")
    args = ap.parse_args(argv)
    if args.fetch:
        size, secs = fetch()
        print(f"downloaded {size / 1e6:.0f} MB in {secs:.0f}s", file=sys.stderr)
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
