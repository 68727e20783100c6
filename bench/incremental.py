"""Incremental re-scan with the result cache: full scan, unchanged re-scan, re-scan after one edit.

    python bench/incremental.py [TREE] [--files 2000] [--lines 300] [--jobs N] [--repeat 3]

Without TREE a tree of `--files` generated files is scanned (bench/scan_speed.py's generator); a TREE is
copied to a temporary directory first (the edit must not touch it). The cache lives in a fresh temporary
directory (`CUDAMIGRATE_CACHE_DIR`). Each figure is the median of `--repeat` runs of `cudamigrate scan`
in a new process: wall seconds and CPU seconds (user + system of the process and its workers).
Prints figures, asserts nothing except that the cached JSON report after the edits is identical to an
uncached one.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scan_speed import make_tree  # noqa: E402

SOURCES = {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp"}


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall, cpu, stdout) of one run; cpu from the children's rusage (workers included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 1):
        sys.exit(f"scan failed ({p.returncode}): {p.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, p.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tree", nargs="?", type=Path)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--lines", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cudamigrate-incr-"))
    try:
        root = tmp / "tree"
        if a.tree:
            shutil.copytree(a.tree, root, symlinks=True)
        else:
            make_tree(root, a.files, a.lines)
        files = sorted(p for p in root.rglob("*") if p.suffix.lower() in SOURCES and p.is_file())
        env = dict(os.environ, CUDAMIGRATE_CACHE_DIR=str(tmp / "cache"))
        # timed runs print only --statistics (rendering a large JSON report is not what is measured);
        # the check at the end compares full JSON reports, cached against uncached
        cmd = [sys.executable, "-m", "cudamigrate", "scan", "--exit-zero", "--statistics", str(root)]
        if a.jobs:
            cmd += ["--jobs", str(a.jobs)]
        json_cmd = [c for c in cmd if c != "--statistics"] + ["--format", "json"]
        rows: list[tuple[str, float, float]] = []

        def measure(label: str, args: list[str], prepare=None) -> str:
            walls, cpus, out = [], [], ""
            for _ in range(a.repeat):
                if prepare:
                    prepare()
                w, c, out = timed(cmd + args, env)
                walls.append(w)
                cpus.append(c)
            rows.append((label, statistics.median(walls), statistics.median(cpus)))
            return out

        def clear() -> None:
            shutil.rmtree(tmp / "cache", ignore_errors=True)

        walls, cpus = zip(*[timed([sys.executable, "-m", "cudamigrate", "--version"], env)[:2] for _ in range(a.repeat)])
        rows.append(("start-up alone (--version)", statistics.median(walls), statistics.median(cpus)))
        measure("full scan, --no-cache", ["--no-cache"])
        measure("full scan, empty cache", [], clear)
        measure("re-scan, unchanged", [])
        victim = next((f for f in files if f.suffix == ".cu"), files[0])
        edits = iter(range(1_000_000))

        def edit() -> None:
            with open(victim, "a", encoding="utf-8") as fh:
                fh.write(f"\n// edit {next(edits)}\n")

        measure(f"re-scan, one file edited ({victim.name})", [], edit)
        cached_json = timed(json_cmd, env)[2]
        assert cached_json == timed(json_cmd + ["--no-cache"], env)[2], "the cached report differs from the uncached one"
        print(f"tree: {'copy of ' + str(a.tree) if a.tree else 'generated'}, {len(files)} files, "
              f"jobs={a.jobs or 'default'}, cpus={os.cpu_count()}, median of {a.repeat}")
        for label, w, c in rows:
            print(f"  {label:<48} wall {w:6.2f} s   cpu {c:6.2f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
