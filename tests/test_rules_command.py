"""`cudamigrate rules` lists the hand-written rules a default scan runs; `--all` every rule loaded."""

from __future__ import annotations

import json

import pytest

from .helpers import all_rules, run_cli


def _ids(output: str) -> list[str]:
    return [ln.split()[0] for ln in output.splitlines() if ln.startswith("CM")]


def test_default_lists_hand_written_rules_that_run_by_default():
    rules = all_rules()
    r = run_cli("rules")
    assert r.exit_code == 0, r.output
    want = [x.id for x in rules if not x.generated and x.status != "opt-in"]
    assert _ids(r.output) == want
    hidden = [x for x in rules if x.generated or x.status == "opt-in"]
    assert hidden and any(x.generated for x in hidden) and any(x.status == "opt-in" for x in hidden)
    assert f"... and {len(hidden)} more" in r.output and "`cudamigrate rules --all`" in r.output


def test_all_lists_every_rule_including_generated_and_opt_in():
    rules = all_rules()
    r = run_cli("rules", "--all")
    assert r.exit_code == 0, r.output
    assert _ids(r.output) == [x.id for x in rules]
    assert "more (" not in r.output
    opt_in = next(x for x in rules if x.status == "opt-in")
    assert f"({opt_in.status})" in next(ln for ln in r.output.splitlines() if ln.startswith(opt_in.id + " "))


@pytest.mark.parametrize("show_all", [False, True])
def test_json_follows_the_same_selection(show_all):
    rules = all_rules()
    r = run_cli("rules", "--format", "json", *(["--all"] if show_all else []))
    doc = json.loads(r.output)
    want = [x.id for x in rules if show_all or (not x.generated and x.status != "opt-in")]
    assert [d["id"] for d in doc] == want
    assert all(d["generated"] == ("catalog" == d["family"]) for d in doc)


@pytest.mark.parametrize("extra", [[], ["--stats"], ["--format", "json"], ["--all"]])
def test_invalid_rule_file_exits_2_in_every_form(tmp_path, extra):
    d = tmp_path / "rules"
    d.mkdir()
    (d / "CM9300-x.yaml").write_text("id: CM9300\nname: x\nfamily: test\nsummary: s\nseverity: info\nmessage: m\n"
                                     "references: [t]\nmatch: {call: {names: [cudaFree]}}\nwhere: {nmae: cudaFree}\n")
    r = run_cli("rules", "--rules-dir", d, *extra)
    assert r.exit_code == 2, r.output
    assert f"{d / 'CM9300-x.yaml'}: where.nmae: unknown condition 'nmae' (did you mean 'name'?)" in r.output
