#!/usr/bin/env python3
"""Time `cudamigrate scan` on a synthetic corpus with and without the generated catalog rules.

    python scripts/bench_catalog_scan.py [--files 300] [--jobs 1] [--repeat 3]

The corpus (written to a temp dir) is a few hundred CUDA/C++ files of ~250 lines: kernels, runtime
calls, Thrust/CUB code; one file in ten uses a catalogued API. Reports wall time of a full scan
(`--select streams` = the rules before the catalog, then all rules), and of the prefilter regex alone
(flat alternation vs the prefix-factored one the engine builds).
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudamigrate.scan.engine import Engine, Options, _keyword_regex  # noqa: E402
from cudamigrate.knowledge.load import load_rules  # noqa: E402
from cudamigrate.pipeline.runner import EngineSpec, scan_files  # noqa: E402

BODY = """
__global__ void scale_{i}(float* __restrict__ out, const float* __restrict__ in, int n, float a) {{
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = idx; k < n; k += blockDim.x * gridDim.x) {{
    float v = in[k];
    out[k] = a * v + (v > 0.f ? v : -v);
  }}
}}

static void check_{i}(cudaError_t e, const char* what) {{
  if (e != cudaSuccess) {{
    fprintf(stderr, "%s: %s\\n", what, cudaGetErrorString(e));
    exit(1);
  }}
}}

int run_{i}(int n) {{
  float *d_in = nullptr, *d_out = nullptr;
  std::vector<float> h(n, 1.0f);
  check_{i}(cudaMalloc(&d_in, n * sizeof(float)), "malloc in");
  check_{i}(cudaMalloc(&d_out, n * sizeof(float)), "malloc out");
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  check_{i}(cudaMemcpyAsync(d_in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice, s), "copy");
  scale_{i}<<<(n + 255) / 256, 256, 0, s>>>(d_out, d_in, n, 2.0f);
  thrust::device_ptr<float> p(d_out);
  float sum = thrust::reduce(thrust::cuda::par.on(s), p, p + n, 0.0f, thrust::plus<float>());
  cudaStreamSynchronize(s);
  cudaFree(d_in);
  cudaFree(d_out);
  cudaStreamDestroy(s);
  return sum > 0 ? 0 : 1;
}}
"""

LEGACY = [
    "  cudaDeviceProp prop; cudaGetDeviceProperties_v2(&prop, 0);\n",
    "  int lane = cub::LaneId(); (void)lane;\n",
    "  size_t sz = 0; nvrtcGetNVVMSize(prog, &sz);\n",
    "  cusparseScsrcolor(handle, m, nnz, descr, v, rp, ci, &frac, &nc, col, re, info);\n",
]


def make_corpus(root: Path, files: int, seed: int = 1) -> list[Path]:
    rnd = random.Random(seed)
    out = []
    for f in range(files):
        parts = ["#include <cstdio>\n#include <cstdlib>\n#include <vector>\n#include <cuda_runtime.h>\n"
                 "#include <thrust/reduce.h>\n#include <thrust/device_ptr.h>\n#include <thrust/execution_policy.h>\n"]
        for i in range(6):
            parts.append(BODY.format(i=i))
        if f % 10 == 0:
            parts.append("void legacy() {\n" + rnd.choice(LEGACY) + "}\n")
        p = root / f"f{f:04d}.cu"
        p.write_text("".join(parts), encoding="utf-8")
        out.append(p)
    return out


def time_scan(rules, select, files, jobs, repeat):
    opts = Options(select=select)
    eng = Engine(rules, opts)
    spec = EngineSpec([Path(__file__).resolve().parent.parent / "rules"], opts, None)
    times = []
    nf = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        nf = sum(len(r.findings) for r in scan_files(eng, spec, files, jobs, None))
        times.append(time.perf_counter() - t0)
    return statistics.median(times), nf, len(eng.rules), len(eng.by_keyword)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    rules = load_rules().rules
    with tempfile.TemporaryDirectory() as tmp:
        files = make_corpus(Path(tmp), a.files)
        size = sum(p.stat().st_size for p in files)
        print(f"corpus: {len(files)} files, {size / 1e6:.1f} MB")
        for label, sel in (("streams rules only (before the catalog)", ["streams"]), ("all rules (with catalog)", None)):
            t, nf, nr, nk = time_scan(rules, sel, files, a.jobs, a.repeat)
            print(f"{label:42s} {nr:4d} rules {nk:5d} keywords  {t:6.2f} s  ({nf} findings)")
        eng = Engine(rules, Options())
        words = [k for k in eng.by_keyword if "*" not in k]
        flat = re.compile(rb"\b(" + b"|".join(re.escape(k.encode()) for k in sorted(words, key=len, reverse=True)) + rb")\b")
        trie = _keyword_regex(words, [])
        data = [p.read_bytes() for p in files]
        for label, rx in (("prefilter, flat alternation", flat), ("prefilter, prefix-factored (engine)", trie)):
            t0 = time.perf_counter()
            hits = sum(len(set(rx.findall(d))) for d in data)
            print(f"{label:42s} {len(words):5d} words  {time.perf_counter() - t0:6.2f} s  ({hits} distinct hits)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
