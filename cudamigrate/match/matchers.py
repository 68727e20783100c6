"""Turning tree-sitter nodes into rule matches.

Matching is driven by identifiers: the byte positions of the words that some
active rule names lead to their identifier nodes (`identifier_nodes`), and
each hit is then checked against its rules' shape
(call, type, member, ...). Launches, includes and strings have their own
compiled queries, run only when a file can contain them.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import tree_sitter as ts

from ..core.rule_regex import rule_regex
from ..parse import walk
from ..parse.treesitter import Unit, parent_of
from ..rules.schema import Rule
from ..read.project_index import project_member_type
from .context import FileContext, named_children, node_text, normalize, normalize_name

LAUNCH_PARAMS = ["grid", "block", "shmem", "stream"]
_CALL_ARGS = re.compile(r"\((?:[^()]|\(\))+\)")
DECLARATOR_PARENTS = {"init_declarator", "function_declarator", "pointer_declarator", "reference_declarator",
                      "array_declarator", "parameter_declaration", "declaration", "field_declaration",
                      "preproc_def", "preproc_function_def", "enumerator", "optional_parameter_declaration"}


@dataclass
class Match:
    rule: Rule
    unit: Unit
    node: ts.Node
    name: str = ""  # the API name as the rule spells it
    written: str = ""  # as written in the source
    callee: ts.Node | None = None
    arglist: ts.Node | None = None
    args: list[ts.Node] = field(default_factory=list)
    params: list[str] = field(default_factory=list)
    call_args: list[ts.Node] = field(default_factory=list)
    field_node: ts.Node | None = None
    receiver: ts.Node | None = None
    name_range: tuple[int, int] | None = None  # absolute
    captures: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    vars: dict[str, Any] = field(default_factory=dict)
    edits: list | None = None  # builtin matchers may compute edits themselves
    fix_applicability: str | None = None
    range: tuple[int, int] | None = None  # absolute report range override
    sem: Any = None  # semantic mode: libclang's facts about this call (semantic.CallFact)
    ident_range: tuple[int, int] | None = None  # absolute: the bare identifier, without `::` qualification
    # locations that explain the finding (findings.model.Related); a path of "" stands for the scanned file, which
    # the engine names as the finding does
    related: list = field(default_factory=list)

    def abs(self, node: ts.Node) -> tuple[int, int]:
        return self.unit.abs(node)

    @property
    def report_range(self) -> tuple[int, int]:
        if self.range is not None:
            return self.range
        return self.abs(self.node)

    def arg(self, key: str | int) -> ts.Node | None:
        idx = self.arg_index(key)
        if idx is None or idx >= len(self.args):
            return None
        return self.args[idx]

    def arg_index(self, key: str | int) -> int | None:
        if isinstance(key, int):
            return key
        if key.lstrip("-").isdigit():
            i = int(key)
            return i if i >= 0 else len(self.args) + i
        if key in self.params:
            return self.params.index(key)
        return None


def _same(a: ts.Node | None, b: ts.Node | None) -> bool:
    return a is not None and b is not None and a.start_byte == b.start_byte and a.end_byte == b.end_byte and a.type == b.type


def climb_name(hit: ts.Node) -> tuple[ts.Node, ts.Node]:
    """From an identifier climb through `a::b::name` and `name<T>`; return (top, qualified-only top)."""
    cur = hit
    qual_top = hit
    while parent_of(cur) is not None:
        p = parent_of(cur)
        if p.type == "qualified_identifier" and _same(p.child_by_field_name("name"), cur):
            cur = p
            qual_top = p
        elif p.type in ("template_function", "template_type", "template_method") and _same(p.child_by_field_name("name"), cur):
            cur = p
        else:
            break
    return cur, qual_top


def call_of(hit: ts.Node) -> tuple[ts.Node, ts.Node] | None:
    """(call_expression, callee) when the identifier names the called function."""
    top, _ = climb_name(hit)
    p = parent_of(top)
    if p is not None and p.type == "field_expression" and _same(p.child_by_field_name("field"), top):
        top = p
        p = parent_of(top)
    if p is not None and p.type == "call_expression" and _same(p.child_by_field_name("function"), top):
        return p, top
    return None


def _resolve_name(ctx: FileContext, written: str, wanted: Iterable[str]) -> str | None:
    """The rule's name (as spelled in the rule) that `written` denotes; names may be `*` globs."""
    cands = ctx.resolve(written)
    for name in wanted:
        if name in cands:
            return name
        if "*" in name and any(fnmatch.fnmatchcase(c, name) for c in cands):
            return name
    return None


