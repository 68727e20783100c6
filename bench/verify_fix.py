"""What compile verification of `fix` finds and costs on real legacy CUDA code bases (never committed).

    python bench/verify_fix.py CORPUS [CORPUS ...] [--only SUBDIR ...] [--jobs 16] [--work DIR]
                               [--recheck] [--json FILE] [--keep-cache]

For each CORPUS (a directory, e.g. /work/oracle/v11.8 or any fetched legacy CUDA project) it
1. copies the corpus (or only the `--only` subdirectories, with `Common/` when there is one, so the
   samples' `<helper_cuda.h>` still resolves) into a work directory (the corpus is only read);
2. times `cudamigrate fix --unsafe-fixes --no-verify --diff` on the copy (the cost of fixing alone);
3. times `cudamigrate fix --unsafe-fixes --verify-report R.json` on the copy, which writes the verified fix,
   and reads the report: units verified, compiled before, now building, still worse (must be 0), rollbacks
   with the rule to blame and the compiler's first error;
4. with `--recheck`, checks the claim independently of the overlay: every unit the written fix reaches is
   compiled again, in the original corpus and in the fixed copy (real files, same synthesized nvcc command),
   and units that compiled before and fail after, or fail with a new error, are counted (must be 0).
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


def recheck(original: Path, fixed: Path, jobs: int) -> dict:
    """Compile every unit the written fix reaches in the original and in the fixed copy (no overlay)."""
    from concurrent.futures import ThreadPoolExecutor

    from cudamigrate.read.project_index import ProjectIndex
    from cudamigrate.fixproof.compile_check import UnitCommand, compile_unit, is_source, nvcc_path, synthesize, worse

    nvcc = nvcc_path()
    assert nvcc is not None
    files = [p for p in fixed.rglob("*") if p.is_file() and p.suffix.lower() in
             {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hxx", ".inl"}]
    changed = [p for p in files if (original / p.relative_to(fixed)).read_bytes() != p.read_bytes()]
    index = ProjectIndex(files=files)
    units: list[Path] = []
    for p in changed:
        users = [p] if is_source(str(p)) else [Path(u) for u in index.includers(p) if is_source(str(u))] or [p]
        units += [u for u in users if u not in units]

    def one(u: Path) -> tuple[str, bool, bool, str]:
        after_cmd = synthesize(u, u.read_bytes(), files, nvcc)
        o = original / u.relative_to(fixed)
        before_cmd = UnitCommand(str(o), str(o.parent), tuple(a.replace(str(fixed), str(original)) for a in after_cmd.argv),
                                 True)
        b, a = compile_unit(before_cmd), compile_unit(after_cmd)
        a.errors = [type(d)(d.file.replace(str(fixed), str(original)), d.line, d.message) for d in a.errors]
        return str(u.relative_to(fixed)), b.ok, worse(b, a), a.first_error if worse(b, a) else ""

    with ThreadPoolExecutor(jobs) as pool:
        got = list(pool.map(one, units))
    return {"units": len(got), "compiled_before": sum(1 for g in got if g[1]),
            "worse": [{"unit": g[0], "first_error": g[3]} for g in got if g[2]]}


def bench(corpus: Path, only: list[str], jobs: int, work: Path, do_recheck: bool, keep_cache: bool) -> dict:
    name = corpus.name
    dst = work / name
    targets = copy_corpus(corpus, dst, only)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("CUDAMIGRATE_VERIFY", None)
    if not keep_cache:
        env["CUDAMIGRATE_CACHE_DIR"] = tempfile.mkdtemp(prefix="cmcache-bench-verify-")
    base = ["--unsafe-fixes", "--exit-zero", "-j", str(jobs)]
    t_plain, p0 = cudamigrate(["fix", *base, "--no-verify", "--diff", *map(str, targets)], env)
    report = work / f"{name}-verify.json"
    t_verify, p1 = cudamigrate(["fix", *base, "--verify-report", str(report), *map(str, targets)], env)
    if p1.returncode not in (0, 1):
        raise SystemExit(f"{name}: fix exited {p1.returncode}: {p1.stderr[-2000:]}")
    rep = json.loads(report.read_text())
    out = {"corpus": str(corpus), "only": only, "jobs": jobs, "fix_seconds": round(t_plain, 1),
           "fix_verified_seconds": round(t_verify, 1), "verify": rep,
           "summary": [ln for ln in p1.stderr.splitlines() if ln.startswith(("Fixed ", "Verified "))]}
    if do_recheck:
        orig_root = corpus
        out["recheck"] = recheck(orig_root if not only else corpus, dst, jobs)
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
        line = (f"{c}: {v.get('units', 0)} unit(s) verified ({v.get('compiled_before', 0)} compiled before), "
                f"{v.get('rolled_back', 0)} edit(s) rolled back, {v.get('now_build', 0)} now build, "
                f"{v.get('worse', 0)} worse; fix {r['fix_seconds']} s, fix+verify {r['fix_verified_seconds']} s "
                f"(-j {a.jobs}, {v.get('compiles', 0)} compiles)")
        if "recheck" in r:
            line += f"; recheck: {r['recheck']['units']} unit(s), {len(r['recheck']['worse'])} worse"
        print(line, flush=True)
        for rb in v.get("rollbacks", []):
            print(f"  rolled back {rb['rule_id']} at {rb['path']}:{rb['line']} ({rb['unit']}): {rb['first_error']}")
        results.append(r)
    if a.json:
        a.json.write_text(json.dumps(results, indent=2) + "\n")
    print(f"work: {work}", file=sys.stderr)


if __name__ == "__main__":
    main()
