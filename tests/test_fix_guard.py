"""The fix guards: no fix on code the parser did not understand, no new syntax error anywhere (per finding,
not per file), no fix at a guessed argument position, and a rule that feeds on its own output is withdrawn."""

from __future__ import annotations

from pathlib import Path

from cudamigrate.scan.engine import Engine, Options
from cudamigrate.fix.apply import apply_edits, fix_bytes
from cudamigrate.fix.guard import errors_of
from cudamigrate.findings.model import Edit
from cudamigrate.knowledge.load import load_rules

from .helpers import all_rules

P = Path("t.cu")


def _all() -> Engine:
    rs = all_rules()
    return Engine(rs, Options(select=["ALL"], extend_select=[r.id for r in rs]))


def _rule_dir(tmp_path, text: str) -> list:
    rd = tmp_path / "r"
    rd.mkdir()
    (rd / "CM9100-test.yaml").write_text(text)
    rs = load_rules([rd])
    assert not rs.errors, rs.errors
    return rs.rules


def test_no_fix_offered_where_the_input_has_a_syntax_error():
    eng = _all()
    for code in (b"void f() { y = cub::WARP_ANY(v t(f());=a; }\n", b"cudaMemcpyAsync(,(),p{d)\n", b'cublasCreate(("");\n'):
        res = eng.scan_bytes(P, code)
        assert all(f.fix is None for f in res.findings), [(f.rule_id, f.fix) for f in res.findings]
        assert fix_bytes(eng, P, code, "t.cu", unsafe=True).fixed == code
    res = eng.scan_bytes(P, b"void f() { y = cub::WARP_ANY(v t(f());=a; }\n")
    assert [f.rule_id for f in res.findings] == ["CM1028"]
    assert "syntax error" in res.findings[0].context.get("fix_blocked", "")


def test_an_unclosed_call_does_not_swallow_the_next_line():
    code = b"void f() {\n  int y = cub::WARP_ANY(v\n}\nvoid g() { int z = 1; }\n"
    out = fix_bytes(_all(), P, code, "t.cu", unsafe=True)
    assert out.fixed == code


def test_the_same_fix_elsewhere_in_a_file_with_an_error_still_applies():
    code = b"void f() { cudaThreadSynchronize(); }\nvoid g() { y = cub::WARP_ANY(v t(f());=a; }\n"
    out = fix_bytes(_all(), P, code, "t.cu", unsafe=True).fixed
    assert b"cudaDeviceSynchronize();" in out and b"cub::WARP_ANY(v t(f());=a;" in out
    assert len(errors_of(out)) == len(errors_of(code))


def test_too_few_arguments_give_a_finding_without_a_fix():
    eng = _all()
    res = eng.scan_bytes(P, b"void f(cudaArray_t a) { cudaMemcpyArrayToArray(a, 0); }\n")
    got = [f for f in res.findings if f.rule_id == "CM1052"]
    # CM1052 is manual now (the array-copy rewrite is wrong for 2-D arrays); what must hold for any rule is
    # a finding without an edit at a guessed position, and no error line (tests/test_convergence.py runs
    # every rule on too-few-argument forms)
    assert got and got[0].fix is None
    assert not res.errors


def test_nested_comment_suppression_gets_a_valid_fix():
    code = b"/* old code /* cudamigrate: ignore[CM101] */\nint x;\n"
    out = fix_bytes(_all(), P, code, "t.cu", unsafe=True)
    assert out.fixed == b"/* old code /* */\nint x;\n" and not out.errors
    assert fix_bytes(_all(), P, out.fixed, "t.cu", unsafe=True).fixed == out.fixed


BREAKER = ("id: CM9100\nname: breaker\nfamily: test\nsummary: s\nmessage: m\nseverity: info\n"
           "match: {call: {names: [cudaFree]}}\nfix: {applicability: safe, edits: [{replace: node, with: 'cudaFree((('}]}\n"
           "references: [test]\n")


