"""bench/compile_recall.py: the nvcc diagnostic parser, the CUDA-site classifier and the site/finding matcher
on made-up nvcc 13.0 output (no nvcc needed), plus one nvcc run on a fixture written here."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "compile_recall", Path(__file__).resolve().parents[1] / "bench" / "compile_recall.py")
recall = importlib.util.module_from_spec(_spec)
sys.modules["compile_recall"] = recall
_spec.loader.exec_module(recall)

TK = "/usr/local/cuda-13.0/targets/x86_64-linux/include"

# EDG front end (device pass), gcc host pass with a `declared here` note, a gcc template instantiation chain
# from the tree into a toolkit header, and a ptxas error with no source location; made up after nvcc 13.0's
# real formats.
OUTPUT = f"""\
/t/src/a.cu(6): error: identifier "cudaThreadSynchronize" is undefined
    cudaThreadSynchronize();
    ^

/t/src/a.cu(8): error: class "cudaDeviceProp" has no member "clockRate"
    int c = prop.clockRate;
                 ^

/t/src/a.cu(9): error: too many arguments in function call
    cudaMemPrefetchAsync(p, n, dev, stream, 7);
                                            ^

/t/src/a.cu(11): error: identifier "myHelper" is undefined
    myHelper();
    ^

/t/src/a.cu(12): catastrophic error: cannot open source file "GL/glew.h"
  #include <GL/glew.h>
                      ^

5 errors detected in the compilation of "/t/src/a.cu".
/t/src/b.cu: In function 'int main()':
/t/src/b.cu:3:29: warning: 'cudaError_t cudaDeviceSetSharedMemConfig(cudaSharedMemConfig)' is deprecated [-Wdeprecated-declarations]
    3 |   cudaDeviceSetSharedMemConfig(cudaSharedMemBankSizeFourByte);
      |   ~~~~~~~~~~~~~~~~~~~~~~~~~~^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
{TK}/cuda_runtime_api.h:1101:46: note: declared here
 1101 | extern __CUDA_DEPRECATED __host__ cudaError_t CUDARTAPI cudaDeviceSetSharedMemConfig(enum cudaSharedMemConfig config);
/t/src/b.cu:4:9: warning: 'double4' is deprecated: use double4_16a or double4_32a [-Wdeprecated-declarations]
    4 |   double4 x; (void)x;
In file included from /usr/local/cuda-13.0/include/driver_types.h:61,
                 from {TK}/builtin_types.h:59:
