"""CI formats: GitHub workflow commands, JSON Lines, JUnit XML."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

from cudamigrate.findings.model import Cost, Finding
from cudamigrate.report import github, jsonlines, junit
from cudamigrate.report.model import Run

from .reportutil import EXAMPLE, scan


def odd_run() -> Run:
    f = Finding("CM101", "legacy-stream-async-api", "streams", "error", "we:ird,dir/100%\nfile.cu", 3, 5, 4, 2, 10, 20,
                "50% of copies: <b>&amp;</b> ]]> \x01 bell\r\nsecond line, a:b", "snippet \x0b <tag>",
                cost=Cost("performance", 3, "manual", 5, 30, 0.6))
    return Run(findings=[f], errors=["x.cu: cannot read: 100%"], files_scanned=1, rules=[], target=(13, 0))


def test_github_escaping_follows_actions_toolkit():
    assert github.escape_data("a%b\r\nc:d,e") == "a%25b%0D%0Ac:d,e"
    assert github.escape_property("a%b\r\nc:d,e") == "a%25b%0D%0Ac%3Ad%2Ce"
    out = github.render(odd_run()).splitlines()
    assert len(out) == 2
    assert out[0].startswith("::error file=we%3Aird%2Cdir/100%25%0Afile.cu,line=3,col=5,endLine=4,title=CM101 legacy-stream-async-api::")
    # other control characters are shown escaped, never raw in the CI log (issue 15)
    assert out[0].endswith("::50%25 of copies: <b>&amp;</b> ]]> \\x01 bell%0D%0Asecond line, a:b")
    assert out[1] == "::error title=cudamigrate::x.cu: cannot read: 100%25"


def test_github_example(tmp_path):
    _, text = scan([EXAMPLE, "--format", "github"], tmp_path / "gh.txt")
    _, js = scan([EXAMPLE, "--format", "json"], tmp_path / "r.json")
    lines = text.splitlines()
    assert len(lines) == json.loads(js)["summary"]["findings"]
    rx = re.compile(r"^::(warning|error|notice) file=[^,]+,line=\d+,col=\d+,endLine=\d+,title=CM\d+ [\w-]+(,endColumn=\d+)?::\S")
    assert all(rx.match(x) for x in lines), lines


def test_json_lines_matches_json(tmp_path):
    _, text = scan([EXAMPLE, "--format", "json-lines"], tmp_path / "r.jsonl")
    _, js = scan([EXAMPLE, "--format", "json"], tmp_path / "r.json")
    rows = [json.loads(x) for x in text.splitlines()]
    assert rows == json.loads(js)["findings"] and rows
    run = odd_run()
    run.findings[0].message += " \u2028 \x85 é"
    out = jsonlines.render(run)
    assert len(out.splitlines()) == 1 and json.loads(out)["message"] == run.findings[0].message


def test_junit_example_is_well_formed(tmp_path):
    _, text = scan([EXAMPLE, "--format", "junit"], tmp_path / "r.xml")
    _, js = scan([EXAMPLE, "--format", "json"], tmp_path / "r.json")
    doc = json.loads(js)
    root = ET.fromstring(text.encode())
    assert root.tag == "testsuites"
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == doc["summary"]["findings"] == int(root.get("failures"))
    assert all(c.find("failure") is not None for c in cases)
    suites = {s.get("name").split()[0]: int(s.get("tests")) for s in root.findall("testsuite")}
    assert suites == doc["summary"]["by_rule"]


def test_junit_escapes_everything():
    text = junit.render(odd_run())
    root = ET.fromstring(text.encode())  # well-formed despite control characters, markup and ]]>
    fail = root.find("./testsuite/testcase/failure")
    assert fail.get("message").startswith("50% of copies: <b>&amp;</b> ]]> \ufffd bell")
    assert root.find("./testsuite/testcase/error") is not None or root.find(".//error") is not None


def test_junit_clean_run_has_one_passing_case():
    run = Run(findings=[], errors=[], files_scanned=3, rules=[], target=(13, 0))
    root = ET.fromstring(junit.render(run).encode())
    cases = root.findall(".//testcase")
    assert len(cases) == 1 and cases[0].find("failure") is None and root.get("failures") == "0"


def test_json_lines_records_follow_the_report_schema(tmp_path):
    from pathlib import Path

    import jsonschema

    import cudamigrate

    schema = json.loads((Path(cudamigrate.__file__).parent / "schemas" / "report.schema.json").read_text())
    item = schema["properties"]["findings"]["items"]
    _, text = scan([EXAMPLE, "--format", "json-lines"], tmp_path / "r.jsonl")
    for line in text.splitlines():
        jsonschema.validate(json.loads(line), item)
