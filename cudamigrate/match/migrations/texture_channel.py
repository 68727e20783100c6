"""What a texture reference's `channelDesc` read becomes once the reference is a texture object (CM601).

A texture object has no channel descriptor of its own: `ref.channelDesc` is the descriptor its template
arguments imply, `cudaCreateChannelDesc<T>()` (CUDA 13.0 channel_descriptor.h). That call is a prvalue, so
`&ref.channelDesc` (`cudaMallocArray(&arr, &tex.channelDesc, w, h)`) cannot become `&cudaCreateChannelDesc<T>()`:
taking the address of a temporary does not compile. It becomes the address of a function-local static
initialised once with that descriptor, valid for as long as the program runs (the pointer may be kept), and
`const`, so a call that would write through it (`cudaGetChannelDesc`) fails to compile instead of writing to a
copy nobody reads; that call is reported as manual in the first place (`writes_channel_desc`).
"""

from __future__ import annotations

from typing import Callable

import tree_sitter as ts

from ...findings.model import Edit

# the runtime calls whose pointer argument receives a channel descriptor (cuda_runtime_api.h)
WRITES_DESC = {"cudaGetChannelDesc": 0}


def _address_of(node: ts.Node) -> ts.Node | None:
    """The `&node` expression around `node` (parentheses allowed), or None."""
    p = node.parent
    while p is not None and p.type == "parenthesized_expression":
        node, p = p, p.parent
    if p is not None and p.type == "pointer_expression":
        op = p.child_by_field_name("operator")
        if op is not None and op.type == "&":
            return p
    return None


def channel_desc_edit(field: ts.Node, start: int, end: int, elem: str,
                      abs_range: Callable[[ts.Node], tuple[int, int]]) -> Edit:
    """The edit for a read of `ref.channelDesc` (the `field_expression` at [start, end))."""
    desc = f"cudaCreateChannelDesc<{elem}>()"
    addr = _address_of(field)
    if addr is None:
        return Edit(start, end, desc)
    s, e = abs_range(addr)
    return Edit(s, e, f"[] {{ static const cudaChannelFormatDesc d = {desc}; return &d; }}()")


def writes_channel_desc(field: ts.Node) -> str | None:
    """`cudaGetChannelDesc(&ref.channelDesc, ...)`: the call that writes the descriptor, else None."""
    addr = _address_of(field)
    if addr is None:
        return None
    arg, args = addr, addr.parent
    while args is not None and args.type == "parenthesized_expression":
        arg, args = args, args.parent
    call = args.parent if args is not None and args.type == "argument_list" else None
    fn = call.child_by_field_name("function") if call is not None else None
    name = fn.text.decode("utf-8", "replace").split("::")[-1] if fn is not None and fn.text is not None else ""
    if name not in WRITES_DESC:
        return None
    assert args is not None
    return name if args.named_children[WRITES_DESC[name]].id == arg.id else None
