"""Semantic mode's cost against clang-tidy's: the same translation units, the same flags, CPU seconds of each.

    python bench/semantic_vs_clang_tidy.py [--samples /work/oracle/v13.0] [--tus 12 | --all] [--jobs 1] [--reps 1]

The TUs are the first `--tus` `.cu`/`.cpp` files of cuda-samples' `Samples/0_Introduction`, or with `--all` every
`.cu`/`.cpp` file under `Samples/` (the whole generated database; read only). Their
command lines are the oracle's pinned nvcc flags (`bench/oracle_cuda_samples.py`: `nvcc -std=c++17 -arch=sm_90
-c -I<sample dir> -I<Common>`, plus the CUDA 13.0-matched library wheels' include directory when installed). Two
databases are written under `--dir` (never into the checkout):

  * `nvcc/compile_commands.json`: those nvcc command lines, which `cudamigrate scan --compile-commands` reads
    (semantic mode, every default rule, `--no-cache`);
  * `clang/compile_commands.json`: the same TUs as clang command lines, from cudamigrate's own nvcc -> clang
    mapping (`parse/clang.clang_args`, `-x cuda --cuda-host-only ...`) without its `-resource-dir`, so that
    clang-tidy parses exactly what semantic mode parses, with its own wheel's resource headers. clang-tidy cannot
    take nvcc command lines itself (`-arch=sm_90` means a Darwin architecture to clang's driver).

clang-tidy runs through the `run-clang-tidy` script of the `clang-tidy` wheel (`pip install clang-tidy`, the `bench`
extra) with one cheap check (`--check`, default `readability-else-after-return`). Both run `--jobs` processes;
CPU is user+system time of the child processes (resource.RUSAGE_CHILDREN), the figure that does not depend on how
busy the machine's cores are. Each tool's first run is a warm-up (file cache), then `--reps` measured runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def oracle_flags() -> list[str]:
    """The oracle script's pinned nvcc flags (imported, not copied, so the two cannot drift apart)."""
    spec = importlib.util.spec_from_file_location("oracle_cuda_samples", ROOT / "bench" / "oracle_cuda_samples.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return list(mod.NVCC_FLAGS)


def wheel_include() -> Path | None:
    d = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages" \
        / "nvidia" / "cu13" / "include"
    return d if d.is_dir() else None


def write_databases(samples: Path, n: int | None, out: Path) -> tuple[Path, Path, list[Path]]:
    """Both databases for the first `n` TUs of 0_Introduction, or (n None) for every TU under Samples/."""
    from cudamigrate.parse import clang as cl

    intro = samples / "Samples" / "0_Introduction" if n is not None else samples / "Samples"
    files = sorted(p for p in intro.rglob("*") if p.suffix in (".cu", ".cpp") and p.is_file())
    if n is not None:
        files = files[:n]
    if not files:
        raise SystemExit(f"no .cu/.cpp files under {intro}")
    flags = oracle_flags()
    inc = wheel_include()
    nvcc_entries, clang_entries = [], []
    for f in files:
        argv = ["nvcc", *flags, f"-I{f.parent}", f"-I{samples / 'Common'}", *([f"-I{inc}"] if inc else []),
                str(f), "-o", str(out / "x.o")]
        nvcc_entries.append({"directory": str(f.parent), "arguments": argv, "file": str(f)})
        args = cl.clang_args(cl.Command(f.resolve(), f.parent, argv))
        i = args.index("-resource-dir") if "-resource-dir" in args else -1
        if i >= 0:
            del args[i:i + 2]  # clang-tidy uses its own wheel's resource headers
        clang_entries.append({"directory": str(f.parent), "arguments": ["clang++", *args, "-c", str(f)], "file": str(f)})
    dbs = []
    for sub, entries in (("nvcc", nvcc_entries), ("clang", clang_entries)):
        (out / sub).mkdir(parents=True, exist_ok=True)
        p = out / sub / "compile_commands.json"
        p.write_text(json.dumps(entries, indent=1))
        dbs.append(p)
    return dbs[0], dbs[1], files


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, subprocess.CompletedProcess]:
    c0, t0 = children_cpu(), time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return time.perf_counter() - t0, children_cpu() - c0, p


