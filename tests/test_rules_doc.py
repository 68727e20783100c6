"""rules/README.md's vocabulary tables are the registries' docs: a word added, renamed or re-documented in code
without `python scripts/gen_rules_doc.py` fails here."""

from __future__ import annotations

import subprocess
import sys

from cudamigrate.findings import cost
from cudamigrate.match import conditions, edits
from cudamigrate.match.kinds import BUILTINS, MATCHER_KINDS
from cudamigrate.core.registry import Schema
from cudamigrate.knowledge.readme_tables import tables, update

from .helpers import ROOT

README = ROOT / "rules" / "README.md"


def test_readme_tables_match_the_registries():
    text = README.read_text(encoding="utf-8")
    new, missing = update(text)
    assert not missing, f"rules/README.md lacks generated blocks for {missing}"
    assert new == text, "rules/README.md is stale: run python scripts/gen_rules_doc.py"


def test_every_registered_word_is_in_the_readme():
    text = README.read_text(encoding="utf-8")
    regs = [MATCHER_KINDS, BUILTINS, conditions.CONDITIONS, conditions.ARG_TESTS, edits.EDIT_OPS, edits.EDIT_TARGETS,
            cost.COST_KEYS]
    for reg in regs:
        for e in reg:
            assert f"| `{e.name.replace('*', 'NAME')}` |" in text, (reg.kind, e.name)
            assert e.doc, (reg.kind, e.name)
    # the words the hand-written README had fallen behind on
    for word in ("preceded_by", "arg_type", "argc_matches_params", "statement_matches", "semantic"):
        assert f"| `{word}` |" in text


def test_a_new_condition_makes_the_readme_stale(monkeypatch):
    """The check can fail: an entry registered without regenerating the README is caught."""
    monkeypatch.setitem(conditions.CONDITIONS.entries, "zz_new", conditions.CONDITIONS.entries["argc"].__class__(
        "zz_new", Schema("N", lambda v, p, c: None), lambda v, m, ctx: True, "a new condition."))
    assert "zz_new" in tables()["conditions"]
    text = README.read_text(encoding="utf-8")
    assert update(text)[0] != text


def test_generator_check_mode_agrees():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_rules_doc.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
