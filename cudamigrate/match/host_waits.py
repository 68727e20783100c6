"""`host_waits_after`: does the host wait for the GPU later in the same loop iteration?

Why: a performance rule that removes a host synchronization from a call (CM301's `par_nosync`) gains nothing
when the host synchronizes again before the iteration ends, e.g. a Thrust sort timed between two events with
`cudaEventSynchronize(stop)` right after it. The team's best CUDA engineer would not change such a line, so
the rule asks this predicate and stays quiet there.

The answer is syntactic and conservative: the innermost `for`/`while`/`do` around the match, and a call after
the match's statement, inside that loop's body, whose callee's last name component is one of `names` (macro
wrappers such as `checkCudaErrors(cudaEventSynchronize(e))` count: the inner call is a call too), with only
event records (and the wrappers around them) in between: any other call might queue more GPU work, which would
still gain from not waiting, so the answer is then false. Outside a loop the answer is false.
"""

from __future__ import annotations

import tree_sitter as ts

from ..parse.treesitter import parent_of

LOOPS = {"for_statement", "for_range_loop", "while_statement", "do_statement"}
# calls that queue no GPU work worth overlapping with: recording or reading a timing event
PASSIVE = {"cudaEventRecord", "cuEventRecord", "cudaEventRecordWithFlags", "cuEventRecordWithFlags",
           "cudaEventElapsedTime", "cuEventElapsedTime", "cudaEventQuery", "cuEventQuery"}


def _callee_name(call: ts.Node) -> str:
    fn = call.child_by_field_name("function")
    if fn is None or fn.text is None:
        return ""
    text = fn.text.decode("utf-8", "replace")
    return text.rsplit("::", 1)[-1].strip()


def host_waits_after(node: ts.Node, names: set[str]) -> bool:
    """True when a call to one of `names` follows `node` in the body of its innermost enclosing loop."""
    loop = parent_of(node)
    while loop is not None and loop.type not in LOOPS:
        if loop.type in ("function_definition", "lambda_expression"):
            return False
        loop = parent_of(loop)
    if loop is None:
        return False
    body = loop.child_by_field_name("body")
    if body is None:
        return False
    # the other branch of an `if` around the match does not run after it in the same iteration
    skip: set[tuple[int, int]] = set()
    a = parent_of(node)
    while a is not None and a != loop:
        if a.type == "if_statement":
            alt = a.child_by_field_name("alternative")
            if alt is not None and not (alt.start_byte <= node.start_byte < alt.end_byte):
                skip.add((alt.start_byte, alt.end_byte))
        a = parent_of(a)
    calls: list[ts.Node] = []
    stack = [body]
    while stack:
        n = stack.pop()
        if n.end_byte <= node.end_byte or (n.start_byte, n.end_byte) in skip:
            continue
        if n.type == "call_expression" and n.start_byte >= node.end_byte:
            calls.append(n)
        stack.extend(n.children)
    for call in sorted(calls, key=lambda c: c.start_byte):
        name = _callee_name(call)
        if name in names:
            return True
        if name in PASSIVE or _wraps_a_call(call):
            continue  # queues no work (an event record), or an error-checking wrapper: look at what it wraps
        return False  # anything else may queue GPU work first, which would still gain from not waiting
    return False


def _wraps_a_call(call: ts.Node) -> bool:
    args = call.child_by_field_name("arguments")
    if args is None:
        return False
    stack = list(args.children)
    while stack:
        n = stack.pop()
        if n.type == "call_expression":
            return True
        stack.extend(n.children)
    return False
