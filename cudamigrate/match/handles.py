"""Library handles and streams as variables in a scope, not as spellings.

`cublasCreate(&h)` in one function and `cublasDestroy(h)` in another are the same handle only when both `h` name
the same variable: a member or a global, never two locals. The key of a handle expression is its base variable's
declaration (for function-local variables and parameters) or its name (members, globals, anything not declared in
the function), plus the member/subscript path written after it. Address-of, dereference and parentheses are
dropped first, so `&h`, `&(h)`, `(&h)`, `h`, `(h)` and `this->h` have one key, `&*p`, `*p` and `p` another.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field

import tree_sitter as ts
from typing import Any

from ..parse.treesitter import Unit
from .context import FileContext, declaration_index, named_children, node_text, normalize, normalize_name, scope_of

_SCOPES = {"compound_statement", "for_statement", "for_range_loop", "function_definition", "lambda_expression",
           "if_statement", "while_statement", "switch_statement", "catch_clause"}
HandleKey = tuple


def strip_handle(node: ts.Node) -> ts.Node:
    """Drop parentheses, casts' outer parens, `&` and `*` around a handle expression."""
    cur = node
    while True:
        if cur.type == "parenthesized_expression":
            inner = named_children(cur)
            if len(inner) != 1:
                return cur
            cur = inner[0]
        elif cur.type == "pointer_expression":
            arg = cur.child_by_field_name("argument")
            if arg is None:
                return cur
            cur = arg
        else:
            return cur


def _index(ctx: FileContext, unit: Unit) -> dict:
    cache = ctx.__dict__.setdefault("_decl_index", {})
    if id(unit) not in cache:
        cache[id(unit)] = declaration_index(unit.root)
    return cache[id(unit)]


def _scope_node(decl: ts.Node) -> ts.Node | None:
    cur = decl.parent
    while cur is not None and cur.type not in _SCOPES:
        cur = cur.parent
    return cur


def _local_declarations(ctx: FileContext, unit: Unit) -> dict[tuple[str, int], tuple[list[int], list[ts.Node]]]:
    """(name, start of the enclosing function) -> that function's declarations of the name, by position: a
    lookup bisects instead of scanning every declaration of the name (500 `cublasHandle_t h;` in one function
    made every lookup, and so CM212, quadratic)."""
    cache = ctx.__dict__.setdefault("_local_decls", {})
    got = cache.get(id(unit))
    if got is None:
        groups: dict[tuple[str, int], list[ts.Node]] = {}
        for name, entries in _index(ctx, unit).items():
            for decl, _t, _owns, dfn in entries:
                if dfn is not None:
                    groups.setdefault((name, dfn), []).append(decl)
        got = {}
        for k, decls in groups.items():
            decls.sort(key=lambda d: d.start_byte)  # stable: file order among equal starts, as the scan took them
            got[k] = ([d.start_byte for d in decls], decls)
        cache[id(unit)] = got
    return got


def local_declaration(ident: ts.Node, unit: Unit, ctx: FileContext) -> ts.Node | None:
    """The function-local declaration (variable or parameter) that `ident` refers to, or None (member, global):
    the last one before it in its function whose block encloses it (memoized per identifier)."""
    memo = ctx.__dict__.setdefault("_local_decl_of", {})
    key = (id(unit), ident.start_byte, ident.end_byte)
    if key in memo:
        return memo[key]
    best = None
    fn = scope_of(ident).function
    if fn is not None:
        starts, decls = _local_declarations(ctx, unit).get((node_text(ident), fn.start_byte), ([], []))
        i = bisect_right(starts, ident.start_byte)
        while i > 0:
            i -= 1
            decl = decls[i]
            sc = _scope_node(decl)
            if sc is not None and not (sc.start_byte <= ident.start_byte < sc.end_byte):
                continue  # declared in a block that does not enclose this use
            while i > 0 and starts[i - 1] == decl.start_byte:  # ties: the first in file order, as before
                i -= 1
                prev_sc = _scope_node(decls[i])
                if prev_sc is None or prev_sc.start_byte <= ident.start_byte < prev_sc.end_byte:
                    decl = decls[i]
            best = decl
            break
    memo[key] = best
    return best


def _uses_by_declaration(name: str, unit: Unit, ctx: FileContext) -> dict[int, list[ts.Node]]:
    """id(declaration) -> the identifiers `name` in the unit that refer to it (one walk of the unit, one lookup
    per identifier): what `escapes` reads instead of walking the declaration's scope once per handle."""
    cache = ctx.__dict__.setdefault("_uses_by_decl", {})
    key = (id(unit), name)
    got = cache.get(key)
    if got is None:
        idents = ctx.__dict__.setdefault("_idents_by_name", {})
        if id(unit) not in idents:
            by_name: dict[str, list[ts.Node]] = {}
            stack = [unit.root]
            while stack:
                n = stack.pop()
                if n.type == "identifier":
                    by_name.setdefault(node_text(n), []).append(n)
                stack.extend(n.children)
            idents[id(unit)] = by_name
        got = {}
        for n in idents[id(unit)].get(name, []):
            decl = local_declaration(n, unit, ctx)
            if decl is not None:
                got.setdefault(id(decl), []).append(n)
        cache[key] = got
    return got


