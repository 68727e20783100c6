"""The fix applier, kept apart from the checks the way clang-tidy keeps its fix applier apart.

Edits are byte ranges of the original bytes. A finding's edits are applied
all together or not at all; when two findings' edits overlap, the earlier one
(by position, then rule id) wins and the other is retried on the next pass,
after the file has been re-scanned. Passes repeat until nothing applies
(at most MAX_PASSES). A result with more syntax errors than the input is
refused, so a bad rule can never leave a file broken.
"""

from __future__ import annotations

import bisect
import difflib
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..scan.engine import Engine, FileResult
from ..findings.model import Edit, Finding
from ..parse.treesitter import count_errors, parse
from . import guard
from .consistency import Withheld, broken, fixable

MAX_PASSES = 10


@dataclass
class FixResult:
    path: str
    original: bytes
    fixed: bytes
    applied: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    passes: int = 0
    internal: int = 0  # internal errors among `errors` (rule or matcher bugs): exit code 2
    tracebacks: list[str] = field(default_factory=list)
    withheld: Withheld = field(default_factory=Withheld)  # consistency groups dropped here (fix/consistency.py)

    @property
    def changed(self) -> bool:
        return self.fixed != self.original

    def diff(self) -> str:
        a = self.original.decode("utf-8", "replace").splitlines(keepends=True)
        b = self.fixed.decode("utf-8", "replace").splitlines(keepends=True)
        name = self.path.lstrip("/")
        return "".join(difflib.unified_diff(a, b, f"a/{name}", f"b/{name}"))


def apply_edits(data: bytes, groups: list[list[Edit]]) -> tuple[bytes, list[int]]:
    """Apply non-conflicting groups; return new bytes and the indices of groups applied.

    Groups are taken in order of their first edit; a group is accepted when none of its edits overlaps an edit
    already accepted (an identical edit is shared, not a conflict). Accepted edits never overlap, so sorted by
    (start, end) their ends do not decrease either: the edits that may overlap a new one are the few just before
    its end in that order, found by bisection (a sweep, not a test against every accepted edit).
    """
    keys: list[tuple[int, int]] = []  # accepted edits' (start, end), sorted
    accepted: list[Edit] = []  # in the same order
    seen: set[Edit] = set()
    applied: list[int] = []
    order = sorted((i for i in range(len(groups)) if groups[i]), key=lambda i: (min(e.start for e in groups[i]), i))

    def conflicts(e: Edit) -> bool:
        j = bisect.bisect_right(keys, (e.end, sys.maxsize)) - 1
        while j >= 0 and accepted[j].end >= e.start:
            a = accepted[j]
            if a != e and e.overlaps(a):
                return True
            j -= 1
        return False

    for gi in order:
        group = groups[gi]
        if _self_overlapping(group) or any(conflicts(e) for e in group):
            continue
        for e in group:
            if e in seen:
                continue
            seen.add(e)
            k = (e.start, e.end)
            at = bisect.bisect_right(keys, k)
            keys.insert(at, k)
            accepted.insert(at, e)
        applied.append(gi)
    out = []
    pos = 0
    for e in accepted:
        out.append(data[pos : e.start])
        out.append(e.text.encode("utf-8", "surrogateescape"))  # bytes that were not UTF-8 come back as they were
        pos = e.end
    out.append(data[pos:])
    return b"".join(out), applied


def _self_overlapping(group: list[Edit]) -> bool:
    """A finding whose own edits overlap cannot be applied in any order (a rule bug): never apply it."""
    es = sorted(set(group), key=lambda e: (e.start, e.end))
    return any(a.overlaps(b) or a.end > b.start for a, b in zip(es, es[1:], strict=False))


def _normalize_newlines(text: str, newline: bytes) -> str:
    if newline == b"\r\n":
        return text.replace("\r\n", "\n").replace("\n", "\r\n")
    return text


def _edits(f: Finding) -> list[Edit]:
    """The edits of a fixable finding (`fixable` only passes findings with a fix)."""
    assert f.fix is not None
    return f.fix.edits


def fix_bytes(engine: Engine, path: Path, data: bytes, display: str, unsafe: bool = False,
              display_only: frozenset[str] = frozenset(), groups: frozenset[str] = frozenset(),
              exclude: frozenset[tuple[str, str]] = frozenset()) -> FixResult:
    """Fix one file's bytes in passes; the result converges (fixing it again changes nothing).

    A rule whose fix still applies after MAX_PASSES passes feeds on its own output: its fixes are
    withdrawn (with an error naming it) and the file is fixed again without them. The edits of the
    consistency groups in `groups`, and of every group that this file cannot fix completely, are not
    applied (all or nothing per symbol: fix/consistency.py; the run's other files are settled by the caller).
    `exclude`: findings (rule id, fingerprint) never applied (compile verification's rollback, cudamigrate/fixproof/rollback.py)."""
    withheld = Withheld()
    while True:
        res = _fix_rules(engine, path, data, display, unsafe, display_only, groups, exclude)
        more = broken([res]) - groups
        if not more:
            break
        withheld.add(more, [res])
        groups |= more
    withheld.merge(res.withheld)
    res.withheld = withheld
    return res


