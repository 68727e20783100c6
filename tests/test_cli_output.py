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


def _readme_samples() -> list[tuple[str, str]]:
    """The README's sample sessions: (command, shown output) for each ``` block whose first line is
    `$ cudamigrate ...`."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    return [(m[1], m[2]) for m in re.finditer(r"^```\n\$ (cudamigrate [^\n]*)\n(.*?)^```$", text, re.S | re.M)]


def shown_matches(shown: str, actual: str) -> bool:
    """Whether `actual` is what a README block shows: a line of `...` (indented or not) stands for any lines
    (none included), and `...` inside a line for any text on that line; everything else is literal."""
    import re

    parts = []
    for line in shown.splitlines():
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(map(re.escape, line.split("..."))).replace(".*?", "[^\n]*?") + r"\n")
    return re.fullmatch("".join(parts), actual) is not None


def test_readme_sample_matcher_refuses_a_stale_figure():
    actual = "a.cu:1:1: CM501 [*] long message (roi 10)\nb.cu:2:2: X\nFound 19 finding(s).\n"
    assert shown_matches("a.cu:1:1: CM501 [*] long ... (roi 10)\n...\nFound 19 finding(s).\n", actual)
    assert not shown_matches("a.cu:1:1: CM501 [*] long ... (roi 10)\n...\nFound 18 finding(s).\n", actual)
    assert not shown_matches("a.cu:1:1: CM501 [*] long ... (roi 10)\n", actual)


def test_readme_sample_outputs_are_what_the_commands_print():
    import shlex
    from pathlib import Path

    samples = _readme_samples()
    assert [c for c, _ in samples][:2] == ["cudamigrate scan examples/", "cudamigrate plan examples/legacy-app"]
    for command, shown in samples:
        r = run_cli(*shlex.split(command)[1:], cwd=Path(__file__).resolve().parent.parent)
        assert shown_matches(shown, r.stdout), f"README's `{command}` block is stale; it prints:\n{r.stdout}"


UNSAFE = "__global__ void k(int *p) { int x = p[0]; p[1] = __shfl(x, 0); }\n"  # CM502: an unsafe fix [~]


def test_statistics_use_the_findings_list_markers(tmp_path):
    (tmp_path / "a.cu").write_text(CODE)
    (tmp_path / "u.cu").write_text(UNSAFE)
    r = run_cli("scan", "--statistics", ".", cwd=tmp_path)
    assert r.stdout.splitlines() == ["     1  CM101  [?] legacy-stream-async-api",
                                     "     1  CM501  [*] cudathread-api-removed",
                                     "     1  CM502  [~] warp-intrinsic-without-sync"], r.stdout


def test_concise_format_is_one_line_per_finding(tmp_path):
    (tmp_path / "a.cu").write_text(CODE)
    (tmp_path / "u.cu").write_text(UNSAFE)
    r = run_cli("scan", "--format", "concise", "--sort", "file", ".", cwd=tmp_path)
    lines = r.stdout.splitlines()
    assert r.exit_code == 1 and [ln.split(" ", 3)[:3] for ln in lines[:-1]] == [
        ["a.cu:3:3:", "CM101", "[?]"], ["a.cu:4:3:", "CM501", "[*]"], ["u.cu:1:50:", "CM502", "[~]"]], lines
    assert lines[1] == ("a.cu:4:3: CM501 [*] `cudaThreadSynchronize` was removed in CUDA 13.0; call "
                        "`cudaDeviceSynchronize`, which takes the same arguments and has the same effect.")
    assert lines[-1] == "Found 3 finding(s) in 2 file(s)."
    (tmp_path / "ok.cu").write_text("int main() { return 0; }\n")
    assert run_cli("scan", "--format", "concise", "ok.cu", cwd=tmp_path).stdout == "No findings in 1 file(s).\n"


def test_color_on_request_or_on_a_terminal_only(tmp_path, monkeypatch):
    import sys

    from cudamigrate.cli.output import use_color

    (tmp_path / "a.cu").write_text(CODE)
    plain = run_cli("scan", "a.cu", cwd=tmp_path).stdout  # click's runner: a pipe, not a terminal
    assert "\x1b" not in plain
    painted = run_cli("scan", "--color", "always", "a.cu", cwd=tmp_path).stdout
    assert "\x1b[1ma.cu:4:3:\x1b[0m \x1b[1;31mCM501\x1b[0m \x1b[32m[*]\x1b[0m `cudaThreadSynchronize`" in painted
    import re

    assert re.sub(r"\x1b\[[0-9;]*m", "", painted) == plain
    concise = run_cli("scan", "--color", "always", "--format", "concise", "a.cu", cwd=tmp_path).stdout
    assert "\x1b[36m[?]\x1b[0m" in concise
    assert "\x1b" not in run_cli("scan", "--color", "always", "--format", "json", "a.cu", cwd=tmp_path).stdout

    class Tty:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color("auto", Tty()) and not use_color("auto", sys.stdin if not sys.stdin.isatty() else None)
    assert not use_color("auto", Tty(), to_file=True) and not use_color("never", Tty())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color("auto", Tty()) and use_color("always", None)


def test_fix_colours_what_remains_on_request(tmp_path):
    (tmp_path / "a.cu").write_text(CODE)
    plain = run_cli("fix", "--no-verify", "--diff", "a.cu", cwd=tmp_path)
    painted = run_cli("fix", "--no-verify", "--diff", "--color", "always", "a.cu", cwd=tmp_path)
    assert "\x1b" not in plain.stderr and "\x1b" not in painted.stdout  # the diff is never painted
    assert "  \x1b[1ma.cu:3:3:\x1b[0m \x1b[1;31mCM101\x1b[0m \x1b[36m[?]\x1b[0m `cudaMemsetAsync`" in painted.stderr
