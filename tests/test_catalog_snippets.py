"""Every generated catalog rule proves itself on snippets, ast-grep style.

The generator writes ~100 rules from the CUDA API change catalog; `fixtures/catalog/` holds compiled programs
for a sample of them. This test covers each of the rest with synthesized snippets: code in the API's role
(call, type, value, #include) that the rule must flag, lookalikes it must not flag (the name in a comment and
a string, in another namespace, as a method), and, where the rule has an automatic fix, that the fix changes
the code and a second fix changes nothing.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from cudamigrate.scan.engine import Engine, Options
from cudamigrate.fix.apply import fix_bytes

from .helpers import ROOT, all_rules

CATALOG = ROOT / "rules" / "catalog"
RULES = [r for r in all_rules() if CATALOG in r.path.parents]
ARGS = ["a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10", "a11"]


def _concrete(name: str) -> str:
    return name.replace("*", "Foo")


def _names(rule) -> list[str]:
    spec = rule.spec
    if rule.kind == "call":
        return list(spec["names"])
    if rule.kind == "identifier":
        return list(spec["names"])
    return []


def _variants(rule, name: str):
    """Snippets that use `name` the way the rule's matcher looks for it."""
    n = _concrete(name)
    if n.endswith("::Foo") and "::" in n:  # namespace glob: use a member of that namespace
        pass
    roles = rule.spec.get("roles", ["call"]) if rule.kind == "identifier" else ["call"]
    params = rule.spec["names"].get(name) if rule.kind == "call" else None
    counts = [len(params)] if params else []
    counts += [c for c in [1, 2, 3, 0, *range(4, 12)] if c not in counts]
    for where in ("host", "kernel"):
        wrap = ("void host_fn(int a0, int a1, int a2, int a3, int a4, int a5, int a6, int a7, int a8, int a9, int a10, int a11) {\n%s\n}\n"
                if where == "host" else
                "__global__ void kern(int a0, int a1, int a2, int a3, int a4, int a5, int a6, int a7, int a8, int a9, int a10, int a11) {\n%s\n}\n")
        if "call" in roles:
            for c in counts:
                yield wrap % f"  {n}({', '.join(ARGS[:c])});"
                yield wrap % f"  int r_ = (int){n}({', '.join(ARGS[:c])});"
        if "type" in roles:
            yield wrap % f"  {n} v_;"
            yield wrap % f"  {n}<int> v_;"
            yield wrap % f"  typename {n}::type v_;"
            yield f"struct S_ : public {n} {{}};\n"
            yield f"struct T_ : public {n}<int, int> {{}};\n"
        if "value" in roles:
            yield wrap % f"  int v_ = (int){n};"
            yield wrap % f"  auto v_ = {n};"


# Rules whose conditions need more context than a synthesized snippet gives (the cuda::std counterpart in the
# same file, constructor flags): written by hand.
EXPLICIT = {
    "CM1025": ("cub::CachingDeviceAllocator",
               "void f() { auto a = cub::CachingDeviceAllocator(8, 3, 7, 1 << 20, true, false); }\n"),
    "CM1109": ("thrust::pair", "void f() { thrust::pair<int, int> p; cuda::std::pair<int, int> q; }\n"),
    "CM1110": ("thrust::plus", "void f() { auto a = thrust::plus<int>(); auto b = cuda::std::plus<int>(); }\n"),
    "CM1111": ("thrust::tuple", "void f() { thrust::tuple<int, int> t; cuda::std::tuple<int, int> u; }\n"),
}


def _engine(rule):
    # a rule that applies from a release after the default target (13.0) is checked at that release
    since = [tuple(int(x) for x in v.split(".")[:2]) for v in (rule.deprecated_in, rule.removed_in) if v]
    target = max([Options().target, *since])
    return Engine(all_rules(), Options(select=[rule.id], extend_select=[rule.id], target=target))


def _flagged(eng, rule, code: str) -> list:
    res = eng.scan_bytes(Path("snippet.cu"), code.encode())
    return [f for f in res.findings if f.rule_id == rule.id]


def _must_flag(rule) -> tuple[str, str] | None:
    eng = _engine(rule)
    if rule.id in EXPLICIT:
        name, code = EXPLICIT[rule.id]
        return (name, code) if _flagged(eng, rule, code) else None
    if rule.kind == "include":
        paths = rule.spec.get("paths") or [p + "x.h" for p in rule.spec.get("prefixes", [])]
        for p in paths:
            for code in (f"#include <{p}>\nint main() {{ return 0; }}\n",
                         f"#include <{p}>\nvoid f(cublasHandle_t h) {{ cublasSgemm(h); }}\n"):
                if _flagged(eng, rule, code):
                    return p, code
        return None
    for name in _names(rule):
        for code in _variants(rule, name):
            if _flagged(eng, rule, code):
                return name, code
    return None


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_generated_rule_flags_its_api_and_not_lookalikes(rule):
    got = _must_flag(rule)
    if got is None:
        # a rule whose conditions synthesized snippets cannot meet must have a compiled fixture
        used = set()
        for f in (ROOT / "fixtures").rglob("before.*"):
            used |= {x.strip() for m in re.finditer(r"expect:\s*([A-Z0-9, ]+)", f.read_text(errors="replace"))
                     for x in m.group(1).split(",")}
        assert rule.id in used, f"{rule.id}: no snippet triggers it and no fixture expects it"
        return
    name, code = got
    eng = _engine(rule)
    short = _concrete(name).split("::")[-1]
    lookalikes = [
        f"// {short}(1) and {_concrete(name)} in a comment\nint main() {{ return 0; }}\n",
        f'const char* s_ = "{_concrete(name)}(1)";\n',
        f"namespace my {{ int {short}(int); }}\nvoid g() {{ my::{short}(1); }}\n",
        f"struct Obj {{ int {short}(int); }};\nvoid h(Obj o) {{ o.{short}(1); }}\n",
    ]
    for look in lookalikes:
        assert not _flagged(eng, rule, look), f"{rule.id} flags a lookalike:\n{look}"
    if rule.fix_applicability != "manual":
        res = fix_bytes(eng, Path("snippet.cu"), code.encode(), "snippet.cu", unsafe=True)
        if any(f.rule_id == rule.id and f.fix for f in eng.scan_bytes(Path("snippet.cu"), code.encode()).findings):
            assert res.fixed != code.encode(), f"{rule.id}: automatic fix changed nothing"
            again = fix_bytes(eng, Path("snippet.cu"), res.fixed, "snippet.cu", unsafe=True)
            assert again.fixed == res.fixed, f"{rule.id}: fix is not idempotent"
