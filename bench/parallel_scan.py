"""Parallel efficiency of a cold scan: how much of N cores `scan -j N` uses, and whether cost stays linear.

    python bench/parallel_scan.py --tree DIR [--jobs N] [--copies K]
    python bench/parallel_scan.py --generate 3000 [--jobs N]        (a generated tree, bench/scan_speed.py's)

Runs `cudamigrate scan --format json -o /dev/null` cold (a fresh, empty result cache; the compiled rules
cached, as after any earlier run on the machine) on the tree as a subprocess, at -j 1 and at -j N (default:
the CPUs of this machine), and prints for each: wall time, CPU time (user + system of the CLI and every
worker it waited for: getrusage(RUSAGE_CHILDREN)), parallel efficiency = CPU / (wall x N), the speed-up over
-j 1, and the peak RSS of the largest process; then -j N once more with nothing cached at all. With --copies K it also scans K copies of the
tree side by side at -j N and prints the cost per line and the peak RSS against one copy (linearity:
both ratios near 1, memory per process bounded) and the parallel efficiency on that larger tree: a run's
fixed serial start (imports, loading the compiled rules, the warm-up the workers are forked from: about half
a second) weighs less the larger the tree, so the efficiency on the large tree is the figure that says whether
the cores are used. Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx", ".inl", ".cuinc"}


@dataclass
class Figures:
    jobs: int
    wall: float
    cpu: float
    rss_mb: float

    def efficiency(self) -> float:
        return self.cpu / (self.wall * self.jobs)


def lines_of(tree: Path) -> tuple[int, int]:
    files = lines = 0
    for p in tree.rglob("*"):
        if p.suffix.lower() in SOURCE and p.is_file():
            files += 1
            with open(p, "rb") as fh:
                lines += fh.read().count(b"\n")
    return files, lines


def cold_scan(tree: Path, jobs: int, rules_cache: Path | None) -> Figures:
    """One scan with nothing of the tree cached (a fresh, empty result cache), in a fresh process; CPU and RSS
    of it and its workers. `rules_cache`: a compiled rule cache to start from (what a CI cache or any earlier
    run on the machine keeps); None: nothing cached at all (the rules are compiled from YAML first)."""
    cache = Path(tempfile.mkdtemp(prefix="cm-parallel-cache-"))
    if rules_cache is not None:
        shutil.copy(rules_cache, cache / rules_cache.name)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), "CUDAMIGRATE_CACHE_DIR": str(cache)}
    env.pop("CUDAMIGRATE_NO_CACHE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "cudamigrate", "scan", ".", "-j", str(jobs), "--format", "json",
                        "-o", os.devnull], cwd=tree, env=env, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(cache, ignore_errors=True)
    if p.returncode not in (0, 1):
        sys.exit(f"scan failed (exit {p.returncode}): {p.stderr.decode(errors='replace')[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Figures(jobs, wall, cpu, after.ru_maxrss / 1024)


def compiled_rules(tree: Path, keep: Path) -> Path:
    """The compiled rule cache of this checkout (one small scan writes it), kept in `keep`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), "CUDAMIGRATE_CACHE_DIR": str(keep)}
    env.pop("CUDAMIGRATE_NO_CACHE", None)
    one = next(p for p in sorted(tree.rglob("*")) if p.suffix.lower() in SOURCE and p.is_file())
    subprocess.run([sys.executable, "-m", "cudamigrate", "scan", str(one), "-j", "1"], env=env, capture_output=True)
    found = sorted(keep.glob("rules-*.pickle"))
    if not found:
        sys.exit("no compiled rule cache was written")
    return found[0]


def show(label: str, f: Figures, base: Figures | None) -> None:
    speed = f"  speed-up {base.wall / f.wall:5.2f}x" if base is not None else ""
    print(f"{label:>14}: wall {f.wall:7.2f} s  CPU {f.cpu:7.2f} s  efficiency {100 * f.efficiency():5.1f} % "
          f"of {f.jobs} core(s){speed}  peak RSS {f.rss_mb:6.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", type=Path, help="the tree to scan (copied to a temporary directory first)")
    ap.add_argument("--generate", type=int, default=0, help="generate a tree of this many files instead")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--copies", type=int, default=0, help="also scan this many copies side by side (linearity)")
    ap.add_argument("--skip-serial", action="store_true", help="do not run -j 1 (no speed-up figure)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cm-parallel-") as tmp:
        one = Path(tmp) / "one"
        if a.tree:
            shutil.copytree(a.tree, one / "copy0", symlinks=True)
        else:
            sys.path.insert(0, str(ROOT / "bench"))
            from scan_speed import make_tree

            make_tree(one / "copy0", a.generate or 3000, 300)
        files, lines = lines_of(one)
        rules = compiled_rules(one, Path(tmp) / "rules")
        print(f"tree: {files} source files, {lines} lines; {os.cpu_count()} CPUs here; cold scans (nothing of the "
              f"tree cached; the compiled rules cached unless said)")
        cold_scan(one, a.jobs, rules)  # page cache and .pyc warm: the figures measure the scan, not the disk
        serial = None if a.skip_serial else cold_scan(one, 1, rules)
        if serial is not None:
            show("-j 1", serial, None)
        par = cold_scan(one, a.jobs, rules)
        show(f"-j {a.jobs}", par, serial)
        print(f"parallel efficiency on {a.jobs} cores: {100 * par.efficiency():.1f} % "
              f"(goal >= 60 %: wall <= CPU / {0.6 * a.jobs:.1f})")
        bare = cold_scan(one, a.jobs, None)
        show(f"-j {a.jobs}, no rules", bare, serial)
        print(f"  (the same with nothing cached at all: the rules compiled from YAML first, "
              f"efficiency {100 * bare.efficiency():.1f} %)")
        if a.copies > 1:
            many = Path(tmp) / "many"
            many.mkdir()
            for i in range(a.copies):
                shutil.copytree(one / "copy0", many / f"copy{i}", symlinks=True)
            big = cold_scan(many, a.jobs, rules)
            show(f"{a.copies}x, -j {a.jobs}", big, None)
            print(f"parallel efficiency on {a.jobs} cores, {a.copies}x tree ({a.copies * lines} lines): "
                  f"{100 * big.efficiency():.1f} % (goal >= 60 %: wall <= CPU / {0.6 * a.jobs:.1f})")
            per = (big.cpu / (a.copies * lines)) / (par.cpu / lines)
            print(f"{a.copies}x tree: CPU per line {per:.2f}x one copy's, wall {big.wall / par.wall:.1f}x "
                  f"for {a.copies}x the lines, peak RSS {big.rss_mb / par.rss_mb:.2f}x "
                  f"(linear: CPU per line ~1x; bounded: RSS well under {a.copies}x)")


if __name__ == "__main__":
    main()
