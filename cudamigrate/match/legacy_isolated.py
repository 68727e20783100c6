"""`legacy_work_isolated`: legacy-default-stream work that cannot meet work of another stream.

Why: CM101/CM102 report legacy-stream calls in translation units that also use other blocking streams, because
the legacy stream then serializes against them. A common shape is not worth changing, though: set-up or
verification code that uses only the legacy stream before the function has put any work on another stream, and
that the host then waits for with `cudaStreamSynchronize(0)` / `cudaDeviceSynchronize()` before any other stream
is used (cuda-samples' UnifiedMemoryPerf verifies its kernel that way before its timed multi-stream phase).
Nothing of another stream is in flight there, so the implicit barrier costs nothing, and the team's best CUDA
engineer would leave the line alone.

Decided syntactically and conservatively, inside the function around the match (false outside a function or
in a macro body):
- the function takes no stream parameter; every statement before the match that names a stream variable (a name
  the file declares as `cudaStream_t`/`CUstream`, arrays included) or `cudaStreamPerThread`, except as the
  argument of a call that queues no work (`cudaStreamCreate*`, `cudaStreamDestroy`, `cudaEventRecord`, ...), is
  followed by a host wait for the legacy stream (below: waiting for the
  legacy stream waits for all earlier work of the blocking streams) before the match; in a loop, the loop names
  no stream at all;
- after the match, a legacy-stream wait (`cudaStreamSynchronize` of a null stream, `cudaDeviceSynchronize`,
  `cuCtxSynchronize`, `cudaThreadSynchronize`, `cudaEventSynchronize` of an event recorded on the legacy stream
  after the match, a device-to-host `cudaMemcpy`) comes before any mention of a stream variable.

`consumes_other_stream_work` answers the other case where the line should not change: the legacy-stream call
reads what earlier work on another stream of the same function wrote, and the implicit barrier orders it.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field

import tree_sitter as ts

from ..parse import walk
from ..parse.treesitter import parent_of
from .streams import may_declare_streams

STREAM_TYPE = re.compile(r"^(const\s+)?(cudaStream_t|CUstream)$")
CREATE = {"cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority", "cuStreamCreate",
          "cuStreamCreateWithPriority"}
NO_WORK = CREATE | {"cudaEventRecord", "cuEventRecord", "cudaEventRecordWithFlags", "cudaStreamQuery", "cuStreamQuery",
                    "cudaStreamDestroy", "cuStreamDestroy", "cudaStreamGetFlags", "cudaStreamGetPriority"}
DEVICE_WAITS = {"cudaDeviceSynchronize", "cuCtxSynchronize", "cudaThreadSynchronize"}
STREAM_WAITS = {"cudaStreamSynchronize", "cuStreamSynchronize"}
NOT_BUFFERS = {"i", "j", "k", "n", "N", "size", "count", "nbytes", "bytes", "len", "width", "height"}
NULL_STREAM = {"0", "NULL", "nullptr", "cudaStreamLegacy", "CU_STREAM_LEGACY", "(cudaStream_t)0", "(cudaStream_t)NULL"}


def _walk(node: ts.Node) -> Iterator[ts.Node]:
    """`node` and every node under it in pre-order, by a TreeCursor (no list of children built per node: twice
    as fast as a stack of `children`)."""
    cur = node.walk()
    while True:
        n = cur.node
        if n is not None:  # (a cursor always stands on a node)
            yield n
        if cur.goto_first_child():
            continue
        while not cur.goto_next_sibling():
            if not cur.goto_parent():
                return


def _text(n: ts.Node | None) -> str:
    return n.text.decode("utf-8", "replace") if n is not None and n.text is not None else ""


_LAST: list = [None, frozenset()]  # (root, names) of the last file asked: every finding of a file asks again


def stream_names(root: ts.Node) -> set[str]:
    """Names declared anywhere in the file (variables, parameters, fields) with a stream type.

    Remembered for the last root: walking the whole file once per finding made a file with thousands of
    findings quadratic (the 50,000-finding report test). Holding the root keeps its tree alive, so an equal
    root is the same tree."""
    if _LAST[0] is not None and _LAST[0] == root:
        return set(_LAST[1])
    names = _stream_names(root)
    _LAST[0], _LAST[1] = root, frozenset(names)
    return names


# `(declaration type: (_) @t) @d ...`: the declarations whose type can be a stream type, walked (parse/walk.py)
_DECLARATIONS = tuple(walk.FieldPattern(t, "type") for t in ("declaration", "parameter_declaration", "field_declaration"))


def _stream_names(root: ts.Node) -> set[str]:
    names: set[str] = set()
    if not may_declare_streams(root.text or b""):
        return names
    for _, n, t in walk.field_matches(root, _DECLARATIONS):
        if not STREAM_TYPE.match(re.sub(r"\s+", " ", _text(t)).strip()):
            continue
        for d in n.children_by_field_name("declarator"):
            while d is not None and d.type not in ("identifier", "field_identifier"):
                d = d.child_by_field_name("declarator") or (d.named_children[0] if d.named_children else None)
            if d is not None:
                names.add(_text(d))
    return names - _null_constants(root, names) if names else names


def _null_constants(root: ts.Node, names: set[str]) -> set[str]:
    """Stream variables that are the legacy stream by value: declared with a null initializer (`= 0`, `nullptr`,
    `cudaStreamLegacy`) and never assigned or address-taken anywhere in the file. Work "on" them is legacy-stream
    work, not another stream's."""
    nulls: set[str] = set()
    for n in _walk(root):
        if n.type == "init_declarator":
            name, value = n.child_by_field_name("declarator"), n.child_by_field_name("value")
            if name is not None and name.type == "identifier" and _text(name) in names and value is not None \
                    and re.sub(r"\s+", "", _text(value)) in NULL_STREAM:
                nulls.add(_text(name))
    if not nulls:
        return nulls
    for n in _walk(root):
        target = None
        if n.type == "assignment_expression":
            target = n.child_by_field_name("left")
        elif n.type == "pointer_expression" and _text(n).startswith("&"):
            target = n.child_by_field_name("argument")
        elif n.type in ("update_expression", "reference_declarator"):
            target = n
        if target is not None:
            nulls -= {_text(x) for x in _walk(target) if x.type == "identifier"}
    return nulls


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
        if p.type == "call_expression" and _callee(p) in NO_WORK:
            return False  # creating, querying, destroying a stream or recording an event on it queues no work
        p = parent_of(p)
    return True


