"""`cudamigrate scan` (all default rules) against ast-grep (3 rules, or more) on the same files.

    pip install ast-grep-cli==0.39.0          # the pinned comparison tool
    python bench/vs_astgrep.py [PATH ...] [--runs 3] [--pattern-rules N] [--jobs N] [--ast-grep BIN]

With no PATH a tree is generated (bench/scan_speed.py's generator). Runs alternate between the tools
(cudamigrate, ast-grep, cudamigrate, ...) so that a change in machine load hits both; the table shows
medians. CPU is user+system time of the process and its workers (`os.wait4`), wall is elapsed time,
peak memory is the largest resident set of any one process (`ru_maxrss`; a pool's workers are not
summed), lines/s is the lines of the scanned files over the median wall time. Ratios > 1 mean
cudamigrate is slower. With --jobs N > 1 the tree is also scanned with one worker (`-j 1`, ast-grep
`--threads 1`) and the CPU each tool spends at N over what it spends alone is printed: the parallel
overhead, ast-grep's being the control for what the machine (hyperthreads, memory) imposes. Also timed: a
one-file run (cold, like the tree), one new file (a copy of that file, its content new at every run, in a
result cache kept from the runs before: what an editor or a pre-commit hook meets) and `--version`. The
one-file run's file is --one-file, else the first .cu/.cpp outside dot-directories that `cudamigrate scan`
accepts alone (checked by an untimed scan: a git-ignored or excluded file is refused, exit 3, and would
time a refusal), else a copy of the first one in a fresh directory; the script exits with status 2 when
there is none, or when any timed cudamigrate run exits non-zero (it runs with --exit-zero).

ast-grep runs the rule files in bench/astgrep/ (3 rules: a removed call, a removed call with
arguments, a removed struct field), plus --pattern-rules N generated `NAME($$$ARGS)` rules over the
call names of cudamigrate's rules, with `.cu/.cuh/.c/.h/.cpp` all read as C++ (cudamigrate reads them
all with its CUDA C++ grammar). cudamigrate gets a cache directory of its own: its rule cache is built
before the runs, its result cache emptied before every run (a cold scan; `--warm-results` keeps it,
`--no-cache` runs without either). The script prints figures and asserts nothing.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
EXTS = (".cu", ".cuh", ".c", ".h", ".cpp", ".cc", ".cxx", ".hpp", ".hh", ".hxx", ".inl")
SG_EXTS = ["*.cu", "*.cuh", "*.h", "*.c", "*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.hxx", "*.inl"]


@dataclass
class Sample:
    cpu: float
    wall: float
    maxrss_kb: int
    rc: int


@dataclass
class Tool:
    name: str
    cmd: list[str]
    samples: list[Sample] = field(default_factory=list)
    output: Path | None = None  # where the last run's JSON went (findings are counted after timing)
    cold: bool = True  # cudamigrate: its result cache emptied before every run (unless --warm-results)
    before: Callable[[int], None] | None = None  # called with the run's number before each run


def run_once(cmd: list[str], stdout_path: Path | None = None, env: dict[str, str] | None = None) -> Sample:
    """One run of cmd: CPU of it and everything it waited for, wall time, its largest process's RSS."""
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    try:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if stdout_path:
            out.close()
    return Sample(ru.ru_utime + ru.ru_stime, wall, ru.ru_maxrss, proc.returncode)


def count_lines(paths: list[Path]) -> tuple[int, int]:
    files = lines = 0
    for p in paths:
        walk = [p] if p.is_file() else (q for q in p.rglob("*") if q.is_file())
        for q in walk:
            if q.suffix.lower() in EXTS and not any(part.startswith(".") for part in q.parts[len(p.parts):]):
                files += 1
                with open(q, "rb") as fh:
                    lines += fh.read().count(b"\n")
    return files, lines


def compile_bytecode(skip: bool) -> str:
    """Compile the package's bytecode (`__pycache__`, git-ignored), as pip does on install: a checkout whose bytecode
    is never written (PYTHONDONTWRITEBYTECODE=1, as the 2-core machine's shells set, or a read-only tree) compiles
    every module at every start, which no install does (a one-file scan there: 0.35 s CPU, 0.2 s with bytecode).
    Says what it did."""
    if skip:
        return "not compiled first (--no-compile)"
    p = subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "cudamigrate")], capture_output=True)
    return "compiled first, as an install has it" if p.returncode == 0 else f"compileall failed (exit {p.returncode})"