/usr/local/cuda-13.0/include/vector_types.h:561:104: note: declared here
/t/src/b.cu:7:3: warning: 'int old_api()' is deprecated [-Wdeprecated-declarations]
/t/src/b.h:2:5: note: declared here
{TK}/cccl/thrust/functional.h: In instantiation of 'struct Op':
/t/src/b.cu:9:10:   required from here
{TK}/cccl/thrust/functional.h:80:8: warning: 'template<class A, class R> struct thrust::unary_function' is deprecated [-Wdeprecated-declarations]
ptxas /tmp/tmpxft_1.ptx, line 40; error   : Instruction 'vote' without '.sync' is not supported on .target 'sm_75'
"""


def test_parser_reads_edg_gcc_context_notes_and_tool_errors():
    ds = recall.parse_diagnostics(OUTPUT)
    assert [(d.path.split("/")[-1], d.line, d.severity) for d in ds] == [
        ("a.cu", 6, "error"), ("a.cu", 8, "error"), ("a.cu", 9, "error"), ("a.cu", 11, "error"),
        ("a.cu", 12, "error"), ("b.cu", 3, "warning"), ("b.cu", 4, "warning"), ("b.cu", 7, "warning"),
        ("functional.h", 80, "warning"), ("", 0, "error")]
    assert ds[1].source == "  int c = prop.clockRate;" and ds[1].column == 16
    assert ds[5].decl_path == f"{TK}/cuda_runtime_api.h"
    assert ds[6].decl_path == "/usr/local/cuda-13.0/include/vector_types.h"
    assert ds[7].decl_path == "/t/src/b.h"
    assert ds[8].context[0] == ("/t/src/b.cu", 9)


def test_edg_instantiation_context_is_kept():
    out = ('/cuda/include/cub/x.cuh(40): error: namespace "cub" has no member "Sum"\n'
           '    cub::Sum op;\n         ^\n'
           '          detected during instantiation of "void f<T>() [with T=int]" at line 12 of /t/k.cu\n')
    (d,) = recall.parse_diagnostics(out)
    assert d.context == (("/t/k.cu", 12),)
    assert recall.tree_location(d, Path("/t"), Path("/t")) == ("k.cu", 12, True)


@pytest.fixture(scope="module")
def catalog():
    return recall.ApiCatalog.load()


def test_classifier_names_the_api_and_library_and_sets_others_apart(catalog):
    ds = recall.parse_diagnostics(OUTPUT)
    inc = [TK, "/usr/local/cuda-13.0/include"]
    got = [recall.classify(d, d.source, catalog, inc) for d in ds[:9]]
    assert [(c.cuda, c.kind, c.api, c.library) for c in got] == [
        (True, "undefined", "cudaThreadSynchronize", "cudart"),
        (True, "no-member", "cudaDeviceProp::clockRate", "cudart"),
        (True, "arguments", "cudaMemPrefetchAsync", "cudart"),
        (False, "undefined", "myHelper", ""),
        (False, "missing-header", "GL/glew.h", ""),
        (True, "deprecated", "cudaDeviceSetSharedMemConfig", "cudart"),
        (True, "deprecated", "double4", "cudart"),
        (False, "deprecated", "old_api", ""),
        (True, "deprecated", "thrust::unary_function", "CCCL")]
    assert "third-party" in got[4].reason and "outside CUDA" in got[7].reason


def test_classifier_takes_the_api_before_the_caret_for_conversion_errors(catalog):
    d = recall.Diagnostic("/t/m.cu", 19, "error", 'no suitable constructor exists to convert from "int" to '
                          '"cudaMemLocation"', column=31)
    c = recall.classify(d, "  x = f(1); cudaMemPrefetchAsync(p, n, dev, s);", catalog, [])
    assert (c.cuda, c.api, c.library) == (True, "cudaMemPrefetchAsync", "cudart")
    d2 = recall.Diagnostic("/t/m.cu", 3, "error", 'identifier "CUSPARSE_MV_ALG_DEFAULT" is undefined')
    assert recall.classify(d2, "", catalog, []).library == "cuSPARSE"
    d3 = recall.Diagnostic("/t/m.cu", 3, "error", 'cannot open source file "cusparse_v2.h"')
    assert recall.classify(d3, "", catalog, []).cuda


def test_sites_are_deduplicated_across_units_and_matched_to_statements(tmp_path, catalog):
    src = tmp_path / "src"
    src.mkdir()
    (src / "h.cuh").write_text("#pragma once\n"
                               "inline void f() {\n"
                               "  cudaThreadSynchronize(\n"
                               "      );\n"
                               "  cudaThreadExit();\n"
                               "}\n")
    out = (f'{src}/h.cuh(4): error: identifier "cudaThreadSynchronize" is undefined\n'
           f'{src}/h.cuh(5): error: identifier "cudaThreadExit" is undefined\n')
    per_unit = {"src/a.cu": (recall.parse_diagnostics(out), src), "src/b.cu": (recall.parse_diagnostics(out), src)}
    sites, others = recall.collect_sites(per_unit, tmp_path, catalog, [])
    assert [(s.relpath, s.line, sorted(s.units)) for s in sites] == [
        ("src/h.cuh", 4, ["src/a.cu", "src/b.cu"]), ("src/h.cuh", 5, ["src/a.cu", "src/b.cu"])]
    assert others == []
    # a finding on line 3 covers the error reported on line 4 (same statement); line 5 has none
    findings = [{"rule": "CM501", "relpath": "src/h.cuh", "line": 3, "end_line": 3}]
    recall.match_findings(sites, findings, tmp_path)
    assert [s.rules for s in sites] == [["CM501"], []]
    summary = recall.summarise(sites)
    assert summary["total"] == {"sites": 2, "error": 2, "covered": 1, "uncovered": 1}
    assert summary["uncovered_apis"] == {"cudart": {"cudaThreadExit": 1}}


def test_fix_edit_on_another_line_is_counted_apart(tmp_path, catalog):
    (tmp_path / "t.cu").write_text("texture<float> t;\nvoid g() {\n  cudaUnbindTexture(t);\n}\n")
    data = (tmp_path / "t.cu").read_bytes()
    start = data.index(b"cudaUnbindTexture")
    s = recall.Site("t.cu", 3)
    recall.match_findings([s], [{"rule": "CM601", "relpath": "t.cu", "line": 1, "end_line": 1,
                                 "fix": {"edits": [{"start": start, "end": start + 20, "text": ""}]}}], tmp_path)
    assert (s.rules, s.fix_rules) == ([], ["CM601"])


def test_a_related_location_on_the_statement_counts_as_covered_in_a_column_of_its_own(tmp_path, catalog):
    """A texture reference's finding is at its declaration; nvcc reports each use, here one read through a macro
    in the same file and one bind in another file: both are the finding's related locations (no fix edit, a
    manual finding), so both sites are covered, and the table counts them apart."""
    (tmp_path / "t.cu").write_text("texture<float> t;\n#define F(i) tex1Dfetch(t, i)\n__global__ void k(float *o) {\n"
                                   "  o[0] = F(0);\n}\n")
    (tmp_path / "m.cu").write_text('#include "t.cu"\nvoid b(float *d) {\n  cudaBindTexture(0, t,\n      d, 4);\n}\n')
    sites = [recall.Site("t.cu", 4, apis={"tex1Dfetch"}, libraries={"cudart"}),
             recall.Site("m.cu", 4, apis={"cudaBindTexture"}, libraries={"cudart"}),
             recall.Site("m.cu", 2, apis={"cudaX"}, libraries={"cudart"})]
    related = [{"path": "tree/t.cu", "line": 4, "column": 10, "end_line": 4, "end_column": 14, "message": "m"},
               {"path": "tree/m.cu", "line": 3, "column": 22, "end_line": 3, "end_column": 23, "message": "m"}]
    recall.match_findings(sites, [{"rule": "CM601", "relpath": "t.cu", "line": 1, "end_line": 1, "fix": None,
                                   "related": related}], tmp_path)
    assert [(s.rules, s.related_rules, s.fix_rules) for s in sites] == [
        ([], ["CM601"], []), ([], ["CM601"], []), ([], [], [])]
    summary = recall.summarise(sites)
    assert summary["total"] == {"sites": 3, "error": 3, "related_only": 2, "uncovered": 1}
    d = {"tree": "tree", "fixed": False, "nvcc": "nvcc", "findings": 1, "regressions": None, "summary": summary,
         "units": {"total": 2, "ok": 0, "failed": 2, "failed_before_host": 2, "not_compiled": 0},
         "other_diagnostics": [],
         "sites": [{"relpath": s.relpath, "line": s.line, "library": s.library, "apis": sorted(s.apis),
                    "kinds": ["undefined"], "rules": s.rules, "related_rules": s.related_rules, "fix_rules": [],
                    "cause_rules": [], "messages": ["e"]} for s in sites]}
    md = recall.render(d)
    assert "| finding on the statement | only a related location | only a fix edit" in md
    assert "| **all** | **3** | 0 | 3 | **0** | 2 | 0 | 0 | **1** | **66.7 %** | 66.7 % | 66.7 % |" in md
    assert "Covered only by a related location of a finding on another line (2): `t.cu:4`" in md


def test_compile_database_flags_drop_outputs_and_diagnostic_suppression():
    e = {"file": "/p/a.cu", "directory": "/p",
         "arguments": ["/usr/local/cuda/bin/nvcc", "-I/p/inc", "-w", "-Wno-deprecated-declarations", "-arch=sm_90",
                       "-o", "a.o", "-c", "/p/a.cu"]}
    assert recall.db_flags(e) == ["-I/p/inc", "-arch=sm_90", "-c"]
    host = {"file": "/p/b.cpp", "directory": "/p", "command": "g++ -O2 -I /p/inc -DX=1 -std=c++17 -c /p/b.cpp -o b.o"}
    assert recall.db_flags(host) == ["-I", "/p/inc", "-DX=1", "-std=c++17", "-c"]


@pytest.mark.nvcc
def test_nvcc_recall_on_a_fixture_with_one_flagged_and_one_unflagged_deprecation(tmp_path, monkeypatch):
    """Two deprecated driver calls; the scan is limited to CM1068 (cuCtxGetSharedMemConfig), so cuCtxDetach
    (deprecated in cuda.h, and not flagged by any rule at the time of writing either) is the uncovered site."""
    tree = tmp_path / "app"
    tree.mkdir()
    (tree / "main.cpp").write_text(
        "#include <cuda.h>\n"
        "int main() {\n"
        "  CUcontext ctx = nullptr;\n"
        "  cuCtxDetach(ctx);\n"
        "  CUsharedconfig cfg;\n"
        "  cuCtxGetSharedMemConfig(&cfg);\n"
        "  return 0;\n"
        "}\n")
    out = tmp_path / "r.json"
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    rc = recall.main([str(tree), "-j", "1", "--cache", str(tmp_path / "cache"), "--json", str(out),
                      "--scan-args", "--select CM1068"])
    assert rc == 0
    d = json.loads(out.read_text())
    assert d["units"] == {"total": 1, "ok": 1, "failed": 0, "failed_before_host": 0, "not_compiled": 0,
                          "failed_units": []}
    assert d["summary"]["total"] == {"sites": 2, "deprecation": 2, "covered": 1, "uncovered": 1}
    assert {(s["line"], s["apis"][0], tuple(s["rules"])) for s in d["sites"]} == {
        (4, "cuCtxDetach", ()), (6, "cuCtxGetSharedMemConfig", ("CM1068",))}
    assert d["summary"]["by_library"]["driver"]["sites"] == 2


def test_edg_internal_intrinsic_names_and_generic_errors(catalog):
    d = recall.parse_diagnostics('/t/k.cu(10): warning #1444-D: function "ballot" was declared deprecated '
                                 '("__ballot() is not valid on compute_70 and above, and should be replaced with '
                                 '__ballot_sync().")\n')[0]
    c = recall.classify(d, "", catalog, [])
    assert (c.cuda, c.api, c.library) == (True, "ballot", "device intrinsics")   # the catalog's bool overload
    d2 = dataclasses.replace(d, message='function "shfl" was declared deprecated ("__shfl() is deprecated")')
    c2 = recall.classify(d2, "", catalog, [])
    assert (c2.cuda, c2.api, c2.library) == (True, "__shfl", "device intrinsics")
    # a generic error counts only on a line calling an API of the change catalog
    e = recall.Diagnostic("/t/k.cu", 3, "error", 'expected a ";"', column=5)
    assert recall.classify(e, "  cudaThreadSynchronize() x;", catalog, []).cuda
    assert not recall.classify(e, "  cudaMalloc(&p, n) x;", catalog, []).cuda


def test_member_kind_words_in_edg_messages(catalog):
    d = recall.Diagnostic("/t/k.cuh", 43, "error", 'namespace "thrust" has no member class "unary_function"')
    c = recall.classify(d, "", catalog, [])
    assert (c.cuda, c.kind, c.api, c.library) == (True, "no-member", "thrust::unary_function", "CCCL")


def test_plan_units_from_a_compile_database_and_default_flags(tmp_path):
    tree = tmp_path / "proj"
    (tree / "src").mkdir(parents=True)
    (tree / "include").mkdir()
    (tree / "src" / "a.cu").write_text("int main() { return 0; }\n")
    (tree / "src" / "b.cpp").write_text("int f() { return 0; }\n")
    db = tmp_path / "compile_commands.json"
    db.write_text(json.dumps([
        {"directory": str(tree / "build"), "file": str(tree / "src" / "a.cu"),
         "arguments": ["nvcc", f"-I{tree}/include", "-arch=sm_90", "-o", "a.o", "-c", str(tree / "src" / "a.cu")]},
        {"directory": "/elsewhere", "file": "/elsewhere/x.cu", "command": "nvcc -c /elsewhere/x.cu"}]))
    units, flags, search, cwd = recall.plan_units(tree, [], db, [], ["/wheel/include"])
    assert units == ["src/a.cu"]                              # entries outside the tree are ignored
    assert flags["src/a.cu"] == ["-I{ROOT}/include", "-arch=sm_90", "-c", "-I/wheel/include"]
    assert search["src/a.cu"] == [tree / "include"] and cwd["src/a.cu"] == Path("{ROOT}/build")
    units, flags, search, _ = recall.plan_units(tree, ["src/b.cpp"], None, ["/x"], ["/wheel/include"])
    assert units == ["src/b.cpp"]
    assert flags["src/b.cpp"][:3] == ["-std=c++17", "-arch=sm_90", "-c"]
    assert "-I{ROOT}/src" in flags["src/b.cpp"] and "-I{ROOT}/include" in flags["src/b.cpp"]
    assert flags["src/b.cpp"][-2:] == ["-I/x", "-I/wheel/include"]


def test_aka_and_gcc_conversion_forms_name_the_call(catalog):
    d = recall.Diagnostic("/t/m.cu", 8, "error", 'no suitable constructor exists to convert from "CUdevice" (aka "int") '
                          'to "CUmemLocation_st"', column=48)
    c = recall.classify(d, "  cuMemAdvise(p, n, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev);", catalog, [])
    assert (c.cuda, c.kind, c.api, c.library) == (True, "conversion", "cuMemAdvise", "driver")
    g = recall.Diagnostic("/t/m.c", 17, "error", "incompatible type for argument 4 of 'cudaMemAdvise'")
    assert recall.classify(g, "", catalog, []).api == "cudaMemAdvise"
    n = recall.Diagnostic("/t/m.cpp", 13, "error", "'::nppGetGpuName' has not been declared")
    assert recall.classify(n, "", catalog, []).library == "NPP"
    cm = recall.Diagnostic("/t/m.c", 23, "error", "'props_t' {aka 'struct cudaDeviceProp'} has no member named 'clockRate'")
    assert recall.classify(cm, "", catalog, []).api == "cudaDeviceProp::clockRate"


def test_tool_errors_header_errors_and_macro_definitions(tmp_path, catalog):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.cu").write_text('#include <cublas_api.h>\n#define SYNC() cudaThreadSynchronize()\n'
                                   'void f() {\n  SYNC();\n}\n')
    inc = tmp_path / "inc"
    inc.mkdir()
    out = (f"In file included from {tree}/a.cu:1:\n"
           f'{inc}/cublas_api.h:69:2: error: #error "This file should not be included without defining CUBLASAPI"\n'
           f'{tree}/a.cu(4): error: identifier "cudaThreadSynchronize" is undefined\n'
           "ptxas /tmp/x.ptx, line 3; error   : Instruction 'vote' without '.sync' is not supported\n")
    sites, others = recall.collect_sites({"a.cu": (recall.parse_diagnostics(out), tree)}, tree, catalog,
                                         [str(inc)])
    assert [(s.line, s.kinds, s.apis, s.via_instantiation) for s in sites] == [
        (1, {"header-error"}, {"cublas_api.h"}, True), (4, {"undefined"}, {"cudaThreadSynchronize"}, False)]
    assert sites[0].library == "cuBLAS"
    assert [(o["relpath"], o["line"], o["kind"]) for o in others] == [("a.cu", 0, "tool")]
    recall.match_findings(sites, [{"rule": "CM501", "relpath": "a.cu", "line": 2, "end_line": 2,
                                   "snippet": "#define SYNC() cudaThreadSynchronize()"}], tree)
    assert (sites[1].rules, sites[1].via_macro) == (["CM501"], True)
    assert sites[0].rules == []


def test_error_at_a_macro_use_takes_the_api_from_the_macro_body(tmp_path, catalog):
    (tmp_path / "m.cu").write_text("#define WARM(p, n, d, s) cuMemPrefetchAsync(p, n, d, s)\n"
                                   "void f(CUdeviceptr p, size_t n, CUdevice d, CUstream s) {\n"
                                   "  WARM(p, n, d, s);\n}\n")
    out = f"{tmp_path}/m.cu(3): error: too few arguments in function call\n"
    sites, others = recall.collect_sites({"m.cu": (recall.parse_diagnostics(out), tmp_path)}, tmp_path, catalog, [])
    assert [(s.line, s.apis, s.library) for s in sites] == [(3, {"cuMemPrefetchAsync"}, "driver")] and not others


def test_cascade_on_a_site_line_is_not_listed_apart(tmp_path, catalog):
    (tmp_path / "t.cu").write_text("void f() {\n  auto x = thrust::identity<int>();\n}\n")
    out = (f'{tmp_path}/t.cu(2): error: namespace "thrust" has no member "identity"\n'
           f"{tmp_path}/t.cu(2): error: type name is not allowed\n")
    sites, others = recall.collect_sites({"t.cu": (recall.parse_diagnostics(out), tmp_path)}, tmp_path, catalog, [])
    assert [(s.line, s.apis) for s in sites] == [(2, {"thrust::identity"})] and others == []


def test_third_party_header_missing_inside_a_cuda_header_is_not_counted(tmp_path, catalog):
    """cudaEGL.h fails only because its own #include "EGL/egl.h" is not installed: not a CUDA API change,
    listed apart like the tree including EGL/egl.h itself, with the CUDA header named."""
    (tmp_path / "c.cpp").write_text('#include "cudaEGL.h"\nint main() { return 0; }\n')
    out = (f"In file included from {tmp_path}/c.cpp:1:\n"
           f"{TK}/cudaEGL.h:54:10: fatal error: EGL/egl.h: No such file or directory\n"
           "   54 | #include \"EGL/egl.h\"\n"
           "compilation terminated.\n")
    sites, others = recall.collect_sites({"c.cpp": (recall.parse_diagnostics(out), tmp_path)}, tmp_path, catalog,
                                         [TK])
    assert sites == []
    assert [(o["relpath"], o["line"], o["kind"], o["reason"]) for o in others] == [
        ("c.cpp", 1, "missing-header", "third-party header <EGL/egl.h> not installed (included by CUDA header "
                                       "cudaEGL.h)")]
    # an error of the CUDA header itself (not a missing include) is still a CUDA site
    out2 = (f"In file included from {tmp_path}/c.cpp:1:\n"
            f'{TK}/cublas_api.h:69:2: error: #error "This file should not be included without defining CUBLASAPI"\n')
    sites2, _ = recall.collect_sites({"c.cpp": (recall.parse_diagnostics(out2), tmp_path)}, tmp_path, catalog, [TK])
    assert [(s.line, s.kinds) for s in sites2] == [(1, {"header-error"})]


def test_headers_no_linux_x86_64_toolkit_ships_are_listed_apart(catalog):
    gcc = recall.Diagnostic("/t/fluids.cpp", 42, "error", "cuda_d3d9_interop.h: No such file or directory")
    edg = recall.Diagnostic("/t/main.cu", 28, "error", 'cannot open source file "cudla.h"')
    got = [recall.classify(d, "", catalog, []) for d in (gcc, edg)]
    assert [(c.cuda, c.kind, c.api) for c in got] == [(False, "platform-header", "cuda_d3d9_interop.h"),
                                                       (False, "platform-header", "cudla.h")]
    assert all(c.reason.startswith(recall.PLATFORM_REASON) for c in got)
    assert "Windows" in got[0].reason and "aarch64" in got[1].reason
    assert all(h.source for h in recall.PLATFORM_HEADERS.values())
    # a CUDA header that the Linux x86_64 toolkit does ship, missing, is still a CUDA site (removed header)
    d3 = recall.Diagnostic("/t/m.cu", 3, "error", 'cannot open source file "cusparse_v2.h"')
    assert recall.classify(d3, "", catalog, []).cuda


def test_a_missing_header_is_a_cuda_site_only_if_cuda_shipped_it(tmp_path, catalog, monkeypatch):
    """A project's own header named like CUDA's (`cudacommon.h`, SHOC) off the include path, or a generic name
    that CUDA ships only nested (`config.h`), is not a CUDA site; a header the toolkit ships (by its path under the
    include dir) or that the 12.x headers had (removed in 13.0) is."""
    inc = tmp_path / "inc"
    (inc / "crt").mkdir(parents=True)
    (inc / "cuda_runtime_api.h").write_text("")
    (inc / "crt" / "config.h").write_text("")
    old = tmp_path / "old" / "nvidia" / "cuda_runtime" / "include"
    old.mkdir(parents=True)
    (old / "old_removed_api.h").write_text("")
    monkeypatch.setattr(recall, "OLD_HEADERS", tmp_path / "old")
    recall.shipped_headers.cache_clear()

    def cls(h: str, tree=frozenset({"cudacommon.h", "main.cu"})):
        d = recall.Diagnostic("/t/m.cu", 3, "error", f'cannot open source file "{h}"')
        return recall.classify(d, "", catalog, [str(inc)], tree)

    assert cls("cuda_runtime_api.h").cuda and cls("crt/config.h").cuda and cls("old_removed_api.h").cuda
    mine = cls("cudacommon.h")
    assert not mine.cuda and "the tree's own header" in mine.reason
    assert not cls("config.h").cuda and not cls("cudautil.h").cuda  # a generated or third-party header
    assert cls("nvToolsExt.h").cuda and cls("texture_fetch_functions.h").cuda  # NVIDIA's names, any machine
    recall.shipped_headers.cache_clear()


def test_error_naming_a_user_type_whose_definition_is_flagged_is_covered_through_its_cause(tmp_path, catalog):
    (tmp_path / "k.cuh").write_text("#pragma once\n"
                                    "template <typename T>\n"
                                    "struct AtLeast : public thrust::unary_function<T, bool>\n"
                                    "{\n"
                                    "    __host__ __device__ AtLeast(T b) : b_(b) {}\n"
                                    "    T b_;\n"
                                    "};\n"
                                    "struct Other { int x; };\n")
    (tmp_path / "s.cu").write_text('#include "k.cuh"\n'
                                   "void f(unsigned *p, unsigned n) {\n"
                                   "  unsigned *q = thrust::find_if(p, p + n,\n"
                                   "                                AtLeast<unsigned>(n)).get();\n"
                                   "  thrust::find_if(p, p + n, Other{1});\n"
                                   "}\n")
    out = (f'{tmp_path}/s.cu(4): error: no suitable constructor exists to convert from "unsigned int" to '
           f'"AtLeast<unsigned int>"\n'
           "                                AtLeast<unsigned>(n)).get();\n"
           "                                ^\n"
           f'{tmp_path}/s.cu(5): error: no suitable constructor exists to convert from "int" to "Other"\n')
    sites, _ = recall.collect_sites({"s.cu": (recall.parse_diagnostics(out), tmp_path)}, tmp_path, catalog, [])
    assert [(s.line, s.apis) for s in sites] == [(4, {"thrust::find_if"}), (5, {"thrust::find_if"})]
    findings = [{"rule": "CM540", "relpath": "k.cuh", "line": 3, "end_line": 3},
                {"rule": "CM999", "relpath": "k.cuh", "line": 1, "end_line": 1}]
    recall.match_findings(sites, findings, tmp_path)
    assert [(s.rules, s.fix_rules, s.cause_rules, s.cause_types) for s in sites] == [
        ([], [], ["CM540"], ["AtLeast"]), ([], [], [], [])]
    summary = recall.summarise(sites)
    assert summary["total"] == {"sites": 2, "error": 2, "via_cause": 1, "uncovered": 1}
    assert summary["uncovered_apis"] == {"CCCL": {"thrust::find_if": 1}}


def test_cache_hit_from_the_original_tree_is_moved_to_the_measured_copy(tmp_path):
    """A unit `fix` left unchanged has the same content key in the original tree and the --fixed copy: its
    cached output must name the copy's files, else its diagnostics fall outside the measured tree."""
    out = "/t/v11.8/S/a/main.cu:28:10: fatal error: cudla.h: No such file or directory\n"
    moved = recall.rebase_output(out, "/t/v11.8", "/w/v11.8")
    (d,) = recall.parse_diagnostics(moved)
    assert d.path == "/w/v11.8/S/a/main.cu"
    assert recall.rebase_output(out, "", "/w/v11.8") == out


