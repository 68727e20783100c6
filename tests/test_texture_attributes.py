"""Texture attributes written after the bind (issue 31): the reference applied them at the next launch, an object
fixes them when it is created, so the migration creates the object again after the last such write of a block
(`cudamigrateUpdateTexture`); shapes it cannot follow stay manual with the reason. The whole program is the fixture
case texture/CM601-texture-reference--attributes-after-bind (built with nvcc, run on the GPU by selftest --gpu)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamigrate.fix.apply import fix_bytes
from cudamigrate.knowledge.load import builtin_rules_dir, load_rules
from cudamigrate.scan.engine import Engine, Options

HEAD = """#include <cstdio>
texture<float, 2, cudaReadModeElementType> texImg;
__global__ void k(float *o) { o[0] = tex2D(texImg, 0.5f, 0.5f); }
"""
UPDATE = "cudamigrateUpdateTexture(&texImg_obj, &texImg, &texImg_desc);"


@pytest.fixture(scope="module")
def engine() -> Engine:
    rs = load_rules([builtin_rules_dir()])
    return Engine(rs.rules, Options(select=["CM601", "CM602", "CM603"]))


def _fix(engine: Engine, body: str, head: str = HEAD):
    res = fix_bytes(engine, Path("t.cu"), (head + body).encode(), "t.cu", unsafe=True)
    again = fix_bytes(engine, Path("t.cu"), res.fixed, "t.cu", unsafe=True)
    assert again.fixed == res.fixed  # converges
    return res.fixed.decode(), res.remaining


def test_one_update_after_the_last_write_of_each_block(engine):
    out, left = _fix(engine, """void run(cudaArray *a, bool smooth, float *o) {
    cudaBindTextureToArray(texImg, a);
    texImg.normalized = false;
    if (smooth) {
        texImg.filterMode = cudaFilterModeLinear;  // bilinear
        texImg.addressMode[0] = cudaAddressModeClamp;
    }
    k<<<1, 1>>>(o);
}
""")
    assert not left
    assert out.count("#ifndef CUDAMIGRATE_TEXOBJ_UPDATE") == 1 and out.count(UPDATE) == 2
    assert ("    texImg_desc.normalizedCoords = false;\n    " + UPDATE + "\n    if (smooth) {\n") in out
    assert ("        texImg_desc.addressMode[0] = cudaAddressModeClamp;\n        " + UPDATE + "\n    }\n") in out
    assert "cudaFilterModeLinear;  // bilinear\n        texImg_desc.addressMode" in out


def test_writes_before_the_bind_and_reads_after_it_need_no_update(engine):
    out, left = _fix(engine, """void run(cudaArray *a) {
    texImg.filterMode = cudaFilterModeLinear;
    cudaBindTextureToArray(texImg, a);
    printf("%d\\n", (int)texImg.filterMode);
}
""")
    assert not left and "cudamigrateUpdateTexture" not in out and "CUDAMIGRATE_TEXOBJ_UPDATE" not in out
    assert "(int)texImg_desc.filterMode" in out


@pytest.mark.parametrize("body, why", [
    ("    cudaBindTextureToArray(texImg, a);\n    if (smooth) texImg.filterMode = cudaFilterModeLinear;\n",
     "not as a statement of its own"),
    ("    cudaBindTextureToArray(texImg, a);\n    cudaUnbindTexture(texImg);\n    texImg.filterMode = cudaFilterModeLinear;\n",
     "after an unbind"),
])
def test_a_write_the_migration_cannot_follow_stays_manual(engine, body, why):
    out, left = _fix(engine, "void run(cudaArray *a, bool smooth) {\n" + body + "}\n")
    assert out == HEAD + "void run(cudaArray *a, bool smooth) {\n" + body + "}\n"
    [f] = left
    assert f.applicability == "manual" and f"after the reference is bound and is not followed by a new bind, {why}" in f.message


def test_the_update_helper_follows_stand_ins_already_in_the_file(engine):
    """Two references: the first pass writes the stand-ins for one, the next puts the update helper after them."""
    head = HEAD + "texture<float, 2, cudaReadModeElementType> texB;\n"
    out, left = _fix(engine, """void run(cudaArray *a) {
    cudaBindTextureToArray(texB, a);
    cudaBindTextureToArray(texImg, a);
    texImg.filterMode = cudaFilterModeLinear;
}
""", head)
    assert not left
    assert out.count("#ifndef CUDAMIGRATE_TEXOBJ_HELPERS") == 1 and out.count("#ifndef CUDAMIGRATE_TEXOBJ_UPDATE") == 1
    assert out.index("#endif /* CUDAMIGRATE_TEXOBJ_HELPERS */") < out.index("#ifndef CUDAMIGRATE_TEXOBJ_UPDATE")
    assert out.count(UPDATE) == 1 and "cudamigrateUpdateTexture(&texB_obj" not in out
