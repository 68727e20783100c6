"""Semantic mode, matcher side: how the rules consult libclang's facts for one file.

Tree-sitter still finds the byte ranges (so findings and fixes are located in
the file's own bytes); `SemanticContext` refines its answers where libclang knows
better: a call resolved to a user function is dropped, an argument's constant
value is known, a member's receiver type is canonical, and a call expanded from a
macro is reported at the macro use (a fix that would edit a macro definition used
more than once is downgraded to manual). Where libclang has no fact for a location
(inactive `#if` branches, code that did not compile), tree-sitter's answer stands:
semantic mode only ever refines it.

Semantic-only conditions (rules may use `semantic:` in `where:`):
  semantic: {arg_evaluates_null: stream}   libclang: the argument is a null pointer constant (or
                                           cudaStreamLegacy when `null_stream`); tree-sitter: same as
                                           `{arg: stream, is: null}` on its spelling.
  semantic: {receiver_type: cudaDeviceProp} libclang: canonical receiver record type; tree-sitter: true.
  semantic: {callee_is_api: true}          libclang: callee declared in a system/toolkit header;
                                           tree-sitter: true.
  semantic: {..., default: false}          overrides what tree-sitter mode answers.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

import tree_sitter as ts

from ..parse.treesitter import query
from ..core.registry import Registry, boolean, scalar, strings
from .arg_spelling import ConditionError, arg_is as _arg_is
from .context import named_children, node_text, normalize_name
from .matchers import LAUNCH_PARAMS, Match, call_of, climb_name, smallest_nodes

if TYPE_CHECKING:  # semantic mode's facts: a tree-sitter scan never loads their module
    from ..parse.clang_facts import CallFact, FileFacts
# --------------------------------------------------------------------------- feeding the matchers


class FakeNode:
    """Stands in for a tree-sitter node where an argument is spelled in a macro body."""

    is_named = True
    named_children: list = []
    children: list = []
    parent = None

    def __init__(self, text: bytes, start: int | None, kind: str = "macro_argument"):
        self.text = text
        self.type = kind
        self.start_byte = start if start is not None else -1
        self.end_byte = start + len(text) if start is not None else -1
        self.located = start is not None

    def child_by_field_name(self, _name):
        return None


_ARG_END = re.compile(rb"[^,()\n]*(?:\([^()\n]*\)[^,()\n]*)*")


def _spelled_text(data: bytes, start: int) -> bytes:
    m = _ARG_END.match(data, start)
    return (m.group(0) if m else b"").strip()


def resolve_callee(fact: CallFact, names: Iterable[str]) -> str | None:
    if not fact.api:
        return None
    for n in names:
        if fact.callee == n or fact.callee.endswith("::" + n):
            return n
    return None


def _same_library(fact: CallFact, names: Iterable[str]) -> bool:
    """The callee and one of the rule's names share their top namespace (or the rule spells `obj.method`)."""
    root = fact.callee.split("::")[0] if "::" in fact.callee else ""
    for n in names:
        if "." in n.split("::")[-1]:
            return True
        if root and "::" in n and n.split("::")[0] == root:
            return True
    return False