def handle_key(node: ts.Node | None, unit: Unit, ctx: FileContext) -> HandleKey | None:
    """A comparable identity for the handle an argument names (see the module docstring)."""
    if node is None:
        return None
    cur = strip_handle(node)
    if cur.type == "identifier":
        decl = local_declaration(cur, unit, ctx)
        if decl is not None:
            return ("local", id(unit), decl.start_byte, node_text(cur), "")
        return ("name", node_text(cur), "")
    if cur.type == "field_expression":
        arg = cur.child_by_field_name("argument")
        fld = cur.child_by_field_name("field")
        if arg is None or fld is None:
            return ("text", normalize(node_text(cur)))
        if strip_handle(arg).type == "this":
            return ("name", node_text(fld), "")
        base = handle_key(arg, unit, ctx)
        return None if base is None else base[:-1] + (base[-1] + "." + node_text(fld),)
    if cur.type == "subscript_expression":
        arg = cur.child_by_field_name("argument")
        idx = cur.child_by_field_name("indices") or cur.child_by_field_name("index")
        base = handle_key(arg, unit, ctx)
        sub = normalize(node_text(idx)) if idx is not None else ""
        return None if base is None else base[:-1] + (base[-1] + "[" + sub.strip("[]") + "]",)
    return ("text", normalize(node_text(cur)))


def same_handle(a: HandleKey | None, b: HandleKey | None) -> bool:
    """Equal keys; or a member/global/unresolved name and a local of that name (when the parser could not place
    one of them in a function, the name is all there is: only two locals of different scopes are told apart)."""
    if a is None or b is None:
        return False
    if a == b:
        return True
    kinds = {a[0], b[0]}
    if kinds == {"local", "name"}:
        loc, nam = (a, b) if a[0] == "local" else (b, a)
        return loc[3] == nam[1] and loc[4] == nam[2]
    return False


def _loose(key: HandleKey) -> tuple:
    """What two keys `same_handle` may equate share: a local's and a name's (name, path), a text's text."""
    if key[0] == "local":
        return ("n", key[3], key[4])
    if key[0] == "name":
        return ("n", key[1], key[2])
    return key


@dataclass
class KeyIndex:
    """Payloads by handle key, answering "which keys `same_handle` this one" with dictionary lookups: a local
    matches itself and a name of its spelling; a name matches itself and the locals of its spelling."""

    exact: dict[HandleKey, list[Any]] = field(default_factory=dict)
    names: dict[tuple, list[tuple[HandleKey, Any]]] = field(default_factory=dict)
    locals: dict[tuple, list[tuple[HandleKey, Any]]] = field(default_factory=dict)

    def add(self, key: HandleKey, payload: Any) -> None:
        self.exact.setdefault(key, []).append(payload)
        if key[0] == "name":
            self.names.setdefault(_loose(key), []).append((key, payload))
        elif key[0] == "local":
            self.locals.setdefault(_loose(key), []).append((key, payload))

    def same(self, want: HandleKey) -> Iterator[Any]:
        yield from self.exact.get(want, [])
        other = self.names if want[0] == "local" else self.locals if want[0] == "name" else {}
        yield from (p for k, p in other.get(_loose(want), []) if k != want and same_handle(k, want))


@dataclass
class ArgIndex:
    """The handles named at one argument of every call of some names: a lookup per match instead of computing
    and comparing every call's key for every match (N handles in one function made CM211 and CM212
    quadratic)."""

    calls: KeyIndex = field(default_factory=KeyIndex)  # payload: (unit, call)
    getters: list[tuple[Unit, ts.Node, list[HandleKey]]] = field(default_factory=list)  # `getter()` arguments


def arg_index(ctx: FileContext, names: list[str], idx: int) -> ArgIndex:
    """`ArgIndex` of argument `idx` of every call of `names` in the file (kept per file context)."""
    memo = ctx.__dict__.setdefault("_arg_index", {})
    key = (tuple(names), idx)
    got = memo.get(key)
    if got is None:
        got = memo[key] = ArgIndex()
        for name in dict.fromkeys(names):
            for unit, call in ctx.calls.get(name, []):
                args = named_children(call.child_by_field_name("arguments"))
                if idx >= len(args):
                    continue
                k = handle_key(args[idx], unit, ctx)
                if k is not None:
                    got.calls.add(k, (unit, call))
                returned = returned_handles(args[idx], ctx)
                if returned:
                    got.getters.append((unit, call, returned))
    return got


