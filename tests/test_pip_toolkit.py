"""nvcc of the target release from NVIDIA's wheels (cudamigrate/core/pip_toolkit.py): located only when the pinned
set is installed, put first on PATH, and, end to end (marked `install`: it downloads about 350 MB of wheels
once into ~/.cache/cudamigrate/toolkits), `fix --target-cuda 13.5` verified by nvcc 13.5 on a machine whose
toolkit is 13.0: the only nvcc on PATH is the wheels'."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudamigrate.core import pip_toolkit

ROOT = Path(__file__).resolve().parent.parent


def _fake_install(root: Path, release: str, specs: tuple[str, ...]) -> Path:
    nvcc = root / release / "nvidia" / "cu13" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("#!/bin/sh\n")
    (root / release / ".cudamigrate-wheels").write_text("\n".join(specs) + "\n")
    return nvcc


def test_installed_needs_exactly_the_pinned_wheels(tmp_path):
    assert pip_toolkit.installed("13.5", tmp_path) is None
    nvcc = _fake_install(tmp_path, "13.5", pip_toolkit.WHEELS["13.5"])
    assert pip_toolkit.installed("13.5", tmp_path) == nvcc
    (tmp_path / "13.5" / ".cudamigrate-wheels").write_text("nvidia-cuda-nvcc==13.5.0\n")  # another set: install again
    assert pip_toolkit.installed("13.5", tmp_path) is None


def test_unknown_release_is_a_one_line_error(tmp_path):
    with pytest.raises(pip_toolkit.ToolkitError, match=r"no pinned compiler wheels for CUDA 12\.3 \(known: 13\.5\)"):
        pip_toolkit.install("12.3", tmp_path)


def test_path_with_puts_the_wheels_nvcc_first_once():
    nvcc = Path("/c/13.5/nvidia/cu13/bin/nvcc")
    assert pip_toolkit.path_with(nvcc, "/usr/local/cuda-13.0/bin:/c/13.5/nvidia/cu13/bin:/usr/bin") == (
        "/c/13.5/nvidia/cu13/bin:/usr/local/cuda-13.0/bin:/usr/bin")


@pytest.mark.install
def test_fix_target_13_5_is_verified_by_nvcc_13_5_from_the_wheels(tmp_path):
    try:
        nvcc = pip_toolkit.install("13.5")
    except pip_toolkit.ToolkitError as e:
        if "Could not find a version" in str(e) or "connection" in str(e).lower():
            pytest.skip(f"package index not reachable: {e}")
        raise
    version = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True).stdout
    assert "release 13.5" in version, version
    # the only nvcc on PATH is the wheels': no /usr/local/cuda-13.0/bin
    path = pip_toolkit.path_with(nvcc, os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                                      if p and not (Path(p) / "nvcc").exists()))
    env = dict(os.environ, PATH=path, CUDAMIGRATE_NO_CACHE="1", PYTHONPATH=str(ROOT))
    env.pop("CUDA_HOME", None)
    env.pop("CUDA_PATH", None)
    assert shutil.which("nvcc", path=path) == str(nvcc)
    doctor = subprocess.run([sys.executable, "-m", "cudamigrate", "doctor", "--target-cuda", "13.5", "--format", "json"],
                            capture_output=True, text=True, env=env, cwd=tmp_path)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["nvcc"]["status"] == "ok" and checks["nvcc"]["found"] == f"13.5 ({nvcc})", checks["nvcc"]
    app = tmp_path / "legacy-app"
    shutil.copytree(ROOT / "examples" / "legacy-app", app)
    report = tmp_path / "verify.json"
    # --unsafe-fixes: with safe fixes alone two units keep removed APIs, compile neither before nor after and are
    # unverified, which --require-verify refuses (exit 2, nothing written)
    fix = subprocess.run([sys.executable, "-m", "cudamigrate", "fix", "--unsafe-fixes", "--target-cuda", "13.5",
                          "--require-verify",
                          "--verify-report", str(report), "legacy-app"], capture_output=True, text=True, env=env,
                         cwd=tmp_path)
    assert fix.returncode in (0, 1), fix.stderr[-2000:]
    got = json.loads(report.read_text())
    assert got["units"] >= 3 and got["verified"] == got["units"] and got["compiles"] >= got["units"], got
    # nvcc 13.5 compiled every fixed unit, the JIT one among them
    assert any(u["unit"].endswith("jit.cpp") and u["compiles_after"] for u in got["per_unit"]), got["per_unit"]


def test_a_cache_from_an_earlier_pin_set_gets_only_the_profiler_api_and_nvtx_wheels(tmp_path, monkeypatch):
    """13.x's cuda_profiler_api.h ships in nvidia-cuda-profiler-api and nvtx3/ in nvidia-nvtx (cuda-toolkit 13.5.0
    pins both at 13.5.25); a cache of the five compiler wheels gets those two added, the rest is not fetched again."""
    old = ("nvidia-cuda-nvcc==13.5.37", "nvidia-nvvm==13.5.37", "nvidia-cuda-crt==13.5.37",
           "nvidia-cuda-runtime==13.5.37", "nvidia-cuda-cccl==13.3.5.0.6")
    nvcc = _fake_install(tmp_path, "13.5", old)
    assert pip_toolkit.installed("13.5", tmp_path) is None
    ran: list[list[str]] = []

    def fake_pip(cmd, **kw):  # what `pip install --target T` of the two wheels leaves in T
        ran.append(cmd)
        inc = Path(cmd[cmd.index("--target") + 1]) / "nvidia" / "cu13" / "include"
        inc.mkdir(parents=True)
        (inc / "cuda_profiler_api.h").write_text("\n")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(pip_toolkit.subprocess, "run", fake_pip)
    assert pip_toolkit.install("13.5", tmp_path) == nvcc
    assert len(ran) == 1 and ran[0][-2:] == ["nvidia-cuda-profiler-api==13.5.25", "nvidia-nvtx==13.5.25"]
    # pip's --upgrade replaces the nvidia/ it installs into: the two wheels go elsewhere, then join the set
    assert ran[0][ran[0].index("--target") + 1] != str(tmp_path / "13.5")
    assert (tmp_path / "13.5" / "nvidia" / "cu13" / "include" / "cuda_profiler_api.h").is_file()
    assert sorted(p.name for p in (tmp_path / "13.5").iterdir()) == [".cudamigrate-wheels", "nvidia"]
    assert pip_toolkit.installed("13.5", tmp_path) == nvcc
