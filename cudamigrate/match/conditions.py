"""`where:` conditions: small predicates over a match, combined with any/all/not."""

from __future__ import annotations

import re
from typing import Any

import tree_sitter as ts

from ..parse.treesitter import parent_of

from .context import FileContext, base_variable, declared_types, named_children, node_text, normalize, scope_of
from .handles import escapes, handle_key, passed_to_helper_that_calls, same_handle
from .matchers import Match
from .arg_spelling import LITERAL_TYPES, NULL_SPELLINGS, NULL_STREAMS, ConditionError  # noqa: F401  (re-exported)
from .arg_spelling import arg_is as _arg_is
from .semantic import semantic_condition

ARG_KEYS = {"arg", "missing", "present", "is", "is_not", "equals", "matches", "not_matches", "type_matches", "type_not_matches"}


def _arg_is_sem(m: Match, key: Any, node: ts.Node, what: str) -> bool:
    """`_arg_is`, answered by libclang's evaluated value when semantic mode knows it."""
    fact = m.sem
    if fact is not None and what in ("null_stream", "null", "zero"):
        idx = m.arg_index(str(key))
        if idx is not None and idx < len(fact.args) and fact.args[idx].value is not None:
            v = fact.args[idx].value
            return v == 0 or (what == "null_stream" and v == 1)
    return _arg_is(node, what)


def strip_address(text: str) -> str:
    """`&h`, `h`, `*h` and `this->h` all name the same handle for same_as comparisons."""
    t = normalize(text)
    while t.startswith("(") and t.endswith(")") and t.count("(") == 1:
        t = t[1:-1]
    t = t[1:] if t[:1] in ("&", "*") else t
    return t.removeprefix("this->")


def _calls_with_arg(m: Match, ctx: FileContext, spec: Any, within: ts.Node | None) -> bool:
    """Does the file (or `within`) call one of the names, optionally with the same argument as this match?"""
    if isinstance(spec, list):
        names, arg, same = spec, None, None
    else:
        names, arg, same = list(spec.get("names", [])), spec.get("arg"), spec.get("same_as")
        if spec.get("name_matches"):
            rx = re.compile(spec["name_matches"])
            names += [n for n in ctx.calls if rx.search(n) and n not in names]
    want = None
    if same is not None:
        node = m.arg(same)
        if node is None:
            return False
        # scope-aware: the same variable, not the same spelling (another function's local `h` is another handle)
        want = handle_key(node, m.unit, ctx)
    for name in names:
        for unit, call in ctx.calls.get(name, []):
            if within is not None and (unit is not m.unit or not (within.start_byte <= call.start_byte < within.end_byte)):
                continue
            if call.start_byte == m.node.start_byte and unit is m.unit:
                continue
            if want is None:
                return True
            args = named_children(call.child_by_field_name("arguments"))
            idx = arg if arg is not None else 0
            if idx < len(args) and same_handle(handle_key(args[idx], unit, ctx), want):
                return True
    if want is not None:
        return passed_to_helper_that_calls(want, ctx, names, arg if arg is not None else 0, within)
    return False


def wrapper_of(m: Match) -> str:
    """`CUBLAS_CHECK` when the match is the only argument of a call such as `CUBLAS_CHECK(cublasCreate(&h))`."""
    node = m.node
    p = parent_of(node)
    while p is not None and p.type == "parenthesized_expression":
        node, p = p, parent_of(p)
    if p is None or p.type != "argument_list" or len([c for c in p.named_children if c.type != "comment"]) != 1:
        return ""
    call = parent_of(p)
    if call is None or call.type != "call_expression":
        return ""
    fn = call.child_by_field_name("function")
    return node_text(fn) if fn is not None else ""


