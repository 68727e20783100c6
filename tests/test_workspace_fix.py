"""`fix` as integrators call it (cudamigrate/workspace/fixing.py, docs/python-api.md): the bytes and counts
`cudamigrate fix` writes, the diff it prints, a refusal that writes nothing, and a file that cannot be written
counted as still holding its findings. No test here compiles: verification is off or refused."""

from __future__ import annotations

import os

import pytest

from cudamigrate.workspace import Request, WorkspaceError
from cudamigrate.workspace.fixing import FixOptions, fix

from .helpers import run_cli

CODE = "#include <cuda_runtime.h>\nint main() {\n    cudaThreadSynchronize();\n    return 0;\n}\n"
FIXED = CODE.replace("cudaThreadSynchronize", "cudaDeviceSynchronize")


def _tree(root):
    root.mkdir()
    (root / "a.cu").write_text(CODE)
    (root / "b.cu").write_text(CODE.replace("cudaThreadSynchronize();", "cudaThreadExit();"))
    (root / "clean.cu").write_text("int main() { return 0; }\n")
    return root


def test_fix_writes_and_counts_what_the_command_does(tmp_path):
    lib, cli = _tree(tmp_path / "lib"), _tree(tmp_path / "cli")
    got = fix(Request(paths=(lib,)), FixOptions(verify="off"))
    r = run_cli("fix", "--no-verify", str(cli))
    for name in ("a.cu", "b.cu", "clean.cu"):
        assert (lib / name).read_bytes() == (cli / name).read_bytes()
    assert (lib / "a.cu").read_text() == FIXED
    assert f"Fixed {len(got.applied)} finding(s) in {got.changed} file(s); {got.remaining_count} remaining" in r.output
    assert got.changed == 2 and got.errors == [] and got.verification is not None and got.verification.summary is None
    assert sorted(os.path.basename(f.display) for f in got.files if f.written_dir is not None) == ["a.cu", "b.cu"]


def test_fix_without_writing_gives_the_command_s_diff_and_leaves_the_files(tmp_path):
    lib = _tree(tmp_path / "t")
    got = fix(Request(paths=(lib,)), FixOptions(write=False))
    r = run_cli("fix", "--diff", str(lib))
    assert (lib / "a.cu").read_text() == CODE
    assert "".join(f.diff for f in got.files if f.diff is not None) in r.output
    assert [f.diff is not None for f in got.files] == [True, True, False]


def test_require_verify_without_a_compiler_is_refused_and_writes_nothing(tmp_path, monkeypatch):
    lib = _tree(tmp_path / "t")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no nvcc, and no compile database in the tree
    monkeypatch.delenv("CUDAMIGRATE_VERIFY", raising=False)
    got = fix(Request(paths=(lib,)), FixOptions(verify="require"))
    assert got.verification is not None and got.verification.refusal is not None
    assert got.verification.refusal.startswith("cannot verify fixes: no nvcc on PATH")
    assert got.files == [] and (lib / "a.cu").read_text() == CODE


def test_show_units_describes_the_units_and_writes_nothing(tmp_path, monkeypatch):
    lib = _tree(tmp_path / "t")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    got = fix(Request(paths=(lib,)), FixOptions(verify="auto", show_units=True))
    assert got.verification is not None and got.verification.units is not None
    assert "a.cu" in got.verification.units and "clean.cu" not in got.verification.units
    assert got.files == [] and (lib / "a.cu").read_text() == CODE


def test_a_file_that_cannot_be_written_still_holds_every_finding(tmp_path):
    lib = _tree(tmp_path / "t")
    (lib / "a.cu").chmod(0o444)
    got = fix(Request(paths=(lib,)), FixOptions(verify="off"))
    a = next(f for f in got.files if f.display.endswith("a.cu"))
    assert a.not_written and a.error and a.applied == [] and a.counted_remaining == 1
    assert any("a.cu" in line for line in a.lines)
    assert got.not_written == 1 and got.changed == 1 and got.had_error and (lib / "a.cu").read_text() == CODE


def test_a_bad_verify_value_and_a_bad_configuration_are_refused(tmp_path, monkeypatch):
    lib = _tree(tmp_path / "t")
    monkeypatch.setenv("CUDAMIGRATE_VERIFY", "sometimes")
    with pytest.raises(WorkspaceError, match="verify must be one of auto, off, require, not 'sometimes'"):
        fix(Request(paths=(lib,)))
    monkeypatch.delenv("CUDAMIGRATE_VERIFY")
    (lib / ".cudamigrate.toml").write_text('select = ["CM9999"]\n')
    with pytest.raises(WorkspaceError) as got:
        fix(Request(paths=(lib,)))
    assert got.value.config == lib / ".cudamigrate.toml" and (lib / "a.cu").read_text() == CODE
