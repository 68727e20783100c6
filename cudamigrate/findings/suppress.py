"""Inline suppressions: `// cudamigrate: ignore[CM101, CM102]`, `ignore-file[...]`.

Scope: a comment that shares its line with code (after it, or a block comment before it) covers that line
only; a comment alone on its line covers the next line. A finding spanning several lines is covered by a
suppression on any of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PATTERN = re.compile(rb"cudamigrate:\s*(ignore-file|ignore)(?:\[([A-Za-z0-9_,\s]*)\])?")


@dataclass
class Suppression:
    line: int
    start: int
    end: int
    file_level: bool
    ids: frozenset[str] | None  # None = every rule
    used: set[str] = field(default_factory=set)
    trailing: bool = False  # code shares the comment's line: covers that line only

    def covers(self, rule_id: str) -> bool:
        return self.ids is None or rule_id in self.ids

    def covers_line(self, line: int, end_line: int | None = None) -> bool:
        if self.file_level or self.line == line or (not self.trailing and self.line == line - 1):
            return True
        return end_line is not None and line <= self.line <= end_line


@dataclass
class Suppressions:
    items: list[Suppression]

    @classmethod
    def scan(cls, data: bytes) -> "Suppressions":
        if b"cudamigrate:" not in data:
            return cls([])
        out = []
        for m in PATTERN.finditer(data):
            # must sit in a comment: `//` or `/*` earlier on the same line
            ls = data.rfind(b"\n", 0, m.start()) + 1
            prefix = data[ls : m.start()]
            if b"//" not in prefix and b"/*" not in prefix:
                continue
            ids = None
            if m.group(2) is not None:
                ids = frozenset(x.strip() for x in m.group(2).decode("utf-8", "replace").split(",") if x.strip())
            line = data.count(b"\n", 0, m.start()) + 1
            opener = max(prefix.rfind(b"//"), prefix.rfind(b"/*"))
            after = b""
            if prefix[opener : opener + 2] == b"/*":  # code after the block comment, on the same line
                le = data.find(b"\n", m.end())
                le = len(data) if le == -1 else le
                close = data.find(b"*/", m.end(), le)
                after = data[close + 2 : le] if close != -1 else b""
            trailing = bool(prefix[:opener].strip() or after.strip())
            out.append(Suppression(line, m.start(), m.end(), m.group(1) == b"ignore-file", ids, trailing=trailing))
        return cls(out)

    def suppressed(self, rule_id: str, line: int, end_line: int | None = None) -> bool:
        for s in self.items:
            if not s.covers(rule_id):
                continue
            if s.covers_line(line, end_line):
                s.used.add(rule_id)
                return True
        return False


def unknown_ids(sups: Suppressions, known: set[str]) -> list[tuple[int, str]]:
    """(line, id) of ids in `ignore[...]` comments that name no rule (a typo suppresses nothing)."""
    return [(s.line, i) for s in sups.items for i in sorted(s.ids or ()) if i not in known]
