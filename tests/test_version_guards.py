"""Version guards (CM410): which `#if` conditions on toolkit macros are decided for the target, and the fix that
keeps only the live branch."""

from __future__ import annotations

import pytest

from .helpers import fix_code, scan_code


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
    got = scan_code(src, ["CM410"], "g.cu", target=target)
    assert bool(got) == decided, [f.message for f in got]


def test_which_macros_are_known_where():
    body = GUARD.format(cond="__CUDACC_VER_MAJOR__ >= 12")
    assert scan_code(body, ["CM410"], "a.cu")  # nvcc predefines it for CUDA sources
    assert not scan_code(body, ["CM410"], "a.cpp")  # a host compiler does not
    api = GUARD.format(cond="__CUDA_API_VER_MAJOR__ >= 12")
    assert not scan_code("#include <cuda_runtime.h>\n" + api, ["CM410"], "a.cpp")  # g++ + cuda_runtime.h: undefined
    late = GUARD.format(cond="CUDA_VERSION >= 12000") + "#include <cuda.h>\n"
    assert not scan_code(late, ["CM410"], "a.cu")  # cuda.h comes after the guard
    early = "#include <cuda.h>\n" + GUARD.format(cond="CUDA_VERSION >= 12000")
    assert len(scan_code(early, ["CM410"], "a.cu")) == 1
    assert not scan_code(GUARD.format(cond="CUDA_VERSION >= 12000"), ["CM410"], "a.cu")  # no cuda.h: unknown
    assumed = scan_code(GUARD.format(cond="CUDA_VERSION >= 12000"), ["CM410"], "a.cu",
                    rule_options={"CM410": {"assume_defined": ["CUDA_VERSION"]}})
    assert len(assumed) == 1
    redefined = "#undef CUDART_VERSION\n#define CUDART_VERSION 9000\n" + GUARD.format(cond="CUDART_VERSION >= 12000")
    assert not scan_code(redefined, ["CM410"], "a.cu")


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
    assert fix_code(src, ["CM410"], "a.cu", keep_compat=(13, 0)) == want


def test_guard_fix_keeps_crlf():
    src = "#include <cuda_runtime.h>\r\n#if CUDART_VERSION < 12000\r\nint a;\r\n#elif defined(X)\r\nint b;\r\n#endif\r\n"
    assert fix_code(src, ["CM410"], "a.cpp", keep_compat=(13, 0)) == "#include <cuda_runtime.h>\r\n#if defined(X)\r\nint b;\r\n#endif\r\n"