def _outer_qualified(node: ts.Node) -> ts.Node | None:
    """For `a::T<x>::member` and the node `T<x>` (a scope), the qualified_identifier that starts at `a`."""
    p = parent_of(node)
    if p is None or p.type != "qualified_identifier" or not _same(p.child_by_field_name("scope"), node):
        return None
    while parent_of(p) is not None and parent_of(p).type == "qualified_identifier" and _same(parent_of(p).child_by_field_name("name"), p):
        p = parent_of(p)
    return p


def _match_namespace_glob(rule: Rule, ctx: FileContext, unit: Unit, hit: ts.Node) -> Match | None:
    """`thrust::async::*`: the hit is the namespace name; the match is the whole qualified name."""
    globs = [n for n in rule.spec["names"] if n.endswith("::*")]
    if not globs:
        return None
    top = hit
    while parent_of(top) is not None and parent_of(top).type == "qualified_identifier":
        top = parent_of(top)
    if top is hit:
        return None
    written = normalize_name(node_text(top))
    name = _resolve_name(ctx, written, globs)
    if name is None:
        return None
    last = top
    while last.type == "qualified_identifier" and last.child_by_field_name("name") is not None:
        last = last.child_by_field_name("name")
    if last.type in ("template_type", "template_function") and last.child_by_field_name("name") is not None:
        last = last.child_by_field_name("name")
    p = parent_of(top)
    if p is not None and p.type in ("template_function", "template_type") and _same(p.child_by_field_name("name"), top):
        top = p
        p = parent_of(top)
    if last.type == "type_identifier" or (p is not None and p.type == "type_descriptor"):
        role = "type"
    elif p is not None and p.type == "call_expression" and _same(p.child_by_field_name("function"), top):
        role = "call"
    else:
        role = "value"
    if role not in rule.spec.get("roles", ["type", "value", "call"]):
        return None
    node = p if role == "call" else top
    m = Match(rule=rule, unit=unit, node=node, name=name, written=written, name_range=unit.abs(top))
    m.vars["role"] = role
    if role == "call":
        m.callee = top
        m.arglist = p.child_by_field_name("arguments")
        m.args = named_children(m.arglist)
    return m


def _is_user_definition(ctx: FileContext, written: str, rule_name: str) -> bool:
    short = written.split("::")[-1].split(".")[-1]
    return "::" not in written and short in ctx.defined_functions


def _shadowed(rule: Rule, ctx: FileContext, unit: Unit, hit: ts.Node, written: str, m: Match) -> bool:
    """Callee identity (see match/shadows.py): True drops the match (the name is certainly the project's
    own declaration); an uncertain shadow keeps the finding and withholds its fix. Rules opt out with
    `callee_identity: false` in their matcher spec."""
    if "::" in written or "." in written or hit.type not in ("identifier", "type_identifier") \
            or not rule.spec.get("callee_identity", True):
        return False
    from .shadows import shadow_of

    sh = shadow_of(ctx, unit, hit, {node_text(hit)}, len(m.args) if m.arglist is not None else None)
    if sh is None:
        return False
    if sh.certain:
        return True
    if ctx.semantic is not None and not unit.in_macro:
        fact = ctx.semantic.facts.calls.get(unit.abs(hit)[0])
        if fact is not None and fact.api and fact.callee.split("::")[-1] == node_text(hit):
            return False  # undecided here (an overload, a conditional declaration): libclang resolved it to the toolkit
    m.vars["fix_blocked"] = sh.reason
    return False


