"""Effort a lead believes: manual findings of one rule in one construct are one job.

An error-string switch with 22 `case CUDA_ERROR_...:` labels of a removed enumerator is one edit session,
not 22 half-hour jobs; so are a function or a macro body that uses a removed API five times. The engine
marks each finding that needs hand work (manual, or a suggested edit applied by hand) with the innermost
construct that holds it - a `switch`, a function definition or a macro definition - as
`context["job"]` (e.g. `switch at line 120`). The plan and the HTML report then count a rule's findings
in one construct of one file as one job whose effort is the largest of theirs (`job_minutes`); findings
outside any such construct, and automatic fixes (whose effort is per edit and small), are counted one by one.
`cudamigrate explain` states the rule (explain.py).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Callable, Iterable

if TYPE_CHECKING:
    from .model import Finding

HAND_WORK = ("manual", "display-only")  # the applicabilities whose findings are grouped into jobs
# tree-sitter node types of the constructs that make one job, and how the plan names them
CONSTRUCTS = {"switch_statement": "switch", "function_definition": "function", "preproc_function_def": "macro",
              "preproc_def": "macro"}


def _name(node: Any) -> str:
    """The function's or macro's name (`function cuGetErrorName`), empty when it has none to show."""
    if node.type in ("preproc_function_def", "preproc_def"):
        n = node.child_by_field_name("name")
        return n.text.decode("utf-8", "replace") if n is not None and n.text else ""
    d = node.child_by_field_name("declarator")
    while d is not None and d.type not in ("identifier", "field_identifier", "qualified_identifier", "destructor_name",
                                          "operator_name"):
        d = d.child_by_field_name("declarator")
    return d.text.decode("utf-8", "replace") if d is not None and d.text else ""


def _label(node: Any, line_of) -> tuple[str, int]:
    kind = CONSTRUCTS[node.type]
    name = _name(node) if kind != "switch" else ""
    return f"{kind} {name} at line {line_of(node.start_byte)}".replace("  ", " "), node.start_byte


def innermost(spans: list[tuple[int, int, Any]], ranges: list[tuple[int, int]]) -> list[Any]:
    """For each byte range [start, end) of `ranges`, the innermost of the nested `spans` ((start, end, node) in
    document order, ancestors first) that holds it, or None: one sweep with a stack of the open spans, so that
    grouping costs O(constructs + findings log findings) whatever the nesting (an upward walk per finding was
    quadratic, cubic with tree-sitter's own `parent`, in statements nested thousands deep)."""
    order = sorted(range(len(ranges)), key=lambda i: ranges[i][0])
    out: list[Any] = [None] * len(ranges)
    stack: list[tuple[int, int, Any]] = []
    k = 0
    for i in order:
        start, end = ranges[i]
        end = max(start, end)
        while k < len(spans) and spans[k][0] <= start:
            while stack and stack[-1][1] <= spans[k][0]:
                stack.pop()
            stack.append(spans[k])
            k += 1
        while stack and stack[-1][1] <= start and stack[-1][0] < start:
            stack.pop()  # closed before this range: later ranges start no earlier
        for s in reversed(stack):  # the stack is a chain of nested spans, innermost last
            if s[0] <= start and end <= s[1]:
                out[i] = s[2]
                break
    return out


# At most this many hand-work findings in a file are placed by descending the tree along each one's bytes
# (`innermost_below`); more are placed by one walk of the whole tree (`innermost`), whose cost does not grow
# with the findings. The language server re-scans at every keystroke a file that has a few findings: the
# whole-tree walk was a tenth of its warm re-scan of a 1,700-line file.
PATH_LOOKUPS = 16


def innermost_below(root: Any, start: int, end: int) -> Any:
    """The innermost node of the CONSTRUCTS types under `root` (itself included) that holds the non-empty byte
    range [start, end), or None: what `innermost` gives for that range, found on the one path down the tree to
    it (children do not overlap, so the nodes that hold a range are one chain from the root; the deepest of a
    type wins, as it comes last in `innermost`'s order)."""
    found = None
    cur = root.walk()
    while True:
        node = cur.node
        if node.start_byte <= start and end <= node.end_byte:
            if node.type in CONSTRUCTS:
                found = node
        else:
            return found
        if not cur.goto_first_child():
            return found
        while cur.node.end_byte <= start:  # the child that holds `start`, if one does
            if not cur.goto_next_sibling():
                return found


def mark_jobs(findings: list[Finding], constructs: Callable[[], list[Any]], line_of, root: Any = None) -> None:
    """Set `context["job"]` (its label) and `context["job_at"]` (its start byte) of each hand-work finding
    to its construct (see module docstring). `constructs()`: the file's nodes of the CONSTRUCTS types (the
    engine's `walk.typed_nodes`), asked only when a finding needs them. They are put in the document order,
    ancestors first, that `innermost` needs here, whatever order they come in (a query's captures of several
    patterns come in another; on nodes already in order the sort is one linear pass). With the tree's `root`,
    up to PATH_LOOKUPS findings of non-empty ranges are placed from it instead, without `constructs()`."""
    todo = [f for f in findings if f.applicability in HAND_WORK and "job" not in f.context]
    if not todo:
        return
    if root is not None and len(todo) <= PATH_LOOKUPS and all(f.start_byte < f.end_byte for f in todo):
        nodes = [innermost_below(root, f.start_byte, f.end_byte) for f in todo]
    else:
        spans = sorted(((n.start_byte, n.end_byte, n) for n in constructs()), key=lambda s: (s[0], -s[1]))
        nodes = innermost(spans, [(f.start_byte, f.end_byte) for f in todo])
    for f, node in zip(todo, nodes, strict=True):
        if node is not None:
            f.context["job"], f.context["job_at"] = _label(node, line_of)


def job_key(f: Finding) -> tuple[str, ...]:
    """Findings with one key are one job: a rule's hand-work findings in one construct of one file; any
    other finding is a job of its own."""
    job = f.context.get("job") if f.applicability in HAND_WORK else None
    if job is None:
        return ("finding", f.path, str(f.line), str(f.column), f.rule_id, f.message)
    return ("job", f.path, f.rule_id, str(f.context.get("job_at", "")), str(job))


def jobs(findings: Iterable[Finding]) -> dict[tuple[str, ...], list[Finding]]:
    """The findings grouped into jobs (`job_key`), in first-seen order."""
    out: dict[tuple[str, ...], list[Finding]] = defaultdict(list)
    for f in findings:
        out[job_key(f)].append(f)
    return out


def job_minutes(findings: Iterable[Finding]) -> float:
    """The effort of the findings counted by job: a job costs the largest effort among its findings."""
    return round(sum(max((f.cost.effort_minutes for f in fs if f.cost), default=0.0) for fs in jobs(findings).values()), 1)
