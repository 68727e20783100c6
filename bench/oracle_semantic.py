"""Semantic mode against tree-sitter mode on the oracle's precision pool (cuda-samples v11.8, lines NVIDIA kept).

    python bench/oracle_semantic.py [/work/oracle/v11.8 /work/oracle/v13.0] [--jobs 2] [--reps 1] [--work DIR]
        [--json FILE]

Why: semantic mode must be at least as precise as tree-sitter mode (issue 25). The oracle
(`bench/oracle_cuda_samples.py`) gives the yardstick: its *pool* is the default findings on v11.8 lines that NVIDIA
left unchanged in v13.0, each judged true or false in `bench/oracle_judgements.tsv`.

What it does (both trees are only read; the compile database and the reports go to `--work`):
1. writes `compile_commands.json` for every `Samples/**/*.cu|*.cpp` of v11.8 with the oracle's nvcc command line
   (`nvcc -std=c++17 -arch=sm_90 -c -I<sample dir> -I<Common> -I<wheel include dirs>`, run in the file's
   directory: `Compiler.compile` of the oracle);
2. runs `cudamigrate scan --format json --no-cache --jobs N` over the whole v11.8 tree twice, alternating,
   `--reps` times: tree-sitter mode (`--no-semantic`) and semantic mode (`--compile-commands`); wall and CPU
   seconds (the scan's own process and its workers: RUSAGE_CHILDREN), medians over the reps, and the scan's own
   `--timings` line of the last run (its stderr is kept next to the JSON report in `--work`);
3. reads semantic mode's warnings: the translation units libclang could not parse (scanned with tree-sitter
   instead), counted by the header they miss, and the files no TU reaches;
4. compares the findings of both modes, and builds the oracle's pool for each (the same pairing, clang-format
   normalisation and diff as the oracle: `pair_files`, `normalise`, `migration_sites`), with the judgements.

Needs clang-format on PATH (as the oracle) and a usable libclang (the libclang-ng wheel).
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures as cf
import importlib.util
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def oracle_module() -> Any:
    """bench/oracle_cuda_samples.py, imported (not copied): the same flags, pairing, normalisation and diff."""
    spec = importlib.util.spec_from_file_location("oracle_cuda_samples", ROOT / "bench" / "oracle_cuda_samples.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


OR = oracle_module()
_FALLBACK = re.compile(r"^(?:cudamigrate: )?warning: semantic mode: (.+?): (.*); this translation unit is scanned with "
                       r"tree-sitter only$")
_UNREACHED = re.compile(r"^(?:cudamigrate: )?warning: semantic mode: (\d+) file\(s\) not reached from .* are scanned "
                        r"with tree-sitter only")
_MISSING = re.compile(r"'([^']+)' file not found")


def write_database(v11: Path, out: Path) -> tuple[Path, list[str]]:
    """compile_commands.json (under `out`) for every unit the oracle compiles, with the oracle's command line."""
    units = OR.rel_files(v11, OR.COMPILE_EXTS, "Samples")
    includes = OR.wheel_includes()
    entries = []
    for rel in units:
        src = v11 / rel
        args = ["nvcc", *OR.NVCC_FLAGS, f"-I{OR.sample_dir_of(v11, rel)}", f"-I{v11 / 'Common'}",
                *[f"-I{i}" for i in includes], str(src), "-o", str(out / "x.o")]
        entries.append({"directory": str(src.parent), "arguments": args, "file": str(src)})
    out.mkdir(parents=True, exist_ok=True)
    db = out / "compile_commands.json"
    db.write_text(json.dumps(entries, indent=1))
    return db, units


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def scan(tree: Path, mode: list[str], jobs: int, out: Path) -> tuple[float, float, list[dict], str]:
    """One `cudamigrate scan` of `tree` (run from its parent, so paths read `<tree name>/Samples/...`)."""
    cmd = [sys.executable, "-m", "cudamigrate", "scan", tree.name, "--format", "json", "--exit-zero", "--no-cache",
           "--timings", "--jobs", str(jobs), "-o", str(out), *mode]
    c0, t0 = children_cpu(), time.perf_counter()
    p = subprocess.run(cmd, cwd=tree.parent, capture_output=True, text=True, errors="replace")
    wall, cpu = time.perf_counter() - t0, children_cpu() - c0
    out.with_suffix(".stderr").write_text(p.stderr)  # the warnings and the --timings line, kept with the scan
    if not out.is_file():
        raise SystemExit(f"scan {' '.join(mode)} failed (exit {p.returncode}): {p.stderr[-2000:]}")
    return wall, cpu, OR.load_scan(out), p.stderr