def match_call(rule: Rule, ctx: FileContext, unit: Unit, hit: ts.Node) -> Match | None:
    if hit.type not in ("identifier", "field_identifier"):
        return None
    got = call_of(hit)
    if got is None:
        return None
    call, callee = got
    written = normalize_name(node_text(callee))
    names: dict[str, list[str]] = rule.spec["names"]
    name = _resolve_name(ctx, written, names)
    if name is None and "(" in written:
        # a call inside the callee chain, `thrust::cuda::par(alloc).on`, is matched by the name `thrust::cuda::par().on`
        elided, prev = written, None
        while prev != elided:
            prev, elided = elided, _CALL_ARGS.sub("()", elided)
        name = _resolve_name(ctx, elided, names)
    if name is None and rule.spec.get("adl"):
        # argument-dependent lookup: reduce(thrust::device, ...) finds thrust::reduce
        args = named_children(call.child_by_field_name("arguments"))
        if "::" not in written and args and normalize(node_text(args[0])).startswith(rule.spec["adl"] + "::"):
            name = _resolve_name(ctx, f"{rule.spec['adl']}::{written}", names)
    if name is None:
        return None
    if _is_user_definition(ctx, written, name):
        return None
    arglist = call.child_by_field_name("arguments")
    m = Match(rule=rule, unit=unit, node=call, name=name, written=written, callee=callee, arglist=arglist,
              args=named_children(arglist), params=list(names[name] or []),
              name_range=unit.abs(climb_name(hit)[1]) if hit.type == "identifier" else unit.abs(hit),
              ident_range=unit.abs(hit))
    return None if _shadowed(rule, ctx, unit, hit, written, m) else m


_TYPE_DEFINITIONS = ("struct_specifier", "class_specifier", "union_specifier", "enum_specifier")


