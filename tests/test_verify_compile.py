"""Compile verification of `fix` (cudamigrate/fixproof/): a fix that breaks the user's build is rolled back and
reported, a good fix in the same unit stays, nothing is written when the user did not ask.

The bad fix comes from a rule made wrong on purpose (tests/data/verify_rules/CM9901-broken-on-purpose.yaml:
it renames cudaGetLastError to an undeclared function). Tests marked `nvcc` compile with the real nvcc; the
others use a stand-in compiler from a compile_commands.json (a Python script that reports a gcc-style error
for every line naming the undeclared function), so the bisection is tested without nvcc.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudamigrate.cli.main import main
from cudamigrate.fixproof.compile_check import (CompileResult, Diagnostic, make_overlay, overlay_argv, parse_errors,
                                              strip_outputs, worse)

RULES = Path(__file__).parent / "data" / "verify_rules"
BROKEN = "cudaGetLastErrorBroken"


@pytest.fixture(autouse=True)
def verify_on(monkeypatch):
    monkeypatch.delenv("CUDAMIGRATE_VERIFY", raising=False)  # conftest turns it off for the other tests


def run(*args):
    """`fix` with the test's rules; the stand-in compilers below are repository scripts of a found database,
    which verification runs only when trusted (cudamigrate/fixproof/consent.py)."""
    return CliRunner().invoke(main, ["fix", "--rules-dir", str(RULES), "--trust-compile-commands", *args],
                              catch_exceptions=False)


def err(r) -> str:
    return r.stderr if hasattr(r, "stderr") else r.output


# --------------------------------------------------------------------------- pure parts
def test_errors_are_parsed_from_nvcc_and_gcc_output():
    out = ("a.cu(5): error: identifier \"x\" is undefined\n"
           "In file included from b.cpp:1:\n"
           "/t/inc/h.h:3:7: error: 'y' was not declared in this scope\n"
           "c.cu(9): catastrophic error: cannot open source file \"z.h\"\n"
           "nvcc fatal   : Unknown option '-bogus'\n")
    got = parse_errors(out, "/t")
    assert [(d.file, d.line, d.message) for d in got] == [
        ("/t/a.cu", 5, 'identifier "x" is undefined'), ("/t/inc/h.h", 3, "'y' was not declared in this scope"),
        ("/t/c.cu", 9, 'cannot open source file "z.h"'), ("", 0, "Unknown option '-bogus'")]


def test_overlay_paths_are_stripped_from_diagnostics():
    got = parse_errors("/tmp/ov/t/a.cu(5): error: bad\n", "/tmp/ov/t", top="/tmp/ov")
    assert got == [Diagnostic("/t/a.cu", 5, "bad")]


def test_worse_compares_errors_without_line_numbers():
    e = Diagnostic("/t/a.cu", 5, "x")
    ok, fails = CompileResult(True), CompileResult(False, [e])
    assert worse(ok, fails) and not worse(fails, ok) and not worse(ok, ok)
    assert not worse(fails, CompileResult(False, [Diagnostic("/t/a.cu", 9, "x")]))  # the same error, moved
    assert worse(fails, CompileResult(False, [e, Diagnostic("/t/a.cu", 7, "new")]))


def test_outputs_and_dependency_files_are_dropped_from_commands():
    argv = ["nvcc", "-c", "-o", "x.o", "-MD", "-MF", "x.d", "-I/a", "-ox2.o", "a.cu"]
    assert strip_outputs(argv) == ["nvcc", "-I/a", "a.cu"]


def test_overlay_holds_the_edits_and_leaves_the_tree_alone(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "src").mkdir()
    h, other = tmp_path / "inc" / "h.h", tmp_path / "inc" / "other.h"
    h.write_text("old\n")
    other.write_text("other\n")
    (tmp_path / "src" / "a.cu").write_text('#include "../inc/h.h"\n')
    real = os.path.realpath(h)
    top = make_overlay({real: b"new\n"}, [os.path.realpath(tmp_path / "src")])  # includes start from src/
    try:
        assert Path(top + real).read_text() == "new\n"
        assert Path(top + os.path.realpath(other)).read_text() == "other\n"  # a symlink to the original
        assert (Path(top + os.path.realpath(tmp_path / "src")) / "../inc/h.h").read_text() == "new\n"
        assert overlay_argv(("cc", f"-I{tmp_path}/inc", "rel.cu"), top)[1] == f"-I{top}{os.path.realpath(tmp_path)}/inc"
    finally:
        import shutil

        shutil.rmtree(top)
    assert h.read_text() == "old\n" and other.read_text() == "other\n"


# --------------------------------------------------------------------------- a stand-in compiler
CHECKER = f"""import sys
src = next(a for a in sys.argv[1:] if a.endswith(".cpp"))
for i, line in enumerate(open(src), 1):
    if "{BROKEN}" in line:
        print(f"{{src}}:{{i}}:3: error: '{BROKEN}' was not declared in this scope")
        sys.exit(1)
