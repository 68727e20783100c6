"""NPP functions without a stream context (`nppiFilterBox_8u_C1R`), which CUDA 13.0 removed for their `_Ctx` twins.

Which names: `cudamigrate/data/npp_removed_non_ctx.txt`, written by scripts/gen_npp_data.py from the 13.0 NPP
wheel (a `_Ctx` twin is declared, the name is no longer exported). The 12.x non-`_Ctx` functions ran on "the
most recent stream set by nppSetStream() or the NULL stream if nppSetStream() has never been called" (12.x
nppcore.h, nppGetStreamContext). The fix calls the `_Ctx` twin with a context for the legacy default stream and the
current device: the same stream as before unless the program called nppSetStream, which is why the fix is
unsafe (and withheld in a file that calls nppSetStream itself). The helper that fills the context is one
function per file (guarded, so two fixed files included together define it once); a function builds the
context once, into a local declared before its first NPP call, as NVIDIA's v13.0 samples do — unless the
function switches device (the context names a device) or jumps with `goto` (the local could be skipped), or
the call is in a lambda or a macro, where each call builds its own.

CM542 (`npp_size_t_out_param`): the 13.0 buffer-size queries write a `size_t` through their out-parameter
(`cudamigrate/data/npp_size_t_out_params.txt`, from the same wheel's prototypes); code that passes the address
of an `int` no longer compiles in C++. The fix declares the variable `size_t` when every other use of it keeps
its meaning (stored, or read where a `size_t` is expected anyway).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import tree_sitter as ts

from ...findings.model import Edit
from ...parse.walk import identifiers_starting, typed_nodes
from ...rules.schema import Rule
from ...core.registry import Registry
from .builtin_registry import BuiltinFn, builtin_schema
from ..context import FileContext, named_children, node_text, normalize, normalize_name
from ..matchers import Match

DATA = Path(__file__).resolve().parent.parent.parent / "data" / "npp_removed_non_ctx.txt"
HELPER = "cudamigrateNppStreamContext"
HELPER_GUARD = "CUDAMIGRATE_NPP_STREAM_CONTEXT"
LOCAL = "cudamigrateNppCtx"  # the context a function builds once, before its first NPP call
NPP_PREFIXES = ("nppi", "npps")  # the NPP names the lists hold: `^npp[is]`, image and signal processing
IDENTIFIER = frozenset({"identifier"})
# a function that selects another device (or context) between its NPP calls needs a context per call; `goto` may
# jump over the local's initialisation (an error in C++)
DEVICE_SWITCH = re.compile(rb"\b(cudaSetDevice|cuCtxSetCurrent|cuCtxPushCurrent(?:_v2)?|cuCtxPopCurrent(?:_v2)?|"
                           rb"cudaGLSetGLDevice|cudaD3D\w*SetDirect3DDevice|goto)\b")
# calls that select or read NPP's global stream: with one in the file the old calls may not have used stream 0
STREAM_STATE = ("nppSetStream", "nppGetStream", "nppGetStreamContext")

HELPER_TEXT = """
#ifndef CUDAMIGRATE_NPP_STREAM_CONTEXT
#define CUDAMIGRATE_NPP_STREAM_CONTEXT
/* cudamigrate CM540: NPP 13.0 removed the functions without a stream context. This is the context they
   used: the legacy default stream (NPP's stream unless nppSetStream chose another) on the current device. */
