"""A texture reference declared in both branches of an `#if`, read through a macro, bound through an
error-check macro, in a project of three files (fixtures/texture/project-macros).

textures.cuh declares `texIn` identically in `#ifdef TRIPLE` and `#else` (one object serves both),
`FETCH_IN(i)` reads it, main.cu binds it inside `CHECK(...)` and writes `CUERR` (a statement macro)
without `;` before a removed call. After `fix --unsafe-fixes` both configurations build with nvcc 13.0,
a second fix changes nothing, and on a GPU each prints its line of expected.txt.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudamigrate.toolcheck.build import compile_file

from .conftest import FIXTURES

PROJECT = FIXTURES / "texture" / "project-macros"
RULES = "CM501,CM601,CM602,CM603"
VARIANTS = [([], 0), (["-DTRIPLE"], 1)]  # flags, line of expected.txt


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudamigrate", *args], capture_output=True, text=True)


def _fixed(tmp_path: Path) -> Path:
    proj = tmp_path / "project"
    shutil.copytree(PROJECT, proj, ignore=shutil.ignore_patterns("expected.txt"))
    res = _cli("fix", "--unsafe-fixes", "--select", RULES, str(proj))
    assert res.returncode == 0, res.stdout + res.stderr
    return proj


def test_fix_migrates_both_branches_and_converges(tmp_path):
    proj = _fixed(tmp_path)
    hdr = (proj / "textures.cuh").read_text()
    assert "texture<" not in hdr.replace("was texture<", "")
    assert hdr.count("__constant__ cudaTextureObject_t texIn;") == 2  # one per branch
    assert "#define FETCH_IN(i) tex1Dfetch<float>(texIn, i)" in hdr
    main = (proj / "main.cu").read_text()
    assert "CHECK(cudamigrateBindTexture(0, &texIn_obj, &texIn, d_in" in main
    assert "CHECK(cudamigrateUnbindTexture(&texIn_obj));" in main
    assert "cudaThreadSynchronize" not in main  # found although it follows `CUERR` without `;`
    assert _cli("scan", "--select", RULES, str(proj)).returncode == 0
    once = {p.name: p.read_bytes() for p in proj.iterdir()}
    _cli("fix", "--unsafe-fixes", "--select", RULES, str(proj))
    assert {p.name: p.read_bytes() for p in proj.iterdir()} == once


@pytest.mark.nvcc
def test_both_configurations_build_after_fix(tmp_path):
    orig = compile_file(PROJECT / "main.cu", tmp_path / "before.o", link=False, include_dirs=[PROJECT])
    assert not orig.ok and "texture is not a template" in orig.output
    proj = _fixed(tmp_path)
    for flags, _ in VARIANTS:
        res = compile_file(proj / "main.cu", tmp_path / "main.o", link=False, include_dirs=[proj], flags=flags)
        assert res.ok, f"{' '.join(res.cmd)}\n{res.output[-4000:]}"


@pytest.mark.gpu
def test_both_configurations_run_after_fix(tmp_path):
    """Builds and runs each configuration; compares with expected.txt (skips without a GPU)."""
    from .conftest import gpu_available

    if shutil.which("nvcc") is None or not gpu_available():
        pytest.skip("needs nvcc and a GPU")
    proj = _fixed(tmp_path)
    want = (PROJECT / "expected.txt").read_text().splitlines()
    for flags, line in VARIANTS:
        exe = tmp_path / f"prog{line}.bin"
        res = compile_file(proj / "main.cu", exe, link=True, include_dirs=[proj], flags=flags)
        assert res.ok, res.output[-4000:]
        run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stdout + run.stderr
        assert run.stdout.strip() == want[line]


TWO_DIMS = """#include <cuda_runtime.h>
#if TREE_2D
texture<uint4, 2, cudaReadModeElementType> nodes;
#else
texture<uint4, 1, cudaReadModeElementType> nodes;
#endif
__device__ uint4 node_at(unsigned cur) {
#if TREE_2D
  return tex2D(nodes, cur & 0xFFFF, cur >> 16);
#else
  return tex1Dfetch(nodes, cur);
#endif
}
__global__ void walk(uint4 *out) { out[threadIdx.x] = node_at(threadIdx.x); }
int bind(cudaArray_t a, const uint4 *d, size_t bytes) {
#if TREE_2D
  return (int)cudaBindTextureToArray(nodes, a);
#else
  return (int)cudaBindTexture(0, nodes, d, bytes);
#endif
}
"""


@pytest.mark.nvcc
def test_branches_differing_in_dimension_migrate_and_build_both_ways(tmp_path):
    src = tmp_path / "tree.cu"
    src.write_text(TWO_DIMS)
    res = _cli("fix", "--unsafe-fixes", "--select", RULES, str(src))
    assert res.returncode == 0, res.stdout + res.stderr
    text = src.read_text()
    assert text.count("__constant__ cudaTextureObject_t nodes;") == 2
    assert "tex2D<uint4>(nodes" in text and "tex1Dfetch<uint4>(nodes" in text
    for flags in (["-DTREE_2D=1"], ["-DTREE_2D=0"]):
        built = compile_file(src, tmp_path / "tree.o", link=False, flags=flags)
        assert built.ok, built.output[-3000:]
