"""The fix contract on small projects written to a temp dir: callee identity (a project declaration of an
API name is not the API) and the file's language (headers only C files include get C)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamigrate.match.language import file_language

from .helpers import engine_for, fix_text

CALL = "int main(void) {\n  CUcontext c;\n  cuCtxCreate(&c, 0, 0);\n  return 0;\n}\n"


def _project(tmp: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = tmp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _scan(path: Path, rules: list[str]):
    eng = engine_for(select=rules, extend_select=rules)
    return eng.scan_path(path)


def test_function_pointer_declared_two_headers_away_is_not_the_api(tmp_path):
    _project(tmp_path, {
        "loader.h": '#include "loader_types.h"\nextern tcuCtxCreate *cuCtxCreate;\n',
        "loader_types.h": "typedef void *CUcontext;\ntypedef int CUresult;\n"
                          "typedef CUresult tcuCtxCreate(CUcontext *, unsigned, int);\n",
        "main.cpp": '#include "loader.h"\n' + CALL,
    })
    assert _scan(tmp_path / "main.cpp", ["CM509"]).findings == []


@pytest.mark.parametrize("decl", [
    "typedef int (*cuCtxCreate)(void **, unsigned, int);",  # a type of that name
    "#define cuCtxCreate(a, b, c) my_create(a, b, c)",  # the project's own macro
])
def test_unconditional_project_declarations_shadow(tmp_path, decl):
    _project(tmp_path, {"own.h": decl + "\n", "main.cpp": '#include <cuda.h>\n#include "own.h"\n' + CALL})
    assert _scan(tmp_path / "main.cpp", ["CM509"]).findings == []


def test_versioned_alias_macro_is_still_the_api(tmp_path):
    _project(tmp_path, {"own.h": "#define cuCtxCreate cuCtxCreate_v2\n",
                        "main.cpp": '#include <cuda.h>\n#include "own.h"\n' + CALL})
    assert [f.rule_id for f in _scan(tmp_path / "main.cpp", ["CM509"]).findings] == ["CM509"]


def test_conditional_declaration_with_cuda_header_keeps_finding_without_fix(tmp_path):
    _project(tmp_path, {
        "own.h": "#ifdef DYN\ntypedef int (*pfn)(void **, unsigned, int);\nextern pfn cuCtxCreate;\n#else\n#include <cuda.h>\n#endif\n",
        "main.cpp": '#include "own.h"\n' + CALL,
    })
    res = _scan(tmp_path / "main.cpp", ["CM509"])
    assert [f.rule_id for f in res.findings] == ["CM509"]
    assert res.findings[0].fix is None
    assert "own.h:3" in res.findings[0].context["fix_blocked"]


def test_conditional_declaration_without_any_cuda_header_drops_finding(tmp_path):
    _project(tmp_path, {
        "own.h": "#if API_VERSION >= 3020\ntypedef int (*pfn)(void **, unsigned, int);\nextern pfn cuCtxCreate;\n#endif\n",
        "main.cpp": '#include "own.h"\n' + CALL,
    })
    assert _scan(tmp_path / "main.cpp", ["CM509"]).findings == []


def test_local_pointer_shadows_only_in_its_function(tmp_path):
    src = ("#include <cuda.h>\ntypedef CUresult (*fn_t)(CUcontext *, unsigned, CUdevice);\n"
           "int f(fn_t g) {\n  CUcontext c;\n  fn_t cuCtxCreate = g;\n  return cuCtxCreate(&c, 0, 0);\n}\n"
           "int h(void) {\n  CUcontext c;\n  return cuCtxCreate(&c, 0, 0);\n}\n")
    _project(tmp_path, {"main.cpp": src})
    res = _scan(tmp_path / "main.cpp", ["CM509"])
    assert [(f.rule_id, f.line) for f in res.findings] == [("CM509", 10)]


def test_macro_parameter_is_not_the_api(tmp_path):
    src = "#include <cuda.h>\n#define CREATE(cuCtxCreate, c, d) cuCtxCreate(c, 0, d)\nint x;\n"
    _project(tmp_path, {"main.cpp": src})
    assert _scan(tmp_path / "main.cpp", ["CM509"]).findings == []


def test_header_included_only_from_c_is_c(tmp_path):
    _project(tmp_path, {"ctx.h": "#include <cuda.h>\nstatic int mk(CUcontext *c) { return cuCtxCreate(c, 0, 0); }\n",
                        "a.c": '#include "ctx.h"\n'})
    assert file_language(tmp_path / "ctx.h") == "c"
    h = tmp_path / "ctx.h"
    assert b"cuCtxCreate(c, NULL, 0, 0)" in fix_text(engine_for(select=["CM509"]), h, h.read_bytes())


def test_header_included_from_cpp_is_cxx(tmp_path):
    _project(tmp_path, {"ctx.h": "int x;\n", "a.c": '#include "ctx.h"\n', "b.cpp": '#include "ctx.h"\n'})
    assert file_language(tmp_path / "ctx.h") == "cxx"
    assert file_language(tmp_path / "lonely.h") == "cxx"
    assert file_language(tmp_path / "k.c") == "c"


def test_header_in_include_dir_used_from_c_sources_is_c(tmp_path):
    _project(tmp_path, {"include/api.h": "int x;\n", "src/a.c": '#include "../include/api.h"\n',
                        "src/b.c": '#include "api.h"\n'})
    assert file_language(tmp_path / "include" / "api.h") == "c"


@pytest.mark.parametrize("guard", [("#ifndef OWN_H", "#endif"), ("#if !defined(OWN_H)", "#endif")])
def test_include_guard_does_not_make_a_declaration_conditional(tmp_path, guard):
    head = f"{guard[0]}\n#define OWN_H\ntypedef int (*pfn)(void **, unsigned, int);\nextern pfn cuCtxCreate;\n{guard[1]}\n"
    _project(tmp_path, {"own.h": head, "main.cpp": '#include <cuda.h>\n#include "own.h"\n' + CALL})
    assert _scan(tmp_path / "main.cpp", ["CM509"]).findings == []


def test_vendored_copy_of_a_toolkit_header_is_not_a_shadow(tmp_path):
    _project(tmp_path, {"cuda.h": "typedef void *CUcontext;\nint cuCtxCreate(CUcontext *, unsigned int, int);\n",
                        "main.cpp": '#include "cuda.h"\n' + CALL})
    assert [f.rule_id for f in _scan(tmp_path / "main.cpp", ["CM509"]).findings] == ["CM509"]


def test_project_function_without_toolkit_header_is_not_the_api(tmp_path):
    _project(tmp_path, {"own.h": "typedef void *CUcontext;\nint cuCtxCreate(CUcontext *, unsigned, int);\n",
                        "main.cpp": '#include "own.h"\n' + CALL})
    assert _scan(tmp_path / "main.cpp", ["CM509"]).findings == []


def test_project_overload_next_to_the_toolkit_withholds_only_calls_it_can_take(tmp_path):
    """C++ overloads: with the toolkit in sight, the project's `cudaThreadSynchronize(Marker &)` does not hide
    the API. A call the project overload can take may be either (finding kept, fix withheld); one it cannot
    take is the API's and keeps its fix."""
    _project(tmp_path, {
        "own.h": "#include <cuda_runtime.h>\nstruct Marker { int id; };\n"
                 "inline cudaError_t cudaThreadSynchronize(Marker &m) { m.id = 1; return cudaSuccess; }\n",
        "main.cu": '#include "own.h"\nint main() {\n  Marker m{0};\n'
                   "  cudaThreadSynchronize();\n  cudaThreadSynchronize(m);\n  return 0;\n}\n",
    })
    res = _scan(tmp_path / "main.cu", ["CM501"])
    got = {f.line: f for f in res.findings}
    assert got[4].fix is not None  # no argument: the project overload needs one, so this is the API
    assert got[5].fix is None and "overload" in got[5].context["fix_blocked"]


