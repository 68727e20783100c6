"""What compile verification of `fix` finds and costs on real legacy CUDA code bases (never committed).

    python bench/verify_fix.py CORPUS [CORPUS ...] [--only SUBDIR ...] [--jobs 16] [--work DIR]
                               [--recheck] [--json FILE] [--keep-cache]

For each CORPUS (a directory, e.g. /work/oracle/v11.8 or any fetched legacy CUDA project) it
1. copies the corpus (or only the `--only` subdirectories, with `Common/` when there is one, so the
   samples' `<helper_cuda.h>` still resolves) twice into a work directory (the corpus is only read);
2. times `cudamigrate fix --unsafe-fixes --no-verify` on the first copy (the cost of fixing alone);
3. times `cudamigrate fix --unsafe-fixes --verify-report R.json` on the second copy (default verification)
   and reads the report: units reached, verified, building after, unverified, still worse (must be 0),
   rollbacks with the rule to blame and the compiler's first error, compiles (and per unit reached);
4. with `--recheck`, checks the claim independently of the overlay: every unit (file no other file includes)
   either written fix reaches is compiled again in the original, the --no-verify copy and the verified copy
   (real files, same synthesized nvcc command): units building in each, units that build after --no-verify
   but not after verification ("lost": correct edits rolled back; must be 0), units worse than before.
A fresh compile cache is used per run unless `--keep-cache` (a cached second run measures the cache).

Prints one line of figures per corpus and, with --json, all of it. Needs nvcc on PATH. The whole of
cuda-samples v11.8 is ~300 units: about 30 minutes on 2 cores, a few minutes with --jobs 16.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def copy_corpus(src: Path, dst: Path, only: list[str]) -> list[Path]:
    """The corpus (or its `only` subdirectories, plus Common/) under dst; the paths to fix."""
    if not only:
        shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        return [dst]
    targets = []
    for sub in only:
        shutil.copytree(src / sub, dst / sub, symlinks=True)
        targets.append(dst / sub)
    if (src / "Common").is_dir():
        shutil.copytree(src / "Common", dst / "Common", symlinks=True)
    return targets


def cudamigrate(args: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "cudamigrate", *args], capture_output=True, text=True, env=env)
    return time.perf_counter() - t0, p


def recheck(original: Path, noverify: Path, verified: Path, jobs: int) -> dict:
    """Compile every unit either written fix reaches (the build's units, cudamigrate/fixproof/units.py: files no
    other file includes) in the original, the `--no-verify` copy and the verified copy: real files, the same
    synthesized nvcc command. Counts the units that build in each, the units that build after `--no-verify` but
    not after verification (correct edits lost) and the units worse than before in the verified copy."""
    from concurrent.futures import ThreadPoolExecutor

    from cudamigrate.read.project_index import ProjectIndex
    from cudamigrate.fixproof.compile_check import UnitCommand, compile_unit, is_source, nvcc_path, synthesize, worse
    from cudamigrate.fixproof.units import select_units

    nvcc = nvcc_path()
    assert nvcc is not None
    exts = {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hxx", ".inl"}
    # the copy's files (all of the corpus, or the --only subdirectories and Common/), at their original paths: include
    # directories found among files the copies lack would make the fixed copies fail on a missing header
    files = [original / p.relative_to(verified) for p in verified.rglob("*") if p.is_file() and p.suffix.lower() in exts
             and (original / p.relative_to(verified)).is_file()]
    changed = [os.path.realpath(p) for p in files
               if any((t / p.relative_to(original)).is_file() and (t / p.relative_to(original)).read_bytes() != p.read_bytes()
                      for t in (noverify, verified))]
    index = ProjectIndex(files=files)
    units = [Path(u.path) for u in select_units(changed, index, {})]
    root = os.path.realpath(original)

    def moved(cmd: UnitCommand, tree: Path) -> UnitCommand:
        t = os.path.realpath(tree)
        return UnitCommand(cmd.file.replace(root, t), cmd.directory.replace(root, t),
                           tuple(a.replace(root, t) for a in cmd.argv), True)

    def one(u: Path) -> dict:
        cmd = synthesize(u, u.read_bytes(), files, nvcc)
        b, n, v = (compile_unit(moved(cmd, t)) for t in (original, noverify, verified))
        for res, t in ((n, noverify), (v, verified)):
            res.errors = [type(d)(d.file.replace(os.path.realpath(t), root), d.line, d.message, d.stage)
                          for d in res.errors]
        return {"unit": str(u.relative_to(original)), "before": b.ok, "noverify": n.ok, "verified": v.ok,
                "worse": worse(b, v), "broke": b.ok and not v.ok, "first_error": "" if v.ok else v.first_error}

    with ThreadPoolExecutor(jobs) as pool:
        got = list(pool.map(one, units))
    return {"units": len(got), "build_before": sum(g["before"] for g in got),
            "build_noverify": sum(g["noverify"] for g in got), "build_verified": sum(g["verified"] for g in got),
            "lost": [g for g in got if g["noverify"] and not g["verified"]],
            "worse": [g for g in got if g["worse"]], "per_unit": got}


def bench(corpus: Path, only: list[str], jobs: int, work: Path, do_recheck: bool, keep_cache: bool) -> dict:
    name = corpus.name
    plain_dst, dst = work / f"{name}-noverify", work / name
    plain_targets, targets = copy_corpus(corpus, plain_dst, only), copy_corpus(corpus, dst, only)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("CUDAMIGRATE_VERIFY", None)
    if not keep_cache:
        env["CUDAMIGRATE_CACHE_DIR"] = tempfile.mkdtemp(prefix="cmcache-bench-verify-")
    base = ["--unsafe-fixes", "--exit-zero", "-j", str(jobs)]
    t_plain, p0 = cudamigrate(["fix", *base, "--no-verify", *map(str, plain_targets)], env)
    report = work / f"{name}-verify.json"
    t_verify, p1 = cudamigrate(["fix", *base, "--verify-report", str(report), *map(str, targets)], env)
    if p1.returncode not in (0, 1):
        raise SystemExit(f"{name}: fix exited {p1.returncode}: {p1.stderr[-2000:]}")
    rep = json.loads(report.read_text())
    out = {"corpus": str(corpus), "only": only, "jobs": jobs, "fix_seconds": round(t_plain, 1),
           "fix_verified_seconds": round(t_verify, 1), "verify": rep,
           "compiles_per_unit": round(rep["compiles"] / rep["units"], 2) if rep and rep.get("units") else None,
           "summary": [ln for ln in p1.stderr.splitlines() if ln.startswith(("Fixed ", "Verified "))]}
    if do_recheck:
        out["recheck"] = recheck(corpus if not only else corpus, plain_dst, dst, jobs)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpora", nargs="+", type=Path)
    ap.add_argument("--only", nargs="*", default=[], help="subdirectories of each corpus (e.g. Samples/0_Introduction/simpleZeroCopy)")
    ap.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--recheck", action="store_true")
    ap.add_argument("--keep-cache", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    work = a.work or Path(tempfile.mkdtemp(prefix="bench-verify-fix-"))
    work.mkdir(parents=True, exist_ok=True)
    results = []
    for c in a.corpora:
        r = bench(c.resolve(), a.only, a.jobs, work, a.recheck, a.keep_cache)
        v = r["verify"] or {}
        line = (f"{c}: {v.get('units', 0)} unit(s) reached, {v.get('verified', 0)} verified, "
                f"{v.get('builds_after', 0)} build after, {len(v.get('unverified', []))} unverified, "
                f"{v.get('rolled_back', 0)} edit(s) rolled back, {v.get('worse', 0)} worse; "
                f"fix --no-verify {r['fix_seconds']} s, fix {r['fix_verified_seconds']} s "
                f"(-j {a.jobs}, {v.get('compiles', 0)} compiles, {r['compiles_per_unit']} per unit reached)")
        if "recheck" in r:
            k = r["recheck"]
            line += (f"; recheck: {k['units']} unit(s), build before {k['build_before']}, after --no-verify "
                     f"{k['build_noverify']}, after fix {k['build_verified']}, lost {len(k['lost'])}, "
                     f"worse {len(k['worse'])}")
        print(line, flush=True)
        for g in r.get("recheck", {}).get("lost", []) + r.get("recheck", {}).get("worse", []):
            print(f"  {'lost' if g['noverify'] and not g['verified'] else 'worse'}: {g['unit']}: {g['first_error']}")
        for rb in v.get("rollbacks", []):
            print(f"  rolled back {rb['rule_id']} at {rb['path']}:{rb['line']} ({rb['unit']}): {rb['first_error']}")
        results.append(r)
    if a.json:
        a.json.write_text(json.dumps(results, indent=2) + "\n")
    print(f"work: {work}", file=sys.stderr)


if __name__ == "__main__":
    main()