static inline NppStreamContext cudamigrateNppStreamContext(void)
{
    NppStreamContext ctx;
    int smem = 0;
    ctx.hStream = 0;
    ctx.nCudaDeviceId = 0;
    cudaGetDevice(&ctx.nCudaDeviceId);
    ctx.nMultiProcessorCount = 0;
    cudaDeviceGetAttribute(&ctx.nMultiProcessorCount, cudaDevAttrMultiProcessorCount, ctx.nCudaDeviceId);
    ctx.nMaxThreadsPerMultiProcessor = 0;
    cudaDeviceGetAttribute(&ctx.nMaxThreadsPerMultiProcessor, cudaDevAttrMaxThreadsPerMultiProcessor, ctx.nCudaDeviceId);
    ctx.nMaxThreadsPerBlock = 0;
    cudaDeviceGetAttribute(&ctx.nMaxThreadsPerBlock, cudaDevAttrMaxThreadsPerBlock, ctx.nCudaDeviceId);
    cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlock, ctx.nCudaDeviceId);
    ctx.nSharedMemPerBlock = (size_t)smem;
    ctx.nCudaDevAttrComputeCapabilityMajor = 0;
    cudaDeviceGetAttribute(&ctx.nCudaDevAttrComputeCapabilityMajor, cudaDevAttrComputeCapabilityMajor, ctx.nCudaDeviceId);
    ctx.nCudaDevAttrComputeCapabilityMinor = 0;
    cudaDeviceGetAttribute(&ctx.nCudaDevAttrComputeCapabilityMinor, cudaDevAttrComputeCapabilityMinor, ctx.nCudaDeviceId);
    ctx.nStreamFlags = 0;
    cudaStreamGetFlags(ctx.hStream, &ctx.nStreamFlags);
    ctx.nReserved0 = 0;
    return ctx;
}
#endif
"""


@lru_cache(maxsize=1)
def removed() -> dict[str, str]:
    """name -> `link` (still declared, no longer exported), `compile` (no longer declared) or `none` (the `_Ctx`
    twin is not exported either: no automatic fix)."""
    out: dict[str, str] = {}
    for line in DATA.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, how = line.split()
            out[name] = how
    return out


def helper_position(ctx: FileContext, before: int) -> int:
    """After the last top-level `#include` before `before` (the NPP headers declare NppStreamContext and
    include cuda_runtime.h); else the start of the file's first top-level item."""
    from .texture_edits import helper_position as after_includes

    return after_includes(ctx, before)


def _role(ident: ts.Node) -> str | None:
    """`call`, `value` (a function pointer), or None when it is not the global NPP function."""
    p = ident.parent
    if p is None:
        return None
    if p.type == "qualified_identifier":
        if node_text(p).replace(" ", "") != "::" + node_text(ident):
            return None  # my::nppiFoo
        ident, p = p, p.parent
        if p is None:
            return None
    if p.type == "call_expression" and p.child_by_field_name("function") is not None \
            and p.child_by_field_name("function").start_byte == ident.start_byte:
        return "call"
    if p.type in ("function_declarator", "field_expression", "field_identifier", "preproc_function_def", "preproc_def"):
        return None
    return "value"


def _function_local(ctx: FileContext, unit: Any, call: ts.Node) -> tuple[Edit | bool | None, str]:
    """Where the function around `call` builds its context once.

    An Edit declaring `LOCAL` before the body's statement that holds the function's first NPP call; True when
    the function already declares it (an earlier fix pass) before this call; None when each call must build
    its own (no function, a lambda between, a macro, a device switch or `goto` in the body, or no line of its
    own for the declaration); with why it is built per call."""
    if unit.in_macro:
        return None, "it is in a macro definition"
    node: ts.Node | None = call
    while node is not None and node.type not in ("function_definition", "lambda_expression"):
        node = node.parent
    if node is None:
        return None, "it is outside a function"
    if node.type != "function_definition":
        return None, "it is in a lambda, which cannot see a local of the function around it"
    body = node.child_by_field_name("body")
    if body is None or body.type != "compound_statement":
        return None, "the function has no plain body"
    # what depends on the function alone is worked out once per function (a search and a query of the body per
    # call made N calls in one function cost N bodies)
    memo = ctx.__dict__.setdefault("_npp_function_local", {})
    key = (id(unit), body.start_byte, body.end_byte)
    if key not in memo:
        memo[key] = _body_plan(ctx, unit, body)
    plan, why, switched = memo[key]
    if switched:
        return None, why
    top = call
    while top.parent is not None and top.parent.id != body.id:
        top = top.parent
    if top.parent is None:
        return None, "it is not in the function's body"
    if isinstance(plan, int):  # the body declares the local already: usable when it comes before this statement
        return (True, "") if plan < top.start_byte else (None, "the function already uses the name `cudamigrateNppCtx`")
    return plan, why