KERNEL = "__global__ void k(ulong4 *p) { p[0].x = 1; }\n"


def test_macro_the_includer_defines_first_is_the_projects(tmp_path):
    # legacy code includes its kernel file after redefining a CUDA type name (`#define ulong4 uint4`): in the
    # kernel file `ulong4` is the project's macro, and renaming it to `ulong4_16a` would change the type
    _project(tmp_path, {"main.cu": '#define ulong4 uint4\n#include "kernel.cu"\nint main() { return 0; }\n',
                        "kernel.cu": KERNEL})
    assert _scan(tmp_path / "kernel.cu", ["CM511"]).findings == []
    eng = engine_for(select=["CM511"], extend_select=["CM511"])
    assert fix_text(eng, tmp_path / "kernel.cu", KERNEL.encode()) == KERNEL.encode()


def test_macro_one_includer_of_two_defines_withholds_the_fix(tmp_path):
    _project(tmp_path, {"main.cu": '#define ulong4 uint4\n#include "kernel.cu"\n',
                        "other.cu": '#include "kernel.cu"\n', "kernel.cu": KERNEL})
    res = _scan(tmp_path / "kernel.cu", ["CM511"])
    assert [f.rule_id for f in res.findings] == ["CM511"] and res.findings[0].fix is None
    assert "macro at main.cu:1" in res.findings[0].message


