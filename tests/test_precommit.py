"""The pre-commit hook, exercised with the real `pre-commit` tool in a temporary git repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRE_COMMIT = Path(sys.executable).parent / "pre-commit"

pytestmark = pytest.mark.skipif(not PRE_COMMIT.exists() or shutil.which("git") is None,
                                reason="pre-commit (test extra) or git not installed")


def sh(*cmd, cwd, check=True, env=None):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=check, env=env)


def test_hook_flags_legacy_code_and_passes_clean_code(tmp_path):
    repo = tmp_path / "proj"
    repo.mkdir()
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "cache"), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    sh("git", "init", "-q", cwd=repo, env=env)
    # a file-scope stream: the legacy-stream call meets another blocking stream, so CM101 reports it
    (repo / "bad.cu").write_text("cudaStream_t side;\nint main() { float *d; cudaMemsetAsync(d, 0, 4, 0); return 0; }\n")
    (repo / "good.cpp").write_text("int main() { return 0; }\n")
    (repo / "notes.txt").write_text("cudaMemsetAsync(d, 0, 4, 0)\n")
    sh("git", "add", ".", cwd=repo, env=env)
    # try-repo installs the hook from this checkout (its working tree) into an isolated environment
    bad = sh(str(PRE_COMMIT), "try-repo", str(ROOT), "cudamigrate", "--files", "bad.cu", "notes.txt", cwd=repo, check=False, env=env)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "CM101" in bad.stdout and "notes.txt" not in bad.stdout.split("cudamigrate....")[-1]
    good = sh(str(PRE_COMMIT), "try-repo", str(ROOT), "cudamigrate", "--files", "good.cpp", cwd=repo, check=False, env=env)
    assert good.returncode == 0, good.stdout + good.stderr
    # the scan hook never rewrites files
    assert "cudaMemsetAsync(d, 0, 4, 0)" in (repo / "bad.cu").read_text()
