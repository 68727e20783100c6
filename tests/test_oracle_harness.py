"""Pure functions of the oracle harness (bench/oracle_cuda_samples.py): pairing, replacement mapping,
API-migration hunk extraction, fix classification and the stable sample. The heavy run (scan, fix, nvcc on
cuda-samples) is not part of the suite."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "oracle_cuda_samples", Path(__file__).resolve().parents[1] / "bench" / "oracle_cuda_samples.py")
oracle = importlib.util.module_from_spec(_spec)
sys.modules["oracle_cuda_samples"] = oracle
_spec.loader.exec_module(oracle)


def test_pair_key_ignores_category_and_keeps_common_paths():
    assert oracle.pair_key("Samples/0_Simple/vectorAdd/vectorAdd.cu") == ("vectorAdd", "vectorAdd.cu")
    assert oracle.pair_key("Samples/0_Introduction/vectorAdd/sub/k.cuh") == ("vectorAdd", "k.cuh")
    assert oracle.pair_key("Common/helper_cuda.h") == ("Common", "helper_cuda.h")
    assert oracle.pair_key("README.md") is None


def test_pair_files_moves_across_categories_and_refuses_ambiguous_ties():
    old = ["Samples/0_Introduction/a/a.cu", "Samples/2_X/b/util.h", "Samples/2_X/b/x/dup.h", "Common/h.h"]
    new = ["Samples/8_Platform_Specific/a/a.cu", "Samples/2_X/b/util.h", "Samples/2_X/b/p/dup.h",
           "Samples/2_X/b/q/dup.h", "Common/h.h"]
    got = oracle.pair_files(old, new)
    assert got == {"Samples/0_Introduction/a/a.cu": "Samples/8_Platform_Specific/a/a.cu",
                   "Samples/2_X/b/util.h": "Samples/2_X/b/util.h", "Common/h.h": "Common/h.h"}


def test_apply_replacements_maps_original_lines():
    data = b"int  a;\nint b;\n  int c;\n"
    # collapse the double space on line 1, join lines 2 and 3
    n = oracle.apply_replacements(data, [(3, 2, b" "), (14, 3, b" ")])
    assert n.lines == ["int a;", "int b; int c;"]
    assert n.line_map[:3] == [1, 2, 2]


def test_api_elements_see_arity_and_skip_strings_comments_includes():
    els = oracle.api_elements(['#include <cuda_runtime.h>', 'cuCtxCreate(&c, 0,', '  dev); // cudaFree(x)',
                               'printf("cudaMalloc"); cudaGraphInstantiate(&e, g, NULL, NULL, 0);',
                               'cudaStream_t s;'])
    assert els == [(1, "cuCtxCreate", 3), (3, "cudaGraphInstantiate", 5), (4, "cudaStream_t", None)]


def test_migration_sites_keep_api_changes_and_drop_other_edits():
    a = ["int main() {", "  cuCtxCreate(&c, 0, d);", "  int x = 1;", "  cudaFree(p);", "}"]
    b = ["int main() {", "  cuCtxCreate(&c, NULL, 0, d);", "  int y = 1;", "  cudaFree(p);", "}"]
    sites, ranges = oracle.migration_sites("o", "n", a, b)
    assert [(s.norm_line, s.changed) for s in sites] == [(2, ["cuCtxCreate/3"])]
    assert ranges == [(2, 4)]
    # a variable renamed inside an API call changes no API element: not a site
    sites, _ = oracle.migration_sites("o", "n", ["cudaFree(p);"], ["cudaFree(q);"])
    assert sites == []


def test_classify_fix_match_differs_missing_not_flagged():
    a = ["void f() {", "  cuCtxCreate(&c, 0, d);", "}"]
    b = ["void f() {", "  cuCtxCreate(&c, NULL, 0, d);", "}"]
    site = oracle.migration_sites("o", "n", a, b)[0][0]
    assert oracle.classify_fix(site, a, b, True)[0] == "match"
    other = ["void f() {", "  cuCtxCreate(&c, nullptr, 0, d);", "}"]
    assert oracle.classify_fix(site, a, other, True)[0] == "api-match"
    wrong = ["void f() {", "  cuCtxCreate_v2(&c, 0, d);", "}"]
    assert oracle.classify_fix(site, a, wrong, True)[0] == "differs"
    assert oracle.classify_fix(site, a, a, True)[0] == "missing"
    assert oracle.classify_fix(site, a, a, False)[0] == "not-flagged"


def test_statement_span_covers_multiline_calls():
    lines = ["x = 1;", "cudaMemcpy(a,", "           b,", "           n);", "y = 2;"]
    assert oracle.statement_span(lines, 3) == (2, 4)


def test_stable_sample_is_seeded_and_keeps_members_when_pool_shrinks():
    keys = [f"CM101|f{i}.cu|{i}|1" for i in range(200)]
    s1 = oracle.stable_sample(keys, 50, 7)
    assert s1 == oracle.stable_sample(list(reversed(keys)), 50, 7)
    assert s1 != oracle.stable_sample(keys, 50, 8)
    dropped = set(s1[:10])
    s2 = oracle.stable_sample([k for k in keys if k not in dropped], 50, 7)
    assert set(s1[10:]) <= set(s2)


def test_new_api_replacing_a_removed_field_is_a_site():
    a = ["void f(cudaDeviceProp &p) {", "  int c = p.clockRate;", "}"]
    b = ["void f(cudaDeviceProp &p) {", "  int c; cudaDeviceGetAttribute(&c, cudaDevAttrClockRate, 0);", "}"]
    sites, _ = oracle.migration_sites("o", "n", a, b)
    assert [(s.norm_line, s.changed) for s in sites] == [(2, ["+cudaDeviceGetAttribute/3"])]


def test_mask_output_hides_timings_paths_and_addresses_only():
    a = oracle.mask_output("[./prog_before] start\nTime = 1.25 ms\nptr 0x7f00aa\nResult = 42\n")
    b = oracle.mask_output("[/x/after/prog_after] start\nTime = 3.5 ms\nptr 0x7f11bb\nResult = 42\n")
    assert a[1:] == b[1:]
    assert oracle.mask_output("Result = 41") != oracle.mask_output("Result = 42")


def test_self_check_reads_exit_status_and_verdict_lines():
    assert oracle.self_check("Test passed\n", "0") == "PASS"
    assert oracle.self_check("Test Results: 0 Failures\n", "0") == "PASS"
    assert oracle.self_check("Test passed\n", "1").startswith("FAIL")
    assert oracle.self_check("CUDA error at x.cu:3 code=1\n", "0").startswith("FAIL")
    assert oracle.self_check("done\n", "0") == "ran"


def test_api_elements_keep_line_numbers_across_blank_lines_before_includes():
    els = oracle.api_elements(["", "", "#include <cuda.h>", "", "cudaFree(p);"])
    assert els == [(4, "cudaFree", 1)]


def test_api_migration_tells_api_changes_from_refactors():
    """A site counts as an API migration when the old element is gone from the 13.0 headers, deprecated there,
    or no longer used that way in NVIDIA's v13.0 tree; a `+name` site when its hunk read a removed
    cudaDeviceProp field. Elements still declared and still used the same way were changed by choice."""
    import collections

    facts = oracle.ApiFacts(
        header_tokens={"cudaMalloc", "cudaDeviceSetLimit", "cudaLimitDevRuntimeSyncDepth", "cusparseCreateCsrsv2Info",
                       "cudaDeviceGetAttribute", "cudaGetDeviceProperties", "cudaDeviceProp"},
        deprecated={"cusparseCreateCsrsv2Info"},
        v13_elements=collections.Counter({("cudaMalloc", 2): 40, ("cudaDeviceSetLimit", 2): 3,
                                          ("cudaDeviceGetAttribute", 3): 9}),
        devprop_fields={"name", "multiProcessorCount"},
    )

    def site(changed, removed=()):
        return oracle.Site("a.cu", "a.cu", 1, (1, 2), list(removed), [], changed)

    assert oracle.api_migration(site(["cudaMalloc/2"]), facts, [])[0] is False  # dead code deleted
    assert oracle.api_migration(site(["cudaThreadSynchronize/0"]), facts, [])[0] is True  # gone from the headers
    assert oracle.api_migration(site(["cusparseCreateCsrsv2Info/1"]), facts, [])[0] is True  # deprecated
    # still declared, but NVIDIA no longer uses it anywhere (the CDP1 limit), next to an element still in use
    assert oracle.api_migration(site(["cudaDeviceSetLimit/2", "cudaLimitDevRuntimeSyncDepth"]), facts, [])[0] is True
    old = ["cudaDeviceProp prop;", "cudaGetDeviceProperties(&prop, 0);", "int c = prop.clockRate;"]
    assert oracle.api_migration(site(["+cudaDeviceGetAttribute/3"], ["int c = prop.clockRate;"]), facts, old)[0] is True
    assert oracle.api_migration(site(["+cudaDeviceGetAttribute/3"], ["int c = prop.multiProcessorCount;"]), facts, old)[0] is False
    assert oracle.api_migration(site(["+cudaDeviceGetAttribute/3"], ["// set-up"]), facts, old)[0] is False


def test_lines_deleted_by_fix_are_those_the_replacement_drops():
    data = b"a();\n#if V >= 5000\nlive();\n#else\ndead();\n#endif\nz();\n"
    start, end = data.index(b"#if"), data.index(b"z();")
    f = {"rule": "CM410", "fix": {"edits": [{"start": start, "end": end, "text": "live();\n"}]}}
    assert oracle.lines_deleted_by_fix(f, data) == {2, 4, 5, 6}
    # the dead branch repeats lines of the live one: still deleted
    data = b"#if V >= 5000\n  f(a,\n    b, dev);\n#else\n  f(a,\n    b, host);\n#endif\n"
    f = {"rule": "CM410", "fix": {"edits": [{"start": 0, "end": len(data), "text": "  f(a,\n    b, dev);\n"}]}}
    assert oracle.lines_deleted_by_fix(f, data) == {1, 4, 5, 6, 7}
    assert oracle.lines_deleted_by_fix({"rule": "CM101"}, data) == set()


def test_requirements_are_listed_before_the_run_starts(tmp_path, capsys):
    """Without clang-format (or a wheel's headers) the harness says what is missing and how to get it, exit 2,
    instead of a traceback part way through the run."""
    got = oracle.requirements(which=lambda name: None, includes=[str(tmp_path)])
    assert any(m.startswith("clang-format not on PATH") for m in got)
    assert any(m.startswith("nvcc not on PATH") for m in got)
    assert any("cusparse.h" in m and "pip install --no-deps nvidia-cusparse==" in m for m in got)
    (tmp_path / "npp.h").write_text("")
    got = oracle.requirements(compile_=False, which=lambda name: "/bin/" + name, includes=[str(tmp_path)])
    assert not any("npp.h" in m or "nvcc" in m or "clang-format" in m for m in got)
    import os

    old = os.environ["PATH"]
    os.environ["PATH"] = str(tmp_path)  # no clang-format, no nvcc
    try:
        assert oracle.main([str(tmp_path), str(tmp_path), "--no-compile"]) == 2
    finally:
        os.environ["PATH"] = old
    assert "missing requirement: clang-format not on PATH" in capsys.readouterr().err
