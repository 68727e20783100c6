"""A compile database that is not one (bad JSON, wrong shape, an unsplittable command) is one line naming the file
and what is wrong, in every command that reads it: `scan` falls back to tree-sitter, `fix` verifies with the units
and flags it infers (a found database) or stops with exit 2 (a database named with --compile-commands), and no
command shows a traceback. A bug that escapes every command's own handling is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cudamigrate.parse.compile_db import CompileDbError, load_compile_db

from .helpers import run_cli

SOURCE = "void f() { cudaThreadSynchronize(); }\n"
BAD = {
    "not JSON": ("{", "not JSON: Expecting property name enclosed in double quotes (line 1 column 2)"),
    "an object": ('{"file": "a.cu"}', "not a JSON array of entries (it is an object)"),
    "an entry that is a number": ("[1]", "entry 1 is a number, not an object"),
    "a file that is a number": ('[{"file": 3, "command": "nvcc -c a.cu"}]',
                                'entry 1: "file" must be a non-empty string, not a number'),
    "no file": ('[{"command": "nvcc -c a.cu"}]', 'entry 1: "file" must be a non-empty string'),
    "a directory that is a list": ('[{"file": "a.cu", "directory": [], "command": "nvcc"}]',
                                   'entry 1 (a.cu): "directory" must be a string, not an array'),
    "arguments of numbers": ('[{"file": "a.cu", "arguments": ["nvcc", 1]}]',
                             'entry 1 (a.cu): "arguments" must be an array of strings'),
    "no command": ('[{"file": "a.cu"}]',
                   'entry 1 (a.cu): needs "arguments" (an array of strings) or "command" (a string)'),
    "an open quote": ('[{"file": "a.cu", "command": "nvcc \\"-c a.cu"}]',
                      'entry 1 (a.cu): "command" cannot be split: No closing quotation'),
    "deep nesting": ("[" * 100000 + "]" * 100000, "nested too deeply to be a compile database"),
    "not UTF-8": (b'[{"file": "\xff.cu"}]', "not UTF-8 (invalid start byte at byte 11)"),
}


def _write(path, text):
    path.write_bytes(text if isinstance(text, bytes) else text.encode())


@pytest.mark.parametrize("case", sorted(BAD))
def test_load_names_what_is_wrong(tmp_path, case):
    text, why = BAD[case]
    db = tmp_path / "compile_commands.json"
    _write(db, text)
    with pytest.raises(CompileDbError) as exc:
        load_compile_db(db)
    assert str(exc.value) == why


def test_a_good_database_still_loads_every_form(tmp_path):
    (tmp_path / "b").mkdir()
    db = tmp_path / "compile_commands.json"
    db.write_text(json.dumps([
        {"directory": str(tmp_path), "file": "a.cu", "command": "nvcc -DX=\"1 2\" -c a.cu"},
        {"directory": "b", "file": "c.cu", "arguments": ["nvcc", "-c", "c.cu"]},
        {"file": "a.cu", "command": "nvcc -DSECOND -c a.cu"},  # a file's first entry wins
        {"directory": str(tmp_path), "file": "d.cu", "arguments": [], "command": "nvcc -c d.cu"},
    ]))
    got = {c.file.name: (c.directory, c.argv) for c in load_compile_db(db)}
    real = tmp_path.resolve()
    assert got == {"a.cu": (tmp_path, ["nvcc", "-DX=1 2", "-c", "a.cu"]),
                   "c.cu": (real / "b", ["nvcc", "-c", "c.cu"]),
                   "d.cu": (tmp_path, ["nvcc", "-c", "d.cu"])}


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "a.cu").write_text(SOURCE)
    _write(tmp_path / "compile_commands.json", '[{"file": 3}]')
    return tmp_path


def test_scan_with_a_found_bad_database_warns_once_naming_it(tree):
    r = run_cli("scan", "--select", "CM501", ".", cwd=tree)
    warnings = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    assert warnings == [f"cudamigrate: warning: {tree.resolve() / 'compile_commands.json'}: cannot read compile "
                        'database (entry 1: "file" must be a non-empty string, not a number); scanning with '
                        "tree-sitter only"], r.stderr
    assert r.exit_code == 1 and "a.cu:1:12: CM501" in r.stdout


def test_fix_with_a_found_bad_database_verifies_without_it(tree):
    r = run_cli("fix", "--select", "CM501", "--verify", "--diff", ".", cwd=tree)
    assert (f"cudamigrate: warning: {tree.resolve() / 'compile_commands.json'}: cannot read compile database (entry "
            '1: "file" must be a non-empty string, not a number); fixes are verified without it, with the units and '
            "flags cudamigrate infers (README: Compile-verified fix)") in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "+void f() { cudaDeviceSynchronize(); }" in r.stdout
    assert (tree / "a.cu").read_text() == SOURCE


def test_fix_with_a_named_bad_database_stops_with_exit_2_and_writes_nothing(tree):
    r = run_cli("fix", "--select", "CM501", "--verify", "--compile-commands", "compile_commands.json", ".", cwd=tree)
    assert r.exit_code == 2
    assert r.stderr.splitlines()[-1] == ('Error: compile_commands.json: cannot read compile database (entry 1: "file" '
                                         "must be a non-empty string, not a number)")
    assert (tree / "a.cu").read_text() == SOURCE


def test_an_escaped_bug_is_one_line_and_exit_2_and_debug_shows_the_traceback(tmp_path):
    code = ("import sys, cudamigrate.cli.app as app\n"
            "def boom(*a, **k):\n    raise ZeroDivisionError('simulated bug')\n"
            "app.main = boom\nsys.argv[1:] = sys.argv[1:]\napp.console()\n")
    for debug in (False, True):
        args = [sys.executable, "-c", code, "scan", *(["--debug"] if debug else [])]
        p = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, timeout=60)
        assert p.returncode == 2 and p.stdout == ""
        last = p.stderr.splitlines()[-1]
        assert last == ("cudamigrate: internal error: ZeroDivisionError: simulated bug (this is a bug in cudamigrate; "
                        "--debug prints the traceback)")
        assert ("Traceback (most recent call last)" in p.stderr) == debug


def test_doctor_says_what_scans_will_say(tree):
    from cudamigrate.toolcheck.doctor import _compile_db_check

    check = _compile_db_check(tree)
    assert check.status == "warn"
    assert check.found == (f"{tree.resolve() / 'compile_commands.json'}: cannot be used (entry 1: \"file\" must be a "
                           "non-empty string, not a number)")
    (tree / "compile_commands.json").write_text(json.dumps(
        [{"directory": str(tree), "file": "a.cu", "command": "nvcc -c a.cu"},
         {"directory": str(tree), "file": "a.cu", "command": "nvcc -DX -c a.cu"}]))
    check = _compile_db_check(tree)
    assert check.status == "ok" and check.found.endswith("(1 translation unit(s))")
