"""`(roi N)` is explained wherever it is shown (text output, `scan --help`, `explain`), and a rule's own
effort estimate (`cost: effort_minutes`) is what the findings, the plan and the reports count (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path

from .helpers import run_cli

CSR2CSC = (b"#include <cusparse.h>\nvoid f(cusparseHandle_t h) {\n"
           b"  cusparseScsr2csc(h, 0, 0, 0, 0, 0, 0, 0, 0, 0, CUSPARSE_ACTION_NUMERIC, CUSPARSE_INDEX_BASE_ZERO);\n}\n")
LEGACY = b"#include <cuda_runtime.h>\nvoid f() { cudaThreadSynchronize(); }\n"


def test_text_output_explains_roi(tmp_path: Path):
    (tmp_path / "a.cu").write_bytes(LEGACY)
    r = run_cli("scan", "a.cu", cwd=tmp_path)
    assert r.exit_code == 1 and "(roi 10)" in r.stdout
    assert "(roi N) = impact / effort" in r.stdout and "cudamigrate explain ID" in r.stdout
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "ok.cu").write_text("int main() { return 0; }\n")
    assert "impact / effort" not in run_cli("scan", ".", cwd=clean).stdout  # no findings, no ROI to explain


def test_help_and_explain_explain_roi(tmp_path: Path):
    assert "impact / effort" in run_cli("scan", "--help", cwd=tmp_path).stdout
    out = " ".join(run_cli("explain", "CM501", cwd=tmp_path).stdout.split())
    assert "ROI = impact / effort" in out and "build break (10)" in out


def test_rule_effort_minutes_is_counted(tmp_path: Path):
    """CM521 (manual) declares `effort_minutes: 60`: the finding, the plan and the JSON plan carry 60, not the
    generic 30 minutes of a manual finding."""
    (tmp_path / "a.cu").write_bytes(CSR2CSC)
    found = json.loads(run_cli("scan", "--format", "json", "a.cu", cwd=tmp_path).stdout)["findings"]
    assert [(f["rule"], f["applicability"], f["cost"]["effort_minutes"]) for f in found] == [("CM521", "manual", 60.0)]
    plan = json.loads(run_cli("plan", "--format", "json", "a.cu", cwd=tmp_path).stdout)
    assert plan["must"]["hours"] == 1.0
    assert "est. 1 h" in run_cli("plan", "a.cu", cwd=tmp_path).stdout