class SemanticContext:
    """What the engine consults for one file in semantic mode."""

    def __init__(self, facts: FileFacts):
        self.facts = facts

    def keywords(self) -> set[str]:
        return self.facts.keywords()

    @property
    def has_launch(self) -> bool:
        return self.facts.has_launch or any(c.launch for c in self.facts.calls.values())

    # -- hit matchers: refine tree-sitter's answer where libclang knows better
    def wrap(self, kind: str, matcher: Callable) -> Callable:
        if kind == "call":
            return self._match_call(matcher)
        if kind == "member":
            return self._match_member(matcher)
        if kind == "identifier":
            return self._match_identifier(matcher)
        return matcher

    def _match_call(self, original):

        def run(rule, ctx, unit, hit):
            if hit.type not in ("identifier", "field_identifier"):
                return None
            key = unit.abs(hit)[0]
            if unit.in_macro:
                if self.facts.expanded_bodies.get(key):
                    return None  # reported at each macro use instead
                return original(rule, ctx, unit, hit)
            fact = self.facts.calls.get(key)
            if fact is None or fact.launch or fact.callee.split("::")[-1] != node_text(hit):
                # no fact, or libclang resolved another spelling (a renaming macro): the spelling decides
                return original(rule, ctx, unit, hit)
            name = resolve_callee(fact, rule.spec["names"])
            if name is None:
                if fact.api and _same_library(fact, rule.spec["names"]):
                    # e.g. `thrust::cuda::par.on` (a method of an internal type): the spelling decides
                    m = original(rule, ctx, unit, hit)
                    if m is not None:
                        m.sem = fact
                    return m
                return None  # a user function/method, or another API
            m = original(rule, ctx, unit, hit)
            if m is not None and m.name == name:
                m.sem = fact  # tree-sitter agrees on the name: keep everything it computed
                return m
            got = call_of(hit)
            if got is None:
                return None
            call, callee = got
            arglist = call.child_by_field_name("arguments")
            m = Match(rule=rule, unit=unit, node=call, name=name, written=normalize_name(node_text(callee)),
                      callee=callee, arglist=arglist, args=named_children(arglist),
                      params=list(rule.spec["names"][name] or []),
                      name_range=unit.abs(climb_name(hit)[1]) if hit.type == "identifier" else unit.abs(hit))
            if hasattr(m, "ident_range"):
                m.ident_range = unit.abs(hit)
            m.sem = fact
            return m

        return run

    def _match_member(self, original):

        def run(rule, ctx, unit, hit):
            types = rule.spec.get("receiver_types")
            end = unit.abs(hit)[1]
            rec = self.facts.members.get(end) if not unit.in_macro else None
            if not types or rec is None:
                return original(rule, ctx, unit, hit)
            if not any(rec == t or rec.endswith("::" + t) for t in types):
                return None
            relaxed = copy.copy(rule)
            relaxed.match = {"member": {k: v for k, v in rule.spec.items() if k != "receiver_types"}}
            m = original(relaxed, ctx, unit, hit)
            if m is not None:
                m.rule = rule
                m.vars["receiver_type"] = rec
            return m

        return run

    def _match_identifier(self, original):

        def run(rule, ctx, unit, hit):
            m = original(rule, ctx, unit, hit)
            if m is None or unit.in_macro:
                return m
            ref = self.facts.refs.get(unit.abs(hit)[0])
            if ref is not None and not ref[1] and ref[0].split("::")[-1] == node_text(hit):
                return None  # the project's own declaration of that name
            if m.vars.get("role") == "call":
                fact = self.facts.calls.get(unit.abs(hit)[0])
                if fact is not None and fact.callee.split("::")[-1] != node_text(hit):
                    fact = None
                if fact is not None and not fact.api:
                    return None
                m.sem = fact
            return m

        return run

    # -- launches: attach facts
    def refine_launches(self, matches: list) -> list:
        out = []
        for m in matches:
            if m.unit.in_macro:
                if self.facts.expanded_bodies.get(m.abs(m.callee)[0] if m.callee is not None else -1):
                    continue
                out.append(m)
                continue
            if m.callee is not None:
                m.sem = self.facts.calls.get(m.abs(m.callee)[0])
            out.append(m)
        return out

    # -- calls and launches expanded from macros, reported at the macro use
    def expansion_matches(self, rules: list, ctx) -> list:

        out = []
        data = ctx.source.data
        root = ctx.main.root
        facts = [f for f in self.facts.expansions  # every expansion fact has a use_range (clang_facts sets it)
                 if f.use_range is not None and f.use_range[0] < f.use_range[1] <= len(data)]
        order = sorted(range(len(facts)), key=lambda i: facts[i].use_range or (0, 0))
        found = smallest_nodes(root, [facts[i].use_range or (0, 0) for i in order])
        nodes = dict(zip(order, found, strict=True))  # one cursor over the ranges in document order
        for i, fact in enumerate(facts):
            s, e = fact.use_range or (0, 0)
            node = nodes[i]
            while node is not None and node.parent is not None and (node.end_byte - node.start_byte) < (e - s):
                node = node.parent
            for rule in rules:
                if fact.launch:
                    if rule.kind != "launch":
                        continue
                    name, params = "<<<>>>", LAUNCH_PARAMS
                else:
                    if rule.kind != "call":
                        continue
                    name = resolve_callee(fact, rule.spec["names"])
                    if name is None:
                        continue
                    params = list(rule.spec["names"][name] or [])
                args = []
                use_args = self._use_args(node, s, e)
                for af in fact.args:
                    if af.default:
                        continue  # like tree-sitter: a defaulted argument is `missing`
                    if not af.in_body and af.start is not None and af.start in use_args:
                        args.append(use_args[af.start])
                    elif af.in_body and fact.body_file == str(os.path.realpath(ctx.source.path)) and af.start is not None:
                        args.append(FakeNode(_spelled_text(data, af.start), af.start, "macro_body"))
                    else:
                        text = b""
                        if af.start is not None and fact.body_file:
                            try:
                                text = _spelled_text(Path(fact.body_file).read_bytes(), af.start)
                            except OSError:
                                pass
                        args.append(FakeNode(text, None, "macro_body"))
                m = Match(rule=rule, unit=ctx.main, node=node, name=name, written=fact.callee, callee=None,
                          arglist=FakeNode(b"", None, "argument_list"), args=args, params=params, range=(s, e),
                          name_range=(s, s + len(fact.macro or "")))
                m.sem = fact
                m.vars["macro"] = fact.macro
                out.append(m)
        return out

    @staticmethod
    def _use_args(node, s: int, e: int) -> dict[int, Any]:
        """Tree-sitter nodes spelled inside the macro use, by start offset (largest first)."""
        found: dict[int, Any] = {}
        if node is None:
            return found
        stack = [node]
        while stack:
            n = stack.pop()
            if n.start_byte < s or n.end_byte > e:
                stack.extend(n.named_children)
                continue
            if n.is_named and n.start_byte not in found and n.type not in ("argument_list",):
                found[n.start_byte] = n
            stack.extend(reversed(n.named_children))
        return found

    # -- fixes that would edit a shared macro definition
    def fix_blocker(self, m, edits, ctx) -> str | None:
        try:
            return self._fix_blocker(m, edits, ctx)
        except Exception as exc:  # be safe: no automatic fix rather than a wrong one
            return f"semantic check of the fix failed ({exc!r})"

    def _fix_blocker(self, m, edits, ctx) -> str | None:
        if not m.vars.get("macro"):
            return None  # only fixes computed for one macro use can be wrong for the others
        for e in edits or []:
            if e.start < 0:
                return "the edit lies in a macro defined in another file"
            for name, (bs, be) in _define_bodies(ctx).items():
                if bs <= e.start <= be:
                    uses = max([n for off, n in self.facts.expanded_bodies.items() if bs <= off <= be] or [0])
                    if uses > 1:
                        return f"the edit would change macro `{name}`, which is expanded {uses} times"
        return None

    # -- conditions
    def arg_value(self, m, key) -> tuple[bool, int | None]:
        """(known, value) of a match's argument."""
        fact = getattr(m, "sem", None)
        if fact is None:
            return False, None
        idx = m.arg_index(str(key))
        if idx is None or idx >= len(fact.args):
            return False, None
        v = fact.args[idx].value
        return v is not None, v


