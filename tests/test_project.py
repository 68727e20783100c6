"""A whole legacy project: does not build with nvcc 13.0, builds after `cudamigrate fix --unsafe-fixes`,
and a second fix changes nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FIXTURES, gpu_available

pytestmark = pytest.mark.nvcc

PROJECT = FIXTURES / "projects" / "legacy-app"


def _build(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(root / "build.sh")], capture_output=True, text=True, timeout=900)


def _fix(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudamigrate", "fix", "--unsafe-fixes", str(root)],
                          capture_output=True, text=True, timeout=300)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and "build" not in p.parts}


def test_legacy_app_builds_only_after_fix(tmp_path):
    root = tmp_path / "legacy-app"
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns("build"))
    before = _build(root)
    assert before.returncode != 0, "the legacy project must not build with nvcc 13.0 before the fix"
    for err in ("cudaThreadSynchronize", "clockRate", "cudaMemLocation", "cudaGraphEdgeData", "float_as_int",
                "CUB_QUOTIENT_CEILING"):
        assert err in before.stdout + before.stderr, f"expected a build error about {err}"
    fixed = _fix(root)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr  # no findings remain
    after = _build(root)
    assert after.returncode == 0, after.stdout + after.stderr
    snap = _snapshot(root)
    again = _fix(root)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Fixed 0 finding(s) in 0 file(s)" in again.stdout
    assert _snapshot(root) == snap
    if gpu_available() and not os.environ.get("CUDAMIGRATE_NO_GPU"):
        run = subprocess.run([str(root / "build" / "legacy-app")], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 and "PASS" in run.stdout, run.stdout + run.stderr


def test_index_keys_resolve_like_realpath(tmp_path):
    """ProjectIndex._key resolves a directory once and appends names that are no links: the same paths as
    `Path.resolve` for links to directories and files, relative links, `..` and files that do not exist."""
    from cudamigrate.read.project_index import ProjectIndex, _key

    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.h").write_text("int a;\n")
    os.symlink(tmp_path / "real", tmp_path / "link")
    os.symlink(tmp_path / "real" / "a.h", tmp_path / "real" / "b.h")
    os.symlink("../real/a.h", tmp_path / "real" / "c.h")
    ix = ProjectIndex()
    paths = [tmp_path / "link" / n for n in ("a.h", "b.h", "c.h", "missing.h")]
    paths += [tmp_path / "link" / ".." / "real" / "a.h", tmp_path / "link" / "sub" / ".." / "a.h", tmp_path / "link",
              Path("relative/x.h"), Path("."), Path("/")]
    for p in paths:
        assert ix._key(p) == _key(p), p
    assert ix._key(tmp_path / "link" / "b.h") == (tmp_path / "real" / "a.h").resolve()
