"""Output people expect (issue 33): what `fix` leaves goes to stdout, errors and notes to stderr."""

from __future__ import annotations

from .helpers import run_cli

# CM501 has a safe fix; CM101 (a legacy-stream call beside another stream) a display-only suggestion
CODE = """#include <cuda_runtime.h>
void f(float *d, size_t n, cudaStream_t s) {
  cudaMemsetAsync(d, 0, n);
  cudaThreadSynchronize();
}
"""


def test_fix_writes_the_remaining_findings_and_summary_to_stdout(tmp_path):
    (tmp_path / "a.cu").write_text(CODE)
    r = run_cli("fix", "--no-verify", "--show-fixes", "a.cu", "gone.cu", cwd=tmp_path)
    assert r.exit_code == 3, r.output  # a named path is missing: exit 3 whatever else happened
    out = r.stdout.splitlines()
    assert out[:2] == ["Fixed:", "  a.cu: CM501 x1"] and out[2] == "Remaining:", out
    assert out[3].startswith("  a.cu:3:3: CM101 [?] ") and out[-1].startswith("Fixed 1 finding(s) in 1 file(s); 1 remaining"), out
    assert r.stderr == "cudamigrate: error: gone.cu: no such file or directory\n", r.stderr


def test_fix_diff_keeps_stdout_for_the_diff_alone(tmp_path):
    (tmp_path / "a.cu").write_text(CODE)
    r = run_cli("fix", "--no-verify", "--diff", "a.cu", cwd=tmp_path)
    assert r.stdout.startswith("--- a/a.cu\n+++ b/a.cu\n") and r.stdout.endswith("+  cudaDeviceSynchronize();\n }\n")
    assert "Remaining:" in r.stderr and "Would fix 1 finding(s) in 1 file(s); 1 remaining" in r.stderr, r.stderr
