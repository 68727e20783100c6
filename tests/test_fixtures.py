"""Every fixture case: expected findings, golden fix, idempotence, clean negatives."""

from __future__ import annotations

from collections import Counter

import pytest

from cudamigrate.fixtures import expected_findings, load_cases

from .conftest import FIXTURES
from .helpers import engine_for, fix_text

CASES = [c for c in load_cases(FIXTURES) if not c.settings.get("semantic")]  # semantic cases: test_semantic.py
IDS = [c.name for c in CASES]


def test_there_are_fixtures():
    assert len(CASES) >= 4


@pytest.mark.parametrize("case", [c for c in CASES if c.before], ids=[c.name for c in CASES if c.before])
def test_expected_findings(case):
    eng = engine_for(case)
    data = case.before.read_bytes()
    res = eng.scan_bytes(case.before, data)
    assert not res.errors, res.errors
    got = Counter((f.line, f.rule_id) for f in res.findings)
    want = expected_findings(data.decode("utf-8", "replace"))  # a Latin-1 fixture too
    assert want, f"{case.before} has no `// expect:` annotations"
    assert got == want, f"unexpected: {dict(got - want)}; missing: {dict(want - got)}"


@pytest.mark.parametrize("case", [c for c in CASES if c.before and c.after], ids=[c.name for c in CASES if c.before and c.after])
def test_fix_matches_golden(case):
    eng = engine_for(case)
    fixed = fix_text(eng, case.before, case.before.read_bytes(), unsafe=case.unsafe, display_only=case.display_only)
    expected = case.after.read_bytes()
    # bytes, not text: a fixture with Latin-1 bytes must come back with exactly those bytes
    assert fixed.decode("utf-8", "replace") == expected.decode("utf-8", "replace")
    assert fixed == expected


@pytest.mark.parametrize("case", [c for c in CASES if c.after], ids=[c.name for c in CASES if c.after])
def test_fix_is_idempotent(case):
    eng = engine_for(case)
    data = case.after.read_bytes()
    assert fix_text(eng, case.after, data, unsafe=case.unsafe, display_only=case.display_only) == data


@pytest.mark.parametrize("case", [c for c in CASES if c.ok], ids=[c.name for c in CASES if c.ok])
def test_lookalikes_are_not_flagged(case):
    eng = engine_for(case)
    res = eng.scan_bytes(case.ok, case.ok.read_bytes())
    assert not res.errors, res.errors
    assert [(f.line, f.rule_id, f.message) for f in res.findings] == []
