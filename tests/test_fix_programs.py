"""Consistency groups of a type rename scoped by program (issue 31): CM511's `double4` is CUDA's in every
program of a tree, but a use one program cannot rewrite must not hold back another program's rename; a
whole-tree `fix` makes the union of the per-program fixes, and scan and fix's own list of what remains show a
withheld group's uses without a fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cudamigrate.read.project_index import ProjectIndex

from .conftest import FIXTURES
from .helpers import run_cli

PARTICLES = FIXTURES / "projects" / "consistency-keep-compat"  # its struct member cannot be wrapped in `#if`
HEAT = """// Another program of the tree: its double4 is CUDA's too, and every use of it can be rewritten.
#include <cuda_runtime.h>

__global__ void corners(double *out) {
  double4 c = make_double4(1.0, 2.0, 3.0, 4.0);
  out[threadIdx.x] = c.x + c.y + c.z + c.w;
}

int main() {
  double *out;
  cudaMalloc(&out, 4 * sizeof(double));
  corners<<<1, 4>>>(out);
  cudaDeviceSynchronize();
  cudaFree(out);
  return 0;
}
"""
HEAT_FIXED = HEAT.replace("""  double4 c = make_double4(1.0, 2.0, 3.0, 4.0);
""", """#if CUDART_VERSION >= 13000  /* cudamigrate: keep-compat 12.0 */
  double4_16a c = make_double4_16a(1.0, 2.0, 3.0, 4.0);
#else
  double4 c = make_double4(1.0, 2.0, 3.0, 4.0);
#endif
""")
FLAGS = ("--keep-compat", "12.0", "--select", "CM511")


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(PARTICLES, root / "particles", ignore=shutil.ignore_patterns("README.md"))
    (root / "heat").mkdir()
    (root / "heat" / "heat.cu").write_text(HEAT)
    return root


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_use_one_program_cannot_rewrite_does_not_hold_back_another(tmp_path):
    root = _tree(tmp_path)
    before = _files(root)
    r = run_cli("fix", *FLAGS, ".", cwd=root)
    after = _files(root)
    assert after["heat/heat.cu"] == HEAT_FIXED, r.stderr
    assert {k: v for k, v in after.items() if k != "heat/heat.cu"} == {k: v for k, v in before.items() if k != "heat/heat.cu"}
    note = next(ln for ln in r.stderr.splitlines() if "fix withheld" in ln)
    assert "`double4` (in the program of particles/main.cu)" in note and "heat" not in note, note
    assert run_cli("fix", *FLAGS, ".", cwd=root).stdout.endswith("Fixed 0 finding(s) in 0 file(s); 3 remaining.\n")
    assert _files(root) == after  # converges


def test_the_whole_tree_fix_is_the_union_of_the_per_program_fixes(tmp_path):
    root = _tree(tmp_path)
    whole = run_cli("fix", "--diff", *FLAGS, ".", cwd=root).stdout
    each = "".join(run_cli("fix", "--diff", *FLAGS, d, cwd=root).stdout for d in ("heat", "particles"))
    assert "+  double4_16a c = make_double4_16a(1.0, 2.0, 3.0, 4.0);" in whole
    assert whole.split("Remaining:")[0] == each.split("Remaining:")[0]  # (the diffs; each run then lists its own)


def test_scan_and_fix_show_the_withheld_program_without_a_fix(tmp_path):
    root = _tree(tmp_path)
    scan = run_cli("scan", "--no-cache", "--format", "concise", *FLAGS, ".", cwd=root).stdout
    assert scan.count("heat/heat.cu:5:") == 2 and "heat/heat.cu:5:3: CM511 [*]" in scan, scan
    assert "heat/heat.cu:5:15: CM511 [*]" in scan and "particles/main.cu:5:3: CM511 [ ]" in scan
    assert "particles/main.cu:5:15: CM511 [ ]" in scan and "[*]" not in scan.split("particles/", 1)[1]
    left = run_cli("fix", *FLAGS, ".", cwd=root).stdout.split("Remaining:")[1]
    assert "[*]" not in left and left.count("CM511 [ ]") == 3, left
    assert "No automatic fix: `double4` is fixed in every file or in none, and 1 use(s) cannot be rewritten " \
           "(particles/particle.h:7:3)." in left


def test_a_program_joins_includes_and_the_files_of_one_directory(tmp_path):
    for rel, text in (("a/main.cu", '#include "../shared/s.h"\n'), ("a/other.cu", ""), ("b/main.cu", ""),
                      ("c/main.cu", '#include "../shared/s.h"\n'), ("shared/s.h", ""), ("d/x.cu", "")):
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text(text)
    files = [tmp_path / p for p in ("a/main.cu", "a/other.cu", "b/main.cu", "c/main.cu", "d/x.cu")]
    idx = ProjectIndex(files=files)
    first = idx.program(tmp_path / "a/main.cu")
    assert first == (tmp_path / "a/main.cu").resolve()
    assert {idx.program(tmp_path / p) for p in ("a/other.cu", "c/main.cu", "shared/s.h")} == {first}
    assert idx.program(tmp_path / "b/main.cu") == (tmp_path / "b/main.cu").resolve()
    assert idx.program(tmp_path / "d/x.cu") == (tmp_path / "d/x.cu").resolve()
    assert idx.program(tmp_path / "elsewhere.cu") is None
    # for a symbol, only a header that spells it joins its includers: s.h never names double4
    assert idx.program(tmp_path / "c/main.cu", "double4") == (tmp_path / "c/main.cu").resolve()
    assert idx.program(tmp_path / "a/other.cu", "double4") == first  # (a directory is still one program)
    (tmp_path / "shared/s.h").write_text("struct P { double4 pos; };\n")
    assert ProjectIndex(files=files).program(tmp_path / "c/main.cu", "double4") == first


def test_a_common_header_that_never_names_the_type_ties_no_programs(tmp_path):
    """cuda-samples-like: every program includes one helper header; it does not use double4, so a program whose use
    cannot be rewritten does not hold back another's rename."""
    root = _tree(tmp_path)
    (root / "common").mkdir()
    (root / "common" / "helper.h").write_text("#pragma once\n#include <cstdio>\ninline void note() { std::puts(\"ok\"); }\n")
    for rel in ("particles/main.cu", "heat/heat.cu"):
        p = root / rel
        p.write_text('#include "../common/helper.h"\n' + p.read_text())
    run_cli("fix", *FLAGS, ".", cwd=root)
    assert (root / "heat" / "heat.cu").read_text() == '#include "../common/helper.h"\n' + HEAT_FIXED
    assert "double4 v = make_double4(1, 2, 3, 4);" in (root / "particles" / "main.cu").read_text()


@pytest.mark.nvcc
def test_the_program_fixed_beside_a_withheld_one_builds(tmp_path):
    from cudamigrate.toolcheck.build import compile_file

    root = _tree(tmp_path)
    run_cli("fix", *FLAGS, ".", cwd=root)
    for src in (root / "heat" / "heat.cu", root / "particles" / "main.cu"):
        built = compile_file(src, tmp_path / f"{src.stem}.o", arch="sm_75")
        assert built.ok, built.output
