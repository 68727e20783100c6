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


# ------------------------------------------------------------------ a capability flag whose feature was removed
# Output calls whose only effect is to print their arguments; a statement made of one of them (or of a `<<`
# chain into std::cout/cerr/clog) can be compiled out without changing anything but what is printed.
PRINTS = frozenset({"printf", "std::printf", "fprintf", "std::fprintf", "puts", "std::puts", "fputs", "std::fputs"})
STREAMS = frozenset({"std::cout", "cout", "std::cerr", "cerr", "std::clog", "clog"})
PRINT_LEAVES = frozenset({"string_literal", "concatenated_string", "char_literal", "number_literal", "true", "false",
                          "raw_string_literal", "escape_sequence", "string_content", "comment"})


def _leaves_other_than(node: ts.Node, reads: list[ts.Node]) -> list[ts.Node]:
    """Named leaves of `node` outside the field reads `reads` that are not literals: what else it evaluates."""
    out: list[ts.Node] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if any(r.start_byte <= n.start_byte and n.end_byte <= r.end_byte for r in reads):
            continue
        if n.type in PRINT_LEAVES:
            continue
        kids = [c for c in n.children if c.is_named]
        if not kids:
            if n.is_named:
                out.append(n)
            continue
        stack.extend(kids)
    return out


def _only_prints(stmt: ts.Node, reads: list[ts.Node]) -> bool:
    """An expression statement that only prints literals and the flag (`printf("%s", p.flag ? "Yes" : "No");`)."""
    if stmt.type != "expression_statement" or not named_children(stmt):
        return False
    expr = named_children(stmt)[0]
    if expr.type == "call_expression":
        fn = normalize_name(node_text(expr.child_by_field_name("function")))
        args = named_children(expr.child_by_field_name("arguments"))
        if fn not in PRINTS:
            return False
        if fn in ("fprintf", "std::fprintf", "fputs", "std::fputs"):
            stream = args[0] if fn.endswith("printf") and args else (args[-1] if args else None)
            if stream is None or normalize_name(node_text(stream)) not in ("stdout", "stderr"):
                return False
            args = [a for a in args if a.id != stream.id]
        return all(not _leaves_other_than(a, reads) for a in args)
    if expr.type == "binary_expression":
        parts: list[ts.Node] = []
        cur = expr
        while cur.type == "binary_expression" and node_text(cur.child_by_field_name("operator")) == "<<":
            parts.append(cur.child_by_field_name("right"))
            cur = cur.child_by_field_name("left")
        if normalize_name(node_text(cur)) not in STREAMS:
            return False
        return all(normalize_name(node_text(p)) in ("std::endl", "endl") or not _leaves_other_than(p, reads)
                   for p in parts)
    return False


def _requires_flag(cond: ts.Node, reads: list[ts.Node]) -> bool:
    """A condition that can hold only when the flag is nonzero: the flag itself, `flag != 0`, `flag == 1`, or
    `flag && x` / `x && flag` with `x` free of calls and assignments."""
    while cond.type in ("parenthesized_expression", "condition_clause") and len(named_children(cond)) == 1:
        cond = named_children(cond)[0]
    if any(r.id == cond.id for r in reads):
        return True
    if cond.type != "binary_expression":
        return False
    op = node_text(cond.child_by_field_name("operator"))
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    if op in ("!=", "==") and left is not None and right is not None:
        want = {"!=": "0", "==": "1"}[op]
        for a, b in ((left, right), (right, left)):
            if node_text(b).strip() == want and _requires_flag(a, reads):
                return True
        return False
    if op == "&&" and left is not None and right is not None:
        for a, b in ((left, right), (right, left)):
            if _requires_flag(a, reads) and not any(
                    n.type in ("call_expression", "assignment_expression", "update_expression")
                    for n in walk_named(b)):
                return True
    return False


def walk_named(node: ts.Node) -> list[ts.Node]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(c for c in n.children if c.is_named)
    return out


