"""CM801: `cudamigrate: ignore[...]` comments that suppress nothing.

Suppressions are only known to be used after a file's findings are filtered,
so this is a post-pass (`post_pass`, in the engine's `POST_PASSES`) rather than a
matcher; the rule file names the builtin `unused-suppression`, whose matcher
finds nothing. It takes the engine's selected rules and options, not the engine.

Only rule ids the current run checks are judged: a suppression for a rule that
is not selected (or not in the `--from`/`--target-cuda` window) may well be
needed by another run, so it is left alone. A bare `ignore` (every rule) is
judged only when no `--select` narrows the run.

The fix (safe: comments only) removes the whole comment when it holds nothing
but the directive, the whole line when that comment is alone on it, just the
directive inside a longer comment, or just the unused ids when some are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...findings import cost as costmod
from ...findings.model import Edit, Finding, Fix, assign_fingerprints, finding_for, sort_key
from .builtin_registry import BuiltinFn, builtin_schema
from ...parse.treesitter import parse
from ...core.registry import Registry
from ...rules.schema import Rule
from ...findings.suppress import PATTERN, Suppression, Suppressions
from ...rules.templates import render

if TYPE_CHECKING:
    from ...read.source import SourceFile

BUILTIN = "unused-suppression"


BUILTINS: Registry[BuiltinFn] = Registry("builtin matcher")  # joined with the others in match/kinds.py


@BUILTINS.register(BUILTIN, builtin_schema(), doc=(
    "CM801: finds nothing itself; the engine's post-pass reports `cudamigrate: ignore[...]` comments that "
    "suppress nothing once a file's findings are known (`cudamigrate/match/migrations/unused_suppressions.py`)."))
def _matcher(rule, ctx, options) -> list:
    return []  # the work happens in post_pass, once suppressions are known


def unused_rule(rules: list[Rule]) -> Rule | None:
    """The selected rule that names this builtin (CM801), if any."""
    return next((r for r in rules if r.kind == "builtin" and r.spec.get("name") == BUILTIN), None)


def _blank(b: bytes) -> bool:
    return not b.strip()


def _line_bounds(data: bytes, pos: int) -> tuple[int, int, int]:
    """Start of pos's line, end of its text (before CR/LF), and start of the next line."""
    ls = data.rfind(b"\n", 0, pos) + 1
    nl = data.find(b"\n", pos)
    nxt = len(data) if nl == -1 else nl + 1
    le = len(data) if nl == -1 else nl
    if le > ls and data[le - 1 : le] == b"\r":
        le -= 1
    return ls, le, nxt


def _drop(data: bytes, start: int, end: int) -> Edit:
    """Delete [start, end) of a line, taking the whitespace before it (or else after it) along."""
    ls, le, _ = _line_bounds(data, start)
    s = start
    while s > ls and data[s - 1 : s] in (b" ", b"\t"):
        s -= 1
    e = end
    if s == start:
        while e < le and data[e : e + 1] in (b" ", b"\t"):
            e += 1
    return Edit(s, e, "")


def _whole_comment(data: bytes, e: Edit) -> Edit:
    """The removal of a whole comment, as a space when code touches it on both sides: C reads a comment as a
    space, so `return/* cudamigrate: ignore[X] */x;` must become `return x;`, not `returnx;`."""
    before = data[e.start - 1 : e.start] if e.start > 0 else b""
    after = data[e.end : e.end + 1]
    if before and after and not before.isspace() and not after.isspace():
        return Edit(e.start, e.end, " ")
    return e


def comment_span(tree, start: int, end: int) -> tuple[int, int] | None:
    """The parsed comment that holds bytes [start, end), if any: comments do not nest, so in
    `/* old /* cudamigrate: ignore[X] */` the comment begins at the first `/*`, not the last."""
    node = tree.root_node.descendant_for_byte_range(start, end)
    while node is not None and node.type != "comment":
        node = node.parent
    return (node.start_byte, node.end_byte) if node is not None else None


