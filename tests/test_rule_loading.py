"""Rule loading that never lies: a missing package is one environment error, a failed load is never cached, the
cache key follows the installed packages, `test ID` says why a rule did not load, and `--update` refuses while
the scaffold's TODOs remain.

The end-to-end case is the README's new-rule steps in a copy of the checkout: first with tree-sitter hidden (a
meta-path hook makes `import tree_sitter` fail, as in a Python that lacks it), then without the hook, with the
same rule cache directory.
"""

from __future__ import annotations

import re

import os
import shutil
import subprocess
import sys
from pathlib import Path

from cudamigrate.knowledge import rule_cache
from cudamigrate.knowledge.load import RuleSet, load_rules
from cudamigrate.toolcheck.selftest import load_errors_of

ROOT = Path(__file__).resolve().parent.parent

HIDE_TREE_SITTER = """
import sys
class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tree_sitter", "tree_sitter_cuda"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Hide())
"""


def _checkout(tmp_path: Path) -> Path:
    """The package, the rules and the scaffold script, copied: the new rule is written there, not here."""
    co = tmp_path / "checkout"
    shutil.copytree(ROOT / "cudamigrate", co / "cudamigrate", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rules", co / "rules")
    (co / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "new_rule.py", co / "scripts" / "new_rule.py")
    (co / "fixtures").mkdir()
    return co


def _cli(co: Path, cache: Path, *args: str, hide: bool = False) -> subprocess.CompletedProcess:
    code = (HIDE_TREE_SITTER if hide else "") + (
        "import runpy, sys\n"
        f"sys.argv = ['cudamigrate', *{list(args)!r}]\n"
        "runpy.run_module('cudamigrate', run_name='__main__')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(co), "CUDAMIGRATE_CACHE_DIR": str(cache)}
    env.pop("CUDAMIGRATE_NO_CACHE", None)
    return subprocess.run([sys.executable, "-c", code], cwd=co, env=env, capture_output=True, text=True, timeout=600)


def test_new_rule_after_a_missing_dependency_is_installed(tmp_path):
    co = _checkout(tmp_path)
    cache = tmp_path / "cache"
    fixtures = str(co / "fixtures")
    made = subprocess.run([sys.executable, str(co / "scripts" / "new_rule.py"), "CM599", "todo-api", "removals"],
                          cwd=co, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr

    # tree-sitter missing: one environment error line, exit 2, nothing cached
    for args in (("rules",), ("test", "CM599", "--update", "--fixtures", fixtures), ("explain", "CM101"), ("scan", "rules")):
        r = _cli(co, cache, *args, hide=True)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "'tree-sitter' is not installed" in lines[0], (args, r.stderr)
    assert not list(cache.glob("rules-*.pickle"))
    r = _cli(co, cache, "doctor", hide=True)
    assert r.returncode == 1 and re.search(r"^python packages +fail ", r.stdout, re.M) is not None and "'tree-sitter' is not installed" in r.stdout, r.stdout

    # installed (the hook gone), same cache directory: the rule is there at once
    r = _cli(co, cache, "rules", "--format", "json")
    assert r.returncode == 0 and '"CM599"' in r.stdout, r.stderr
    # the scaffold's placeholders are still in: --update refuses, naming where
    r = _cli(co, cache, "test", "CM599", "--update", "--fixtures", fixtures)
    assert r.returncode == 2 and "--update refused" in r.stderr and "CM599-todo-api.yaml:" in r.stderr, r.stderr
    assert not (co / "fixtures" / "removals" / "CM599-todo-api" / "findings.txt").exists()
    # written (here: the TODO markers taken out), the README's steps 4 and 5 work the first time
    for p in [*(co / "rules" / "removals").glob("CM599-*.yaml"), *(co / "fixtures" / "removals" / "CM599-todo-api").iterdir()]:
        p.write_text(p.read_text(encoding="utf-8").replace("TODO", "written"), encoding="utf-8")
    r = _cli(co, cache, "test", "CM599", "--update", "--fixtures", fixtures)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "wrote" in r.stderr and r.stdout.strip().splitlines()[-1] == "1 fixture case(s): all good"
    r = _cli(co, cache, "test", "CM599", "--fixtures", fixtures)
    assert r.returncode == 0 and r.stdout.strip().splitlines()[-1] == "1 fixture case(s): all good", r.stdout + r.stderr


def test_test_id_prints_the_rules_load_error(tmp_path):
    co = _checkout(tmp_path)
    bad = co / "rules" / "removals" / "CM598-broken.yaml"
    bad.write_text("id: CM598\nname: broken\n", encoding="utf-8")
    r = _cli(co, tmp_path / "cache", "test", "CM598", "--fixtures", str(co / "fixtures"))
    assert r.returncode == 2
    assert "CM598-broken.yaml" in r.stderr and "no such rule" not in r.stderr, r.stderr


def test_load_errors_of_picks_the_rules_file():
    errors = ["/r/removals/CM598-broken.yaml: summary: missing", "/r/removals/CM5981-other.yaml: x: y"]
    assert load_errors_of("cm598", errors) == errors[0]
    assert load_errors_of("CM597", errors) == ""


def test_a_failed_load_is_never_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAMIGRATE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CUDAMIGRATE_NO_CACHE", raising=False)
    d = tmp_path / "rules"
    d.mkdir()
    (d / "CM598-broken.yaml").write_text("id: CM598\n", encoding="utf-8")
    calls = []

    def build(dirs):
        calls.append(1)
        return RuleSet(errors=["broken"])

    assert rule_cache.cached([d], build).errors == ["broken"]
    assert rule_cache.cached([d], build).errors == ["broken"]
    assert len(calls) == 2 and not list(tmp_path.glob("rules-*.pickle"))
    assert rule_cache.cached([d], lambda dirs: RuleSet()).errors == []
    assert len(list(tmp_path.glob("rules-*.pickle"))) == 1  # a clean load is


def test_the_cache_key_follows_the_installed_packages(tmp_path, monkeypatch):
    d = tmp_path / "rules"
    d.mkdir()
    key = rule_cache.cache_key([d])
    monkeypatch.setattr(rule_cache, "installed_stamp", lambda: "tree_sitter=/elsewhere:1:2")
    assert rule_cache.cache_key([d]) != key


def test_no_hand_written_rule_or_case_holds_a_scaffold_todo():
    """`test --update` refuses any TODO in a rule file or its cases: none of the committed ones may hold one."""
    files = [p for p in (ROOT / "rules").rglob("*.yaml")] + [p for p in (ROOT / "fixtures").rglob("*") if p.is_file()]
    assert [str(p) for p in files if b"TODO" in p.read_bytes()] == []
    rs = load_rules([ROOT / "rules"])
    assert rs.environment is None and not rs.errors
