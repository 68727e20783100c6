"""Pure parts of bench/oracle_semantic.py (semantic against tree-sitter mode on the oracle's pool): the compile
database it writes, how it reads semantic mode's fallback warnings, and the pool it builds. The heavy run (both
scans of cuda-samples) is not part of the suite."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "oracle_semantic", Path(__file__).resolve().parents[1] / "bench" / "oracle_semantic.py")
assert _spec is not None and _spec.loader is not None
osem = importlib.util.module_from_spec(_spec)
sys.modules["oracle_semantic"] = osem
_spec.loader.exec_module(osem)


def test_database_has_the_oracle_command_line_for_every_unit(tmp_path):
    v11 = tmp_path / "v11.8"
    (v11 / "Samples" / "0_Introduction" / "a").mkdir(parents=True)
    (v11 / "Common").mkdir()
    for name in ("a.cu", "b.cpp", "k.cuh"):
        (v11 / "Samples" / "0_Introduction" / "a" / name).write_text("int x;\n")
    db, units = osem.write_database(v11, tmp_path / "db")
    assert units == ["Samples/0_Introduction/a/a.cu", "Samples/0_Introduction/a/b.cpp"]
    entries = json.loads(db.read_text())
    args = entries[0]["arguments"]
    assert args[:1 + len(osem.OR.NVCC_FLAGS)] == ["nvcc", *osem.OR.NVCC_FLAGS]
    assert f"-I{v11 / 'Samples' / '0_Introduction' / 'a'}" in args and f"-I{v11 / 'Common'}" in args
    assert entries[0]["directory"] == str(v11 / "Samples" / "0_Introduction" / "a")


def test_fallback_warnings_are_counted_by_missing_header():
    err = ("cudamigrate: note: v11.8/x.hpp: not UTF-8 from byte 113 (line 4); scanned with those bytes kept as they are\n"
           "cudamigrate: warning: semantic mode: v11.8/Samples/x/a.cu: libclang: line 37: 'omp.h' file not found; "
           "this translation unit is scanned with tree-sitter only\n"
           "cudamigrate: warning: semantic mode: 3 file(s) not reached from db/compile_commands.json are scanned with "
           "tree-sitter only (e.g. a.h)\n")
    tus, unreached = osem.fallbacks(err)
    assert [t for t, _ in tus] == ["v11.8/Samples/x/a.cu"] and unreached == 3
    assert osem.why_key(tus[0][1]) == "missing `omp.h`"


@pytest.mark.skipif(shutil.which("clang-format") is None, reason="clang-format not on PATH (the oracle needs it)")
def test_pool_keeps_findings_on_lines_nvidia_left_unchanged(tmp_path):
    v11, v13 = tmp_path / "v11.8", tmp_path / "v13.0"
    for root, body in ((v11, "int a = 1;\nint b = 2;\nint c = 3;\n"), (v13, "int a = 1;\nint b = 20;\nint c = 3;\n")):
        (root / "Samples" / "0_Introduction" / "s").mkdir(parents=True)
        (root / "Samples" / "0_Introduction" / "s" / "s.cu").write_text(body)
        (root / ".clang-format").write_text("BasedOnStyle: LLVM\n")
    rel = "Samples/0_Introduction/s/s.cu"
    found = [{"rule": "CM1", "relpath": rel, "line": n, "column": 1, "message": ""} for n in (1, 2, 3)]
    assert [f["line"] for f in osem.pool(v11, v13, found, 1)] == [1, 3]
