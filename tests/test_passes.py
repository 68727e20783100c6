"""Code that no pass of nvcc 13 compiles is not reported (match/migrations/passes.py): the host pass
(`__CUDA_ARCH__` undefined) and one device pass per architecture; a rule with `breaks: device` (CM502, CM530) counts
the device passes only. A device pass exists only where nvcc compiles the file as CUDA, so a header of kernels
with any name (`.hxx`) starts those passes with nvcc's version macros defined."""

from __future__ import annotations

from .helpers import run_cli

IDIOM = """#if (__CUDACC_VER_MAJOR__ >= 9 && defined(__CUDA_ARCH__) && \\
     __CUDA_ARCH__ >= 300) && !defined(USE_SYNC)
  #define USE_SYNC
#endif
"""

HELPERS = IDIOM + """
__device__ inline int up(int x, int d) {
#ifdef USE_SYNC
  return __shfl_up_sync(__activemask(), x, d);
#else
  return __shfl_up(x, d);
#endif
}

__host__ __device__ inline unsigned vote(int p) {
  unsigned y = 0;
#ifdef USE_SYNC
  y = __ballot_sync(0xffffffff, p);
#else
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 300
  y = __ballot(p);
#endif
#endif
  return y;
}

inline void wait_host() {
#ifdef USE_SYNC
  cudaDeviceSynchronize();
#else
  cudaThreadSynchronize();
#endif
}
"""


def _rules(out: str) -> list[tuple[int, str]]:
    return [(int(ln.split(":")[1]), ln.split()[1]) for ln in out.splitlines() if ln.startswith("warp.hxx:")]


def test_legacy_branches_of_a_header_that_picks_the_sync_intrinsics_itself_are_not_reported(tmp_path):
    (tmp_path / "warp.hxx").write_text(HELPERS)
    r = run_cli("scan", "--no-cache", "--select", "CM501,CM502", "warp.hxx", cwd=tmp_path)
    # `__shfl_up` and `__ballot`: left out by every device pass (USE_SYNC), the only passes that reject them;
    # `cudaThreadSynchronize` (host code): the host pass compiles the `#else`, so it stays reported
    lines = HELPERS.splitlines()
    assert _rules(r.stdout) == [(lines.index("  cudaThreadSynchronize();") + 1, "CM501")], r.stdout


def test_without_the_idiom_the_same_calls_are_reported(tmp_path):
    (tmp_path / "warp.hxx").write_text(HELPERS.replace(IDIOM, ""))
    r = run_cli("scan", "--no-cache", "--select", "CM501,CM502", "warp.hxx", cwd=tmp_path)
    assert sorted(rule for _, rule in _rules(r.stdout)) == ["CM501", "CM502", "CM502"], r.stdout


def test_a_target_older_than_13_keeps_every_finding(tmp_path):
    """The passes are told apart only for nvcc 13's architectures; 12.x also builds older ones."""
    (tmp_path / "warp.hxx").write_text(HELPERS)
    r = run_cli("scan", "--no-cache", "--select", "CM501,CM502", "--target-cuda", "12.0", "warp.hxx", cwd=tmp_path)
    assert sorted(rule for _, rule in _rules(r.stdout)) == ["CM501", "CM502", "CM502"], r.stdout