def test_macro_defined_after_the_include_or_by_a_file_that_does_not_include_it_shadows_nothing(tmp_path):
    _project(tmp_path, {"main.cu": '#include "kernel.cu"\n#define ulong4 uint4\n',
                        "unrelated.cu": "#define ulong4 uint4\n", "kernel.cu": KERNEL})
    res = _scan(tmp_path / "kernel.cu", ["CM511"])
    assert [f.rule_id for f in res.findings] == ["CM511"] and res.findings[0].fix is not None


# An includer's `#define` or `#include` in a branch nvcc's preprocessor never takes does not count, as for
# token-pasting macros (match/shadows.py `includer_macros` with match/ppenv.py's `live_directives`).
def test_macro_an_includer_defines_only_for_hip_is_not_the_projects(tmp_path):
    _project(tmp_path, {"main.cu": '#ifdef __HIPCC__\n#define ulong4 uint4\n#endif\n#include "kernel.cu"\n',
                        "kernel.cu": KERNEL})
    res = _scan(tmp_path / "kernel.cu", ["CM511"])
    assert [f.rule_id for f in res.findings] == ["CM511"] and res.findings[0].fix is not None


def test_file_that_includes_the_kernel_only_for_hip_is_not_its_includer(tmp_path):
    _project(tmp_path, {"main.cu": '#define ulong4 uint4\n#ifdef __HIPCC__\n#include "kernel.cu"\n#endif\n',
                        "kernel.cu": KERNEL})
    res = _scan(tmp_path / "kernel.cu", ["CM511"])
    assert [f.rule_id for f in res.findings] == ["CM511"] and res.findings[0].fix is not None


def test_macro_in_a_branch_nvcc_always_takes_is_unconditional(tmp_path):
    _project(tmp_path, {"main.cu": '#ifdef __CUDACC__\n#define ulong4 uint4\n#endif\n#include "kernel.cu"\n',
                        "kernel.cu": KERNEL})
    assert _scan(tmp_path / "kernel.cu", ["CM511"]).findings == []
    # a condition the model cannot decide keeps the definition conditional: the fix is withheld
    _project(tmp_path, {"main.cu": '#ifdef USE_VEC\n#define ulong4 uint4\n#endif\n#include "kernel.cu"\n'})
    res = _scan(tmp_path / "kernel.cu", ["CM511"])
    assert [f.rule_id for f in res.findings] == ["CM511"] and res.findings[0].fix is None


def test_a_directory_is_listed_once_for_its_files(tmp_path, monkeypatch):
    import cudamigrate.match.shadows as shadows

    _project(tmp_path, {"main.cu": '#define ulong4 uint4\n#include "kernel.cu"\n#include "kernel2.cu"\n',
                        "kernel.cu": KERNEL, "kernel2.cu": KERNEL.replace("k(", "k2(")})
    listed: list[str] = []
    real = shadows.os.scandir
    monkeypatch.setattr(shadows.os, "scandir", lambda d: (listed.append(str(d)), real(d))[1])
    eng = engine_for(select=["CM511"], extend_select=["CM511"])
    for name in ("kernel.cu", "kernel2.cu"):
        assert eng.scan_path(tmp_path / name).findings == []
    assert listed == [str(tmp_path)]
