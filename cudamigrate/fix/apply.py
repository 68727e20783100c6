"""The fix applier, kept apart from the checks the way clang-tidy keeps its fix applier apart.

Edits are byte ranges of the original bytes. A finding's edits are applied
all together or not at all; when two findings' edits overlap, the earlier one
(by position, then rule id) wins and the other is retried on the next pass,
after the file has been re-scanned. Passes repeat until nothing applies
(at most MAX_PASSES). A result with more syntax errors than the input is
refused, so a bad rule can never leave a file broken.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from ..engine import Engine, FileResult
from ..findings import Edit, Finding
from ..parse.treesitter import count_errors, parse
from ..source import BOM

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

    @property
    def changed(self) -> bool:
        return self.fixed != self.original

    def diff(self) -> str:
        a = self.original.decode("utf-8", "replace").splitlines(keepends=True)
        b = self.fixed.decode("utf-8", "replace").splitlines(keepends=True)
        name = self.path.lstrip("/")
        return "".join(difflib.unified_diff(a, b, f"a/{name}", f"b/{name}"))


def fixable(f: Finding, unsafe: bool, display_only: frozenset[str] = frozenset()) -> bool:
    """Safe fixes always; unsafe ones with `--unsafe-fixes`; display-only suggestions only for the rule ids in
    `display_only` (rules the user named by id with `--apply-display-only`), never through `--unsafe-fixes`."""
    if f.fix is None or not f.fix.edits:
        return False
    app = f.fix.applicability
    if app == "display-only":
        return f.rule_id in display_only
    return app == "safe" or (unsafe and app == "unsafe")


def apply_edits(data: bytes, groups: list[list[Edit]]) -> tuple[bytes, list[int]]:
    """Apply non-conflicting groups; return new bytes and the indices of groups applied."""
    accepted: list[Edit] = []
    applied: list[int] = []
    order = sorted(range(len(groups)), key=lambda i: (min(e.start for e in groups[i]), i))
    for gi in order:
        group = groups[gi]
        if any(e.overlaps(a) for e in group for a in accepted if e != a):
            continue
        fresh = [e for e in group if e not in accepted]
        accepted.extend(fresh)
        applied.append(gi)
    accepted.sort(key=lambda e: (e.start, e.end))
    out = []
    pos = 0
    for e in accepted:
        out.append(data[pos : e.start])
        out.append(e.text.encode("utf-8", "surrogateescape"))  # bytes that were not UTF-8 come back as they were
        pos = e.end
    out.append(data[pos:])
    return b"".join(out), applied


def _normalize_newlines(text: str, newline: bytes) -> str:
    if newline == b"\r\n":
        return text.replace("\r\n", "\n").replace("\n", "\r\n")
    return text


def fix_bytes(engine: Engine, path: Path, data: bytes, display: str, unsafe: bool = False,
              display_only: frozenset[str] = frozenset()) -> FixResult:
    res = FixResult(display, data, data)
    current = data
    scan: FileResult = engine.scan_bytes(path, current, display)
    res.internal, res.tracebacks = scan.internal, list(scan.tracebacks)
    if scan.errors and not scan.findings:
        res.errors = scan.errors
        return res
    newline = b"\r\n" if b"\r\n" in data[:65536] else b"\n"
    for _ in range(MAX_PASSES):
        todo = [f for f in scan.findings if fixable(f, unsafe, display_only)]
        if not todo:
            break
        groups = [[Edit(e.start, e.end, _normalize_newlines(e.text, newline)) for e in f.fix.edits] for f in todo]
        new, applied = apply_edits(current, groups)
        if not applied or new == current:
            break
        res.applied.extend(todo[i] for i in applied)
        res.passes += 1
        current = new
        scan = engine.scan_bytes(path, current, display)
    res.remaining = scan.findings
    res.errors = scan.errors
    if scan is not None and scan.internal:
        res.internal, res.tracebacks = scan.internal, list(scan.tracebacks)
    if current != data:
        strip = lambda b: b"   " + b[3:] if b.startswith(BOM) else b  # noqa: E731
        before = count_errors(parse(strip(data)))
        after = count_errors(parse(strip(current)))
        if after > before:
            res.errors.append(f"{display}: fix refused: the result would have {after - before} more syntax error(s); file left unchanged")
            res.fixed = data
            res.applied = []
            res.remaining = engine.scan_bytes(path, data, display).findings
            return res
    res.fixed = current
    return res