def candidate_files(paths: list[Path]) -> list[Path]:
    """The .cu/.cpp files of `paths` in name order, those under a dot-directory (`.git`, `.recall`, ...) left out."""
    out: list[Path] = []
    for p in paths:
        if p.is_file():
            out.append(p)
            continue
        out += [q for q in sorted(p.rglob("*")) if q.is_file() and q.suffix.lower() in (".cu", ".cpp")
                and not any(part.startswith(".") for part in q.relative_to(p).parts)]
    return out


def scans_alone(cm: list[str], path: Path, env: dict[str, str]) -> str | None:
    """None when `cudamigrate scan PATH` scans that one file (exit 0 with --exit-zero, one file scanned), else
    why not: a file the scan refuses (git-ignored, excluded by a configuration) would time start-up and a refusal."""
    p = subprocess.run(cm + ["scan", "--exit-zero", "--no-semantic", "--format", "json", str(path)], env=env,
                       capture_output=True)
    if p.returncode != 0:
        return f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[-300:]}"
    try:
        scanned = json.loads(p.stdout)["summary"]["files_scanned"]
    except (ValueError, KeyError, TypeError):
        return "no JSON report"
    return None if scanned == 1 else f"{scanned} files scanned, not 1"


def one_file(cm: list[str], paths: list[Path], env: dict[str, str], given: Path | None, tmp: Path) -> Path:
    """The one-file row's file: `given`, else the first of the first 5 candidates that the scan accepts alone, else
    (a tree under a git-ignored directory, such as the GPU machine's `.recall/v11.8`: every file refused) a copy
    of the first candidate in a fresh directory, a new file as an editor or a hook meets it. Exits (status 2) naming
    the reasons when none is accepted: a row that timed a refusal (the GPU machine's run of 2026-12-06: 0.20 s,
    exit 3, a file under `.recall/`) is worse than none."""
    cands = [given] if given is not None else candidate_files(paths)[:5]
    reasons = []
    for f in cands:
        why = scans_alone(cm, f, env)
        if why is None:
            return f
        reasons.append(f"{f}: {why}")
    if given is None and cands:
        copy = tmp / "one-file" / cands[0].name
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cands[0], copy)
        why = scans_alone(cm, copy, env)
        if why is None:
            print(f"one file: {cands[0]} is refused where it lies ({reasons[0]}); timing a copy, {copy}", file=sys.stderr)
            return copy
        reasons.append(f"{copy}: {why}")
    sys.exit("no file for the one-file run: " + ("; ".join(reasons) if reasons else "no .cu/.cpp file in PATH")
             + " (pass --one-file FILE)")


def generated_rules(directory: Path, n: int) -> None:
    """n ast-grep rules `NAME($$$ARGS)` over the call names of cudamigrate's rules (cycled when n is larger)."""
    sys.path.insert(0, str(ROOT))
    from cudamigrate.knowledge.load import load_rules

    names = sorted({k.split("::")[-1] for r in load_rules().rules if r.kind == "call" for k in r.spec["names"]
                    if "*" not in k and "." not in k and "(" not in k})
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        name = names[i % len(names)]
        (directory / f"gen-{i:04d}.yml").write_text(
            f"id: gen-{i:04d}\nlanguage: cpp\nseverity: warning\nmessage: {name}\nrule:\n  pattern: {name}($$$ARGS)\n")


def sg_config(tmp: Path, pattern_rules: int) -> Path:
    dirs = [str(HERE / "astgrep")]
    if pattern_rules:
        generated_rules(tmp / "generated", pattern_rules)
        dirs.append(str(tmp / "generated"))
    cfg = tmp / "sgconfig.yml"
    cfg.write_text("ruleDirs:\n" + "".join(f"  - {json.dumps(d)}\n" for d in dirs)
                   + "languageGlobs:\n  cpp: " + json.dumps(SG_EXTS) + "\n")
    return cfg