def evaluate(cond: Any, m: Match, ctx: FileContext) -> bool:
    if cond is None:
        return True
    if isinstance(cond, list):
        return all(evaluate(c, m, ctx) for c in cond)
    if not isinstance(cond, dict):
        raise ConditionError(f"condition must be a mapping, got {cond!r}")
    result = True
    if "arg" in cond:
        if not _eval_arg(cond, m, ctx):
            return False
        cond = {k: v for k, v in cond.items() if k not in ARG_KEYS}
    for key, val in cond.items():
        if key == "any":
            ok = any(evaluate(c, m, ctx) for c in val)
        elif key == "all":
            ok = all(evaluate(c, m, ctx) for c in val)
        elif key == "not":
            ok = not evaluate(val, m, ctx)
        elif key == "argc":
            ok = len(m.args) == val or (isinstance(val, list) and len(m.args) in val)
        elif key == "wrapped":
            ok = (wrapper_of(m) != "") == bool(val)
        elif key == "argc_matches_params":
            ok = (len(m.args) == len(m.params)) == bool(val)
        elif key in ("statement_matches", "statement_not_matches"):
            from .edits import statement_of

            s, e = m.abs(statement_of(m.node))
            has = re.search(val, ctx.source.data[s:e].decode("utf-8", "replace"), re.DOTALL) is not None
            ok = has if key == "statement_matches" else not has
        elif key == "argc_min":
            ok = len(m.args) >= val
        elif key == "argc_max":
            ok = len(m.args) <= val
        elif key in ("inside", "not_inside"):
            places = val if isinstance(val, list) else [val]
            hit = any(_inside(p, m, ctx) for p in places)
            ok = hit if key == "inside" else not hit
        elif key == "result_unused":
            ok = _result_unused(m.node) == bool(val)
        elif key in ("file_has_call", "file_lacks_call"):
            has = _calls_with_arg(m, ctx, val, None)
            ok = has if key == "file_has_call" else not has
        elif key in ("function_has_call", "function_lacks_call"):
            fn = scope_of(m.node).function
            has = _calls_with_arg(m, ctx, val, fn if fn is not None else m.unit.root)
            ok = has if key == "function_has_call" else not has
        elif key in ("file_has_include", "file_lacks_include"):
            rx = re.compile(val)
            has = any(rx.search(i) for i in ctx.includes)
            ok = has if key == "file_has_include" else not has
        elif key in ("file_matches", "file_not_matches"):
            has = re.search(val.encode(), ctx.source.data, re.M) is not None
            ok = has if key == "file_matches" else not has
        elif key == "name":
            names = val if isinstance(val, list) else [val]
            ok = m.name in names
        elif key == "name_matches":
            ok = re.search(val, m.name) is not None
        elif key == "written_matches":
            ok = re.search(val, m.written) is not None
        elif key == "text_matches":
            s, e = m.report_range
            ok = re.search(val, ctx.source.data[s:e].decode("utf-8", "replace"), re.S) is not None
        elif key == "file_ext":
            exts = val if isinstance(val, list) else [val]
            ok = ctx.ext in exts
        elif key == "lang":
            from .language import file_language

            ok = file_language(ctx.source.path) in (val if isinstance(val, list) else [val])
        elif key == "var":
            ok = all(m.vars.get(k) == v for k, v in val.items())
        elif key == "role":
            ok = m.vars.get("role") in (val if isinstance(val, list) else [val])
        elif key == "semantic":
            ok = semantic_condition(val, m, ctx)
        elif key == "case_label":
            from .edits import case_of

            ok = (case_of(m.node) is not None) == bool(val)
        elif key == "preceded_by":
            # the source just before the matched node (for strings: the whole literal), e.g. the previous
            # element of an initializer list: `{"-arch", "sm_70"}`
            s0 = m.abs(m.node)[0]
            before = ctx.source.data[max(0, s0 - 400) : s0].decode("utf-8", "replace")
            ok = re.search(val + r"\Z", before) is not None
        elif key == "arg_type":
            ok = _arg_type(val, m, ctx)
        elif key == "handle_escapes":
            ok = escapes(m.arg("handle") if m.arg("handle") is not None else (m.args[0] if m.args else None),
                         m.unit, ctx, m.node) == bool(val)
        elif key == "host_waits_after":
            from .host_waits import host_waits_after

            ok = host_waits_after(m.node, set(val if isinstance(val, list) else [val]))
        elif key == "legacy_work_isolated":
            from .legacy_isolated import legacy_work_isolated

            sc = scope_of(m.node)
            ok = (not m.unit.in_macro and legacy_work_isolated(m.node, sc.function, m.unit.root, _loop_of(m.node))) == bool(val)
        elif key == "consumes_other_stream_work":
            from .legacy_isolated import consumes_other_stream_work

            ok = consumes_other_stream_work(m.node, scope_of(m.node).function, m.unit.root) == bool(val)
        elif key == "called_once_from_main":
            from .call_sites import called_once_from_main

            ok = called_once_from_main(scope_of(m.node).function, m.unit.root) == bool(val)
        elif key == "meets_blocking_streams":
            from .streams import stream_use

            ok = stream_use(ctx).meets_blocking == bool(val)
        elif key == "option":
            ok = all(ctx.options.get(m.rule.id, {}).get(k, m.rule.options.get(k)) == v for k, v in val.items())
        else:
            raise ConditionError(f"unknown condition {key!r}")
        result = result and ok
        if not result:
            return False
    return result