def _fix_rules(engine: Engine, path: Path, data: bytes, display: str, unsafe: bool, display_only: frozenset[str],
               groups: frozenset[str], exclude: frozenset[tuple[str, str]] = frozenset()) -> FixResult:
    blocked: set[str] = set()
    notes: list[str] = []
    for _ in range(3):
        res, again = _fix_passes(engine, path, data, display, unsafe, blocked, display_only, groups, exclude)
        if not again:
            break
        notes += res.errors[-1:]
        blocked |= again
    else:
        res, _ = _fix_passes(engine, path, data, display, unsafe, _ALL, display_only, groups, exclude)
    res.errors = notes + res.errors
    return res


class _Everything(set):
    def __contains__(self, item: object) -> bool:  # blocks every rule
        return True


_ALL = _Everything()


def _fix_passes(engine: Engine, path: Path, data: bytes, display: str, unsafe: bool,
                blocked: set[str], display_only: frozenset[str] = frozenset(),
                held: frozenset[str] = frozenset(),
                exclude: frozenset[tuple[str, str]] = frozenset()) -> tuple[FixResult, set[str]]:
    res = FixResult(display, data, data)
    current = data
    scan: FileResult = engine.scan_bytes(path, current, display)
    res.internal, res.tracebacks = scan.internal, list(scan.tracebacks)
    if scan.errors and not scan.findings:
        res.errors = scan.errors
        return res, set()
    newline = b"\r\n" if b"\r\n" in data[:65536] else b"\n"
    withdrawn: set[tuple[str, str]] = set(exclude)  # (rule, fingerprint) whose edits made a syntax error
    errors_now = guard.errors_of(current)
    notes: list[str] = []
    exhausted = False
    for n in range(MAX_PASSES + 1):
        todo = [f for f in scan.findings if fixable(f, unsafe, display_only) and f.rule_id not in blocked
                and (f.rule_id, f.fingerprint) not in withdrawn and f.group not in held]
        if not todo:
            break
        if n == MAX_PASSES:
            exhausted = True
            break
        groups = [[Edit(e.start, e.end, _normalize_newlines(e.text, newline)) for e in _edits(f)] for f in todo]
        while True:
            new, applied = apply_edits(current, groups)
            if not applied:
                break
            # identifier-for-identifier renames change no token boundary: the syntax is checked with them undone
            # (tree-sitter's recovery around an unexpanded macro differs with a name's length, not the code's shape)
            shaped = {k: [e for e in groups[k] if not guard.is_rename(current, e)] for k in applied}
            renamed = any(len(shaped[k]) != len(groups[k]) for k in applied)
            check = apply_edits(current, [shaped[k] for k in applied])[0] if renamed else new
            errors_new = guard.errors_of(check)
            shift = guard.Shift.of([e for k in applied for e in shaped[k]])
            made = guard.new_errors(errors_now, errors_new, shift)
            if not made:
                if renamed:
                    errors_new = guard.errors_of(new)
                break
            for i in guard.blame(made, guard.output_spans([(e, k) for k in applied for e in shaped[k]])):
                f = todo[i]
                withdrawn.add((f.rule_id, f.fingerprint))
                notes.append(f"{display}:{f.line}: {f.rule_id}: fix refused: it would make a syntax error; left unchanged")
                groups[i] = []
            if not any(groups):
                applied = []
                break
        if not applied or new == current:
            break
        res.applied.extend(todo[i] for i in applied)
        res.passes += 1
        current = new
        errors_now = errors_new
        scan = engine.scan_bytes(path, current, display)
    res.remaining = scan.findings
    for f in res.remaining:
        if (f.rule_id, f.fingerprint) in withdrawn and not f.context.get("fix_blocked"):
            # why it stays, for the consistency note: not "needs --unsafe-fixes" when that was given
            f.context["fix_blocked"] = "its fix was refused: it would make a syntax error"
    res.errors = scan.errors + sorted(set(notes))
    if scan is not None and scan.internal:
        res.internal, res.tracebacks = scan.internal, list(scan.tracebacks)
    if exhausted:
        again = {f.rule_id for f in scan.findings if fixable(f, unsafe, display_only) and f.rule_id not in blocked
                 and f.group not in held}
        res.errors.append(f"{display}: {', '.join(sorted(again))}: fix does not converge (it still applies after "
                          f"{MAX_PASSES} passes); not applied")
        return res, again
    if current != data:
        before = count_errors(parse(guard.parse_buffer(data)))
        after = count_errors(parse(guard.parse_buffer(current)))
        if after > before:
            res.errors.append(f"{display}: fix refused: the result would have {after - before} more syntax error(s); file left unchanged")
            res.fixed = data
            res.applied = []
            res.remaining = engine.scan_bytes(path, data, display).findings
            return res, set()
    res.fixed = current
    return res, set()
