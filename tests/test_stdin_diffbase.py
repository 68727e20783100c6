"""Editors and CI gates: `scan -`/`fix -` with --stdin-filename, and `scan --diff-base REF`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudamigrate.cli.main import main
from cudamigrate.workflow.diffbase import parse_diff

LEGACY = b"#include <nvrtc.h>\nvoid f(nvrtcProgram p, size_t *s) {\n  nvrtcGetNVVMSize(p, s);\n}\n"
FIXED = b"#include <nvrtc.h>\nvoid f(nvrtcProgram p, size_t *s) {\n  nvrtcGetLTOIRSize(p, s);\n}\n"


def cli(args, cwd: Path, data: bytes | None = None):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, [str(a) for a in args], input=data, catch_exceptions=False)
    finally:
        os.chdir(old)


def test_scan_stdin_reports_under_the_given_name_without_reading_the_file(tmp_path):
    r = cli(["scan", "-", "--stdin-filename", "src/new.cu", "--format", "json"], tmp_path, LEGACY)
    assert r.exit_code == 1, r.stderr
    found = json.loads(r.stdout)["findings"]
    assert [(f["path"], f["line"], f["rule"]) for f in found] == [("src/new.cu", 3, "CM401")]
    assert not (tmp_path / "src").exists()


def test_scan_stdin_honours_exclude_for_that_name(tmp_path):
    (tmp_path / ".cudamigrate.toml").write_text('exclude = ["third_party/"]\n')
    r = cli(["scan", "-", "--stdin-filename", "third_party/lib.cu"], tmp_path, LEGACY)
    assert (r.exit_code, "CM401" in r.stdout) == (0, False), r.stdout + r.stderr
    r = cli(["scan", "-", "--stdin-filename", "src/lib.cu"], tmp_path, LEGACY)
    assert r.exit_code == 1 and "src/lib.cu:3:3: CM401" in r.stdout


def test_fix_stdin_prints_fixed_text_and_never_touches_the_file(tmp_path):
    disk = tmp_path / "a.cu"
    disk.write_bytes(b"// the saved version, different from the buffer\n")
    before = disk.stat()
    r = cli(["fix", "-", "--stdin-filename", disk], tmp_path, LEGACY)
    assert r.stdout_bytes == FIXED
    assert r.exit_code == 0, r.stderr
    assert "Fixed 1 finding(s)" in r.stderr
    assert disk.read_bytes() == b"// the saved version, different from the buffer\n"
    assert disk.stat().st_mtime_ns == before.st_mtime_ns


def test_fix_stdin_diff_and_excluded_buffer(tmp_path):
    r = cli(["fix", "-", "--stdin-filename", "k.cu", "--diff"], tmp_path, LEGACY)
    assert "-  nvrtcGetNVVMSize(p, s);" in r.stdout and "+  nvrtcGetLTOIRSize(p, s);" in r.stdout
    (tmp_path / ".cudamigrate.toml").write_text('exclude = ["vendor/"]\n')
    r = cli(["fix", "-", "--stdin-filename", "vendor/k.cu"], tmp_path, LEGACY)
    assert (r.exit_code, r.stdout_bytes) == (0, LEGACY)  # an editor must get its buffer back unchanged


@pytest.mark.parametrize("args", [["scan", "-", "other.cu"], ["scan", "x.cu", "--stdin-filename", "y.cu"],
                                  ["fix", "-", "--commit-per-rule"]])
def test_stdin_usage_errors(tmp_path, args):
    r = cli(args, tmp_path, LEGACY)
    assert r.exit_code == 2 and r.stderr.strip(), r.stdout


# --- --diff-base ---------------------------------------------------------------------------------------------

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True, env=env).stdout


@pytest.fixture
def repo(tmp_path):
    d = tmp_path / "repo"
    (d / "src").mkdir(parents=True)
    (d / "src" / "old.cu").write_bytes(LEGACY)
    (d / "src" / "same.cu").write_bytes(LEGACY)
    git(d, "init", "-q")
    git(d, "add", "-A")
    git(d, "commit", "-qm", "init")
    return d


@needs_git
def test_diff_base_reports_only_changed_lines_and_untracked_files(repo):
    old = repo / "src" / "old.cu"
    old.write_bytes(LEGACY + b"void g(nvrtcProgram p, size_t *s) {\n  nvrtcGetNVVMSize(p, s);\n}\n")
    (repo / "src" / "new file.cu").write_bytes(LEGACY)  # untracked: wholly changed
    r = cli(["scan", "src", "--diff-base", "HEAD", "--format", "json"], repo)
    got = sorted((f["path"], f["line"]) for f in json.loads(r.stdout)["findings"])
    assert got == [("src/new file.cu", 3), ("src/old.cu", 6)], r.stderr
    full = cli(["scan", "src", "--format", "json"], repo)
    assert len(json.loads(full.stdout)["findings"]) == 4  # without the flag: every finding


@needs_git
def test_diff_base_counts_staged_and_committed_changes_since_ref(repo):
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "src" / "same.cu").write_bytes(b"// header comment\n" + LEGACY)  # shifts the old call to line 4
    git(repo, "commit", "-qam", "edit")
    r = cli(["scan", "src", "--diff-base", base, "--format", "json"], repo)
    assert json.loads(r.stdout)["findings"] == [] and r.exit_code == 0  # a moved line is not a changed line
    (repo / "src" / "same.cu").write_bytes(b"// header comment\n" + LEGACY.replace(b"p, s)", b"p,  s)"))
    git(repo, "add", "-A")
    r = cli(["scan", "src", "--diff-base", base, "--format", "json"], repo)
    assert [(f["path"], f["line"]) for f in json.loads(r.stdout)["findings"]] == [("src/same.cu", 4)]


@needs_git
def test_diff_base_errors_are_one_line_exit_2(repo, tmp_path):
    r = cli(["scan", "src", "--diff-base", "no-such-branch"], repo)
    assert r.exit_code == 2 and "no-such-branch" in r.stderr and "not a commit" in r.stderr
    r = cli(["scan", "src", "--diff-base", "--output=x"], repo)
    assert r.exit_code == 2
    outside = tmp_path / "plain"
    outside.mkdir()
    (outside / "a.cu").write_bytes(LEGACY)
    r = cli(["scan", ".", "--diff-base", "HEAD"], outside)
    assert r.exit_code == 2 and "not inside a git work tree" in r.stderr


def test_parse_diff_quoted_names_and_pure_deletions():
    diff = (b'diff --git "a/x\\tb.cu" "b/x\\tb.cu"\n--- "a/x\\tb.cu"\n+++ "b/x\\tb.cu"\n@@ -3,0 +4,2 @@\n+a\n+b\n'
            b"diff --git a/y.cu b/y.cu\n--- a/y.cu\n+++ b/y.cu\n@@ -5 +4,0 @@\n-gone\n@@ -9 +9 @@\n-o\n+n\n"
            b"diff --git a/z.cu b/z.cu\n--- a/z.cu\n+++ /dev/null\n@@ -1 +0,0 @@\n-z\n")
    assert parse_diff(diff) == {b"x\tb.cu": {4, 5}, b"y.cu": {9}}


def test_fix_stdin_internal_error_returns_the_buffer(tmp_path, monkeypatch):
    import cudamigrate.fix.apply as apply

    def boom(*a, **k):
        raise RuntimeError("rule bug")

    monkeypatch.setattr(apply, "fix_bytes", boom)
    r = cli(["fix", "-", "--stdin-filename", "k.cu"], tmp_path, LEGACY)
    assert (r.exit_code, r.stdout_bytes) == (2, LEGACY)
    assert "k.cu: internal error while fixing: RuntimeError: rule bug" in r.stderr


def test_plan_reads_stdin_under_the_given_name(tmp_path):
    r = cli(["plan", "-", "--stdin-filename", "src/new.cu", "--format", "json"], tmp_path, LEGACY)
    plan = json.loads(r.stdout)
    assert r.exit_code == 1, r.stderr  # CM401 is a build break for 13.0
    assert (plan["files_scanned"], plan["must"]["findings"]) == (1, 1) and "CM401" in r.stdout
    assert not (tmp_path / "src").exists()
    r = cli(["plan", "-", "--stdin-filename", "src/new.cu"], tmp_path, FIXED)
    assert r.exit_code == 0, r.stdout + r.stderr


@needs_git
def test_plan_diff_base_plans_only_changed_lines(repo):
    r = cli(["plan", "src", "--diff-base", "HEAD", "--format", "json"], repo)
    assert r.exit_code == 0 and "CM401" not in r.stdout, r.stdout  # nothing changed since HEAD: nothing to plan
    (repo / "src" / "old.cu").write_bytes(LEGACY + b"void g(nvrtcProgram p, size_t *s) {\n  nvrtcGetNVVMSize(p, s);\n}\n")
    r = cli(["plan", "src", "--diff-base", "HEAD", "--format", "json"], repo)
    assert r.exit_code == 1 and json.loads(r.stdout)["must"]["findings"] == 1, r.stdout + r.stderr  # the new call
    full = cli(["plan", "src", "--format", "json"], repo)
    assert json.loads(full.stdout)["must"]["findings"] == 3  # without the flag: every finding
    r = cli(["plan", "src", "--diff-base", "no-such-branch"], repo)
    assert r.exit_code == 2 and "no-such-branch" in r.stderr
