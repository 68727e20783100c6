"""The multi-file texture-reference program under fixtures/texture/project migrates and builds.

References are declared in a header (textures.cuh), read by two kernels and a __device__ helper in
another header (kernels.cuh) and bound, re-bound and unbound by host code in main.cu. Before the fix
nvcc 13.0 rejects it; after `cudamigrate fix --unsafe-fixes` every translation unit compiles, whichever
file is fixed first (the migrated header keeps a marker the including files are read against).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudamigrate.toolcheck.build import compile_file

from .conftest import FIXTURES

PROJECT = FIXTURES / "texture" / "project"
SOURCES = ["main.cu", "reference.cpp"]
RULES = "CM601,CM602,CM603"


def _fix(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudamigrate", "fix", "--unsafe-fixes", "--select", RULES,
                           *map(str, paths)], capture_output=True, text=True)


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "project"
    shutil.copytree(PROJECT, dst, ignore=shutil.ignore_patterns("expected.txt"))
    return dst


def _scan(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudamigrate", "scan", "--select", RULES, str(path)],
                          capture_output=True, text=True)


def test_project_fix_leaves_no_findings(tmp_path):
    proj = _copy(tmp_path)
    before = _scan(proj)
    assert "CM601" in before.stdout and before.returncode != 0
    res = _fix(proj)
    assert res.returncode == 0, res.stdout + res.stderr
    after = _scan(proj)
    assert after.returncode == 0, after.stdout + after.stderr
    text = (proj / "textures.cuh").read_text()
    assert "__constant__ cudaTextureObject_t texSignal;" in text
    assert "tex1Dfetch<float>(texSignal" in (proj / "kernels.cuh").read_text()
    main = (proj / "main.cu").read_text()
    assert main.count("#define CUDAMIGRATE_TEXOBJ_HELPERS") == 1
    assert "cudamigrateBindTexture(&offset, &texSignal_obj, &texSignal" in main


def test_project_fix_header_first_gives_same_result(tmp_path):
    a = _copy(tmp_path / "a")
    b = _copy(tmp_path / "b")
    assert _fix(a).returncode == 0
    assert _fix(b / "textures.cuh").returncode == 0  # the header first: the others read its marker
    assert _fix(b).returncode == 0
    for f in ("main.cu", "kernels.cuh", "textures.cuh"):
        assert (a / f).read_text() == (b / f).read_text(), f


@pytest.mark.nvcc
def test_project_builds_only_after_fix(tmp_path):
    proj = _copy(tmp_path)
    out = tmp_path / "obj"
    out.mkdir()
    res = compile_file(proj / "main.cu", out / "main-before.o", link=False, include_dirs=[proj])
    assert not res.ok
    assert "texture is not a template" in res.output
    assert _fix(proj).returncode == 0
    for src in SOURCES:
        res = compile_file(proj / src, out / (src + ".o"), link=False, include_dirs=[proj])
        assert res.ok, f"{' '.join(res.cmd)}\n{res.output[-4000:]}"


@pytest.mark.gpu
def test_project_runs_after_fix(tmp_path):
    """Links the migrated program and compares its output with expected.txt (skips without a GPU)."""
    from .conftest import gpu_available

    if shutil.which("nvcc") is None or not gpu_available():
        pytest.skip("needs nvcc and a GPU")
    proj = _copy(tmp_path)
    assert _fix(proj).returncode == 0
    exe = tmp_path / "project.bin"
    res = compile_file(proj / "main.cu", exe, link=True, include_dirs=[proj], flags=[str(proj / "reference.cpp")])
    assert res.ok, res.output[-4000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == (PROJECT / "expected.txt").read_text().strip()