def _subscript_literal(path: str) -> bool:
    """`[0]`, `[3].blas`: the element is named by an integer literal (two such paths name distinct elements)."""
    inner = path[1:].split("]", 1)[0]
    return inner.isdigit()


def same_or_element(a: HandleKey | None, b: HandleKey | None) -> bool:
    """`same_handle`, or two elements of one array of handles unless both indices are different literals:
    `handles[dev]` returned by a getter may be `handles[0]` (an array entry reached through a getter is
    not a handle nothing binds)."""
    if same_handle(a, b):
        return True
    if a is None or b is None or not (a[-1].startswith("[") and b[-1].startswith("[")):
        return False
    if _subscript_literal(a[-1]) and _subscript_literal(b[-1]):
        return False
    return same_handle(a[:-1] + ("",), b[:-1] + ("",))


def returned_handles(arg: ts.Node, ctx: FileContext) -> list[HandleKey]:
    """The handles an argument reaches through a getter defined in the file: `getCublasHandle()`, `*handlePtr()`,
    `ctx.blas()` with `cublasHandle_t getCublasHandle() { return handles[0]; }` name `handles[0]` (what each
    `return` of the getter names; members and globals, since a getter's locals end with it). One level."""
    cur = strip_handle(arg)
    if cur.type != "call_expression":
        return []
    fn = cur.child_by_field_name("function")
    if fn is None:
        return []
    if fn.type == "field_expression":
        fld = fn.child_by_field_name("field")
        name = node_text(fld) if fld is not None else ""
    else:
        name = normalize_name(node_text(fn)).split("::")[-1]
    memo = ctx.__dict__.setdefault("_returned_handles", {})
    if name not in memo:
        keys: list[HandleKey] = []
        for d in _definitions(ctx).get(name, []):
            body = d.child_by_field_name("body")
            stack = [body] if body is not None else []
            while stack:
                n = stack.pop()
                if n.type == "return_statement":
                    expr = next(iter(named_children(n)), None)
                    key = handle_key(expr, ctx.main, ctx) if expr is not None else None
                    if key is not None and key[0] != "local":
                        keys.append(key)
                elif n.type != "lambda_expression":
                    stack.extend(n.children)
        memo[name] = keys
    return list(memo[name])


def _use_context(node: ts.Node) -> ts.Node:
    """Climb from a variable through `( )`, `&`, `*` and casts to the expression that consumes it."""
    cur = node
    while cur.parent is not None and cur.parent.type in ("parenthesized_expression", "pointer_expression",
                                                         "cast_expression"):
        cur = cur.parent
    return cur


def escapes(node: ts.Node | None, unit: Unit, ctx: FileContext, own_call: ts.Node) -> bool:
    """Does the function-local handle named by `node` leave its function? A parameter (the caller owns it), or a
    use that is returned, assigned or initialized into something else, captured by a lambda, or passed to a
    function that is not a cuBLAS routine. Members and globals are never said to escape (they are compared
    file-wide by name)."""
    if node is None:
        return False
    cur = strip_handle(node)
    aggregate = False  # `handles[i]`, `ws.blas`: the handle lives in an array or struct
    while cur.type in ("subscript_expression", "field_expression"):
        nxt = cur.child_by_field_name("argument")
        if nxt is None:
            return False
        cur, aggregate = strip_handle(nxt), True
    if cur.type != "identifier":
        return False
    decl = local_declaration(cur, unit, ctx)
    if decl is None:
        return False
    if decl.type in ("parameter_declaration", "optional_parameter_declaration"):
        return True
    scope = _scope_node(decl)
    if scope is None:
        return False
    for n in _uses_by_declaration(node_text(cur), unit, ctx).get(id(decl), []):
        if n.start_byte < decl.end_byte or not (scope.start_byte <= n.start_byte < scope.end_byte):
            continue
        if own_call.start_byte <= n.start_byte < own_call.end_byte:
            continue
        if _escaping_use(n, aggregate):
            return True
    return False


def _takes_address(ident: ts.Node) -> bool:
    cur = ident.parent
    while cur is not None and cur.type in ("parenthesized_expression", "pointer_expression", "cast_expression"):
        if cur.type == "pointer_expression" and node_text(cur).lstrip("(").startswith("&"):
            return True
        cur = cur.parent
    return False


