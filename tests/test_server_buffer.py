"""The server's buffer (LSP's lines and columns, incremental edits) and its bounded engine cache, without a
client."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cudamigrate.server.buffer import UTF8, UTF16, UTF32, Buffer, line_starts


@pytest.mark.parametrize("text,starts", [
    ("a\nb\r\nc\rd", [0, 2, 5, 7]),
    ("a\fb\x0bc\x85d\u2028e\u2029f\x1cg", [0]),  # str.splitlines() would split here 6 times
    ("a\r\r\n\n", [0, 2, 4, 5]),
], ids=["lsp-terminators", "not-terminators", "cr-then-crlf"])
def test_lines_end_at_lsp_terminators_only(text, starts):
    assert line_starts(text.encode()) == starts


@pytest.mark.parametrize("encoding,col", [(UTF16, 5), (UTF8, 10), (UTF32, 4)])
def test_columns_in_the_agreed_encoding_round_trip(encoding, col):
    text = "x\f\n\u00e9\U0001F600\u2028 ab cudaFree(p);\r\n"
    buf = Buffer.of(text, encoding=encoding)
    at = buf.data.index(b"ab")
    assert buf.position(at) == (1, col)
    assert buf.offset(1, col) == at


def test_positions_past_the_end_clamp_and_a_lone_surrogate_keeps_positions():
    buf = Buffer.of("ab\ncd\ud800ef\n")  # the surrogate: one UTF-16 unit, kept as U+FFFD (one unit)
    assert buf.offset(0, 99) == 2 and buf.offset(99, 0) == len(buf.data)
    assert buf.position(buf.data.index(b"ef")) == (1, 3)


def test_incremental_edits_after_a_form_feed_land_where_the_editor_made_them():
    buf = Buffer.of("// \f page\nint x;\n")
    before = buf.generation
    buf.edit(buf.offset(1, 4), buf.offset(1, 5), "y", version=2)
    assert buf.text == "// \f page\nint y;\n" and buf.version == 2 and buf.generation > before


def test_generations_are_unique_across_documents():
    """A document closed and opened again gets a generation no scan of its old text carries."""
    a, b = Buffer.of("x"), Buffer.of("x")
    a.edit(0, 0, "y")
    assert len({a.generation, b.generation, Buffer.of("z").generation}) == 3


def test_one_engine_per_configuration_file_is_kept(tmp_path: Path):
    from cudamigrate.server.analysis import Engines, analyse

    cfg = tmp_path / ".cudamigrate.toml"
    src = tmp_path / "a.cu"
    src.write_text("int main() { cudaThreadSynchronize(); }\n")
    engines = Engines()
    for i in range(2):  # each saved edit of the configuration builds an engine; only the newest stays
        cfg.write_text(f'ignore = ["CM10{i}"]\n')
        os.utime(cfg, (1_000_000 + i, 1_000_000 + i))
        assert [f.rule_id for f in analyse(engines, src, src.read_text()).findings] == ["CM501"]
    assert len(engines._by_key) == 1


@pytest.mark.parametrize("name", ["gpu.cuh", "gpu.cu"])
def test_a_saved_edit_of_an_included_file_reaches_the_next_scan(tmp_path: Path, name: str):
    """The server keeps one project index across keystrokes; a file it read that was saved since is read again,
    a header or an included `.cu` (legacy code writes `#include "gpu.cu"`; only headers' stamps were checked at
    first). Here the member's type moves from `cudaDeviceProp` to the project's own struct, so CM503 must go:
    with the kept index the second scan still read the old text and reported it."""
    from cudamigrate.server.analysis import Engines, analyse

    included, src = tmp_path / name, tmp_path / "a.cu"
    included.write_text("#pragma once\n#include <cuda_runtime.h>\nstruct Gpu { cudaDeviceProp prop; };\n")
    src.write_text(f'#include "{name}"\nint f(Gpu &g) {{ return g.prop.clockRate; }}\n')
    engines = Engines()
    assert [f.rule_id for f in analyse(engines, src, src.read_text()).findings] == ["CM503"]
    included.write_text("#pragma once\nstruct Mine { int clockRate; };\nstruct Gpu { Mine prop; };\n")
    assert analyse(engines, src, src.read_text()).findings == []
    included.write_text("#pragma once\n#include <cuda_runtime.h>\nstruct Gpu { cudaDeviceProp prop; };\n")
    assert [f.rule_id for f in analyse(engines, src, src.read_text()).findings] == ["CM503"]
    included.unlink()  # a file gone since: not followed any more
    assert analyse(engines, src, src.read_text()).findings == []


def test_a_compile_database_created_after_the_first_scan_is_used(tmp_path: Path):
    """The engine kept the compile database found when it was built (none, before the build was configured):
    its -D/-U flags never reached a document until the configuration file changed or the server restarted."""
    import json

    from cudamigrate.server.analysis import Engines, analyse

    from .test_unit_defines import CHK, USE

    (tmp_path / ".git").mkdir()  # the project's root: no database above it is looked for
    (tmp_path / "chk.h").write_text(CHK)
    src = tmp_path / "main.cu"
    src.write_text(USE)
    engines = Engines()
    (f,) = analyse(engines, src, src.read_text()).findings
    assert f.fix is None  # `#ifdef USE_HIP` undecided without a database
    (tmp_path / "compile_commands.json").write_text(json.dumps(
        [{"directory": str(tmp_path), "command": "nvcc -UUSE_HIP -c main.cu", "file": "main.cu"}]))
    (f,) = analyse(engines, src, src.read_text()).findings
    assert f.rule_id == "CM501" and f.fix is not None  # cuda##fn, decided by the database


def test_a_changed_compile_database_reaches_the_next_scan(tmp_path: Path):
    """The kept index also keeps the compile database's -D/-U flags (read/unit_defines.py): a build reconfigured
    with other flags must decide the next scan's branches, as a saved header does."""
    import json

    from cudamigrate.server.analysis import Engines, analyse

    from .test_unit_defines import CHK, USE

    (tmp_path / "chk.h").write_text(CHK)
    src = tmp_path / "main.cu"
    src.write_text(USE)

    def configure(flags: str) -> None:
        (tmp_path / "compile_commands.json").write_text(json.dumps(
            [{"directory": str(tmp_path), "command": f"nvcc {flags} -c main.cu", "file": "main.cu"}]))

    configure("-DUSE_HIP")
    engines = Engines()
    assert analyse(engines, src, src.read_text()).findings == []  # hip##fn: nothing removed
    configure("-UUSE_HIP")
    (f,) = analyse(engines, src, src.read_text()).findings
    assert f.rule_id == "CM501" and f.fix is not None  # cuda##fn, decided by the new flags


