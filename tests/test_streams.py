"""Stream rules: never a wrong stream fix, reported only where the legacy stream meets other blocking streams,
handles and streams compared as variables in a scope."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cudamigrate.fix.apply import fix_bytes
from cudamigrate.match.streams import analyse

from .helpers import ROOT, all_rules, engine_for

LEGACY_STREAM_RULES = ["CM101", "CM102", "CM103", "CM104", "CM211"]


def scan(code: bytes, rules=LEGACY_STREAM_RULES, path: Path = Path("t.cu")):
    eng = engine_for(select=rules, extend_select=rules)
    res = eng.scan_bytes(path, code)
    assert not res.errors, res.errors
    return res.findings


def test_every_legacy_stream_fix_is_display_only():
    by_id = {r.id: r for r in all_rules()}
    for rid in LEGACY_STREAM_RULES:
        assert by_id[rid].fix_applicability == "display-only", rid


def test_unsafe_fixes_never_apply_a_stream_change_in_multi_stream_code():
    # the bundled example's pattern: the legacy launch orders `reduce` before `scale` on `side`
    code = (b"__global__ void reduce(float *x);\n__global__ void scale(float *x);\n"
            b"void run(float *d, cudaStream_t side) {\n"
            b"  cudaMemcpyAsync(d, d, 4, cudaMemcpyDeviceToDevice, 0);\n"
            b"  reduce<<<1, 1>>>(d);\n  scale<<<1, 1, 0, side>>>(d);\n}\n")
    found = scan(code)
    assert [(f.rule_id, f.line, f.applicability) for f in found] == [("CM101", 4, "display-only"),
                                                                      ("CM102", 5, "display-only")]
    assert all(f.fix is not None and f.fix.edits for f in found)  # the suggestion is kept for reports
    eng = engine_for(select=LEGACY_STREAM_RULES)
    assert fix_bytes(eng, Path("t.cu"), code, "t.cu", unsafe=True).fixed == code
    applied = fix_bytes(eng, Path("t.cu"), code, "t.cu", unsafe=True, display_only=frozenset({"CM102"})).fixed
    assert b"reduce<<<1, 1, 0, cudaStreamPerThread>>>" in applied and b"cudaMemcpyDeviceToDevice, 0)" in applied


def test_bundled_example_app_is_not_reordered(tmp_path):
    """issue 11: after `fix --unsafe-fixes`, `reduce_rows` ran on cudaStreamPerThread, unordered with `scale` on side."""
    from click.testing import CliRunner

    from cudamigrate.cli.main import main

    app = tmp_path / "legacy-app"
    shutil.copytree(ROOT / "examples" / "legacy-app", app)
    before = {p: p.read_bytes() for p in (app / "src").iterdir()}
    r = CliRunner().invoke(main, ["fix", "--unsafe-fixes", str(app)], catch_exceptions=False)
    assert r.exit_code in (0, 1), r.output
    kernels = (app / "src" / "kernels.cu").read_bytes()
    assert b"reduce_rows<<<n / 256, 256>>>(d, sum, n);" in kernels
    assert b"cudaStreamPerThread" not in b"".join(p.read_bytes() for p in (app / "src").iterdir())
    assert (app / "src" / "main.cu").read_bytes() != before[app / "src" / "main.cu"]  # other fixes still apply
    r = CliRunner().invoke(main, ["scan", "--select", "CM102", str(app / "src" / "kernels.cu")], catch_exceptions=False)
    assert "CM102 [?]" in r.output


@pytest.mark.parametrize("sync", [
    b"cudaEventRecord(e, 0);", b"cudaEventRecord(e);", b"cudaEventRecord(e, NULL);", b"cudaEventRecordWithFlags(e, 0, 0);",
    b"cudaStreamWaitEvent(0, e, 0);", b"cudaStreamWaitEvent(NULL, e);", b"cudaStreamWaitEvent(cudaStreamLegacy, e, 0);",
    b"cudaStreamSynchronize(0);", b"cudaStreamQuery(NULL);", b"cuEventRecord(ev, 0);", b"cuStreamWaitEvent(0, ev, 0);",
    b"cuStreamSynchronize(0);", b"cudaLaunchHostFunc(0, cb, nullptr);", b"cudaStreamAddCallback(0, cb2, nullptr, 0);",
])
def test_explicit_legacy_stream_synchronization_is_never_reported(sync):
    code = b"cudaStream_t s;\nvoid f(cudaEvent_t e, CUevent ev) {\n  cudaStreamCreate(&s);\n  " + sync + b"\n}\n"
    assert [f.rule_id for f in scan(code, rules=["ALL"]) if f.family == "streams" or f.rule_id == "CM211"] == []
    eng = engine_for(select=["ALL"])
    out = fix_bytes(eng, Path("t.cu"), code, "t.cu", unsafe=True).fixed
    assert sync in out


@pytest.mark.parametrize("code", [
    b"void f(float *d) { cudaMemsetAsync(d, 0, 4); k<<<1, 1>>>(d); }\n",
    # a non-blocking stream never synchronizes with stream 0
    b"void f(float *d) { cudaStream_t q; cudaStreamCreateWithFlags(&q, cudaStreamNonBlocking); k<<<1, 1>>>(d); }\n",
    b"void f(float *d) { CUstream q; cuStreamCreate(&q, CU_STREAM_NON_BLOCKING); k<<<1, 1>>>(d); }\n",
    b"void f(float *d) { cudaStream_t q; cudaStreamCreateWithPriority(&q, 0x1, -1); k<<<1, 1>>>(d); }\n",
    # prototypes and function-pointer types are not streams of this translation unit; comments and strings neither
    b"void g(cudaStream_t s);\ntypedef void (*fp)(cudaStream_t);\n// cudaStreamCreate(&s)\n"
    b"const char *m = \"cudaStreamPerThread\";\nvoid f(float *d) { k<<<1, 1>>>(d); }\n",
])
def test_single_stream_code_is_not_reported(code):
    assert analyse(code, None, "t.cu") == []
    assert scan(code) == []


@pytest.mark.parametrize("extra, reason", [
    (b"void f2() { cudaStream_t q; cudaStreamCreate(&q); }\n", "creates a blocking stream"),
    (b"void f2() { cudaStream_t q; cudaStreamCreateWithFlags(&q, cudaStreamDefault); }\n", "creates a blocking stream"),
    (b"void f2(cudaStream_t q) {}\n", "receives a stream"),
    (b"auto l = [](cudaStream_t q) {};\n", "receives a stream"),
    (b"struct S { cudaStream_t q; };\n", "holds a stream in a field"),
    (b"CUstream g_q;\n", "file-scope stream"),
    (b"void f2() { cudaMemsetAsync(nullptr, 0, 4, cudaStreamPerThread); }\n", "uses `cudaStreamPerThread`"),
    (b"void f2() { std::thread t(f, nullptr); t.join(); }\n", "runs host threads"),
    (b"void f2() {\n#pragma omp parallel for\n  for (int i = 0; i < 4; ++i) f(nullptr);\n}\n", "runs host threads"),
])
def test_legacy_stream_meeting_other_streams_is_reported(extra, reason):
    code = b"void f(float *d) { k<<<1, 1>>>(d); }\n" + extra
    assert any(reason in r for r in analyse(code, None, "t.cu"))
    assert [f.rule_id for f in scan(code)] == ["CM102"]


def test_project_headers_are_followed(tmp_path):
    (tmp_path / "include").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "include" / "streams.h").write_text('#pragma once\n#include "pool.h"\n')
    (tmp_path / "include" / "pool.h").write_text("struct Pool { cudaStream_t s[4]; };\n")
    src = tmp_path / "src" / "a.cu"
    src.write_bytes(b'#include "streams.h"\nvoid f(float *d) { k<<<1, 1>>>(d); }\n')
    assert [f.rule_id for f in scan(src.read_bytes(), path=src)] == ["CM102"]
    (tmp_path / "include" / "pool.h").write_text("struct Pool { int n; };\n")
    assert scan(src.read_bytes(), path=src) == []


HANDLES = b"""cudaStream_t side;
void leaky() {
  cublasHandle_t h;
  cublasCreate(&h);
  cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1);
}
void clean() {
  cublasHandle_t h;
  cublasCreate(&h);
  cublasSetStream(h, side);
  cublasDestroy(h);
}
"""


def test_handles_are_variables_not_spellings():
    found = [(f.rule_id, f.line) for f in scan(HANDLES, rules=["CM211", "CM212"])]
    assert found == [("CM211", 4), ("CM212", 4)]


@pytest.mark.parametrize("create, use", [
    (b"cublasCreate(&(h));", b"h"), (b"cublasCreate((&h));", b"h"), (b"cublasCreate(&h);", b"(h)"),
    (b"cublasCreate(&*p);", b"*p"), (b"cublasCreate(p);", b"*p"), (b"cublasCreate(&*p);", b"(*p)"),
])
def test_spellings_of_one_handle_are_the_same_handle(create, use):
    code = (b"cudaStream_t side;\nvoid f(cublasHandle_t *q) {\n  cublasHandle_t h;\n  cublasHandle_t *p = q;\n  "
            + create + b"\n  cublasSetStream(" + use + b", side);\n  cublasDestroy(" + use + b");\n}\n")
    assert scan(code, rules=["CM211", "CM212"]) == []


@pytest.mark.parametrize("create", [b"cublasCreate(&(h));", b"cublasCreate((&h));", b"cublasCreate(&*p);",
                                    b"CHECK(cublasCreate(&(h)));"])
def test_cm211_suggestion_converges(create):
    code = (b"#define CHECK(x) x\ncudaStream_t side;\nvoid f(cublasHandle_t *q) {\n  cublasHandle_t h;\n"
            b"  cublasHandle_t *p = q;\n  " + create + b"\n}\n")
    eng = engine_for(select=["CM211"])
    once = fix_bytes(eng, Path("t.cu"), code, "t.cu", unsafe=True, display_only=frozenset({"CM211"})).fixed
    assert once.count(b"cublasSetStream") == 1, once
    twice = fix_bytes(eng, Path("t.cu"), once, "t.cu", unsafe=True, display_only=frozenset({"CM211"})).fixed
    assert twice == once
