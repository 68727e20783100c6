"""Removed `cudaDeviceProp` fields: which receivers are one, and the rewrite into a queried local.

Detection: a receiver is a `cudaDeviceProp` when its declared type is, through `typedef`/`using`
aliases (of the file and its project headers), pointers, references, `auto` initialised from one,
or a struct/class member whose field is declared with that type in the file or a project header.

Rewrite (CM503): NVIDIA's own migration reads each removed field once into a local filled by
`cudaDeviceGetAttribute`, status checked with the file's error-check macro. An expression form
(an immediately invoked lambda) is not valid in C and not in a subscript (`a[[&]{...}()]` starts
an attribute), so the value is hoisted into a declaration placed before the statement that reads
it. That needs a block to put the declaration in: reads in loop headers, unbraced branches, case
labels, macro bodies and initialisers outside functions keep a manual finding, with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import tree_sitter as ts

from ...findings.model import Edit
from ...parse import walk
from ...parse.treesitter import Unit, query
from ..context import FileContext, declaration_of, named_children, node_text, normalize, normalize_name, scope_of, type_aliases

_BLOCKS = {"compound_statement"}
_PP_BLOCKS = {"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"}
_LOOPS = {"for_statement", "for_range_loop", "while_statement", "do_statement"}
# walked, not queried (parse/walk.py says why): `(field_declaration type: (_) @t declarator: (_) @d)`,
# `(field_expression field: (field_identifier) @f) @fe` (also with `argument: (_) @r` first)
FIELD_DECLARATORS = (walk.FieldPattern("field_declaration", "declarator"),)
FIELD_READS = (walk.FieldPattern("field_expression", "field", "field_identifier"),)
_CHECK_NAME = re.compile(r"(?i)check|err|safe|call|assert")
_NOT_CHECKS = {"printf", "fprintf", "puts", "assert", "static_cast", "sizeof", "exit", "abort", "decltype"}


# ------------------------------------------------------------------ project text (file + headers)
def _project_texts(ctx: FileContext) -> list[tuple[Path, bytes]]:
    cache = ctx.__dict__.get("_dp_texts")
    if cache is None:
        from ..shadows import _read_header, included_headers

        cache = [(ctx.source.path, ctx.source.data)]
        try:
            heads, _ = included_headers(ctx.source.path, ctx.source.data) if ctx.source.path.is_file() else ([], False)
        except OSError:
            heads = []
        for p in heads:
            got = _read_header(p)
            if got is not None:
                cache.append((p, got[0]))
        ctx.__dict__["_dp_texts"] = cache
    return cache


def _aliases(ctx: FileContext) -> dict[str, str]:
    got = ctx.__dict__.get("_dp_aliases")
    if got is None:
        got = {}
        for _, data in _project_texts(ctx):
            got.update(type_aliases(data))
        ctx.__dict__["_dp_aliases"] = got
    return got


def _clean(t: str) -> str:
    """`const struct cudaDeviceProp &` (or its whitespace-free alias form) -> `cudaDeviceProp`."""
    t = re.sub(r"\b(const|volatile|struct|class|typename)\b", "", t)
    t = normalize_name(t).replace("&", "").replace("*", "")
    prev = None
    while prev != t:
        prev = t
        for w in ("const", "volatile", "struct", "class", "typename"):
            if t.startswith(w) and len(t) > len(w):
                t = t[len(w):]
    return t


def resolves_to(ctx: FileContext, type_text: str, types: list[str]) -> bool:
    t = _clean(type_text)
    aliases = _aliases(ctx)
    seen = set()
    while t not in seen:
        seen.add(t)
        if any(t == ty or t.endswith("::" + ty) for ty in types):
            return True
        if t not in aliases:
            break
        t = _clean(aliases[t])
    return False


def _field_types(ctx: FileContext) -> dict[str, list[str]]:
    """Field name -> declared types of struct/class members in the file and its project headers."""
    got = ctx.__dict__.get("_dp_fields")
    if got is not None:
        return got
    from ..shadows import _tree

    got = {}
    for path, data in _project_texts(ctx):
        if b"cudaDeviceProp" not in data and not any(a.encode() in data for a in _aliases(ctx)):
            continue
        root = ctx.main.root if path == ctx.source.path else _tree(path, data).root_node
        for _, tn, d in walk.pair_matches(root, FIELD_DECLARATORS, "type"):
            while d.type in ("pointer_declarator", "reference_declarator", "array_declarator", "init_declarator") and d.named_children:
                d = d.child_by_field_name("declarator") or d.named_children[0]
            if d.type == "field_identifier":
                got.setdefault(node_text(d), []).append(node_text(tn))
    ctx.__dict__["_dp_fields"] = got
    return got


def _strip(expr: ts.Node) -> ts.Node:
    while expr.type in ("subscript_expression", "pointer_expression", "parenthesized_expression") and expr.named_children:
        if expr.type == "pointer_expression" and node_text(expr).startswith("&"):
            break
        expr = expr.named_children[0] if expr.type != "subscript_expression" else expr.child_by_field_name("argument") or expr.named_children[0]
    return expr


def receiver_is(ctx: FileContext, unit: Unit, recv: ts.Node, at: ts.Node, types: list[str], depth: int = 0) -> bool:
    """Is `recv` (the object of `recv.f` / `recv->f`) of one of `types`?"""
    if depth > 4:
        return False
    base = _strip(recv)
    if base.type == "pointer_expression" and node_text(base).startswith("&"):
        base = _strip(base.named_children[0]) if base.named_children else base
    if base.type == "field_expression":
        f = base.child_by_field_name("field")
        return f is not None and any(resolves_to(ctx, t, types) for t in _field_types(ctx).get(node_text(f), []))
    if base.type != "identifier":
        return False
    name = node_text(base)
    got = declaration_of(unit.root, name, at)
    if got is None:
        # a member used inside a method (`prop.clockRate` where `prop` is a field)
        return scope_of(at).function is not None and any(
            resolves_to(ctx, t, types) for t in _field_types(ctx).get(name, []))
    decl, tnode, _ = got
    t = normalize(node_text(tnode))
    if t in ("auto", "constauto", "autoconst", "decltype(auto)"):
        for d in named_children(decl):
            if d.type == "init_declarator":
                inner = d.child_by_field_name("declarator")
                while inner is not None and inner.type in ("pointer_declarator", "reference_declarator"):
                    inner = inner.child_by_field_name("declarator") or (inner.named_children[-1] if inner.named_children else None)
                if inner is not None and node_text(inner) == name:
                    v = d.child_by_field_name("value")
                    return v is not None and receiver_is(ctx, unit, v, v, types, depth + 1)
        return False
    return resolves_to(ctx, node_text(tnode), types)


def bound_objects(unit: Unit, name: str, at: ts.Node, depth: int = 0) -> list[str]:
    """`name` and the objects it is bound to, nearest first: a local reference initialised from another variable
    (`const Props &pr = p;`, `auto &r = p;`) or a pointer that cannot be re-pointed (`cudaDeviceProp *const q =
    &p;`) names the struct that `cudaGetDeviceProperties(&p, dev)` filled, so `pr.clockRate` reads device `dev`.
    A plain pointer may be re-pointed between the getter and the read, so it is not followed."""
    out = [name]
    got = declaration_of(unit.root, name, at) if depth < 4 else None
    if got is None:
        return out
    decl = got[0]
    for d in named_children(decl):
        if d.type != "init_declarator":
            continue
        inner = d.child_by_field_name("declarator")
        value = d.child_by_field_name("value")
        if inner is None or value is None:
            continue
        if inner.type == "reference_declarator":
            target = value
        elif inner.type == "pointer_declarator" and any(c.type == "type_qualifier" and node_text(c) == "const"
                                                        for c in inner.named_children):
            if value.type != "pointer_expression" or not node_text(value).startswith("&"):
                continue
            target = value.named_children[0] if value.named_children else value
        else:
            continue
        while inner is not None and inner.type in ("reference_declarator", "pointer_declarator"):
            inner = next((c for c in inner.named_children if c.type not in ("type_qualifier",)), None)
        if inner is None or node_text(inner) != name:
            continue
        while target.type == "parenthesized_expression" and target.named_children:
            target = target.named_children[0]
        if target.type == "identifier" and node_text(target) != name:
            out += bound_objects(unit, node_text(target), decl, depth + 1)
        return out
    return out


# ------------------------------------------------------------------ the rewrite
def _hoist_point(fe: ts.Node) -> tuple[ts.Node | None, str | None]:
    """The statement before which a declaration can go, or why there is none."""
    cur = fe
    while cur.parent is not None:
        p = cur.parent
        if p.type in _BLOCKS and not (p.parent is not None and p.parent.type == "lambda_expression"):
            return cur, None
        if p.type in _PP_BLOCKS and scope_of(p).function is not None:
            return cur, None
        if p.type in _LOOPS:
            body = p.child_by_field_name("body")
            if body is None or body.start_byte != cur.start_byte or body.end_byte != cur.end_byte:
                return None, "it is read in a loop header, where a declaration cannot go"
            return None, "it is read in the unbraced body of a loop"
        if p.type == "else_clause" and cur.type == "if_statement":
            return None, "it is read in an `else if` condition, where a declaration cannot go"
        if p.type in ("if_statement", "else_clause") and cur.type != "condition_clause" \
                and cur.type not in ("compound_statement",) and (p.child_by_field_name("condition") is None
                                                                 or p.child_by_field_name("condition").start_byte != cur.start_byte):
            return None, "it is read in an unbraced branch"
        if p.type == "case_statement":
            return None, "it is read right under a case label"
        if p.type == "lambda_expression":
            return None, "it is read inside a lambda, which may not capture the device variable"
        if p.type in ("translation_unit", "declaration_list", "field_declaration_list", "namespace_definition"):
            return None, "it is read outside a function body"
        cur = p
    return None, "no enclosing block"


def error_macro(ctx: FileContext, unit: Unit, fn: ts.Node | None) -> str | None:
    """The file's own CUDA error-check wrapper (`checkCudaErrors(cudaX(...))`, `CUDA_CHECK(...)`), preferring one used
    in the same function; one used only elsewhere is taken when its definition cannot `return` (which would not
    compile in a function of another return type)."""
    counts: dict[str, list[int]] = {}
    q = query("(call_expression function: (identifier) @w arguments: (argument_list . (call_expression function: (_) @in) .)) @c")
    for _, caps in ts.QueryCursor(q).matches(ctx.main.root):
        w = node_text(caps["w"][0])
        inner = normalize_name(node_text(caps["in"][0]))
        if w in _NOT_CHECKS or not _CHECK_NAME.search(w) or not inner.startswith("cuda") or inner.startswith("cudaGetError"):
            continue
        counts.setdefault(w, []).append(caps["c"][0].start_byte)
    if not counts:
        return None
    if fn is not None:
        local = [(len(v), w) for w, v in counts.items() if any(fn.start_byte <= s < fn.end_byte for s in v)]
        if local:
            return max(local)[1]
    for _, w in sorted(((len(v), w) for w, v in counts.items()), reverse=True):
        body = None
        for _, data in _project_texts(ctx):
            mo = re.search(rb"#[ \t]*define[ \t]+" + re.escape(w.encode()) + rb"\s*\(((?:[^\n\\]|\\\r?\n|\\)*)", data)
            if mo:
                body = mo.group(1)
                break
        if body is not None and re.search(rb"\breturn\b", body):
            continue
        return w
    return None


def _fresh_name(ctx: FileContext, candidates: list[str]) -> str:
    """The first candidate that neither the file nor its project headers use as a name (`prop.clockRate`, a
    member access, does not count): the local must not hide anything the statement may read."""
    texts = [data for _, data in _project_texts(ctx)]

    def used(name: str, member_ok: bool = True) -> bool:
        rx = (rb"(?<![.>\w])" if member_ok else rb"\b") + re.escape(name.encode()) + rb"\b"
        return any(re.search(rx, t) for t in texts)

    for c in candidates:
        if not used(c):
            return c
    base = candidates[-1]
    i = 2
    while used(f"{base}_{i}", False):
        i += 1
    return f"{base}_{i}"


def _earlier_hoists(stmt: ts.Node, field: str) -> int:
    """How many other statements before `stmt` in its function read `field` and would get a hoisted local."""
    fn = scope_of(stmt).function
    if fn is None:
        return 0
    starts = set()
    for _, fe, f in walk.field_matches(fn, FIELD_READS):
        if node_text(f) != field or fe.start_byte >= stmt.start_byte:
            continue
        other, _ = _hoist_point(fe)
        if other is not None and other.start_byte < stmt.start_byte:
            starts.add(other.start_byte)
    return len(starts)


def hoist_edits(ctx: FileContext, unit: Unit, fe: ts.Node, field: str, attr: str, device: str,
                fields: set[str]) -> tuple[list[Edit], str | None, str]:
    """(edits, why none, the variable's name) for reading `fe` (`prop.field`) once into a queried local."""
    if unit.in_macro:
        return [], "it is read inside a macro definition", ""
    stmt, why = _hoist_point(fe)
    if stmt is None:
        return [], why, ""
    recv = fe.child_by_field_name("argument")
    want = normalize(node_text(recv)) if recv is not None else ""
    same: list[ts.Node] = []
    for fe2, r, f in walk.pair_matches(stmt, FIELD_READS, "argument"):
        if node_text(f) == field and normalize(node_text(r)) == want:
            same.append(fe2)
    if not same:
        same = [fe]
    for n in same:
        p = n.parent
        while p is not None and p.type == "parenthesized_expression":
            p = p.parent
        if p is not None and (p.type in ("update_expression",) or (p.type == "pointer_expression" and node_text(p).startswith("&"))
                              or (p.type == "assignment_expression" and p.child_by_field_name("left") is not None
                                  and p.child_by_field_name("left").start_byte <= n.start_byte < p.child_by_field_name("left").end_byte)):
            return [], "the same statement also writes it or takes its address", ""
    base = re.sub(r"\W+", "_", want.replace("->", "_").replace(".", "_")).strip("_") or "prop"
    # one fix pass applies every statement's hoist at once: statements of one function that read the same
    # field get distinct names (`computeMode`, `computeMode_2`, ...) so no block declares one twice
    nth = _earlier_hoists(stmt, field)
    suffix = "" if nth == 0 else f"_{nth + 1}"
    name = _fresh_name(ctx, [field + suffix, f"{base}_{field}{suffix}"])
    data = ctx.source.data
    s, _ = unit.abs(stmt)
    ls = data.rfind(b"\n", 0, s) + 1
    indent = re.match(rb"[ \t]*", data[ls:s]).group(0).decode()
    if data[ls:s].strip():
        indent = re.match(rb"[ \t]*", data[ls:]).group(0).decode()
    nl = ctx.source.newline.decode()
    call = f"cudaDeviceGetAttribute(&{name}, {attr}, {device})"
    check = error_macro(ctx, unit, scope_of(fe).function)
    text = f"int {name} = 0;{nl}{indent}{check + '(' + call + ')' if check else call};{nl}{indent}"
    edits = [Edit(s, s, text)]
    for n in same:
        a, b = unit.abs(n)
        edits.append(Edit(a, b, name))
    return edits, None, name
