"""A texture reference shared by several files migrates in all of them or in none.

fixtures/texture/project-blocked: textures.cuh declares texScale and texLut. texScale is read in
kernels.cu and bound there: it migrates (declaration, read, bind). texLut is read in kernels.cu too,
but tables.cu returns it by reference from a helper (`texture<...> &get_ref(void)`) and binds it
through a macro: those cannot be rewritten, so its declaration and its read in kernels.cu must stay
as they are (a migrated declaration would break tables.cu, a migrated read would break against the
old declaration), and every finding of texLut names the blocking file.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FIXTURES

PROJECT = FIXTURES / "texture" / "project-blocked"
RULES = "CM601,CM602,CM603"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudamigrate", *args], capture_output=True, text=True)


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "project"
    shutil.copytree(PROJECT, dst)
    return dst


def test_blocked_reference_is_manual_in_every_file(tmp_path):
    proj = _copy(tmp_path)
    res = _cli("scan", "--select", RULES, "--format", "json", str(proj))
    import json

    found = json.loads(res.stdout)["findings"]
    lut = [f for f in found if "`texLut`" in f["message"]]
    assert {Path(f["path"]).name for f in lut} == {"textures.cuh", "kernels.cu", "tables.cu"}
    assert all(f["applicability"] == "manual" for f in lut)
    for f in lut:
        if Path(f["path"]).name != "tables.cu":
            assert "tables.cu:4:" in f["message"], f["message"]  # the blocking site is named
    get_ref = [f for f in found if "return type of `get_ref`" in f["message"]]
    assert len(get_ref) == 2 and all(f["applicability"] == "manual" for f in get_ref)  # no crash, reported
    scale = [f for f in found if "`texScale`" in f["message"]]
    assert scale and all(f["applicability"] == "unsafe" for f in scale)


def test_fix_migrates_the_free_reference_only_and_converges(tmp_path):
    proj = _copy(tmp_path)
    res = _cli("fix", "--unsafe-fixes", "--select", RULES, str(proj))
    assert "matcher error" not in res.stderr and "Traceback" not in res.stderr, res.stderr
    hdr = (proj / "textures.cuh").read_text()
    assert "texture<unsigned short, 2, cudaReadModeElementType> texLut;" in hdr
    assert "__constant__ cudaTextureObject_t texScale;" in hdr
    kern = (proj / "kernels.cu").read_text()
    assert "tex2D(texLut, i % 4, 0)" in kern and "tex1Dfetch<float>(texScale, i)" in kern
    assert (proj / "tables.cu").read_text() == (PROJECT / "tables.cu").read_text()
    once = {p.name: p.read_bytes() for p in proj.iterdir()}
    _cli("fix", "--unsafe-fixes", "--select", RULES, str(proj))
    assert {p.name: p.read_bytes() for p in proj.iterdir()} == once


def test_if_else_declarations_and_macro_binds_are_manual(tmp_path):
    (tmp_path / "tex.cuh").write_text(
        "#pragma once\n#ifdef USE_SHORT\ntexture<unsigned short, 2, cudaReadModeNormalizedFloat> texImg;\n#else\n"
        "texture<unsigned char, 2, cudaReadModeNormalizedFloat> texImg;\n#endif\n")  # element types differ
    (tmp_path / "k.cu").write_text(
        '#include "tex.cuh"\n__global__ void k(float *o) { o[0] = tex2D(texImg, 0.5f, 0.5f); }\n'
        "void bind(cudaArray_t a) { cudaBindTextureToArray(texImg, a); }\n")
    before = {p.name: p.read_text() for p in tmp_path.iterdir()}
    res = _cli("scan", "--select", RULES, str(tmp_path))
    assert "declared 2 times with different types or settings (lines 3, 5" in res.stdout and "[~]" not in res.stdout and "[*]" not in res.stdout
    _cli("fix", "--unsafe-fixes", "--select", RULES, str(tmp_path))
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == before


def test_assigned_channel_desc_with_a_bind_taking_the_reference_descriptor_is_manual(tmp_path):
    """`tex.channelDesc = d;` then the template bind without a descriptor: the bind used the assigned
    descriptor, which the object form cannot take from the reference: manual, nothing changes."""
    src = ("texture<float, 1, cudaReadModeElementType> texA;\n"
           "__global__ void k(float *o) { o[0] = tex1Dfetch(texA, 0); }\n"
           "void bind(const float *d, cudaChannelFormatDesc f) {\n"
           "  texA.channelDesc = f;\n  cudaBindTexture(0, texA, d, 64);\n}\n")
    (tmp_path / "a.cu").write_text(src)
    res = _cli("scan", "--select", RULES, str(tmp_path))
    assert "its `channelDesc` is assigned (line 4) and the bind at line 5 takes the descriptor" in res.stdout, res.stdout
    _cli("fix", "--unsafe-fixes", "--select", RULES, str(tmp_path))
    assert (tmp_path / "a.cu").read_text() == src


def test_angle_bracket_include_of_a_project_file_links_declaration_and_uses(tmp_path):
    """`#include <kern.cu>` (found through -I) is followed when it names a file of the run: the reference it
    declares is blocked by a bind through a macro in the including file, so neither file changes."""
    (tmp_path / "kern.cu").write_text(
        "#include <stdio.h>\ntexture<char, 1, cudaReadModeElementType> qry;\n"
        "__global__ void k(char *o) { o[0] = tex1Dfetch(qry, 0); }\n")
    (tmp_path / "main.cu").write_text(
        "#include <stdio.h>\n#include <kern.cu>\n"
        "#define BIND_TEX(t, p, n) do { cudaBindTexture(0, t, p, n); } while (0)\n"
        "void bind(const char *d) { BIND_TEX(qry, d, 16); }\n")
    before = {p.name: p.read_text() for p in tmp_path.iterdir()}
    res = _cli("scan", "--select", RULES, str(tmp_path))
    assert "[~]" not in res.stdout and "kern.cu:2:" in res.stdout and "main.cu:4: it is passed to `BIND_TEX`" in res.stdout, res.stdout
    assert "in macro `BIND_TEX` binds its parameter `t`" in res.stdout
    _cli("fix", "--unsafe-fixes", "--select", RULES, str(tmp_path))
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == before


def test_assigned_channel_desc_as_an_unbraced_if_body_becomes_an_empty_statement(tmp_path):
    src = ("texture<float, 1, cudaReadModeElementType> texA;\n"
           "__global__ void k(float *o) { o[0] = tex1Dfetch(texA, 0); }\n"
           "void bind(const float *d, cudaChannelFormatDesc f, bool set) {\n"
           "  if (set)\n    texA.channelDesc = f;\n  cudaBindTexture(0, texA, d, f, 64);\n}\n")
    (tmp_path / "a.cu").write_text(src)
    res = _cli("fix", "--unsafe-fixes", "--select", RULES, str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    out = (tmp_path / "a.cu").read_text()
    assert "  if (set)\n    ;\n  cudamigrateBindTexture(0, &texA_obj, &texA, d, f, 64, &texA_desc);" in out, out


_SORT = """#include <cuda_runtime.h>
texture<float4, 1, cudaReadModeElementType> tex;
__global__ void k(float4 *o) { o[0] = tex1Dfetch(tex, 0); }
void bind(const float4 *d, size_t n) { cudaBindTexture(0, tex, d, n); }
"""
# another program of the same tree: its macros' parameter is named `tex` too, and binds or reads what is passed
_MATCH = """#include <cuda_runtime.h>
#define BIND_TEX(tex, p, n) cudaBindTexture(0, tex, p, n)
#define FETCH(tex, i) tex1Dfetch(tex, i)
texture<char, 1, cudaReadModeElementType> qrytex;
__global__ void q(char *o) { o[0] = FETCH(qrytex, 0); }
void bind_q(const char *d, size_t n) { BIND_TEX(qrytex, d, n); }
"""


def test_a_macro_parameter_is_no_reference_of_another_program(tmp_path):
    """A macro's parameter named like a reference elsewhere (`tex`) is no reference: its manual CM603 finding
    must not withhold the migration of an unrelated `texture<> tex` in another file of the run (found on
    Rodinia: mummergpu's BIND_TEX(tex, ...) withheld hybridsort's `tex`)."""
    (tmp_path / "sort").mkdir()
    (tmp_path / "match").mkdir()
    (tmp_path / "sort" / "sort.cu").write_text(_SORT)
    (tmp_path / "match" / "match.cu").write_text(_MATCH)
    alone = _cli("fix", "--unsafe-fixes", "--no-verify", "--diff", "--select", RULES, str(tmp_path / "sort"))
    both = _cli("fix", "--unsafe-fixes", "--no-verify", "--diff", "--select", RULES, str(tmp_path))
    assert "cudaTextureObject_t tex" in alone.stdout, alone.stdout + alone.stderr
    assert "cudaTextureObject_t tex" in both.stdout, both.stdout + both.stderr
    assert "withheld" not in both.stdout + both.stderr


_BLOCKED_TEX = """#include <cuda_runtime.h>
texture<float4, 1, cudaReadModeElementType> tex;
texture<float4, 1, cudaReadModeElementType> &get_ref(void) { return tex; }
__global__ void k2(float4 *o) { o[0] = tex1Dfetch(tex, 0); }
void linear() { get_ref().filterMode = cudaFilterModeLinear; }
"""  # an attribute set through the getter: not a use texture_getters.py migrates, so `tex` stays
_UNSEEN_TEX = """#include <cuda_runtime.h>
void bind_elsewhere(const float4 *d, size_t n) { cudaBindTexture(0, tex, d, n); }
"""


def _two_programs(tmp_path: Path, other: str) -> Path:
    for d, text in (("sort", _SORT), ("other", other)):
        (tmp_path / d).mkdir()
        (tmp_path / d / f"{d}.cu").write_text(text)
    return tmp_path


def test_a_reference_is_known_by_its_declaring_file_not_its_name(tmp_path):
    """Two programs of one run each declare their own `texture<> tex`: the one another file cannot rewrite
    (returned by reference from a helper) does not withhold the other (consistency groups `tex@<declaring file>`)."""
    root = _two_programs(tmp_path, _BLOCKED_TEX)
    res = _cli("fix", "--unsafe-fixes", "--no-verify", "--select", RULES, str(root))
    assert "Traceback" not in res.stderr, res.stderr
    assert "cudaTextureObject_t tex" in (root / "sort" / "sort.cu").read_text(), res.stderr
    assert (root / "other" / "other.cu").read_text() == _BLOCKED_TEX
    again = _cli("fix", "--unsafe-fixes", "--no-verify", "--diff", "--select", RULES, str(root))
    assert again.stdout == ""  # converged


def test_a_use_whose_declaration_is_not_seen_holds_back_every_reference_of_its_name(tmp_path):
    """A bind of `tex` in a file that sees no declaration of it, and that another file of the run includes, may
    be of any `tex` of the run (a file included after the declaration elsewhere): while it stays, no `tex` is
    migrated, and the note names it."""
    root = _two_programs(tmp_path, _UNSEEN_TEX)
    (root / "other" / "main.cu").write_text('#include "other.cu"\nint main() { return 0; }\n')
    res = _cli("fix", "--unsafe-fixes", "--no-verify", "--select", RULES, str(root))
    assert (root / "sort" / "sort.cu").read_text() == _SORT
    note = next(ln for ln in res.stderr.splitlines() if "fix withheld" in ln)
    stuck, uses = note.split("All")
    assert "`tex` (declared in " in note and "sort.cu): fix withheld" in note, note
    assert "other.cu:2:" in stuck and "sort.cu:2:" in uses and "other.cu:2:" in uses, note


def test_an_unseen_use_no_file_includes_holds_back_nothing(tmp_path):
    """The same bind in a file no file of the run includes shares no translation unit with any declaration:
    the whole-tree fix migrates `sort`'s `tex` as `fix sort/` alone does."""
    root = _two_programs(tmp_path, _UNSEEN_TEX)
    whole = _cli("fix", "--unsafe-fixes", "--no-verify", "--diff", "--select", RULES, str(root))
    alone = _cli("fix", "--unsafe-fixes", "--no-verify", "--diff", "--select", RULES, str(root / "sort"))
    assert "cudaTextureObject_t tex" in whole.stdout and "withheld" not in whole.stderr, whole.stderr
    assert whole.stdout == alone.stdout


