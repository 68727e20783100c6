"""Type renames apply only where the name is CUDA's (match/shadows.py): a struct, typedef or macro the project
defines itself, in the file or a project header it includes, is the project's (issue 31: CM511 renamed an OpenCL
host header's own `struct double4` and the templates using it)."""

from __future__ import annotations

from pathlib import Path

from .helpers import engine_for

HEADER = ("#ifndef CLHOST_H\n#define CLHOST_H\nstruct double4 { double x, y, z, w; };\n"
          "template <typename T> T sum4(const double4 &a) { return a.x + a.y + a.z + a.w; }\n#endif\n")
USER = '#include "clhost.h"\ntemplate <typename T> struct Vec { T v; };\nVec<double4> g;\ndouble f(double4 a) { return sum4<double>(a); }\n'


def _scan(path: Path) -> list:
    return engine_for(select=["CM511"], extend_select=["CM511"]).scan_path(path).findings


def test_user_struct_in_a_project_header_is_not_renamed(tmp_path):
    (tmp_path / "clhost.h").write_text(HEADER)
    (tmp_path / "host.cpp").write_text(USER)
    assert _scan(tmp_path / "clhost.h") == []
    assert _scan(tmp_path / "host.cpp") == []


def test_macro_named_like_the_type_is_the_projects(tmp_path):
    (tmp_path / "m.cpp").write_text("struct vec4d { double x, y, z, w; };\n#define double4 vec4d\ndouble4 g;\n")
    assert _scan(tmp_path / "m.cpp") == []


def test_cuda_double4_next_to_a_namespaced_user_struct_is_still_renamed(tmp_path):
    (tmp_path / "k.cu").write_text("namespace cl { struct double4 { double x, y, z, w; }; }\n"
                                   "__global__ void k(double4 *p) { p[0] = make_double4(1, 2, 3, 4); }\n")
    assert [f.line for f in _scan(tmp_path / "k.cu")] == [2, 2]