"""


def _fake_project(tmp_path: Path, code: str) -> Path:
    (tmp_path / "checker.py").write_text(CHECKER)
    src = tmp_path / "a.cpp"
    src.write_text(code)
    db = [{"directory": str(tmp_path), "file": str(src), "arguments": [sys.executable, str(tmp_path / "checker.py"), str(src)]}]
    (tmp_path / "compile_commands.json").write_text(json.dumps(db))
    return src


def test_bisection_rolls_back_every_bad_finding_and_keeps_the_good_ones(tmp_path):
    code = ("#include <cuda_runtime.h>\nvoid f() {\n  cudaThreadSynchronize();\n  cudaGetLastError();\n"
            "  cudaThreadSynchronize();\n  cudaGetLastError();\n  cudaGetLastError();\n}\n")
    src = _fake_project(tmp_path, code)
    report = tmp_path / "verify.json"
    r = run("--select", "CM501,CM9901", "--no-cache", "--no-semantic", "--verify-report", str(report), str(src))
    text = src.read_text()
    assert text.count("cudaDeviceSynchronize()") == 2 and "cudaThreadSynchronize" not in text  # good edits kept
    assert text.count("cudaGetLastError()") == 3 and BROKEN not in text  # every bad edit rolled back
    got = json.loads(report.read_text())
    assert (got["units"], got["compiled_before"], got["rolled_back"], got["worse"]) == (1, 1, 3, 0)
    assert {x["rule_id"] for x in got["rollbacks"]} == {"CM9901"}
    assert f"'{BROKEN}' was not declared" in got["rollbacks"][0]["first_error"]
    assert err(r).count("CM9901: fix rolled back") == 3
    assert "3 edit(s) rolled back" in err(r) and r.exit_code == 1  # the rolled-back findings remain (manual)


def test_diff_mode_shows_the_verified_diff_and_writes_nothing(tmp_path):
    src = _fake_project(tmp_path, "void f() {\n  cudaThreadSynchronize();\n  cudaGetLastError();\n}\n")
    before = src.read_bytes()
    r = run("--select", "CM501,CM9901", "--no-cache", "--diff", "--verify", str(src))
    assert src.read_bytes() == before
    assert "+  cudaDeviceSynchronize();" in r.stdout and BROKEN not in r.stdout


def test_diff_and_dry_run_compile_nothing_unless_asked(tmp_path):
    src = _fake_project(tmp_path, "void f() {\n  cudaThreadSynchronize();\n  cudaGetLastError();\n}\n")
    for preview in ("--diff", "--dry-run"):
        r = run("--select", "CM501,CM9901", "--no-cache", preview, str(src))
        assert "Verified" not in err(r) and "rolled back" not in err(r), err(r)
    assert BROKEN in r.stdout or BROKEN in run("--select", "CM9901", "--no-cache", "--diff", str(src)).stdout


def test_the_original_is_compiled_only_when_the_fixed_unit_fails(tmp_path):
    src = _fake_project(tmp_path, "void f() {\n  cudaThreadSynchronize();\n}\n")
    report = tmp_path / "v.json"
    r = run("--select", "CM501", "--no-cache", "--no-semantic", "--verify-report", str(report), str(src))
    got = json.loads(report.read_text())
    assert (got["compiles"], got["originals_compiled"], got["builds_after"], got["verified"]) == (1, 0, 1, 1)
    assert "1 compile(s) (0 of original code)" in err(r)


def test_without_verification_the_broken_rule_does_break_the_file(tmp_path):
    src = _fake_project(tmp_path, "void f() {\n  cudaGetLastError();\n}\n")
    run("--select", "CM9901", "--no-verify", str(src))
    assert BROKEN in src.read_text()  # what the rule does unchecked: the rollback above is verification's work


def test_require_verify_without_any_compiler_writes_nothing(tmp_path, monkeypatch):
    src = tmp_path / "a.cu"
    src.write_text("void f() {\n  cudaGetLastError();\n}\n")
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvcc; no compile database
    r = run("--select", "CM9901", "--require-verify", str(src))
    assert r.exit_code == 2 and "cannot verify fixes" in err(r)
    assert BROKEN not in src.read_text()


MISSING = """import sys
src = next(a for a in sys.argv[1:] if a.endswith(".cpp"))
print(src + ":1:10: fatal error: cfg.h: No such file or directory")
sys.exit(1)
"""


def _unbuildable(tmp_path: Path, compiler: list[str]) -> Path:
    src = tmp_path / "a.cpp"
    src.write_text("void f() {\n  cudaThreadSynchronize();\n}\n")
    db = [{"directory": str(tmp_path), "file": str(src), "arguments": [*compiler, str(src)]}]
    (tmp_path / "compile_commands.json").write_text(json.dumps(db))
    return src


def test_a_unit_that_compiles_neither_before_nor_after_is_unverified(tmp_path):
    (tmp_path / "missing.py").write_text(MISSING)
    src = _unbuildable(tmp_path, [sys.executable, str(tmp_path / "missing.py")])
    report = tmp_path / "v.json"
    r = run("--select", "CM501", "--no-cache", "--no-semantic", "--compile-commands",
            str(tmp_path / "compile_commands.json"), "--verify-report", str(report), str(src))
    assert "Verified 0 of 1 unit(s) by compiling (0 build after the fix)" in err(r)
    assert "; 1 unverified (first error: cfg.h: No such file or directory)" in err(r)
    got = json.loads(report.read_text())
    assert (got["units"], got["verified"]) == (1, 0) and "cfg.h: No such file" in got["unverified"][0]
    assert "cudaDeviceSynchronize" in src.read_text()  # plain `fix` still writes: unverified is not worse


def test_require_verify_exits_2_and_writes_nothing_when_a_unit_is_unverified(tmp_path):
    src = _unbuildable(tmp_path, [str(tmp_path / "no-such-compiler")])  # a database whose compiler does not exist
    r = run("--select", "CM501", "--no-cache", "--no-semantic", "--require-verify", "--compile-commands",
            str(tmp_path / "compile_commands.json"), str(src))
    assert r.exit_code == 2 and "1 unverified" in err(r) and "nothing written" in err(r)
    assert "cudaThreadSynchronize" in src.read_text()


def test_config_key_turns_verification_off(tmp_path):
    src = _fake_project(tmp_path, "void f() {\n  cudaGetLastError();\n}\n")
    (tmp_path / ".cudamigrate.toml").write_text('verify = "off"\n')
    run("--select", "CM9901", str(src))
    assert BROKEN in src.read_text()


# --------------------------------------------------------------------------- nvcc itself
@pytest.mark.nvcc
def test_nvcc_rolls_back_the_broken_rule_and_reports_the_first_error(tmp_path):
    src = tmp_path / "a.cu"
    code = "#include <cuda_runtime.h>\nint main() {\n  cudaError_t e = cudaGetLastError();\n  return (int)e;\n}\n"
    src.write_text(code)
    r = run("--select", "CM9901", "--no-cache", str(src))  # verification is on by default with nvcc on PATH
    assert src.read_text() == code
    assert f'CM9901: fix rolled back: {src} does not compile with it: a.cu:3: error: identifier "{BROKEN}" is undefined' in err(r)
    assert "CM9901 [ ]" in r.stdout and "[fix rolled back:" in r.stdout  # still reported, as manual (stdout)
    assert "Verified 1 of 1 unit(s) by compiling (1 build after the fix): 1 edit(s) rolled back" in err(r)


@pytest.mark.nvcc
def test_nvcc_good_edit_in_a_source_stays_bad_edit_in_its_header_goes(tmp_path):
    (tmp_path / "include").mkdir()
    (tmp_path / "src").mkdir()
    hdr = tmp_path / "include" / "check.cuh"
    hdr.write_text("#pragma once\n#include <cuda_runtime.h>\ninline int check() { return (int)cudaGetLastError(); }\n")
    src = tmp_path / "src" / "main.cu"
    src.write_text('#include "check.cuh"\nint main() {\n  cudaThreadSynchronize();\n  return check();\n}\n')
    report = tmp_path / "v.json"
    r = run("--select", "CM501,CM9901", "--no-cache", "--verify-report", str(report), str(tmp_path))
    assert "cudaDeviceSynchronize();" in src.read_text()  # the unit did not build before (CM501's API is gone)
    assert BROKEN not in hdr.read_text()
    got = json.loads(report.read_text())
    assert (got["units"], got["builds_after"], got["compiled_before"], got["rolled_back"]) == (1, 1, 0, 1)
    assert got["rollbacks"][0]["unit"].endswith("src/main.cu") and got["rollbacks"][0]["path"].endswith("check.cuh")
    assert "(1 build after the fix)" in err(r)


def test_a_wrong_verify_value_in_the_configuration_is_one_line_and_exit_2(tmp_path):
    src = tmp_path / "a.cu"
    src.write_text("void f() {\n  cudaGetLastError();\n}\n")
    (tmp_path / ".cudamigrate.toml").write_text('verify = "sometimes"\n')
    r = run("--select", "CM9901", str(src))
    assert r.exit_code == 2 and '`verify` must be "auto", "off" or "require"' in err(r)
    assert BROKEN not in src.read_text()


# --------------------------------------------------------------------------- consistency groups
GROUP_CHECKER = """import sys
src = next(a for a in sys.argv[1:] if a.endswith(".cpp"))
text = open(src).read()
for i, line in enumerate(text.splitlines(), 1):
    if "blur_v2(" in line and "void blur_v2" not in text:
        print(f"{src}:{i}:3: error: 'blur_v2' was not declared in this scope")
        sys.exit(1)