def removal(data: bytes, s: Suppression, comment: tuple[int, int] | None = None) -> Edit | None:
    """The edit that removes directive `s`: the whole comment (or line) when the comment holds only it.
    `comment` is the parsed comment around it; without it the comment is found by its delimiters on the line."""
    ls, le, nxt = _line_bounds(data, s.start)
    line_c = data.rfind(b"//", ls, s.start)
    block_c = data.rfind(b"/*", ls, s.start)
    if comment is not None:
        c0, c1 = comment
        text = data[c0:c1]
        if text.startswith(b"/*") and text.endswith(b"*/") and c1 - c0 >= 4:
            body = text[2:-2]
        elif text.startswith(b"//"):
            body = text[2:]
        else:
            return None
        if data.find(b"\n", c0, c1) != -1:  # a comment over several lines: only the directive, or the whole comment
            if body.strip() != data[s.start : s.end].strip():
                return _drop(data, s.start, s.end)
            return _whole_comment(data, Edit(c0, c1, ""))
    elif block_c != -1 and (line_c == -1 or (block_c < line_c and data.find(b"*/", block_c, line_c) == -1)):
        close = data.find(b"*/", s.end)
        if close == -1:
            return None
        c0, c1 = block_c, close + 2
        body = data[block_c + 2 : close]
    elif line_c != -1:
        c0, c1 = line_c, le
        body = data[line_c + 2 : le]
    else:
        return None
    directive = data[s.start : s.end]
    if body.strip() != directive.strip():
        return _drop(data, s.start, s.end)  # other words share the comment: keep them
    _, end_le, end_nxt = _line_bounds(data, c1)
    if _blank(data[ls:c0]) and _blank(data[c1:end_le]):
        return Edit(ls, end_nxt, "")
    return _whole_comment(data, _drop(data, c0, c1))


def _ids_span(data: bytes, s: Suppression) -> tuple[int, int, list[str]] | None:
    m = PATTERN.match(data, s.start)
    if m is None or m.group(2) is None:
        return None
    raw = m.group(2).decode("utf-8", "replace")
    return m.start(2), m.end(2), [x.strip() for x in raw.split(",") if x.strip()]


def unused_findings(rules: list[Rule], select: list[str] | None, target: tuple[int, int], src: "SourceFile",
                    display: str, sups: Suppressions) -> list[Finding]:
    """CM801's findings in one file; `rules`: the run's selected rules; `select`: `--select` (None when unset)."""
    rule = unused_rule(rules)
    if rule is None:
        return []
    active = {r.id for r in rules} - {rule.id}
    data = src.data
    out: list[Finding] = []
    tree = None

    def removal_of(s: Suppression) -> Edit | None:
        nonlocal tree
        if tree is None:
            tree = parse(src.parse_bytes)
        return removal(data, s, comment_span(tree, s.start, s.end))

    for s in sups.items:
        if s.ids is not None and rule.id in s.ids:
            continue  # suppresses CM801 itself: judged after the fact, so never flagged
        where = "in this file" if s.file_level else ("on this line" if s.trailing else "on the next line")
        directive = data[s.start : s.end].decode("utf-8", "replace")
        if s.ids is None:
            if s.used or select is not None:
                continue
            unused, edit = [], removal_of(s)
            reason = f"no finding of any rule {where}"
        else:
            unused = sorted(i for i in s.ids if i in active and i not in s.used)
            if not unused:
                continue
            span = _ids_span(data, s)
            keep = [i for i in (span[2] if span else []) if i not in unused]
            if not keep:
                edit = removal_of(s)
            elif span is not None:
                edit = Edit(span[0], span[1], ", ".join(keep))
            else:
                edit = None
            reason = f"no {', '.join(unused)} finding {where}"
        tctx: dict[str, Any] = {"directive": directive, "unused": unused, "reason": reason, "file_level": s.file_level}
        try:
            message = " ".join(render(rule.message, tctx).split())
        except Exception:  # a rule file with a broken template must not stop the scan
            message = f"Unused suppression `{directive}`: {reason}."
        fix = Fix(rule.fix_applicability if rule.fix_applicability != "manual" else "safe",
                  render(str((rule.fix or {}).get("title", "Remove the unused suppression")), tctx), [edit]) if edit else None
        c = costmod.score(declared_impact=rule.cost.get("impact"), deprecated_in=None, removed_in=None,
                          target=target, applicability="manual" if fix is None else fix.applicability,
                          multipliers=[], effort_minutes=rule.cost.get("effort_minutes"))
        out.append(finding_for(rule, display, src, s.start, s.end, message, fix, c, {"unused_ids": unused}))
    assign_fingerprints(out, data)
    return out


def post_pass(rules: list[Rule], select: list[str] | None, target: tuple[int, int], src: "SourceFile",
              display: str, res: Any) -> None:
    """Add CM801 findings to `res` (a FileResult) when the rule is selected and the file has suppressions."""
    if res.suppressions is None or not res.suppressions.items:
        return
    found = unused_findings(rules, select, target, src, display, res.suppressions)
    keep = []
    for f in found:  # only a suppression naming CM801 hides CM801 (a bare `ignore` must not hide itself)
        by = [s for s in res.suppressions.items
              if s.ids is not None and f.rule_id in s.ids and s.covers_line(f.line)]
        if by:
            by[0].used.add(f.rule_id)
        else:
            keep.append(f)
    found = keep
    if found:
        res.findings = sorted(res.findings + found, key=sort_key)