def test_a_fix_that_breaks_syntax_is_withdrawn_alone(tmp_path):
    rules = _rule_dir(tmp_path, BREAKER) + [r for r in all_rules() if r.id == "CM501"]
    eng = Engine(rules, Options())
    code = b"int main() { cudaFree(p); cudaThreadSynchronize(); return 0; }\n"
    res = fix_bytes(eng, P, code, "t.cu")
    assert res.fixed == b"int main() { cudaFree(p); cudaDeviceSynchronize(); return 0; }\n"
    assert any("CM9100" in e and "fix refused" in e for e in res.errors)


FEEDER = ("id: CM9100\nname: feeder\nfamily: test\nsummary: s\nmessage: m\nseverity: info\n"
          "match: {call: {names: [cudaFree]}}\n"
          "fix: {applicability: safe, edits: [{insert_after: statement, with: 'cudaFree(0);'}]}\nreferences: [test]\n")


def test_a_rule_feeding_on_its_own_output_is_withdrawn(tmp_path):
    rules = _rule_dir(tmp_path, FEEDER) + [r for r in all_rules() if r.id == "CM501"]
    eng = Engine(rules, Options())
    code = b"int main() {\n  cudaFree(p);\n  cudaThreadSynchronize();\n}\n"
    once = fix_bytes(eng, P, code, "t.cu")
    assert once.fixed == code.replace(b"cudaThreadSynchronize", b"cudaDeviceSynchronize")
    assert any("CM9100" in e and "does not converge" in e for e in once.errors)
    assert fix_bytes(eng, P, once.fixed, "t.cu").fixed == once.fixed


def test_apply_edits_is_a_sweep_with_the_old_semantics():
    data = b"abcdefgh"
    assert apply_edits(data, [[Edit(1, 3, "X")], [Edit(2, 4, "Y")], [Edit(4, 5, "Z")]]) == (b"aXdZfgh", [0, 2])
    assert apply_edits(data, [[Edit(3, 3, "1")], [Edit(3, 3, "1")], [Edit(3, 3, "2")]]) == (b"abc1defgh", [0, 1])
    assert apply_edits(data, [[Edit(2, 4, "")], [Edit(4, 4, "+")], [Edit(1, 2, "-")]]) == (b"a-+efgh", [2, 0, 1])
    # a finding whose own edits overlap is never applied
    assert apply_edits(data, [[Edit(1, 4, "X"), Edit(2, 3, "Y")], [Edit(6, 7, "Z")]]) == (b"abcdefZh", [1])
    # many findings: every other one conflicts with its predecessor
    groups = [[Edit(i, i + 2, "x")] for i in range(0, 4000)]
    out, applied = apply_edits(b"." * 4002, groups)
    assert applied == list(range(0, 4000, 2)) and out == b"x" * 2000 + b".."


def test_identifier_renames_are_checked_with_the_renames_undone():
    """A whole identifier token replaced by another identifier keeps the token stream's shape: tree-sitter's
    recovery around an unexpanded macro may differ with the name's length, which is no new syntax error."""
    from cudamigrate.fix.guard import is_rename

    data = b"M double4 f(const double4 &u);"
    assert is_rename(data, Edit(2, 9, "double4_16a"))
    assert not is_rename(data, Edit(2, 8, "double4_16a"))  # part of a token
    assert not is_rename(data, Edit(2, 9, "struct"))  # a keyword changes what the parser sees
    assert not is_rename(data, Edit(2, 9, "a b"))  # not one identifier
    assert not is_rename(data, Edit(1, 9, "x"))  # the old text is not one identifier
    code = (b"#define HOST_DEVICE_INLINE __host__ __device__ __forceinline__\n"
            b"HOST_DEVICE_INLINE double4 operator+(const double4 &u, const double4 &v)\n"
            b"{ return make_double4(u.x + v.x, u.y + v.y, u.z + v.z, u.w + v.w); }\n")
    eng = Engine(all_rules(), Options(select=["CM511"]))
    out = fix_bytes(eng, P, code, "t.cu")
    assert out.fixed == code.replace(b"double4", b"double4_16a") and not out.errors
