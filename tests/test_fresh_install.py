"""`pip install` of the built wheel into a fresh virtual environment gives semantic mode, with no system package.

The done-when check of issue 25, end to end: build cudamigrate's wheel, create an empty venv, `pip install` the
wheel (its dependencies from the package index, libclang-ng among them), then in that venv `cudamigrate doctor`
reports semantic mode ready and `cudamigrate scan --compile-commands build/compile_commands.json` runs in
semantic mode with no fallback warning (CM590, which only semantic mode can report, is found). Nothing of the
development venv is visible there (`PYTHONPATH` is cleared). About a minute on 2 cores; skipped only where the
package index cannot be reached (scripts/check-test-log.sh fails CI if it is skipped).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CUDA = Path("/usr/local/cuda-13.0/include/cuda_runtime.h")

pytestmark = pytest.mark.install


def _run(cmd: list[str], cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["CUDAMIGRATE_NO_CACHE"] = "1"
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(not CUDA.is_file(), reason=f"no CUDA toolkit headers at {CUDA}")
def test_pip_install_gives_semantic_mode_with_no_system_package(tmp_path):
    wheels = tmp_path / "wheels"
    src = tmp_path / "src"
    # the checkout without its venvs and caches, so the build sees the tracked sources only
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.pyc", ".pytest_cache",
                                                               ".mypy_cache", ".ruff_cache", "build", "dist", "*.whl"))
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(src), "-w", str(wheels)])
    if built.returncode != 0 and "Could not find a version" in built.stderr + built.stdout:
        pytest.skip("package index not reachable (hatchling for the build)")
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next(wheels.glob("cudamigrate-*.whl"))
    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)]).returncode == 0
    py = venv / "bin" / "python"
    inst = _run([str(py), "-m", "pip", "install", "-q", str(wheel)])
    if inst.returncode != 0 and ("Could not find a version" in inst.stderr or "NewConnectionError" in inst.stderr):
        pytest.skip(f"package index not reachable: {inst.stderr.strip().splitlines()[-1]}")
    assert inst.returncode == 0, inst.stderr[-2000:]
    listed = _run([str(py), "-m", "pip", "list", "--format", "json"]).stdout
    names = {d["name"].lower() for d in json.loads(listed)}
    assert "libclang-ng" in names and "libclang" not in names, names

    proj = tmp_path / "proj"
    (proj / "build").mkdir(parents=True)
    a = proj / "a.cu"
    a.write_text("#include <cuda_runtime.h>\n"
                 "int main() { cudaSharedMemConfig c; return (int)cudaDeviceGetSharedMemConfig(&c); }\n")
    (proj / "build" / "compile_commands.json").write_text(json.dumps([{
        "directory": str(proj), "file": str(a),
        "arguments": ["nvcc", "-std=c++17", "-arch=sm_90", "-c", str(a), "-o", "a.o"]}]))
    exe = venv / "bin" / "cudamigrate"
    doc = _run([str(exe), "doctor", "--format", "json"], cwd=proj)
    checks = {c["name"]: c for c in json.loads(doc.stdout)["checks"]}
    lib = checks["libclang"]
    assert lib["status"] == "ok" and "semantic mode ready" in lib["note"], lib
    assert str(venv) in lib["found"] and "/usr/lib/llvm" not in lib["found"], lib
    assert checks["compile database"]["status"] == "ok", checks["compile database"]
    scan = _run([str(exe), "scan", "--compile-commands", "build/compile_commands.json", "a.cu", "--format", "json",
                 "--select", "CM590"], cwd=proj)
    assert scan.returncode == 1, scan.stderr
    assert "warning" not in scan.stderr and "tree-sitter only" not in scan.stderr, scan.stderr
    assert [f["rule"] for f in json.loads(scan.stdout)["findings"]] == ["CM590"]
