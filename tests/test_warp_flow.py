"""CM502's mask follows what reaches the call (cudamigrate/match/warp_flow.py): the full mask only where the
whole warp provably arrives; `__activemask()` under lane-dependent branches, loops and earlier exits."""

from __future__ import annotations

import pytest

from .helpers import fix_code

FULL = "__shfl_down_sync(0xffffffff, v, 1)"
ACTIVE = "__shfl_down_sync(__activemask(), v, 1)"


def _kernel(body: str, params: str = "float *x, int n", extra: str = "") -> str:
    return f"{extra}__global__ void k({params}) {{\n  float v = x[threadIdx.x];\n{body}\n  x[threadIdx.x] = v;\n}}\n"


@pytest.mark.parametrize("body", [
    pytest.param("  v = __shfl_down(v, 1);", id="straight-line"),
    pytest.param("  if (n > 4) v = __shfl_down(v, 1);", id="kernel-parameter-branch"),
    pytest.param("  for (int o = 16; o > 0; o /= 2) v = __shfl_down(v, 1);", id="uniform-loop"),
    pytest.param("  const int w = blockDim.x / 32;\n  if (blockIdx.x < w) v = __shfl_down(v, 1);", id="uniform-local"),
    pytest.param("  if (threadIdx.x == 0) x[0] = 1;\n  v = __shfl_down(v, 1);", id="branch-before-without-exit"),
    pytest.param("  v = __shfl_down(v, 1);\n  if (threadIdx.x >= n) return;", id="exit-after"),
])
def test_whole_warp_keeps_full_mask(body):
    assert FULL in fix_code(_kernel(body), ["CM502"])


@pytest.mark.parametrize("body", [
    pytest.param("  if (threadIdx.x < 8) v = __shfl_down(v, 1);", id="thread-index-branch"),
    pytest.param("  int lane = threadIdx.x & 31;\n  if (lane < 8) { v = __shfl_down(v, 1); }", id="lane-local"),
    pytest.param("  if (x[0] > 0.0f) v = __shfl_down(v, 1);", id="data-branch"),
    pytest.param("  if (threadIdx.x >= n) return;\n  v = __shfl_down(v, 1);", id="early-return"),
    pytest.param("  for (int i = threadIdx.x; i < n; i += 32) v = __shfl_down(v, 1);", id="strided-loop"),
    pytest.param("  for (int o = 0; o < 4; ++o) { if (v > o) break; v = __shfl_down(v, 1); }", id="break"),
    pytest.param("  v = threadIdx.x < 8 ? __shfl_down(v, 1) : v;", id="ternary"),
    pytest.param("  int m = 0;\n  if (threadIdx.x == 0) m = 1;\n  if (m) v = __shfl_down(v, 1);", id="written-under-branch"),
])
def test_part_of_warp_gets_active_mask(body):
    assert ACTIVE in fix_code(_kernel(body), ["CM502"])


def test_helper_called_under_lane_branch_keeps_no_full_mask():
    helper = "__device__ float f(float v) { return __shfl_down(v, 1); }\n"
    out = fix_code(_kernel("  if (threadIdx.x < 8) v = f(v);", extra=helper), ["CM502"])
    assert ACTIVE in out and "0xffffffff" not in out


def test_helper_with_uniform_callers_and_parameter_loop_keeps_full_mask():
    helper = ("__device__ float f(float v, int w) {\n  for (int o = w / 2; o > 0; o /= 2) v = __shfl_down(v, 1);\n"
              "  return v;\n}\n")
    out = fix_code(_kernel("  v = f(v, 32);\n  v = f(v, n);", extra=helper), ["CM502"])
    assert FULL in out


def test_helper_parameter_from_thread_index_is_not_uniform():
    helper = ("__device__ float f(float v, int w) {\n  for (int o = w; o > 0; o /= 2) v = __shfl_down(v, 1);\n"
              "  return v;\n}\n")
    assert ACTIVE in fix_code(_kernel("  v = f(v, threadIdx.x);", extra=helper), ["CM502"])


def test_message_names_the_branch():
    from .helpers import scan_code

    fs = scan_code(_kernel("  if (threadIdx.x < 8) v = __shfl_down(v, 1);"), ["CM502"])
    assert len(fs) == 1 and "inside `if (threadIdx.x < 8)` (line 3, in `k`)" in fs[0].message


@pytest.mark.parametrize("body", [
    pytest.param("  if (threadIdx.x < 32) v = __shfl_down(v, 1);", id="warp-zero"),
    pytest.param("  int tid = threadIdx.x;\n  if (tid >= 64) v = __shfl_down(v, 1);", id="whole-warps-local"),
    pytest.param("  int warp = threadIdx.x / 32;\n  if (warp == n) v = __shfl_down(v, 1);", id="warp-index"),
    pytest.param("  for (int i = blockIdx.x; i < n; i += gridDim.x) {\n    for (int k = 0; k < 4; k++) v = __shfl_down(v, 1);\n  }",
                 id="inner-loop-of-uniform-loop"),
])
def test_warp_granular_conditions_keep_full_mask(body):
    assert FULL in fix_code(_kernel(body), ["CM502"])


@pytest.mark.parametrize("body", [
    pytest.param("  if (threadIdx.x < 16) v = __shfl_down(v, 1);", id="half-warp"),
    pytest.param("  if (threadIdx.x < 32 && threadIdx.y == 0) v = __shfl_down(v, 1);", id="two-dimensional-block"),
    pytest.param("  for (int i = threadIdx.x; i < n; i += 32) {\n    for (int k = 0; k < 4; k++) v = __shfl_down(v, 1);\n  }",
                 id="inner-loop-of-strided-loop"),
])
def test_partial_warp_conditions_get_active_mask(body):
    assert ACTIVE in fix_code(_kernel(body), ["CM502"])


def test_message_names_the_call_chain():
    from .helpers import scan_code

    code = ("__device__ float g(float v) { return __shfl_down(v, 1); }\n"
            "__device__ float f(float v) { return g(v); }\n" + _kernel("  if (threadIdx.x < 8) v = f(v);"))
    fs = scan_code(code, ["CM502"])
    assert "`g` is called from `f`, which is called inside `if (threadIdx.x < 8)` (line 5, in `k`)" in fs[0].message


def _project_scan(tmp_path, caller_body: str):
    from .helpers import run_cli

    (tmp_path / "warp.cuh").write_text("__device__ float wsum(float v) {\n  for (int o = 16; o > 0; o /= 2) v += __shfl_down(v, o);\n"
                                       "  return v;\n}\n")
    (tmp_path / "main.cu").write_text('#include "warp.cuh"\n' + _kernel(caller_body))
    return run_cli("fix", "--diff", "--unsafe-fixes", "--no-verify", "--select", "CM502", str(tmp_path))


def test_a_headers_helper_follows_its_callers_in_the_files_including_it(tmp_path):
    res = _project_scan(tmp_path, "  if (threadIdx.x < 8) v = wsum(v);")
    assert "__shfl_down_sync(__activemask(), v, o)" in res.stdout, res.stdout + res.stderr


def test_a_headers_helper_whose_callers_are_converged_keeps_full_mask(tmp_path):
    res = _project_scan(tmp_path, "  v = wsum(v);")
    assert "__shfl_down_sync(0xffffffff, v, o)" in res.stdout, res.stdout + res.stderr
