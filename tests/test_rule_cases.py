"""A rule and its cases as one unit: `cudamigrate test ID [--update]` (one rule's cases, pinned messages) and
`scripts/new_rule.py` (a rule, its case and its docs stub)."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from cudamigrate.toolcheck.fixtures import (
    ScaffoldTodo,
    check_case,
    hand_written_stems,
    load_cases,
    naming_problems,
    update_snapshot,
)
from cudamigrate.knowledge.load import load_rules

from .conftest import FIXTURES, ROOT
from .helpers import run_cli

CASE = FIXTURES / "removals" / "CM501-cudathread-to-cudadevice"


def _copy_case(tmp_path):
    dst = tmp_path / "fixtures" / "removals" / CASE.name
    shutil.copytree(CASE, dst)
    return tmp_path / "fixtures", dst


def test_one_rules_cases():
    r = run_cli("test", "CM501")
    assert r.exit_code == 0, r.output
    assert r.output.strip().splitlines()[-1] == "3 fixture case(s): all good"  # the case, its --latin1 variant and --pasting-macro


def test_unknown_rule_is_a_usage_error():
    r = run_cli("test", "CM999")
    assert r.exit_code == 2
    assert "no such rule: CM999" in r.output


def test_messages_are_pinned_and_update_rewrites_them(tmp_path):
    root, case = _copy_case(tmp_path)
    snap = case / "findings.txt"
    pinned = snap.read_text(encoding="utf-8")
    snap.write_text(pinned.replace("has the same effect", "behaves the same", 1), encoding="utf-8")
    r = run_cli("test", "CM501", "--fixtures", root)
    assert r.exit_code == 1
    assert "messages differ from findings.txt" in r.output and "+15:20 CM501" in r.output
    snap.unlink()
    r = run_cli("test", "CM501", "--fixtures", root)
    assert r.exit_code == 1 and "no findings.txt" in r.output
    r = run_cli("test", "CM501", "--update", "--fixtures", root)
    assert r.exit_code == 0, r.output
    assert snap.read_text(encoding="utf-8") == pinned


def test_a_wrong_golden_fix_fails(tmp_path):
    root, case = _copy_case(tmp_path)
    after = case / "after.cu"
    after.write_text(after.read_text(encoding="utf-8").replace("cudaDeviceSynchronize", "cudaDeviceReset", 1))
    r = run_cli("test", "CM501", "--fixtures", root)
    assert r.exit_code == 1 and "fix(before.cu) differs from after.cu" in r.output


def _new_rule_module():
    spec = importlib.util.spec_from_file_location("new_rule", ROOT / "scripts" / "new_rule.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_new_rule_scaffolds_a_rule_its_case_and_docs(tmp_path):
    mod = _new_rule_module()
    (tmp_path / "rules" / "removals").mkdir(parents=True)
    assert mod.main(["CM599", "todo-api", "removals", "--root", str(tmp_path)]) == 0
    rs = load_rules([tmp_path / "rules"])
    assert not rs.errors and [r.id for r in rs.rules] == ["CM599"]
    assert set(rs.rules[0].docs) >= {"what", "why", "fix_safety", "example"}
    cases = load_cases(tmp_path / "fixtures")
    assert [c.name for c in cases] == ["removals/CM599-todo-api"]
    assert naming_problems(cases, tmp_path / "fixtures", hand_written_stems(rs.rules)) == []
    with pytest.raises(ScaffoldTodo):  # the placeholder's findings are never recorded
        update_snapshot(cases[0], rs.rules)
    for p in [*(tmp_path / "rules" / "removals").glob("CM599-*.yaml"), *cases[0].dir.iterdir()]:
        p.write_text(p.read_text(encoding="utf-8").replace("TODO", "written"), encoding="utf-8")
    rs = load_rules([tmp_path / "rules"])
    assert update_snapshot(cases[0], rs.rules)
    assert check_case(cases[0], rs.rules) == []
    # the id is now taken; a bad slug is refused
    assert mod.main(["CM599", "other", "removals", "--root", str(tmp_path)]) == 2
    assert mod.main(["CM598", "Bad_Slug", "removals", "--root", str(tmp_path)]) == 2
