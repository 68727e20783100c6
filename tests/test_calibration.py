"""Calibration: choosing the entry for the user's GPU, falling back to declared estimates, and showing the
measured figure in findings, JSON and `cudamigrate explain`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from cudamigrate.toolcheck import calibrate as cal
from cudamigrate.findings.measured import all_measurements, load_calibration, lookup, normalize_gpu, select_entry
from cudamigrate.cli.main import main
from cudamigrate.toolcheck.gpu import GpuInfo

from .helpers import engine_for


def _doc():
    def rec(fig):
        return {"figure": fig, "bad_us": 38.0, "good_us": 4.0, "ratio": 9.5}

    return {"version": 1, "gpus": [
        {"gpu": "NVIDIA A100-SXM4-80GB", "date": "2026-01-01T00:00:00Z", "rules": {"CM101": rec("1 µs per call vs 1 µs")}},
        {"gpu": "NVIDIA H200", "date": "2026-01-01T00:00:00Z", "rules": {"CM101": rec("old")}},
        {"gpu": "NVIDIA H200", "date": "2026-12-03T07:00:00Z", "rules": {
            "CM101": {**rec("38 µs per call vs 4 µs"), "summary": "measured on NVIDIA H200: 38 µs per call vs 4 µs (9.5x)"},
            "cublas-handle-per-call": rec("250 µs per call vs 9 µs")}},
    ]}


@pytest.fixture
def calfile(tmp_path):
    p = tmp_path / "cal.json"
    p.write_text(json.dumps(_doc()))
    return p


def test_normalize():
    assert normalize_gpu("NVIDIA  H200") == normalize_gpu("h200") == "h200"


def test_selects_newest_entry_of_matching_gpu(calfile):
    c = load_calibration(calfile.name, calfile.parent, gpu="NVIDIA H200")
    assert c["CM101"]["summary"] == "measured on NVIDIA H200: 38 µs per call vs 4 µs (9.5x)"
    assert c["cublas-handle-per-call"]["summary"] == "measured on NVIDIA H200: 250 µs per call vs 9 µs"
    assert c["CM101"]["gpu"] == "NVIDIA H200"
    assert load_calibration(calfile.name, calfile.parent, gpu="h200")["CM101"]["figure"].startswith("38")


def test_no_matching_gpu_falls_back(calfile, monkeypatch):
    assert load_calibration(calfile.name, calfile.parent, gpu="NVIDIA GeForce RTX 4090") is None
    monkeypatch.delenv("CUDAMIGRATE_GPU_NAME", raising=False)
    monkeypatch.setenv("CUDAMIGRATE_NO_GPU", "1")
    from cudamigrate.toolcheck import gpu

    gpu.first_gpu_name.cache_clear()
    assert load_calibration(calfile.name, calfile.parent) is None  # no GPU: declared estimates
    gpu.first_gpu_name.cache_clear()


def test_gpu_from_environment(calfile, monkeypatch):
    monkeypatch.setenv("CUDAMIGRATE_GPU_NAME", "NVIDIA A100-SXM4-80GB")
    c = load_calibration(calfile.name, calfile.parent)
    assert c["CM101"]["figure"] == "1 µs per call vs 1 µs"


def test_missing_or_broken_file(tmp_path):
    assert load_calibration("nope.json", tmp_path, gpu="NVIDIA H200") is None
    (tmp_path / "bad.json").write_text("{not json")
    assert load_calibration("bad.json", tmp_path, gpu="NVIDIA H200") is None
    (tmp_path / "empty.json").write_text('{"gpus": []}')
    assert load_calibration("empty.json", tmp_path, gpu="NVIDIA H200") is None
    assert select_entry(None, "x") is None


def test_lookup_by_id_then_calibration_key(calfile):
    c = load_calibration(calfile.name, calfile.parent, gpu="NVIDIA H200")
    assert lookup(c, SimpleNamespace(id="CM101", cost={}))["figure"].startswith("38")
    r = SimpleNamespace(id="CM210", cost={"calibration": "cublas-handle-per-call"})
    assert lookup(c, r)["figure"].startswith("250")
    assert lookup(c, SimpleNamespace(id="CM999", cost={})) is None
    assert lookup(None, r) is None
    assert [m["gpu"] for m in all_measurements(r, calfile.name, calfile.parent)] == ["NVIDIA H200"]


BEFORE = b"""#include <cuda_runtime.h>
int main() {
  float *d; cudaStream_t s; cudaStreamCreate(&s);
  cudaMemsetAsync(d, 0, 16);
  return 0;
}
"""


def _scan(calibration):
    eng = engine_for(select=["CM101"], calibration=calibration)
    res = eng.scan_bytes(Path("x.cu"), BEFORE)
    assert len(res.findings) == 1, res.findings
    return res.findings[0]


def test_findings_carry_the_measured_figure(calfile):
    c = load_calibration(calfile.name, calfile.parent, gpu="NVIDIA H200")
    f = _scan(c)
    assert f.cost.measured == "measured on NVIDIA H200: 38 µs per call vs 4 µs (9.5x)"
    assert f.message.endswith("(measured on NVIDIA H200: 38 µs per call vs 4 µs (9.5x))")
    f0 = _scan(None)
    assert f0.cost.measured is None and "measured" not in f0.message
    # the measured slowdown (9.5x) scales the declared impact by 0.5 + log10(9.5)
    assert f.cost.roi == pytest.approx(f0.cost.roi * 1.478, rel=1e-3)
    assert any("measured 9.5x slowdown" in x for x in f.cost.factors)


def test_measured_factor_bounds():
    from cudamigrate.findings.cost import measured_factor

    assert measured_factor(None) is None and measured_factor(0) is None
    assert measured_factor(1.0) == 0.5  # no measurable difference: half the declared impact
    assert measured_factor(3.4) == pytest.approx(1.031, abs=1e-3)
    assert measured_factor(2089.8) == 3.0  # capped


def test_json_report_and_cli_use_the_configured_calibration(calfile, tmp_path, monkeypatch):
    (tmp_path / "x.cu").write_bytes(BEFORE)
    (tmp_path / ".cudamigrate.toml").write_text(f'calibration = "{calfile.name}"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CUDAMIGRATE_GPU_NAME", "NVIDIA H200")
    res = CliRunner().invoke(main, ["scan", "--select", "CM101", "--format", "json", "x.cu"])
    doc = json.loads(res.output)
    findings = doc["findings"] if isinstance(doc, dict) else doc
    assert findings[0]["cost"]["measured"].startswith("measured on NVIDIA H200: 38 µs")
    res = CliRunner().invoke(main, ["explain", "CM101"])
    assert res.exit_code == 0
    assert "Measured cost:" in res.output
    assert "measured on NVIDIA H200: 38 µs per call vs 4 µs (9.5x) (your GPU)" in res.output
    monkeypatch.setenv("CUDAMIGRATE_GPU_NAME", "Some Other GPU")
    res = CliRunner().invoke(main, ["scan", "--select", "CM101", "--format", "json", "x.cu"])
    doc = json.loads(res.output)
    findings = doc["findings"] if isinstance(doc, dict) else doc
    assert findings[0]["cost"]["measured"] is None


def test_explain_without_calibration(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["explain", "CM102"])
    assert res.exit_code == 0
    # the shipped calibration (if any) lists its GPUs; without one the declared estimate applies
    assert "declared estimate applies" in res.output or "Measured cost:" in res.output


def test_calibration_document_from_benchmark_lines(tmp_path):
    lines = [
        {"bench": "legacy_stream_launch", "key": "legacy-stream-launch", "rules": ["CM102"], "unit": "per launch",
         "bad_us": 38.25, "good_us": 4.0, "bad": "k<<<g,b>>>", "good": "per-thread", "repeats": 7},
        {"bench": "cublas_handle", "key": "cublas-handle-per-call", "rules": [], "unit": "per call",
         "bad_us": 1250.0, "good_us": 9.5},
        {"bench": "thrust_sync", "key": "thrust-implicit-sync", "rules": ["CM301", "CM302"], "unit": "per Thrust call",
         "bad_us": 20.0, "good_us": 20.1},
    ]
    info = GpuInfo("NVIDIA H200", "580.65", "9.0")
    entry = cal.entry_from_lines(info, lines, "13.0.88")
    assert entry["gpu"] == "NVIDIA H200" and entry["cuda"] == "13.0.88"
    r = entry["rules"]
    assert r["CM102"]["summary"] == "measured on NVIDIA H200: 38.2 µs per launch vs 4 µs (9.6x)"
    assert r["legacy-stream-launch"]["bad_us"] == 38.25
    assert r["cublas-handle-per-call"]["figure"] == "1.25 ms per call vs 9.5 µs"
    assert r["CM301"] == r["CM302"] and "no measurable difference" in r["CM301"]["summary"]
    # merge keeps other GPUs, replaces this one
    out = tmp_path / "calibration.json"
    out.write_text(json.dumps(_doc()))
    merged = cal.merge_into(out, {"version": 1, "gpus": [entry]})
    assert [e["gpu"] for e in merged["gpus"]] == ["NVIDIA A100-SXM4-80GB", "NVIDIA H200"]
    out.write_text(json.dumps(merged))
    c = load_calibration(out.name, out.parent, gpu="NVIDIA H200")
    assert c["CM102"]["ratio"] == pytest.approx(9.5625, abs=1e-3)


def test_calibrate_cli_writes_and_merges(tmp_path, monkeypatch):
    from cudamigrate.toolcheck import selftest

    info = GpuInfo("NVIDIA H200", "580.159.03", "9.0")
    line = {"bench": "legacy_stream_launch", "key": "legacy-stream-launch", "rules": ["CM102"], "unit": "per launch",
            "bad_us": 30.0, "good_us": 5.0}
    monkeypatch.setattr(selftest, "detect_gpu", lambda: info)
    monkeypatch.setattr(cal, "calibrate", lambda i, d, **kw: ({"version": 1, "gpus": [cal.entry_from_lines(i, [line], "13.0.88")]}, []))
    out = tmp_path / "calibration.json"
    out.write_text(json.dumps(_doc()))
    res = CliRunner().invoke(main, ["calibrate", "--out", str(out), "--merge", "--bench-dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert [e["gpu"] for e in doc["gpus"]] == ["NVIDIA A100-SXM4-80GB", "NVIDIA H200"]
    assert doc["gpus"][1]["rules"]["CM102"]["figure"] == "30 µs per launch vs 5 µs"
    # nothing measured: nothing written
    monkeypatch.setattr(cal, "calibrate", lambda i, d, **kw: ({"version": 1, "gpus": [cal.entry_from_lines(i, [], None)]},
                                                              ["x.cu: run failed"]))
    out2 = tmp_path / "c2.json"
    res = CliRunner().invoke(main, ["calibrate", "--out", str(out2), "--bench-dir", str(tmp_path)])
    assert res.exit_code == 1 and not out2.exists()


def test_the_gpu_name_is_kept_while_driver_gpus_and_nvidia_smi_are_unchanged(tmp_path, monkeypatch):
    """nvidia-smi is asked once; later processes (here: the per-process memo cleared) read the kept name while the
    driver's procfs (version, each GPU's information), the visible device nodes and nvidia-smi are unchanged, and
    ask again when one changes or the procfs cannot be read."""
    from cudamigrate.toolcheck import gpu

    calls = tmp_path / "calls"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho x >> {calls}\necho 'NVIDIA H100 80GB HBM3'\n")
    smi.chmod(0o755)
    proc = tmp_path / "proc"
    (proc / "gpus" / "0000:01:00.0").mkdir(parents=True)
    (proc / "version").write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.0\n")
    info = proc / "gpus" / "0000:01:00.0" / "information"
    info.write_text("Model: \t\t NVIDIA H100 80GB HBM3\nBus Location: \t 0000:01:00.0\n")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CUDAMIGRATE_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("CUDAMIGRATE_NO_GPU", "CUDAMIGRATE_NO_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(gpu, "PROC_NVIDIA", str(proc))

    def asked() -> tuple[str | None, int]:
        gpu.first_gpu_name.cache_clear()
        name = gpu.first_gpu_name()
        return name, len(calls.read_text().splitlines()) if calls.exists() else 0

    try:
        assert asked() == ("NVIDIA H100 80GB HBM3", 1)
        assert asked() == ("NVIDIA H100 80GB HBM3", 1)  # kept: nvidia-smi not run
        info.write_text("Model: \t\t NVIDIA H200\nBus Location: \t 0000:01:00.0\n")  # another GPU in that slot
        assert asked() == ("NVIDIA H100 80GB HBM3", 2)  # (the fake nvidia-smi's answer) asked again
        assert asked()[1] == 2
        monkeypatch.setattr(gpu, "PROC_NVIDIA", str(tmp_path / "missing"))
        assert asked()[1] == 3 and asked()[1] == 4  # no procfs: asked at every run, as before
    finally:
        gpu.first_gpu_name.cache_clear()