def match_identifier(rule: Rule, ctx: FileContext, unit: Unit, hit: ts.Node) -> Match | None:
    roles = rule.spec.get("roles", ["type", "value", "call"])
    if hit.type == "namespace_identifier":
        m = _match_namespace_glob(rule, ctx, unit, hit)
        if m is not None:
            return m
        # `cub::DeviceSpmv::CsrMV(...)`: a class used as a scope is parsed as a namespace name
        outer = hit
        while parent_of(outer) is not None and parent_of(outer).type == "qualified_identifier":
            outer = parent_of(outer)
        if outer is hit or "type" not in roles:
            return None
        written = normalize_name((outer.text or b"")[: hit.end_byte - outer.start_byte].decode("utf-8", "replace"))
        name = _resolve_name(ctx, written, [n for n in rule.spec["names"] if not n.endswith("::*")])
        if name is None:
            return None
        s, e = unit.abs(outer)[0], unit.abs(hit)[1]
        m = Match(rule=rule, unit=unit, node=hit, name=name, written=written, name_range=(s, e), range=(s, e))
        m.vars["role"] = "type"
        m.vars["scope"] = True
        return m
    top, qual_top = climb_name(hit)
    written = normalize_name(node_text(qual_top)) if qual_top is not hit else node_text(hit)
    written = normalize_name(written)
    outer = _outer_qualified(top) if qual_top is hit else None
    # `cuda::std::numeric_limits<int>::max`: the name is the scope of a longer qualified name and is itself
    # qualified (by `cuda::std::`); only that qualified spelling may be resolved, never the bare name through
    # `using namespace thrust;` (which made a rename to `cuda::std::numeric_limits` match its own output)
    qualified_scope = outer is not None and outer.start_byte < top.start_byte
    name = None if qualified_scope else _resolve_name(ctx, written, rule.spec["names"])
    if name is None:
        # `thrust::iterator_traits<T>::value_type`: the name is the scope of a longer qualified name
        if outer is None:
            return None
        s, e = unit.abs(outer)[0], unit.abs(top)[1]
        written = normalize_name((outer.text or b"")[: top.end_byte - outer.start_byte].decode("utf-8", "replace"))
        name = _resolve_name(ctx, written, rule.spec["names"])
        if name is None:
            return None
        role = "type" if hit.type == "type_identifier" else "value"
        if role not in roles:
            return None
        m = Match(rule=rule, unit=unit, node=top, name=name, written=written,
                  name_range=(s, unit.abs(hit)[1]), range=(s, e))
        m.vars["role"] = role
        m.vars["scope"] = True  # the name is followed by `::member`
        return m
    call = call_of(hit) if hit.type == "identifier" else None
    if hit.type == "type_identifier":
        role = "type"
        p = parent_of(hit)
        if p is not None and p.type in _TYPE_DEFINITIONS and p.child_by_field_name("body") is not None \
                and _same(p.child_by_field_name("name"), hit):
            return None  # `struct double4 { ... }` (in a namespace too) defines the project's own type
    elif call is not None:
        role = "call"
    elif hit.type == "identifier":
        p = parent_of(top)
        if p is not None and p.type in DECLARATOR_PARENTS and p.type not in ("declaration", "parameter_declaration"):
            # `int clockRate = ...;` declares a user variable of that name
            if _same(p.child_by_field_name("declarator"), top) or p.type in ("preproc_def", "preproc_function_def", "enumerator"):
                return None
        if p is not None and p.type in ("field_expression",) and _same(p.child_by_field_name("field"), top):
            return None
        role = "value"
        if "::" not in written and declared_type(ctx, unit, node_text(hit), hit) is not None:
            return None  # a variable (or parameter) the code declares itself
    else:
        return None
    if role not in roles:
        return None
    if role == "call" and _is_user_definition(ctx, written, name):
        return None
    m = Match(rule=rule, unit=unit, node=call[0] if role == "call" and call is not None else top, name=name, written=written,
              name_range=(unit.abs(qual_top)[0], unit.abs(hit)[1]), ident_range=unit.abs(hit))
    m.vars["role"] = role
    if call is not None:
        m.callee = call[1]
        m.arglist = call[0].child_by_field_name("arguments")
        m.args = named_children(m.arglist)
    if _shadowed(rule, ctx, unit, hit, written, m):
        return None
    return m


# `(declaration type: (_) @t declarator: (_) @d) (parameter_declaration type: (_) @t declarator: (_) @d)
#  (field_declaration type: (_) @t declarator: (_) @d)`, walked (parse/walk.py says why)
TYPED_DECLARATORS = tuple(walk.FieldPattern(t, "declarator")
                          for t in ("declaration", "parameter_declaration", "field_declaration"))


def _declarations(ctx: FileContext, unit: Unit) -> dict[str, list[tuple[int, str]]]:
    """Variable name -> [(offset, declared type)] for every declaration in the unit (computed once)."""
    cache = ctx.__dict__.setdefault("_decl_cache", {})
    key = id(unit)
    if key in cache:
        return cache[key]
    out: dict[str, list[tuple[int, str]]] = {}
    for _, tn, d in walk.pair_matches(unit.root, TYPED_DECLARATORS, "type"):
        got = _declaration(tn, d)
        if got is not None:
            out.setdefault(got[0], []).append(got[1:])
    cache[key] = out
    return out


def _declaration(tn: ts.Node, d: ts.Node) -> tuple[str, int, str] | None:
    """(name, offset, declared type) of one (type, declarator) pair of `_declarations`, or None."""
    t = normalize_name(node_text(tn))
    ref = "&" in node_text(d).split("=")[0] or "*" in node_text(d).split("=")[0]
    while d.type in ("init_declarator", "reference_declarator", "pointer_declarator", "array_declarator") and d.named_children:
        d = d.child_by_field_name("declarator") or d.named_children[0]
    if d.type in ("identifier", "field_identifier"):
        return node_text(d), d.start_byte, t + ("*" if ref else "")
    return None


