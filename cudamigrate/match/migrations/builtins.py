"""Matchers that are code rather than data, each named by `match: {builtin: {name: ...}}`.

They exist where a pattern needs more than one node: preprocessor guard
evaluation, and Thrust container use across declarations and loops.
"""

from __future__ import annotations

import re
from typing import Any

import tree_sitter as ts

from ...findings.model import Edit
from ...parse import walk
from ...parse.treesitter import query
from ...read.generated import OWN_GUARD_MARK
from ...rules.schema import Rule
from ..context import FileContext, source_text, declarator_name, declarators, declared_types, node_text, normalize_name, scope_of, type_aliases
from ..matchers import Match
from ..ppenv import PPEnv, build_env, toolkits_from
from ...core.registry import Registry, free_mapping, string_list
from .builtin_registry import BuiltinFn, builtin_schema

# this module's builtin matchers; `match/kinds.py` joins them with those of texture.py, npp.py, ...
BUILTINS: Registry[BuiltinFn] = Registry("builtin matcher")


# --------------------------------------------------------------------------- version guards
VERSION_MACROS = ("CUDA_VERSION", "CUDART_VERSION", "__CUDACC_VER_MAJOR__", "__CUDACC_VER_MINOR__",
                  "__CUDA_API_VER_MAJOR__", "__CUDA_API_VER_MINOR__")
_VM = re.compile(r"\b(" + "|".join(VERSION_MACROS) + r")\b")
# `#if CUDART_VERSION >= 13000  /* cudamigrate: keep-compat 12.0 */`: the chain must keep building with 12.0
CONDITIONAL_TYPES = frozenset({"preproc_if", "preproc_ifdef"})  # `(preproc_if) @p (preproc_ifdef) @p`, walked
NAMESPACE_IDENTIFIER = frozenset({"namespace_identifier"})  # `(namespace_identifier) @ns`, walked
KEEP_COMPAT_MARK = re.compile(rb"cudamigrate:\s*keep-compat\s+(\d+)\.(\d+)")


def pp_env(ctx: FileContext, start: tuple[int, int] | None = None, assume: frozenset[str] = frozenset(),
           also: tuple[tuple[str, str | None], ...] = ()) -> PPEnv:
    """The file's preprocessor state (ppenv), computed once per file, window start, assumptions and `also`:
    `-D`/`-U` flags after the file's own (one compilation pass's `__CUDA_ARCH__`: `dead_for_target`)."""
    start = start or ctx.target
    cache = ctx.__dict__.setdefault("_ppenv", {})
    key = (start, assume, also)
    if key not in cache:
        # header walks, per run and per pass (a header's walk depends on the flags it starts from)
        shared = ctx.project.cache.setdefault(("ppenv", also), {}) if ctx.project is not None else None
        # a device pass (`also` gives __CUDA_ARCH__ a value) exists only where nvcc compiles the file as CUDA,
        # whatever its name (a `.hxx` of kernels): it starts with what nvcc defines for CUDA files
        cuda = ctx.is_cuda_file or any(n == "__CUDA_ARCH__" and v is not None for n, v in also)
        cache[key] = build_env(ctx.source.data, ctx.source.path, cuda, ctx.include_roots,
                               toolkits_from(start), set(assume), shared, ctx.command_defines()() + also)
    return cache[key]


def _line_start(data: bytes, pos: int) -> int:
    return data.rfind(b"\n", 0, pos) + 1


def _line_end(data: bytes, pos: int) -> int:
    e = data.find(b"\n", pos)
    return len(data) if e == -1 else e + 1


def _decide(ctx: FileContext, env: PPEnv, ctext: str, pos: int, versions: list[tuple[int, int]]) -> bool | None:
    """CM410's decision: only conditions on CUDA version macros, and only from toolkit facts (a project macro's
    value is configuration, so a branch that depends on one is never deleted)."""
    if not _VM.search(ctext):
        return None
    return env.decide(ctext, _line_start(ctx.source.data, pos), versions, user_macros=False)


