"""What scanned trees put in file names, source lines and rule files never breaks an output (issue 15):
no raw control characters on the terminal or in GitHub annotations, no Infinity/NaN in JSON or SARIF,
escaping for JUnit XML, HTML and workflow commands, odd file names handled, a foreign baseline warned."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest


from .helpers import run_cli
from cudamigrate.report.github import command, escape_data, escape_property

ESC_LINE = b"int main() { cudaThreadSynchronize(); /* \x1b]8;;http://evil\x07click\x1b]8;;\x07 \x1b[2J */ }\n"
GOOD = b"int main() { cudaThreadSynchronize(); return 0; }\n"


def run(*args, cwd=None):
    return run_cli(*args, cwd=cwd)


def _strict_json(text: str):
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("fmt", ["text", "github"])
def test_control_characters_from_names_and_code_are_escaped(tmp_path, fmt):
    (tmp_path / "evil\x1b[31m.cu").write_bytes(ESC_LINE)
    (tmp_path / "bin\x1b]0;title\x07.cu").write_bytes(b"\x00\x01")  # an error line naming it
    r = run("scan", "--format", fmt, str(tmp_path))
    assert "\x1b" not in r.output and "\x07" not in r.output
    assert "evil\\x1b[31m.cu" in r.output
    assert "bin\\x1b]0;title\\x07.cu: binary file" in r.output
    if fmt == "text":
        assert "\\x1b]8;;http://evil\\x07click" in r.output  # the source line, shown escaped


def test_diff_on_a_terminal_is_escaped_but_piped_it_is_exact(tmp_path):
    p = tmp_path / "a.cu"
    p.write_bytes(ESC_LINE)
    r = run("fix", "--diff", "--select", "CM501", str(p))  # not a tty: byte-exact, usable by patch
    assert "\x1b[2J" in r.output


def test_github_workflow_command_escaping():
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%d\ne") == "a%3Ab%2Cc%25d%0Ae"
    line = command("warning", {"file": "dir,x:y.cu", "title": "CM1 a,b"}, "m\x1b[31m")
    assert line == "::warning file=dir%2Cx%3Ay.cu,title=CM1 a%2Cb::m\\x1b[31m"


def _hostile_cost_rule(tmp_path: Path) -> Path:
    rd = tmp_path / "rules"
    rd.mkdir()
    (rd / "CM9801-huge-cost.yaml").write_text(
        "id: CM9801\nname: huge-cost\nfamily: test\nsummary: s\nseverity: warning\nmessage: m\n"
        "match: {call: {names: [cudaThreadSynchronize]}}\nreferences: [test]\n"
        "cost:\n  impact: performance\n  adjust:\n"
        "    - {when: {argc: 0}, multiply: 1e308, reason: big}\n"
        "    - {when: {argc: 0}, multiply: 1e308, reason: bigger}\n"
        "    - {when: {argc: 0}, multiply: .inf, reason: infinite}\n")
    (rd / "CM9802-nan-cost.yaml").write_text(
        "id: CM9802\nname: nan-cost\nfamily: test\nsummary: s\nseverity: warning\nmessage: m\n"
        "match: {call: {names: [cudaThreadSynchronize]}}\nreferences: [test]\n"
        "cost:\n  impact: performance\n  adjust:\n    - {when: {argc: 0}, multiply: .nan, reason: nan}\n")
    return rd


@pytest.mark.parametrize("fmt", ["json", "sarif", "json-lines", "html"])
def test_huge_cost_multiplier_never_writes_infinity_or_nan(tmp_path, fmt):
    rd = _hostile_cost_rule(tmp_path)
    (tmp_path / "a.cu").write_bytes(GOOD)
    to_file = ["-o", str(tmp_path / "r.html")] if fmt == "html" else []  # HTML never goes to the terminal
    r = run("scan", "--no-builtin-rules", "--rules-dir", str(rd), "--format", fmt, *to_file, str(tmp_path / "a.cu"))
    assert r.exit_code == 1, r.output
    out = r.stdout if hasattr(r, "stdout") else r.output
    if fmt == "html":
        out = (tmp_path / "r.html").read_text()
        assert "<!DOCTYPE html>" in out
    assert "Infinity" not in out and "NaN" not in out
    if fmt == "json":
        doc = _strict_json(out)
        rois = sorted(f["cost"]["roi"] for f in doc["findings"])
        assert rois[0] == 0.0 and 1e6 < rois[1] <= 1e9
    elif fmt == "sarif":
        doc = _strict_json(out)
        assert all(0 <= res["rank"] <= 100 for res in doc["runs"][0]["results"])
    elif fmt == "json-lines":
        assert len([_strict_json(ln) for ln in out.splitlines()]) == 2


ODD_NAMES = ["-dash.cu", 'quo"te\'s.cu', "new\nline.cu", "com,ma:colon.cu", "amp&<tag>.cu", "per%cent.cu"]


def test_odd_file_names_in_every_format(tmp_path):
    d = tmp_path / "src"
    d.mkdir()
    for n in ODD_NAMES:
        (d / n).write_bytes(GOOD)
    r = run("scan", "--format", "text", str(d))
    assert r.exit_code == 1
    text_lines = [ln for ln in r.output.splitlines() if "CM501" in ln]
    assert len(text_lines) == len(ODD_NAMES)  # one line each: the newline in a name is shown as \n
    assert any("new\\nline.cu:1:" in ln for ln in text_lines)
    doc = _strict_json(run("scan", "--format", "json", str(d)).output)
    assert len(doc["findings"]) == len(ODD_NAMES)
    sarif = _strict_json(run("scan", "--format", "sarif", str(d)).output)
    assert len(sarif["runs"][0]["results"]) == len(ODD_NAMES)
    junit = ET.fromstring(run("scan", "--format", "junit", str(d)).output)
    assert len(junit.findall(".//failure")) == len(ODD_NAMES)
    gh = [ln for ln in run("scan", "--format", "github", str(d)).output.splitlines() if ln.startswith("::")]
    assert len(gh) == len(ODD_NAMES) and any("file=" in ln and "com%2Cma%3Acolon.cu" in ln for ln in gh)
    run("scan", "--format", "html", "-o", str(tmp_path / "r.html"), str(d))
    html = (tmp_path / "r.html").read_text()
    assert "<!DOCTYPE html>" in html and "amp&<tag>.cu" not in html and "</script><" not in html.split("<script", 2)[-1].split("</script>")[0]
    # a leading dash is a path, not an option, after `--`
    r = run("scan", "--", str(d / "-dash.cu"))
    assert "-dash.cu:1:" in r.output and r.exit_code == 1
    r = run("fix", "--select", "CM501", str(d))
    assert r.exit_code == 0 and all(b"cudaDeviceSynchronize" in (d / n).read_bytes() for n in ODD_NAMES)


def test_baseline_from_another_tree_warns(tmp_path):
    a = tmp_path / "a"
    b = tmp_path / "b"
    for d in (a, b):
        d.mkdir()
    (a / "one.cu").write_bytes(GOOD)
    (b / "two.cu").write_bytes(GOOD)
    base = tmp_path / "baseline.json"
    run("scan", "--write-baseline", str(base), "--exit-zero", str(a))
    r = run("scan", "--baseline", str(base), str(b))
    assert "warning:" in r.output and "shares no file with this scan" in r.output
    assert "two.cu:1:" in r.output
    r = run("scan", "--baseline", str(base), str(a))  # the right tree: no warning, nothing new
    assert "shares no file" not in r.output and r.exit_code == 0
