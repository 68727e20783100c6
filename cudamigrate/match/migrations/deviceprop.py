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
from bisect import bisect_left
from pathlib import Path

import tree_sitter as ts

from ...findings.model import Edit
from ...parse import walk
from ...parse.treesitter import Unit
from ..context import CALL_PATTERNS, FileContext, declaration_of, named_children, node_text, normalize, normalize_name, scope_of, type_aliases

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
        from ..shadows import read_header, included_headers

        cache = [(ctx.source.path, ctx.source.data)]
        try:
            heads, _ = included_headers(ctx.source.path, ctx.source.data) if ctx.source.path.is_file() else ([], False)
        except OSError:
            heads = []
        for p in heads:
            got = read_header(p)
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
    from ..shadows import header_tree

    got = {}
    for path, data in _project_texts(ctx):
        if b"cudaDeviceProp" not in data and not any(a.encode() in data for a in _aliases(ctx)):
            continue
        root = ctx.main.root if path == ctx.source.path else header_tree(path, data).root_node
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


def calls_from(ctx: FileContext, fn: ts.Node) -> dict[str, list[ts.Node]]:
    """The calls that start in function `fn` by normalized callee name, in `ctx.calls`' order (kept per file
    context): the getter calls before a field read, found in that function alone, not by indexing every call of
    the file at each re-scan. Those calls are under `fn`, or hold it and start where it starts."""
    memo = ctx.__dict__.setdefault("_calls_from", {})
    if fn.id not in memo:
        found: list[tuple[ts.Node, ts.Node]] = []
        up = fn.parent
        while up is not None and up.start_byte == fn.start_byte:
            if up.type == "call_expression":
                found[:0] = [(up, f) for f in up.children_by_field_name("function") if f.is_named]  # ancestors first
            up = up.parent
        found += [(call, f) for _, call, f in walk.field_matches(fn, CALL_PATTERNS)]
        out: dict[str, list[ts.Node]] = {}
        for call, f in found:
            out.setdefault(normalize_name(node_text(f)), []).append(call)
        memo[fn.id] = out
    return memo[fn.id]


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
    compile in a function of another return type). The file's wrapped calls are found once per file and the
    answer kept per function: a query of the whole file per read made N reads cost N files."""
    memo = ctx.__dict__.setdefault("_error_macro", {})
    key = fn.start_byte if fn is not None else None
    if key not in memo:
        memo[key] = _error_macro(ctx, fn)
    return memo[key]


WRAPPER_CALLS = (walk.FieldPattern("call_expression", "function", "identifier"),)


def error_wrapped_calls(root: ts.Node) -> list[tuple[ts.Node, ts.Node, ts.Node]]:
    """(call, wrapper name, inner function) of every `W(f(...))`: a call of an identifier whose one argument
    is a call, the matches of `(call_expression function: (identifier) @w arguments: (argument_list .
    (call_expression function: (_) @in) .)) @c`, read from the tree's call index (parse/walk.py) instead of
    that query, which costs ~20 ms to compile in every process that meets a device-property read."""
    out = []
    for _, call, w in walk.field_matches(root, WRAPPER_CALLS):
        args = call.child_by_field_name("arguments")
        if args is None or args.type != "argument_list":
            continue
        named = args.named_children
        if len(named) != 1 or named[0].type != "call_expression":
            continue
        inner = named[0].child_by_field_name("function")
        if inner is not None and inner.is_named:
            out.append((call, w, inner))
    return out


def _error_macro(ctx: FileContext, fn: ts.Node | None) -> str | None:
    counts: dict[str, list[int]] | None = ctx.__dict__.get("_error_macro_counts")
    if counts is None:
        counts = ctx.__dict__["_error_macro_counts"] = {}
        for c, wn, innern in error_wrapped_calls(ctx.main.root):
            w = node_text(wn)
            inner = normalize_name(node_text(innern))
            if w in _NOT_CHECKS or not _CHECK_NAME.search(w) or not inner.startswith("cuda") or inner.startswith("cudaGetError"):
                continue
            counts.setdefault(w, []).append(c.start_byte)
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
    seen: dict[tuple[bytes, bool], bool] = ctx.__dict__.setdefault("_dp_used", {})

    def used(name: str, member_ok: bool = True) -> bool:
        raw = name.encode()
        if not re.fullmatch(rb"\w+", raw):
            rx = (rb"(?<![.>\w])" if member_ok else rb"\b") + re.escape(raw) + rb"\b"
            return any(re.search(rx, data) for _, data in _project_texts(ctx))
        # a whole word (not after `.`/`->` when member_ok) of a text: one search per candidate, kept per file;
        # the sets of every word of the texts cost a tenth of the editor's warm re-scan of a 1,700-line file
        if (raw, member_ok) not in seen:  # (the literal first: a pattern that opens with a look-behind is not
            # searched for its literal prefix, and cost a millisecond per text)
            word = re.compile(re.escape(raw) + rb"(?!\w)")
            before = rb"._>" if member_ok else b"_"
            seen[(raw, member_ok)] = any(
                m.start() == 0 or not (data[m.start() - 1:m.start()].isalnum() or data[m.start() - 1:m.start()] in before)
                for _, data in _project_texts(ctx) for m in word.finditer(data))
        return seen[(raw, member_ok)]

    for c in candidates:
        if not used(c):
            return c
    base = candidates[-1]
    i = 2
    while used(f"{base}_{i}", False):
        i += 1
    return f"{base}_{i}"


def _earlier_hoists(ctx: FileContext, stmt: ts.Node, field: str, device: str) -> int:
    """How many other statements before `stmt` in its function read `field` and get a hoisted local of their own
    (not those that reuse an earlier statement's, `_hoist_owner`). The function's reads are listed once (per file
    context) and each answer is a bisection: a walk of the function per read made N reads in one function cost N^2."""
    fn = scope_of(stmt).function
    if fn is None:
        return 0
    memo = ctx.__dict__.setdefault("_hoist_reads", {})
    key = (fn.start_byte, fn.end_byte, field, device)
    if key not in memo:
        reads = []  # (start of the read, start of its hoist point when that statement owns its local), file order
        for fe, r, f in walk.pair_matches(fn, FIELD_READS, "argument"):
            if node_text(f) != field:
                continue
            other, _ = _hoist_point(fe)
            owns = other is not None and _hoist_owner(ctx, other, field, normalize(node_text(r)), device).id == other.id
            reads.append((fe.start_byte, other.start_byte if owns and other is not None else None))
        reads.sort()
        starts, distinct, seen = [], [], set()
        for r0, o in reads:
            # a hoist point is the statement holding the read, so it starts no later than the read
            if o is not None and o <= r0:
                seen.add(o)
            starts.append(r0)
            distinct.append(len(seen))
        memo[key] = (starts, distinct)
    starts, distinct = memo[key]
    i = bisect_left(starts, stmt.start_byte)
    return distinct[i - 1] if i else 0


def _reads_only(stmt: ts.Node, field: str, want: str) -> bool:
    """`stmt` reads `want.field` and neither writes it nor takes its address (its read can be hoisted)."""
    found = False
    for fe2, r, f in walk.pair_matches(stmt, FIELD_READS, "argument"):
        if node_text(f) != field or normalize(node_text(r)) != want:
            continue
        found = True
        p = fe2.parent
        while p is not None and p.type == "parenthesized_expression":
            p = p.parent
        if p is not None and (p.type == "update_expression" or (p.type == "pointer_expression" and node_text(p).startswith("&"))
                              or (p.type == "assignment_expression" and p.child_by_field_name("left") is not None
                                  and _within(fe2, p.child_by_field_name("left")))):
            return False
    return found


def _within(n: ts.Node, outer: ts.Node) -> bool:
    return outer.start_byte <= n.start_byte < outer.end_byte


_NAME = re.compile(r"[A-Za-z_]\w*")


def _disturbs(stmt: ts.Node, field: str, want: str, device: str) -> bool:
    """Whether `stmt` may change `want.field` or the device it is queried for: it names the receiver other than
    to read one of its fields, or writes (or takes the address of) a name the device expression uses."""
    base = _NAME.match(want)
    dev_names = set(_NAME.findall(device))
    for n in walk.typed_nodes(stmt, frozenset({"identifier"})):
        name = node_text(n)
        if base is not None and name == base.group(0):
            p = n.parent
            if p is None or p.type != "field_expression" or normalize(node_text(p.child_by_field_name("argument") or p)) != want:
                return True  # `&prop`, `prop = other`, `fill(prop)`: the struct may change
            q = p.parent
            if q is not None and ((q.type == "assignment_expression" and q.child_by_field_name("left") is not None
                                   and _within(p, q.child_by_field_name("left"))) or q.type == "update_expression"):
                return True  # `prop.field = ...`
        if name in dev_names:
            q = n.parent
            if q is not None and (q.type == "update_expression" or (q.type == "pointer_expression" and node_text(q).startswith("&"))
                                  or (q.type == "assignment_expression" and q.child_by_field_name("left") is not None
                                      and _within(n, q.child_by_field_name("left")))):
                return True
    return False


def _hoist_owner(ctx: FileContext, stmt: ts.Node, field: str, want: str, device: str) -> ts.Node:
    """The statement whose queried local `stmt`'s reads of `want.field` use: the earliest earlier statement of
    the same block that reads it too, with nothing in between that may change the struct or the device (one
    `cudaDeviceGetAttribute` per field per scope: deviceQuery prints `memoryClockRate` and then computes the
    bandwidth from it); else `stmt` itself. One forward pass per block (memoised in the file context): a walk
    back from each statement made N reads in one block cost N^2."""
    p = stmt.parent
    if p is None or p.type not in _BLOCKS:
        return stmt
    memo = ctx.__dict__.setdefault("_hoist_owners", {})
    key = (p.start_byte, p.end_byte, field, want, device)
    owners = memo.get(key)
    if owners is None:
        owners = {}
        first: ts.Node | None = None  # the earliest reader since the last statement that may change the struct
        for x in (c for c in p.named_children if c.type != "comment"):
            if first is not None:
                owners[x.id] = first
            disturbs = _disturbs(x, field, want, device)
            if _reads_only(x, field, want) and not disturbs:
                if first is None:
                    first = x
            elif disturbs:
                first = None
        memo[key] = owners
    return owners.get(stmt.id, stmt)


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
    owner = _hoist_owner(ctx, stmt, field, want, device)
    base = re.sub(r"\W+", "_", want.replace("->", "_").replace(".", "_")).strip("_") or "prop"
    # one fix pass applies every statement's hoist at once: statements of one function that read the same
    # field get distinct names (`computeMode`, `computeMode_2`, ...) so no block declares one twice; a statement
    # that follows another reading it in the same block reuses that one's local
    nth = _earlier_hoists(ctx, owner, field, device)
    suffix = "" if nth == 0 else f"_{nth + 1}"
    name = _fresh_name(ctx, [field + suffix, f"{base}_{field}{suffix}"])
    if owner.id != stmt.id:
        return [Edit(*unit.abs(n), name) for n in same], None, name
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


# ------------------------------------------------------------------ a capability flag whose feature was removed
# Output calls whose only effect is to print their arguments; a statement made of one of them (or of a `<<`
# chain into std::cout/cerr/clog) can be compiled out without changing anything but what is printed.