# issue 31: two programs of one tree; heat3d is a half-finished port with its own object named like heat2d's reference
_HEAT2D = """#include <cuda_runtime.h>
texture<float, 2> tex_u;
__global__ void step(float *out, int nx) {
  int x = threadIdx.x, y = threadIdx.y;
  out[y * nx + x] = 0.25f * (tex2D(tex_u, x - 1, y) + tex2D(tex_u, x + 1, y));
}
void run(cudaArray *a, float *out) {
  cudaBindTextureToArray(tex_u, a);
  step<<<1, dim3(16, 16)>>>(out, 16);
  cudaUnbindTexture(tex_u);
}
"""
_HEAT3D = """#include <cuda_runtime.h>
static cudaTextureObject_t tex_u;
void bind(cudaArray *a) { cudaBindTextureToArray(tex_u, a); }
"""


def _heat(tmp_path: Path) -> Path:
    for d, text in (("heat2d", _HEAT2D), ("heat3d", _HEAT3D)):
        (tmp_path / d).mkdir()
        (tmp_path / d / f"{d}.cu").write_text(text)
    return tmp_path


def test_a_same_named_variable_of_another_program_does_not_tie_the_reference(tmp_path):
    """heat3d's bind names its own `static cudaTextureObject_t tex_u`, not heat2d's reference: the scan shows
    heat2d's migration as fixable, and the root fix makes it, as `fix heat2d/` does (union of per-program fixes)."""
    root = _heat(tmp_path)
    scan = _cli("scan", "--select", RULES, str(root))
    assert "heat2d.cu:2:19: CM601 [~]" in scan.stdout and "heat3d.cu:3:27: CM603 [ ]" in scan.stdout, scan.stdout
    alone = _cli("fix", "--unsafe-fixes", "--no-verify", "--diff", "--select", RULES, str(root / "heat2d"))
    res = _cli("fix", "--unsafe-fixes", "--no-verify", "--select", RULES, str(root))
    assert "withheld" not in res.stderr, res.stderr
    assert "__constant__ cudaTextureObject_t tex_u;" in (root / "heat2d" / "heat2d.cu").read_text()
    assert (root / "heat3d" / "heat3d.cu").read_text() == _HEAT3D
    (root / "heat2d" / "heat2d.cu").write_text(_HEAT2D)
    assert _cli("fix", "--unsafe-fixes", "--no-verify", "--diff", "--select", RULES, str(root)).stdout == alone.stdout


@pytest.mark.nvcc
def test_heat2d_fixed_at_the_root_builds(tmp_path):
    from cudamigrate.toolcheck.build import compile_file

    root = _heat(tmp_path)
    _cli("fix", "--unsafe-fixes", "--no-verify", "--select", RULES, str(root))
    built = compile_file(root / "heat2d" / "heat2d.cu", tmp_path / "heat2d.o", arch="sm_75")
    assert built.ok, built.output
