"""Translation units of compile verification (cudamigrate/fixproof/units.py): what `fix` compiles is what the build
compiles. The minimal projects are in tests/data/verify_units/ (our own code, after the issue's two cases)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudamigrate.cli.main import main

DATA = Path(__file__).parent / "data" / "verify_units"


@pytest.fixture(autouse=True)
def verify_on(monkeypatch):
    monkeypatch.delenv("CUDAMIGRATE_VERIFY", raising=False)  # conftest turns it off for the other tests


def _copy(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(DATA / name, tmp_path / name))


def fix(*args: str):
    return CliRunner().invoke(main, ["fix", "--no-semantic", "--no-cache", *args], catch_exceptions=False)


def test_an_included_cu_is_part_of_its_includer_never_a_unit_of_its_own(tmp_path):
    d = _copy(tmp_path, "included_cu")
    r = fix("--unsafe-fixes", "--show-units", str(d))
    assert r.exit_code == 0, r.output
    units = [ln.split(":", 1)[0] for ln in r.stdout.splitlines() if not ln.startswith("  ")]
    assert units == [str((d / "main.cu").resolve())]
    assert "includes" in r.stdout and "kernel.cu; no file of the run includes it" in r.stdout
    assert (d / "kernel.cu").read_text() == (DATA / "included_cu" / "kernel.cu").read_text()  # nothing written


def test_include_dirs_and_defines_reach_the_synthesized_command(tmp_path, monkeypatch):
    d = _copy(tmp_path, "included_cu")
    (d / ".cudamigrate.toml").write_text('include-dirs = ["cfg_inc"]\ndefines = ["FROM_CONFIG=1"]\n')
    monkeypatch.chdir(tmp_path)
    r = fix("--unsafe-fixes", "--show-units", "-I", "cli_inc", "--define", "FROM_CLI", str(d))
    cmd = next(ln for ln in r.stdout.splitlines() if ln.startswith("  "))
    if "no command" in cmd:
        pytest.skip("nvcc not on PATH: no synthesized command to show")
    want = [f"-I{tmp_path.resolve() / 'cli_inc'}", "-DFROM_CLI", f"-I{d.resolve() / 'cfg_inc'}", "-DFROM_CONFIG=1"]
    got = cmd.split()
    assert [a for a in got if a in want] == want


def test_with_a_database_the_units_are_its_entries_that_reach_the_change(tmp_path):
    """kernel.cu is not in the database; main.cu is and includes it: main.cu is the unit (compile database)."""
    d = _copy(tmp_path, "included_cu")
    db = [{"directory": str(d), "file": str(d / "main.cu"), "arguments": [sys.executable, "-c", "pass", "main.cu"]}]
    (d / "compile_commands.json").write_text(json.dumps(db))
    r = fix("--unsafe-fixes", "--show-units", "--compile-commands", str(d / "compile_commands.json"),
            str(d / "kernel.cu"))
    lines = r.stdout.splitlines()
    assert len(lines) == 2, r.output
    assert lines[0] == f"{(d / 'main.cu').resolve()}: an entry of the compile database that includes {d / 'kernel.cu'}"
    assert "(compile database)" in lines[1]


@pytest.mark.nvcc
def test_nvcc_the_included_cu_is_migrated_and_its_includer_builds(tmp_path):
    d = _copy(tmp_path, "included_cu")
    r = fix("--unsafe-fixes", str(d))
    assert "fix rolled back" not in r.output, r.output
    assert "tex1Dfetch<Node>(ref, 0)" in (d / "kernel.cu").read_text()
    assert "Verified 1 of 1 unit(s)" in r.output  # main.cu, the one unit; kernel.cu is never compiled alone
    import subprocess

    p = subprocess.run(["nvcc", "-c", "-o", str(tmp_path / "m.o"), "main.cu"], cwd=d, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
