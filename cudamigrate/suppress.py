"""Inline suppressions: `// cudamigrate: ignore[CM101, CM102]` (this or the next line), `ignore-file[...]`."""

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

    def covers(self, rule_id: str) -> bool:
        return self.ids is None or rule_id in self.ids


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
                ids = frozenset(x.strip() for x in m.group(2).decode().split(",") if x.strip())
            line = data.count(b"\n", 0, m.start()) + 1
            out.append(Suppression(line, m.start(), m.end(), m.group(1) == b"ignore-file", ids))
        return cls(out)

    def suppressed(self, rule_id: str, line: int, end_line: int | None = None) -> bool:
        for s in self.items:
            if not s.covers(rule_id):
                continue
            if s.file_level or s.line == line or s.line == line - 1 or (end_line is not None and line <= s.line <= end_line):
                s.used.add(rule_id)
                return True
        return False