"""


def test_a_rollback_takes_its_whole_consistency_group_in_every_file(tmp_path):
    """A grouped fix (all files or none) that breaks one unit is rolled back in the other file too: a migration
    is never left half applied across files (before, only the breaking unit's finding was withdrawn)."""
    (tmp_path / "checker.py").write_text(GROUP_CHECKER)
    a, b = tmp_path / "a.cpp", tmp_path / "b.cpp"
    a.write_text("void blur_v2(int);\nvoid f() { legacy_blur(1); }\n")
    b.write_text("void g() { legacy_blur(2); }\n")
    db = [{"directory": str(tmp_path), "file": str(p), "arguments": [sys.executable, str(tmp_path / "checker.py"), str(p)]}
          for p in (a, b)]
    (tmp_path / "compile_commands.json").write_text(json.dumps(db))
    before = a.read_text(), b.read_text()
    report = tmp_path / "verify.json"
    r = CliRunner().invoke(main, ["fix", "--rules-dir", str(RULES), "--trust-compile-commands", "--select", "CM9902", "--no-cache",
                                  "--no-semantic", "--verify-report", str(report), str(a), str(b)],
                           catch_exceptions=False)
    assert (a.read_text(), b.read_text()) == before, err(r)  # a.cpp alone would compile: it is rolled back too
    got = json.loads(report.read_text())
    assert sorted(x["path"].rsplit("/", 1)[-1] for x in got["rollbacks"]) == ["a.cpp", "b.cpp"]
    assert "of the same consistency group 'legacy_blur'" in err(r)


def test_a_rollback_never_brings_back_a_group_the_run_withheld(tmp_path):
    """b.cpp's two-argument call cannot be rewritten, so the run withholds the `legacy_blur` group in every file.
    A rollback in a.cpp (CM9901) fixes that file again; without the run's withheld groups it would rename
    legacy_blur there alone (half applied across files)."""
    src = _fake_project(tmp_path, "void f() {\n  legacy_blur(1);\n  cudaGetLastError();\n}\n")
    b = tmp_path / "b.cpp"
    b.write_text("void g() {\n  legacy_blur(1, 2);\n}\n")
    db = json.loads((tmp_path / "compile_commands.json").read_text())
    db.append({**db[0], "file": str(b), "arguments": [*db[0]["arguments"][:-1], str(b)]})
    (tmp_path / "compile_commands.json").write_text(json.dumps(db))
    r = run("--select", "CM9901,CM9902", "--no-cache", "--no-semantic", str(src), str(b))
    assert "CM9901: fix rolled back" in err(r)
    assert src.read_text() == "void f() {\n  legacy_blur(1);\n  cudaGetLastError();\n}\n", err(r)
    assert "fix withheld in every file" in err(r)


def test_compile_verification_reads_are_no_scan_dependencies(tmp_path):
    """Verification compiles in temporary directories; recorded as reads of the process, they made the system
    temp directory's listing a dependency of every later cached scan in that process (the language server, a
    test run), so any compiler's temporary file anywhere in /tmp threw the whole result cache away."""
    import tempfile

    from cudamigrate.pipeline.result_cache import install_read_recorder, recorded_reads

    install_read_recorder()
    src = _fake_project(tmp_path, "void f() {\n  cudaThreadSynchronize();\n  cudaGetLastError();\n}\n")
    opened0, listed0 = recorded_reads()
    r = run("--select", "CM501,CM9901", "--no-cache", "--no-semantic", str(src))
    assert "1 edit(s) rolled back" in err(r)
    opened, listed = recorded_reads()
    tmp = os.path.realpath(tempfile.gettempdir())
    new = {p for p in (opened - opened0) | (listed - listed0) if os.path.realpath(p).startswith(tmp)}
    assert not {p for p in new if "cudamigrate-" in p or os.path.realpath(p) == tmp}, sorted(new)


def test_a_terminal_gets_a_progress_line(tmp_path, monkeypatch):
    import cudamigrate.cli.progress as progress

    monkeypatch.setattr(progress, "_is_terminal", lambda _s: True)
    src = _fake_project(tmp_path, "void f() {\n  cudaThreadSynchronize();\n}\n")
    r = run("--select", "CM501", "--no-cache", "--no-semantic", str(src))
    assert "\rverifying: 1/1 unit(s), 1 compile(s), 0 rollback(s)" in err(r)


SHARED_CHECKER = f"""import os, sys
src = next(a for a in sys.argv[1:] if a.endswith(".cpp"))
header = open(os.path.join(os.path.dirname(src), "h.h")).read()
if src.endswith("a.cpp") and "{BROKEN}" in header:
    print(f"{{src}}:1:1: error: a.cpp cannot use {BROKEN}")
    sys.exit(1)
if src.endswith("b.cpp") and "cudaGetLastError()" in header:
    print(f"{{src}}:1:1: error: b.cpp needs the new name")
    sys.exit(1)
"""


def test_a_unit_that_built_with_every_edit_and_not_after_a_rollback_is_shown(tmp_path):
    """A rollback in a shared header repairs a.cpp and brings back b.cpp's old error: b.cpp is no worse than
    before, but it built with the edits; the summary and the JSON report say so instead of hiding it."""
    (tmp_path / "checker.py").write_text(SHARED_CHECKER)
    (tmp_path / "h.h").write_text("inline void g() {\n  cudaGetLastError();\n}\n")
    a, b = tmp_path / "a.cpp", tmp_path / "b.cpp"
    a.write_text('#include "h.h"\n')
    b.write_text('#include "h.h"\n')
    db = [{"directory": str(tmp_path), "file": str(p), "arguments": [sys.executable, str(tmp_path / "checker.py"), str(p)]}
          for p in (a, b)]
    (tmp_path / "compile_commands.json").write_text(json.dumps(db))
    report = tmp_path / "v.json"
    r = run("--select", "CM9901", "--no-cache", "--no-semantic", "--verify-report", str(report), str(tmp_path))
    got = json.loads(report.read_text())
    assert got["rolled_back"] == 1 and [x.rsplit("/", 1)[-1] for x in got["lost"]] == ["b.cpp"], err(r)
    assert "1 unit(s) built with every edit but not after the rollbacks" in err(r)


@pytest.mark.nvcc
def test_nvcc_a_device_error_the_host_pass_hid_is_not_the_fixs(tmp_path):
    """nvcc stops at the first front-end pass that fails: `cudaThreadSynchronize` (host) stops the host pass,
    so `__shfl_down` (undefined only where __CUDA_ARCH__ >= 700) is never printed. The safe CM501 fix lets the
    compiler reach it: that error was uncovered, not caused, and the fix stays (it was rolled back, issue 30)."""
    src = tmp_path / "k.cu"
    src.write_text("__device__ float warp_sum(float v) {\n  return v + __shfl_down(v, 1);\n}\n"
                   "void sync_all() {\n  cudaThreadSynchronize();\n}\n")
    r = CliRunner().invoke(main, ["fix", "--select", "CM501", "--no-cache", str(src)], catch_exceptions=False)
    assert "cudaDeviceSynchronize();" in src.read_text(), err(r)
    assert "fix rolled back" not in err(r) and "0 edit(s) rolled back" in err(r), err(r)
