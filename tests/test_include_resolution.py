"""`#include "x.h"` resolved without a compile database: two projects scanned together often have headers of the
same name; the includer's own project wins, and a true tie is left unresolved rather than guessed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cudamigrate.read.project_index import ProjectIndex, nearest

HEADER = """#pragma once
#include <cuda_runtime.h>
struct GpuInfo {
  {TYPE} m_props;
  int query(int dev);
};
"""
SOURCE = """#include "gpu_info.h"
int GpuInfo::query(int dev) {
  if (cudaGetDeviceProperties(&m_props, dev) != cudaSuccess) return 1;
  return m_props.computeMode;
}
"""


def _project(root: Path, name: str, member_type: str) -> Path:
    (root / name / "include").mkdir(parents=True)
    (root / name / "src").mkdir()
    (root / name / "include" / "gpu_info.h").write_text(HEADER.replace("{TYPE}", member_type))
    src = root / name / "src" / "gpu_info.cu"
    src.write_text(SOURCE)
    return src


def test_the_includers_own_project_header_wins(tmp_path):
    a = _project(tmp_path, "a", "cudaDeviceProp")
    b = _project(tmp_path, "b", "MyProps")
    files = sorted(tmp_path.rglob("*.*"))
    idx = ProjectIndex(files=files)
    assert idx.resolve(a, "gpu_info.h") == (tmp_path / "a" / "include" / "gpu_info.h").resolve()
    assert idx.resolve(b, "gpu_info.h") == (tmp_path / "b" / "include" / "gpu_info.h").resolve()
    # what a user sees: the removed field is found in `a` (its member is a cudaDeviceProp), not in `b`
    p = subprocess.run([sys.executable, "-m", "cudamigrate", "scan", str(tmp_path), "--select", "CM503",
                        "--format", "json", "--no-cache"], capture_output=True, text=True)
    found = {Path(f["path"]).parts[-3] for f in json.loads(p.stdout)["findings"]}
    assert found == {"a"}, p.stdout[-2000:]


def test_a_tie_stays_unresolved(tmp_path):
    inc = tmp_path / "shared" / "src" / "x.cu"
    h1 = tmp_path / "shared" / "one" / "gpu_info.h"
    h2 = tmp_path / "shared" / "two" / "gpu_info.h"
    assert nearest(inc, [h1, h2]) is None
    assert nearest(inc, [h1]) == h1
    assert nearest(inc, []) is None


def test_an_include_of_a_symlink_loop_is_no_internal_error(tmp_path):
    """`#include "loop.h"` where loop.h is a link to itself (and the run's file list holding it): Path.resolve
    raises RuntimeError there before Python 3.13, and every file that included it, or whose matchers looked
    through the run's files (a texture getter's program, includers' macros, stream headers), was an internal
    error. Only loop.h itself, which cannot be read, is an error."""
    from .helpers import run_cli
    from .test_texture_getters import _tree

    root = _tree(tmp_path)
    (root / "loop.h").symlink_to("loop.h")
    for name in ("main.cu", "lut.cu"):
        (root / name).write_text('#include "loop.h"\n' + (root / name).read_text())
    (root / "inc.cu").write_text('#include "loop.h"\n#define ulong4 uint4\n#include "k.cu"\n')
    (root / "k.cu").write_text('#include "loop.h"\n__global__ void k(ulong4 *p) {}\n#define GPU(fn) cuda##fn\n'
                               "void f() { GPU(ThreadSynchronize)(); cudaStreamSynchronize(0); }\n")
    r = run_cli("scan", "--no-semantic", "--no-cache", "--format", "json", "--exit-zero", ".", cwd=root)
    assert [ln for ln in r.stderr.splitlines() if "error" in ln or "loop" in ln] == [
        "cudamigrate: loop.h: cannot read: Too many levels of symbolic links"]
    found = {(f["path"], f["rule"]) for f in json.loads(r.stdout)["findings"]}
    assert {("k.cu", "CM501"), ("lut.cu", "CM601"), ("main.cu", "CM603")} <= found
