"""Engine pieces added for the cuBLAS handle family: same-handle matching, macro comments, wrappers."""

from __future__ import annotations

from pathlib import Path

from cudamigrate.match.conditions import strip_address
from cudamigrate.read.source import check_bytes

from .helpers import engine_for, fix_text

V2 = b"#include <cublas_v2.h>\n"


def scan(ids: list[str], code: bytes, name: str = "t.cu"):
    eng = engine_for(select=ids, extend_select=ids)
    res = eng.scan_bytes(Path(name), code)
    assert not res.errors, res.errors
    return res.findings


def test_same_handle_spellings():
    assert strip_address("&h") == strip_address("h") == strip_address("*h") == strip_address("this->h") == "h"
    assert strip_address("( &ctx.h )") == "ctx.h"
    assert strip_address("&a") != strip_address("b")


def test_block_comment_inside_multiline_macro_keeps_the_body_parsed():
    code = (b"#include <cublas.h>\n#define INIT()        \\\n  do { /* legacy */  \\\n    cublasInit();   \\\n"
            b"  } while (0)\nint main() { INIT(); }\n")
    src = check_bytes(Path("t.cu"), code)
    assert len(src.parse_bytes) == len(code)
    assert [(f.rule_id, f.line) for f in scan(["CM202"], code)] == [("CM202", 4)]


def test_comment_after_a_quote_is_not_blanked():
    code = b'#define MSG "a /* b */ c" \\\n  "d"\n'
    assert check_bytes(Path("t.cu"), code).parse_bytes == code


def test_legacy_call_is_told_apart_by_arity():
    legacy = b"#include <cublas.h>\nvoid f(float *a){ cublasSscal(4, 2.0f, a, 1); }\n"
    v2 = V2 + b"void f(cublasHandle_t h, float *a){ float s = 2; cublasSscal(h, 4, &s, a, 1); }\n"
    assert [f.rule_id for f in scan(["CM208"], legacy)] == ["CM208"]
    assert scan(["CM208"], v2) == []


def test_missing_destroy_is_silent_when_a_deleter_owns_the_handle():
    body = b"int main(){ cublasHandle_t h; if (cublasCreate(&h)) return 1; %s return 0; }\n"
    leak = V2 + body % b""
    owned = V2 + b"#include <memory>\n" + body % b"std::unique_ptr<cublasContext, decltype(&cublasDestroy)> p(h, &cublasDestroy);"
    assert [f.rule_id for f in scan(["CM212"], leak)] == ["CM212"]
    assert scan(["CM212"], owned) == []


def test_stream_binding_fix_follows_the_check_macro_and_skips_stored_status():
    # a file-scope stream makes this multi-stream code, the only kind CM211 reports; its edit is display-only
    code = V2 + (b"#define CHECK(x) x\nint main(){\n  cublasHandle_t a, b;\n  CHECK(cublasCreate(&a));\n"
                 b"  cublasStatus_t st = cublasCreate(&b);\n  return st;\n}\ncudaStream_t side;\n")
    found = scan(["CM211"], code)
    assert sorted((f.line, f.fix is not None) for f in found) == [(5, True), (6, False)]
    eng = engine_for(select=["CM211"], extend_select=["CM211"])
    assert fix_text(eng, Path("t.cu"), code, unsafe=True) == code
    fixed = fix_text(eng, Path("t.cu"), code, unsafe=True, display_only=frozenset({"CM211"})).decode()
    assert "  CHECK(cublasCreate(&a));\n  CHECK(cublasSetStream(a, cudaStreamPerThread));\n" in fixed
    assert fixed.count("cublasSetStream") == 1


def test_per_call_handle_needs_blas_work_in_the_function():
    tmpl = V2 + b"static int f(float *x){ cublasHandle_t h; cublasCreate(&h); %s cublasDestroy(h); return 0; }\n"
    work = tmpl % b"float s = 2; cublasSscal(h, 4, &s, x, 1);"
    query = tmpl % b"int v; cublasGetVersion(h, &v);"
    assert [f.rule_id for f in scan(["CM214"], work)] == ["CM214"]
    assert scan(["CM214"], query) == []


def test_create_inside_a_macro_body_is_not_an_ignored_status_nor_fixed_in_place():
    code = V2 + b"#define MAKE(h) cublasCreate(&h)\nint main(){ cublasHandle_t h; if (MAKE(h)) return 1; return 0; }\n" \
        b"cudaStream_t side;\n"
    assert scan(["CM210"], code) == []
    found = scan(["CM211"], code)
    assert [(f.rule_id, f.fix) for f in found] == [("CM211", None)]


def test_call_in_the_callee_chain_is_elided():
    code = (b"#include <thrust/device_allocator.h>\n#include <thrust/execution_policy.h>\n"
            b"void f(thrust::device_allocator<char> &a, cudaStream_t s){ auto p = thrust::cuda::par(a).on(0);"
            b" auto q = thrust::cuda::par(a).on(s); }\n")
    assert [(f.rule_id, f.line) for f in scan(["CM104"], code)] == [("CM104", 3)]


def test_legacy_header_is_switched_only_when_nothing_needs_the_legacy_declarations():
    base = b"#include <cublas.h>\nint main(){ cublasHandle_t h; cublasCreate_v2(&h); %s cublasDestroy_v2(h); }\n"
    clean = scan(["CM201"], base % b"")
    legacy_call = scan(["CM201"], base % b"cublasSscal(4, 2.0f, 0, 1);")
    legacy_type = scan(["CM201"], base % b"cublasStatus s = CUBLAS_STATUS_SUCCESS; (void)s;")
    assert clean[0].fix is not None and clean[0].fix.edits[0].text == "<cublas_v2.h>"
    assert legacy_call[0].fix is None and legacy_type[0].fix is None


def test_500_handles_in_one_function_report_all_1000_findings():
    """500 x `cublasHandle_t h; cublasCreate(&h);` in one function: every pair's CM210 and CM212. The handle
    analysis looked each identifier up against every declaration of its name, once per handle (cubic: 250
    pairs took 11.9 s of CPU, 500 ran out of the per-file budget with 866 findings dropped);
    bench/bounds.py --only handles prints the figures."""
    code = b"#include <cublas_v2.h>\nvoid f() {\n" + b"  cublasHandle_t h; cublasCreate(&h);\n" * 500 + b"}\n"
    eng = engine_for(select=["CM210", "CM212"])
    res = eng.scan_bytes(Path("t.cu"), code)
    assert not res.errors, res.errors[:1]
    assert sorted(f.rule_id for f in res.findings) == ["CM210"] * 500 + ["CM212"] * 500
    assert len({f.line for f in res.findings}) == 500