def _eval_arg(cond: dict, m: Match, ctx: FileContext | None = None) -> bool:
    key = cond["arg"]
    node = m.arg(str(key))
    if cond.get("missing") is True:
        return node is None
    if cond.get("present") is True and node is None:
        return False
    if node is None:
        return False
    text = normalize(node_text(node))
    if "is" in cond:
        whats = cond["is"] if isinstance(cond["is"], list) else [cond["is"]]
        if not any(_arg_is_sem(m, key, node, w) for w in whats):
            return False
    if "is_not" in cond:
        whats = cond["is_not"] if isinstance(cond["is_not"], list) else [cond["is_not"]]
        if any(_arg_is_sem(m, key, node, w) for w in whats):
            return False
    if "equals" in cond:
        vals = cond["equals"] if isinstance(cond["equals"], list) else [cond["equals"]]
        if text not in [normalize(str(v)) for v in vals]:
            return False
    if "matches" in cond and re.search(cond["matches"], text) is None:
        return False
    if "not_matches" in cond and re.search(cond["not_matches"], text) is not None:
        return False
    if "type_matches" in cond or "type_not_matches" in cond:
        # declared type of a plain variable argument (`x`, `&x`, `*x`); unknown types match neither key
        from .matchers import _declared_type

        base = text.lstrip("&*")
        t = _declared_type(ctx, m.unit, base, node) if ctx is not None and re.fullmatch(r"[A-Za-z_]\w*", base) else None
        if "type_matches" in cond and (t is None or re.search(cond["type_matches"], t) is None):
            return False
        if "type_not_matches" in cond and t is not None and re.search(cond["type_not_matches"], t) is not None:
            return False
    return True


def _loop_of(node: ts.Node) -> ts.Node | None:
    """The outermost `for`/`while`/`do` around `node` within its function."""
    out = None
    p = parent_of(node)
    while p is not None and p.type not in ("function_definition", "lambda_expression"):
        if p.type in ("for_statement", "for_range_loop", "while_statement", "do_statement"):
            out = p
        p = parent_of(p)
    return out


def _inside(place: str, m: Match, ctx: FileContext) -> bool:
    sc = scope_of(m.node)
    if place == "loop":
        return sc.loop_depth > 0
    if place == "kernel":
        return sc.is_kernel
    if place == "device_function":
        return sc.is_device or sc.is_kernel
    if place == "host_function":
        return sc.is_host
    if place == "main":
        return sc.is_main
    if place == "macro_body":
        return m.unit.in_macro
    if place == "function":
        return sc.function is not None
    raise ConditionError(f"unknown place {place!r}")


def _result_unused(node: ts.Node) -> bool:
    p = parent_of(node)
    while p is not None and p.type == "parenthesized_expression":
        p = parent_of(p)
    return p is not None and p.type == "expression_statement"


def _arg_type(spec: Any, m: Match, ctx: FileContext) -> bool:
    """`arg_type: {arg: 0|name|any|all, matches: REGEX}`: the declared type of the variable an argument is built from.

    `v.begin() + 1`, `std::end(v)`, `thrust::raw_pointer_cast(v.data())` all lead to `v`; its closest declaration
    in the same function (or at file scope) gives the type, with `using`/`typedef` aliases and
    `using namespace` expanded. With `any`/`all`, arguments whose type cannot be found are ignored (`all`
    needs at least one known)."""
    if not isinstance(spec, dict) or "matches" not in spec or "arg" not in spec:
        raise ConditionError("arg_type needs `arg` and `matches`")
    rx = re.compile(spec["matches"])
    key = str(spec["arg"])

    def types_of(node: ts.Node | None) -> set[str] | None:
        var = base_variable(node)
        if var is None:
            return None
        ts_ = declared_types(ctx, m.unit, node_text(var), var)
        return ts_ or None

    def hit(types: set[str]) -> bool:
        return any(rx.search(t) for t in types)

    if key in ("any", "all"):
        known = [t for t in (types_of(a) for a in m.args) if t is not None]
        if key == "any":
            return any(hit(t) for t in known)
        return bool(known) and all(hit(t) for t in known)
    types = types_of(m.arg(key))
    return types is not None and hit(types)
