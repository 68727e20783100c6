"""One helper header per project for the texture stand-ins (issue 31): four texture files of one tree fixed
together include one `cudamigrate_texture.h` instead of four copies of the helper block (fix/shared_helpers.py)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from .conftest import FIXTURES
from .helpers import run_cli

PROJECT = FIXTURES / "texture" / "project-shared-helpers"
FILES = ("scale.cu", "lookup.cu", "filters/blur.cu", "filters/edge.cu")
FLAGS = ("--unsafe-fixes", "--no-verify", "--select", "CM601,CM602,CM603")
BLOCK = re.compile(r"\n(// cudamigrate CM601/CM602: stand-ins.*?#endif /\* CUDAMIGRATE_TEXOBJ_HELPERS \*/\n)\n", re.S)


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns("README.md"))
    return root


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def _alone(tmp_path: Path, rel: str) -> str:
    """The file fixed on its own (one file, no header to share: the block stays in it, as before)."""
    one = tmp_path / "alone" / Path(rel).name
    one.parent.mkdir(exist_ok=True)
    shutil.copy(PROJECT / rel, one)
    run_cli("fix", *FLAGS, one)
    return one.read_text()


def test_four_texture_files_include_one_header(tmp_path):
    root = _copy(tmp_path)
    r = run_cli("fix", *FLAGS, ".", cwd=root)
    assert r.exit_code == 0, r.stderr
    assert "fix writes cudamigrate_texture.h, included by 4 file(s) instead of a copy in each" in r.stderr
    tree = _tree(root)
    assert sorted(tree) == sorted([*FILES, "cudamigrate_texture.h"])
    alone = _alone(tmp_path, "filters/blur.cu")
    block = BLOCK.search(alone)
    assert block is not None
    header = tree["cudamigrate_texture.h"]
    assert header == ("// Written by `cudamigrate fix`: included by each file whose migration needs these helpers.\n"
                      + block.group(1).replace("#define CUDAMIGRATE_TEXOBJ_HELPERS\n",
                                                                "#define CUDAMIGRATE_TEXOBJ_HELPERS\n#include <cuda_runtime.h>\n"))
    for rel in FILES:
        text = tree[rel]
        assert "CUDAMIGRATE_TEXOBJ_HELPERS" not in text and "__constant__ cudaTextureObject_t" in text, rel
    assert tree["filters/blur.cu"] == alone.replace(block.group(0), '\n#include "../cudamigrate_texture.h"\n')
    assert '#include <cstdio>\n\n#include "cudamigrate_texture.h"\n\n// cudamigrate CM601: texIn' in tree["scale.cu"]


def test_a_second_fix_changes_nothing_and_a_new_file_reuses_the_header(tmp_path):
    root = _copy(tmp_path)
    run_cli("fix", *FLAGS, ".", cwd=root)
    fixed = _tree(root)
    again = run_cli("fix", *FLAGS, ".", cwd=root)
    assert _tree(root) == fixed and "Fixed 0 finding(s)" in again.stdout and "cudamigrate_texture.h" not in again.stderr
    (root / "filters" / "sharpen.cu").write_text((PROJECT / "filters" / "blur.cu").read_text().replace("texImage", "texSharp"))
    later = run_cli("fix", *FLAGS, "filters/sharpen.cu", cwd=root)
    assert "fix includes cudamigrate_texture.h, included by 1 file(s)" in later.stderr, later.stderr
    text = (root / "filters" / "sharpen.cu").read_text()
    assert '#include "../cudamigrate_texture.h"\n' in text and "CUDAMIGRATE_TEXOBJ_HELPERS" not in text
    assert (root / "cudamigrate_texture.h").read_text() == fixed["cudamigrate_texture.h"]


def test_diff_shows_the_new_header_and_writes_nothing(tmp_path):
    root = _copy(tmp_path)
    before = _tree(root)
    r = run_cli("fix", "--diff", *FLAGS, ".", cwd=root)
    assert _tree(root) == before
    assert r.stdout.startswith("--- /dev/null\n+++ b/cudamigrate_texture.h\n@@ -0,0 +1,")
    assert r.stdout.count('+#include "../cudamigrate_texture.h"') == 2 and r.stdout.count('+#include "cudamigrate_texture.h"') == 2
    assert "fix would write cudamigrate_texture.h" in r.stderr


def test_one_file_keeps_its_block_and_a_foreign_header_of_that_name_is_left_alone(tmp_path):
    root = _copy(tmp_path)
    (root / "cudamigrate_texture.h").write_text("// the project's own file of that name\n")
    run_cli("fix", *FLAGS, ".", cwd=root)
    tree = _tree(root)
    assert tree["cudamigrate_texture.h"] == "// the project's own file of that name\n"
    assert all(tree[rel].count("#ifndef CUDAMIGRATE_TEXOBJ_HELPERS") == 1 for rel in FILES)
    assert _alone(tmp_path, "scale.cu").count("#ifndef CUDAMIGRATE_TEXOBJ_HELPERS") == 1


@pytest.mark.nvcc
def test_the_tree_with_the_shared_header_builds(tmp_path):
    from cudamigrate.toolcheck.build import compile_file

    root = _copy(tmp_path)
    run_cli("fix", "--unsafe-fixes", ".", cwd=root)  # compile-verified (the copies), then shared
    assert (root / "cudamigrate_texture.h").is_file()
    for rel in FILES:
        built = compile_file(root / rel, tmp_path / (Path(rel).stem + ".o"), arch="sm_75")
        assert built.ok, built.output


NPP_FILL = """// Fills an image with NPP without a stream context.
#include <npp.h>

