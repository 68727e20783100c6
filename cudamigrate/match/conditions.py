"""`where:` conditions: small predicates over a match, combined with any/all/not.

Each condition is registered in `CONDITIONS` (and each `arg:` test in `ARG_TESTS`) with the schema of its value, its
implementation and its doc, right where it is implemented: the loader checks every rule against these registries
(`knowledge/vocabulary.py`) and `scripts/gen_rules_doc.py` writes rules/README.md's tables from them.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import tree_sitter as ts

from ..parse.shapes import case_of, statement_of
from ..core.rule_regex import rule_regex
from ..parse.treesitter import parent_of
from ..core.registry import (Registry, Schema, SchemaError, boolean, condition, conditions, did_you_mean, either, free_mapping,
                        integer, ints, mapping, one_of, regex, scalar, string_list, strings)

from .context import FileContext, base_variable, declared_types, node_text, normalize, scope_of
from .handles import arg_index, escapes, handle_key, passed_to_helper_that_calls, same_or_element
from .matchers import Match
from .arg_spelling import LITERAL_TYPES, NULL_SPELLINGS, NULL_STREAMS, ConditionError  # noqa: F401  (re-exported)
from .arg_spelling import arg_is as _arg_is
from .semantic import SEMANTIC_TESTS, semantic_condition
from .warp_flow import divergence_of

IS_VALUES = ("null_stream", "null", "literal", "identifier", "address_of", "zero")
PLACES = ("loop", "kernel", "device_function", "host_function", "main", "macro_body", "function")


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
            rx = rule_regex(spec["name_matches"])
            nrx = rule_regex(spec["name_not_matches"]) if spec.get("name_not_matches") else None
            names += [n for n in ctx.calls if rx.search(n) and not (nrx and nrx.search(n)) and n not in names]
    want = None
    if same is not None:
        node = m.arg(same)
        if node is None:
            return False
        # scope-aware: the same variable, not the same spelling (another function's local `h` is another handle)
        want = handle_key(node, m.unit, ctx)
    def counted(unit: Any, call: ts.Node) -> bool:
        if within is not None and (unit is not m.unit or not (within.start_byte <= call.start_byte < within.end_byte)):
            return False
        return not (call.start_byte == m.node.start_byte and unit is m.unit)

    if want is None:
        return any(counted(unit, call) for name in names for unit, call in ctx.calls.get(name, []))
    index = arg_index(ctx, names, arg if arg is not None else 0)
    if any(counted(unit, call) for unit, call in index.calls.same(want)):
        return True
    # through a getter of the file: `cublasSetStream(getCublasHandle(), s)`
    if any(counted(unit, call) and any(same_or_element(k, want) for k in keys) for unit, call, keys in index.getters):
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


CondFn = Callable[[Any, Match, FileContext], bool]
# `where:` and every other condition: `{name: value}` mappings whose entries all hold; a list means all
CONDITIONS: Registry[CondFn] = Registry("condition")
# the tests that go with `arg:` in the same mapping (`{arg: stream, is: null_stream}`)
ARG_TESTS: Registry[Callable[[Any, ts.Node, Match, FileContext, Any], bool]] = Registry("argument test")


def evaluate(cond: Any, m: Match, ctx: FileContext) -> bool:
    """Does `cond` hold for the match? The loader has checked every key against CONDITIONS and ARG_TESTS."""
    if cond is None:
        return True
    if isinstance(cond, list):
        return all(evaluate(c, m, ctx) for c in cond)
    if not isinstance(cond, dict):
        raise ConditionError(f"condition must be a mapping, got {cond!r}")
    has_arg = "arg" in cond
    if has_arg and not _eval_arg(cond, m, ctx):
        return False
    for key, val in cond.items():
        if has_arg and key in ARG_TESTS.entries:
            continue  # part of `arg:`, done above
        entry = CONDITIONS.lookup(key)
        if entry is None:
            raise ConditionError(CONDITIONS.unknown(key))
        if not entry.impl(val, m, ctx):
            return False
    return True


def _listed(val: Any) -> list:
    return val if isinstance(val, list) else [val]


def _pair(yes: str, no: str, schema: Schema, doc: str, has: Callable[[Any, Match, FileContext], bool]) -> None:
    """Register a condition and its negation (`file_has_call` / `file_lacks_call`)."""
    CONDITIONS.add(yes, schema, has, doc)
    CONDITIONS.add(no, schema, lambda val, m, ctx: not has(val, m, ctx), f"the negation of `{yes}`.")


def _calls_schema() -> Schema:
    return either((lambda v: isinstance(v, list), string_list()),
                  (lambda v: True, mapping({"names": string_list(nonempty=False), "arg": integer(),
                                            "same_as": scalar("NAME|INDEX"), "name_matches": regex(),
                                            "name_not_matches": regex()},
                                           form="{names: [...], arg: N, same_as: ARG, name_matches: REGEX, "
                                                "name_not_matches: REGEX}")))


CONDITIONS.add("arg", scalar("NAME|INDEX"), lambda val, m, ctx: True,
               "the argument (parameter name or index) that the argument tests in the same mapping look at; "
               "without `missing: true` the argument must be present.")
CONDITIONS.add("any", conditions(), lambda val, m, ctx: any(evaluate(c, m, ctx) for c in val), "at least one holds.")
CONDITIONS.add("all", conditions(), lambda val, m, ctx: all(evaluate(c, m, ctx) for c in val), "every one holds.")
CONDITIONS.add("not", condition(), lambda val, m, ctx: not evaluate(val, m, ctx), "the condition does not hold.")
CONDITIONS.add("argc", ints(), lambda val, m, ctx: len(m.args) == val or (isinstance(val, list) and len(m.args) in val),
               "the call has exactly this many arguments (or one of these counts).")
CONDITIONS.add("argc_min", integer(), lambda val, m, ctx: len(m.args) >= val, "at least this many arguments.")
CONDITIONS.add("argc_max", integer(), lambda val, m, ctx: len(m.args) <= val, "at most this many arguments.")
CONDITIONS.add("argc_matches_params", boolean(), lambda val, m, ctx: (len(m.args) == len(m.params)) == bool(val),
               "the call has as many arguments as the rule names parameters for the API (`call: {names: {api: [...]}}`).")
CONDITIONS.add("wrapped", boolean(), lambda val, m, ctx: (wrapper_of(m) != "") == bool(val),
               "the match is the only argument of another call, e.g. `CUBLAS_CHECK(cublasCreate(&h))` "
               "(the template variable `wrapper` names it).")


def _statement_matches(val: Any, m: Match, ctx: FileContext) -> bool:
    s, e = m.abs(statement_of(m.node))
    return rule_regex(val, "s").search(ctx.source.data[s:e].decode("utf-8", "replace")) is not None


_pair("statement_matches", "statement_not_matches", regex(),
      "the statement holding the match (the `statement` edit target) matches the regex (`.` matches newlines).",
      _statement_matches)
CONDITIONS.add("inside", one_of(*PLACES, many=True), lambda val, m, ctx: any(_inside(p, m, ctx) for p in _listed(val)),
               "the match is inside one of these places: a loop, a `__global__` kernel, a `__device__` (or kernel) "
               "function, a host function, `main`, a `#define` body, any function.")
CONDITIONS.add("not_inside", one_of(*PLACES, many=True),
               lambda val, m, ctx: not any(_inside(p, m, ctx) for p in _listed(val)), "the negation of `inside`.")
CONDITIONS.add("warp_converged", boolean(),
               lambda val, m, ctx: (divergence_of(ctx, m.unit, m.node) is None) == bool(val),
               "every lane of the warp provably reaches the match together: no enclosing branch, loop or earlier exit "
               "whose condition may differ between lanes, in the function and in every caller in the file "
               "(`cudamigrate/match/warp_flow.py`); the template function `warp_divergence()` says why not.")
CONDITIONS.add("result_unused", boolean(), lambda val, m, ctx: _result_unused(m.node) == bool(val),
               "the call is a bare expression statement (its result is dropped).")
_pair("file_has_call", "file_lacks_call", _calls_schema(),
      "the file calls one of the names (besides the matched call); `{names: [...], arg: 0, same_as: handle}` requires the other call's "
      "argument `arg` to name the same variable as this call's `same_as` argument. Variables, not spellings: "
      "a local `h` of one function is not another function's `h`; `&h`, `&(h)`, `(&h)`, `h`, `(h)`, `this->h` "
      "and a member `h` are one handle, `&*p`, `*p` and `p` another; a local passed to a helper defined in "
      "the file counts when the helper's parameter reaches one of the names. `name_matches: REGEX` adds "
      "every called name that matches, except those `name_not_matches: REGEX` matches (RE2 has no lookahead).",
      lambda val, m, ctx: _calls_with_arg(m, ctx, val, None))


def _function_has_call(val: Any, m: Match, ctx: FileContext) -> bool:
    fn = scope_of(m.node).function
    return _calls_with_arg(m, ctx, val, fn if fn is not None else m.unit.root)


_pair("function_has_call", "function_lacks_call", _calls_schema(),
      "like `file_has_call`, within the function holding the match (the file outside functions).",
      _function_has_call)
_pair("file_has_include", "file_lacks_include", regex(),
      "an `#include` of the file matches the regex.",
      lambda val, m, ctx: any(rule_regex(val).search(i) for i in ctx.includes))
def _file_matches(val: Any, m: Match, ctx: FileContext) -> bool:
    """Once per file and pattern: a search of the whole text per match made N matches cost N file lengths."""
    memo = ctx.__dict__.setdefault("_file_matches", {})
    if val not in memo:
        memo[val] = rule_regex(val.encode(), "m").search(ctx.source.data) is not None
    return bool(memo[val])


_pair("file_matches", "file_not_matches", regex(),
      "the file's text matches the regex (multi-line: `^` and `$` match at each line).", _file_matches)
CONDITIONS.add("name", strings(), lambda val, m, ctx: m.name in _listed(val),
               "which API matched (the name as the rule spells it).")
CONDITIONS.add("name_matches", regex(), lambda val, m, ctx: rule_regex(val).search(m.name) is not None,
               "the matched API's name matches the regex.")
CONDITIONS.add("written_matches", regex(), lambda val, m, ctx: rule_regex(val).search(m.written) is not None,
               "the name as written in the source (`::cudaThreadExit`, `thrust::identity`) matches the regex.")


def _text_matches(val: Any, m: Match, ctx: FileContext) -> bool:
    s, e = m.report_range
    return rule_regex(val, "s").search(ctx.source.data[s:e].decode("utf-8", "replace")) is not None


CONDITIONS.add("text_matches", regex(), _text_matches, "the matched source text matches the regex.")
CONDITIONS.add("file_ext", strings("EXT|[EXT, ...]"), lambda val, m, ctx: ctx.ext in _listed(val),
               "the file's extension, with its dot (`.cu`).")


def _lang(val: Any, m: Match, ctx: FileContext) -> bool:
    from .language import file_language

    return file_language(ctx.source.path) in _listed(val)


CONDITIONS.add("lang", one_of("c", "cxx", many=True), _lang,
               "the language the file is compiled in (`.c`, and `.h` files that only `.c` files of their "
               "directory include, are C).")
CONDITIONS.add("var", free_mapping("{KEY: VALUE, ...}"), lambda val, m, ctx: all(m.vars.get(k) == v for k, v in val.items()),
               "variables a builtin matcher set on the match (`vars.*`) have these values.")
CONDITIONS.add("role", strings("ROLE|[ROLE, ...]"), lambda val, m, ctx: m.vars.get("role") in _listed(val),
               "how an `identifier` match is used: `type`, `value` or `call`.")


def _semantic(val: Any, m: Match, ctx: FileContext) -> bool:
    return semantic_condition(val, m, ctx)


SEMANTIC_KEYS = {name: e.schema for name, e in SEMANTIC_TESTS.entries.items()} | {"default": boolean()}
CONDITIONS.add("semantic", mapping(SEMANTIC_KEYS, what="semantic condition", form="{TEST: VALUE, ..., default: true|false}"), _semantic,
               "facts libclang knows in semantic mode (with a compile database); the tests are listed below "
               "(`arg_evaluates_null`, `arg_evaluates_null_stream`, `receiver_type`, `callee_is_api`); "
               "`default: true|false` answers a test when no fact is known.")


def _case_label(val: Any, m: Match, ctx: FileContext) -> bool:
    return (case_of(m.node) is not None) == bool(val)


CONDITIONS.add("case_label", boolean(), _case_label, "the match is the value of a `case` label.")


def _preceded_by(val: Any, m: Match, ctx: FileContext) -> bool:
    # the source just before the matched node (for strings: the whole literal), e.g. the previous
    # element of an initializer list: `{"-arch", "sm_70"}`
    s0 = m.abs(m.node)[0]
    before = ctx.source.data[max(0, s0 - 400) : s0].decode("utf-8", "replace")
    return rule_regex(val, anchor_end=True).search(before) is not None


CONDITIONS.add("preceded_by", regex(), _preceded_by,
               "the 400 bytes before the matched node (for strings: the whole literal) end with a match of the "
               "regex, e.g. the previous element of an initializer list: `{\"-arch\", \"sm_70\"}`.")
CONDITIONS.add("arg_type", mapping({"arg": scalar("NAME|INDEX|any|all"), "matches": regex()}, required=("arg", "matches")),
               lambda val, m, ctx: _arg_type(val, m, ctx),
               "the declared type of the variable an argument is built from matches the regex: `v.begin() + 1`, "
               "`std::end(v)`, `thrust::raw_pointer_cast(v.data())` all lead to `v`; `using`/`typedef` aliases "
               "and `using namespace` are expanded. `arg: any|all` looks at every argument whose type is known "
               "(`all` needs at least one).")


def _handle_escapes(val: Any, m: Match, ctx: FileContext) -> bool:
    node = m.arg("handle") if m.arg("handle") is not None else (m.args[0] if m.args else None)
    return escapes(node, m.unit, ctx, m.node) == bool(val)


CONDITIONS.add("handle_escapes", boolean(), _handle_escapes,
               "the `handle` argument (else the first) is a function-local variable that leaves its function (a "
               "pointer parameter filled for the caller; returned, assigned or initialized into something else; "
               "captured by a lambda; its address, or the array/struct holding it, passed to a non-cuBLAS function).")


def _host_waits_after(val: Any, m: Match, ctx: FileContext) -> bool:
    from .host_waits import host_waits_after

    return host_waits_after(m.node, set(_listed(val)))


CONDITIONS.add("host_waits_after", strings(), _host_waits_after,
               "later in the same loop iteration the host calls one of the names (a sync) with only event records "
               "in between (`cudamigrate/match/host_waits.py`).")


def _legacy_work_isolated(val: Any, m: Match, ctx: FileContext) -> bool:
    from .legacy_isolated import legacy_work_isolated

    sc = scope_of(m.node)
    return (not m.unit.in_macro and legacy_work_isolated(m.node, sc.function, m.unit.root, _loop_of(m.node))) == bool(val)


CONDITIONS.add("legacy_work_isolated", boolean(), _legacy_work_isolated,
               "the legacy-stream work is a phase alone: its function takes no stream, names no stream before it "
               "(except in `cudaStreamCreate*`), and waits for it (`cudaStreamSynchronize(0)`, "
               "`cudaDeviceSynchronize()`) before naming one; false in loops and macro bodies "
               "(`cudamigrate/match/legacy_isolated.py`).")


def _consumes_other_stream_work(val: Any, m: Match, ctx: FileContext) -> bool:
    from .legacy_isolated import consumes_other_stream_work

    return consumes_other_stream_work(m.node, scope_of(m.node).function, m.unit.root) == bool(val)


CONDITIONS.add("consumes_other_stream_work", boolean(), _consumes_other_stream_work,
               "the legacy-stream call shares a buffer argument with earlier work in the same function that names a "
               "stream and that the host has not waited for since: the legacy stream's implicit barrier orders this "
               "consumer after its producers (`cudamigrate/match/legacy_isolated.py`).")


def _called_once_from_main(val: Any, m: Match, ctx: FileContext) -> bool:
    from .call_sites import called_once_from_main, use_index

    cache = ctx.__dict__.setdefault("_call_site_index", {})
    if id(m.unit) not in cache:
        cache[id(m.unit)] = use_index(m.unit.root)
    return called_once_from_main(scope_of(m.node).function, m.unit.root, cache[id(m.unit)]) == bool(val)


CONDITIONS.add("called_once_from_main", boolean(), _called_once_from_main,
               "the function around the match runs once per program run: the file's `main` calls it exactly once, "
               "outside any loop, and nothing else in the file calls it (`cudamigrate/match/call_sites.py`).")


def _meets_blocking_streams(val: Any, m: Match, ctx: FileContext) -> bool:
    from .streams import stream_use

    return stream_use(ctx).meets_blocking == bool(val)


CONDITIONS.add("meets_blocking_streams", boolean(), _meets_blocking_streams,
               "the legacy default stream meets another blocking stream in this translation unit: the file or a "
               "project header it includes (`#include \"...\"`, followed next to the file, up to three "
               "directories up and their `include/`) creates a stream without `cudaStreamNonBlocking`, defines a "
               "function that receives a `cudaStream_t`/`CUstream`, holds one in a field or file-scope variable, "
               "uses `cudaStreamPerThread`, or runs host threads.")
def _check_options(v: Any, path: str, checker: Any) -> None:
    """`option:` names options the rule declares: a misspelt one would silently never hold."""
    if not isinstance(v, dict):
        raise SchemaError(path, "must be a mapping of option -> value")
    known = checker.option_names()
    for k in v:
        if k not in known:
            raise SchemaError(f"{path}.{k}", f"unknown option {str(k)[:80]!r}" + did_you_mean(str(k), known)
                              + f" (the rule's `options:` declare: {', '.join(known) or 'none'})")


CONDITIONS.add("option", Schema("{OPTION: VALUE, ...}", _check_options),
               lambda val, m, ctx: all(ctx.options.get(m.rule.id, {}).get(k, m.rule.options.get(k)) == v
                                       for k, v in val.items()),
               "the rule's options (as the user set them, else the rule's defaults) have these values.")


def _eval_arg(cond: dict, m: Match, ctx: FileContext | None = None) -> bool:
    key = cond["arg"]
    node = m.arg(str(key))
    if node is None:
        return cond.get("missing") is True
    if cond.get("missing") is True:
        return False
    for k, val in cond.items():
        entry = ARG_TESTS.entries.get(k)
        if entry is not None and not entry.impl(val, node, m, ctx, key):
            return False
    return True


def _text(node: ts.Node) -> str:
    return normalize(node_text(node))


ARG_TESTS.add("missing", boolean(), lambda val, node, m, ctx, key: True,
              "`missing: true`: the call has no such argument (the other tests are not looked at).")
ARG_TESTS.add("present", boolean(), lambda val, node, m, ctx, key: True, "the argument is present.")
ARG_TESTS.add("is", one_of(*IS_VALUES, many=True),
              lambda val, node, m, ctx, key: any(_arg_is_sem(m, key, node, w) for w in _listed(val)),
              "the argument is one of these forms (`null_stream`: 0, NULL, nullptr, `cudaStreamLegacy` and their "
              "casts; `null`: 0, NULL, nullptr; `zero`: 0 with any suffix); in semantic mode libclang's "
              "evaluated value answers `null`, `null_stream` and `zero`.")
ARG_TESTS.add("is_not", one_of(*IS_VALUES, many=True),
              lambda val, node, m, ctx, key: not any(_arg_is_sem(m, key, node, w) for w in _listed(val)),
              "the negation of `is`.")
ARG_TESTS.add("equals", Schema("VALUE|[VALUE, ...]", lambda v, p, c: None),
              lambda val, node, m, ctx, key: _text(node) in [normalize(str(v)) for v in _listed(val)],
              "the argument's text, whitespace removed, is one of these.")
ARG_TESTS.add("matches", regex(), lambda val, node, m, ctx, key: rule_regex(val).search(_text(node)) is not None,
              "the argument's text (whitespace removed) matches the regex.")
ARG_TESTS.add("not_matches", regex(), lambda val, node, m, ctx, key: rule_regex(val).search(_text(node)) is None,
              "the negation of `matches`.")


def _arg_declared_type(node: ts.Node, m: Match, ctx: FileContext | None) -> str | None:
    """Declared type of a plain variable argument (`x`, `&x`, `*x`), whitespace removed; None when unknown."""
    from .matchers import declared_type

    base = _text(node).lstrip("&*")
    return declared_type(ctx, m.unit, base, node) if ctx is not None and re.fullmatch(r"[A-Za-z_]\w*", base) else None


ARG_TESTS.add("type_matches", regex(),
              lambda val, node, m, ctx, key: (t := _arg_declared_type(node, m, ctx)) is not None and rule_regex(val).search(t) is not None,
              "the declared type of a plain variable argument, whitespace removed (`unsignedint`), matches the "
              "regex; an unknown type fails it.")
ARG_TESTS.add("type_not_matches", regex(),
              lambda val, node, m, ctx, key: (t := _arg_declared_type(node, m, ctx)) is None or rule_regex(val).search(t) is None,
              "the negation of `type_matches` for a known type; an unknown type passes.")


def _loop_of(node: ts.Node) -> ts.Node | None:
    """The outermost `for`/`while`/`do` around `node` within its function (context.outer_loop_of, memoized)."""
    from .context import outer_loop_of

    return outer_loop_of(node)


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
    if place == "macro_body":  # also a call spelled through a token-pasting macro's use (parse/pasting.py)
        at = m.node.start_byte + m.unit.base
        return m.unit.in_macro or any(p.site[0] <= at < p.site[1] for p in ctx.pastes)
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
    rx = rule_regex(spec["matches"])
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
