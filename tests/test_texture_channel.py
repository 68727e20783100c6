"""`ref.channelDesc` once the reference is a texture object (match/texture_channel.py): a read becomes
`cudaCreateChannelDesc<T>()`, its address the address of a static copy (never `&` of a temporary), and a call
that writes it makes the reference manual. The whole program is in fixtures/texture/CM601-texture-reference--
channel-desc-address (compiled and run by the fixture tests)."""

from __future__ import annotations

from .helpers import fix_code, scan_code

RULES = ["CM601", "CM602", "CM603"]
HEAD = "texture<float, 2, cudaReadModeElementType> tex;\n__global__ void k(float *o) { o[0] = tex2D(tex, 0.5f, 0.5f); }\n"


def test_a_read_becomes_the_descriptor_and_an_address_a_static_copy():
    code = HEAD + ("void f(cudaArray_t *a) {\n  cudaChannelFormatDesc c = tex.channelDesc;\n"
                   "  cudaMallocArray(a, &tex.channelDesc, 4, 4);\n  cudaBindTextureToArray(tex, *a, c);\n}\n")
    out = fix_code(code, RULES)
    assert "cudaChannelFormatDesc c = cudaCreateChannelDesc<float>();" in out
    assert ("cudaMallocArray(a, [] { static const cudaChannelFormatDesc d = cudaCreateChannelDesc<float>(); "
            "return &d; }(), 4, 4);") in out
    assert "&cudaCreateChannelDesc" not in out


def test_a_call_writing_the_descriptor_leaves_the_reference_manual():
    code = HEAD + "void f(cudaArray_t a) {\n  cudaGetChannelDesc(&tex.channelDesc, a);\n  cudaBindTextureToArray(tex, a);\n}\n"
    found = [f for f in scan_code(code, RULES) if f.rule_id == "CM601"]
    assert found and all(f.applicability == "manual" for f in found)
    assert any("written by `cudaGetChannelDesc`" in f.message for f in found)
    assert fix_code(code, RULES) == code
