#!/usr/bin/env python3
"""Measure the HTML report at scale: synthesize sources with N findings, scan them, write the report,
then load it in headless Chromium and read the page's own timings.

    python scripts/report_bench.py --findings 50000 [--keep DIR]

Prints file size, scan and render time, and the page's timings (data-render-ms: from navigation
start to the end of the first table render; data-table-ms: one filter + table render).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PER_FILE = 100
HEAD = """#include <cuda_runtime.h>
__global__ void k(float *x) { x[0] = 1; }
void work(float *d, float *h, size_t n, cudaEvent_t ev) {
  cudaStream_t s;
  cudaStreamCreate(&s);
"""
LINES = [
    "  cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, 0);  // copy {i}",
    "  k<<<1, 1>>>(d);  // launch {i}",
    "  cudaMemsetAsync(d, {i}, n);",
    "  for (int j = 0; j < {i}; ++j) cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost);",
]


def synthesize(root: Path, findings: int) -> None:
    files = (findings + PER_FILE - 1) // PER_FILE
    left = findings
    for f in range(files):
        d = root / f"dir{f % 20:02d}" / f"sub{f % 7}"
        d.mkdir(parents=True, exist_ok=True)
        n = min(PER_FILE, left)
        left -= n
        body = "\n".join(LINES[i % len(LINES)].format(i=i) for i in range(n))
        (d / f"file{f:05d}.cu").write_text(HEAD + body + "\n}\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--findings", type=int, default=50000)
    ap.add_argument("--keep", type=Path, default=None)
    ap.add_argument("--jobs", default="2")
    a = ap.parse_args()
    from click.testing import CliRunner

    from cudamigrate.cli.main import main as cli
    from tests.browser import chromium_binary, load

    work = a.keep or Path(tempfile.mkdtemp(prefix="cm-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    src = work / "src"
    if not src.exists():
        synthesize(src, a.findings)
    out = work / "report.html"
    t = time.perf_counter()
    r = CliRunner().invoke(cli, ["scan", str(src), "--report", "html", "-o", str(out), "--jobs", a.jobs])
    scan_s = time.perf_counter() - t
    if r.exit_code not in (0, 1):
        print(r.output, file=sys.stderr)
        return 2
    size = out.stat().st_size
    import json
    import re

    m = re.search(r'<script type="application/json" id="cm-data">(.*?)</script>', out.read_text(), re.S)
    n = len(json.loads(m.group(1))["findings"])
    print(f"findings {n}, report {size / 1e6:.1f} MB, scan+render {scan_s:.1f} s ({work})")
    if chromium_binary() is None:
        print("no chromium: browser figures skipped")
        return 0
    for frag in ("", "#q=cudaMemcpyAsync&sort=file", "#rule=CM102&open=1"):
        t = time.perf_counter()
        page = load(out.as_uri() + frag, work / "profile", budget_ms=60000, timeout=600)
        wall = time.perf_counter() - t
        attrs = {k: page.body_attr(k) for k in ("data-ready", "data-shown", "data-rows", "data-render-ms", "data-script-ms", "data-table-ms")}
        print(f"load {frag or '(no filter)'}: chromium wall {wall:.1f} s, {attrs}, console {page.console[:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