def _capability_form(stmt: ts.Node, field: str, fe: ts.Node | None = None) -> tuple[str, str]:
    """(`print` | `if`, "") when the statement can be compiled out whole, else ("", why not)."""
    reads = [n for n in walk_named(stmt) if n.type == "field_expression"
             and node_text(n.child_by_field_name("field") or n) == field]
    if not reads:
        return "", "it does not read the flag"
    if stmt.type == "if_statement":
        cond = stmt.child_by_field_name("condition")
        at = fe if fe is not None else reads[0]
        if cond is None or not (cond.start_byte <= at.start_byte < cond.end_byte):
            return "", "it is read in a statement the fix cannot drop whole"
        if stmt.child_by_field_name("alternative") is not None:
            return "", "the `if` that tests it has an `else`"
        if not _requires_flag(cond, [r for r in reads if cond.start_byte <= r.start_byte < cond.end_byte]):
            return "", "the `if` that tests it could also hold without it"
        return "if", ""
    if _only_prints(stmt, reads):
        return "print", ""
    if stmt.type == "declaration":
        return "", "it is stored in a variable"
    return "", "it is read in a statement that does more than print it or test it"


def _own_lines(data: bytes, s: int, e: int) -> tuple[int, int] | None:
    """The line range of bytes s..e when nothing but blanks (and a trailing `//` comment) shares those lines."""
    ls = data.rfind(b"\n", 0, s) + 1
    le = data.find(b"\n", e)
    le = len(data) if le == -1 else le + 1
    tail = data[e:le].strip()
    if data[ls:s].strip() or (tail and not tail.startswith(b"//")):
        return None
    return ls, le


def removed_capability_edits(ctx: FileContext, unit: Unit, fe: ts.Node, field: str, guard: str,
                             remove: bool) -> tuple[list[Edit], str, str]:
    """Code that stops reading a capability flag whose feature the toolkit removed, as a reviewer writes it.

    The statement that reads the flag is either a print whose only other content is literals (NVIDIA's v13.0
    deviceQuery), or an `if` without `else` whose condition needs the flag set (its body uses the removed
    feature): it is wrapped in `#if GUARD` ... `#endif` so that older toolkits still compile it, or deleted
    when the project's declared minimum toolkit (`keep-compat`) already lacks the feature (`remove`).
    Neighbouring statements of the same kind share one guard (each read computes the same run, so the edit is
    the same and applied once). Returns (edits, form, why not): form is `print` or `if`."""
    if unit.in_macro:
        return [], "", "it is read in a macro definition"
    stmt: ts.Node | None = fe
    while stmt is not None and not (stmt.type.endswith("_statement") or stmt.type == "declaration"):
        stmt = stmt.parent
    if stmt is None:
        return [], "", "it is not read in a statement"
    form, why = _capability_form(stmt, field, fe)
    if not form:
        return [], "", why
    if stmt.parent is None or stmt.parent.type not in ("compound_statement", "case_statement"):
        return [], "", "the statement is the body of a branch or loop without braces"
    data = ctx.source.data
    if _own_lines(data, *unit.abs(stmt)) is None:
        return [], "", "the statement shares its lines with other code"
    # the run of neighbouring statements that are compiled out the same way (comments between them included)
    sibs = [c for c in stmt.parent.children if c.is_named]
    i = next(k for k, c in enumerate(sibs) if c.id == stmt.id)
    lo = hi = i

    def joins(c: ts.Node) -> bool:
        return bool(_capability_form(c, field)[0]) and _own_lines(data, *unit.abs(c)) is not None

    k = i - 1
    while k >= 0 and (sibs[k].type == "comment" or joins(sibs[k])):
        if sibs[k].type != "comment":
            lo = k
        k -= 1
    k = i + 1
    while k < len(sibs) and (sibs[k].type == "comment" or joins(sibs[k])):
        if sibs[k].type != "comment":
            hi = k
        k += 1
    first = _own_lines(data, *unit.abs(sibs[lo]))
    last = _own_lines(data, *unit.abs(sibs[hi]))
    assert first is not None and last is not None
    ls, le = first[0], last[1]
    if remove:
        return [Edit(ls, le, "")], form, ""
    nl = ctx.source.newline.decode()
    old = data[ls:le].decode("utf-8", "surrogateescape")
    if not old.endswith(("\n", "\r")):
        old += nl
    return [Edit(ls, le, f"#if {guard}{nl}{old}#endif{nl}")], form, ""