def _args(call: ts.Node) -> list[ts.Node]:
    args = call.child_by_field_name("arguments")
    return [a for a in args.named_children if a.type != "comment"] if args is not None else []


def _is_legacy_wait(call: ts.Node, recorded: set[str]) -> bool:
    """The host waits here for all legacy-stream work queued so far. `recorded`: events recorded on the legacy
    stream after the match (a `cudaEventSynchronize` of one of them waits for the match's work)."""
    name = _callee(call)
    args = _args(call)
    if name in DEVICE_WAITS:
        return True
    if name in STREAM_WAITS:
        return bool(args) and re.sub(r"\s+", "", _text(args[0])) in NULL_STREAM
    if name in ("cudaEventSynchronize", "cuEventSynchronize"):
        return bool(args) and re.sub(r"\s+", "", _text(args[0])) in recorded
    # a device-to-host cudaMemcpy returns once the copy, queued after the legacy stream's work, has completed
    if name in ("cudaMemcpy", "cudaMemcpy2D", "cudaMemcpyFromSymbol") and args:
        return "DeviceToHost" in _text(args[-1])
    return False


def _records_on_legacy(call: ts.Node) -> str | None:
    if _callee(call) not in ("cudaEventRecord", "cuEventRecord"):
        return None
    args = _args(call)
    if len(args) == 1 or (len(args) == 2 and re.sub(r"\s+", "", _text(args[1])) in NULL_STREAM):
        return re.sub(r"\s+", "", _text(args[0]))
    return None


@dataclass
class _FunctionFlow:
    """One pass over a function body that answers both conditions for every finding of the function in
    O(log n) each: asking again per finding, from the top of the body, made a function with thousands of
    legacy-stream calls quadratic (1,600 `cudaMemcpyAsync(..., 0)`: 24 s)."""

    starts: list[int] = field(default_factory=list)  # event start bytes, non-decreasing (pre-order)
    pending_after: list[bool] = field(default_factory=list)  # other-stream work in flight after event i
    next_stream: list[int] = field(default_factory=list)  # first event >= i that names a stream (len: none)
    next_wait: list[int] = field(default_factory=list)  # first event >= i that waits for the legacy stream
    event_syncs: list[tuple[int, str]] = field(default_factory=list)  # (index, event) of event synchronizations
    records: dict[str, list[int]] = field(default_factory=dict)  # event name -> indexes recording it on legacy
    waits: list[int] = field(default_factory=list)  # indexes of host waits (device, stream, event)
    produced: dict[str, list[int]] = field(default_factory=dict)  # buffer name -> indexes of other-stream work
    ident_starts: list[int] = field(default_factory=list)  # every identifier of the body, pre-order
    ident_names: list[str] = field(default_factory=list)
    ident_pos: dict[str, list[int]] = field(default_factory=dict)  # identifier -> its start bytes
    stream_pos: list[int] = field(default_factory=list)  # start bytes of identifiers naming a stream

    def names_in(self, node: ts.Node) -> set[str]:
        """The identifiers under `node` (names that may be buffers: `&d_a[2 * i]` -> d_a, i), from the body's
        identifier list: no walk."""
        lo, hi = bisect_left(self.ident_starts, node.start_byte), bisect_left(self.ident_starts, node.end_byte)
        return set(self.ident_names[lo:hi])

    def has_stream_in(self, node: ts.Node) -> bool:
        lo = bisect_left(self.stream_pos, node.start_byte)
        return lo < len(self.stream_pos) and self.stream_pos[lo] < node.end_byte

    def mentions(self, name: str, node: ts.Node) -> bool:
        pos = self.ident_pos.get(name, ())
        lo = bisect_left(pos, node.start_byte)
        return lo < len(pos) and pos[lo] < node.end_byte


