"""What compile verification runs (cudamigrate/fixproof/consent.py, procs.py): a found database's commands only
with consent, every compile in its own process group, nothing left behind when `fix` is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudamigrate.cli.main import main
from cudamigrate.fixproof.compile_check import strip_outputs
from cudamigrate.fixproof.consent import refusal

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def verify_on(monkeypatch):
    monkeypatch.delenv("CUDAMIGRATE_VERIFY", raising=False)  # conftest turns it off for the other tests
    monkeypatch.delenv("CUDAMIGRATE_TRUST_COMPILE_COMMANDS", raising=False)


def _repo_with_script_compiler(tmp_path: Path) -> Path:
    """A repository with a committed build/compile_commands.json whose compiler is the repository's own script."""
    repo = tmp_path / "repo"
    (repo / "build").mkdir(parents=True)
    (repo / "tools").mkdir()
    cc = repo / "tools" / "cc.sh"
    cc.write_text(f"#!/bin/sh\necho ran >> {tmp_path / 'ran.txt'}\nexit 0\n")
    cc.chmod(0o755)
    src = repo / "a.cpp"
    src.write_text("void f() {\n  cudaThreadSynchronize();\n}\n")
    db = [{"directory": str(repo / "build"), "file": str(src), "arguments": [str(cc), "-c", str(src)]}]
    (repo / "build" / "compile_commands.json").write_text(json.dumps(db))
    return repo


def test_a_found_database_whose_compiler_is_a_repository_script_is_not_run(tmp_path, monkeypatch):
    repo = _repo_with_script_compiler(tmp_path)
    monkeypatch.chdir(repo)
    r = CliRunner().invoke(main, ["fix", "--select", "CM501", "--no-cache", "--no-semantic", "."],
                           catch_exceptions=False)
    assert not (tmp_path / "ran.txt").exists(), "the repository's script ran"
    assert "found, not named" in r.stderr and "is inside the project" in r.stderr
    assert "--compile-commands" in r.stderr and "--trust-compile-commands" in r.stderr
    assert "1 unverified" in r.stderr
    (repo / "a.cpp").write_text("void f() {\n  cudaThreadSynchronize();\n}\n")  # fixed (unverified) above: again
    r = CliRunner().invoke(main, ["fix", "--select", "CM501", "--no-cache", "--no-semantic", "--compile-commands",
                                  "build/compile_commands.json", "."], catch_exceptions=False)
    assert (tmp_path / "ran.txt").exists(), r.output  # named by the user: run (before and after)


def test_found_commands_run_only_with_known_drivers_outside_the_project():
    roots = ["/r"]
    assert refusal(("nvcc", "-ccbin=/usr/bin/c++", "-Xcompiler=-fPIC", "a.cu"), "/r/build", roots) is None
    assert refusal(("/usr/bin/ccache", "/usr/bin/env", "a.cu"), "/r", roots) is not None  # env runs anything
    assert "inside the project" in refusal(("nvcc", "-ccbin", "tools/cc", "a.cu"), "/r", roots)
    assert "load or run" in refusal(("nvcc", "-Xcompiler", "-fplugin=/p.so", "a.cu"), "/r", roots)
    assert "not a known compiler driver" in refusal((sys.executable, "a.cu"), "/r", roots)


def test_no_compile_writes_into_the_tree():
    argv = ["nvcc", "-time", "t.csv", "--time=x.csv", "-odir", "d", "--keep-dir=k", "-keep", "-save-temps=obj",
            "-Xcompiler", "-MD,-MF,x.d", "-Xcompiler=-fPIC", "-Wp,-MD,x.d", "-ftime-trace=x", "-run", "-I/a", "a.cu"]
    assert strip_outputs(argv) == ["nvcc", "-Xcompiler=-fPIC", "-I/a", "a.cu"]


SLEEPER = """import os, subprocess, sys, time
child = subprocess.Popen(["sleep", "60"])
pids = os.environ["CM_TEST_PIDS"]  # not an argument: the overlay moves absolute paths of the command
open(pids + ".tmp", "w").write(f"{os.getpid()} {child.pid}")
os.replace(pids + ".tmp", pids)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return "\nState:\tZ" not in fh.read()
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_killing_fix_during_verification_leaves_no_compile_and_no_temporary_directory(tmp_path):
    (tmp_path / "sleeper.py").write_text(SLEEPER)
    src = tmp_path / "a.cpp"
    src.write_text("void f() {\n  cudaThreadSynchronize();\n}\n")
    pids = tmp_path / "pids"
    db = [{"directory": str(tmp_path), "file": str(src),
           "arguments": [sys.executable, str(tmp_path / "sleeper.py"), str(src)]}]
    (tmp_path / "db.json").write_text(json.dumps(db))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp), "CM_TEST_PIDS": str(pids)}
    env.pop("CUDAMIGRATE_VERIFY", None)
    p = subprocess.Popen([sys.executable, "-m", "cudamigrate", "fix", "--select", "CM501", "--no-cache",
                          "--no-semantic", "-j", "1", "--compile-commands", str(tmp_path / "db.json"), str(src)],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not pids.exists() and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        assert pids.exists(), "the stand-in compiler never started"
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    assert rc == 128 + signal.SIGTERM
    compiler, child = (int(x) for x in pids.read_text().split())
    deadline = time.monotonic() + 5
    while (_alive(compiler) or _alive(child)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(compiler) and not _alive(child)  # the compiler and its own child: the whole group
    assert [e.name for e in tmp.iterdir() if e.name.startswith("cudamigrate-")] == []
    assert src.read_text() == "void f() {\n  cudaThreadSynchronize();\n}\n"  # nothing written


def test_verify_timeout_kills_the_programs_whole_process_group(tmp_path):
    """`cudamigrate verify --timeout`: the build or run command is a shell whose children must go with it (before,
    only the shell was killed and `sleep` went on, holding the pipes open until it ended)."""
    from cudamigrate.fixproof.program import shell

    t0 = time.monotonic()
    step = shell("run before", "sleep 30 & echo $! > pid; wait", tmp_path, 1.0)
    assert not step.ok and step.rc == 124 and "timed out" in step.output
    assert time.monotonic() - t0 < 10
    pid = int((tmp_path / "pid").read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def test_a_later_run_removes_what_a_killed_run_left_in_the_temporary_directory(tmp_path):
    """SIGKILL runs no cleanup: the compile directories carry their run's pid, and those of dead runs go."""
    from cudamigrate.fixproof.procs import remove_stale_temps, temp_prefix

    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / f"cudamigrate-verify-{dead.pid}-abc").mkdir()
    (tmp_path / f"cudamigrate-obj-{dead.pid}-abc").mkdir()
    mine = tmp_path / (temp_prefix("verify") + "xyz")
    mine.mkdir()
    (tmp_path / "cudamigrate-bench-1-x").mkdir()  # not a compile directory
    assert remove_stale_temps(str(tmp_path)) == 2
    assert sorted(e.name for e in tmp_path.iterdir()) == sorted([mine.name, "cudamigrate-bench-1-x"])