def test_a_deprecation_inside_a_template_is_covered_by_the_finding_at_its_instantiation(tmp_path, catalog):
    """EDG prints the `because of a "deprecated" attribute` note between the warning and its `detected during`
    lines; the instantiating line of the tree is kept, and its finding on the same API covers the site (SHOC's
    scan kernel: `vecT *p` with vecT=double4, the CM511 finding on `RunTest<double, double4>`)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.h").write_text("template <class T, class V>\n__global__ void k(T *p) {\n  V *q = (V *)p;\n}\n")
    (src / "m.cu").write_text('#include "k.h"\nvoid run(double *p) {\n'
                              "  k<double, double4><<<1, 1>>>(p);\n  k<float, float4><<<1, 1>>>(0);\n}\n")
    out = (f'{src}/k.h(3): warning #1444-D: type "double4" was declared deprecated ("use double4_16a or double4_32a")\n'
           "    V *q = (V *)p;\n    ^\n"
           f'{TK}/vector_types.h(561): note #3287-D: because of a "deprecated" attribute\n'
           "  typedef struct double4 __attribute__((deprecated(\"use double4_16a\"))) double4;\n"
           "                                     ^\n"
           "          detected during:\n"
           f'            instantiation of "void k<T,V>(T *) [with T=double, V=double4]" at line 3 of {src}/m.cu\n\n')
    d = recall.parse_diagnostics(out)
    assert d[0].column == 3 and d[0].context == ((f"{src}/m.cu", 3),)  # the note's caret is not the warning's
    sites, _ = recall.collect_sites({"src/m.cu": (d, src)}, tmp_path, catalog, [TK])
    assert [(s.relpath, s.line, s.instantiations) for s in sites] == [("src/k.h", 3, {("src/m.cu", 3)})]
    unrelated = [{"rule": "CM999", "relpath": "src/m.cu", "line": 3, "end_line": 3, "message": "`float4` ..."}]
    recall.match_findings(sites, unrelated, tmp_path)
    assert not sites[0].cause_rules  # a finding that names another API is not the cause
    cm511 = [{"rule": "CM511", "relpath": "src/m.cu", "line": 3, "end_line": 3,
              "message": "`double4` is deprecated since CUDA 13.0"}]
    recall.match_findings(sites, cm511, tmp_path)
    assert sites[0].cause_rules == ["CM511"] and sites[0].cause_types == ["instantiated at src/m.cu:3"]


def test_a_changed_header_in_an_include_dir_outside_the_tree_is_not_served_from_the_cache(tmp_path):
    """SHOC needs a generated config.h from a stub dir given with -I: editing it must change the cache key."""
    tree, stub = tmp_path / "tree", tmp_path / "stub"
    tree.mkdir()
    stub.mkdir()
    (tree / "a.cu").write_text('#include "config.h"\n')
    (stub / "config.h").write_text("")

    def key() -> str:
        comp = recall.RecallCompiler(tmp_path / "cache", 60, "13.0", {"a.cu": []}, {"a.cu": [tree]}, {}, [str(stub)])
        return comp.key(tree, "a.cu")

    first = key()
    assert key() == first
    (stub / "config.h").write_text("#define HAVE_GETTIMEOFDAY 1\n")
    assert key() != first
    plain = recall.RecallCompiler(tmp_path / "cache", 60, "13.0", {"a.cu": []}, {"a.cu": [tree]}, {})
    assert plain.salt == json.dumps(["compile_recall/1", "13.0"])  # no -I: the keys of existing caches hold


def test_syntax_only_limits_the_host_compiler_and_keeps_its_own_cache_entries(tmp_path, monkeypatch):
    """`--syntax-only` adds `-Xcompiler -fsyntax-only` to every unit's nvcc command (a fake nvcc records its
    arguments), and the flags are in the cache key: a full compile's output is never served for it."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    argv = tmp_path / "argv"
    nvcc = bin_ / "nvcc"
    nvcc.write_text(f'#!/bin/sh\necho "$@" >> {argv}\n')
    nvcc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:/usr/bin:/bin")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.cu").write_text("int main() { return 0; }\n")
    flags = {"a.cu": ["-std=c++17", "-arch=sm_90", "-c"]}
    full = recall.RecallCompiler(tmp_path / "cache", 60, "13.5", flags, {"a.cu": [tree]}, {})
    fast = recall.RecallCompiler(tmp_path / "cache", 60, "13.5", recall.syntax_only(flags), {"a.cu": [tree]}, {})
    assert full.key(tree, "a.cu") != fast.key(tree, "a.cu")
    assert full.compile(tree, "a.cu").ok and fast.compile(tree, "a.cu").ok
    first, second = argv.read_text().splitlines()
    assert "-fsyntax-only" not in first
    assert second.split()[:5] == ["-std=c++17", "-arch=sm_90", "-c", "-Xcompiler", "-fsyntax-only"]


