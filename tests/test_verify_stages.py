"""Compile stages (cudamigrate/fixproof/stages.py): an error the fix uncovered in a later stage is not one it caused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudamigrate.cli.main import main
from cudamigrate.fixproof.compile_check import CompileResult, Diagnostic, parse_errors, worse
from cudamigrate.fixproof.stages import FRONT_END, PREPROCESS, PTXAS, changed_lines

DATA = Path(__file__).parent / "data" / "verify_units"
NVCC_PTXAS = ("ptxas /tmp/tmpxft_1_00000000-6_u.ptx, line 53; error   : Instruction 'shfl' without '.sync' is not "
              "supported on .target sm_70 and higher from PTX ISA version 6.4\n"
              "ptxas fatal   : Ptx assembly aborted due to errors\n")


def test_stages_are_read_from_the_diagnostics():
    got = parse_errors("/t/a.cu:1:10: fatal error: nope.h: No such file or directory\n"
                       "a.cu(3): error: identifier \"__shfl_up\" is undefined\n" + NVCC_PTXAS, "/t")
    assert [d.stage for d in got] == [PREPROCESS, FRONT_END, PTXAS, PTXAS]
    assert got[2] == Diagnostic("", 0, "Instruction 'shfl' without '.sync' is not supported on .target sm_70 and "
                                       "higher from PTX ISA version 6.4")


def test_a_later_stage_error_is_uncovered_unless_it_lies_on_a_changed_line():
    before = CompileResult(False, parse_errors('a.cu(3): error: identifier "__shfl_up" is undefined\n', "/t"))
    after = CompileResult(False, parse_errors(NVCC_PTXAS, "/t"))
    assert not worse(before, after)  # ptxas now sees inline PTX that was always there
    front = CompileResult(False, parse_errors('a.cu(7): error: identifier "y" is undefined\n', "/t"))
    assert worse(before, front)  # the same stage, a new error: caused
    later_on_edit = CompileResult(False, [Diagnostic("/t/a.cu", 4, "bad", PTXAS)], changed={"/t/a.cu": frozenset({4})})
    assert worse(before, later_on_edit)
    assert worse(after, before)  # back to an earlier stage: worse (bisection never keeps such a rollback)


def test_changed_lines_are_those_the_edits_wrote():
    old = b"a\nb\nc\nd\n"
    got = changed_lines({"/f": b"a\nB\nc\nnew\nd\n"}, lambda _p: old)
    assert got == {"/f": frozenset({2, 4})}


@pytest.mark.nvcc
def test_nvcc_an_uncovered_ptxas_error_rolls_nothing_back(tmp_path, monkeypatch):
    """The issue's case: uses_both.cu reaches ptxas only after the fix (inline PTX without .sync, manual CM530).
    Before, one of the two __shfl_up rewrites was rolled back and pair_only.cu stopped building."""
    monkeypatch.delenv("CUDAMIGRATE_VERIFY", raising=False)
    d = Path(shutil.copytree(DATA / "uncovered", tmp_path / "uncovered"))
    r = CliRunner().invoke(main, ["fix", "--unsafe-fixes", "--no-semantic", "--no-cache", str(d)],
                           catch_exceptions=False)
    assert "fix rolled back" not in r.output, r.output
    text = (d / "shfl.cuh").read_text()
    assert text.count("__shfl_up_sync(0xffffffff, ") == 2 and "__shfl_up(" not in text
    import subprocess

    p = subprocess.run(["nvcc", "-c", "-o", str(tmp_path / "p.o"), "pair_only.cu"], cwd=d, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stdout + p.stderr
