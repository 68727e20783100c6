"""Every fix converges: `fix` applied to its own output changes nothing, for every rule.

Synthesized call forms for each rule's API names (after tests/test_catalog_snippets.py): qualified and
unqualified spellings (through `using namespace`, a namespace alias, a leading `::`), parenthesised,
dereferenced and address-of arguments, too few and too many arguments, the name as a type, a value and the
scope of a longer qualified name (`N<int>::max()`), in host code and in a kernel. All rules run together (opt-in
ones included), so one rule's output re-matched by another rule is caught too. A few names per rule keep it fast.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamigrate.scan.engine import Engine, Options
from cudamigrate.fix.apply import fix_bytes

from .helpers import all_rules

RULES = all_rules()
NAMES_PER_RULE = 3
_ENGINE: Engine | None = None


def _engine() -> Engine:
    global _ENGINE
    if _ENGINE is None:
        _ENGINE = Engine(RULES, Options(select=["ALL"], extend_select=[r.id for r in RULES]))
    return _ENGINE


def _spellings(name: str) -> list[tuple[str, str]]:
    """(prelude, spelling) pairs that denote `name`."""
    n = name.replace("::*", "::Foo").replace("*", "Foo")
    out = [("", n)]
    if "::" in n:
        ns, last = n.rsplit("::", 1)
        out += [(f"using namespace {ns};\n", last), ("", f"::{n}"), (f"namespace nsalias_ = {ns};\n", f"nsalias_::{last}"),
                (f"using {n};\n", last)]
    else:
        out.append(("", f"::{n}"))
    return out


ARG_FORMS = [
    lambda i: f"a{i}",
    lambda i: f"(a{i})",
    lambda i: f"*p{i}",
    lambda i: f"&(a{i})",
    lambda i: f"(&a{i})",
    lambda i: f"&*p{i}",
    lambda i: f"s.m{i}",
]


def _statements(rule, name: str, spelling: str) -> list[str]:
    params = rule.spec["names"].get(name) if rule.kind == "call" and isinstance(rule.spec["names"], dict) else None
    counts = sorted({len(params) if params else 1, max(0, (len(params) if params else 1) - 1),
                     (len(params) if params else 1) + 1, 0, 2})
    roles = rule.spec.get("roles", ["call"]) if rule.kind == "identifier" else ["call"]
    out = []
    if "call" in roles:
        for c in counts:
            for form in ARG_FORMS:
                args = ", ".join(form(i) for i in range(c))
                out.append(f"{spelling}({args});")
            out.append(f"int r_ = (int){spelling}({', '.join(f'a{i}' for i in range(c))});")
        out.append(f"if ({spelling}(a0, a1)) {{ x_ = 1; }}")
        out.append(f"{spelling}<int>(a0, a1);")
    if "type" in roles:
        out += [f"{spelling} v_;", f"{spelling}<int> v_;", f"typename {spelling}::type v_;",
                f"{spelling}<int>::type v_;", f"x_ = {spelling}<int>::max();", f"{spelling}* p_ = 0;"]
    if "value" in roles:
        out += [f"int v_ = (int){spelling};", f"auto v_ = {spelling};", f"x_ = ({spelling});", f"f_(&{spelling});"]
    return out


def _program(rule) -> str:
    parts = ["#include <cuda_runtime.h>\n"]
    names = list(rule.spec["names"])[:NAMES_PER_RULE]
    k = 0
    for name in names:
        for prelude, spelling in _spellings(name):
            # every statement in host code, and in a kernel too for the plain spelling
            for where in ("void", "__global__ void") if not prelude and not spelling.startswith("::") else ("void",):
                k += 1
                body = "".join(f"  {{ {st} }}\n" for st in _statements(rule, name, spelling))
                parts.append(f"{prelude}{where} fn{k}_(int a0, int a1, int a2, int a3, int a4, int* p0, int* p1, "
                             f"int* p2, int* p3, S s) {{\n{body}}}\n")
    return "".join(parts)


NAMED = [r for r in RULES if r.kind in ("call", "identifier")]


def _converges(code: bytes) -> tuple[bytes, bytes, list[str]]:
    """(fix(code), fix(fix(code)), the rules that fix_bytes had to withdraw for not converging)."""
    eng = _engine()
    once = fix_bytes(eng, Path("conv.cu"), code, "conv.cu", unsafe=True)
    twice = fix_bytes(eng, Path("conv.cu"), once.fixed, "conv.cu", unsafe=True)
    stuck = [e for e in once.errors + twice.errors if "does not converge" in e]
    return once.fixed, twice.fixed, stuck


def _first_diff(a: bytes, b: bytes) -> str:
    al, bl = a.decode(errors="replace").splitlines(), b.decode(errors="replace").splitlines()
    for x, y in zip(al, bl):
        if x != y:
            return f"{x!r}\n  -> {y!r}"
    return f"length {len(al)} -> {len(bl)} lines"


@pytest.mark.parametrize("rule", NAMED, ids=[r.id for r in NAMED])
def test_fix_converges_on_generated_forms(rule):
    once, twice, stuck = _converges(_program(rule).encode())
    assert once == twice, f"{rule.id}: a second fix changes the output:\n{_first_diff(once, twice)}"
    # fix_bytes withdraws a rule that feeds on its own output; the rules themselves must not need that
    assert not stuck, stuck


# inputs reported in issue 15 and the forms behind them
CASES = {
    "using-namespace-thrust-numeric-limits": b"#include <thrust/device_vector.h>\nusing namespace thrust;\n"
                                             b"int f() { return numeric_limits<int>::max(); }\n",
    "cublas-create-unbalanced": b'cublasCreate(("");\n',
    "memcpy-async-broken-args": b"cudaMemcpyAsync(,(),p{d)\n",
    "warp-any-unbalanced": b"void f() { y = cub::WARP_ANY(v t(f());=a; }\n",
    "warp-any-open": b"void f() { int y = cub::WARP_ANY(v\n}\nvoid g() { int z = 1; }\n",
}


@pytest.mark.parametrize("code", list(CASES.values()), ids=list(CASES))
def test_fix_converges_on_reported_inputs(code):
    once, twice, stuck = _converges(code)
    assert once == twice, _first_diff(once, twice)
    assert not stuck, stuck