def test_an_include_dir_inside_the_tree_follows_the_measured_copy(tmp_path):
    """`-I TREE/chLib` (cudahandbook) is written {ROOT}/chLib, so a --fixed run compiles against the fixed copy's
    headers, and its headers are in the cache key's closure; an -I outside the tree stays as given."""
    tree = tmp_path / "hb"
    (tree / "chLib").mkdir(parents=True)
    (tree / "a.cu").write_text('#include "chError.h"\n')
    (tree / "chLib" / "chError.h").write_text("\n")
    units, flags, search, _ = recall.plan_units(tree, [], None, [str(tree / "chLib"), "/x"], [])
    assert "-I{ROOT}/chLib" in flags["a.cu"] and f"-I{tree / 'chLib'}" not in flags["a.cu"]
    assert flags["a.cu"][-1] == "-I/x" and tree / "chLib" in search["a.cu"]
    comp = recall.RecallCompiler(tmp_path / "cache", 60, "13.5", flags, search, {})
    first = comp.key(tree, "a.cu")
    (tree / "chLib" / "chError.h").write_text("#define X 1\n")
    assert comp.key(tree, "a.cu") != first


def test_the_fixed_copy_keys_its_own_common_headers(tmp_path):
    """A --fixed copy's cache key reads the copy's `Common/` headers (search dirs planned in the original tree):
    the same content gives the original's key, an edit of a Common header by fix gives another."""
    tree = tmp_path / "v11.8"
    (tree / "Common").mkdir(parents=True)
    (tree / "Samples" / "s").mkdir(parents=True)
    (tree / "Samples" / "s" / "a.cu").write_text('#include "helper.h"\n')
    (tree / "Common" / "helper.h").write_text("// old\n")
    units, flags, search, cwd = recall.plan_units(tree, [], None, [], [])
    comp = recall.RecallCompiler(tmp_path / "cache", 60, "13.5", flags, search, cwd, origin=tree)
    copy = tmp_path / "work" / "v11.8"
    shutil.copytree(tree, copy)
    assert comp.key(copy, "Samples/s/a.cu") == comp.key(tree, "Samples/s/a.cu")
    (copy / "Common" / "helper.h").write_text("// fixed\n")
    assert comp.key(copy, "Samples/s/a.cu") != comp.key(tree, "Samples/s/a.cu")


