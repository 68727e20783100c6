"""Engine pieces behind the Thrust (CM30x) and NVRTC/version-guard (CM4xx) families."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import engine_for, fix_text


def _scan(name: str, src: str, rules: list[str], **kw):
    eng = engine_for(select=rules, extend_select=rules, **kw)
    res = eng.scan_bytes(Path(name), src.encode())
    assert not res.errors, res.errors
    return res.findings


def _fix(name: str, src: str, rules: list[str], **kw) -> str:
    eng = engine_for(select=rules, extend_select=rules, **kw)
    return fix_text(eng, Path(name), src.encode()).decode()


GUARD = "#if {cond}\nint live;\n#else\nint dead;\n#endif\n"


@pytest.mark.parametrize(
    "cond, target, decided",
    [
        ("CUDART_VERSION >= 12000", (13, 0), True),
        ("CUDART_VERSION < 12000", (13, 0), True),
        ("CUDART_VERSION >= 14000", (13, 0), False),  # only a future toolkit
        ("CUDART_VERSION == 13000", (13, 0), False),  # true for 13.0, false for 13.1
        ("__CUDACC_VER_MAJOR__ == 13 && __CUDACC_VER_MINOR__ >= 2", (13, 0), False),  # false at 13.0, true at 13.2
        ("__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4)", (13, 0), True),
        ("CUDART_VERSION >= 12040", (12, 4), True),
        ("CUDART_VERSION >= 12040", (12, 0), False),
        ("CUDART_VERSION >= 11000 && defined(MY_FLAG)", (13, 0), False),
        ("CUDART_VERSION >= 11000 || defined(MY_FLAG)", (13, 0), True),
        ("CUDART_VERSION < 11000 && defined(MY_FLAG)", (13, 0), True),
        ("MY_VERSION(CUDART_VERSION) > 1", (13, 0), False),
    ],
)
def test_guard_is_decided_only_for_all_later_toolkits(cond, target, decided):
    src = "#include <cuda_runtime.h>\n" + GUARD.format(cond=cond)
    got = _scan("g.cu", src, ["CM410"], target=target)
    assert bool(got) == decided, [f.message for f in got]


def test_which_macros_are_known_where():
    body = GUARD.format(cond="__CUDACC_VER_MAJOR__ >= 12")
    assert _scan("a.cu", body, ["CM410"])  # nvcc predefines it for CUDA sources
    assert not _scan("a.cpp", body, ["CM410"])  # a host compiler does not
    api = GUARD.format(cond="__CUDA_API_VER_MAJOR__ >= 12")
    assert not _scan("a.cpp", "#include <cuda_runtime.h>\n" + api, ["CM410"])  # g++ + cuda_runtime.h: undefined
    late = GUARD.format(cond="CUDA_VERSION >= 12000") + "#include <cuda.h>\n"
    assert not _scan("a.cu", late, ["CM410"])  # cuda.h comes after the guard
    early = "#include <cuda.h>\n" + GUARD.format(cond="CUDA_VERSION >= 12000")
    assert len(_scan("a.cu", early, ["CM410"])) == 1
    assert not _scan("a.cu", GUARD.format(cond="CUDA_VERSION >= 12000"), ["CM410"])  # no cuda.h: unknown
    assumed = _scan("a.cu", GUARD.format(cond="CUDA_VERSION >= 12000"), ["CM410"],
                    rule_options={"CM410": {"assume_defined": ["CUDA_VERSION"]}})
    assert len(assumed) == 1
    redefined = "#undef CUDART_VERSION\n#define CUDART_VERSION 9000\n" + GUARD.format(cond="CUDART_VERSION >= 12000")
    assert not _scan("a.cu", redefined, ["CM410"])


def test_guard_fix_keeps_live_branches_of_chains():
    src = (
        "#if defined(A)\nint a;\n#elif CUDART_VERSION < 12000\nint old;\n#elif defined(B)  // b\nint b;\n#endif\n"
        "#if __CUDACC_VER_MAJOR__ < 12 /* old */\nint x;\n#elif defined(C) // c\nint c;\n#else\nint d;\n#endif // end\n"
        "void f() {\n#ifdef CUDART_VERSION\n#  if CUDART_VERSION >= 12000\n  g();\n#  else\n  h();\n#  endif\n#endif\n}\n"
        "#ifndef __CUDACC_VER_MAJOR__\nint e;\n#endif\n"
    )
    want = (
        "#if defined(A)\nint a;\n#elif defined(B)  // b\nint b;\n#endif\n"
        "#if defined(C) // c\nint c;\n#else\nint d;\n#endif // end\n"
        "void f() {\n  g();\n}\n"
    )
    assert _fix("a.cu", src, ["CM410"]) == want


def test_guard_fix_keeps_crlf():
    src = "#include <cuda_runtime.h>\r\n#if CUDART_VERSION < 12000\r\nint a;\r\n#elif defined(X)\r\nint b;\r\n#endif\r\n"
    assert _fix("a.cpp", src, ["CM410"]) == "#include <cuda_runtime.h>\r\n#if defined(X)\r\nint b;\r\n#endif\r\n"


THRUST = """
#include <thrust/device_vector.h>
using dv = thrust::device_vector<int>;
typedef dv dv2;
static void host(std::vector<int> &v) { for (int i = 0; i < 2; ++i) thrust::sort(v.begin(), v.end()); }
static void dev(dv2 &v, thrust::device_vector<int> *p) {
  for (int i = 0; i < 2; ++i) thrust::sort(v.begin(), v.end());
  for (int i = 0; i < 2; ++i) thrust::sort(p->begin(), p->end());
}
int main() {
  dv v(8);
  for (int i = 0; i < 2; ++i) thrust::sort(v.begin() + 1, v.end());
  for (int i = 0; i < 2; ++i) thrust::sort(thrust::raw_pointer_cast(v.data()), thrust::raw_pointer_cast(v.data()) + 8);
  {
    std::vector<int> v(8);
    for (int i = 0; i < 2; ++i) thrust::sort(v.begin(), v.end());
  }
  return 0;
}
"""


def test_arg_type_follows_aliases_parameters_and_scopes():
    got = sorted(f.line for f in _scan("t.cu", THRUST, ["CM301"]))
    # dev(): alias-of-alias parameter and pointer parameter; main(): `dv v(8)` (parsed like a function declaration)
    # and raw_pointer_cast(v.data()); not host()'s std::vector, and not the inner block's std::vector `v`
    assert got == [7, 8, 12, 13], got


def test_thrust_loop_scopes():
    src = """
