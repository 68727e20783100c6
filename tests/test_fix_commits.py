"""`fix --commit-per-rule/--commit-per-family` in a temporary git repo; `fix` lists what remains; --show-fixes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


from .helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "legacy-app"
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def run(*args, cwd):
    return run_cli(*args, cwd=cwd)


def git(cwd, *args):
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path, monkeypatch):
    for k, v in (("GIT_AUTHOR_NAME", "t"), ("GIT_AUTHOR_EMAIL", "t@example.com"), ("GIT_COMMITTER_NAME", "t"),
                 ("GIT_COMMITTER_EMAIL", "t@example.com")):
        monkeypatch.setenv(k, v)
    d = tmp_path / "repo"
    shutil.copytree(EXAMPLE, d)
    git(d, "init", "-q")
    git(d, "add", "-A")
    git(d, "commit", "-qm", "init")
    return d


def tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file() and ".git" not in p.parts}


@pytest.mark.parametrize("by,unsafe", [("rule", True), ("family", True), ("rule", False)])
def test_final_tree_equals_single_fix_run(repo, tmp_path, by, unsafe):
    single = tmp_path / "single"
    shutil.copytree(repo, single, ignore=shutil.ignore_patterns(".git"))
    extra = ["--unsafe-fixes"] if unsafe else []
    run("fix", *extra, ".", cwd=single)
    r = run("fix", *extra, f"--commit-per-{by}", ".", cwd=repo)
    assert r.exit_code == 1, r.stderr  # manual findings remain
    assert tree(repo) == tree(single)
    assert git(repo, "status", "--porcelain") == ""
    subjects = git(repo, "log", "--format=%s").splitlines()
    assert subjects[-1] == "init"
    made = subjects[:-1]
    listed = r.stdout.split("Remaining:\n")[0].splitlines()  # one line per commit, then what remains
    assert len(made) == len(listed) >= 2 and all(ln.split()[1] == "cudamigrate:" for ln in listed), listed
    if by == "rule":
        ids = [s.split()[1] for s in made]
        assert len(ids) == len(set(ids)) and all(i.startswith("CM") for i in ids)
        if not unsafe:
            assert all(s.endswith("(safe fix)") for s in made)
    else:
        from cudamigrate.knowledge.load import load_rules

        families = {r.family for r in load_rules().rules}
        fams = [s.split()[1] for s in made]
        assert all(f in families and s.split()[2] == "rules" for f, s in zip(fams, made)) and len(set(fams)) == len(fams)
    # each commit touches only files, and its message carries counts and the reviewer's instructions
    body = git(repo, "log", "-1", "--format=%B", "HEAD~1" if len(made) > 1 else "HEAD")
    assert "Fixed " in body and "finding(s) in" in body and "Applicability:" in body and "Reviewer:" in body


def test_build_breaks_committed_first(repo):
    r = run("fix", "--unsafe-fixes", "--commit-per-rule", ".", cwd=repo)
    subjects = list(reversed(git(repo, "log", "--format=%s").splitlines()[:-1]))
    build_break_rules = {"CM401", "CM404", "CM501", "CM502", "CM503", "CM504", "CM601"}  # removed by 13.0 (example)
    ids = [s.split()[1] for s in subjects]
    n = sum(1 for i in ids if i in build_break_rules)
    assert set(ids[:n]) <= build_break_rules and n > 0 and r.exit_code == 1


def test_refuses_dirty_tree(repo):
    (repo / "src" / "kernels.cu").write_bytes((repo / "src" / "kernels.cu").read_bytes() + b"// local edit\n")
    before = tree(repo)
    r = run("fix", "--commit-per-rule", ".", cwd=repo)
    assert r.exit_code == 2 and "not clean" in r.stderr and "src/kernels.cu" in r.stderr
    assert tree(repo) == before and git(repo, "log", "--format=%s").splitlines() == ["init"]
    git(repo, "checkout", "--", ".")
    (repo / "new.cu").write_text("int x;\n")  # untracked files count as dirty too
    assert run("fix", "--commit-per-rule", ".", cwd=repo).exit_code == 2


def test_refuses_outside_git(tmp_path):
    shutil.copytree(EXAMPLE, tmp_path / "plain")
    r = run("fix", "--commit-per-rule", ".", cwd=tmp_path / "plain")
    assert r.exit_code == 2 and "not inside a git work tree" in r.stderr
    assert run("fix", "--commit-per-rule", "--diff", ".", cwd=tmp_path / "plain").exit_code == 2


def test_fix_lists_remaining_and_show_fixes(tmp_path):
    shutil.copytree(EXAMPLE, tmp_path / "app")
    r = run("fix", "--show-fixes", "app", cwd=tmp_path)
    assert r.exit_code == 1
    err = r.stdout  # the remaining findings and the summary, as ruff prints them
    fixed, remaining = err.split("Remaining:\n")
    assert fixed.startswith("Fixed:\n") and "\n  app/src/jit.cpp: CM401 x2\n" in fixed
    rem = [ln for ln in remaining.splitlines() if ln.startswith("  app/")]
    import re

    n = int(re.search(r"; (\d+) remaining", err).group(1))
    assert len(rem) == n > 0
    assert any(" CM601 [~] " in ln for ln in rem)  # unsafe fixes are not applied without --unsafe-fixes
    r = run("fix", "app", cwd=tmp_path)  # without --show-fixes: remaining only
    assert "Fixed:" not in r.stdout and "Remaining:" in r.stdout


def test_from_a_subdirectory(repo, tmp_path):
    single = tmp_path / "single"
    shutil.copytree(repo, single, ignore=shutil.ignore_patterns(".git"))
    run("fix", "src", cwd=single)
    r = run("fix", "--commit-per-rule", ".", cwd=repo / "src")
    assert r.exit_code == 1 and len(r.stdout.splitlines()) >= 2, r.stderr
    assert tree(repo) == tree(single) and git(repo, "status", "--porcelain") == ""


def test_per_rule_commits_are_compile_verified(tmp_path, monkeypatch):
    """--commit-per-rule proves its edits like `fix`: a finding whose edit breaks a unit (the test-only CM9901)
    is rolled back before anything is written, and no commit holds it, not even an intermediate one."""
    import json
    import sys

    monkeypatch.delenv("CUDAMIGRATE_VERIFY", raising=False)  # conftest turns verification off elsewhere
    for k, v in (("GIT_AUTHOR_NAME", "t"), ("GIT_AUTHOR_EMAIL", "t@example.com"), ("GIT_COMMITTER_NAME", "t"),
                 ("GIT_COMMITTER_EMAIL", "t@example.com")):
        monkeypatch.setenv(k, v)
    d = tmp_path / "repo"
    d.mkdir()
    broken = "cudaGetLastErrorBroken"
    (d / "checker.py").write_text(
        "import sys\nsrc = next(a for a in sys.argv[1:] if a.endswith('.cpp'))\n"
        "for i, line in enumerate(open(src), 1):\n"
        f"    if '{broken}' in line:\n"
        f"        print(f'{{src}}:{{i}}:3: error: \\'{broken}\\' was not declared in this scope')\n"
        "        sys.exit(1)\n")
    src = d / "a.cpp"
    src.write_text("void f() {\n  cudaThreadSynchronize();\n  cudaGetLastError();\n}\n")
    (d / "compile_commands.json").write_text(json.dumps(
        [{"directory": str(d), "file": str(src), "arguments": [sys.executable, str(d / "checker.py"), str(src)]}]))
    git(d, "init", "-q")
    git(d, "add", "-A")
    git(d, "commit", "-qm", "init")
    rules = ROOT / "tests" / "data" / "verify_rules"
    r = run("fix", "--rules-dir", str(rules), "--select", "CM501,CM9901", "--no-cache", "--no-semantic",
            "--trust-compile-commands", "--commit-per-rule", ".", cwd=d)  # the database's compiler: a repo script
    assert "CM9901: fix rolled back" in r.stderr and "1 edit(s) rolled back" in r.stderr, r.stderr
    assert src.read_text() == "void f() {\n  cudaDeviceSynchronize();\n  cudaGetLastError();\n}\n"
    subjects = git(d, "log", "--format=%s").splitlines()
    assert len(subjects) == 2 and subjects[0].startswith("cudamigrate: CM501"), subjects
    init = git(d, "rev-list", "--max-parents=0", "HEAD").strip()
    assert broken not in git(d, "log", "-p", f"{init}..HEAD")
    assert git(d, "status", "--porcelain") == ""


def test_per_rule_commits_share_the_texture_helpers_like_fix(tmp_path, monkeypatch):
    """Four texture files (and a CM501 file): the final tree equals one `fix` run, shared header included, and no
    commit holds a copy of the helpers in a file (fix/shared_helpers.py)."""
    for k, v in (("GIT_AUTHOR_NAME", "t"), ("GIT_AUTHOR_EMAIL", "t@example.com"), ("GIT_COMMITTER_NAME", "t"),
                 ("GIT_COMMITTER_EMAIL", "t@example.com")):
        monkeypatch.setenv(k, v)
    d = tmp_path / "repo"
    shutil.copytree(ROOT / "fixtures" / "texture" / "project-shared-helpers", d, ignore=shutil.ignore_patterns("README.md"))
    (d / "sync.cu").write_text("void wait_all() { cudaThreadSynchronize(); }\n")
    single = tmp_path / "single"
    shutil.copytree(d, single)
    git(d, "init", "-q")
    git(d, "add", "-A")
    git(d, "commit", "-qm", "init")
    run("fix", "--unsafe-fixes", "--no-verify", ".", cwd=single)
    assert (single / "cudamigrate_texture.h").is_file()
    r = run("fix", "--unsafe-fixes", "--no-verify", "--commit-per-rule", ".", cwd=d)
    assert r.exit_code in (0, 1), r.stderr
    assert tree(d) == tree(single)
    assert git(d, "status", "--porcelain") == ""
    shas = git(d, "log", "--format=%h").split()[:-1]
    assert len(shas) >= 2
    for sha in shas:
        files = git(d, "ls-tree", "-r", "--name-only", sha).split()
        for f in files:
            if f.endswith(".cu"):
                assert "#ifndef CUDAMIGRATE_TEXOBJ_HELPERS" not in git(d, "show", f"{sha}:{f}"), (sha, f)
        if any('#include "' in git(d, "show", f"{sha}:{f}") and "cudamigrate_texture.h" in git(d, "show", f"{sha}:{f}")
               for f in files if f.endswith(".cu")):
            assert "cudamigrate_texture.h" in files, sha  # the header is in every commit whose files include it