def run_clang_tidy_cmd(db_dir: Path, files: list[Path], check: str, jobs: int) -> list[str]:
    import clang_tidy

    script = clang_tidy.get_executable("run-clang-tidy.py")
    binary = clang_tidy.get_executable("clang-tidy")
    return [sys.executable, str(script), "-p", str(db_dir), "-clang-tidy-binary", str(binary),
            f"-checks=-*,{check}", "-j", str(jobs), "-quiet", *map(str, files)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=Path, default=Path("/work/oracle/v13.0"), help="cuda-samples checkout (read only)")
    ap.add_argument("--tus", type=int, default=12, help="how many translation units of 0_Introduction")
    ap.add_argument("--all", action="store_true", help="every .cu/.cpp under Samples/ instead of --tus of 0_Introduction")
    ap.add_argument("--jobs", type=int, default=1, help="processes for both tools")
    ap.add_argument("--reps", type=int, default=1, help="measured runs of each tool (after one warm-up)")
    ap.add_argument("--check", default="readability-else-after-return", help="the one clang-tidy check")
    ap.add_argument("--dir", type=Path, default=None, help="where to write the databases (default: a temp dir)")
    a = ap.parse_args()
    try:
        import clang_tidy  # noqa: F401
    except ImportError:
        print("the clang-tidy wheel is not installed: pip install 'clang-tidy==23.1.4' (or '.[bench]')", file=sys.stderr)
        return 2
    from cudamigrate.parse import clang as cl

    setup, why = cl.find_setup()
    if setup is None:
        print(f"semantic mode unavailable: {why}", file=sys.stderr)
        return 2
    tmp = tempfile.TemporaryDirectory(prefix="cm-vs-tidy-") if a.dir is None else None
    out = a.dir or Path(tmp.name)  # type: ignore[union-attr]
    nvcc_db, clang_db, files = write_databases(a.samples, None if a.all else a.tus, out)
    env = {**os.environ, "CUDAMIGRATE_NO_CACHE": "1"}
    semantic = [sys.executable, "-m", "cudamigrate", "scan", *map(str, files), "--compile-commands", str(nvcc_db),
                "--no-cache", "--exit-zero", "-j", str(a.jobs), "--format", "json"]
    tidy = run_clang_tidy_cmd(clang_db.parent, files, a.check, a.jobs)
    import importlib.metadata as md

    where = "Samples" if a.all else "Samples/0_Introduction"
    print(f"{len(files)} TUs of {a.samples}/{where}, -j {a.jobs}; libclang: {cl.clang_version()} "
          f"({cl.WHEEL} {cl.wheel_version()}); clang-tidy wheel {md.version('clang-tidy')}, check {a.check}")
    results: dict[str, list[tuple[float, float]]] = {"cudamigrate semantic": [], "run-clang-tidy": []}
    notes: dict[str, str] = {}
    for name, cmd in (("cudamigrate semantic", semantic), ("run-clang-tidy", tidy)):
        for rep in range(a.reps + 1):
            wall, cpu, p = timed(cmd, env)
            if p.returncode not in (0, 1):
                print(f"{name} failed (exit {p.returncode}): {p.stderr[-800:]}", file=sys.stderr)
                return 2
            if rep == 0:
                if name == "cudamigrate semantic":
                    doc = json.loads(p.stdout)
                    warns = [ln for ln in p.stderr.splitlines() if "semantic mode" in ln]
                    notes[name] = f"{doc['summary']['findings']} findings, {len(warns)} semantic-mode warning(s)"
                    for ln in warns[:5]:
                        print(f"  semantic: {ln[:200]}")
                else:
                    errs = {ln.split(":", 1)[0] for ln in (p.stdout + p.stderr).splitlines() if ": error:" in ln}
                    notes[name] = (f"{sum(1 for ln in p.stdout.splitlines() if ': warning:' in ln)} warnings, "
                                   f"errors in {len(errs)} file(s)")
                continue  # warm-up
            results[name].append((wall, cpu))
    for name, runs in results.items():
        walls = sorted(w for w, _ in runs)
        cpus = sorted(c for _, c in runs)
        mid = len(runs) // 2
        print(f"{name:22s}  CPU {cpus[mid]:7.2f} s  wall {walls[mid]:7.2f} s  ({notes.get(name, '')}; median of {len(runs)})")
    sem_cpu = sorted(c for _, c in results["cudamigrate semantic"])[len(results["cudamigrate semantic"]) // 2]
    tidy_cpu = sorted(c for _, c in results["run-clang-tidy"])[len(results["run-clang-tidy"]) // 2]
    print(f"semantic mode / clang-tidy CPU: {sem_cpu / tidy_cpu:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
