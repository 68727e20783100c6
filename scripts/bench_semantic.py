"""Time semantic mode (libclang with a compile database): per translation unit, and end to end.

    python scripts/bench_semantic.py --samples /work/oracle/v11.8 --tus 20 [--jobs 1,2] [--reps 3]
    python scripts/bench_semantic.py --files 200 --jobs 2 [--dir /tmp/cm-bench] [--thrust 0]

`--samples DIR`: a compile database (written under `--dir`, never into DIR) over the first `--tus` `.cu`/`.cpp`
files of DIR/Samples/0_Introduction in path order (NVIDIA cuda-samples), compiled as the samples' Makefiles do:
`nvcc -std=c++17 -arch=sm_90 -c` with the sample's directory, `Common/` and the pip CUDA wheel headers.
Without it, an N-file project is generated: each file includes <cuda_runtime.h> and a shared project header,
defines a kernel and host code with legacy-stream calls (literal, variable, macro and created streams).

Printed:
  * per TU (in process, sequential, `SemanticDB.build(jobs=1)`): the shared PCH, the first TU, then the median
    and mean of the other TUs, libclang parse and fact extraction apart, wall and CPU;
  * end to end (`cudamigrate scan --no-cache` in a subprocess, alternating runs, medians): the first TU alone and
    all TUs, for each `--jobs`; per TU after the first = (all - first) / (TUs - 1), wall and CPU (CPU includes
    worker processes);
  * the load average before and after: on a shared machine wall times mean little, CPU times count.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HEADER = """#pragma once
#include <cuda_runtime.h>
#define UPLOAD(d, h, n, s) cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s)
constexpr cudaStream_t kDefault = nullptr;
inline void clear_all(float *d, size_t n) { cudaMemsetAsync(d, 0, n); }
"""

SOURCE = """#include "common.h"
{extra_include}
__global__ void k{i}(float *x, int n) {{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < n) x[j] += {i}.0f;
}}

struct Queue{i} {{
  cudaStream_t s_ = cudaStreamPerThread;
  cudaError_t cudaMemsetAsync(void *p, int v, size_t n) {{ return ::cudaMemsetAsync(p, v, n, s_); }}
  void clear(float *d, size_t n) {{ cudaMemsetAsync(d, 0, n); }}
}};

int run{i}(float *d, float *h, int n) {{
  cudaStream_t s = 0;
  cudaStream_t t;
  cudaStreamCreate(&t);
  cudaMemcpyAsync(d, h, n * sizeof(float), cudaMemcpyHostToDevice, s);
  cudaMemcpyAsync(d, h, n * sizeof(float), cudaMemcpyHostToDevice, t);
  cudaMemcpyAsync(d, h, n * sizeof(float), cudaMemcpyHostToDevice, kDefault);
  UPLOAD(d, h, n * sizeof(float), 0);
  UPLOAD(d, h, n * sizeof(float), t);
  k{i}<<<n / 256, 256>>>(d, n);
  k{i}<<<n / 256, 256, 0, t>>>(d, n);
  Queue{i} q;
  q.clear(d, n);
  cudaEventRecord(nullptr);
  cudaStreamDestroy(t);
  return 0;
}}
"""

NVCC = "/usr/local/cuda-13.0/bin/nvcc"


def generate(root: Path, n: int, thrust: int) -> tuple[Path, list[Path]]:
    src = root / "src"
    src.mkdir(parents=True, exist_ok=True)
    (src / "common.h").write_text(HEADER)
    entries = []
    files = []
    for i in range(n):
        extra = "#include <thrust/reduce.h>" if i < thrust else ""
        f = src / f"unit{i:03d}.cu"
        f.write_text(SOURCE.format(i=i, extra_include=extra))
        files.append(f)
        entries.append({"directory": str(root / "build"),
                        "command": f"{NVCC} -std=c++17 -arch=sm_80 -I{src} -O2 -c {f} -o unit{i:03d}.o",
                        "file": str(f)})
    (root / "build").mkdir(exist_ok=True)
    db = root / "build" / "compile_commands.json"
    db.write_text(json.dumps(entries, indent=1))
    return db, files


def samples_db(samples: Path, n: int, out: Path) -> tuple[Path, list[Path]]:
    """compile_commands.json (under `out`) for the first `n` sources of cuda-samples' 0_Introduction."""
    intro = samples / "Samples" / "0_Introduction"
    files = sorted(p for p in intro.rglob("*") if p.suffix in (".cu", ".cpp") and p.is_file())[:n]
    if not files:
        raise SystemExit(f"no .cu/.cpp files under {intro}")
    wheel = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages" \
        / "nvidia" / "cu13" / "include"
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for f in files:
        args = [NVCC, "-std=c++17", "-arch=sm_90", "-c", f"-I{f.parent}", f"-I{samples / 'Common'}"]
        if wheel.is_dir():
            args.append(f"-I{wheel}")
        entries.append({"directory": str(out), "arguments": [*args, str(f), "-o", str(out / "x.o")], "file": str(f)})
    db = out / "compile_commands.json"
    db.write_text(json.dumps(entries, indent=1))
    return db, files


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_scan(paths: list[Path], db: Path | None, jobs: int) -> tuple[float, float, str, str]:
    """(wall, CPU incl. workers, the `timings:` line, stdout head) of one `cudamigrate scan --no-cache`."""
    mode = ["--compile-commands", str(db)] if db is not None else ["--no-semantic"]
    cmd = [sys.executable, "-m", "cudamigrate", "scan", *map(str, paths), "--statistics", "--timings", "--no-cache",
           "-j", str(jobs), "--exit-zero", *mode]
    c0, t0 = _children_cpu(), time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    timing = next((ln for ln in p.stderr.splitlines() if "timings:" in ln), p.stderr[-500:])
    return wall, cpu, timing, " | ".join(ln.strip() for ln in p.stdout.splitlines()[:4])