int fill(Npp8u *img, int step, int w, int h)
{
    NppiSize roi = {w, h};
    return nppiSet_8u_C1R(10, img, step, roi) == NPP_SUCCESS ? 0 : 1;
}
"""


def _npp_tree(tmp_path: Path) -> Path:
    root = tmp_path / "npp"
    (root / "sub").mkdir(parents=True)
    (root / "fill.cpp").write_text(NPP_FILL)
    (root / "sub" / "fill2.cpp").write_text(NPP_FILL.replace("int fill(", "int fill2("))
    return root


def test_the_npp_stream_context_helper_is_shared_the_same_way(tmp_path):
    root = _npp_tree(tmp_path)
    r = run_cli("fix", "--unsafe-fixes", "--no-verify", "--select", "CM540", ".", cwd=root)
    assert "note: CM540: the NPP stream context helpers are in one header: fix writes cudamigrate_npp.h, included by " \
           "2 file(s)" in r.stderr, r.stderr
    tree = _tree(root)
    assert tree["sub/fill2.cpp"].startswith('// Fills an image with NPP without a stream context.\n#include <npp.h>\n\n'
                                            '#include "../cudamigrate_npp.h"\n\nint fill2(')
    assert "nppiSet_8u_C1R_Ctx(10, img, step, roi, cudamigrateNppCtx)" in tree["fill.cpp"]
    assert all("#ifndef CUDAMIGRATE_NPP_STREAM_CONTEXT" not in tree[f] for f in ("fill.cpp", "sub/fill2.cpp"))
    assert tree["cudamigrate_npp.h"].count("#ifndef CUDAMIGRATE_NPP_STREAM_CONTEXT") == 1
    assert "#define CUDAMIGRATE_NPP_STREAM_CONTEXT\n#include <cuda_runtime.h>\n#include <nppdefs.h>\n" in tree["cudamigrate_npp.h"]
    run_cli("fix", "--unsafe-fixes", "--no-verify", "--select", "CM540", ".", cwd=root)
    assert _tree(root) == tree  # the helper in an included header: nothing added the second time


@pytest.mark.nvcc
def test_the_npp_files_with_the_shared_header_build(tmp_path):
    from cudamigrate.toolcheck.build import compile_file

    root = _npp_tree(tmp_path)
    run_cli("fix", "--unsafe-fixes", "--no-verify", "--select", "CM540", ".", cwd=root)
    for rel in ("fill.cpp", "sub/fill2.cpp"):
        built = compile_file(root / rel, tmp_path / (Path(rel).stem + ".o"), libs=["npp"], arch="sm_75")
        assert built.ok, built.output


LATE = """// Linear filtering chosen after the bind: the fix re-creates the object after the attribute writes.
#include <cstdio>

