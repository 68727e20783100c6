"""The data that flows between matching, scoring, reporting and fixing."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..rules.schema import Rule
    from ..read.source import SourceFile

# ruff's levels: `safe` keeps behaviour and `fix` applies it; `unsafe` may change behaviour and needs
# `--unsafe-fixes`; `display-only` is a suggested edit that reports show but `fix` never applies (it would change
# behaviour in a way no flag can vouch for, e.g. stream ordering in code that uses several streams), except for
# rules named by id together with `fix --apply-display-only`; `manual` has no edit.
APPLICABILITIES = ("safe", "unsafe", "display-only", "manual")
FINGERPRINT_SPAN = 512  # bytes of a long match's start and end that its fingerprint hashes
SCOPE = "@"  # `symbol@scope` in a consistency group (Finding.group)
ANY_SCOPE = "*"  # `symbol@*`: every scope of the symbol
PROGRAM_SCOPE = "program:"  # `symbol@program:<first file>`: a symbol CUDA declares, as one program of the run uses it


@dataclass(frozen=True)
class Edit:
    """Replace bytes [start, end) of the original file with `text`."""

    start: int
    end: int
    text: str

    def overlaps(self, other: "Edit") -> bool:
        if self.start == self.end and other.start == other.end:
            return self.start == other.start and self.text != other.text
        return self.start < other.end and other.start < self.end


@dataclass
class Fix:
    applicability: str  # safe | unsafe | display-only | manual
    title: str
    edits: list[Edit] = field(default_factory=list)


@dataclass(frozen=True)
class Related:
    """A location that explains a finding without being one: a use of what the finding is about (the reads and
    binds of a texture reference whose finding is at its declaration). What SARIF calls a related location,
    clang a note, LSP related information. Lines and columns as in `Finding` (1-based, columns in code points;
    the end is optional); `path` as reports display it (the finding's own path for a location in its file).
    Not part of a finding's identity: fingerprints, baselines and suppressions never look at it."""

    path: str
    line: int
    column: int
    end_line: int | None = None
    end_column: int | None = None
    message: str = ""

    def note(self) -> str:
        """The location as clang prints a note: `path:line:col: note: message` (text and JUnit reports)."""
        return f"{self.path}:{self.line}:{self.column}: note: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "column": self.column, "end_line": self.end_line,
                "end_column": self.end_column, "message": self.message}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Related":
        return cls(str(d["path"]), int(d["line"]), int(d["column"]),
                   None if d.get("end_line") is None else int(d["end_line"]),
                   None if d.get("end_column") is None else int(d["end_column"]), str(d.get("message") or ""))


@dataclass
class Cost:
    impact: str  # build-break | runtime-break | removal | deprecated | performance | hygiene
    impact_score: float
    effort: str  # safe | unsafe | manual
    effort_score: float
    effort_minutes: float
    roi: float
    factors: list[str] = field(default_factory=list)
    measured: str | None = None  # calibration note, when a measurement backs the score


@dataclass
class Finding:
    rule_id: str
    rule_name: str
    family: str
    severity: str
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    start_byte: int
    end_byte: int
    message: str
    snippet: str
    fix: Fix | None = None
    cost: Cost | None = None
    deprecated_in: str | None = None
    removed_in: str | None = None
    context: dict[str, Any] = field(default_factory=dict)
    fingerprint: str = ""
    # the consistency group, `family:symbol` (rules with `fix.consistency`): findings that must all be fixed, in
    # every file of the run, or none of them (a type rename, a texture reference); see fix/consistency.py.
    # A symbol may carry a scope, `symbol@scope` (SCOPE): the texture reference `tex` declared in one file is
    # another symbol than a `tex` declared in another program of the run; `symbol@*` (ANY_SCOPE): a use whose
    # declaration is not known, tied to every scope of the symbol; `symbol@program:<path>` (PROGRAM_SCOPE): a
    # symbol of CUDA's (a type) as the program of the run that holds the file uses it
    group: str = ""
    # locations that explain the finding (the uses of a texture reference reported at its declaration); shown
    # as notes, SARIF relatedLocations and LSP relatedInformation; not part of the identity (`compute_fingerprint`)
    related: tuple[Related, ...] = ()

    @property
    def applicability(self) -> str:
        if self.fix is None or not self.fix.edits:
            return "manual"
        return self.fix.applicability

    def compute_fingerprint(self, source: bytes) -> str:
        """Stable across line shifts: rule, file, the matched text and its ordinal among equal texts."""
        if self.end_byte - self.start_byte > 2 * FINGERPRINT_SPAN:
            # a huge match (an outer call around deeply nested ones): its two ends, so that fingerprinting
            # every finding of a nested expression stays linear
            head = source[self.start_byte : self.start_byte + FINGERPRINT_SPAN]
            tail = source[self.end_byte - FINGERPRINT_SPAN : self.end_byte]
            norm = b" ".join(head.split()) + b"\0...\0" + b" ".join(tail.split())
        else:
            norm = b" ".join(source[self.start_byte : self.end_byte].split())
        h = hashlib.sha256()
        h.update(self.rule_id.encode())
        h.update(b"\0")
        h.update(self.path.encode())
        h.update(b"\0")
        h.update(norm)
        return h.hexdigest()[:32]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["applicability"] = self.applicability
        return d


def finding_for(rule: "Rule", path: str, src: "SourceFile", start: int, end: int, message: str, fix: Fix | None,
                cost: Cost | None, context: dict[str, Any]) -> Finding:
    """The one way a finding is built (matches in engine.py, CM801's post-pass): the rule's identity and
    versions, and the position and snippet of bytes [start, end) of `src`, so every finding reads the same."""
    line, col = src.position(start)
    eline, ecol = src.position(end)
    return Finding(
        rule_id=rule.id, rule_name=rule.name, family=rule.family, severity=rule.severity, path=path,
        line=line, column=col, end_line=eline, end_column=ecol, start_byte=start, end_byte=end,
        message=message, snippet=src.snippet(start, end), fix=fix, cost=cost, deprecated_in=rule.deprecated_in,
        removed_in=rule.removed_in, context=context,
    )


def assign_fingerprints(findings: list[Finding], source: bytes) -> None:
    """Set each finding's fingerprint; equal ones in a file get an ordinal suffix (`-1`, `-2`) in order."""
    counts: dict[str, int] = {}
    for f in findings:
        fp = f.compute_fingerprint(source)
        n = counts.get(fp, 0)
        counts[fp] = n + 1
        f.fingerprint = fp if n == 0 else f"{fp}-{n}"


def sort_key(f: Finding) -> tuple:
    return (f.path, f.start_byte, f.rule_id, f.end_byte)
