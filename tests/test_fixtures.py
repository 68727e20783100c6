"""Every fixture case: expected findings, pinned messages, golden fix, idempotence, clean negatives; and every
hand-written rule has a case named after it. The checks themselves live in `cudamigrate.toolcheck.fixtures.check_case`
(shared with `cudamigrate selftest`, `cudamigrate test` and scripts/regen_fixture.py)."""

from __future__ import annotations

import pytest

from cudamigrate.toolcheck.fixtures import CHECKS, check_case, hand_written_stems, load_cases, naming_problems

from .conftest import FIXTURES
from .helpers import all_rules

CASES = [c for c in load_cases(FIXTURES) if not c.semantic]  # semantic cases: test_semantic.py
JOBS = [(c, check) for c in CASES for check in CHECKS]


def test_there_are_fixtures():
    assert len(CASES) >= 4


@pytest.mark.parametrize("case,check", JOBS, ids=[f"{c.name}:{check}" for c, check in JOBS])
def test_case(case, check):
    assert check_case(case, all_rules(), checks=(check,)) == []


def test_every_rule_has_a_case_named_after_it():
    assert naming_problems(load_cases(FIXTURES), FIXTURES, hand_written_stems(all_rules())) == []


def test_naming_problems_are_reported(tmp_path):
    """The naming check can fail: a rule without a case, a case of an unknown rule, a misnamed case."""
    from cudamigrate.toolcheck.fixtures import Case

    root = tmp_path / "fixtures"
    dirs = [root / "removals" / "CM501-cudathread-to-cudadevice--latin1", root / "removals" / "CM599-nothing",
            root / "removals" / "CM501-short", root / "texture" / "forms", root / "catalog" / "CM598-x"]
    cases = [Case(d, {}) for d in dirs]
    probs = naming_problems(cases, root, {"CM501": "CM501-cudathread-to-cudadevice", "CM502": "CM502-warp"})
    assert probs == ["removals/CM599-nothing: not named after a rule file (`<rule stem>` or `<rule stem>--variant`)",
                     "removals/CM501-short: not named after a rule file (`<rule stem>` or `<rule stem>--variant`)",
                     "texture/forms: not named after a rule file (`<rule stem>` or `<rule stem>--variant`)",
                     "catalog/CM598-x: names unknown rule CM598",
                     "CM502-warp: no case named after it (fixtures/<family>/CM502-warp/)"]