def _escaping_use(ident: ts.Node, aggregate: bool = False) -> bool:
    """An array or struct of handles escapes whenever it is passed on: the callee reaches every handle in it."""
    use = _use_context(ident)
    p = use.parent
    if p is None:
        return False
    anc = p
    while anc is not None and anc.type not in ("function_definition",):
        if anc.type == "lambda_expression":
            return True
        anc = anc.parent
    if p.type == "return_statement":
        return True
    if p.type == "argument_list":
        # its address handed to another function (`init(&h)`): that function may create, bind or keep it; passed
        # by value to a helper that runs BLAS work on it (`gemm(h, ...)`) it stays this function's handle
        call = p.parent
        fn = call.child_by_field_name("function") if call is not None and call.type == "call_expression" else None
        callee = normalize_name(node_text(fn)).split("::")[-1] if fn is not None else ""
        return not callee.startswith("cublas") and (aggregate or _takes_address(ident))
    if p.type == "assignment_expression":
        return p.child_by_field_name("right") is not None and p.child_by_field_name("right").start_byte == use.start_byte
    if p.type in ("init_declarator", "initializer_list", "initializer_pair"):
        return True
    return False


def _definitions(ctx: FileContext) -> dict[str, list[ts.Node]]:
    """Function definitions of the main unit by unqualified name (cached)."""
    got = ctx.__dict__.get("_fn_defs")
    if got is None:
        from .context import function_name_of

        got = {}
        stack = [ctx.main.root]
        while stack:
            n = stack.pop()
            if n.type == "function_definition":
                name = function_name_of(n)
                if name:
                    got.setdefault(name.split("::")[-1], []).append(n)
            stack.extend(n.children)
        ctx.__dict__["_fn_defs"] = got
    return got


def _parameter_names(fn: ts.Node) -> list[str | None]:
    from .context import declarator_name

    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    params = d.child_by_field_name("parameters") if d is not None else None
    out: list[str | None] = []
    for p in named_children(params):
        if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        pd = p.child_by_field_name("declarator")
        got = declarator_name(pd) if pd is not None else None
        out.append(got[0] if got else None)
    return out


def passed_to_helper_that_calls(key: HandleKey, ctx: FileContext, names: list[str], arg_idx: int,
                                within: ts.Node | None) -> bool:
    """One level through the file's own helpers: the handle is passed (by value, by address or as the array it
    lives in) to a function defined in this file whose matching parameter reaches one of `names` at `arg_idx`,
    e.g. `run(h)` with `void run(cublasHandle_t x) { cublasSetStream(x, s); }`. The helpers' call arguments
    are indexed once per file (payload: the call, the argument's position, the helper's definitions)."""
    index = _helper_args(ctx)
    cands = list(index.same(key))
    if key[-1].startswith("["):  # `handles` passed for handle `handles[i]`
        cands += [p for p in index.same(key[:-1] + ("",)) if p[3][-1] == ""]
    seen: set[tuple[int, int]] = set()
    for call, i, fns, passed in cands:
        if (call.start_byte, i) in seen:
            continue
        seen.add((call.start_byte, i))
        if within is not None and not (within.start_byte <= call.start_byte < within.end_byte):
            continue
        if not _same_or_contains(passed, key):
            continue
        for fn in fns:
            params = _parameter_names(fn)
            if i >= len(params) or params[i] is None:
                continue
            if _calls_on_param(fn, params[i], names, arg_idx, ctx):
                return True
    return False


def _helper_args(ctx: FileContext) -> KeyIndex:
    """Every argument of a call (in the main unit) of a function the file defines, by handle key."""
    got = ctx.__dict__.get("_helper_args")
    if got is None:
        got = ctx.__dict__["_helper_args"] = KeyIndex()
        unit = ctx.main
        for fname, fns in _definitions(ctx).items():
            for _unit, call in ctx.calls.get(fname, []):
                if _unit is not unit:
                    continue
                for i, a in enumerate(named_children(call.child_by_field_name("arguments"))):
                    ak = handle_key(a, unit, ctx)
                    if ak is not None:
                        got.add(ak, (call, i, fns, ak))
    return got


def _same_or_contains(passed: HandleKey, key: HandleKey) -> bool:
    """`h` passed for handle `h`, or `handles` passed for handle `handles[i]`."""
    if same_handle(passed, key):
        return True
    return passed[-1] == "" and key[-1].startswith("[") and same_handle(passed, key[:-1] + ("",))


def _calls_on_param(fn: ts.Node, param: str, names: list[str], arg_idx: int, ctx: FileContext) -> bool:
    for name in names:
        for unit, call in ctx.calls.get(name, []):
            if unit is not ctx.main or not (fn.start_byte <= call.start_byte < fn.end_byte):
                continue
            args = named_children(call.child_by_field_name("arguments"))
            if arg_idx < len(args):
                base = strip_handle(args[arg_idx])
                while base.type in ("subscript_expression", "field_expression"):
                    nxt = base.child_by_field_name("argument")
                    if nxt is None:
                        break
                    base = strip_handle(nxt)
                if base.type == "identifier" and node_text(base) == param:
                    return True
    return False