def _body_plan(ctx: FileContext, unit: Any, body: ts.Node) -> tuple[Edit | int | None, str, bool]:
    """`_function_local`'s answer for a function body: the Edit, None with why, or the start of the body's
    first statement declaring the local (an earlier pass's; a huge start when the name is used but not so
    declared); and whether a device switch or `goto` decided it (answered before anything else)."""
    text = body.text or b""
    switch = DEVICE_SWITCH.search(text)
    if switch:
        if switch.group(1) == b"goto":
            return None, "the function uses `goto`, which could jump over a local's initialisation", True
        return None, f"the function calls `{switch.group(1).decode()}`, so the current device may differ between calls", True
    data = ctx.source.data
    if LOCAL.encode() in text:
        for c in named_children(body):
            if c.type == "declaration" and re.search(rb"\b" + LOCAL.encode() + rb"\b", c.text or b""):
                return c.start_byte, "", False
        return 1 << 62, "", False
    first = None
    names = removed()
    for ident in identifiers_starting(body, NPP_PREFIXES):
        if names.get(node_text(ident), "none") != "none" and _role(ident) == "call":
            if first is None or ident.start_byte < first.start_byte:
                first = ident
    if first is None:
        return None, "it is not in the function's body", False
    stmt = first
    while stmt.parent is not None and stmt.parent.id != body.id:
        stmt = stmt.parent
    if any(p.type == "lambda_expression" for p in _ancestors(first, stmt)):
        return None, "the function's first NPP call is in a lambda", False
    s = unit.abs(stmt)[0]
    ls = data.rfind(b"\n", 0, s) + 1
    if data[ls:s].strip():
        return None, "the statement of the function's first NPP call does not start its line", False
    indent = data[ls:s].decode("utf-8", "surrogateescape")
    nl = ctx.source.newline.decode()
    return Edit(ls, ls, f"{indent}NppStreamContext {LOCAL} = {HELPER}();{nl}"), "", False


def _ancestors(node: ts.Node, stop: ts.Node) -> list[ts.Node]:
    out = []
    p = node.parent
    while p is not None and p.id != stop.id:
        out.append(p)
        p = p.parent
    return out


BUILTINS: Registry[BuiltinFn] = Registry("builtin matcher")  # joined with the others in match/kinds.py


@BUILTINS.register("npp_non_ctx", builtin_schema(), doc=(
    "NPP calls whose `_Ctx` twin replaced them, from `cudamigrate/data/npp_removed_non_ctx.txt` "
    "(`cudamigrate/match/migrations/npp.py`)."))
