"""`legacy_work_isolated`: legacy-default-stream work that cannot meet work of another stream.

Why: CM101/CM102 report legacy-stream calls in translation units that also use other blocking streams, because
the legacy stream then serializes against them. A common shape is not worth changing, though: set-up or
verification code that uses only the legacy stream before the function has put any work on another stream, and
that the host then waits for with `cudaStreamSynchronize(0)` / `cudaDeviceSynchronize()` before any other stream
is used (cuda-samples' UnifiedMemoryPerf verifies its kernel that way before its timed multi-stream phase).
Nothing of another stream is in flight there, so the implicit barrier costs nothing, and the team's best CUDA
engineer would leave the line alone.

Decided syntactically and conservatively, inside the function around the match (false outside a function,
inside a loop, or in a macro body):
- the function takes no stream parameter, and no statement before the match names a stream variable (a name the
  file declares as `cudaStream_t`/`CUstream`, arrays included) or `cudaStreamPerThread`, except as the argument
  of `cudaStreamCreate*`;
- after the match, a legacy-stream wait (`cudaStreamSynchronize` of a null stream, `cudaDeviceSynchronize`,
  `cuCtxSynchronize`, `cudaThreadSynchronize`) comes before any mention of a stream variable.
"""

from __future__ import annotations

import re

import tree_sitter as ts

from ..parse.treesitter import parent_of

STREAM_TYPE = re.compile(r"^(const\s+)?(cudaStream_t|CUstream)$")
CREATE = {"cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority", "cuStreamCreate",
          "cuStreamCreateWithPriority"}
DEVICE_WAITS = {"cudaDeviceSynchronize", "cuCtxSynchronize", "cudaThreadSynchronize"}
STREAM_WAITS = {"cudaStreamSynchronize", "cuStreamSynchronize"}
NULL_STREAM = {"0", "NULL", "nullptr", "cudaStreamLegacy", "CU_STREAM_LEGACY", "(cudaStream_t)0", "(cudaStream_t)NULL"}


def _walk(node: ts.Node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _text(n: ts.Node | None) -> str:
    return n.text.decode("utf-8", "replace") if n is not None and n.text is not None else ""


def stream_names(root: ts.Node) -> set[str]:
    """Names declared anywhere in the file (variables, parameters, fields) with a stream type."""
    names: set[str] = set()
    for n in _walk(root):
        if n.type in ("declaration", "parameter_declaration", "field_declaration"):
            if not STREAM_TYPE.match(re.sub(r"\s+", " ", _text(n.child_by_field_name("type"))).strip()):
                continue
            for d in n.children_by_field_name("declarator"):
                while d is not None and d.type not in ("identifier", "field_identifier"):
                    d = d.child_by_field_name("declarator") or (d.named_children[0] if d.named_children else None)
                if d is not None:
                    names.add(_text(d))
    return names


def _callee(call: ts.Node) -> str:
    return _text(call.child_by_field_name("function")).rsplit("::", 1)[-1].strip()


def _names_stream(n: ts.Node, streams: set[str]) -> bool:
    """`n` is an identifier naming a stream outside a `cudaStreamCreate*` argument list."""
    if n.type not in ("identifier", "field_identifier"):
        return False
    t = _text(n)
    if t != "cudaStreamPerThread" and t not in streams:
        return False
    p = parent_of(n)
    if p is not None and (p.type in ("declaration", "array_declarator", "pointer_declarator")
                          or (p.type == "init_declarator" and p.child_by_field_name("declarator") == n)):
        return False  # the stream's own declaration
    while p is not None and p.type not in ("expression_statement", "declaration", "compound_statement"):
        if p.type == "call_expression" and _callee(p) in CREATE:
            return False
        p = parent_of(p)
    return True


def _is_legacy_wait(call: ts.Node) -> bool:
    name = _callee(call)
    if name in DEVICE_WAITS:
        return True
    if name in STREAM_WAITS:
        args = call.child_by_field_name("arguments")
        first = args.named_children[0] if args is not None and args.named_children else None
        return first is not None and re.sub(r"\s+", "", _text(first)) in NULL_STREAM
    return False


def legacy_work_isolated(node: ts.Node, function: ts.Node | None, root: ts.Node, in_loop: bool) -> bool:
    if function is None or in_loop:
        return False
    streams = stream_names(root)
    decl = function.child_by_field_name("declarator")
    for n in _walk(decl) if decl is not None else ():
        if n.type == "parameter_declaration" and STREAM_TYPE.match(
                re.sub(r"\s+", " ", _text(n.child_by_field_name("type"))).strip()):
            return False
    body = function.child_by_field_name("body")
    if body is None:
        return False
    waited = False
    for n in _walk(body):
        if n.start_byte < node.start_byte:
            if n.end_byte <= node.start_byte and _names_stream(n, streams):
                return False  # another stream may hold work when the match runs
            continue
        if n.start_byte < node.end_byte:
            continue  # the match itself
        if _names_stream(n, streams):
            return False  # another stream is used before the host waits for this work
        if n.type == "call_expression" and _is_legacy_wait(n):
            waited = True
            break
    return waited
