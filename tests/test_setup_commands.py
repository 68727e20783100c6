"""Set-up in two commands: the README's first installs and runs the tool on the example, its second is the
script CI runs (.ci/run calls it), and that script's guards fail a run that skipped what the machine can run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .reportutil import ROOT

SCRIPT = ROOT / "scripts" / "dev-setup-and-test.sh"
GUARDS = ROOT / "scripts" / "check-test-log.sh"
needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")


def _setup_blocks() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Set-up in two commands"):]
    section = section[: section.index("\n## ", 5)]
    return [b.strip() for b in re.findall(r"```\n(.*?)```", section, re.S)]


def test_readme_names_the_two_commands():
    assert _setup_blocks()[:2] == ["pip install . && cudamigrate scan examples/", "scripts/dev-setup-and-test.sh"]


def test_ci_runs_the_readme_script():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^VENV=.* exec bash scripts/dev-setup-and-test\.sh", ci, re.M)
    for f in (ROOT / ".ci" / "run", SCRIPT, GUARDS):
        assert os.access(f, os.X_OK), f"{f} is not executable"
    script = SCRIPT.read_text(encoding="utf-8")
    assert "bash scripts/check-test-log.sh \"$LOG\"" in script and ".ci/apt-packages" in script
    for wheel in ("nvidia-cublas==", "nvidia-cuda-nvrtc==", "nvidia-cufft==", "nvidia-npp==", "nvidia-cusparse==",
                  "nvidia-cusolver==", "nvidia-curand=="):
        assert wheel in script
    apt = [ln.strip() for ln in (ROOT / ".ci" / "apt-packages").read_text().splitlines()
           if ln.strip() and not ln.startswith("#")]
    assert "chromium" in apt
    # semantic mode needs no system package: libclang and its resource headers come from a pyproject dependency
    assert not [p for p in apt if "clang" in p], apt
    assert '"libclang-ng' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


@needs_bash
def test_scripts_parse():
    for f in (ROOT / ".ci" / "run", SCRIPT, GUARDS):
        r = subprocess.run(["bash", "-n", str(f)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def _guards(tmp_path: Path, log: str, with_nvcc: bool) -> subprocess.CompletedProcess:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    nvcc = bindir / "nvcc"
    if with_nvcc:
        nvcc.write_text("#!/bin/sh\nexit 0\n")
        nvcc.chmod(0o755)
    elif nvcc.exists():
        nvcc.unlink()
    (tmp_path / "log").write_text(log)
    path = os.pathsep.join([str(bindir)] + [d for d in os.environ.get("PATH", "").split(os.pathsep)
                                            if d and not (Path(d) / "nvcc").exists()])
    return subprocess.run(["bash", str(GUARDS), str(tmp_path / "log")], capture_output=True, text=True,
                          env={**os.environ, "PATH": path})


@needs_bash
def test_guards_fail_on_skipped_nvcc_or_semantic_tests(tmp_path):
    good = "===== 1366 passed, 3 skipped in 100s =====\n"
    nvcc_skipped = "SKIPPED [40] tests/conftest.py:17: nvcc not on PATH: nvcc compile tests skipped\n" + good
    sem_skipped = "SKIPPED [9] tests/test_semantic.py:37: libclang semantic mode unavailable: no libclang\n" + good
    assert _guards(tmp_path, good, True).returncode == 0
    r = _guards(tmp_path, nvcc_skipped, True)
    assert r.returncode == 1 and "nvcc tests were skipped" in r.stderr
    assert _guards(tmp_path, nvcc_skipped, False).returncode == 0  # no nvcc here: skipping is right
    assert _guards(tmp_path, "no tests ran\n", True).returncode == 1
    r = _guards(tmp_path, sem_skipped, False)
    assert r.returncode == 1 and "semantic-mode tests were skipped" in r.stderr