def npp_non_ctx(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    names = removed()
    own = ctx.defined_functions
    data = ctx.source.data
    stream_state = any(s.encode() in data for s in STREAM_STATE)
    out: list[Match] = []
    for unit in ctx.units:
        for ident in identifiers_starting(unit.root, NPP_PREFIXES):
            name = node_text(ident)
            if name not in names or name in own:
                continue
            role = _role(ident)
            if role is None:
                continue
            m = Match(rule=rule, unit=unit, node=ident, name=name, written=name, ident_range=unit.abs(ident))
            m.vars.update({"how": names[name], "ctx_name": name + "_Ctx", "role": role, "stream_state": stream_state})
            if role == "call" and not stream_state and names[name] != "none":
                call = ident.parent if ident.parent.type == "call_expression" else ident.parent.parent
                args_node = call.child_by_field_name("arguments")
                args = named_children(args_node)
                s, e = unit.abs(ident)
                edits = [Edit(s, e, name + "_Ctx")]
                local, why = _function_local(ctx, unit, call)
                m.vars["per_function"] = local is not None
                m.vars["why_per_call"] = why
                pass_ctx = LOCAL if local is not None else f"{HELPER}()"
                if isinstance(local, Edit):
                    edits.append(local)  # the same edit from every call of the function: shared, applied once
                if args:
                    end = unit.abs(args[-1])[1]
                    edits.append(Edit(end, end, f", {pass_ctx}"))
                else:
                    close = unit.abs(args_node)[1] - 1
                    edits.append(Edit(close, close, pass_ctx))
                if not _helper_present(ctx, data):
                    hp = helper_position(ctx, s)
                    edits.insert(0, Edit(hp, hp, HELPER_TEXT.replace("\n", ctx.source.newline.decode())))
                m.edits = edits
                m.fix_applicability = "unsafe"
            else:
                m.edits = []
                m.fix_applicability = "manual"
            out.append(m)
    return out


def _helper_present(ctx: FileContext, data: bytes) -> bool:
    """The stream context helper is in the file, or in a project header it includes (the one header a fix moves
    it to, fix/shared_helpers.py): a second fix adds no copy."""
    guard = HELPER_GUARD.encode()
    if guard in data:
        return True
    proj = ctx.project
    if proj is None:
        return False
    return any(guard in (proj.read(h) or b"") for h in proj.reachable(ctx.source.path, data))


# ------------------------------------------------------------------ CM542: `int` where 13.0 NPP writes `size_t`
SIZES_DATA = Path(__file__).resolve().parent.parent.parent / "data" / "npp_size_t_out_params.txt"
# declared types that are not size_t: the pointer conversion to `size_t *` is an error in C++ (C warns and the
# call writes 8 bytes into the smaller or differently-typed object). `unsigned long` (and `uint64_t`, which glibc
# defines as it) are left out: that is size_t itself on LP64 Linux (not on 64-bit Windows, which the tool cannot
# tell apart). Npp64u is `unsigned long long` (nppdefs.h:310), a different type from size_t there.
NARROW_TYPES = frozenset({
    "int", "signed", "signedint", "unsigned", "unsignedint", "short", "shortint", "unsignedshort",
    "unsignedshortint", "long", "longint", "signedlong", "longlong", "longlongint", "unsignedlonglong",
    "unsignedlonglongint", "Npp8u", "Npp8s", "Npp16u", "Npp16s", "Npp32u", "Npp32s", "Npp64s", "Npp64u",
    "int32_t", "uint32_t", "int64_t", "std::int32_t", "std::uint32_t", "std::int64_t",
})
# calls whose parameter at this index is `size_t` (host and runtime allocation and copy sizes): a variable that is
# read only there is converted to size_t at each read, so declaring it size_t keeps every value it passes
SIZE_PARAMS = {"cudaMalloc": 1, "cudaMallocManaged": 1, "cudaMallocHost": 1, "cudaMallocAsync": 1,
               "cudaHostAlloc": 1, "cudaMemset": 2, "cudaMemsetAsync": 2, "cudaMemcpy": 2, "cudaMemcpyAsync": 2,
               "malloc": 0, "memset": 2, "memcpy": 2, "std::malloc": 0, "std::memset": 2, "std::memcpy": 2}


@lru_cache(maxsize=1)
def size_t_out_params() -> dict[str, tuple[int, str]]:
    """name -> (0-based index, parameter name) of its `size_t *` parameter in the 13.0 NPP headers."""
    return {name: (idx, param) for name, (idx, param, _) in _size_t_rows().items()}


@lru_cache(maxsize=1)
def _size_t_rows() -> dict[str, tuple[int, str, tuple[int, int]]]:
    """name -> (index, parameter name, CUDA release since which NPP declares it `size_t *`)."""
    out: dict[str, tuple[int, str, tuple[int, int]]] = {}
    for line in SIZES_DATA.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, idx, param, since = line.split()
            major, minor = since.split(".")
            out[name] = (int(idx), param, (int(major), int(minor)))
    return out


def _strip_parens(n: ts.Node) -> ts.Node:
    while n.type == "parenthesized_expression" and len(named_children(n)) == 1:
        n = named_children(n)[0]
    return n


def _out_arg(arg: ts.Node) -> tuple[ts.Node, str] | None:
    """(variable identifier, form) of an out-argument: `&x` (`address`), `&x[i]` (`element`), `x` (`pointer`:
    a pointer or an array passed whole). Casts, members and other expressions are not judged."""
    a = _strip_parens(arg)
    if a.type == "pointer_expression" and node_text(a).lstrip().startswith("&"):
        inner = _strip_parens(a.child_by_field_name("argument"))
        if inner.type == "identifier":
            return inner, "address"
        if inner.type == "subscript_expression":
            base = _strip_parens(inner.child_by_field_name("argument"))
            if base.type == "identifier":
                return base, "element"
        return None
    if a.type == "identifier":
        return a, "pointer"
    return None


def _declarator_of(decl: ts.Node, name: str) -> ts.Node | None:
    from ..context import declarator_name, declarators

    for d in declarators(decl):
        got = declarator_name(d)
        if got is not None and got[0] == name:
            return d
    return None


def _shape(d: ts.Node) -> str:
    """`scalar`, `array` or `pointer`: what one declarator declares (init_declarator looked through)."""
    while d.type == "init_declarator":
        d = d.child_by_field_name("declarator")
    return {"array_declarator": "array", "pointer_declarator": "pointer", "reference_declarator": "reference"}.get(
        d.type, "scalar" if d.type == "identifier" else "other")


def _safe_initializer(d: ts.Node) -> bool:
    """No initializer, or zero / a non-negative integer literal / `{}` / `{0}`: the same value as size_t."""
    if d.type != "init_declarator":
        return True
    v = d.child_by_field_name("value")
    if v is None:
        return True
    t = normalize(node_text(v))
    return re.fullmatch(r"\{?(0[xX][0-9a-fA-F]+|\d+)?[uUlL]*\}?", t) is not None


def _use_is_safe(ident: ts.Node, sizes: dict[str, tuple[int, str]], own: set[str]) -> str | None:
    """None when this read or write of the variable keeps its meaning as size_t, else why not."""
    node = ident
    p = node.parent
    if p is not None and p.type == "subscript_expression" and p.child_by_field_name("argument") is not None \
            and p.child_by_field_name("argument").id == node.id:
        node, p = p, p.parent
    while p is not None and p.type == "parenthesized_expression":
        node, p = p, p.parent
    address = False
    if p is not None and p.type == "pointer_expression" and node_text(p).lstrip().startswith("&"):
        address, node, p = True, p, p.parent
        while p is not None and p.type == "parenthesized_expression":
            node, p = p, p.parent
    if p is not None and p.type == "assignment_expression" and not address \
            and p.child_by_field_name("left") is not None and p.child_by_field_name("left").id == node.id:
        if node_text(p.child_by_field_name("operator")) == "=" and p.parent is not None \
                and p.parent.type == "expression_statement":
            return None  # `x = size;` stored, then read only where it becomes size_t
        return f"`{node_text(p).strip()}`"
    if p is not None and p.type == "argument_list" and p.parent is not None and p.parent.type == "call_expression":
        fn = normalize_name(node_text(p.parent.child_by_field_name("function")))
        idx = next(i for i, c in enumerate(named_children(p)) if c.id == node.id)
        if address and fn in sizes and fn not in own and sizes[fn][0] == idx:
            return None
        if not address and SIZE_PARAMS.get(fn) == idx and fn not in own:
            return None
    stmt = node
    while stmt.parent is not None and not stmt.type.endswith("statement") and stmt.type != "declaration":
        stmt = stmt.parent
    return f"`{' '.join(node_text(stmt).split())[:80]}`"


def _type_fix(ctx: FileContext, unit: Any, decl: ts.Node, d: ts.Node, name: str,
              sizes: dict[str, tuple[int, str]]) -> tuple[list[Edit], str]:
    """The edit that declares `name` as size_t, or ([], why not)."""
    if decl.type != "declaration" or decl.parent is None or decl.parent.type != "compound_statement":
        return [], "it is not a local variable of a function"
    if len([c for c in decl.children_by_field_name("declarator")]) != 1:
        return [], "its declaration declares other variables too"
    if any(c.type == "type_qualifier" for c in decl.children):
        return [], "its declaration has a qualifier"
    if not _safe_initializer(d):
        return [], "its initial value is not a literal that size_t holds unchanged"
    if any(u is not unit and re.search(rb"\b" + re.escape(name.encode()) + rb"\b", u.root.text or b"")
           for u in ctx.units):
        return [], "a macro of the file names it"
    own = ctx.defined_functions
    block = decl.parent
    for ident in _block_identifiers(ctx, block).get(name, []):
        if ident.start_byte < decl.end_byte:
            continue
        p = ident.parent
        while p is not None and p.type in ("init_declarator", "array_declarator", "pointer_declarator"):
            p = p.parent
        if p is not None and p.type in ("declaration", "parameter_declaration"):
            return [], "another declaration in its block reuses the name"
        why = _use_is_safe(ident, sizes, own)
        if why is not None:
            return [], f"it is also used in {why}"
    tnode = decl.child_by_field_name("type")
    s, e = unit.abs(tnode)
    return [Edit(s, e, "size_t")], ""


def _block_identifiers(ctx: FileContext, block: ts.Node) -> dict[str, list[ts.Node]]:
    """The identifiers under `block` by name, in document order: captured once per block (a capture of the
    whole block per finding made N out-parameters in one function cost N blocks)."""
    memo = ctx.__dict__.setdefault("_npp_block_identifiers", {})
    key = (block.start_byte, block.end_byte, block.id)
    got: dict[str, list[ts.Node]] | None = memo.get(key)
    if got is None:
        got = {}
        for ident in typed_nodes(block, IDENTIFIER):
            got.setdefault(node_text(ident), []).append(ident)
        memo[key] = got
    return got


@BUILTINS.register("npp_size_t_out_param", builtin_schema(), doc=(
    "`&x` / `&a[i]` / `p` passed to an NPP parameter that the 13.0 headers declare `size_t *` (the buffer-size "
    "queries) where `x`, `a` or `p` is declared with another integer type; the list of parameters is "
    "`cudamigrate/data/npp_size_t_out_params.txt` (`cudamigrate/match/migrations/npp.py`)."))
def npp_size_t_out_param(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    from ..context import declaration_index, declaration_of, type_aliases

    rows = _size_t_rows()
    sizes = size_t_out_params()
    own = ctx.defined_functions
    aliases = type_aliases(ctx.source.data)
    out: list[Match] = []
    for unit in ctx.units:
        index = None
        for ident in identifiers_starting(unit.root, NPP_PREFIXES):
            name = node_text(ident)
            if name not in sizes or name in own or _role(ident) != "call" or rows[name][2] > ctx.target:
                continue  # (the target's NPP still declares `int *` there: nothing to change yet)
            call = ident.parent if ident.parent.type == "call_expression" else ident.parent.parent
            args = named_children(call.child_by_field_name("arguments"))
            idx, param = sizes[name]
            if idx >= len(args):
                continue
            got = _out_arg(args[idx])
            if got is None:
                continue
            var, form = got
            if index is None:
                index = declaration_index(unit.root)
            found = declaration_of(unit.root, node_text(var), args[idx], index)
            if found is None:
                continue
            decl, tnode, _ = found
            d = _declarator_of(decl, node_text(var))
            if d is None:
                continue
            shape = _shape(d)
            if (form, shape) not in (("address", "scalar"), ("address", "reference"), ("element", "array"),
                                     ("element", "pointer"), ("pointer", "array"), ("pointer", "pointer")):
                continue
            tname = normalize_name(node_text(tnode))
            seen = {tname}
            while tname in aliases and aliases[tname] not in seen:
                tname = aliases[tname]
                seen.add(tname)
            if not seen & NARROW_TYPES:
                continue
            fix_edits: list[Any]
            if shape == "reference":
                fix_edits, why = [], "it is a reference: the object it refers to must become size_t"
            elif form != "pointer" and shape == "pointer":
                fix_edits, why = [], "it is a pointer: the storage it points to must become size_t"
            elif form == "pointer":
                fix_edits, why = [], ("it is a pointer: the storage it points to must become size_t" if shape == "pointer"
                                      else "the array is passed whole")
            else:
                fix_edits, why = _type_fix(ctx, unit, decl, d, node_text(var), sizes)
            m = Match(rule=rule, unit=unit, node=args[idx], name=name, written=name)
            line = decl.start_point[0] + 1 + (0 if unit.base == 0 else ctx.source.data.count(b"\n", 0, unit.base))
            m.vars.update({"param": param, "index": idx + 1, "var": node_text(var), "since": ".".join(map(str, rows[name][2])),
                           "declared": " ".join(node_text(tnode).split()), "decl_line": line,
                           "arg": " ".join(node_text(args[idx]).split()), "why_manual": why})
            m.edits = fix_edits
            m.fix_applicability = "safe" if fix_edits else "manual"
            out.append(m)
    return out