@BUILTINS.register("version_guard", builtin_schema())
def version_guard(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    """`#if`/`#elif`/`#ifdef`/`#ifndef` chains on CUDA version macros whose outcome is the same for the target
    toolkit and every later one; the edit keeps the live branch and drops the dead ones."""
    data = ctx.source.data
    if not _VM.search(data.decode("utf-8", "surrogateescape")):
        return []
    assume = frozenset(options.get("assume_defined", []) or [])
    # `fix --keep-compat X.Y` (or `keep-compat` in the configuration): the code must still build with X.Y, so a
    # guard is decided only when X.Y and every later toolkit agree
    window = min(ctx.keep_compat, ctx.target) if ctx.keep_compat else ctx.target
    env = pp_env(ctx, window, assume)
    versions = toolkits_from(window)
    out: list[Match] = []
    unit = ctx.main
    nl = ctx.source.newline.decode()
    for node in walk.typed_nodes(unit.root, CONDITIONAL_TYPES):
        # branches: [directive, condition text, state, line start, body start, body end]
        branches: list[list[Any]] = []
        cur: ts.Node | None = node
        ok = True
        while cur is not None:
            if cur.type in ("preproc_if", "preproc_elif"):
                cond = cur.child_by_field_name("condition")
                if cond is None:
                    ok = False
                    break
                ctext = node_text(cond)
                kw = "#if" if cur.type == "preproc_if" else "#elif"
                branches.append([kw, ctext, _decide(ctx, env, ctext, cur.start_byte, versions),
                                 _line_start(data, cur.start_byte), _line_end(data, cond.end_byte - 1), None])
                cur = cur.child_by_field_name("alternative")
            elif cur.type == "preproc_ifdef":
                name = cur.child_by_field_name("name")
                first = cur.children[0] if cur.children else None
                if name is None or first is None or first.type not in ("#ifdef", "#ifndef"):
                    ok = False  # `#elifdef` and friends: left alone
                    break
                ctext = ("!" if first.type == "#ifndef" else "") + f"defined({node_text(name)})"
                branches.append(["#if", ctext, _decide(ctx, env, ctext, cur.start_byte, versions),
                                 _line_start(data, cur.start_byte), _line_end(data, name.end_byte - 1), None])
                cur = cur.child_by_field_name("alternative")
            elif cur.type == "preproc_else":
                first = cur.children[0]
                branches.append(["#else", "", True, _line_start(data, cur.start_byte), _line_end(data, first.end_byte - 1), None])
                cur = None
            else:
                ok = False
                break
        mark = next((mk for b in branches if (mk := KEEP_COMPAT_MARK.search(data[b[3] : b[4]]))), None)
        lo = window
        if mark is not None and (int(mark.group(1)), int(mark.group(2))) < window:
            # a guard written by `fix --keep-compat` (or by hand with the marker): decided over its own window
            lo = (int(mark.group(1)), int(mark.group(2)))
            marked = toolkits_from(lo)
            for b in branches:
                if b[0] != "#else":
                    b[2] = _decide(ctx, env, b[1], b[3], marked)
        endif = [c for c in node.children if c.type == "#endif"]
        if not ok or not endif or not any(b[2] is not None and b[0] != "#else" for b in branches):
            continue
        endif_start = _line_start(data, endif[0].start_byte)
        end = _line_end(data, endif[0].start_byte)
        for i, b in enumerate(branches):
            b[5] = branches[i + 1][3] if i + 1 < len(branches) else endif_start
        kept: list[list[Any]] = []
        live_body = None
        for b in branches:
            if b[2] is False:
                continue
            if b[2] is True:
                if not kept:
                    live_body = b
                else:
                    kept.append(["#else", "", True, b[3], b[4], b[5]])
                break
            kept.append(b)
        chain_start = branches[0][3]
        if live_body is not None:
            new = data[live_body[4] : live_body[5]].decode("utf-8", "surrogateescape")
            outcome = "keeps only the live branch"
        elif not kept:
            new = ""
            outcome = "removes the dead block"
        else:
            parts = []
            for i, b in enumerate(kept):
                if b[0] == "#else":
                    directive = "#else" + nl
                elif i == 0 and b[3] != chain_start:
                    # an #elif that becomes the first branch: `#elif` -> `#if`, comments kept
                    directive = re.sub(r"^([ \t]*#[ \t]*)elif", r"\1if", data[b[3] : b[4]].decode("utf-8", "surrogateescape"), count=1)
                else:
                    directive = data[b[3] : b[4]].decode("utf-8", "surrogateescape")
                parts.append(directive + data[b[4] : b[5]].decode("utf-8", "surrogateescape"))
            parts.append(data[endif_start:end].decode("utf-8", "surrogateescape"))
            new = "".join(parts)
            outcome = "drops the dead branches"
        old = data[chain_start:end].decode("utf-8", "surrogateescape")
        if new == old:
            continue
        decided = next(b for b in branches if b[2] is not None and b[0] != "#else")
        line = data[decided[3] : decided[4]].decode("utf-8", "surrogateescape").strip()
        m = Match(rule=rule, unit=unit, node=node, name=decided[1].strip(), written=line)
        dline_end = decided[4]
        while dline_end > decided[3] and data[dline_end - 1 : dline_end] in (b"\n", b"\r"):
            dline_end -= 1
        m.range = (decided[3], dline_end)
        m.vars.update({"condition": " ".join(decided[1].split()), "directive": " ".join(line.split()),
                       "state": "true" if decided[2] else "false", "outcome": outcome,
                       "minimum": f"{lo[0]}.{lo[1]}"})
        if ctx.keep_compat is None and mark is None and any(OWN_GUARD_MARK.search(data[b[3] : b[4]]) for b in branches):
            continue  # a guard the fix wrote for older toolkits: its own output, kept until a minimum is declared
        if ctx.keep_compat is None and mark is None:
            # the project never said it dropped the older toolkits: the guard may be deliberate compatibility code
            # (NVIDIA's v13.0 deviceQuery keeps two), so it is reported, not removed, until a minimum is declared
            m.vars["outcome"] = (f"the fix leaves it until the project declares the oldest CUDA it builds with "
                                 f"(`keep-compat = \"{lo[0]}.{lo[1]}\"` under [tool.cudamigrate], or "
                                 f"`fix --keep-compat {lo[0]}.{lo[1]}`)")
            m.edits = []
        else:
            m.vars["outcome"] = "the fix " + outcome
            m.edits = [Edit(chain_start, end, new)]
        out.append(m)
    return out


# --------------------------------------------------------------------------- thrust containers
DV_TYPES = re.compile(r"^(thrust::)?(device_vector|universal_vector)$")
DV_WORDS = re.compile(rb"\b(device_vector|universal_vector)\b")


# universal_vector's reference is a plain `T&` (cuda/pointer.h: universal_pointer), so its elements are ordinary
# (managed) memory accesses; only device_vector elements go through a copy + synchronize.
DEVICE_ONLY = re.compile(r"^(thrust::)?device_vector$")


def _is_dv(types: set[str], rx: re.Pattern[str] = DV_TYPES) -> bool:
    return any(rx.match(t) for t in types)


def _dv_type(ctx: FileContext, type_node: ts.Node) -> bool:
    t = normalize_name(node_text(type_node))
    aliases = type_aliases(ctx.source.data)
    seen = {t}
    while t in aliases and aliases[t] not in seen:
        t = aliases[t]
        seen.add(t)
    return any(_is_dv(ctx.resolve(x)) for x in seen)


def _is_write(node: ts.Node) -> bool:
    p = node.parent
    while p is not None and p.type == "parenthesized_expression":
        node, p = p, p.parent
    if p is None:
        return False
    if p.type == "assignment_expression":
        left = p.child_by_field_name("left")
        return left is not None and left.start_byte == node.start_byte and left.end_byte == node.end_byte
    return p.type == "update_expression"


def _is_read(node: ts.Node) -> bool:
    p = node.parent
    while p is not None and p.type == "parenthesized_expression":
        node, p = p, p.parent
    if p is not None and p.type == "assignment_expression":
        left = p.child_by_field_name("left")
        op = p.child_by_field_name("operator")
        if left is not None and left.start_byte == node.start_byte and left.end_byte == node.end_byte:
            return op is not None and node_text(op) != "="  # `v[i] += x` reads and writes
    return True


@BUILTINS.register("device_vector_element_access", builtin_schema())
def device_vector_element_access(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    """`v[i]`, `v.front()`, `v.back()` on a thrust::device_vector in a host loop: one blocking copy each."""
    if not DV_WORDS.search(ctx.source.data):
        return []
    out = []
    q = query("(subscript_expression argument: (identifier) @v) @s "
              "(call_expression function: (field_expression argument: (identifier) @v field: (field_identifier) @f)) @s")
    unit = ctx.main
    for _, caps in ts.QueryCursor(q).matches(unit.root):
        s = caps["s"][0]
        if "f" in caps and node_text(caps["f"][0]) not in ("front", "back"):
            continue
        var = caps["v"][0]
        sc = scope_of(s)
        if sc.loop_depth == 0 or sc.is_kernel or sc.is_device:
            continue
        if _address_taken(s):
            continue  # `&v[i]`: device_reference::operator& returns the device pointer, no copy
        if not _is_dv(declared_types(ctx, unit, node_text(var), var), DEVICE_ONLY):
            continue
        v = node_text(var)
        m = Match(rule=rule, unit=unit, node=s, name=v, written=node_text(s))
        w, r = _is_write(s), _is_read(s)
        m.vars.update({"is_write": w, "is_read": r, "variable": v,
                       "access": "read-modify-write" if (w and r) else "write" if w else "read"})
        out.append(m)
    return out


def _address_taken(node: ts.Node) -> bool:
    """`&v[i]` or `&(v[i])`: the element's address, not its value."""
    p = node.parent
    while p is not None and p.type == "parenthesized_expression":
        p = p.parent
    return p is not None and p.type == "pointer_expression" and node_text(p).lstrip("(").startswith("&")


GROWING = ("resize", "reserve", "assign", "push_back", "insert", "shrink_to_fit")


@BUILTINS.register("device_vector_in_loop", builtin_schema())
def device_vector_in_loop(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    """thrust::device_vector objects constructed, or resized/grown, inside a host loop."""
    if not DV_WORDS.search(ctx.source.data):
        return []
    out = []
    unit = ctx.main
    q = query("(declaration type: (_) @t) @decl")
    for _, caps in ts.QueryCursor(q).matches(unit.root):
        decl = caps["decl"][0]
        sc = scope_of(decl)
        if sc.loop_depth == 0 or sc.is_kernel or sc.is_device:
            continue
        if any(c.type == "storage_class_specifier" and node_text(c) in ("static", "extern", "thread_local") for c in decl.children):
            continue  # constructed once
        if not _dv_type(ctx, caps["t"][0]):
            continue
        for d in declarators(decl):
            got = declarator_name(d)
            if got is None or not got[1]:
                continue  # a pointer or reference owns no storage
            m = Match(rule=rule, unit=unit, node=d, name=got[0], written=node_text(d))
            m.vars.update({"variable": got[0], "what": "constructed", "method": ""})
            out.append(m)
    q = query("(call_expression function: (field_expression argument: (identifier) @v field: (field_identifier) @f)) @c")
    for _, caps in ts.QueryCursor(q).matches(unit.root):
        c, var, f = caps["c"][0], caps["v"][0], node_text(caps["f"][0])
        if f not in GROWING:
            continue
        sc = scope_of(c)
        if sc.loop_depth == 0 or sc.is_kernel or sc.is_device:
            continue
        if not _is_dv(declared_types(ctx, unit, node_text(var), var)):
            continue
        m = Match(rule=rule, unit=unit, node=c, name=node_text(var), written=node_text(c))
        m.vars.update({"variable": node_text(var), "what": f"{f}() called", "method": f})
        out.append(m)
    return out


# --------------------------------------------------------------------------- dead branches
_BRANCHING = ("preproc_if", "preproc_elif", "preproc_ifdef", "preproc_elifdef")


def _condition(branch: ts.Node) -> str | None:
    """The `#if` expression of a branch node (`#ifdef X` as `defined(X)`), None for `#else` or unreadable."""
    if branch.type in ("preproc_if", "preproc_elif"):
        cond = branch.child_by_field_name("condition")
        return node_text(cond) if cond is not None else None
    if branch.type in ("preproc_ifdef", "preproc_elifdef"):
        name = branch.child_by_field_name("name")
        first = branch.children[0] if branch.children else None
        if name is None or first is None:
            return None
        neg = first.type in ("#ifndef", "#elifndef")
        return ("!" if neg else "") + f"defined({node_text(name)})"
    return None


def dead_in_pass(node: ts.Node, ctx: FileContext, target: tuple[int, int] | None = None,
                 also: tuple[tuple[str, str | None], ...] = ()) -> bool:
    """Is `node` in a preprocessor branch that is never compiled for the target, in the pass whose extra `-D`/`-U`
    flags are `also` (none: the file's own flags only; match/migrations/passes.py asks per pass)?

    Decided from what the translation unit knows (ppenv): CUDA version macros defined by the toolkit headers the
    file includes directly or through project headers, macros the file or its project headers `#define`
    (`#define __CUDA_API_VERSION 5000` makes the `#else` of `#if __CUDA_API_VERSION >= 4000` dead), and for
    version macros that may be undefined both possibilities. Without `target`: dead for the target toolkit and
    every later one. With `target` (`fix --keep-compat`): dead for exactly that toolkit. A branch is dead when its
    own condition is false or an earlier branch of its chain is true in every case; undecided branches stay live.
    """
    data = ctx.source.data
    if b"#" not in data:
        return False
    env = None
    versions = [target] if target is not None else toolkits_from(ctx.target)
    cur = node
    while cur.parent is not None:
        p = cur.parent
        branch: ts.Node | None = None
        if p.type in _BRANCHING:
            alt = p.child_by_field_name("alternative")
            head = p.child_by_field_name("condition") or p.child_by_field_name("name")
            if (alt is None or cur.start_byte < alt.start_byte) and head is not None and cur.start_byte >= head.end_byte:
                branch = p
        elif p.type == "preproc_else":
            branch = p
        if branch is None:
            cur = p
            continue
        # the branch must be taken: its own condition true, every earlier branch of the chain false
        chain: list[tuple[ts.Node, bool]] = []
        if branch.type != "preproc_else":
            chain.append((branch, True))
        prev = branch
        while prev.parent is not None and prev.parent.type in _BRANCHING and prev.parent.child_by_field_name("alternative") == prev:
            prev = prev.parent
            chain.append((prev, False))
        for b, want in chain:
            ctext = _condition(b)
            if ctext is None:
                continue
            if env is None:
                env = pp_env(ctx, also=also)
            val = env.decide(ctext, _line_start(data, b.start_byte), versions)
            if val is not None and val != want:
                return True
        cur = prev
    return False


# --------------------------------------------------------------------------- struct fields filled by a getter
def _strip_addr(text: str) -> str:
    from ..context import normalize

    t = normalize(text)
    while t.startswith("(") and t.endswith(")"):
        t = t[1:-1]
    return t[1:] if t.startswith("&") else t


def _no_this(expr: str) -> str:
    return expr[len("this->"):] if expr.startswith("this->") else expr


def _semantic_receiver(ctx: FileContext, unit, field: ts.Node, types: list[str]) -> bool:
    """Semantic mode: libclang's type of the member access's base expression (recorded even when the access
    itself is invalid because the 13.0 header no longer has the field)."""
    if ctx.semantic is None or unit.in_macro:
        return False
    rec = ctx.semantic.facts.members.get(unit.abs(field)[1])
    return rec is not None and any(rec == t or rec.endswith("::" + t) for t in types)


@BUILTINS.register("filled_struct_field", doc=(
    "`prop.clockRate` with the device from an earlier `cudaGetDeviceProperties(&prop, dev)` in `vars.source`; "
    "the receiver's type is followed through aliases, pointers, references, `auto` and members declared in "
    "project headers; `hoist: {field: attribute}` computes the edits that read the field once into a local "
    "filled by `cudaDeviceGetAttribute` before the statement, `guard: {field: condition}` compiles the statement "
    "that prints or tests a removed capability flag only under `#if condition`."), schema=builtin_schema(
    fields=string_list(), types=string_list(), getters=free_mapping("{GETTER: [ARG, ...]}"),
    guard=free_mapping("{FIELD: CONDITION}"), hoist=free_mapping("{FIELD: ATTRIBUTE}")))
def filled_struct_field(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    """`recv.field` / `recv->field` where `recv` is declared with one of `types`; when the same function
    filled it earlier with a getter call (`getter(&recv, dev)`), vars.source is that call's argument
    `source_arg` (e.g. the device), and vars.has_source is true.

    Spec: {name: filled_struct_field, fields: [...], types: [...], getters: {name: [struct_arg, source_arg]},
    hoist: {field: attribute}, guard: {field: condition}}. With `guard` (a flag whose feature the toolkit
    removed), the print or `if` that reads it is wrapped in `#if condition` ... `#endif`, or deleted when the
    project's declared minimum toolkit (`keep-compat`) is at least the rule's `removed_in`
    (vars.guarded: `print` or `if`, vars.removed; vars.not_guarded says why there is no automatic rewrite).
    With `hoist`, a read whose source is known gets edits (m.edits) that read the
    field once into a local filled by `cudaDeviceGetAttribute(&v, attribute, source)` before the statement
    (vars.hoisted, vars.variable), or vars.not_hoisted says why there is no place for it.
    """
    from ..matchers import declared_type, member_expression_type
    from ...read.project_index import project_member_type
    from .deviceprop import FIELD_READS, bound_objects, calls_from, hoist_edits, receiver_is
    from .deviceprop_guard import removed_capability_edits
    from ...rules.schema import parse_version

    spec = rule.spec
    fields = set(spec.get("fields", []))
    types = spec.get("types", [])
    getters: dict[str, list[int]] = spec.get("getters", {}) or {}
    out: list[Match] = []
    for unit in ctx.units:
        # `(field_expression argument: (_) @r field: (field_identifier) @f) @fe` of the listed fields, found
        # where their names occur in the text (no walk of the whole tree: the editor re-scans at each keystroke)
        for fe, recv, f in walk.named_pair_matches(unit.root, FIELD_READS, "argument", fields):
            t: str | None = None
            base = recv
            while base.type in ("subscript_expression", "pointer_expression", "parenthesized_expression") and base.named_children:
                base = base.named_children[0]
            if base.type == "identifier":
                t = declared_type(ctx, unit, node_text(base), fe)
                if t is None:  # a class member used inside a method: its type is in the class (a project header)
                    t = project_member_type(ctx, None, node_text(base), fe)
            elif base.type == "field_expression":  # `this->prop.clockRate`, `gpu.m_props.computeMode`
                t = member_expression_type(ctx, unit, base, fe)
            else:
                t = None
            if (t is None or not any(ty in t for ty in types)) and not receiver_is(ctx, unit, recv, fe, types) \
                    and not _semantic_receiver(ctx, unit, f, types):
                continue  # also typedef/using aliases, pointers, references, `auto` (match/migrations/deviceprop.py), libclang's type
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
            want = _strip_addr(node_text(recv))
            while want.startswith("*") or (want.startswith("(") and want.endswith(")")):
                want = want[1:] if want.startswith("*") else want[1:-1]  # `(*p).f` was filled by `getter(p, ...)`
            want = _no_this(want)  # `this->prop` and `prop` are the same member
            # a reference (or const pointer) bound to the filled struct reads the same device
            wants = set(bound_objects(unit, want, fe)) if re.fullmatch(r"[A-Za-z_]\w*", want) else {want}
            fn = sc.function
            if fn is not None and not unit.in_macro:
                best = None
                for gname, (sarg, darg) in getters.items():
                    for call in calls_from(ctx, fn).get(gname, []):
                        if not (fn.start_byte <= call.start_byte < fe.start_byte):
                            continue
                        args = [c for c in call.child_by_field_name("arguments").named_children if c.type != "comment"]
                        if len(args) > max(sarg, darg) and _no_this(_strip_addr(node_text(args[sarg]))) in wants:
                            if best is None or call.start_byte > best[0]:
                                best = (call.start_byte, node_text(args[darg]))
                if best is not None:
                    m.vars["has_source"] = True
                    m.vars["source"] = best[1]
            m.vars.update(hoisted=False, variable="", not_hoisted="", guarded="", removed=False, not_guarded="")
            guard = (spec.get("guard") or {}).get(node_text(f))
            if guard is not None:
                # the feature itself was removed: the code that prints or tests the flag is compiled out on 13.0
                if m.vars["is_write"]:
                    m.vars["not_guarded"] = "this code assigns it"
                elif m.vars["in_device_code"]:
                    m.vars["not_guarded"] = "it is read in device code"
                else:
                    gone_in = parse_version(str(rule.removed_in)) if getattr(rule, "removed_in", None) else None
                    remove = ctx.keep_compat is not None and gone_in is not None and ctx.keep_compat >= gone_in
                    edits, form, why = removed_capability_edits(ctx, unit, fe, node_text(f), str(guard), remove)
                    m.edits = edits
                    m.vars.update(guarded=form, removed=remove and bool(edits), not_guarded=why, guard=str(guard))
                out.append(m)
                continue
            query_attr = (spec.get("hoist") or {}).get(node_text(f)) if spec.get("hoist") else None
            if query_attr and m.vars["has_source"] and not m.vars["is_write"] and not m.vars["in_device_code"]:
                # read once into a local filled by the attribute query (see match/migrations/deviceprop.py)
                edits, why, var = hoist_edits(ctx, unit, fe, node_text(f), query_attr, m.vars["source"], fields)
                m.edits = edits
                m.vars["hoisted"] = bool(edits)
                m.vars["variable"] = var
                if why:
                    m.vars["not_hoisted"] = why
            out.append(m)
    return out


# --------------------------------------------------------------------------- namespace uses
@BUILTINS.register("namespace_use", builtin_schema(namespaces=string_list()))
def namespace_use(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    """Qualified names through, and `using namespace` of, the namespaces in `spec.namespaces`
    (e.g. `cooperative_groups::experimental`), with namespace aliases resolved. vars.namespace is the
    namespace as listed, vars.member the name used inside it (when there is one)."""
    wanted = list(rule.spec.get("namespaces", []))
    lasts = {w.split("::")[-1] for w in wanted}
    out: list[Match] = []
    for unit in ctx.units:
        for ns in walk.typed_nodes(unit.root, NAMESPACE_IDENTIFIER):
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
        full = normalize_name(source_text(mo.group(1)))
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
