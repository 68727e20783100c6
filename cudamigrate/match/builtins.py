"""Matchers that are code rather than data, each named by `match: {builtin: {name: ...}}`.

They exist where a pattern needs more than one node: preprocessor guard
evaluation, and Thrust container use across declarations and loops.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import tree_sitter as ts

from ..findings import Edit
from ..parse.treesitter import query
from ..rules.schema import Rule
from .context import FileContext, node_text, normalize_name, scope_of
from .matchers import Match
from .ppexpr import Evaluator, PPError

REGISTRY: dict[str, Callable[[Rule, FileContext, dict[str, Any]], list[Match]]] = {}


def builtin(name: str):
    def deco(fn):
        REGISTRY[name] = fn
        return fn

    return deco


def run(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    name = rule.spec["name"]
    if name not in REGISTRY:
        raise KeyError(f"unknown builtin matcher {name!r}")
    return REGISTRY[name](rule, ctx, options)


# --------------------------------------------------------------------------- version guards
RUNTIME_HEADERS = re.compile(r"(^|/)(cuda_runtime(_api)?|cublas(_v2|_api|Lt)?|cusparse|cufft|curand|cusolver\w*|cuda_fp16|cooperative_groups)\.h$")


def _version_env(ctx: FileContext, target: tuple[int, int], assume: set[str]):
    maj, mnr = target
    cuda_h = any(i == "cuda.h" or i.endswith("/cuda.h") for i in ctx.includes) or "CUDA_VERSION" in assume
    runtime = ctx.is_cuda_file or any(RUNTIME_HEADERS.search(i) for i in ctx.includes) or "CUDART_VERSION" in assume
    nvcc = ctx.is_cuda_file or "__CUDACC_VER_MAJOR__" in assume
    known: dict[str, int] = {}
    if cuda_h:
        known["CUDA_VERSION"] = maj * 1000 + mnr * 10
    if runtime:
        known["CUDART_VERSION"] = maj * 1000 + mnr * 10
        known["__CUDA_API_VER_MAJOR__"] = maj
        known["__CUDA_API_VER_MINOR__"] = mnr
    if nvcc:
        known["__CUDACC_VER_MAJOR__"] = maj
        known["__CUDACC_VER_MINOR__"] = mnr

    def lookup(name: str):
        return known.get(name)

    def defined(name: str):
        return True if name in known else None

    return Evaluator(lookup, defined)


VERSION_MACROS = ("CUDA_VERSION", "CUDART_VERSION", "__CUDACC_VER_MAJOR__", "__CUDACC_VER_MINOR__",
                  "__CUDA_API_VER_MAJOR__", "__CUDA_API_VER_MINOR__")
_VM = re.compile(r"\b(" + "|".join(VERSION_MACROS) + r")\b")


def _line_start(data: bytes, pos: int) -> int:
    return data.rfind(b"\n", 0, pos) + 1


def _line_end(data: bytes, pos: int) -> int:
    e = data.find(b"\n", pos)
    return len(data) if e == -1 else e + 1


@builtin("version_guard")
def version_guard(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    data = ctx.source.data
    if not _VM.search(data.decode("utf-8", "replace")):
        return []
    assume = set(options.get("assume_defined", []) or [])
    now = _version_env(ctx, ctx.target, assume)
    future = _version_env(ctx, (99, 9), assume)
    out: list[Match] = []
    unit = ctx.main
    for node in ts.QueryCursor(query("(preproc_if) @p")).captures(unit.root).get("p", []):
        branches = []  # (directive, cond_text, state, dir_start, body_start, body_end)
        cur: ts.Node | None = node
        ok = True
        while cur is not None:
            if cur.type in ("preproc_if", "preproc_elif"):
                cond = cur.child_by_field_name("condition")
                if cond is None:
                    ok = False
                    break
                ctext = node_text(cond)
                state = None
                if _VM.search(ctext):
                    try:
                        a, b = now.eval(ctext), future.eval(ctext)
                    except PPError:
                        a, b = None, None
                    if a is not None and b is not None and bool(a) == bool(b):
                        state = bool(a)
                kw = "#if" if cur.type == "preproc_if" else "#elif"
                branches.append([kw, ctext, state, _line_start(data, cur.start_byte), _line_end(data, cond.end_byte - 1), None])
                cur = cur.child_by_field_name("alternative")
            elif cur.type == "preproc_else":
                first = cur.children[0]
                branches.append(["#else", "", True, _line_start(data, cur.start_byte), _line_end(data, first.end_byte - 1), None])
                cur = None
            else:
                ok = False
                break
        endif = [c for c in node.children if c.type == "#endif"]
        if not ok or not endif or not any(b[2] is not None and b[0] != "#else" for b in branches):
            continue
        endif_start = _line_start(data, endif[0].start_byte)
        end = _line_end(data, endif[0].end_byte - 1) if not data[endif[0].end_byte:].startswith(b"\n") else endif[0].end_byte + 1
        end = _line_end(data, endif[0].start_byte)
        for i, b in enumerate(branches):
            b[5] = branches[i + 1][3] if i + 1 < len(branches) else endif_start
        # rebuild
        kept = []
        live_body = None
        for b in branches:
            if b[2] is False:
                continue
            if b[2] is True:
                if not kept:
                    live_body = b
                kept.append(["#else", "", True, b[3], b[4], b[5]])
                break
            kept.append(b)
        nl = ctx.source.newline.decode()
        start = branches[0][3]
        if live_body is not None:
            new = data[live_body[4] : live_body[5]].decode("utf-8", "replace")
            outcome = "keeps only the live branch"
        elif not kept:
            new = ""
            outcome = "removes the dead block"
        else:
            parts = []
            for i, b in enumerate(kept):
                if b[0] == "#else":
                    directive = "#else" + nl
                elif i == 0 and b[0] != "#if":
                    directive = "#if " + b[1].strip() + nl
                elif b[0] == "#if" and i == 0:
                    directive = data[b[3] : b[4]].decode("utf-8", "replace")
                else:
                    directive = data[b[3] : b[4]].decode("utf-8", "replace")
                    if i == 0:
                        directive = directive.replace("#elif", "#if", 1)
                parts.append(directive + data[b[4] : b[5]].decode("utf-8", "replace"))
            parts.append(data[endif_start:end].decode("utf-8", "replace"))
            new = "".join(parts)
            outcome = "drops the dead branches"
        old = data[start:end].decode("utf-8", "replace")
        if new == old:
            continue
        decided = next(b for b in branches if b[2] is not None and b[0] != "#else")
        m = Match(rule=rule, unit=unit, node=node, name=decided[1].strip(), written=decided[1].strip())
        dline_end = decided[4]
        while dline_end > decided[3] and data[dline_end - 1 : dline_end] in (b"\n", b"\r"):
            dline_end -= 1
        m.range = (decided[3], dline_end)
        m.vars.update({"condition": " ".join(decided[1].split()), "state": "true" if decided[2] else "false",
                       "outcome": outcome})
        m.edits = [Edit(start, end, new)]
        out.append(m)
    return out


# --------------------------------------------------------------------------- thrust containers
DV_TYPES = re.compile(r"^(thrust::)?(device_vector|universal_vector)$")


def _device_vectors(ctx: FileContext) -> dict[str, list[ts.Node]]:
    """Variables declared as thrust::device_vector (any scope), by name."""
    out: dict[str, list[ts.Node]] = {}
    q = query("(declaration type: (_) @t declarator: (_) @d) @decl (parameter_declaration type: (_) @t declarator: (_) @d) @decl")
    for unit in ctx.units[:1]:
        for _, caps in ts.QueryCursor(q).matches(unit.root):
            t = normalize_name(node_text(caps["t"][0]))
            full = set(ctx.resolve(t))
            if not any(DV_TYPES.match(x) for x in full | {t}):
                continue
            d = caps["d"][0]
            while d.type in ("init_declarator", "reference_declarator", "pointer_declarator") and d.named_children:
                d = d.child_by_field_name("declarator") or d.named_children[0]
            if d.type == "identifier":
                out.setdefault(node_text(d), []).append(caps["decl"][0])
    return out


@builtin("device_vector_element_access")
def device_vector_element_access(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    dvs = _device_vectors(ctx)
    if not dvs:
        return []
    out = []
    q = query("(subscript_expression argument: (identifier) @v) @s")
    for _, caps in ts.QueryCursor(q).matches(ctx.main.root):
        v = node_text(caps["v"][0])
        if v not in dvs:
            continue
        s = caps["s"][0]
        sc = scope_of(s)
        if sc.loop_depth == 0 or sc.is_kernel or sc.is_device:
            continue
        m = Match(rule=rule, unit=ctx.main, node=s, name=v, written=node_text(s))
        p = s.parent
        m.vars["is_write"] = bool(p is not None and p.type == "assignment_expression" and p.child_by_field_name("left") is not None
                                  and p.child_by_field_name("left").start_byte == s.start_byte)
        m.vars["variable"] = v
        out.append(m)
    return out


@builtin("device_vector_in_loop")
def device_vector_in_loop(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    dvs = _device_vectors(ctx)
    out = []
    for name, decls in dvs.items():
        for d in decls:
            if d.type == "declaration" and scope_of(d).loop_depth > 0:
                m = Match(rule=rule, unit=ctx.main, node=d, name=name, written=node_text(d))
                m.vars.update({"variable": name, "what": "constructed"})
                out.append(m)
    q = query("(call_expression function: (field_expression argument: (identifier) @v field: (field_identifier) @f)) @c")
    for _, caps in ts.QueryCursor(q).matches(ctx.main.root):
        v, f = node_text(caps["v"][0]), node_text(caps["f"][0])
        if v in dvs and f in ("resize", "reserve", "shrink_to_fit", "assign") and scope_of(caps["c"][0]).loop_depth > 0:
            m = Match(rule=rule, unit=ctx.main, node=caps["c"][0], name=v, written=node_text(caps["c"][0]))
            m.vars.update({"variable": v, "what": f"{f}() called"})
            out.append(m)
    return out


# --------------------------------------------------------------------------- dead branches
def dead_for_target(node: ts.Node, ctx: FileContext, target: tuple[int, int] | None = None) -> bool:
    """Is `node` in a preprocessor branch that CUDA version macros make dead at the target toolkit?

    `#if CUDART_VERSION >= 13000 ... #else <node> #endif` is dead when targeting 13.0, and so is
    `#if CUDART_VERSION < 13000 <node> #endif`; conditions that do not decide on version macros alone
    (`#ifdef USE_X`, `#if 1`) never make code dead here.
    """
    env = None
    cur = node
    while cur.parent is not None:
        p = cur.parent
        branch_if = None
        in_body = False
        if p.type in ("preproc_if", "preproc_elif"):
            alt = p.child_by_field_name("alternative")
            cond = p.child_by_field_name("condition")
            if cond is not None and (alt is None or cur.start_byte < alt.start_byte) and cur.start_byte >= cond.end_byte:
                branch_if, in_body = p, True
        elif p.type == "preproc_else":
            branch_if = p.parent if p.parent is not None and p.parent.type in ("preproc_if", "preproc_elif") else None
        if branch_if is not None:
            cond = branch_if.child_by_field_name("condition")
            ctext = node_text(cond) if cond is not None else ""
            if _VM.search(ctext):
                if env is None:
                    env = _version_env(ctx, target or ctx.target, set())
                try:
                    val = env.eval(ctext)
                except PPError:
                    val = None
                if val is not None and bool(val) != in_body:
                    return True
        cur = p
    return False


# --------------------------------------------------------------------------- struct fields filled by a getter
def _strip_addr(text: str) -> str:
    from .context import normalize

    t = normalize(text)
    while t.startswith("(") and t.endswith(")"):
        t = t[1:-1]
    return t[1:] if t.startswith("&") else t


@builtin("filled_struct_field")
def filled_struct_field(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    """`recv.field` / `recv->field` where `recv` is declared with one of `types`; when the same function
    filled it earlier with a getter call (`getter(&recv, dev)`), vars.source is that call's argument
    `source_arg` (e.g. the device), and vars.has_source is true.

    Spec: {name: filled_struct_field, fields: [...], types: [...], getters: {name: [struct_arg, source_arg]}}.
    """
    from .matchers import _declared_type
    from .context import normalize

    spec = rule.spec
    fields = set(spec.get("fields", []))
    types = spec.get("types", [])
    getters: dict[str, list[int]] = spec.get("getters", {}) or {}
    out: list[Match] = []
    q = query("(field_expression argument: (_) @r field: (field_identifier) @f) @fe")
    for unit in ctx.units:
        for _, caps in ts.QueryCursor(q).matches(unit.root):
            f = caps["f"][0]
            if node_text(f) not in fields:
                continue
            fe, recv = caps["fe"][0], caps["r"][0]
            base = recv
            while base.type in ("subscript_expression", "pointer_expression", "parenthesized_expression") and base.named_children:
                base = base.named_children[0]
            if base.type != "identifier":
                continue
            t = _declared_type(ctx, unit, node_text(base), fe)
            if t is None or not any(ty in t for ty in types):
                continue
            m = Match(rule=rule, unit=unit, node=fe, name=node_text(f), written=node_text(fe), field_node=f,
                      receiver=recv, name_range=unit.abs(f), ident_range=unit.abs(f))
            p = fe.parent
            while p is not None and p.type == "parenthesized_expression":
                p = p.parent
            written = p is not None and (
                (p.type == "assignment_expression" and p.child_by_field_name("left") is not None
                 and p.child_by_field_name("left").start_byte <= fe.start_byte < p.child_by_field_name("left").end_byte)
                or (p.type in ("pointer_expression", "update_expression") and node_text(p)[:1] in "&+-"))
            m.vars["is_write"] = bool(written)
            sc = scope_of(fe)
            m.vars["in_device_code"] = sc.is_device or sc.is_kernel
            m.vars["has_source"] = False
            want = normalize(node_text(recv)).lstrip("*")
            fn = sc.function
            if fn is not None and not unit.in_macro:
                best = None
                for gname, (sarg, darg) in getters.items():
                    for gunit, call in ctx.calls.get(gname, []):
                        if gunit is not unit or not (fn.start_byte <= call.start_byte < fe.start_byte):
                            continue
                        args = [c for c in call.child_by_field_name("arguments").named_children if c.type != "comment"]
                        if len(args) > max(sarg, darg) and _strip_addr(node_text(args[sarg])) == want:
                            if best is None or call.start_byte > best[0]:
                                best = (call.start_byte, node_text(args[darg]))
                if best is not None:
                    m.vars["has_source"] = True
                    m.vars["source"] = best[1]
            out.append(m)
    return out


# --------------------------------------------------------------------------- namespace uses
@builtin("namespace_use")
def namespace_use(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    """Qualified names through, and `using namespace` of, the namespaces in `spec.namespaces`
    (e.g. `cooperative_groups::experimental`), with namespace aliases resolved. vars.namespace is the
    namespace as listed, vars.member the name used inside it (when there is one)."""
    wanted = list(rule.spec.get("namespaces", []))
    lasts = {w.split("::")[-1] for w in wanted}
    out: list[Match] = []
    for unit in ctx.units:
        q = query("(namespace_identifier) @ns")
        for ns in ts.QueryCursor(q).captures(unit.root).get("ns", []):
            if node_text(ns) not in lasts:
                continue
            path = [node_text(ns)]
            cur = ns.parent  # qualified_identifier whose scope is ns
            top = cur
            if cur is None:
                continue
            if cur.type == "nested_namespace_specifier" or cur.type == "using_declaration":
                continue
            # climb: each enclosing qualified_identifier whose `name` is the current one adds its scope
            while cur is not None and cur.parent is not None and cur.parent.type == "qualified_identifier":
                p = cur.parent
                name = p.child_by_field_name("name")
                if name is None or name.start_byte != cur.start_byte:
                    break
                sc = p.child_by_field_name("scope")
                if sc is not None:
                    path.insert(0, node_text(sc))
                cur = p
                top = p
            full = "::".join(path)
            cands = ctx.resolve(full) | {full}
            hit = next((w for w in wanted if w in cands), None)
            if hit is None:
                continue
            inner = ns.parent.child_by_field_name("name") if ns.parent is not None else None
            m = Match(rule=rule, unit=unit, node=top, name=hit, written=normalize_name(node_text(top)),
                      name_range=unit.abs(ns), ident_range=unit.abs(ns))
            m.vars["namespace"] = hit
            m.vars["member"] = normalize_name(node_text(inner)) if inner is not None else ""
            out.append(m)
    data = ctx.source.data
    for mo in re.finditer(rb"using\s+namespace\s+((?:::)?[A-Za-z_][\w:\s]*?)\s*;", data):
        full = normalize_name(mo.group(1).decode())
        cands = ctx.resolve(full) | {full}
        for key, val in ctx.namespace_aliases.items():
            if full.startswith(key + "::") or full == key:
                cands.add(val + full[len(key):])
        hit = next((w for w in wanted if w in cands), None)
        if hit is None:
            continue
        node = ctx.main.root.descendant_for_byte_range(mo.start(), mo.end() - 1)
        m = Match(rule=rule, unit=ctx.main, node=node, name=hit, written=full)
        m.range = (mo.start(), mo.end())
        m.vars["namespace"] = hit
        m.vars["member"] = ""
        out.append(m)
    return out