_TYPED_DECLARATOR_TYPES = frozenset(p.node_type for p in TYPED_DECLARATORS)
NAMES_BEFORE_INDEX = 32  # names looked up one by one in a unit before all its declarations are indexed instead


def _declarations_named(ctx: FileContext, unit: Unit, ident: str) -> list[tuple[int, str]]:
    """`_declarations(ctx, unit).get(ident, [])`, from the declarations that hold a leaf spelled `ident`
    (walk.holders), not every declaration of the unit: the editor re-scans a file at every keystroke, and a
    builtin asking the type of one receiver indexed (and normalized the types of) every declaration. The
    whole index is built instead once it exists, once the unit has been asked NAMES_BEFORE_INDEX names, or
    when the name occurs too often, too deep, or two declarators tie in document order."""
    full = ctx.__dict__.get("_decl_cache", {}).get(id(unit))
    if full is not None:
        return full.get(ident, [])
    named = ctx.__dict__.setdefault("_decl_named", {}).setdefault(id(unit), {})
    if ident in named:
        return named[ident]
    decls = walk.holders(unit.root, ident, _TYPED_DECLARATOR_TYPES) if len(named) < NAMES_BEFORE_INDEX else None
    triples = []
    for x in decls or []:  # pair_matches(x, TYPED_DECLARATORS, "type"): each declarator after each type
        kids = x.children
        for d in x.children_by_field_name("declarator"):
            if d.is_named:
                k = next(i for i, c in enumerate(kids) if c == d)
                triples += [((d.start_byte, -d.end_byte), i, kids[i], d) for i in range(k)
                            if kids[i].is_named and x.field_name_for_child(i) == "type"]
    triples.sort(key=lambda t: t[:2])
    if decls is None or len({t[:2] for t in triples}) != len(triples):
        return _declarations(ctx, unit).get(ident, [])
    out: list[tuple[int, str]] = []
    for _, _, tn, d in triples:  # the index's order: the declarators' pre-order
        got = _declaration(tn, d)
        if got is not None and got[0] == ident:
            out.append(got[1:])
    named[ident] = out
    return out


def declared_type(ctx: FileContext, unit: Unit, ident: str, at: ts.Node) -> str | None:
    """Best-effort type of a variable: the closest preceding declaration of that name."""
    best: tuple[int, str] | None = None
    for pos, t in _declarations_named(ctx, unit, ident):
        if pos <= at.start_byte and (best is None or pos > best[0]):
            best = (pos, t)
    return best[1].rstrip("*") if best else None


def member_expression_type(ctx: Any, unit: Any, fe: ts.Node, at: ts.Node) -> str | None:
    """Type of `this->m`, `obj.m`, `ptr->m` (one level of members) through the project index."""
    arg, fld = fe.child_by_field_name("argument"), fe.child_by_field_name("field")
    if arg is None or fld is None:
        return None
    if arg.type == "this":
        return project_member_type(ctx, None, node_text(fld), at)
    if arg.type == "identifier":
        owner = declared_type(ctx, unit, node_text(arg), at)
        if owner is None:
            return None
        owner = owner.replace("const", "").replace("struct", "").replace("class", "").strip().rstrip("*&").strip()
        return project_member_type(ctx, owner.split("::")[-1], node_text(fld), at)
    return None


