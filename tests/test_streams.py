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


SINGLE_STREAM_NULL = ROOT / "fixtures" / "streams" / "CM101-legacy-stream-async-api--single-stream-null" / "ok.cu"


def test_single_stream_null_fixture_is_not_reported():
    """Stream parameters and file-scope streams that only ever hold the legacy stream are no other stream (issue 25:
    tree-sitter mode counted every stream parameter of a definition as one, and reported this file's launches)."""
    code = SINGLE_STREAM_NULL.read_bytes()
    assert analyse(code, None, "ok.cu") == []
    assert scan(code, rules=["CM101", "CM102", "CM103", "CM104"], path=SINGLE_STREAM_NULL) == []


KERNEL = b"__global__ void k(float *x);\n"


@pytest.mark.parametrize("code", [
    # a defaulted parameter that every call leaves defaulted or passes a null stream
    b"static void up(float *d, cudaStream_t st = 0) { cudaMemsetAsync(d, 0, 4, st); }\n"
    b"void f(float *d) { up(d); k<<<1, 1>>>(d); }\n",
    b"#define STREAM 0\nvoid up(float *d, cudaStream_t st = 0) { k<<<1, 1, 0, st>>>(d); }\n"
    b"void f(float *d) { up(d); up(d, 0); up(d, NULL); up(d, nullptr); up(d, STREAM); k<<<1, 1>>>(d); }\n",
    # no default; casts and a parenthesized macro
    b"#define NO_STREAM ((cudaStream_t)0)\nvoid up(float *d, cudaStream_t st) { k<<<1, 1, 0, st>>>(d); }\n"
    b"void f(float *d) { up(d, NO_STREAM); up(d, (cudaStream_t)0); up(d, cudaStreamLegacy); k<<<1, 1>>>(d); }\n",
    # a local variable initialized with the legacy stream and never written
    b"void up(float *d, cudaStream_t st) { k<<<1, 1, 0, st>>>(d); }\n"
    b"void f(float *d) { cudaStream_t s = 0; cudaStream_t t{}; up(d, s); up(d, t); k<<<1, 1>>>(d); }\n",
    # forwarded to another wrapper, and recursion
    b"void inner(float *d, cudaStream_t st, int n) { if (n) inner(d, st, n - 1); k<<<1, 1, 0, st>>>(d); }\n"
    b"void outer(float *d, cudaStream_t st = 0) { inner(d, st, 2); }\nvoid f(float *d) { outer(d); k<<<1, 1>>>(d); }\n",
    # the default given by the prototype; a template; a method called through an object
    b"void up(float *d, cudaStream_t st = NULL);\nvoid f(float *d) { up(d); k<<<1, 1>>>(d); }\n"
    b"void up(float *d, cudaStream_t st) { k<<<1, 1, 0, st>>>(d); }\n",
    b"template <typename T> void up(T *d, cudaStream_t st = 0) { cudaMemsetAsync(d, 0, 4, st); }\n"
    b"void f(float *d) { up<float>(d); up(d, 0); k<<<1, 1>>>(d); }\n",
    b"struct B { float *d; void clear(cudaStream_t st = 0) { cudaMemsetAsync(d, 0, 4, st); } };\n"
    b"void f(float *d) { B b{d}; b.clear(); (&b)->clear(0); k<<<1, 1>>>(d); }\n",
    # file-scope streams that are the legacy stream
    b"static cudaStream_t g = 0;\ncudaStream_t h{};\nconst cudaStream_t c = nullptr;\nstatic CUstream z;\n"
    b"void f(float *d) { cudaMemsetAsync(d, 0, 4, g); cudaMemsetAsync(d, 0, 4, h); k<<<1, 1, 0, c>>>(d); k<<<1, 1>>>(d); }\n",
    # cuBLAS and Thrust through such a parameter
    b"void bind(cublasHandle_t h, cudaStream_t s = 0) { cublasSetStream(h, s); }\n"
    b"void srt(int *b, int *e, cudaStream_t s = 0) { thrust::sort(thrust::cuda::par.on(s), b, e); }\n"
    b"void f(cublasHandle_t h, int *b, int *e) { bind(h); srt(b, e); cublasSetStream(h, 0); }\n",
])
def test_streams_that_only_hold_the_legacy_stream_are_no_other_stream(code):
    assert analyse(KERNEL + code, None, "t.cu") == []
    assert scan(KERNEL + code) == []