texture<float, 1, cudaReadModeElementType> texLate;

__global__ void halfway(float *out) { out[threadIdx.x] = tex1D(texLate, threadIdx.x + 1.0f); }

int run(cudaArray *arr, float *out)
{
    cudaBindTextureToArray(texLate, arr);
    texLate.filterMode = cudaFilterModeLinear;
    halfway<<<1, 4>>>(out);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
"""


def _late_tree(tmp_path: Path) -> Path:
    root = tmp_path / "late"
    (root / "sub").mkdir(parents=True)
    (root / "a.cu").write_text(LATE)
    (root / "sub" / "b.cu").write_text(LATE.replace("texLate", "texOther").replace("int run(", "int run_b("))
    shutil.copy(PROJECT / "scale.cu", root / "scale.cu")  # no attribute after its bind: no update helper
    return root


def test_the_update_helper_rides_into_the_shared_header(tmp_path):
    root = _late_tree(tmp_path)
    r = run_cli("fix", *FLAGS, ".", cwd=root)
    assert r.exit_code == 0, r.stderr
    tree = _tree(root)
    header = tree["cudamigrate_texture.h"]
    assert header.count("#ifndef CUDAMIGRATE_TEXOBJ_UPDATE") == 1
    assert header.index("#endif /* CUDAMIGRATE_TEXOBJ_HELPERS */\n\n#ifndef CUDAMIGRATE_TEXOBJ_UPDATE\n") > 0
    assert header.endswith("#endif /* CUDAMIGRATE_TEXOBJ_UPDATE */\n")
    for rel in ("a.cu", "sub/b.cu", "scale.cu"):
        assert "#define CUDAMIGRATE_TEXOBJ_" not in tree[rel], rel
    assert '#include <cstdio>\n\n#include "../cudamigrate_texture.h"\n\n// cudamigrate CM601: texOther' in tree["sub/b.cu"]
    assert "texOther_desc.filterMode = cudaFilterModeLinear;\n    cudamigrateUpdateTexture(&texOther_obj, &texOther, " \
           "&texOther_desc);\n" in tree["sub/b.cu"]
    assert tree["scale.cu"] == _alone(tmp_path, "scale.cu").replace(BLOCK.search(_alone(tmp_path, "scale.cu")).group(0),
                                                                    '\n#include "cudamigrate_texture.h"\n')
    again = run_cli("fix", *FLAGS, ".", cwd=root)
    assert _tree(root) == tree and "Fixed 0 finding(s)" in again.stdout
    (root / "c.cu").write_text(LATE.replace("texLate", "texThird").replace("int run(", "int run_c("))
    run_cli("fix", *FLAGS, "c.cu", cwd=root)  # the header holds the update helper: no copy in the new file
    third = (root / "c.cu").read_text()
    assert '#include "cudamigrate_texture.h"\n' in third and "CUDAMIGRATE_TEXOBJ_" not in third
    assert "cudamigrateUpdateTexture(&texThird_obj" in third


@pytest.mark.nvcc
def test_a_file_with_the_update_helper_in_the_shared_header_builds(tmp_path):
    from cudamigrate.toolcheck.build import compile_file

    root = _late_tree(tmp_path)
    run_cli("fix", *FLAGS, ".", cwd=root)
    built = compile_file(root / "sub" / "b.cu", tmp_path / "b.o", arch="sm_75")
    assert built.ok, built.output


def test_a_buffer_from_stdin_includes_the_projects_header_and_writes_nothing(tmp_path):
    from click.testing import CliRunner

    from cudamigrate.cli.main import main

    root = _copy(tmp_path)
    run_cli("fix", *FLAGS, ".", cwd=root)
    tree = _tree(root)
    source = (PROJECT / "filters" / "blur.cu").read_text().replace("texImage", "texSharp")
    old = os.getcwd()
    os.chdir(root)
    try:
        r = CliRunner().invoke(main, ["fix", "-", "--stdin-filename", "filters/sharpen.cu", *FLAGS], input=source)
    finally:
        os.chdir(old)
    assert r.exit_code == 0, r.output
    assert '#include "../cudamigrate_texture.h"\n' in r.stdout and "CUDAMIGRATE_TEXOBJ_HELPERS" not in r.stdout
    assert "__constant__ cudaTextureObject_t texSharp;" in r.stdout
    assert _tree(root) == tree  # nothing written, no file added
    alone = tmp_path / "alone"
    alone.mkdir()
    os.chdir(alone)
    try:  # no header in the project: the buffer keeps its copy (nothing is written for a buffer)
        r = CliRunner().invoke(main, ["fix", "-", "--stdin-filename", "sharpen.cu", *FLAGS], input=source)
    finally:
        os.chdir(old)
    assert "#ifndef CUDAMIGRATE_TEXOBJ_HELPERS" in r.stdout and list(alone.iterdir()) == []


def test_a_header_that_cannot_be_written_leaves_its_copies_and_the_next_kind_is_still_shared(tmp_path, monkeypatch):
    import errno

    import cudamigrate.fix.write as write

    root = _copy(tmp_path)
    npp = _npp_tree(tmp_path)
    shutil.move(str(npp), str(root / "npp"))
    real_write_new = write.write_new

    def refuse_texture(path, data):
        if os.path.basename(path) == "cudamigrate_texture.h":
            raise OSError(errno.EACCES, "Permission denied")
        return real_write_new(path, data)

    monkeypatch.setattr(write, "write_new", refuse_texture)
    r = run_cli("fix", "--unsafe-fixes", "--no-verify", "--select", "CM540,CM601,CM602,CM603", ".", cwd=root)
    assert "cudamigrate_texture.h: cannot write: Permission denied; each file keeps its own copy of the texture " \
           "helpers" in r.stderr, r.stderr
    assert "fix writes npp/cudamigrate_npp.h, included by 2 file(s)" in r.stderr, r.stderr
    tree = _tree(root)
    assert "cudamigrate_texture.h" not in tree and "npp/cudamigrate_npp.h" in tree
    assert all(tree[rel].count("#ifndef CUDAMIGRATE_TEXOBJ_HELPERS") == 1 for rel in FILES)
    assert all('#include "' in tree[f] and "#ifndef CUDAMIGRATE_NPP_STREAM_CONTEXT" not in tree[f]
               for f in ("npp/fill.cpp", "npp/sub/fill2.cpp"))


def test_without_new_headers_only_a_header_the_project_has_is_used(tmp_path):
    """fix_buffer's mode: a kind is shared only through an existing header, so a later kind never rests on a header
    nothing writes."""
    from cudamigrate.fix.shared_helpers import share_all

    root = _copy(tmp_path)
    fixed = {os.path.realpath(root / rel): ((root / rel).read_bytes(), _alone(tmp_path, rel).encode())
             for rel in FILES[:2]}
    new = share_all(fixed, [str(root)])
    assert [s.data is not None for s in new] == [True]
    assert share_all(fixed, [str(root)], new_headers=False) == []
    (root / "cudamigrate_texture.h").write_bytes(new[0].data)
    kept = share_all(fixed, [str(root)], new_headers=False)
    assert [(s.header, s.data) for s in kept] == [(str(root / "cudamigrate_texture.h"), None)]
    assert kept[0].files == new[0].files
