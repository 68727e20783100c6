"""The fix applier: byte preservation, conflicts, fixed point, refusal of broken results."""

from __future__ import annotations

from pathlib import Path

from cudamigrate.findings.model import Edit
from cudamigrate.fix.apply import apply_edits, fix_bytes

from .helpers import engine_for

P = Path("t.cu")


# The engine mechanics below use the legacy-stream rules' edits. Those rules fire only where the legacy stream meets
# another blocking stream (SIDE, a file-scope stream, makes a snippet such code) and their edits are display-only,
# so the tests apply them the way `fix --select CM101 --apply-display-only` would.
SIDE = b"cudaStream_t side;\n"
STREAM_SUGGESTIONS = frozenset({"CM101", "CM102", "CM103", "CM104", "CM211"})


def fix(data: bytes, **kw) -> bytes:
    eng = engine_for(select=kw.pop("select", None))
    return fix_bytes(eng, P, data, "t.cu", unsafe=True, display_only=STREAM_SUGGESTIONS).fixed


def test_crlf_tabs_bom_comments_preserved():
    src = (b"\xef\xbb\xbf#include <cuda_runtime.h>\r\n"
           b"int main() {\r\n"
           b"\tfloat *d;  \r\n"
           b"\tcudaMemsetAsync(d, 0, 4, /* s */ 0);   // trailing  \r\n"
           b"\treturn 0;\r\n}\r\ncudaStream_t side;\r\n")
    out = fix(src)
    assert out == src.replace(b"/* s */ 0)", b"/* s */ cudaStreamPerThread)")


def test_multiline_insertion_uses_file_newlines():
    src = b"int main() {\r\n  k<<<1,\r\n      2>>>(x);\r\n}\r\ncudaStream_t side;\r\n"
    out = fix(src)
    # arguments written one per line get the appended ones on a new line, with the file's CRLF
    assert out == b"int main() {\r\n  k<<<1,\r\n      2,\r\n      0, cudaStreamPerThread>>>(x);\r\n}\r\ncudaStream_t side;\r\n"


def test_overlapping_edits_resolved_deterministically():
    data = b"abcdef"
    out, applied = apply_edits(data, [[Edit(1, 3, "X")], [Edit(2, 4, "Y")], [Edit(4, 5, "Z")]])
    assert out == b"aXdZf" and applied == [0, 2]
    # identical edits from two findings are applied once
    out, applied = apply_edits(data, [[Edit(1, 2, "Q")], [Edit(1, 2, "Q")]])
    assert out == b"aQcdef" and applied == [0, 1]
    # two insertions at one point with different text conflict; the first wins
    out, applied = apply_edits(data, [[Edit(3, 3, "1")], [Edit(3, 3, "2")]])
    assert out == b"abc1def" and applied == [0]


def test_group_is_all_or_nothing():
    out, applied = apply_edits(b"abcdef", [[Edit(0, 1, "A")], [Edit(0, 1, "B"), Edit(5, 6, "F")]])
    assert out == b"Abcdef" and applied == [0]


def test_nested_calls_both_fixed():
    src = SIDE + b"int main(){ k<<<g, b, 0, 0>>>(x); cudaMemsetAsync(p, 0, n, cudaMemsetAsync(q, 0, n, 0)); }\n"
    out = fix(src)
    assert out == src.replace(b"0, 0>>>", b"0, cudaStreamPerThread>>>").replace(b"n, 0))", b"n, cudaStreamPerThread))")


def test_fix_refused_when_result_has_more_syntax_errors(tmp_path):
    from cudamigrate.scan.engine import Engine, Options
    from cudamigrate.knowledge.load import load_rules

    rd = tmp_path / "r"
    rd.mkdir()
    (rd / "CM9100-break.yaml").write_text(
        "id: CM9100\nname: breaker\nfamily: test\nsummary: s\nmessage: m\nseverity: info\n"
        "match: {call: {names: [cudaFree]}}\nfix: {applicability: safe, edits: [{replace: node, with: 'cudaFree((('}]}\n"
        "references: [test]\n")
    eng = Engine(load_rules([rd]).rules, Options())
    src = b"int main() { cudaFree(p); return 0; }\n"
    res = fix_bytes(eng, P, src, "t.cu")
    assert res.fixed == src
    assert any("fix refused" in e for e in res.errors)


def test_macro_body_calls_are_found_and_fixed():
    src = (b"#define SYNC_COPY(d, h, n) \\\n"
           b"  cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, 0)\n"
           b"int main() { return 0; }\n" + SIDE)
    eng = engine_for()
    res = eng.scan_bytes(P, src)
    assert [(f.rule_id, f.line, f.context.get("macro")) for f in res.findings] == [("CM101", 2, "SYNC_COPY")]
    out = fix(src)
    assert b"cudaMemcpyHostToDevice, cudaStreamPerThread)" in out and out.count(b"\\\n") == 1


def test_broken_syntax_still_scanned():
    src = SIDE + b"int main() { cudaMemsetAsync(d, 0, 4, 0); if ( {\n"
    eng = engine_for()
    assert [f.rule_id for f in eng.scan_bytes(P, src).findings] == ["CM101"]


def test_file_without_keywords_is_not_parsed():
    eng = engine_for()
    res = eng.scan_bytes(P, b"int main() { return 0; }\n")
    assert res.skipped and not res.findings


def test_code_under_if_0_is_not_reported_but_its_else_is():
    src = b"#if 0\nvoid a() { cudaMemsetAsync(d, 0, 4, 0); }\n#else\nvoid b() { cudaMemsetAsync(d, 0, 4, 0); }\n#endif\n" + SIDE
    eng = engine_for()
    assert [f.line for f in eng.scan_bytes(P, src).findings] == [4]


def test_a_failing_rule_template_is_reported_not_raised(tmp_path):
    from cudamigrate.scan.engine import Engine, Options
    from cudamigrate.knowledge.load import load_rules

    rd = tmp_path / "r"
    rd.mkdir()
    (rd / "CM9101-bad-template.yaml").write_text(
        "id: CM9101\nname: bad-template\nfamily: test\nsummary: s\nseverity: info\n"
        "message: \"{{ text[text.index('zzz'):] }}\"\nmatch: {call: {names: [cudaFree]}}\nreferences: [test]\n")
    eng = Engine(load_rules([rd]).rules, Options())
    res = eng.scan_bytes(P, b"int main() { cudaFree(p); return 0; }\n")
    assert res.findings == []
    assert any("CM9101" in e and "ValueError" in e for e in res.errors)
