"""A scaffold cannot pass half-written (README: Contributing a rule): the writers of a case's expected output
(`cudamigrate test --update`, scripts/regen_fixture.py) share one TODO guard, `cudamigrate test ID` fails while a
TODO remains even when findings.txt was recorded from the placeholder, and a missing finding hidden by the
case's own declaration of the API says so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cudamigrate.knowledge import load as load_mod
from cudamigrate.knowledge.load import load_rules
from cudamigrate.toolcheck.fixtures import check_case, engine_for, load_cases, snapshot_text
from cudamigrate.toolcheck.selftest import rule_tests

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def scaffold(tmp_path, monkeypatch):
    """scripts/new_rule.py's CM599 in a tree of its own, which is the only rule loaded."""
    made = subprocess.run([sys.executable, str(ROOT / "scripts" / "new_rule.py"), "CM599", "todo-api", "removals",
                           "--root", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    monkeypatch.setattr(load_mod, "builtin_rules_dir", lambda: tmp_path / "rules")
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    import regen_fixture

    monkeypatch.setattr(regen_fixture, "builtin_rules_dir", lambda: tmp_path / "rules")
    return tmp_path, tmp_path / "fixtures" / "removals" / "CM599-todo-api", regen_fixture


def test_a_half_filled_scaffold_fails_its_own_test(scaffold):
    root, case_dir, regen = scaffold
    assert regen.main([str(case_dir)]) == 2  # the placeholder's output is never recorded
    assert sorted(p.name for p in case_dir.iterdir()) == ["before.cu", "fixture.yaml", "ok.cu"]
    rules = load_rules([root / "rules"]).rules
    case = load_cases(root / "fixtures")[0]
    # findings.txt recorded from the placeholder anyway (what the script did): the case's test still fails
    case.snapshot.write_text(snapshot_text(engine_for(case, rules).scan_bytes(case.before, case.before.read_bytes())
                                           .findings), encoding="utf-8")
    fails, _, n = rule_tests(root / "fixtures", ["CM599"])
    assert n == 1 and any("CM599-todo-api.yaml:" in f and "TODO is still here" in f for f in fails), fails
    # written (here: the TODO markers taken out): the script records the case, and its test passes
    for p in [*(root / "rules" / "removals").glob("CM599-*.yaml"), *case_dir.iterdir()]:
        p.write_text(p.read_text(encoding="utf-8").replace("TODO", "written"), encoding="utf-8")
    assert regen.main([str(case_dir)]) == 0
    assert rule_tests(root / "fixtures", ["CM599"])[0] == []


def test_a_missing_finding_names_the_cases_own_declaration(scaffold):
    root, case_dir, _ = scaffold
    before = case_dir / "before.cu"
    before.write_text(before.read_text(encoding="utf-8").replace("int main()", "int cudaTodoApi();\n\nint main()"),
                      encoding="utf-8")
    rules = load_rules([root / "rules"]).rules
    fails = check_case(load_cases(root / "fixtures")[0], rules)
    assert any("missing" in f and "before.cu declares `cudaTodoApi` (a function, line 4) itself" in f
               and "match/shadows.py" in f for f in fails), fails
