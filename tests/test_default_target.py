"""The default `--target-cuda`: the release of the compile database's nvcc, else of the nvcc on PATH, else the
newest release known (cudamigrate/toolcheck/target.py); a flag or the configuration wins; doctor and the
reports say which and why.

Fake `nvcc` scripts print a release (no real compiler runs); every project is a directory with `.git`, so the
compile-database search stops there.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudamigrate.cli.main import main
from cudamigrate.knowledge.releases import versions
from cudamigrate.toolcheck.target import database_compiler, detect

SOURCE = "void f() { cudaThreadSynchronize(); }\n"  # CM501: removed in 13.0, deprecated before


def _nvcc(d: Path, release: str) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    p = d / "nvcc"
    p.write_text(f"#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
                 f"echo 'Cuda compilation tools, release {release}, V{release}.1'\n")
    p.chmod(p.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return p


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project (a.cu) and a PATH holding a fake nvcc 12.4 and the system's tools, not the real nvcc."""
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    (proj / "a.cu").write_text(SOURCE)
    _nvcc(tmp_path / "bin", "12.4")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    monkeypatch.chdir(proj)
    monkeypatch.setenv("CUDAMIGRATE_NO_CACHE", "1")
    return proj


def _scan(*args: str) -> dict:
    r = CliRunner().invoke(main, ["scan", "--no-semantic", "--format", "json", *args, "a.cu"], catch_exceptions=False)
    assert r.exit_code == 1, r.output
    return json.loads(r.output)


def _db(proj: Path, compiler: str) -> None:
    (proj / "build").mkdir(exist_ok=True)
    (proj / "build" / "compile_commands.json").write_text(json.dumps([
        {"directory": str(proj), "file": "b.cpp", "command": "g++ -c b.cpp"},
        {"directory": str(proj), "file": "a.cu", "arguments": ["ccache", compiler, "-c", "a.cu", "-o", "a.o"]}]))


def test_nvcc_on_path_is_the_default(project):
    doc = _scan()
    assert doc["target_cuda"] == "12.4" and doc["target_source"] == "from nvcc 12.4 on PATH"
    assert doc["summary"]["build_breaking"] == 0  # cudaThreadSynchronize is deprecated in 12.4, removed in 13.0


def test_flag_and_configuration_win(project):
    doc = _scan("--target-cuda", "13.0")
    assert (doc["target_cuda"], doc["target_source"]) == ("13.0", "from --target-cuda")
    assert doc["summary"]["build_breaking"] == 1
    (project / ".cudamigrate.toml").write_text('target-cuda = "12.8"\n')
    doc = _scan()
    assert doc["target_cuda"] == "12.8" and doc["target_source"].startswith("from target-cuda in ")


def test_compile_database_compiler_wins_over_path(project, tmp_path):
    nv = _nvcc(tmp_path / "cuda-x" / "bin", "12.8")  # run for its --version
    _db(project, str(nv))
    doc = _scan()
    assert doc["target_cuda"] == "12.8"
    assert doc["target_source"] == f"from the nvcc 12.8 of {project / 'build' / 'compile_commands.json'} ({nv})"
    _db(project, "/opt/nowhere/cuda-12.2/bin/nvcc")  # not on this machine: its installer's directory tells
    assert _scan()["target_cuda"] == "12.2"


def test_database_without_nvcc_falls_back_to_path(project):
    (project / "compile_commands.json").write_text(json.dumps([{"directory": str(project), "file": "a.cpp",
                                                                 "command": "g++ -c a.cpp"}]))
    assert database_compiler(project / "compile_commands.json") is None
    assert _scan()["target_source"] == "from nvcc 12.4 on PATH"


def test_no_nvcc_targets_the_newest_release(project, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    newest = versions()[-1]
    doc = _scan()
    assert doc["target_cuda"] == f"{newest[0]}.{newest[1]}"
    assert doc["target_source"] == "the newest release cudamigrate knows: no nvcc on PATH"


def test_a_newer_nvcc_than_known_targets_the_newest(tmp_path, monkeypatch):
    _nvcc(tmp_path / "bin", "14.2")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    (tmp_path / ".git").mkdir()
    t = detect([tmp_path], known=[(12, 9), (13, 0)])
    assert t.version == (13, 0) and not t.explicit
    assert t.source == "the newest release cudamigrate knows (nvcc 14.2 on PATH is newer)"


def test_text_summary_says_why_only_for_a_default(project):
    r = CliRunner().invoke(main, ["scan", "--no-semantic", "a.cu"])
    assert "(0 build-breaking for CUDA 12.4, from nvcc 12.4 on PATH)" in r.output
    r = CliRunner().invoke(main, ["scan", "--no-semantic", "--target-cuda", "12.4", "a.cu"])
    assert "(0 build-breaking for CUDA 12.4)." in r.output
    (project / "a.cu").write_text("void f() {}\n")
    r = CliRunner().invoke(main, ["scan", "--no-semantic", "a.cu"])
    assert "No findings in 1 file(s) for CUDA 12.4, from nvcc 12.4 on PATH." in r.output


def test_sarif_and_html_say_why(project):
    r = CliRunner().invoke(main, ["scan", "--no-semantic", "--format", "sarif", "a.cu"])
    props = json.loads(r.output)["runs"][0]["properties"]
    assert props["target_cuda"] == "12.4" and props["target_source"] == "from nvcc 12.4 on PATH"
    CliRunner().invoke(main, ["scan", "--no-semantic", "--format", "html", "-o", "r.html", "a.cu"])
    assert "Target CUDA 12.4 (from nvcc 12.4 on PATH)" in (project / "r.html").read_text()


def test_doctor_says_which_target(project):
    r = CliRunner().invoke(main, ["doctor", "--format", "json"], catch_exceptions=False)
    doc = json.loads(r.output)
    assert doc["target"] == "12.4" and doc["target_source"] == "from nvcc 12.4 on PATH"
    r = CliRunner().invoke(main, ["doctor", "--target-cuda", "13.0"], catch_exceptions=False)
    assert any(line.split()[:3] == ["target", "info", "13.0"] and "from --target-cuda" in line
               for line in r.output.splitlines())


def test_the_python_api_says_which_target(project):
    from cudamigrate.workspace.preparation import prepare
    from cudamigrate.workspace.request import Request

    pre = prepare(Request(paths=(project,)))
    assert pre.opts.target == (12, 4) and pre.target is not None and pre.target.source == "from nvcc 12.4 on PATH"


def test_show_settings_says_why(project):
    r = CliRunner().invoke(main, ["scan", "--show-settings", "a.cu"], catch_exceptions=False)
    got = dict(ln.split(" = ", 1) for ln in r.output.splitlines())
    assert (got["target-cuda"], got["target-source"]) == ("12.4", "from nvcc 12.4 on PATH")