#include <thrust/device_vector.h>
int main() {
  thrust::device_vector<int> d(4);
  int s = 0;
  for (int i = d[0]; i < 4; ++i) s += i;
  for (int x : d) s += x;
  for (int i = 0; i < 4; ++i) { s += d[i]; thrust::device_vector<int> *p = &d; static thrust::device_vector<int> k(2); }
  return s;
}
"""
    got = [(f.line, f.rule_id) for f in _scan("l.cu", src, ["CM304", "CM305"])]
    assert got == [(8, "CM304")], got


def test_universal_vector_elements_are_plain_memory():
    src = """
#include <thrust/universal_vector.h>
int main() {
  thrust::universal_vector<int> u(4);
  int s = 0;
  for (int i = 0; i < 4; ++i) { s += u[i]; thrust::universal_vector<int> t(2); }
  return s;
}
"""
    got = [(f.line, f.rule_id) for f in _scan("u.cu", src, ["CM304", "CM305"])]
    assert got == [(6, "CM305")], got


def test_device_pointers_count_as_device_iterators():
    src = """
#include <thrust/device_ptr.h>
#include <thrust/sort.h>
void f(int *raw, int n) {
  thrust::device_ptr<int> dp = thrust::device_pointer_cast(raw);
  for (int i = 0; i < 2; ++i) thrust::sort(dp, dp + n);
  for (int i = 0; i < 2; ++i) thrust::sort(thrust::device_pointer_cast(raw), thrust::device_pointer_cast(raw) + n);
  for (int i = 0; i < 2; ++i) thrust::sort(raw, raw + n);
}
"""
    assert [f.line for f in _scan("p.cu", src, ["CM301"])] == [6, 7]
    fixed = _fix("p.cu", src, ["CM301"])
    assert "thrust::sort(thrust::cuda::par_nosync, dp, dp + n);" in fixed
    assert "thrust::sort(thrust::cuda::par_nosync, thrust::device_pointer_cast(raw)," in fixed
    assert "thrust::sort(raw, raw + n);" in fixed