def fallbacks(stderr: str) -> tuple[list[tuple[str, str]], int]:
    """(TU, reason) of each translation unit semantic mode scanned with tree-sitter, and the unreached files."""
    tus, unreached = [], 0
    for ln in stderr.splitlines():
        m = _FALLBACK.match(ln.strip())
        if m:
            tus.append((m.group(1), m.group(2)))
        m2 = _UNREACHED.match(ln.strip())
        if m2:
            unreached = int(m2.group(1))
    return tus, unreached


def why_key(why: str) -> str:
    m = _MISSING.search(why)
    return f"missing `{m.group(1)}`" if m else why[:120]


def pool(v11: Path, v13: Path, findings: list[dict], jobs: int) -> list[dict]:
    """The oracle's pool for these findings: paired files, findings whose (normalised) lines lie outside every
    range NVIDIA's normalised diff changed (bench/oracle_cuda_samples.py `main`, the same steps)."""
    pairs = OR.pair_files(OR.rel_files(v11, OR.SOURCE_EXTS), OR.rel_files(v13, OR.SOURCE_EXTS))
    style = v13 / ".clang-format"
    by_file: dict[str, list[dict]] = collections.defaultdict(list)
    for f in findings:
        by_file[f["relpath"]].append(f)

    def analyse(item: tuple[str, str]) -> list[dict]:
        old, new = item
        fl = by_file.get(old, [])
        if not fl:
            return []
        if (v11 / old).read_bytes() == (v13 / new).read_bytes():
            return list(fl)
        n_old, n_new = OR.normalise(v11 / old, style), OR.normalise(v13 / new, style)
        if n_old.lines == n_new.lines:
            return list(fl)
        _, ranges = OR.migration_sites(old, new, n_old.lines, n_new.lines)
        lm = n_old.line_map
        kept = []
        for f in fl:
            lo = lm[min(f["line"], len(lm)) - 1]
            hi = max(lo, lm[min(f.get("end_line", f["line"]), len(lm)) - 1])
            if not any(r0 <= hi and r1 - 1 >= lo for r0, r1 in ranges):
                kept.append(f)
        return kept

    with cf.ThreadPoolExecutor(max(1, jobs)) as ex:
        got = [f for part in ex.map(analyse, sorted(pairs.items())) for f in part]
    return sorted(got, key=OR.finding_key)