@pytest.mark.parametrize("extra, reason", [
    # one call passes what may be another stream: a parameter of a function nobody here calls
    (b"static void up(float *d, cudaStream_t st = 0) { cudaMemsetAsync(d, 0, 4, st); }\n"
     b"void entry(float *d, cudaStream_t s) { up(d); up(d, s); }\n", "receives a stream"),
    # the function's address is taken, or a macro calls it: its callers are not all in sight
    (b"void up(float *d, cudaStream_t st = 0) {}\nvoid (*fp)(float *, cudaStream_t) = &up;\n"
     b"void g(float *d) { up(d); }\n", "receives a stream"),
    (b"cudaStream_t pick();\nvoid up(float *d, cudaStream_t st = 0) {}\n#define UP(d, s) up(d, s)\n"
     b"void g(float *d) { up(d); UP(d, pick()); }\n", "receives a stream"),
    # the parameter is written; the default is no null stream; a macro that is another stream
    (b"cudaStream_t pick();\nvoid up(float *d, cudaStream_t st = 0) { if (!st) st = pick(); }\n"
     b"void g(float *d) { up(d); }\n", "receives a stream"),
    (b"cudaStream_t pick();\nvoid up(float *d, cudaStream_t st = pick()) {}\nvoid g(float *d) { up(d); up(d, 0); }\n",
     "receives a stream"),
    (b"cudaStream_t pick();\n#define WORK pick()\nvoid up(float *d, cudaStream_t st) {}\n"
     b"void g(float *d) { up(d, WORK); }\n", "receives a stream"),
    # a variable passed where it may be written (a reference parameter), or assigned
    (b"void get(cudaStream_t &s);\nvoid up(float *d, cudaStream_t st) {}\n"
     b"void g(float *d) { cudaStream_t s = 0; get(s); up(d, s); }\n", "receives a stream"),
    # overloads are pooled by name: one of them gets another stream
    (b"cudaStream_t pick();\nvoid up(float *d, cudaStream_t st) {}\nvoid up(double *d, cudaStream_t st) {}\n"
     b"void g(float *d, double *e) { up(d, 0); up(e, pick()); }\n", "receives a stream"),
    # forwarded, but the inner wrapper is also called with another stream
    (b"cudaStream_t pick();\nvoid inner(float *d, cudaStream_t st) {}\n"
     b"void outer(float *d, cudaStream_t st = 0) { inner(d, st); }\nvoid g(float *d) { outer(d); inner(d, pick()); }\n",
     "receives a stream"),
    # never called here: its callers are elsewhere
    (b"void up(float *d, cudaStream_t st = 0) {}\n", "receives a stream"),
    # file-scope streams: assigned, declared elsewhere, or left for another translation unit to set
    (b"static cudaStream_t g = 0;\nvoid init(cudaStream_t x) { g = x; }\n", "file-scope stream"),
    (b"static cudaStream_t g2 = 0;\nvoid init2() { cudaStreamCreateWithFlags(&g2, cudaStreamNonBlocking); }\n",
     "file-scope stream"),
    (b"extern cudaStream_t g;\n", "file-scope stream"),
    (b"cudaStream_t g;\n", "file-scope stream"),
])
def test_lookalikes_of_legacy_only_streams_still_meet_another_stream(extra, reason):
    code = KERNEL + b"void f(float *d) { k<<<1, 1>>>(d); }\n" + extra
    assert any(reason in r for r in analyse(code, None, "t.cu"))
    assert [f.rule_id for f in scan(code)] == ["CM102"]


def test_legacy_only_analysis_is_linear_and_survives_cycles():
    """3,000 wrappers each forwarding its stream to the next, called 3,000 times with a local `= 0`: one pass and a
    worklist, not a fixpoint that re-reads every call per removal (that took 3 s here); initializers that name each
    other prove nothing and do not recurse forever."""
    import time

    from cudamigrate.match.legacy_params import legacy_only
    from cudamigrate.parse.treesitter import parse

    n = 3000
    src = [f"void w{i}(float *d, cudaStream_t s) {{ cudaStream_t t = s; w{i + 1}(d, t); }}" for i in range(n - 1)]
    src += [f"void w{n - 1}(float *d, cudaStream_t s) {{ k<<<1, 1, 0, s>>>(d); }}",
            "void f(float *d) { cudaStream_t z = 0; " + "w0(d, z); " * n + "}",
            "void g(float *d) { cudaStream_t a = b; cudaStream_t b = a; w0(d, LAST); }"]
    for last, legacy in ((b"0", n), (b"a", 0)):
        data = (KERNEL + "\n".join(src).encode()).replace(b"LAST", last)
        root = parse(data).root_node
        t0 = time.process_time()
        assert len(legacy_only(root, data)) == legacy
        assert time.process_time() - t0 < 3.0


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
