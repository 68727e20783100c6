"""GPU stage: every `gpu: {run: true}` fixture built, run on the GPU (original and fixed), outputs compared;
and the calibration benchmarks run. Skips as a whole, with one reason line, on machines without a GPU."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from .conftest import FIXTURES, gpu_available

if not gpu_available():
    pytest.skip("no GPU found: GPU stage skipped", allow_module_level=True)

from cudamigrate.toolcheck import calibrate as cal  # noqa: E402
from cudamigrate.toolcheck import selftest as st  # noqa: E402
from cudamigrate.toolcheck.fixtures import load_cases  # noqa: E402

pytestmark = pytest.mark.gpu

CASES = st.gpu_cases(load_cases(FIXTURES))
_REPORT: dict = {}


@pytest.fixture(scope="module")
def report():
    if not _REPORT:
        work = Path(tempfile.mkdtemp(prefix="cudamigrate-gpu-"))
        _REPORT["r"] = st.run_gpu_stage(FIXTURES, work=work)
    return _REPORT["r"]


def test_there_are_gpu_cases():
    assert CASES, "no fixture sets gpu: {run: true}"


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_gpu_case(name, report):
    r = next(x for x in report.results if x.name == name)
    if r.status == "skip":
        pytest.skip(f"{name}: " + "; ".join(r.reasons))
    assert r.status == "pass", st.table(st.Report(report.gpu, report.arch, report.nvcc, report.date, [r]))
    if r.compare not in ("run", "none"):  # manual-only cases just run; `none` only needs the fixed program to succeed
        assert r.identical is True


def test_calibration_benchmarks(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAMIGRATE_BENCH_SCALE", os.environ.get("CUDAMIGRATE_BENCH_SCALE", "0.05"))
    info = st.detect_gpu()
    assert info is not None
    doc, problems = cal.calibrate(info, cal.default_bench_dir(), work=tmp_path)
    assert not [p for p in problems if "skipped" not in p], problems
    entry = doc["gpus"][0]
    assert entry["gpu"] == info.name
    for rid in ("CM101", "CM102", "CM301", "CM303", "CM304"):
        rec = entry["rules"][rid]
        assert rec["bad_us"] > 0 and rec["good_us"] > 0, rec
    json.dumps(doc)