def per_tu(db_path: Path, verbose: bool) -> None:
    """Sequential, in this process: the shared PCH, the first TU, then the median/mean of the others."""
    from cudamigrate.parse import clang as cl
    from cudamigrate.parse.clang_db import SemanticDB

    ok, why = cl.available()
    if not ok:
        print(f"per TU: semantic mode unavailable ({why})")
        return
    db = SemanticDB(cl.load_compile_db(db_path))
    c0, t0 = time.process_time(), time.perf_counter()
    db.build(jobs=1)
    total_wall, total_cpu = time.perf_counter() - t0, time.process_time() - c0
    rows = list(db.tu_timings.values())
    pch = db.timings.phases.get("pch", 0.0)
    print(f"per TU (sequential, in process): {len(rows)} TUs, {db.timings.counts.get('tus_with_pch', 0)} with the "
          f"shared PCH, {len(db.failed)} failed (scanned with tree-sitter); total {total_wall:.2f}s wall "
          f"{total_cpu:.2f}s cpu, of which PCH build {pch:.2f}s wall")
    if verbose:
        for r in rows:
            lang = "fail" if r.file in db.failed else ("pch" if r.pch_used else "-")
            print(f"  {Path(r.file).name:32s} {lang:4s} parse {r.parse_s:5.2f}s wall {r.parse_cpu_s:5.2f}s cpu  "
                  f"facts {r.facts_s:5.2f}s wall {r.facts_cpu_s:5.2f}s cpu")
    first, rest = rows[0], rows[1:]
    print(f"  first TU ({Path(first.file).name}): parse+facts {first.parse_s + first.facts_s:.2f}s wall "
          f"{first.parse_cpu_s + first.facts_cpu_s:.2f}s cpu")
    if not rest:
        return

    def stat(f) -> str:
        v = [f(r) for r in rest]
        return f"median {statistics.median(v):.2f}s mean {statistics.mean(v):.2f}s max {max(v):.2f}s"

    print(f"  other {len(rest)} TUs, parse+facts wall: {stat(lambda r: r.parse_s + r.facts_s)}")
    print(f"  other {len(rest)} TUs, parse+facts cpu:  {stat(lambda r: r.parse_cpu_s + r.facts_cpu_s)}")
    print(f"    libclang parse cpu: {stat(lambda r: r.parse_cpu_s)}")
    print(f"    fact extraction cpu: {stat(lambda r: r.facts_cpu_s)}")


def end_to_end(db: Path, files: list[Path], jobs_list: list[int], reps: int) -> None:
    n = len(files)
    for jobs in jobs_list:
        one: list[tuple[float, float]] = []
        every: list[tuple[float, float]] = []
        timing = ""
        for _ in range(reps):  # alternating, so a change of machine load hits both
            w, c, _t, _o = run_scan(files[:1], db, jobs)
            one.append((w, c))
            w, c, timing, _o = run_scan(files, db, jobs)
            every.append((w, c))
        w1, c1 = statistics.median(x[0] for x in one), statistics.median(x[1] for x in one)
        wn, cn = statistics.median(x[0] for x in every), statistics.median(x[1] for x in every)
        print(f"end to end, -j {jobs}, medians of {reps}: first TU alone {w1:.2f}s wall {c1:.2f}s cpu; "
              f"all {n} TUs {wn:.2f}s wall {cn:.2f}s cpu")
        if n > 1:
            print(f"  per TU after the first: {(wn - w1) / (n - 1):.2f}s wall {(cn - c1) / (n - 1):.2f}s cpu")
        print("  last " + timing.strip())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=Path, help="cuda-samples checkout (read only): time a database over it")
    ap.add_argument("--tus", type=int, default=20, help="with --samples: how many TUs")
    ap.add_argument("--files", type=int, default=200, help="without --samples: how many files to generate")
    ap.add_argument("--jobs", default="1,2", help="comma-separated -j values for the end-to-end runs")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--thrust", type=int, default=0, help="how many generated files also include <thrust/reduce.h>")
    ap.add_argument("--dir", type=Path, help="where the database (and generated files) go; default under /tmp")
    ap.add_argument("--verbose", action="store_true", help="print every TU's figures")
    ap.add_argument("--no-end-to-end", action="store_true")
    a = ap.parse_args()
    if a.samples:
        db, files = samples_db(a.samples, a.tus, a.dir or Path("/tmp/cudamigrate-bench-samples"))
    else:
        db, files = generate(a.dir or Path("/tmp/cudamigrate-bench"), a.files, a.thrust)
    print(f"database {db}: {len(files)} TUs; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    per_tu(db, a.verbose)
    if not a.no_end_to_end:
        jobs_list = [int(j) for j in a.jobs.split(",") if j]
        end_to_end(db, files, jobs_list, a.reps)
        if not a.samples:
            w, c, timing, head = run_scan([files[0].parent], None, jobs_list[-1])
            print(f"tree-sitter only, -j {jobs_list[-1]}: {w:.2f}s wall {c:.2f}s cpu; {timing.strip()}\n  {head}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