def count_findings(tool: Tool) -> int | None:
    try:
        data = json.loads(tool.output.read_bytes()) if tool.output else None
    except (OSError, ValueError):
        return None
    if isinstance(data, dict):
        return len(data.get("findings", []))
    return len(data) if isinstance(data, list) else None


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def table(rows: list[tuple[str, Tool, Tool]], lines: dict[str, int]) -> str:
    out = ["| work | tool | CPU s (median) | wall s (median) | peak MiB | lines/s (wall) | findings | CPU ratio | wall ratio |",
           "|---|---|---|---|---|---|---|---|---|"]
    for label, a, b in rows:
        ca, cb = med([s.cpu for s in a.samples]), med([s.cpu for s in b.samples])
        wa, wb = med([s.wall for s in a.samples]), med([s.wall for s in b.samples])
        for t, c, w in ((a, ca, wa), (b, cb, wb)):
            peak = max((s.maxrss_kb for s in t.samples), default=0) / 1024
            n = lines.get(label, 0)
            rate = f"{n / w:,.0f}" if n and w > 0 else "-"
            nf = count_findings(t)
            ratio = (f"{ca / cb:.2f}x", f"{wa / wb:.2f}x") if t is a and cb > 0 and wb > 0 else ("", "")
            out.append(f"| {label} | {t.name} | {c:.2f} | {w:.2f} | {peak:.0f} | {rate} | "
                       f"{'-' if nf is None else nf} | {ratio[0]} | {ratio[1]} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path, help="trees or files (default: a generated tree)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each tool (alternating); medians are shown")
    ap.add_argument("--pattern-rules", type=int, default=0, help="also give ast-grep N generated pattern rules")
    ap.add_argument("--jobs", "-j", type=int, default=None, help="cudamigrate's --jobs (ast-grep: --threads)")
    ap.add_argument("--ast-grep", dest="sg", default=shutil.which("ast-grep") or shutil.which("sg"),
                    help="the ast-grep binary (pip install ast-grep-cli==0.39.0)")
    ap.add_argument("--one-file", type=Path, default=None, help="file for the one-file run (default: the first .cu/.cpp)")
    ap.add_argument("--files", type=int, default=500, help="generated tree: files")
    ap.add_argument("--lines", type=int, default=300, help="generated tree: lines per file")
    ap.add_argument("--no-cache", action="store_true",
                    help="run cudamigrate with CUDAMIGRATE_NO_CACHE=1 (no rule cache either: rules validated every run)")
    ap.add_argument("--warm-results", action="store_true",
                    help="keep the result cache between runs (default: emptied before every run, rule cache warm)")
    ap.add_argument("--no-compile", action="store_true",
                    help="do not compile the package's bytecode first (a checkout run with PYTHONDONTWRITEBYTECODE "
                         "then compiles every module at every start, as no install does)")
    a = ap.parse_args()
    if not a.sg:
        sys.exit("ast-grep not found: pip install ast-grep-cli==0.39.0, or pass --ast-grep BIN")
    tmp = Path(tempfile.mkdtemp(prefix="cudamigrate-vs-astgrep-"))
    try:
        paths = [p.resolve() for p in a.paths]
        if not paths:
            sys.path.insert(0, str(HERE))
            from scan_speed import make_tree

            make_tree(tmp / "tree", a.files, a.lines)
            paths = [tmp / "tree"]
        nfiles, nlines = count_lines(paths)
        cfg = sg_config(tmp, a.pattern_rules)
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   CUDAMIGRATE_CACHE_DIR=str(tmp / "cache"))  # a cache of its own: the user's is neither used nor touched
        if a.no_cache:
            env["CUDAMIGRATE_NO_CACHE"] = "1"
        jobs = ["-j", str(a.jobs)] if a.jobs else []
        threads = ["--threads", str(a.jobs)] if a.jobs else []
        cm = [sys.executable, "-m", "cudamigrate"]
        sg_rules = 3 + a.pattern_rules
        work: list[tuple[str, Tool, Tool, list[Path]]] = [
            (f"{nfiles} files, {nlines:,} lines",
             Tool("cudamigrate (all default rules)", cm + ["scan", "--exit-zero", "--no-semantic", "--format", "json", *jobs]
                  + [str(p) for p in paths]),
             Tool(f"ast-grep ({sg_rules} rules)", [a.sg, "scan", "--config", str(cfg), "--json=compact", *threads]
                  + [str(p) for p in paths]), paths)]
        if a.jobs and a.jobs > 1:  # the control: what the same scan costs in one process / one thread
            work.append((f"{nfiles} files, one worker / thread",
                         Tool("cudamigrate -j 1", cm + ["scan", "--exit-zero", "--no-semantic", "--format", "json", "-j", "1"]
                              + [str(p) for p in paths]),
                         Tool("ast-grep --threads 1", [a.sg, "scan", "--config", str(cfg), "--json=compact", "--threads", "1"]
                              + [str(p) for p in paths]), paths))
        compiled = compile_bytecode(a.no_compile)
        subprocess.run(cm + ["rules"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # warm the rule cache
        one = one_file(cm, paths, env, a.one_file.resolve() if a.one_file else None, tmp)
        work.append((f"one file ({one.name})",
                     Tool("cudamigrate (all default rules)", cm + ["scan", "--exit-zero", "--no-semantic", "--format", "json", str(one)]),
                     Tool(f"ast-grep ({sg_rules} rules)", [a.sg, "scan", "--config", str(cfg), "--json=compact", str(one)]),
                     [one]))
        new = tmp / "new-file" / one.name  # a file the result cache has never seen, in a cache that is warm
        new.parent.mkdir(exist_ok=True)
        original = one.read_bytes()

        def renew(i: int) -> None:
            new.write_bytes(original + f"\n// vs_astgrep run {i}\n".encode())

        renew(-1)
        subprocess.run(cm + ["scan", "--exit-zero", "--no-semantic", str(new)], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)  # the result cache exists, as after any earlier run
        work.append((f"one new file ({one.name}, result cache warm)",
                     Tool("cudamigrate (all default rules)", cm + ["scan", "--exit-zero", "--no-semantic", "--format", "json", str(new)],
                          cold=False, before=renew),
                     Tool(f"ast-grep ({sg_rules} rules)", [a.sg, "scan", "--config", str(cfg), "--json=compact", str(new)]),
                     [new]))
        work.append(("--version", Tool("cudamigrate", cm + ["--version"]), Tool("ast-grep", [a.sg, "--version"]), []))
        for label, x, y, _ in work:
            for i in range(a.runs):
                for t in (x, y):
                    if t.before is not None:
                        t.before(i)
                    if t is x and t.cold and not a.warm_results:  # a cold scan: every file scanned, none replayed
                        for db in (tmp / "cache").glob("results.sqlite*"):
                            db.unlink()
                    t.output = tmp / f"out-{abs(hash(label))}-{t.name.split()[0]}.json"
                    t.samples.append(run_once(t.cmd, t.output, env))
        print(f"cudamigrate {subprocess.run(cm + ['--version'], env=env, capture_output=True, text=True).stdout.strip()}, "
              f"{subprocess.run([a.sg, '--version'], capture_output=True, text=True).stdout.strip()}, "
              f"{a.runs} alternating runs each, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end")
        print("paths: " + " ".join(str(p) for p in (a.paths or ["<generated>"])) + f"; one file: {one}")
        print(f"cudamigrate bytecode: {compiled}")
        print("cudamigrate caches: " + ("none (--no-cache)" if a.no_cache else
                                        "rule cache warm, result cache " + ("kept between runs" if a.warm_results
                                                                            else "emptied before every run")))
        print()
        print(table([(label, x, y) for label, x, y, _ in work],
                    {label: count_lines(ps)[1] for label, _, _, ps in work if ps}))
        if a.jobs and a.jobs > 1:
            (_, cm_n, sg_n, _), (_, cm_1, sg_1, _) = work[0], work[1]
            over = [med([x.cpu for x in n.samples]) / med([x.cpu for x in o.samples]) for n, o in ((cm_n, cm_1), (sg_n, sg_1))]
            print(f"\nparallel CPU over one worker/thread (CPU at -j {a.jobs} / CPU at -j 1): cudamigrate {over[0]:.2f}x, "
                  f"ast-grep {over[1]:.2f}x (--threads {a.jobs} / --threads 1)")
        bad = [(label, t.name, s.rc) for label, x, y, _ in work for t in (x, y) for s in t.samples
               if s.rc != 0 and not (t is y and s.rc == 1)]  # cudamigrate runs with --exit-zero; ast-grep: 1 = findings
        if bad:
            sys.exit(f"\nfailed runs (the figures above time them, not a scan): {bad[:6]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
