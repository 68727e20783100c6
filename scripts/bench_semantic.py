"""Generate an N-file CUDA project with a compile_commands.json and time both front ends.

    python scripts/bench_semantic.py --files 200 --jobs 2 [--dir /tmp/cm-bench] [--thrust 0]

Each file includes <cuda_runtime.h> and a shared project header, defines a kernel and
host code with legacy-stream calls (literal, variable, macro and created streams).
Prints the `--timings` line of `cudamigrate scan` in tree-sitter and semantic mode.
"""

from __future__ import annotations

import argparse
import json
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


def generate(root: Path, n: int, thrust: int) -> Path:
    src = root / "src"
    src.mkdir(parents=True, exist_ok=True)
    (src / "common.h").write_text(HEADER)
    entries = []
    for i in range(n):
        extra = "#include <thrust/reduce.h>" if i < thrust else ""
        f = src / f"unit{i:03d}.cu"
        f.write_text(SOURCE.format(i=i, extra_include=extra))
        entries.append({"directory": str(root / "build"),
                        "command": f"/usr/local/cuda-13.0/bin/nvcc -std=c++17 -arch=sm_80 -I{src} -O2 -c {f} -o unit{i:03d}.o",
                        "file": str(f)})
    (root / "build").mkdir(exist_ok=True)
    db = root / "build" / "compile_commands.json"
    db.write_text(json.dumps(entries, indent=1))
    return db


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--thrust", type=int, default=0, help="how many files also include <thrust/reduce.h>")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/cudamigrate-bench"))
    a = ap.parse_args()
    db = generate(a.dir, a.files, a.thrust)
    for mode in (["--no-semantic"], ["--compile-commands", str(db)]):
        cmd = [sys.executable, "-m", "cudamigrate", "scan", str(a.dir / "src"), "--statistics", "--timings",
               "-j", str(a.jobs), "--exit-zero", *mode]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        timing = [ln for ln in p.stderr.splitlines() if "timings:" in ln]
        print(f"{'semantic' if len(mode) > 1 else 'tree-sitter'}: wall {wall:.2f}s for {a.files + 1} files "
              f"({(a.files + 1) / wall:.1f} files/s)")
        print("  " + (timing[0] if timing else p.stderr[-500:]))
        print("  " + " | ".join(ln.strip() for ln in p.stdout.splitlines()[:4]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
