"""`fix` never flags its own output: after fixing every fixture case and every fixture project (and the example
app), no remaining finding starts in text the fix wrote (generated helpers, marker comments, rewritten code),
and what `fix` counts adds up: fixed + remaining == the findings a scan of the input reported."""

from __future__ import annotations

import difflib
import json
import re
import shutil
from pathlib import Path

import pytest

from cudamigrate.findings.model import Finding
from cudamigrate.fix.apply import fix_bytes
from cudamigrate.toolcheck.fixtures import engine_for, load_cases

from .conftest import FIXTURES, ROOT
from .helpers import all_rules, run_cli

CASES = [c for c in load_cases(FIXTURES) if not c.semantic and c.before is not None]
PROJECTS = sorted([p for p in (FIXTURES / "projects").iterdir() if p.is_dir()]
                  + [p for p in (FIXTURES / "texture").iterdir() if p.is_dir() and p.name.startswith("project")]
                  + [ROOT / "examples" / "legacy-app"])


def written_spans(before: bytes, after: bytes) -> list[tuple[int, int]]:
    """The byte ranges of `after` that the fix inserted or replaced."""
    sm = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return [(j1, j2) for op, _, _, j1, j2 in sm.get_opcodes() if op in ("replace", "insert")]


def on_written(findings: list[Finding], spans: list[tuple[int, int]]) -> list[str]:
    return [f"{f.path}:{f.line}:{f.column} {f.rule_id} {f.snippet.strip()[:60]}" for f in findings
            if any(s <= f.start_byte < e for s, e in spans)]


def test_written_spans_see_an_insertion():
    """The check can fail: a finding in inserted text is found."""
    spans = written_spans(b"int a;\n", b"int a;\nint b;\n")
    f = Finding("CM1", "n", "fam", "info", "t.cu", 2, 1, 2, 6, 7, 12, "m", "int b")
    assert spans and on_written([f], spans)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_fixed_case_reports_nothing_the_fix_wrote(case):
    eng = engine_for(case, all_rules())
    data = case.before.read_bytes()
    scanned = eng.scan_bytes(case.before, data, str(case.before)).findings
    res = fix_bytes(eng, case.before, data, str(case.before), unsafe=case.unsafe, display_only=case.display_only)
    assert on_written(res.remaining, written_spans(data, res.fixed)) == []
    assert len(res.applied) + len(res.remaining) == len(scanned), (
        [f"{f.rule_id}:{f.line}" for f in res.applied], [f"{f.rule_id}:{f.line}" for f in res.remaining])


SUMMARY = re.compile(r"Fixed (\d+) finding\(s\) in \d+ file\(s\); (\d+) remaining")


@pytest.mark.parametrize("project", PROJECTS, ids=[str(p.relative_to(ROOT)) for p in PROJECTS])
def test_a_fixed_project_reports_nothing_the_fix_wrote(project, tmp_path):
    proj = tmp_path / project.name
    shutil.copytree(project, proj)
    before = {p: p.read_bytes() for p in proj.rglob("*") if p.is_file()}
    scan = run_cli("scan", "--format", "json", ".", cwd=proj)
    scanned = json.loads(scan.stdout)["findings"]
    fix = run_cli("fix", "--unsafe-fixes", ".", cwd=proj)
    m = SUMMARY.search(fix.stdout)
    assert m, fix.stdout + fix.stderr
    after = json.loads(run_cli("scan", "--format", "json", ".", cwd=proj).stdout)["findings"]
    assert int(m[1]) + int(m[2]) == len(scanned), fix.stderr
    assert int(m[2]) == len(after), fix.stderr  # what fix says remains is what a scan of its output finds
    bad = []
    for f in after:
        p = proj / f["path"] if not Path(f["path"]).is_absolute() else Path(f["path"])
        data = p.read_bytes()
        start = _offset(data, f["line"], f["column"])
        if any(s <= start < e for s, e in written_spans(before[p], data)):
            bad.append(f"{f['path']}:{f['line']}:{f['column']} {f['rule']}")
    assert bad == [], fix.stderr


def _offset(data: bytes, line: int, column: int) -> int:
    """The byte offset of 1-based (line, column); the column counts bytes, as findings do."""
    lines = data.split(b"\n")
    return sum(len(x) + 1 for x in lines[: line - 1]) + column - 1
