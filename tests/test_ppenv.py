"""ppenv: the preprocessor state a translation unit sees, through the project's own headers."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cudamigrate.build import cuda_home
from cudamigrate.engine import Engine, Options
from cudamigrate.match.builtins import toolkits_from
from cudamigrate.match.ppenv import build_env, toolkit_groups

from .helpers import all_rules

W13 = toolkits_from((13, 0))


def _env(path: Path, cuda: bool = False, roots=()):
    return build_env(path.read_bytes(), path, cuda, tuple(str(r) for r in roots), W13)


def _at(path: Path, marker: str) -> int:
    return path.read_bytes().index(marker.encode())


def test_cuda_h_through_a_project_header(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "common.h").write_text("#ifndef COMMON_H\n#define COMMON_H\n#include <cuda.h>\n#endif\n")
    f = tmp_path / "a.cpp"
    f.write_text('#if CUDA_VERSION >= 13000\n#endif\n#include "inc/common.h"\n#if CUDA_VERSION >= 13000\n#endif\n')
    env = _env(f)
    first, second = _at(f, "#if"), f.read_bytes().rindex(b"#if")
    assert env.decide("CUDA_VERSION >= 13000", first, W13) is None  # not included yet: maybe undefined
    assert env.decide("CUDA_VERSION >= 13000", second, W13) is True


def test_angle_include_found_under_the_scan_root(tmp_path):
    (tmp_path / "Common").mkdir()
    (tmp_path / "Common" / "helper.h").write_text("#pragma once\n#include <cuda_runtime.h>\n#define API_LEVEL 5000\n")
    (tmp_path / "s" / "x").mkdir(parents=True)
    f = tmp_path / "s" / "x" / "a.cpp"
    f.write_text("#include <helper.h>\n#if CUDART_VERSION < 13000\n#endif\n")
    pos = _at(f, "#if")
    assert _env(f).decide("CUDART_VERSION < 13000", pos, W13) is None  # helper.h unknown without the root
    env = _env(f, roots=[tmp_path])
    assert env.decide("CUDART_VERSION < 13000", pos, W13) is False
    assert env.decide("API_LEVEL >= 4000", pos, W13) is True
    assert env.decide("API_LEVEL >= 4000", pos, W13, user_macros=False) is None  # CM410: configuration


def test_defined_and_version_is_decided_both_ways(tmp_path):
    f = tmp_path / "a.cpp"  # host file: __CUDACC_VER_MAJOR__ may or may not be defined
    f.write_text("#if X\n#endif\n")
    env = _env(f)
    assert env.decide("defined(__CUDACC_VER_MAJOR__) && __CUDACC_VER_MAJOR__ < 11", 0, W13) is False
    assert env.decide("!defined(__CUDACC_VER_MAJOR__) || __CUDACC_VER_MAJOR__ >= 12", 0, W13) is True
    assert env.decide("__CUDACC_VER_MAJOR__ >= 12", 0, W13) is None  # 0 when undefined
    assert env.decide("defined(__CUDACC_VER_MAJOR__)", 0, W13) is None


def test_defines_under_undecided_conditions_are_unknown(tmp_path):
    f = tmp_path / "a.cpp"
    f.write_text("#define A 1\n#ifdef FROM_COMMAND_LINE\n#define A 2\n#define B 3\n#endif\n#if A\n#endif\n"
                 "#undef A\n#if defined(A)\n#endif\n")
    env = _env(f)
    pos = _at(f, "#if A")
    assert env.decide("A == 1", pos, W13) is None
    assert env.decide("defined(B)", pos, W13) is None
    assert env.decide("defined(A)", _at(f, "#if defined(A)"), W13) is False


def test_dead_branches_of_header_and_file_are_skipped(tmp_path):
    (tmp_path / "cfg.h").write_text("#ifndef CFG_H\n#define CFG_H\n#if 0\n#define OLD_API 1\n#endif\n#define LEVEL (2 * 1000)\n#endif\n")
    f = tmp_path / "a.cpp"
    f.write_text('#include "cfg.h"\n#include "cfg.h"\n#if LEVEL\n#endif\n')
    env = _env(f)
    pos = _at(f, "#if LEVEL")
    assert env.decide("LEVEL == 2000", pos, W13) is True
    assert env.decide("defined(OLD_API)", pos, W13) is None  # never defined by the project: still a possible -D


def test_include_cycles_terminate(tmp_path):
    (tmp_path / "a.h").write_text('#include "b.h"\n#define FROM_A 1\n')
    (tmp_path / "b.h").write_text('#include "a.h"\n#define FROM_B 1\n')
    f = tmp_path / "m.cpp"
    f.write_text('#include "a.h"\n#if FROM_A && FROM_B\n#endif\n')
    assert _env(f).decide("FROM_A && FROM_B", _at(f, "#if F"), W13) is True


def test_matrixmul_dynlink_like_macro_dead_branch(tmp_path):
    """A driver-API wrapper header defines its own API level; the file's `#else` for older levels is dead, so the
    removed calls in it are not reported, while the live branch and undecided branches are."""
    (tmp_path / "dynlink_api.h").write_text(
        "#ifndef DYNLINK_API_H\n#define DYNLINK_API_H\n#include <cuda.h>\n#define MY_DRV_API_VERSION 5000\n#endif\n")
    f = tmp_path / "jit.cpp"
    f.write_text('#include "dynlink_api.h"\n'
                 "void f(CUcontext *c, CUdevice d) {\n"
                 "#if MY_DRV_API_VERSION >= 4000\n  cuCtxCreate(c, nullptr, 0, d);\n"
                 "#else  // MY_DRV_API_VERSION < 4000\n  cuCtxCreate(c, 0, d);\n  cuCtxCreate_v2(c, 0, d);\n#endif\n"
                 "#if MY_DRV_API_VERSION >= 6000\n  cuCtxCreate(c, 0, d);\n#endif\n"
                 "#ifdef EXTERNAL_OPTION\n  cuCtxCreate(c, 0, d);\n#endif\n}\n")
    eng = Engine(all_rules(), Options(select=["CM509", "CM410"]))
    res = eng.scan_bytes(f, f.read_bytes())
    assert [(x.rule_id, x.line) for x in res.findings] == [("CM509", 13)]


def test_toolkit_table():
    assert toolkit_groups("cuda.h") == {"CUDA_VERSION"}
    assert toolkit_groups("cuda_runtime.h") == {"CUDART_VERSION"}
    assert toolkit_groups("cublas_v2.h") == {"CUDART_VERSION"}
    assert toolkit_groups("cufft.h") == set()
    assert toolkit_groups("nvrtc.h") == set()


@pytest.mark.skipif(shutil.which("g++") is None or cuda_home() is None, reason="needs g++ and the CUDA headers")
@pytest.mark.parametrize("header", ["cuda.h", "cuda_runtime.h", "cuda_fp16.h", "cudaGL.h", "driver_types.h", "vector_types.h"])
def test_toolkit_table_matches_the_headers(header):
    """The table says what the host compiler sees: check a sample of headers against g++ -E -dM."""
    inc = Path(cuda_home()) / "include"
    p = subprocess.run(["g++", "-x", "c++", "-E", "-dM", f"-I{inc}", f"-I{inc / 'cccl'}", "-"],
                       input=f"#include <{header}>\n", capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    got = {m for m in ("CUDA_VERSION", "CUDART_VERSION") if f"#define {m} " in p.stdout}
    assert got == toolkit_groups(header)


@pytest.mark.parametrize("header", [
    "#ifndef G_H\n#define G_H\n#define LEVEL 7\n#endif\n",
    "#pragma once\n#ifndef G_H\n#define G_H\n#define LEVEL 7\n#endif\n",
    "#if !defined(G_H)\n#define G_H\n#define LEVEL 7\n#endif\n",
    "#pragma once\n#define LEVEL 7\n",
])
def test_include_guard_spellings(tmp_path, header):
    (tmp_path / "g.h").write_text(header)
    f = tmp_path / "a.cpp"
    f.write_text('#include "g.h"\n#include "g.h"\n#if LEVEL\n#endif\n')
    assert _env(f).decide("LEVEL == 7", _at(f, "#if LEVEL"), W13) is True


def test_a_guard_with_code_after_its_endif_is_not_a_guard(tmp_path):
    (tmp_path / "g.h").write_text("#ifndef G_H\n#define G_H\n#endif\n#define LEVEL 7\n#if X\n#endif\n")
    f = tmp_path / "a.cpp"
    f.write_text('#include "g.h"\n#if LEVEL\n#endif\n')
    # the #ifndef is an ordinary condition on an unknown macro: nothing inside it is known, LEVEL still is
    assert _env(f).decide("LEVEL == 7", _at(f, "#if LEVEL"), W13) is True
    assert _env(f).decide("defined(G_H)", _at(f, "#if LEVEL"), W13) is None
