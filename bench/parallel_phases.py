"""Where a parallel scan's extra CPU goes: the same cold scan at -j 1 and -j N, its CPU split into phases.

    python bench/parallel_phases.py TREE [--jobs N] [--runs 3] [--freeze] [--top 8]

Each run is `cudamigrate scan --no-semantic --format json -o /dev/null TREE` in a fresh process (cold: an
empty result cache, the compiled rules cached), instrumented from outside the package: this script starts
itself as that process, wraps a few functions of the pipeline (below), then runs the command line's `main`.
Printed per -j, medians over the runs (alternating -j 1 and -j N):

  total CPU               user+system of the process and its workers (`os.wait4`), as bench/vs_astgrep.py
  parent: start-up        imports, configuration, discovery, rule load, engine: CPU before the files are handed out
  parent: warm-up         `Engine.warm_up` (the file the workers fork from scanned, `prepare_shared`): -j N only
  parent: during the run  the parent while files are scanned: in this process at -j 1 (the scans themselves
                          excluded, counted below), receiving, unpacking and recording results at -j N
  parent: after           the result cache's finish, the report, exit
  workers: start          CPU of each worker from its fork to its first file (summed)
  scans                   `scan_file_hashed` of every file (read, prefilter, parse, match, findings; in the
                          workers at -j N, in the parent at -j 1)
  result packing          `result_cache.pack` in the workers (the parent stores the bytes)
  workers: rest           worker CPU outside the above: receiving files, pickling results back, idle polls, exit
  worker page faults      minor faults of the workers (copy-on-write of the parent's pages among them)

then the files whose scan costs most more at -j N than at -j 1 (a per-worker cache built again in every worker
shows there: the first file of each worker that meets a shared header pays for it). `--freeze` calls
`gc.freeze()` after the warm-up (before the fork), to measure copy-on-write of objects the collector would
touch. Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PHASES = ["total CPU", "parent: start-up", "parent: warm-up", "  of which prepare_shared", "parent: during the run", "parent: after",
          "workers: start", "scans", "result packing", "workers: rest"]


# --------------------------------------------------------------------------- the instrumented process


def _cpu() -> float:
    return time.process_time()  # CLOCK_PROCESS_CPUTIME_ID: nanoseconds, from 0 in a forked worker


def child(out: str, freeze: bool, argv: list[str]) -> None:
    """Run `cudamigrate argv` in this process with the pipeline's phases timed; figures to `out` (JSON), each
    worker's to `out.<pid>` (one JSON line per file, written unbuffered: workers end with os._exit)."""
    import gc
    import resource

    gc.disable()  # as cudamigrate/__main__.py starts
    sys.path.insert(0, str(ROOT))
    from cudamigrate.pipeline import result_cache, runner
    from cudamigrate.match import precheck
    from cudamigrate.scan import engine as engine_mod

    marks: dict[str, float] = {}
    parent = os.getpid()
    scans: dict[str, float] = {}
    state = {"first": True, "fd": -1}

    real_scan, real_pack, real_in_worker = runner.scan_file_hashed, result_cache.pack, runner._in_worker
    real_warm, real_run, real_finish = engine_mod.Engine.warm_up, runner.run, result_cache.CachedRun.finish

    def scan_file_hashed(engine, job, max_bytes):  # type: ignore[no-untyped-def]
        t = _cpu()
        r = real_scan(engine, job, max_bytes)
        dt = _cpu() - t
        if os.getpid() == parent:
            scans[job.display] = scans.get(job.display, 0.0) + dt
        else:
            _log({"file": job.display, "scan": dt})
        return r

    def pack(result):  # type: ignore[no-untyped-def]
        t = _cpu()
        r = real_pack(result)
        if os.getpid() != parent:
            _log({"pack": _cpu() - t})
        return r

    def in_worker(job):  # type: ignore[no-untyped-def]
        if state["first"]:
            state["first"] = False
            state["fd"] = os.open(f"{out}.{os.getpid()}", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            _log({"start": _cpu(), "minflt0": resource.getrusage(resource.RUSAGE_SELF).ru_minflt})
        r = real_in_worker(job)
        _log({"minflt": resource.getrusage(resource.RUSAGE_SELF).ru_minflt})
        return r

    def _log(d: dict) -> None:
        os.write(state["fd"], (json.dumps(d) + "\n").encode())

    def warm_up(self, files=None):  # type: ignore[no-untyped-def]
        marks.setdefault("warm_start", _cpu())
        real_warm(self, files)
        if freeze:
            gc.freeze()
        marks["warm_end"] = _cpu()

    real_shared = precheck.prepare_shared

    def prepare_shared(*a, **k):  # type: ignore[no-untyped-def]
        t = _cpu()
        real_shared(*a, **k)
        marks["shared"] = marks.get("shared", 0.0) + _cpu() - t

    precheck.prepare_shared = prepare_shared

    def run(*a, **k):  # type: ignore[no-untyped-def]
        marks["run_start"] = _cpu()
        yield from real_run(*a, **k)

    def finish(self, *a, **k):  # type: ignore[no-untyped-def]
        marks["run_end"] = _cpu()  # every file's result is in: the result cache's finish starts
        return real_finish(self, *a, **k)

    runner.scan_file_hashed, result_cache.pack, runner._in_worker = scan_file_hashed, pack, in_worker
    engine_mod.Engine.warm_up, runner.run = warm_up, run  # type: ignore[method-assign]
    result_cache.CachedRun.finish = finish  # type: ignore[method-assign]

    from cudamigrate.entry.command import console

    sys.argv = ["cudamigrate", *argv]
    code = 0
    try:
        console()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    end = _cpu()
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    Path(out).write_text(json.dumps({"marks": marks, "end": end, "scans": scans, "rc": code,
                                     "children": ch.ru_utime + ch.ru_stime}))
    sys.exit(0)


# --------------------------------------------------------------------------- the driver


def one_run(tree: Path, jobs: int, cache: Path, freeze: bool) -> dict:
    for db in cache.glob("results.sqlite*"):
        db.unlink()
    tmp = Path(tempfile.mkdtemp(prefix="cm-phases-"))
    out = tmp / "figures.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "CUDAMIGRATE_CACHE_DIR": str(cache)}
    cmd = [sys.executable, __file__, "--child", str(out)] + (["--freeze"] if freeze else []) + [
        "--", "scan", "--exit-zero", "--no-semantic", "--format", "json", "-o", os.devnull, "-j", str(jobs), str(tree)]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    stderr = p.stderr.read().decode(errors="replace") if p.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0 or not out.exists():
        sys.exit(f"instrumented scan failed (exit {os.waitstatus_to_exitcode(status)}): {stderr[-2000:]}")
    fig = json.loads(out.read_text())
    if fig["rc"] != 0:
        sys.exit(f"scan exited {fig['rc']}: {stderr[-2000:]}")
    workers = []
    for f in sorted(tmp.glob("figures.json.*")):
        rows = [json.loads(line) for line in f.read_text().splitlines()]
        workers.append(rows)
    shutil.rmtree(tmp, ignore_errors=True)
    m = fig["marks"]
    total = ru.ru_utime + ru.ru_stime
    per_file: dict[str, float] = dict(fig["scans"])
    w_start = w_scan = w_pack = 0.0
    faults = 0
    for rows in workers:
        for r in rows:
            if "start" in r:
                w_start += r["start"]
                f0 = r["minflt0"]
            if "scan" in r:
                w_scan += r["scan"]
                per_file[r["file"]] = per_file.get(r["file"], 0.0) + r["scan"]
            w_pack += r.get("pack", 0.0)
            if "minflt" in r:
                faults = faults + r["minflt"] - f0
                f0 = r["minflt"]
    parent_scans = sum(fig["scans"].values())
    start = m.get("warm_start", m.get("run_start", 0.0))
    warm = m["warm_end"] - m["warm_start"] if "warm_end" in m else 0.0
    run_start = m.get("run_start", 0.0)
    during = m.get("run_end", run_start) - run_start - warm - parent_scans
    phases = {
        "total CPU": total,
        "parent: start-up": start if "warm_start" in m else run_start,
        "parent: warm-up": warm,
        "  of which prepare_shared": m.get("shared", 0.0),
        "parent: during the run": during,
        "parent: after": fig["end"] - m.get("run_end", fig["end"]),
        "workers: start": w_start,
        "scans": parent_scans + w_scan,
        "result packing": w_pack,
        "workers: rest": fig["children"] - w_start - w_scan - w_pack,
    }
    return {"phases": phases, "per_file": per_file, "workers": len(workers), "faults": faults}


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        rest = sys.argv[2:]
        freeze = "--freeze" in rest[: rest.index("--")]
        child(rest[0], freeze, rest[rest.index("--") + 1 :])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree", type=Path)
    ap.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--freeze", action="store_true", help="gc.freeze() after the warm-up, before the workers fork")
    ap.add_argument("--top", type=int, default=8, help="files whose scan costs most more at -j N")
    a = ap.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "cudamigrate")], capture_output=True)
    cache = Path(tempfile.mkdtemp(prefix="cm-phases-cache-"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "CUDAMIGRATE_CACHE_DIR": str(cache)}
    subprocess.run([sys.executable, "-m", "cudamigrate", "rules"], env=env, stdout=subprocess.DEVNULL)
    runs: dict[int, list[dict]] = {1: [], a.jobs: []}
    t0 = time.perf_counter()
    try:
        for _ in range(a.runs):
            for j in (1, a.jobs):
                runs[j].append(one_run(a.tree.resolve(), j, cache, a.freeze))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(f"{a.tree}: {a.runs} alternating runs at -j 1 and -j {a.jobs}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f} at the end ({time.perf_counter() - t0:.0f} s)"
          + ("; gc.freeze() before the fork" if a.freeze else ""))
    print(f"\n| phase (CPU s, median) | -j 1 | -j {a.jobs} | difference |\n|---|---|---|---|")
    for ph in PHASES:
        v1 = statistics.median(r["phases"][ph] for r in runs[1])
        vn = statistics.median(r["phases"][ph] for r in runs[a.jobs])
        print(f"| {ph} | {v1:.3f} | {vn:.3f} | {vn - v1:+.3f} |")
    print(f"| workers | 0 | {statistics.median(r['workers'] for r in runs[a.jobs]):.0f} | |")
    print(f"| worker minor page faults | - | {statistics.median(r['faults'] for r in runs[a.jobs]):,.0f} | |")
    ratio = (statistics.median(r["phases"]["total CPU"] for r in runs[a.jobs])
             / statistics.median(r["phases"]["total CPU"] for r in runs[1]))
    print(f"\nparallel CPU over one worker: {ratio:.2f}x")
    files = set().union(*(r["per_file"] for r in runs[1] + runs[a.jobs]))

    def med_file(j: int, f: str) -> float:
        return statistics.median(r["per_file"].get(f, 0.0) for r in runs[j])

    extra = sorted(((med_file(a.jobs, f) - med_file(1, f), f) for f in files), reverse=True)[: a.top]
    print(f"\nfiles whose scan costs most more at -j {a.jobs} (median CPU ms, -j 1 -> -j {a.jobs}):")
    for _, f in extra:
        print(f"  {1000 * med_file(1, f):7.1f} -> {1000 * med_file(a.jobs, f):7.1f}  {f}")


if __name__ == "__main__":
    main()
