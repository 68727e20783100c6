"""The GPU stage's machinery, tested without a GPU: output comparison, verdicts, the table, GPU detection
fallbacks, and (with nvcc) that every GPU case and every benchmark builds and links for sm_90."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudamigrate.toolcheck import build
from cudamigrate.toolcheck import calibrate as cal
from cudamigrate.toolcheck import selftest as st
from cudamigrate.cli.main import main
from cudamigrate.toolcheck.fixtures import Case, load_cases

from .conftest import FIXTURES


# ----------------------------------------------------------------- comparison
def test_exact_lines():
    assert st.compare_outputs("a=1\nb=2\n", "a=1\nb=2").identical
    c = st.compare_outputs("a=1\nb=3\n", "a=1\nb=2\n")
    assert not c.identical and "line 2" in c.detail and "'b=2'" in c.detail


def test_exact_mode_is_strict_about_numbers():
    assert not st.compare_outputs("sum=1.000001", "sum=1.0").identical
    assert not st.compare_outputs("sum=1.0", "sum=1.00").identical


def test_numbers_within_tolerance():
    assert st.compare_outputs("sum=1.000001 max=3e-9\n", "sum=1.0 max=0\n", 1e-5).identical
    assert st.compare_outputs("x=100000.5", "x=100000.0", 1e-5).identical  # relative for large values
    assert st.compare_outputs("x=-2.5e+03 y=nan", "x=-2500.0 y=NaN", 1e-5).identical


def test_numbers_outside_tolerance():
    c = st.compare_outputs("sum=1.001\n", "sum=1.0\n", 1e-5)
    assert not c.identical and "tolerance 1e-05" in c.detail


def test_text_around_numbers_must_match():
    assert not st.compare_outputs("sum=1.0", "total=1.0", 1e-3).identical
    assert not st.compare_outputs("1 2 3", "1 2", 1e-3).identical


def test_line_count_mismatch():
    c = st.compare_outputs("a\nb\nc\n", "a\nb\n")
    assert not c.identical and "2 line(s) expected, got 3" in c.detail and "'c'" in c.detail
    assert not st.compare_outputs("", "a\n").identical


def test_ignore_patterns():
    assert st.compare_outputs("t=1.23 ms\nok\n", "t=9.99 ms\nok\n", ignore=[r"^t=.* ms$"]).identical


# ----------------------------------------------------------------- verdicts from (fake) program outputs
def _case(tmp_path: Path, settings: dict, expected: str | None = None) -> Case:
    d = tmp_path / "fam" / "case"
    d.mkdir(parents=True)
    (d / "before.cu").write_text("int main() { return 0; }\n")
    if expected is not None:
        (d / "expected.txt").write_text(expected)
    return Case(d, settings)


def _out(stdout: str, rc: int | None = 0, secs: float = 0.01, timed_out: bool = False) -> st.RunOutput:
    return st.RunOutput(rc, stdout, "" if not timed_out else "timed out after 1s", secs, timed_out)


def test_judge_identical(tmp_path):
    case = _case(tmp_path, {"gpu": {"run": True}})
    r = st.CaseResult(case.name)
    st.judge(r, case, {"before": _out("sum=2.0\n"), "after": _out("sum=2.0\n")})
    assert r.identical and r.status == "pending" and r.ran == {"before": True, "after": True}


def test_judge_mismatch(tmp_path):
    case = _case(tmp_path, {"gpu": {"run": True, "tolerance": 1e-6}})
    r = st.CaseResult(case.name)
    st.judge(r, case, {"before": _out("sum=2.0\n"), "after": _out("sum=2.5\n")})
    assert r.identical is False and r.status == "fail"
    assert "differs from the original" in r.reasons[0]


def test_judge_tolerance(tmp_path):
    case = _case(tmp_path, {"gpu": {"run": True, "tolerance": 1e-5}})
    r = st.CaseResult(case.name)
    st.judge(r, case, {"before": _out("sum=2.0000001\n"), "after": _out("sum=2.0\n")})
    assert r.identical is True


def test_judge_crash_and_timeout(tmp_path):
    case = _case(tmp_path, {"gpu": {"run": True}})
    r = st.CaseResult(case.name)
    st.judge(r, case, {"before": _out("x\n", timed_out=True, rc=None), "after": _out("x\n", rc=1)})
    assert r.status == "fail" and r.identical is False
    assert any("timed out" in x for x in r.reasons) and any("exit status 1" in x for x in r.reasons)


def test_judge_against_expected_txt(tmp_path):
    case = _case(tmp_path, {"compile": {"before": "fail"}, "gpu": {"run": True, "compare": "expected"}}, "v=3\n")
    (case.dir / "after.cu").write_text("int main() { return 0; }\n")
    r = st.CaseResult(case.name, compare=st.compare_mode(case))
    assert r.compare == "expected"
    st.judge(r, case, {"after": _out("v=3\n")})
    assert r.identical is True
    r2 = st.CaseResult(case.name, compare="expected")
    st.judge(r2, case, {"after": _out("v=4\n")})
    assert r2.status == "fail" and "expected.txt" in r2.reasons[0]


def test_compare_modes(tmp_path):
    c = _case(tmp_path, {"compile": {"before": "none"}, "gpu": {"run": True}})
    assert st.compare_mode(c) == "run"  # no after.*: the original just has to run
    (c.dir / "after.cu").write_text("int main() { return 0; }\n")
    assert st.compare_mode(c) == "expected"
    assert st.compare_mode(Case(c.dir, {"gpu": {"run": True}})) == "before"
    assert st.compare_mode(Case(c.dir, {"gpu": {"run": True, "compare": "none"}})) == "none"
    assert st.programs("expected") == ["after"] and st.programs("run") == ["before"]


def test_judge_run_and_none_modes(tmp_path):
    case = _case(tmp_path, {"gpu": {"run": True}})
    r = st.CaseResult(case.name, compare="run")
    st.judge(r, case, {"before": _out("anything\n")})
    assert r.status == "pending" and r.identical is None
    r = st.CaseResult(case.name, compare="run")
    st.judge(r, case, {"before": _out("", rc=3)})
    assert r.status == "fail"
    r = st.CaseResult(case.name, compare="none")
    st.judge(r, case, {"before": _out("NVRTC_ERROR_INVALID_OPTION\n", rc=1), "after": _out("ok\n")})
    assert r.status == "pending" and r.ran == {"before": False, "after": True}
    r = st.CaseResult(case.name, compare="none")
    st.judge(r, case, {"before": _out("x\n"), "after": _out("", rc=1)})
    assert r.status == "fail"


def test_driver_mismatch_is_explained(tmp_path):
    case = _case(tmp_path, {"gpu": {"run": True}})
    r = st.CaseResult(case.name)
    o = st.RunOutput(2, "", "CUDA error CUDA driver version is insufficient for CUDA runtime version", 0.1)
    st.judge(r, case, {"before": o, "after": o})
    assert "driver is older than the CUDA runtime" in r.reasons[0]


def test_table_and_json():
    ok = st.CaseResult("streams/a", fix_matches_after=True, built={"before": True, "after": True},
                       ran={"before": True, "after": True}, identical=True,
                       seconds={"before": 0.5, "after": 0.25}, status="pass")
    bad = st.CaseResult("thrust/b", compare="expected", fix_matches_after=True, built={"after": True},
                        ran={"after": True}, identical=False, seconds={"after": 0.1}, status="fail",
                        reasons=["output differs from expected.txt: line 1 differs"])
    rep = st.Report({"name": "NVIDIA H200", "driver": "1", "compute_cap": "9.0", "count": 1}, "sm_90", "13.0.88",
                    "now", [ok, bad])
    t = st.table(rep)
    lines = t.splitlines()
    assert lines[0].split() == ["fixture", "fix==after", "built", "ran", "identical", "before", "ms", "after", "ms",
                                "status"]
    row = next(ln for ln in lines if ln.startswith("streams/a")).split()
    assert row == ["streams/a", "yes", "2/2", "2/2", "yes", "500", "250", "pass"]
    row = next(ln for ln in lines if ln.startswith("thrust/b")).split()
    assert row[:5] == ["thrust/b", "yes", "1/1", "1/1", "NO"] and row[-1] == "fail"
    assert "thrust/b: output differs" in t
    assert "2 case(s) on NVIDIA H200 (sm_90): 1 pass, 1 fail" in t
    assert not rep.ok
    doc = json.loads(json.dumps(rep.to_json()))
    assert doc["summary"] == {"pass": 1, "fail": 1} and doc["cases"][1]["identical"] is False


# ----------------------------------------------------------------- detection and CLI without a GPU
def test_no_gpu(monkeypatch):
    monkeypatch.setenv("CUDAMIGRATE_NO_GPU", "1")
    assert st.detect_gpu() is None
    assert st.resolve_arch("auto", None) == "sm_90"
    assert st.resolve_arch("sm_100", None) == "sm_100"
    assert st.resolve_arch("auto", st.GpuInfo("NVIDIA H200", "570", "9.0")) == "sm_90"
    assert st.resolve_arch("12.0", None) == "sm_120"


def test_cli_without_gpu_prints_one_line(monkeypatch):
    monkeypatch.setenv("CUDAMIGRATE_NO_GPU", "1")
    for cmd in (["selftest", "--gpu"], ["calibrate"]):
        res = CliRunner().invoke(main, cmd)
        assert res.exit_code == 0, res.output
        assert res.output == st.NO_GPU_LINE + "\n"


def test_static_selftest_cli():
    # the streams family: the CLI path (every family's cases are covered by test_fixtures.py)
    res = CliRunner().invoke(main, ["selftest", "--fixtures", str(FIXTURES / "streams")])
    assert res.exit_code == 0, res.output
    assert "all good" in res.output
    bad = FIXTURES.parent / "nonexistent-fixtures"
    res = CliRunner().invoke(main, ["selftest", "--gpu", "--build-only", "--fixtures", str(bad)])
    assert res.exit_code != 0


def test_case_libs_from_yaml_and_includes(tmp_path):
    d = tmp_path / "f" / "c"
    d.mkdir(parents=True)
    (d / "before.cu").write_text('#include <cublas_v2.h>\n#include "nvrtc.h"\nint main(){}\n')
    c = Case(d, {"compile": {"libs": ["cufft"]}, "gpu": {"libs": ["nvrtc", "curand"]}})
    assert st.case_libs(c) == ["cufft", "nvrtc", "curand", "cublas"]
    assert build.libs_from_includes("// #include <cublas_v2.h>\n") == []


def test_bench_json_line_parsing():
    line = {"bench": "b", "key": "legacy-stream-launch", "rules": ["CM102"], "unit": "per launch", "bad_us": 38.2,
            "good_us": 4.1, "ratio": 9.3, "bad": "x", "good": "y"}
    out = "warming up\n" + json.dumps(line) + "\n"
    assert cal.parse_line(out) == line
    assert cal.parse_line("no json here\n{bad") is None


# ----------------------------------------------------------------- nvcc: builds and links here (sm_90)
HOST_ONLY_BEFORE = """\
// Host-only output, so the stage's run/compare path runs without a GPU; the launch is never reached.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void k(float *x) { x[0] = 1.0f; }
static cudaStream_t g_side;  // a file-scope stream, created below: the legacy stream meets another, so CM102 reports

