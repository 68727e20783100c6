"""Files that are not UTF-8 (Latin-1 comments in legacy trees) are scanned and fixed byte-exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamigrate.read.source import SourceError, check_bytes

from .helpers import engine_for, fix_text

P = Path("latin1.cu")


def test_non_utf8_bytes_are_a_note_not_an_error():
    src = check_bytes(P, b"int x;\n// J\xf6rg\ncudaThreadExit();\n")
    assert not src.utf8
    assert src.warnings == ["not UTF-8 from byte 11 (line 2); scanned with those bytes kept as they are"]
    assert check_bytes(P, b"// caf\xc3\xa9\n").warnings == []  # valid UTF-8: no note


def test_binary_files_stay_errors():
    with pytest.raises(SourceError, match="binary"):
        check_bytes(P, b"\x7fELF\x00\x01")


def test_scan_finds_the_break_and_reports_readable_text():
    eng = engine_for(select=["CM501"])
    res = eng.scan_bytes(P, b"void f() {\n  cudaThreadExit();  // Andr\xe9\n}\n")
    assert not res.errors and res.notes and "latin1.cu" in res.notes[0]
    [f] = res.findings
    assert (f.rule_id, f.line) == ("CM501", 2)
    f.message.encode("utf-8")  # reports are UTF-8: no lone surrogates leak into them
    f.snippet.encode("utf-8")


def test_block_rewrite_keeps_latin1_bytes():
    """CM410 rewrites a whole `#if` block from its text: the bytes inside it must survive."""
    eng = engine_for(select=["CM410"], keep_compat=(13, 0))
    data = (b"#include <cuda_runtime.h>\n#if CUDART_VERSION >= 11000  // Fran\xe7ois\n"
            b"int ok = 1;  /* \xa9 J\xf6rg */\n#else\nint ok = 0;\n#endif\n")
    fixed = fix_text(eng, P, data)
    assert b"int ok = 1;  /* \xa9 J\xf6rg */\n" in fixed
    assert b"#else" not in fixed
    assert b"\xef\xbf\xbd" not in fixed  # no U+FFFD replacement characters written

