"""Scan throughput and memory on a generated tree: prints figures, asserts nothing.

    python bench/scan_speed.py [--files 2000] [--lines 300] [--jobs N]
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SNIPPETS = [
    "  cudaMemcpyAsync(d_{i}, h_{i}, n * sizeof(float), cudaMemcpyHostToDevice, 0);\n",
    "  kernel_{i}<<<grid, block>>>(d_{i}, n);\n",
    "  cudaThreadSynchronize();\n",
    "  for (int j = 0; j < n; ++j) acc_{i} += h_{i}[j] * 0.5f;\n",
    "  int v_{i} = compute(n, {i});\n",
    "  // plain comment about stream 0 and cudaMemcpy\n",
    "  std::vector<float> buf_{i}(n);\n",
]


def make_tree(root: Path, files: int, lines: int, seed: int = 1) -> int:
    rnd = random.Random(seed)
    total = 0
    for f in range(files):
        sub = root / f"dir{f % 20}"
        sub.mkdir(parents=True, exist_ok=True)
        body = ["#include <cuda_runtime.h>\n", f"__global__ void kernel_{f}(float* x, int n) {{ x[0] = n; }}\n",
                f"int host_{f}(float* d_{f}, float* h_{f}, int n) {{\n  float acc_{f} = 0; dim3 grid(1), block(1);\n"]
        # a third of the files are plain C++ without CUDA keywords (the prefilter skips them)
        plain = f % 3 == 0
        for _ in range(lines):
            s = rnd.choice(SNIPPETS[3:] if plain else SNIPPETS)
            body.append(s.format(i=f))
        body.append("  return 0;\n}\n")
        text = "".join(body)
        if plain:
            text = text.replace("cuda_runtime.h", "vector").replace("__global__ ", "").replace("<<<", "(").replace(">>>", ")")
        (sub / (f"f{f}.cpp" if plain else f"f{f}.cu")).write_text(text)
        total += len(body)
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--lines", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=None)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cudamigrate-bench-"))
    try:
        n_lines = make_tree(tmp, a.files, a.lines)
        cmd = [sys.executable, "-m", "cudamigrate", "scan", "--exit-zero", "--statistics", str(tmp)]
        if a.jobs:
            cmd += ["--jobs", str(a.jobs)]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        findings = sum(int(line.split()[0]) for line in p.stdout.splitlines() if line.strip())
        print(f"files={a.files} lines={n_lines} findings={findings} wall={dt:.2f}s "
              f"throughput={n_lines / dt:,.0f} lines/s {a.files / dt:,.0f} files/s peak_rss_per_process={rss:.0f} MiB")
        if p.returncode not in (0, 1):
            print(p.stderr[-2000:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
