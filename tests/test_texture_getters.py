"""A texture reference handed out by a getter to another file (Parboil's sad: `texture<...> &get_ref(void)` in
sad4.cu, declared in sad4.h, bound in main.cu), migrated with it in every file or in none
(match/migrations/texture_getters.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .helpers import run_cli

FLAGS = ("--unsafe-fixes", "--no-verify", "--no-semantic")
HEADER = """// The lookup table's texture, shared through a getter.
#pragma once

texture<float, 1, cudaReadModeElementType> &lut_ref(void);
void lut_gather(float *out, int n);
"""
DEFINES = """#include "lut.h"

texture<float, 1, cudaReadModeElementType> lut;

__global__ void gather_kernel(float *out) { out[threadIdx.x] = tex1Dfetch(lut, threadIdx.x); }

void lut_gather(float *out, int n) { gather_kernel<<<1, n>>>(out); }

texture<float, 1, cudaReadModeElementType> &lut_ref(void)
{
    return lut;
}
"""
BINDS = """#include <cstdio>
#include "lut.h"

int main()
{
    float h[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
    float *dev = 0, *dout = 0;
    cudaMalloc(&dev, sizeof(h));
    cudaMalloc(&dout, sizeof(out));
    cudaMemcpy(dev, h, sizeof(h), cudaMemcpyHostToDevice);
    cudaBindTexture(0, lut_ref(), dev, sizeof(h));
    lut_gather(dout, 8);
    cudaMemcpy(out, dout, sizeof(out), cudaMemcpyDeviceToHost);
    cudaUnbindTexture(lut_ref());
    printf("%s\\n", out[7] == 8.0f ? "PASS" : "FAIL");
    return 0;
}
"""


def _tree(tmp_path: Path, binds: str = BINDS) -> Path:
    root = tmp_path / "lut"
    root.mkdir()
    (root / "lut.h").write_text(HEADER)
    (root / "lut.cu").write_text(DEFINES)
    (root / "main.cu").write_text(binds)
    return root


def _findings(root: Path) -> list[dict]:
    r = run_cli("scan", "--no-semantic", "--format", "json", "--exit-zero", ".", cwd=root)
    return json.loads(r.stdout)["findings"]


def test_the_getter_and_its_reference_migrate_in_every_file(tmp_path):
    root = _tree(tmp_path)
    before = _findings(root)
    assert sorted((f["path"], f["rule"], f["applicability"]) for f in before) == [
        ("lut.cu", "CM601", "unsafe"), ("lut.cu", "CM601", "unsafe"), ("lut.h", "CM601", "unsafe"),
        ("main.cu", "CM603", "unsafe"), ("main.cu", "CM603", "unsafe")]
    r = run_cli("fix", *FLAGS, ".", cwd=root)
    assert r.exit_code == 0, r.stderr
    header, defines, binds = ((root / n).read_text() for n in ("lut.h", "lut.cu", "main.cu"))
    assert "struct cudamigrateTextureRef {" in header and "cudamigrateTextureRef &lut_ref(void);" in header
    assert "CUDAMIGRATE_TEXOBJ_REF" not in defines  # it includes the header that declares the struct
    assert "cudamigrateTextureRef &lut_ref(void)\n{\n    static cudamigrateTextureRef cudamigrate_ref = {&lut_obj, " \
           "&lut_desc, &lut, cudaCreateChannelDesc<float>()};\n    return cudamigrate_ref;\n}" in defines
    assert "cudamigrateBindTexture(0, lut_ref().obj, lut_ref().symbol, dev, lut_ref().channelDesc, sizeof(h), " \
           "lut_ref().desc);" in binds
    assert "cudamigrateUnbindTexture(lut_ref().obj);" in binds and "#ifndef CUDAMIGRATE_TEXOBJ_HELPERS" in binds
    assert _findings(root) == []
    fixed = {n: (root / n).read_text() for n in ("lut.h", "lut.cu", "main.cu")}
    again = run_cli("fix", *FLAGS, ".", cwd=root)
    assert "Fixed 0 finding(s)" in again.stdout and {n: (root / n).read_text() for n in fixed} == fixed


def test_a_use_the_migration_does_not_take_keeps_every_file(tmp_path):
    root = _tree(tmp_path, BINDS.replace("    cudaBindTexture(", "    lut_ref().filterMode = cudaFilterModePoint;\n"
                                         "    cudaBindTexture("))
    texts = {n: (root / n).read_text() for n in ("lut.h", "lut.cu", "main.cu")}
    assert all(f["applicability"] == "manual" for f in _findings(root))
    run_cli("fix", *FLAGS, ".", cwd=root)
    assert {n: (root / n).read_text() for n in texts} == texts


def test_a_header_outside_the_run_that_declares_the_getter_keeps_every_file(tmp_path):
    root = _tree(tmp_path)
    texts = {n: (root / n).read_text() for n in ("lut.h", "lut.cu", "main.cu")}
    run_cli("fix", *FLAGS, "lut.cu", "main.cu", cwd=root)  # lut.h is not in the run: it could not be rewritten
    assert {n: (root / n).read_text() for n in texts} == texts


@pytest.mark.nvcc
def test_the_migrated_files_build(tmp_path):
    from cudamigrate.toolcheck.build import compile_file

    root = _tree(tmp_path)
    run_cli("fix", *FLAGS, ".", cwd=root)
    for n in ("lut.cu", "main.cu"):
        built = compile_file(root / n, tmp_path / (n + ".o"), arch="sm_75")
        assert built.ok, built.output


def test_one_engine_judges_each_buffer_outside_a_program_on_its_own():
    """A buffer outside any program (one engine scanning many, as `fix -`, the editor and bench/fuzz.py do) is
    judged alone every time: the getter of an earlier buffer, kept under (name, no program), decided a later
    buffer's migration (bench/fuzz.py: a file's findings alone differed from the same file in a batch)."""
    from cudamigrate.core.options import Options
    from cudamigrate.scan.engine import Engine

    from .helpers import all_rules

    root = Path(__file__).resolve().parent.parent
    good = (root / "fixtures/texture/CM601-texture-reference--getter/before.cu").read_bytes()
    # the same getter, but one use the migration cannot rewrite: the getter stays manual
    bad = good.replace(b"cudaChannelFormatDesc desc = samples_ref().channelDesc;",
                       b"texture<float, 1, cudaReadModeElementType> &alias = samples_ref();\n"
                       b"    cudaChannelFormatDesc desc = alias.channelDesc;")
    assert bad != good

    def fixable(eng: Engine, data: bytes) -> list[tuple[str, int, str]]:
        res = eng.scan_bytes(Path("getter.cu"), data)
        return sorted((f.rule_id, f.line, f.applicability) for f in res.findings)

    alone = fixable(Engine(all_rules(), Options()), good)
    assert ("CM601", 10, "manual") not in alone  # the fixture's getter migrates
    eng = Engine(all_rules(), Options())
    assert fixable(eng, bad) != alone
    assert fixable(eng, good) == alone


def test_a_file_of_the_program_the_index_cannot_read_keeps_every_file(tmp_path, monkeypatch):
    """A file of the program whose bytes the project index does not give (over its size limit, unreadable,
    gone) was skipped: the getter migrated though that file's uses were never looked at, and a use the
    migration does not take (`lut_ref().filterMode = ...`) no longer compiled."""
    import cudamigrate.read.project_index as project_index

    binds = BINDS.replace("    cudaBindTexture(", "    lut_ref().filterMode = cudaFilterModePoint;\n    cudaBindTexture(")
    root = _tree(tmp_path, binds + "/* padding */\n" * 100)
    texts = {n: (root / n).read_text() for n in ("lut.h", "lut.cu", "main.cu")}
    # the limit between the other files' sizes and main.cu's: the index gives main.cu's bytes to no matcher
    monkeypatch.setattr(project_index, "MAX_HEADER_BYTES", len(texts["main.cu"]) - 1)
    assert max(len(texts["lut.h"]), len(texts["lut.cu"])) < project_index.MAX_HEADER_BYTES
    run_cli("fix", *FLAGS, "--no-cache", ".", cwd=root)
    assert {n: (root / n).read_text() for n in texts} == texts


@pytest.mark.parametrize("bind", ["cudaBindTexture(0, lut_ref(), dev, desc);",
                                  "cudaBindTexture(0, lut_ref(), dev, lut_ref().channelDesc);"])
def test_a_bind_that_leaves_the_size_to_its_default_keeps_every_file(tmp_path, bind):
    """`cudaBindTexture(offset, get_ref(), ptr, desc)` (4 arguments, the size defaulted): its channel descriptor
    was taken for the size (`cudamigrateBindTexture(..., lut_ref().channelDesc, desc, ...)`, which does not
    compile). It is manual, as for a reference of the file, and so is the reference in every file."""
    root = _tree(tmp_path, BINDS.replace("    cudaBindTexture(0, lut_ref(), dev, sizeof(h));",
                                         "    cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();\n    " + bind))
    texts = {n: (root / n).read_text() for n in ("lut.h", "lut.cu", "main.cu")}
    bound = [f for f in _findings(root) if f["line"] == 12]
    assert [f["applicability"] for f in bound] == ["manual"] and "leaves the size to its default" in bound[0]["message"]
    run_cli("fix", *FLAGS, "--no-cache", ".", cwd=root)
    assert {n: (root / n).read_text() for n in texts} == texts