def test_index_is_kept_while_its_headers_are_unchanged(tmp_path: Path, monkeypatch):
    import cudamigrate.core.stamps as stamps
    from cudamigrate.server.analysis import Engines, analyse

    (tmp_path / "gpu.cuh").write_text("struct Gpu { int x; };\n")
    src = tmp_path / "a.cu"
    src.write_text('#include "gpu.cuh"\nint main() { cudaThreadSynchronize(); }\n')
    engines = Engines()
    first = analyse(engines, src, src.read_text()).engine
    second = analyse(engines, src, src.read_text()).engine
    assert first is not None and second is not None
    assert first.project is not second.project  # files written just now: their stamps prove nothing yet
    monkeypatch.setattr(stamps, "RACY_NS", 0)  # as if they had been written long ago
    third = analyse(engines, src, src.read_text()).engine
    fourth = analyse(engines, src, src.read_text()).engine
    assert third is not None and fourth is not None and third.project is fourth.project


def test_a_header_saved_twice_in_one_coarse_clock_tick_reaches_the_next_scan(tmp_path: Path, monkeypatch):
    """On a filesystem that keeps 2-second times (FAT; SMB and HFS+ keep 1-second ones) a header saved again
    within the tick of its first read keeps size and times: the index must not trust a stamp taken that close to
    the change (core/stamps.py), else the member's type change below never reached the diagnostics."""
    import cudamigrate.read.project_index as project_index
    from cudamigrate.server.analysis import Engines, analyse

    real_stamp = project_index._stamp

    def coarse(path):
        st = real_stamp(path)
        return None if st is None else (st[0] // 2_000_000_000 * 2_000_000_000, st[1],
                                        st[2] // 2_000_000_000 * 2_000_000_000)

    monkeypatch.setattr(project_index, "_stamp", coarse)
    header, src = tmp_path / "gpu.cuh", tmp_path / "a.cu"
    cuda = "#pragma once\n#include <cuda_runtime.h>\nstruct Gpu { cudaDeviceProp prop; };\n"
    mine = "#pragma once\nstruct Mine { int clockRate; };\nstruct Gpu { Mine prop; };\n"
    mine = mine.replace("};\n", "};" + " " * (len(cuda) - len(mine)) + "\n", 1)  # the same size
    assert len(mine) == len(cuda)
    header.write_text(cuda)
    src.write_text('#include "gpu.cuh"\nint f(Gpu &g) { return g.prop.clockRate; }\n')
    t = header.stat().st_mtime_ns
    engines = Engines()
    assert [f.rule_id for f in analyse(engines, src, src.read_text()).findings] == ["CM503"]
    header.write_text(mine)
    os.utime(header, ns=(t, t))  # the second save in the same tick
    assert coarse(header) == (t // 2_000_000_000 * 2_000_000_000, len(cuda), coarse(header)[2])
    assert analyse(engines, src, src.read_text()).findings == []


def test_incremental_line_index_equals_a_full_one():
    """Edits that join or split CR LF pairs, at the start, middle and end: the line index kept by each edit
    is the one found from scratch."""
    import random

    rnd = random.Random(5)
    buf = Buffer.of("a\r\nb\rc\n")
    for _ in range(2000):
        n = len(buf.data)
        start = rnd.randint(0, n)
        end = min(n, start + rnd.choice([0, 0, 1, 2, 5]))
        buf.edit(start, end, "".join(rnd.choice(["\r", "\n", "\r\n", "x", ""]) for _ in range(rnd.randint(0, 3))))
        assert buf._starts == line_starts(buf.data), buf.data
