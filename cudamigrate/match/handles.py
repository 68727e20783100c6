"""Library handles and streams as variables in a scope, not as spellings.

`cublasCreate(&h)` in one function and `cublasDestroy(h)` in another are the same handle only when both `h` name
the same variable: a member or a global, never two locals. The key of a handle expression is its base variable's
declaration (for function-local variables and parameters) or its name (members, globals, anything not declared in
the function), plus the member/subscript path written after it. Address-of, dereference and parentheses are
dropped first, so `&h`, `&(h)`, `(&h)`, `h`, `(h)` and `this->h` have one key, `&*p`, `*p` and `p` another.
"""

from __future__ import annotations

import tree_sitter as ts

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


def local_declaration(ident: ts.Node, unit: Unit, ctx: FileContext) -> ts.Node | None:
    """The function-local declaration (variable or parameter) that `ident` refers to, or None (member, global)."""
    name = node_text(ident)
    fn = scope_of(ident).function
    if fn is None:
        return None
    best = None
    for decl, _t, _owns, dfn in _index(ctx, unit).get(name, []):
        if dfn is None or dfn != fn.start_byte or decl.start_byte > ident.start_byte:
            continue
        sc = _scope_node(decl)
        if sc is not None and not (sc.start_byte <= ident.start_byte < sc.end_byte):
            continue  # declared in a block that does not enclose this use
        if best is None or decl.start_byte > best.start_byte:
            best = decl
    return best


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
    name = node_text(cur)
    stack = [scope]
    while stack:
        n = stack.pop()
        if n.type == "identifier" and node_text(n) == name and n.start_byte >= decl.end_byte:
            if own_call.start_byte <= n.start_byte < own_call.end_byte:
                continue
            if local_declaration(n, unit, ctx) is not decl:
                continue
            if _escaping_use(n, aggregate):
                return True
            continue
        stack.extend(n.children)
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
    e.g. `run(h)` with `void run(cublasHandle_t x) { cublasSetStream(x, s); }`."""
    defs = _definitions(ctx)
    unit = ctx.main
    if not defs:
        return False
    for fname, fns in defs.items():
        for _unit, call in ctx.calls.get(fname, []):
            if _unit is not unit or (within is not None and not (within.start_byte <= call.start_byte < within.end_byte)):
                continue
            args = named_children(call.child_by_field_name("arguments"))
            for i, a in enumerate(args):
                ak = handle_key(a, unit, ctx)
                if ak is None or not _same_or_contains(ak, key):
                    continue
                for fn in fns:
                    params = _parameter_names(fn)
                    if i >= len(params) or params[i] is None:
                        continue
                    if _calls_on_param(fn, params[i], names, arg_idx, ctx):
                        return True
    return False


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