_LAST_FLOW: list = [None, frozenset(), None]  # (function, streams, flow) of the last function asked


def _flow(function: ts.Node, body: ts.Node, streams: set[str]) -> _FunctionFlow:
    key = frozenset(streams)
    if _LAST_FLOW[0] is not None and _LAST_FLOW[0] == function and _LAST_FLOW[1] == key:
        return _LAST_FLOW[2]
    events: list[tuple[int, bool, ts.Node]] = []
    fl = _FunctionFlow()
    stream_like = streams | {"cudaStreamPerThread"}
    for n in _walk(body):
        if n.type == "identifier":
            t = _text(n)
            fl.ident_starts.append(n.start_byte)
            fl.ident_names.append(t)
            fl.ident_pos.setdefault(t, []).append(n.start_byte)
            if t in stream_like:
                fl.stream_pos.append(n.start_byte)
        if _names_stream(n, streams):
            events.append((n.start_byte, True, n))
        elif n.type == "call_expression":
            events.append((n.start_byte, False, n))
    pending = False
    recorded: set[str] = set()
    simple_wait: list[bool] = []
    for i, (start, names_stream, n) in enumerate(events):
        fl.starts.append(start)
        wait = False
        if names_stream:
            pending = True
        else:
            name = _callee(n)
            ev = _records_on_legacy(n)
            if ev:
                recorded.add(ev)
                fl.records.setdefault(ev, []).append(i)
            if _is_legacy_wait(n, recorded):
                pending = False
            if name in ("cudaEventSynchronize", "cuEventSynchronize"):
                args = _args(n)
                if args:
                    fl.event_syncs.append((i, re.sub(r"\s+", "", _text(args[0]))))
            else:
                wait = _is_legacy_wait(n, set())
            if name in DEVICE_WAITS | STREAM_WAITS | {"cudaEventSynchronize", "cuEventSynchronize"}:
                fl.waits.append(i)
            elif name not in CREATE and any(fl.has_stream_in(c) for c in n.children
                                            if c.type in ("argument_list", "kernel_call_syntax")):
                # only calls that name a stream pay for their argument names (nested calls stay linear)
                args_n = n.child_by_field_name("arguments")
                for x in fl.names_in(args_n) if args_n is not None else ():
                    fl.produced.setdefault(x, []).append(i)
        fl.pending_after.append(pending)
        simple_wait.append(wait)
    m = len(events)
    fl.next_stream = [m] * (m + 1)
    fl.next_wait = [m] * (m + 1)
    for i in range(m - 1, -1, -1):
        fl.next_stream[i] = i if events[i][1] else fl.next_stream[i + 1]
        fl.next_wait[i] = i if simple_wait[i] else fl.next_wait[i + 1]
    _LAST_FLOW[:] = [function, key, fl]
    return fl


def legacy_work_isolated(node: ts.Node, function: ts.Node | None, root: ts.Node, loop: ts.Node | None) -> bool:
    if function is None:
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
    if loop is not None and any(_names_stream(n, streams) for n in _walk(loop)):
        return False  # a later iteration could find this loop's other-stream work in flight
    fl = _flow(function, body, streams)
    before = bisect_left(fl.starts, node.start_byte)  # events that start before the match
    if before and fl.pending_after[before - 1]:
        return False  # another stream may hold work when the match runs
    j = bisect_left(fl.starts, node.end_byte)  # the first event after the match
    first_wait = fl.next_wait[j]
    for k, ev in fl.event_syncs:  # an event recorded on the legacy stream after the match, then waited for
        if j <= k < first_wait and any(j <= r < k for r in fl.records.get(ev, ())):
            first_wait = k
            break
    return first_wait < len(fl.starts) and first_wait < fl.next_stream[j]


def consumes_other_stream_work(node: ts.Node, function: ts.Node | None, root: ts.Node) -> bool:
    """The legacy-stream call shares a buffer argument with earlier work, in the same function, that names a
    stream and that the host has not waited for since (no stream, event or device synchronization in between,
    in source order): the legacy stream's implicit barrier is what orders this consumer after its producers (cuda-samples'
    simpleHyperQ sums on stream 0 what kernels on created streams wrote). Moving it off the legacy stream would
    race, so the line should not change."""
    if function is None:
        return False
    body = function.child_by_field_name("body")
    if body is None:
        return False
    streams = stream_names(root)
    args = node.child_by_field_name("arguments")
    if args is None:
        return False
    fl = _flow(function, body, streams)
    before = bisect_left(fl.starts, node.start_byte)
    since = fl.waits[bisect_left(fl.waits, before) - 1] + 1 if bisect_left(fl.waits, before) else 0
    # buffer-like names only: a shared loop index or size alone does not order anything; a producer counts when
    # the host has not waited since it (no wait between it and the match)
    for x, idx in fl.produced.items():  # the producers' names (few), each looked up in this call's arguments
        if x in NOT_BUFFERS or x in streams or not fl.mentions(x, args):
            continue
        if bisect_left(idx, before) > bisect_left(idx, since):
            return True
    return False
