"""NPP in CUDA 13.0: the removed non-_Ctx functions (CM540) and the data they come from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cudamigrate.toolcheck import build
from cudamigrate.match.migrations.npp import removed

from .conftest import gpu_available
from .helpers import ROOT, engine_for, fix_text

PROGRAM = b"""#include <cstdio>
#include <npp.h>
int main() {
  int step = 0;
  Npp8u *img = nppiMalloc_8u_C1(16, 4, &step);
  NppiSize roi = {16, 4};
  NppStatus s = nppiSet_8u_C1R(7, img, step, roi);
  Npp8u px = 0;
  cudaMemcpy(&px, img + step + 3, 1, cudaMemcpyDeviceToHost);
  std::printf("%d %d\\n", (int)s, (int)px);
  nppiFree(img);
  return 0;
}
"""

needs_npp = pytest.mark.skipif(build.nvcc_path() is None or not build.lib_available("npp"),
                               reason="needs nvcc and the nvidia-npp 13.0 wheel")


def test_data_lists_both_kinds_of_removal():
    names = removed()
    assert names["nppiSet_8u_C1R"] == "link"  # still declared in nppi_data_exchange_and_initialization.h
    assert names["nppsSum_32f"] == "compile"  # gone from npps_statistics_functions.h
    assert "nppiMalloc_8u_C1" not in names and "nppiFree" not in names  # kept: no _Ctx twin
    assert not any(n.endswith("_Ctx") for n in names)
    # declared with a _Ctx twin that libnpp*.so.13 does not export either: flagged, never rewritten to it
    assert names["nppiSub_32s_C4RSfs"] == names["nppiSub_32s_C4IRSfs"] == "none"


def _npp_wheel() -> bool:
    """The data files are generated from the nvidia-npp wheel's headers and libraries (a toolkit's own NPP,
    as on a bare GPU machine, may be another build): the check runs where the wheel is, as in CI."""
    try:
        import nvidia
    except ImportError:
        return False
    return any((Path(b) / "cu13" / "include" / "npp.h").is_file() for b in nvidia.__path__)


@pytest.mark.skipif(not _npp_wheel(), reason="needs the nvidia-npp 13.0 wheel (scripts/dev-setup-and-test.sh installs it)")
def test_data_file_is_current():
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_npp_data.py"), "--check"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


@needs_npp
@pytest.mark.nvcc
def test_a_declared_removed_function_links_only_after_the_fix(tmp_path):
    """nppiSet_8u_C1R compiles against the 13.0 headers but is not in libnpp*.so.13; the _Ctx call links."""
    before = tmp_path / "before.cpp"
    before.write_bytes(PROGRAM)
    res = build.compile_file(before, tmp_path / "before", link=True, libs=["npp"])
    assert not res.ok and "undefined reference to `nppiSet_8u_C1R'" in res.output, res.output[-2000:]
    fixed = fix_text(engine_for(select=["CM540"]), before, PROGRAM, unsafe=True)
    assert b"nppiSet_8u_C1R_Ctx(7, img, step, roi, cudamigrateNppCtx)" in fixed
    assert fixed.count(b"= cudamigrateNppStreamContext();") == 1  # built once in the function
    after = tmp_path / "after.cpp"
    after.write_bytes(fixed)
    res = build.compile_file(after, tmp_path / "after", link=True, libs=["npp"])
    assert res.ok, res.output[-3000:]
    if gpu_available():  # the context the fix builds works: NPP fills the image on the legacy stream
        run = subprocess.run([str(tmp_path / "after")], capture_output=True, text=True, env=build.run_env(), timeout=120)
        assert (run.returncode, run.stdout) == (0, "0 7\n"), run.stderr


def test_no_automatic_fix_where_the_file_sets_the_npp_stream():
    code = PROGRAM.replace(b"  int step = 0;\n", b"  int step = 0;\n  nppSetStream(0);\n")
    eng = engine_for(select=["CM540", "CM541"])
    res = eng.scan_bytes(Path("t.cpp"), code)
    by_rule = {(f.rule_id, f.applicability) for f in res.findings}
    assert by_rule == {("CM540", "manual"), ("CM541", "manual")}
    assert fix_text(eng, Path("t.cpp"), code, unsafe=True) == code


def test_size_t_out_parameters_come_from_the_13_0_prototypes():
    from cudamigrate.match.migrations.npp import size_t_out_params

    sizes = size_t_out_params()
    assert sizes["nppiHistogramEvenGetBufferSize_8u_C1R"] == (2, "hpBufferSize")
    assert sizes["nppiHistogramEvenGetBufferSize_8u_C1R_Ctx"] == (2, "hpBufferSize")
    assert sizes["nppiSegmentWatershedGetBufferSize_8u_C1R"] == (1, "hpDeviceMemoryBufferSize")
    # undeclared in 13.0 (CM540 renames the call): listed with its _Ctx twin's parameter
    assert sizes["nppsSumGetBufferSize_32f"] == sizes["nppsSumGetBufferSize_32f_Ctx"] == (1, "hpBufferSize")
    # 13.0 still declares these with `int *`: code passing &int is right
    assert "nppiFilterCannyBorderGetBufferSize" not in sizes
    assert "nppiLabelMarkersUFGetBufferSize_32u_C1R" not in sizes


def test_size_t_out_parameter_is_reported_only_where_the_target_declares_it():
    """NPP declared the histogram query `size_t *` from CUDA 12.4, the watershed query from 12.8
    (nvidia-npp-cu12 12.2.5.2 / 12.3.3.65 headers): older targets still take `int *`."""
    from .helpers import scan_code

    code = ("#include <npp.h>\nint main() {\n  NppiSize roi = {8, 8};\n  int a = 0, b = 0;\n"
            "  nppiHistogramEvenGetBufferSize_8u_C1R(roi, 4, &a);\n"
            "  nppiSegmentWatershedGetBufferSize_8u_C1R(roi, &b);\n  return a + b;\n}\n")
    lines = {t: sorted(f.line for f in scan_code(code, ["CM542"], name="t.cpp", target=t))
             for t in ((12, 3), (12, 4), (12, 8), (13, 0))}
    assert lines == {(12, 3): [], (12, 4): [5], (12, 8): [5, 6], (13, 0): [5, 6]}
