"""`cudamigrate doctor`: parsing of nvcc / nvidia-smi / headers, and the --require-* blocker logic.

Fake `nvcc` and `nvidia-smi` scripts go first on PATH; a fake toolkit (CUDA_HOME) holds version headers.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudamigrate.toolcheck import doctor as dr
from cudamigrate.cli.main import main


def _script(d: Path, name: str, body: str) -> None:
    p = d / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def fake_env(tmp_path, monkeypatch):
    """A PATH with a fake nvcc 12.8 and (optionally, via the returned function) a fake nvidia-smi."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    cuda = tmp_path / "cuda"
    (cuda / "include" / "cccl" / "cuda" / "std" / "__cccl").mkdir(parents=True)
    (cuda / "lib64").mkdir()
    (cuda / "include" / "cuda_runtime_api.h").write_text("#define CUDART_VERSION  12080\n")
    (cuda / "include" / "cublas_api.h").write_text(
        "#define CUBLAS_VER_MAJOR 12\n#define CUBLAS_VER_MINOR 8\n#define CUBLAS_VER_PATCH 4\n")
    (cuda / "include" / "cccl" / "cuda" / "std" / "__cccl" / "version.h").write_text("#define CCCL_VERSION 2008002\n")
    (cuda / "lib64" / "libcublas.so.12").write_bytes(b"")
    (cuda / "lib64" / "libnvrtc.so.12").write_bytes(b"")
    _script(bin_, "nvcc", "echo 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
                          "echo 'Cuda compilation tools, release 12.8, V12.8.93'\n")
    monkeypatch.setenv("PATH", f"{bin_}:/usr/bin:/bin")
    monkeypatch.setenv("CUDA_HOME", str(cuda))

    def with_gpu(driver: str) -> None:
        _script(bin_, "nvidia-smi", f"echo 'NVIDIA H200, {driver}, 9.0'\n")

    return with_gpu


def invoke(*args):
    return CliRunner().invoke(main, ["doctor", *args], catch_exceptions=False)


def by_name(data):
    return {c["name"]: c for c in data["checks"]}


def test_parsers():
    assert dr.parse_nvcc_version("Cuda compilation tools, release 13.0, V13.0.88") == (13, 0)
    assert dr.parse_nvcc_version("garbage") is None
    assert dr.parse_smi("NVIDIA H200, 580.95.05, 9.0\nNVIDIA H200, 580.95.05, 9.0\n")[0] == {
        "name": "NVIDIA H200", "driver": "580.95.05", "compute_cap": "9.0"}
    assert dr.parse_smi("No devices were found\n") == []
    assert dr.min_driver_for((13, 0)) == 580 and dr.min_driver_for((12, 4)) == 525


def test_no_gpu_says_so_and_exits_0(fake_env):
    r = invoke("--require-driver", "580", "--format", "json", "--target-cuda", "13.0")  # not nvcc's 12.8, the default
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    c = by_name(data)
    assert c["driver"]["status"] == "skip" and "no GPU" in c["driver"]["found"]
    assert "--require-driver 580 not checked" in c["driver"]["note"]
    assert c["nvcc"]["found"].startswith("12.8") and c["nvcc"]["status"] == "warn"  # older than the 13.0 target
    assert c["CUDA runtime"]["found"].startswith("12.8 (toolkit")
    assert c["cuBLAS"]["found"].startswith("12.8.4 (toolkit") and "libcublas.so.12" in c["cuBLAS"]["found"]
    assert c["CCCL"]["found"].startswith("2.8.2")
    assert "12.x (soname)" in c["NVRTC"]["found"]
    assert data["ok"] is True and data["blockers"] == []


def test_require_cuda_is_a_blocker(fake_env):
    r = invoke("--require-cuda", "13.0")
    assert r.exit_code == 1
    assert "1 blocker(s): nvcc" in r.output and "--require-cuda 13.0 not met" in r.output
    assert invoke("--require-cuda", "12.8").exit_code == 0
    assert invoke("--require-cuda", "twelve").exit_code == 2


def test_old_driver(fake_env):
    fake_env("570.86.15")
    r = invoke("--format", "json", "--target-cuda", "13.0")  # not nvcc's 12.8, the default
    assert r.exit_code == 0  # informs: no --require-*
    d = by_name(json.loads(r.output))["driver"]
    assert d["status"] == "fail" and "needs >= 580" in d["note"] and not d["blocker"]
    r = invoke("--require-driver", "580", "--target-cuda", "13.0")
    assert r.exit_code == 1 and "--require-driver 580 not met" in r.output
    r = invoke("--require-cuda", "12.8", "--format", "json")  # 570 runs 12.x: fine
    assert r.exit_code == 0, r.output
    assert by_name(json.loads(r.output))["driver"]["status"] == "ok"


def test_new_driver_passes(fake_env):
    fake_env("580.95.05")
    r = invoke("--require-driver", "580", "--format", "json")
    assert r.exit_code == 0
    c = by_name(json.loads(r.output))
    assert c["driver"]["status"] == "ok" and c["GPU"]["found"] == "NVIDIA H200 (sm 9.0)"
    assert c["calibration"]["status"] == "ok"  # the bundled calibration was measured on an H200


def test_no_nvcc(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    r = invoke()
    assert r.exit_code == 0 and "not found on PATH" in r.output
    assert invoke("--require-cuda", "13.0").exit_code == 1


def test_real_machine_runs():
    """Whatever this machine has, doctor answers with a table and no blocker without --require-*."""
    r = invoke()
    assert r.exit_code == 0 and r.output.splitlines()[0].startswith("check") and "No blockers." in r.output
    assert os.environ.get("PATH")  # untouched