def key(f: dict) -> tuple:
    return (f["relpath"], f["line"], f["column"], f["rule"], f["message"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("v118", type=Path, nargs="?", default=Path("/work/oracle/v11.8"))
    ap.add_argument("v130", type=Path, nargs="?", default=Path("/work/oracle/v13.0"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--reps", type=int, default=1, help="runs of each mode, alternating (medians reported)")
    ap.add_argument("--work", type=Path, help="where the database and scans go (default: a temp dir)")
    ap.add_argument("--json", type=Path, help="write the figures and both pools here")
    ap.add_argument("--reuse", action="store_true",
                    help="read the scans, their stderr and times of an earlier run from --work instead of scanning")
    a = ap.parse_args(argv)
    missing = OR.requirements(compile_=False)
    from cudamigrate.parse import clang as cl

    ok, why = cl.available()
    if not ok:
        missing.append(f"libclang unusable ({why}): pip install libclang-ng")
    if missing:
        for m in missing:
            print(f"oracle_semantic: missing requirement: {m}", file=sys.stderr)
        return 2
    v11, v13 = a.v118.resolve(), a.v130.resolve()
    work = (a.work or Path(tempfile.mkdtemp(prefix="cudamigrate-oracle-sem-"))).resolve()
    db, units = write_database(v11, work / "db")
    units_set = set(units)
    modes = {"tree-sitter": ["--no-semantic"], "semantic": ["--compile-commands", str(db)]}
    runs: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    results: dict[str, list[dict]] = {}
    stderr: dict[str, str] = {}
    if a.reuse:
        if not a.work or not (work / "runs.json").is_file():
            raise SystemExit("oracle_semantic: --reuse needs the --work directory of an earlier run")
        runs = {m: [(w, c) for w, c in v] for m, v in json.loads((work / "runs.json").read_text()).items()}
        for name in modes:
            last = work / f"scan-{name}-{len(runs[name]) - 1}.json"
            results[name], stderr[name] = OR.load_scan(last), last.with_suffix(".stderr").read_text()
    for rep in range(0 if a.reuse else a.reps):
        for name, flags in modes.items():
            wall, cpu, found, err = scan(v11, flags, a.jobs, work / f"scan-{name}-{rep}.json")
            runs[name].append((wall, cpu))
            if name in results and sorted(map(key, found)) != sorted(map(key, results[name])):
                print(f"oracle_semantic: {name} findings differ between runs", file=sys.stderr)
            results[name], stderr[name] = found, err
            print(f"  {name} run {rep + 1}: {wall:.1f} s wall, {cpu:.1f} s CPU, {len(found)} findings", file=sys.stderr)
    (work / "runs.json").write_text(json.dumps(runs))
    fell, unreached = fallbacks(stderr["semantic"])
    timings = {m: next((ln.split("timings: ", 1)[1] for ln in stderr[m].splitlines() if "timings: " in ln), "")
               for m in modes}
    by_why = collections.Counter(why_key(w) for _, w in fell)
    judgements = OR.load_judgements(OR.JUDGEMENTS)
    ts_keys, sem_keys = (set(map(key, results[m])) for m in ("tree-sitter", "semantic"))
    summary: dict[str, Any] = {
        "tus": len(units),
        "tus_fallback": len(fell),
        "tus_fallback_by_reason": dict(by_why.most_common()),
        "files_not_reached_by_a_tu": unreached,
        "findings_identical": ts_keys == sem_keys,
        "jobs": a.jobs, "reps": len(runs["semantic"]),
    }
    pools = {}
    for name in modes:
        p = pool(v11, v13, results[name], a.jobs)
        verdicts = collections.Counter(judgements.get(OR.finding_key(f), ("?", ""))[0] for f in p)
        pools[name] = p
        walls, cpus = zip(*runs[name], strict=True)
        summary[name] = {
            "findings": len(results[name]),
            "by_rule": dict(sorted(collections.Counter(f["rule"] for f in results[name]).items())),
            "pool": len(p), "pool_TP": verdicts.get("TP", 0), "pool_FP": verdicts.get("FP", 0),
            "pool_unjudged": sum(n for v, n in verdicts.items() if v not in ("TP", "FP")),
            "wall_s": round(statistics.median(walls), 1), "cpu_s": round(statistics.median(cpus), 1),
            "runs": [[round(w, 1), round(c, 1)] for w, c in runs[name]],
            "timings_last_run": timings[name],
        }
    only = {"tree-sitter": sorted(ts_keys - sem_keys), "semantic": sorted(sem_keys - ts_keys)}
    pool_keys = {m: {OR.finding_key(f) for f in pools[m]} for m in modes}
    summary["pool_identical"] = pool_keys["tree-sitter"] == pool_keys["semantic"]
    # where semantic mode's pool entries lie: in a TU libclang parsed, in one that fell back, in another file (a
    # header, judged with the facts of the first TU that includes it, or tree-sitter's when none reaches it)
    failed = {t.split("/", 1)[1] for t, _ in fell}
    summary["semantic"]["pool_in"] = dict(collections.Counter(
        "TU parsed by libclang" if f["relpath"] in units_set and f["relpath"] not in failed
        else "TU that fell back" if f["relpath"] in failed else "header or other file" for f in pools["semantic"]))
    unjudged = sorted({OR.finding_key(f) for m in modes for f in pools[m] if OR.finding_key(f) not in judgements})
    print(json.dumps(summary, indent=1))
    for m, ks in only.items():
        if ks:
            print(f"\nonly in {m} mode ({len(ks)}):")
            for k in ks:
                print(f"  {k[3]} {k[0]}:{k[1]}:{k[2]}")
    if fell:
        print("\nTUs scanned with tree-sitter in semantic mode:")
        for tu, w in fell:
            print(f"  {tu}: {why_key(w)}")
    if unjudged:
        print(f"\npool entries without a judgement in {OR.JUDGEMENTS.name} ({len(unjudged)}):")
        for k in unjudged:
            print(f"  {k}")
    if a.json:
        a.json.write_text(json.dumps({
            "summary": summary,
            "only": {m: [list(k) for k in ks] for m, ks in only.items()},
            "fallbacks": [{"tu": t, "why": w} for t, w in fell],
            "pools": {m: [{"key": OR.finding_key(f), "rule": f["rule"], "snippet": f.get("snippet", ""),
                           "verdict": judgements.get(OR.finding_key(f), ("?", ""))[0]} for f in pools[m]]
                      for m in modes},
        }, indent=1))
    if not a.work:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