def match_member(rule: Rule, ctx: FileContext, unit: Unit, hit: ts.Node) -> Match | None:
    if hit.type != "field_identifier":
        return None
    p = parent_of(hit)
    if p is None or p.type != "field_expression" or not _same(p.child_by_field_name("field"), hit):
        return None
    recv = p.child_by_field_name("argument")
    types = rule.spec.get("receiver_types")
    if types and recv is not None:
        base = recv
        while base.type in ("subscript_expression", "pointer_expression", "parenthesized_expression") and base.named_children:
            base = base.named_children[0]
        rtype = None
        if base.type == "identifier":
            rtype = declared_type(ctx, unit, node_text(base), hit)
        if rtype is not None:
            rtype = rtype.replace("struct", "").replace("const", "")
            if not any(t == rtype or rtype.endswith(t) for t in types):
                return None
        elif re.search(rb"struct\s+\w+\s*\{[^}]*\b" + re.escape(hit.text or b"") + rb"\b", ctx.source.data):
            return None  # unknown receiver, and the file declares its own field of that name
    m = Match(rule=rule, unit=unit, node=p, name=node_text(hit), written=node_text(hit), field_node=hit, receiver=recv,
              name_range=unit.abs(hit), ident_range=unit.abs(hit))
    call = parent_of(p)
    m.vars["is_write"] = bool(call is not None and call.type == "assignment_expression" and _same(call.child_by_field_name("left"), p))
    return m


def launches(rule: Rule, ctx: FileContext) -> list[Match]:
    out: list[Match] = []
    for unit in ctx.units:
        for call, fn, cfg, args in walk.kernel_launches(unit.root):
            out.append(Match(rule=rule, unit=unit, node=call, name="<<<>>>", written=normalize_name(node_text(fn)),
                             callee=fn, arglist=cfg, args=named_children(cfg), params=LAUNCH_PARAMS,
                             call_args=named_children(args)))
    return out


INCLUDE_PATTERNS = (walk.FieldPattern("preproc_include", "path"),)  # `(preproc_include path: (_) @path) @inc`


def project_file_beside(includer: Path, name: str) -> bool:
    """Whether `#include "name"` in `includer` finds a file of the project next to it: compilers search the
    includer's own directory first for a quoted include, so that file, not the toolkit header of the same name,
    is what the directive includes (ISPASS-2009's WP/ ships an empty `cublas.h` so that `cpp` does not pick up
    CUDA's; CM201 rewrote its `#include "cublas.h"` to `cublas_v2.h`, which includes the real cuBLAS). The
    directory is listed, not stat'ed, so the result cache records the listing and a file created there later
    re-scans the includer."""
    cand = includer.parent / name
    try:
        return cand.name in os.listdir(cand.parent) and cand.is_file()
    except (OSError, ValueError):  # no such directory (stdin), a name the OS refuses
        return False


def includes(rule: Rule, ctx: FileContext) -> list[Match]:
    out: list[Match] = []
    wanted = set(rule.spec.get("paths", []))
    prefixes = tuple(rule.spec.get("prefixes", []))
    for _, inc, path in walk.field_matches(ctx.main.root, INCLUDE_PATTERNS):
        text = node_text(path).strip()
        inner = text[1:-1] if len(text) >= 2 else text
        if (inner in wanted or (prefixes and inner.startswith(prefixes))) and \
                not (text.startswith('"') and project_file_beside(ctx.source.path, inner)):
            m = Match(rule=rule, unit=ctx.main, node=inc, name=inner, written=text, name_range=ctx.main.abs(path))
            m.vars["path"] = inner
            m.vars["system"] = text.startswith("<")
            # the include node swallows its newline; report just the directive
            s, e = ctx.main.abs(inc)
            if ctx.source.data[s:e].endswith(b"\n"):
                e -= 1
                if ctx.source.data[s:e].endswith(b"\r"):
                    e -= 1
            m.range = (s, e)
            out.append(m)
    return out


STRING_TYPES = frozenset({"string_literal", "raw_string_literal"})