int main(int argc, char **argv) {
  if (argc > 99) {
    cudaStreamCreate(&g_side);
    k<<<1, 1>>>(nullptr);  // expect: CM102
  }
  std::printf("sum=%s\\n", argc > 98 ? "x" : "%VALUE%");
  return 0;
}
"""


def _host_fixture(root: Path, name: str, value_before: str, after_value: str | None = None,
                  settings: str = "rules: [CM102]\napply_display_only: [CM102]\ngpu: {run: true, compare: before}\n") -> None:
    from .helpers import engine_for, fix_text

    d = root / "host" / name
    d.mkdir(parents=True)
    (d / "before.cu").write_text(HOST_ONLY_BEFORE.replace("%VALUE%", value_before))
    (d / "fixture.yaml").write_text(settings)
    case = load_cases(root / "host")[0] if len(load_cases(root / "host")) == 1 else \
        next(c for c in load_cases(root / "host") if c.dir == d)
    fixed = fix_text(engine_for(case), case.before, case.before.read_bytes(), unsafe=True,
                     display_only=frozenset({"CM102"})).decode()
    assert "cudaStreamPerThread" in fixed
    if after_value is not None:
        fixed = fixed.replace(value_before, after_value)
    (d / "after.cu").write_text(fixed)


@pytest.mark.nvcc
def test_stage_end_to_end_with_host_only_programs(tmp_path):
    """Plan, parallel nvcc builds, runs with timeout, comparison and verdicts, on programs that need no GPU."""
    root = tmp_path / "fx"
    _host_fixture(root, "same", "2.0")
    _host_fixture(root, "drifted", "2.0", after_value="2.5")  # after.cu is not fix(before): caught
    _host_fixture(root, "expected", "3.0",
                  settings="rules: [CM102]\napply_display_only: [CM102]\ncompile: {before: none}\ngpu: {run: true, compare: expected, tolerance: 1e-3}\n")
    (root / "host" / "expected" / "expected.txt").write_text("sum=3.0001\n")
    fake = st.GpuInfo("Fake GPU", "0", "9.0")
    rep = st.run_gpu_stage(root, work=tmp_path / "work", gpu=fake, jobs=2)
    by = {r.name: r for r in rep.results}
    assert by["host/same"].status == "pass", st.table(rep)
    assert by["host/same"].identical and set(by["host/same"].seconds) == {"before", "after"}
    assert by["host/drifted"].fix_matches_after is False and by["host/drifted"].status == "fail"
    assert by["host/expected"].status == "pass" and by["host/expected"].compare == "expected", st.table(rep)
    assert "before" not in by["host/expected"].built
    assert not rep.ok
    # --record-expected: a missing expected.txt records the output instead of failing
    (root / "host" / "expected" / "expected.txt").unlink()
    rep2 = st.run_gpu_stage(root, work=tmp_path / "work2", gpu=fake, jobs=2, record_expected=True)
    r2 = next(r for r in rep2.results if r.name == "host/expected")
    assert r2.status == "recorded", st.table(rep2)
    st.write_outputs(rep2, tmp_path / "out2")
    assert (tmp_path / "out2" / "expected" / "host" / "expected" / "expected.txt").read_text() == "sum=3.0\n"
    rep3 = st.run_gpu_stage(root, work=tmp_path / "work3", gpu=fake, jobs=2)
    assert next(r for r in rep3.results if r.name == "host/expected").status == "fail"

    j, t = st.write_outputs(rep, tmp_path / "out")
    assert json.loads(j.read_text())["summary"] == {"pass": 2, "fail": 1}
    assert "host/drifted" in t.read_text()
    assert (tmp_path / "out" / "outputs" / "host_same" / "after.stdout").read_text() == "sum=2.0\n"
    assert (tmp_path / "out" / "outputs" / "host_expected" / "after.stdout").read_text() == "sum=3.0\n"


@pytest.mark.nvcc
def test_every_gpu_case_builds_and_links_for_sm90(tmp_path):
    """Every fixed program of a GPU case compiled and linked as the GPU stage builds it (tests/test_nvcc.py leaves
    these to this test). An original that still builds is compiled by tests/test_nvcc.py (its `before` job, with
    the build-break checks on nvcc's output) and links with the same libraries as its fixed program, so it is
    planned here but not built again (30 nvcc runs, ~1 min of CI)."""
    cases = st.gpu_cases(load_cases(FIXTURES))
    assert cases
    results, planned = st.plan(cases, tmp_path, "sm_90")
    jobs = [j for j in planned if j.which == "after" or j.case.compile.get("before", "compile") != "compile"]
    for j in planned:
        cmd = j.command()
        assert cmd[0].endswith("nvcc") and "-arch=sm_90" in cmd and "-c" not in cmd
        assert str(j.src) in cmd and cmd[cmd.index("-o") + 1] == str(j.exe)
        for lib in j.libs:
            want = build.LIBS.get(lib, f"-l{lib}")
            assert all(w in cmd for w in (want if isinstance(want, list) else [want])) or (lib == "cuda" and "-l:libcuda.so.1" in cmd)
    st.build_all(jobs, 2)
    failed = [f"{j.case.name}:{j.which}\n{' '.join(j.result.cmd)}\n{j.result.output[-2000:]}" for j in jobs
              if not j.result.ok]
    assert not failed, "\n".join(failed)
    skipped = [r for r in results if r.status == "skip"]
    assert all(j.exe.is_file() for j in jobs)
    assert all(r.fix_matches_after is not False for r in results)
    assert len({j.case.name for j in planned}) + len(skipped) == len(cases)


BENCHES = cal.bench_sources(cal.default_bench_dir())


def test_there_are_benchmarks():
    keys = {s.stem for s in BENCHES}
    assert {"legacy_stream_launch", "legacy_stream_async", "thrust_sync", "thrust_reduce_loop",
            "device_vector_access", "cublas_handle", "cublas_stream"} <= keys


@pytest.mark.nvcc
@pytest.mark.parametrize("src", BENCHES, ids=[s.stem for s in BENCHES])
def test_benchmark_builds_and_links(src, tmp_path):
    missing = [lib for lib in cal.bench_libs(src) if not build.lib_available(lib)]
    if missing:
        pytest.skip(f"{src.name} needs {missing}")
    import subprocess

    cmd = cal.bench_command(src, tmp_path / src.stem, "sm_90")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, " ".join(cmd) + "\n" + p.stdout + p.stderr
    assert (tmp_path / src.stem).is_file()
    text = src.read_text()
    assert "bench::emit(" in text and "bench::compare(" in text


def test_budget_exhausted_jobs_fail_unbuilt(tmp_path):
    import time

    cases = st.gpu_cases(load_cases(FIXTURES))
    _, jobs = st.plan(cases, tmp_path, "sm_90")
    st.build_all(jobs, 2, deadline=time.monotonic() - 1)
    assert jobs and all(not j.result.ok and "budget" in j.result.output for j in jobs)
