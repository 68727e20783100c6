"""NPP functions without a stream context (`nppiFilterBox_8u_C1R`), which CUDA 13.0 removed for their `_Ctx` twins.

Which names: `cudamigrate/data/npp_removed_non_ctx.txt`, written by scripts/gen_npp_data.py from the 13.0 NPP
wheel (a `_Ctx` twin is declared, the name is no longer exported). The 12.x non-`_Ctx` functions ran on "the
most recent stream set by nppSetStream() or the NULL stream if nppSetStream() has never been called" (12.x
nppcore.h, nppGetStreamContext). The fix calls the `_Ctx` twin with a context built for the legacy default
stream and the current device at the call (a helper inserted once per file): the same stream as before
unless the program called nppSetStream, which is why the fix is unsafe (and withheld in a file that calls
nppSetStream itself).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import tree_sitter as ts

from ..findings import Edit
from ..parse.treesitter import query
from ..rules.schema import Rule
from ..registry import Registry
from .builtin_registry import BuiltinFn, builtin_schema
from .context import FileContext, named_children, node_text
from .matchers import Match

DATA = Path(__file__).resolve().parent.parent / "data" / "npp_removed_non_ctx.txt"
HELPER = "cudamigrateNppStreamContext"
HELPER_GUARD = "CUDAMIGRATE_NPP_STREAM_CONTEXT"
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
    """name -> `link` (still declared, no longer exported) or `compile` (no longer declared)."""
    out: dict[str, str] = {}
    for line in DATA.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, how = line.split()
            out[name] = how
    return out


def _helper_position(ctx: FileContext, before: int) -> int:
    """After the last top-level `#include` before `before` (the NPP headers declare NppStreamContext and
    include cuda_runtime.h); else the start of the file's first top-level item."""
    from .texture import _helper_position as after_includes

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


BUILTINS: Registry[BuiltinFn] = Registry("builtin matcher")  # joined with the others in match/kinds.py


@BUILTINS.register("npp_non_ctx", builtin_schema(), doc=(
    "NPP calls whose `_Ctx` twin replaced them, from `cudamigrate/data/npp_removed_non_ctx.txt` "
    "(`cudamigrate/match/npp.py`)."))
def npp_non_ctx(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    names = removed()
    own = ctx.defined_functions
    data = ctx.source.data
    stream_state = any(s.encode() in data for s in STREAM_STATE)
    out: list[Match] = []
    q = query('((identifier) @id (#match? @id "^npp[is]"))')
    for unit in ctx.units:
        for ident in ts.QueryCursor(q).captures(unit.root).get("id", []):
            name = node_text(ident)
            if name not in names or name in own:
                continue
            role = _role(ident)
            if role is None:
                continue
            m = Match(rule=rule, unit=unit, node=ident, name=name, written=name, ident_range=unit.abs(ident))
            m.vars.update({"how": names[name], "ctx_name": name + "_Ctx", "role": role, "stream_state": stream_state})
            if role == "call" and not stream_state:
                call = ident.parent if ident.parent.type == "call_expression" else ident.parent.parent
                args_node = call.child_by_field_name("arguments")
                args = named_children(args_node)
                s, e = unit.abs(ident)
                edits = [Edit(s, e, name + "_Ctx")]
                if args:
                    end = unit.abs(args[-1])[1]
                    edits.append(Edit(end, end, f", {HELPER}()"))
                else:
                    close = unit.abs(args_node)[1] - 1
                    edits.append(Edit(close, close, f"{HELPER}()"))
                if HELPER_GUARD.encode() not in data:
                    hp = _helper_position(ctx, s)
                    edits.insert(0, Edit(hp, hp, HELPER_TEXT.replace("\n", ctx.source.newline.decode())))
                m.edits = edits
                m.fix_applicability = "unsafe"
            else:
                m.edits = []
                m.fix_applicability = "manual"
            out.append(m)
    return out