def strings(rule: Rule, ctx: FileContext) -> list[Match]:
    out: list[Match] = []
    rx = rule_regex(rule.spec["regex"])
    for unit in ctx.units:
        # walked, not queried: the query took 0.3 s per call on a 21 KB mutated file (bench/fuzz.py), the walk is
        # linear in the tree
        for node in walk.walk_typed_nodes(unit.root, STRING_TYPES):
            text = node_text(node)
            if node.type == "string_literal":
                if not (text.startswith('"') or text[1:2] == '"' or text[2:3] == '"'):
                    continue
                q0 = text.index('"')
                content, off = text[q0 + 1 : -1], q0 + 1
            else:
                content, off = text, 0
            for mo in rx.finditer(content):
                s, _ = unit.abs(node)
                base = s + len(text[:off].encode())
                caps = {}
                for gname, gval in mo.groupdict().items():
                    if gval is None:
                        continue
                    gs = base + len(content[: mo.start(rx.groupindex[gname])].encode())  # RE2: by index
                    caps[gname] = (gs, gs + len(gval.encode()), gval)
                ms = base + len(content[: mo.start()].encode())
                m = Match(rule=rule, unit=unit, node=node, name=mo.group(0), written=text, captures=caps,
                          range=(ms, ms + len(mo.group(0).encode())))
                m.vars["groups"] = {k: v[2] for k, v in caps.items()}
                m.vars["string"] = content
                out.append(m)
    return out


IDENTIFIER_TYPES = frozenset(("identifier", "field_identifier", "type_identifier", "namespace_identifier"))


def word_regex(words: Iterable[str]) -> re.Pattern[bytes] | None:
    """`\\b(w1|w2|...)\\b` over bytes, longest words first; `re` caches the few distinct sets a run meets."""
    ws = sorted(set(words), key=lambda w: (-len(w), w))
    if not ws:
        return None
    return re.compile(rb"\b(" + b"|".join(re.escape(w.encode()) for w in ws) + rb")\b")


def identifier_nodes(ctx: FileContext, words: Iterable[str], types: frozenset[str] = IDENTIFIER_TYPES
                     ) -> Iterable[tuple[Unit, ts.Node]]:
    """Identifier nodes (of `types`) whose text is one of `words`, unit by unit in document order.
    Found from the words' byte positions (a regex) and `descendant_for_byte_range`, kept when the node is
    exactly that identifier: the same nodes as an `#any-of?` query, without compiling a tree-sitter query
    per file (compiling one took ~12 ms, 39 % of a scan on real trees)."""
    rx = word_regex(words)
    if rx is None:
        return
    for unit in ctx.units:
        root = unit.root
        off = root.start_byte
        spans = [(s + off, e + off) for s, e in (mo.span() for mo in rx.finditer(root.text))]
        for (s, e), node in zip(spans, smallest_nodes(root, spans), strict=True):
            if node.type in types and node.start_byte == s and node.end_byte == e:
                yield unit, node


def smallest_nodes(root: ts.Node, spans: list[tuple[int, int]]) -> Iterator[ts.Node]:
    """For each byte range of `spans` (in document order), the smallest node of `root` spanning it: what
    `root.descendant_for_byte_range` gives, found by one cursor that climbs only as far as the next range
    needs and descends from there. A descent from the root per range costs the nesting depth each time:
    quadratic in statements nested thousands deep (issue 24's 100 KB shapes)."""
    cur = root.walk()
    for s, e in spans:
        while True:  # climb to the nearest node holding the range (the root holds everything it can)
            n = cur.node
            if n is None or (n.start_byte <= s and e <= n.end_byte) or not cur.goto_parent():
                break
        gap = False
        while cur.goto_first_child_for_byte(s) is not None:
            n = cur.node
            if n is None or not (n.start_byte <= s and e <= n.end_byte):
                gap = n is not None and n.start_byte <= s  # a child ends inside the range: ask the tree itself
                cur.goto_parent()
                break
        node = root.descendant_for_byte_range(s, e) if gap else cur.node
        yield node if node is not None else root


def identifier_hits(ctx: FileContext, keywords: Iterable[str]) -> Iterable[tuple[Unit, ts.Node]]:
    """Every identifier, field, type or namespace name that is one of `keywords`."""
    return identifier_nodes(ctx, keywords)