def test_a_missing_opencl_header_is_not_a_cuda_site_even_where_cuda_shipped_it(tmp_path, catalog, monkeypatch):
    """`CL/cl.h` is in the 11.x runtime wheels' include/ (so among the headers CUDA shipped), yet its absence says
    which components are installed, not that a CUDA API changed (Parboil's parboil.h)."""
    old = tmp_path / "old" / "nvidia" / "cuda_runtime" / "include" / "CL"
    old.mkdir(parents=True)
    (old / "cl.h").write_text("")
    monkeypatch.setattr(recall, "OLD_HEADERS", tmp_path / "old")
    recall.shipped_headers.cache_clear()
    d = recall.Diagnostic("/t/parboil.h", 318, "error", "CL/cl.h: No such file or directory")
    c = recall.classify(d, "", catalog, [], frozenset())
    recall.shipped_headers.cache_clear()
    assert not c.cuda and c.reason.startswith("an OpenCL header") and c.api == "CL/cl.h"


def test_relative_include_dirs_are_taken_against_the_invocation_cwd(tmp_path, monkeypatch):
    """nvcc runs in the unit's directory, so `--wheel-include inc` or `-I inc` written as given named nothing
    there; both become absolute against the cwd the bench was started in."""
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "a.cu").write_text("int main() { return 0; }\n")
    (tmp_path / "wheel").mkdir()
    (tmp_path / "extra").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CUDAMIGRATE_WHEEL_INCLUDE", raising=False)
    wheel = recall.cuda_include_dirs(["wheel"])
    assert wheel == [str(tmp_path / "wheel")]
    _, flags, _, _ = recall.plan_units(tree, [], None, ["extra"], wheel)
    assert flags["a.cu"][-2:] == [f"-I{tmp_path / 'extra'}", f"-I{tmp_path / 'wheel'}"]


def test_a_compile_that_times_out_has_no_verdict_and_is_not_cached(tmp_path, monkeypatch):
    """A unit whose compile outlives --timeout (a Thrust sort on a loaded machine) is neither a failure nor
    cached: counted as a failure, a unit that compiled before the fix showed up as the fix's compile regression
    (cuda-samples v11.8 radixSortThrust with nvcc 13.5, which compiles both before and after when given time)."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    nvcc = bin_ / "nvcc"
    nvcc.write_text("#!/bin/sh\nsleep 5\n")
    nvcc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:/usr/bin:/bin")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.cu").write_text("int main() { return 0; }\n")
    comp = recall.RecallCompiler(tmp_path / "cache", 1, "13.5", {"a.cu": ["-c"]}, {"a.cu": [tree]}, {})
    res = comp.compile(tree, "a.cu")
    assert res.ok is None and "timeout after 1s" in res.output
    assert not list((tmp_path / "cache").glob("*.json"))
