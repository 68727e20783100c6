"""`cudamigrate verify` (cudamigrate/fixproof/program.py) on CPU: a tiny C++ program of our own, with a
stand-in <cuda_runtime.h> of host stubs so it builds with g++ and prints deterministic output. The fix
renames cudaThreadSynchronize (CM501); the stubs decide whether that keeps the output, changes it, or (a header
without the old name, like CUDA 13.0's) makes the original a build break."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudamigrate.cli.main import main

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH")

MAIN = """#include <cstdio>
#include <cuda_runtime.h>
int main() {
  int s = 0;
  for (int i = 1; i <= 10; ++i) s += i * i;
  std::printf("sum of squares=%d status=%d\\n", s, (int)cudaThreadSynchronize());
  return 0;
}
"""
BUILD = "g++ -Iinclude -o app main.cpp"
FIX = ["--fix-option=--select", "--fix-option=CM501", "--fix-option=--no-verify"]


def project(tmp_path: Path, device_sync: int = 0, old_name: bool = True) -> Path:
    p = tmp_path / "app"
    (p / "include").mkdir(parents=True)
    stubs = ["#pragma once", "typedef int cudaError_t;",
             f"inline cudaError_t cudaDeviceSynchronize() {{ return {device_sync}; }}"]
    if old_name:
        stubs.append("inline cudaError_t cudaThreadSynchronize() { return 0; }")
    (p / "include" / "cuda_runtime.h").write_text("\n".join(stubs) + "\n")
    (p / "main.cpp").write_text(MAIN)
    return p


def verify(*args: str):
    return CliRunner().invoke(main, ["verify", *args], catch_exceptions=False)


def test_identical_output_before_and_after_and_the_project_is_untouched(tmp_path):
    p = project(tmp_path)
    r = verify(str(p), "--build", BUILD, "--run", "./app", *FIX)
    assert r.exit_code == 0, r.output
    assert "Identical output before and after the fix (compared with the original build)." in r.stdout
    assert "Fixed 1 finding(s)" in r.stderr
    assert (p / "main.cpp").read_text() == MAIN and not (p / "app").exists()


def test_a_fix_that_changes_the_output_is_caught(tmp_path):
    p = project(tmp_path, device_sync=7)  # the stand-in new API returns something else: behaviour changed
    r = verify(str(p), "--build", BUILD, "--run", "./app", *FIX)
    assert r.exit_code == 1
    assert "Output differs after the fix" in r.stdout and "status=7" in r.stdout


def test_build_break_compared_with_a_recorded_reference(tmp_path):
    ok = project(tmp_path / "old-toolkit")
    ref = tmp_path / "reference.txt"
    r = verify(str(ok), "--build", BUILD, "--run", "./app", "--record-reference", str(ref))
    assert r.exit_code == 0 and ref.read_text() == "sum of squares=385 status=0\n"
    broken = project(tmp_path / "new-toolkit", old_name=False)  # the original does not build here
    r = verify(str(broken), "--build", BUILD, "--run", "./app", *FIX)
    assert r.exit_code == 2 and "--reference FILE" in r.stderr
    r = verify(str(broken), "--build", BUILD, "--run", "./app", "--reference", str(ref), *FIX)
    assert r.exit_code == 0 and f"compared with the reference {ref}" in r.stdout


def test_commands_from_the_configuration(tmp_path):
    p = project(tmp_path)
    (p / ".cudamigrate.toml").write_text(f'build-command = "{BUILD}"\nrun-command = "./app"\n')
    r = verify(str(p), *FIX)
    assert r.exit_code == 0, r.output


def test_no_run_command_is_a_usage_error(tmp_path):
    r = verify(str(project(tmp_path)))
    assert r.exit_code == 2 and "no run command" in r.output
