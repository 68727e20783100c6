"""The compile database's -D/-U flags reach the preprocessor model (read/unit_defines.py): a file's `#if` branches
are decided with the flags of the units that compile it (a header: those every unit that reaches it agrees on)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudamigrate.core.options import Options
from cudamigrate.parse.compile_db import Command, command_defines
from cudamigrate.read.project_index import ProjectIndex
from cudamigrate.read.unit_defines import agreed
from cudamigrate.scan.engine import Engine

from .helpers import all_rules
from .test_cache import _Counter, _scan_json, cache_dir  # noqa: F401  (the fixture)

CHK = "#ifdef USE_HIP\n#define api(fn) (hip##fn)\n#else\n#define api(fn) (cuda##fn)\n#endif\n"
USE = '#include "chk.h"\nint main() {\n  api(ThreadSynchronize());\n  return 0;\n}\n'


def _db(root: Path, units: dict[str, str]) -> Path:
    db = root / "compile_commands.json"
    db.write_text(json.dumps([{"directory": str(root), "command": f"nvcc {flags} -c {name}", "file": name}
                              for name, flags in units.items()]))
    return db


def _scan(root: Path, name: str, db: Path | None) -> list:
    files = sorted(p for p in root.rglob("*") if p.suffix in (".cu", ".h"))
    opts = Options(select=["CM501"], extend_select=["CM501"], compile_db=str(db) if db else None)
    res = Engine(all_rules(), opts, project=ProjectIndex(files=files)).scan_path(root / name)
    assert not res.errors, res.errors
    return res.findings


@pytest.mark.parametrize("argv, expected", [
    (["nvcc", "-DUSE_HIP", "-D", "N=2", "-UOLD", "-c", "a.cu"], (("USE_HIP", "1"), ("N", "2"), ("OLD", None))),
    (["nvcc", "-Xcompiler", "-DX=1,-Wall,-UY", "-DEMPTY=", "a.cu"], (("X", "1"), ("Y", None), ("EMPTY", ""))),
    (["nvcc", "--compiler-options=-DZ", "-U", "W", "a.cu"], (("Z", "1"), ("W", None))),
    # nvcc's long spellings, and a host-compiler list the shell would split at spaces
    (["nvcc", "--define-macro", "USE_HIP", "--define-macro=N=3", "--undefine-macro", "OLD", "--undefine-macro=X",
      "a.cu"], (("USE_HIP", "1"), ("N", "3"), ("OLD", None), ("X", None))),
    (["nvcc", "-Xcompiler", "-DA -DB=2,-UC", "--compiler-options", "-Wall -DD", "a.cu"],
     (("A", "1"), ("B", "2"), ("C", None), ("D", "1"))),
])
def test_command_defines_reads_the_forms_semantic_mode_passes_on(argv, expected):
    from cudamigrate.parse.clang import clang_args

    assert command_defines(argv) == expected
    # semantic mode gives clang the same flags (parse/clang.py's `clang_args`)
    assert command_defines(["clang", *clang_args(Command(Path("/p/a.cu"), Path("/p"), argv))]) == expected


def test_units_that_disagree_leave_a_name_undecided():
    assert agreed([(("A", "1"), ("B", "1")), (("A", "1"), ("B", "2"))]) == (("A", "1"),)
    assert agreed([(("A", "1"),), ()]) == ()  # a unit that leaves A alone
    assert agreed([(("A", "1"), ("A", None)), (("A", None),)]) == (("A", None),)  # the last flag counts
    assert agreed([]) == ()


def test_database_defines_decide_which_pasting_macro_is_live(tmp_path):
    (tmp_path / "chk.h").write_text(CHK)
    (tmp_path / "main.cu").write_text(USE)
    assert _scan(tmp_path, "main.cu", _db(tmp_path, {"main.cu": "-DUSE_HIP"})) == []  # hip##fn: nothing removed
    (f,) = _scan(tmp_path, "main.cu", _db(tmp_path, {"main.cu": "-UUSE_HIP"}))
    assert f.fix is not None and f.fix.applicability == "safe"  # cuda##fn, decided
    (f,) = _scan(tmp_path, "main.cu", _db(tmp_path, {"other.cu": "-UUSE_HIP"}))  # main.cu is not in the database
    assert f.fix is None and "`#ifdef USE_HIP` (chk.h:1) decides" in f.context["fix_blocked"]


def test_a_header_takes_the_flags_its_includers_agree_on(tmp_path):
    # the use is in a header that two units include: decided where both pass USE_HIP=0, undecided where they differ
    (tmp_path / "chk.h").write_text("#if !USE_HIP\n#define api(fn) (cuda##fn)\n#else\n#define api(fn) (hip##fn)\n#endif\n")
    (tmp_path / "use.h").write_text('#include "chk.h"\ninline int sync() { return api(ThreadSynchronize()); }\n')
    for name in ("a.cu", "b.cu"):
        (tmp_path / name).write_text('#include "use.h"\n')
    (f,) = _scan(tmp_path, "use.h", _db(tmp_path, {"a.cu": "-DUSE_HIP=0", "b.cu": "-DUSE_HIP=0"}))
    assert f.fix is not None
    (f,) = _scan(tmp_path, "use.h", _db(tmp_path, {"a.cu": "-DUSE_HIP=0", "b.cu": "-DUSE_HIP=1"}))
    assert f.fix is None and "cannot decide" in f.context["fix_blocked"]


def test_version_guards_start_from_the_database_defines(tmp_path):
    # CM410 (match/migrations/builtins.py's pp_env) walks with the same flags: a -D'd version macro decides a guard
    from cudamigrate.match.context import FileContext
    from cudamigrate.match.migrations.builtins import pp_env
    from cudamigrate.read.source import SourceFile

    src = tmp_path / "main.cu"
    src.write_text("#if LEGACY_API\nint x;\n#endif\n")
    db = _db(tmp_path, {"main.cu": "-DLEGACY_API=0"})
    ctx = FileContext(source=SourceFile(path=src, data=src.read_bytes()), units=[], project=ProjectIndex(files=[src]),
                      compile_db=str(db))
    assert pp_env(ctx).decide("LEGACY_API", 0, [(13, 0)]) is False
    ctx = FileContext(source=SourceFile(path=src, data=src.read_bytes()), units=[], project=ProjectIndex(files=[src]))
    assert pp_env(ctx).decide("LEGACY_API", 0, [(13, 0)]) is None


def test_a_changed_define_in_the_database_rescans(tmp_path, cache_dir, monkeypatch):  # noqa: F811
    (tmp_path / "chk.h").write_text(CHK)
    (tmp_path / "main.cu").write_text(USE)
    _db(tmp_path, {"main.cu": "-DUSE_HIP"})
    count = _Counter(monkeypatch)
    assert _scan_json(tmp_path, "--no-semantic", "-j", "1", "--select", "CM501")["findings"] == []
    assert count.take() == ["chk.h", "main.cu"]
    assert _scan_json(tmp_path, "--no-semantic", "-j", "1", "--select", "CM501")["findings"] == []
    assert count.take() == []  # unchanged: answered from the cache
    _db(tmp_path, {"main.cu": "-UUSE_HIP"})
    (f,) = _scan_json(tmp_path, "--no-semantic", "-j", "1", "--select", "CM501")["findings"]
    assert "main.cu" in count.take() and f["rule"] == "CM501"


def test_an_includers_macro_follows_the_includers_flags(tmp_path):
    # match/shadows.py: main.cu defines `ulong4` under `#ifdef USE_VEC` before including kernel.cu; the database
    # compiles main.cu with -DUSE_VEC, so `ulong4` in kernel.cu is the project's macro (no finding), and with
    # -UUSE_VEC the CUDA type's (a finding with its fix)
    (tmp_path / "main.cu").write_text('#ifdef USE_VEC\n#define ulong4 uint4\n#endif\n#include "kernel.cu"\n')
    (tmp_path / "kernel.cu").write_text("__global__ void k(ulong4 *p) { p[0].x = 1; }\n")

    def scan(flags: str) -> list:
        opts = Options(select=["CM511"], extend_select=["CM511"], compile_db=str(_db(tmp_path, {"main.cu": flags})))
        files = [tmp_path / "main.cu", tmp_path / "kernel.cu"]
        res = Engine(all_rules(), opts, project=ProjectIndex(files=files)).scan_path(tmp_path / "kernel.cu")
        assert not res.errors, res.errors
        return res.findings

    assert scan("-DUSE_VEC") == []
    (f,) = scan("-UUSE_VEC")
    assert f.fix is not None


def test_a_database_entry_that_loops_leaves_the_scan_alone(tmp_path):
    """A unit whose file or directory is a symlink loop (Path.resolve raises RuntimeError there before Python
    3.13) made every file's scan an internal error: the database's other units still count."""
    (tmp_path / "chk.h").write_text(CHK)
    (tmp_path / "main.cu").write_text(USE)
    (tmp_path / "loop.cu").symlink_to("loop.cu")
    (tmp_path / "loopdir").symlink_to("loopdir")
    db = tmp_path / "compile_commands.json"
    db.write_text(json.dumps([{"directory": str(tmp_path), "command": "nvcc -c loop.cu", "file": "loop.cu"},
                              {"directory": str(tmp_path / "loopdir"), "command": "nvcc -c x.cu", "file": "x.cu"},
                              {"directory": "loopdir", "command": "nvcc -c y.cu", "file": "y.cu"},
                              {"directory": str(tmp_path), "command": "nvcc -DUSE_HIP -c main.cu",
                               "file": "main.cu"}]))
    assert _scan(tmp_path, "main.cu", db) == []  # main.cu's -DUSE_HIP: hip##fn, nothing removed


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '[{"file": "main.cu", "arguments": [1, 2]}]',
                                  '{"file": "main.cu"}', "\udcff", '[{"file": "a\\u0000.cu", "command": "nvcc"}]'])
def test_a_database_of_another_shape_decides_nothing(tmp_path, text):
    """A database too deep for json (RecursionError), or not a list of units, is no database for the branches:
    the scan goes on as without one (semantic mode reports it)."""
    (tmp_path / "chk.h").write_text(CHK)
    (tmp_path / "main.cu").write_text(USE)
    db = tmp_path / "compile_commands.json"
    db.write_bytes(text.encode("utf-8", "surrogateescape"))
    (f,) = _scan(tmp_path, "main.cu", db)
    assert f.fix is None  # undecided, as without a database


def test_a_database_nested_too_deep_is_no_crash(tmp_path):
    """json.loads raises RecursionError (not a ValueError) on a database nested too deeply: the target's
    detection (toolcheck/target.py) and `doctor` let it out as a traceback."""
    from .helpers import run_cli

    (tmp_path / "main.cu").write_text("int main() { return cudaThreadSynchronize(); }\n")
    (tmp_path / "compile_commands.json").write_text("[" * 100_000 + "]" * 100_000)
    r = run_cli("scan", "--no-semantic", "--no-cache", "main.cu", cwd=tmp_path)
    assert r.exit_code == 1 and "CM501" in r.stdout
    from cudamigrate.toolcheck.doctor import _compile_db_check

    check = _compile_db_check(tmp_path)
    assert check.status == "warn" and "nested too deeply" in check.found