def _define_bodies(ctx) -> dict[str, tuple[int, int]]:
    cached = getattr(ctx, "_define_bodies", None)
    if cached is not None:
        return cached

    out = {}
    q = query("(preproc_def name: (_) @name value: (preproc_arg) @body) "
              "(preproc_function_def name: (_) @name value: (preproc_arg) @body)")
    found = [(caps["body"][0], caps["name"][0]) for _, caps in ts.QueryCursor(q).matches(ctx.main.root)]
    for b, name in sorted(found, key=lambda bn: bn[0].start_byte):  # a name defined twice: the later one, in
        out[name.text.decode("utf-8", "replace")] = (b.start_byte, b.end_byte)  # document order (not the cursor's)
    try:
        ctx._define_bodies = out
    except Exception:
        pass
    return out


# ----------------------------------------------------------------------------- the `semantic:` tests
# A test answers True/False, or None when libclang knows nothing about it; the rule's `default:` (else True: a
# semantic test never hides a finding it cannot judge) then answers. `default` is passed in for the tests whose
# unknown answer without `default:` is the spelling of the argument.
SemanticTest = Callable[[Any, Any, Any, "bool | None"], "bool | None"]
SEMANTIC_TESTS: Registry[SemanticTest] = Registry("semantic condition")


def _null_test(stream: bool) -> SemanticTest:
    def test(val, m, sem, default) -> bool | None:
        known, v = sem.arg_value(m, val) if sem is not None else (False, None)
        if known:
            return v == 0 or (stream and v == 1)
        if default is not None:
            return None
        node = m.arg(str(val))
        return node is not None and _arg_is(node, "null_stream" if stream else "null")
    return test


SEMANTIC_TESTS.add("arg_evaluates_null", scalar("NAME|INDEX"), _null_test(False),
                   "the argument's value, evaluated by libclang, is 0; without libclang the spelling decides "
                   "(as `is: null`) unless `default:` is given.")
SEMANTIC_TESTS.add("arg_evaluates_null_stream", scalar("NAME|INDEX"), _null_test(True),
                   "the argument's value is 0 or 1 (`cudaStreamLegacy`): a legacy-stream argument; without "
                   "libclang the spelling decides (as `is: null_stream`) unless `default:` is given.")


@SEMANTIC_TESTS.register("receiver_type", strings("TYPE|[TYPE, ...]"))
def _receiver_type(val, m, sem, default) -> bool | None:
    """a member access's receiver type (or a type it ends with after `::`)."""
    types = val if isinstance(val, list) else [val]
    rec = m.vars.get("receiver_type")
    if rec is None and sem is not None and m.field_node is not None:
        rec = sem.facts.members.get(m.abs(m.field_node)[1])
    return (rec in types or any(rec.endswith("::" + t) for t in types)) if rec else None


@SEMANTIC_TESTS.register("callee_is_api", boolean())
def _callee_is_api(val, m, sem, default) -> bool | None:
    """the call resolved (or not) to the toolkit's own declaration."""
    fact = getattr(m, "sem", None)
    return None if fact is None else fact.api == bool(val)


def semantic_condition(spec: dict, m, ctx) -> bool:
    """`semantic:` conditions: every test holds; one libclang cannot answer takes `default:` (True without)."""
    sem = getattr(ctx, "semantic", None)
    default = spec.get("default")
    for key, val in spec.items():
        if key == "default":
            continue
        entry = SEMANTIC_TESTS.entries.get(key)
        if entry is None:
            raise ConditionError(f"unknown semantic condition {key!r}")
        ok = entry.impl(val, m, sem, default)
        if not (ok if ok is not None else (True if default is None else bool(default))):
            return False
    return True
