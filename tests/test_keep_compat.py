"""`fix --keep-compat X.Y`: rewrites to APIs newer than X.Y keep the old form under a version guard."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from cudamigrate.toolcheck.build import compile_file
from cudamigrate.scan.engine import Engine, Options
from cudamigrate.fix.apply import fix_bytes

from .conftest import FIXTURES
from .helpers import all_rules

PREFETCH = FIXTURES / "removals" / "CM504-prefetch-advise-int-device" / "before.cu"
GRAPH = FIXTURES / "removals" / "CM508-graph-edge-data" / "before.cu"


def _fix(path, keep, select):
    eng = Engine(all_rules(), Options(select=select, keep_compat=keep))
    return fix_bytes(eng, path, path.read_bytes(), str(path), unsafe=True)


def test_prefetch_keeps_old_form_under_guard():
    res = _fix(PREFETCH, (12, 0), ["CM504"])
    text = res.fixed.decode()
    assert text.count("#if CUDART_VERSION >= 13000") == 6
    assert text.count("#else") == 6 and text.count("#endif") == 6
    # both spellings survive, the old one only in the #else branch
    assert "cudaMemPrefetchAsync(x, bytes, dev, s)" in text
    assert "cudaMemLocation{cudaMemLocationTypeHost, 0}" in text
    assert not res.remaining  # the #else branches are dead code for the 13.0 target
    again = _fix_bytes_again(text, (12, 0), ["CM504"])
    assert again == text


def _fix_bytes_again(text, keep, select):
    eng = Engine(all_rules(), Options(select=select, keep_compat=keep))
    return fix_bytes(eng, PREFETCH, text.encode(), "x.cu", unsafe=True).fixed.decode()


def test_no_guard_when_the_new_form_is_old_enough():
    res = _fix(PREFETCH, (13, 0), ["CM504"])
    assert "#if CUDART_VERSION" not in res.fixed.decode()
    res = _fix(GRAPH, (12, 0), ["CM523"])  # the flags form exists since 12.0 (C++: the opt-in CM523)
    assert "#if CUDART_VERSION" not in res.fixed.decode()
    assert "cudaGraphInstantiate(&exec, graph, 0)" in res.fixed.decode()


def test_graph_instantiate_guard_for_11x():
    res = _fix(GRAPH, (11, 8), ["CM523"])
    text = res.fixed.decode()
    assert "#if CUDART_VERSION >= 12000  /* cudamigrate: keep-compat 11.8 */\n  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));" in text
    assert "#else\n  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, &err_node, log, sizeof(log)));" in text


def test_cli_keep_compat(tmp_path):
    dst = tmp_path / "p.cu"
    shutil.copy(PREFETCH, dst)
    p = subprocess.run([sys.executable, "-m", "cudamigrate", "fix", "--select", "CM504", "--keep-compat", "12.0", str(dst)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "#if CUDART_VERSION >= 13000" in dst.read_text()


@pytest.mark.nvcc
def test_guarded_fix_compiles_with_13(tmp_path):
    res = _fix(PREFETCH, (12, 0), ["CM504"])
    src = tmp_path / "guarded.cu"
    src.write_bytes(res.fixed)
    out = compile_file(src, tmp_path / "guarded.o")
    assert out.ok, out.output[-3000:]


def test_driver_rules_guard_with_cuda_version():
    from pathlib import Path

    code = b"#include <cuda.h>\nvoid f(CUgraphExec *e, CUgraph g, CUcontext *c, CUdevice d) {\n  cuGraphInstantiate(e, g, nullptr, nullptr, 0);\n  cuCtxCreate(c, 0, d);\n}\n"
    eng = Engine(all_rules(), Options(select=["CM507", "CM509"], keep_compat=(11, 8)))
    out = fix_bytes(eng, Path("d.cu"), code, "d.cu", unsafe=True).fixed.decode()
    assert "#if CUDA_VERSION >= 12000  /* cudamigrate: keep-compat 11.8 */\n  cuGraphInstantiate(e, g, 0);\n#else" in out
    assert "#if CUDA_VERSION >= 13000  /* cudamigrate: keep-compat 11.8 */\n  cuCtxCreate(c, nullptr, 0, d);\n#else\n  cuCtxCreate(c, 0, d);\n#endif" in out


def test_unwrappable_declaration_loses_its_fix():
    """A member cannot be guarded, so its use of `double4` stays for a manual edit; the type is renamed in every
    use or none (fix/consistency.py), so the statement that could be guarded is left as it is too."""
    from pathlib import Path

    code = b"#include <cuda_runtime.h>\nstruct P { double4 v; };\nvoid f() {\n  double4 a = make_double4(1, 2, 3, 4);\n}\n"
    eng = Engine(all_rules(), Options(select=["CM511"], keep_compat=(12, 8)))
    res = fix_bytes(eng, Path("v.cu"), code, "v.cu", unsafe=True)
    assert res.fixed == code
    [stuck] = res.withheld.stuck["removals:double4"]
    assert stuck.startswith("v.cu:2:12 (no automatic fix: with --keep-compat 12.8 the rewrite cannot be wrapped")
    other = b"#include <cuda_runtime.h>\nvoid f() {\n  double4 a = make_double4(1, 2, 3, 4);\n}\n"
    out = fix_bytes(eng, Path("w.cu"), other, "w.cu", unsafe=True).fixed.decode()
    assert "#if CUDART_VERSION >= 13000  /* cudamigrate: keep-compat 12.8 */\n  double4_16a a = make_double4_16a(1, 2, 3, 4);\n#else\n  double4 a = make_double4(1, 2, 3, 4);\n#endif" in out


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "cudamigrate", *args], capture_output=True, text=True, cwd=cwd)


def test_keep_compat_round_trip_with_every_rule(tmp_path):
    """The guards `fix --keep-compat 12.0` writes survive CM410 in the same run (every default rule selected), a
    second `fix` without the flag, and a later `scan` reports nothing on them."""
    dst = tmp_path / "p.cu"
    shutil.copy(PREFETCH, dst)
    p = _cli("fix", "--unsafe-fixes", "--keep-compat", "12.0", str(dst))
    assert p.returncode == 0, p.stderr
    first = dst.read_text()
    assert first.count("#if CUDART_VERSION >= 13000  /* cudamigrate: keep-compat 12.0 */") == 6
    assert first.count("#else") == 6
    assert "cudaMemPrefetchAsync(x, bytes, dev, s)" in first  # the 12.x form, in the #else
    p = _cli("fix", "--unsafe-fixes", str(dst))
    assert p.returncode == 0, p.stderr
    assert dst.read_text() == first
    p = _cli("fix", "--unsafe-fixes", "--keep-compat", "12.0", str(dst))
    assert dst.read_text() == first
    p = _cli("scan", "--format", "json", str(dst))
    import json

    assert json.loads(p.stdout)["findings"] == [], p.stdout


def test_guard_is_removed_only_below_the_declared_minimum():
    """A guard kept on purpose for an older toolkit (NVIDIA's v13.0 deviceQuery keeps two) is never removed unless
    the project declares the oldest toolkit it builds with: with none, CM410 reports it and fix leaves it; with
    13.0 the old branch goes; with 12.0 both branches are live for some supported toolkit and stay."""
    from pathlib import Path

    code = (b"#include <cuda.h>\nvoid f(CUcontext *c, CUdevice d) {\n#if CUDA_VERSION >= 13000\n"
            b"  cuCtxCreate(c, NULL, 0, d);\n#else\n  cuCtxCreate(c, 0, d);\n#endif\n}\n")
    eng = Engine(all_rules(), Options(select=["CM410"]))
    res = fix_bytes(eng, Path("g.cpp"), code, "g.cpp", unsafe=True)
    assert res.fixed == code
    [f] = eng.scan_bytes(Path("g.cpp"), code).findings
    assert f.fix is None and 'keep-compat = "13.0"' in f.message and "--keep-compat 13.0" in f.message
    eng = Engine(all_rules(), Options(select=["CM410"], keep_compat=(13, 0)))
    fixed = fix_bytes(eng, Path("g.cpp"), code, "g.cpp", unsafe=True).fixed.decode()
    assert fixed == "#include <cuda.h>\nvoid f(CUcontext *c, CUdevice d) {\n  cuCtxCreate(c, NULL, 0, d);\n}\n"
    eng = Engine(all_rules(), Options(select=["CM410"], keep_compat=(12, 0)))
    assert fix_bytes(eng, Path("g.cpp"), code, "g.cpp", unsafe=True).fixed == code
    assert not eng.scan_bytes(Path("g.cpp"), code).findings


def test_declared_minimum_from_the_configuration(tmp_path):
    """`keep-compat` under [tool.cudamigrate] is the project's minimum: plain `fix` then removes the dead branch."""
    src = "#include <cuda.h>\nvoid f() {\n#if CUDA_VERSION >= 13000\n  int a = 1;\n#else\n  int a = 0;\n#endif\n  (void)a;\n}\n"
    (tmp_path / "g.cpp").write_text(src)
    p = _cli("fix", "g.cpp", cwd=tmp_path)
    assert p.returncode == 1 and "keep-compat" in p.stderr + p.stdout  # the finding remains, with how to declare
    assert (tmp_path / "g.cpp").read_text() == src
    (tmp_path / "pyproject.toml").write_text('[tool.cudamigrate]\nkeep-compat = "13.0"\n')
    assert _cli("fix", "g.cpp", cwd=tmp_path).returncode == 0
    assert (tmp_path / "g.cpp").read_text() == "#include <cuda.h>\nvoid f() {\n  int a = 1;\n  (void)a;\n}\n"


@pytest.mark.nvcc
def test_round_trip_output_compiles_with_13(tmp_path):
    dst = tmp_path / "p.cu"
    shutil.copy(PREFETCH, dst)
    assert _cli("fix", "--unsafe-fixes", "--keep-compat", "12.0", str(dst)).returncode == 0
    out = compile_file(dst, tmp_path / "p.o")
    assert out.ok, out.output[-3000:]
