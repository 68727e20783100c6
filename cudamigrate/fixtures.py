"""Fixture cases: the executable specification of every rule.

A case is a directory under `fixtures/` holding
  before.<ext>   code the rules must flag; each expected finding is annotated
                 `// expect: CM101` on its line, or on a comment-only line just above it
  after.<ext>    the exact text `cudamigrate fix` must produce from before.<ext>
  ok.<ext>       lookalikes that must produce no finding
  fixture.yaml   optional settings (see `Case`)
Used by the test suite and by `cudamigrate selftest`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

EXPECT = re.compile(r"(?://|/\*)\s*expect:\s*([A-Z0-9, ]+)")
SOURCE_EXTS = (".cu", ".cuh", ".cpp", ".cc", ".c", ".h", ".hpp")  # .c: compiled as C by nvcc


@dataclass
class Case:
    dir: Path
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.dir.relative_to(self.dir.parents[1])) if len(self.dir.parents) > 1 else self.dir.name

    def file(self, stem: str) -> Path | None:
        for ext in SOURCE_EXTS:
            p = self.dir / f"{stem}{ext}"
            if p.is_file():
                return p
        return None

    @property
    def before(self) -> Path | None:
        return self.file("before")

    @property
    def after(self) -> Path | None:
        return self.file("after")

    @property
    def ok(self) -> Path | None:
        return self.file("ok")

    @property
    def rules(self) -> list[str] | None:
        return self.settings.get("rules")

    @property
    def unsafe(self) -> bool:
        return bool(self.settings.get("unsafe", True))

    @property
    def display_only(self) -> frozenset[str]:
        """Rule ids whose display-only suggestions the golden `after` applies (`fix --apply-display-only`)."""
        return frozenset(self.settings.get("apply_display_only", []) or [])

    @property
    def target(self) -> str:
        return str(self.settings.get("target", "13.0"))

    @property
    def options(self) -> dict[str, Any]:
        return self.settings.get("options", {}) or {}

    @property
    def compile(self) -> dict[str, Any]:
        return self.settings.get("compile", {}) or {}

    @property
    def gpu(self) -> dict[str, Any]:
        return self.settings.get("gpu", {}) or {}


def load_cases(root: Path) -> list[Case]:
    cases = []
    for d in sorted(p for p in root.rglob("*") if p.is_dir()):
        has = any((d / f"{stem}{ext}").is_file() for stem in ("before", "ok") for ext in SOURCE_EXTS)
        if not has:
            continue
        settings = {}
        y = d / "fixture.yaml"
        if y.is_file():
            settings = yaml.safe_load(y.read_text(encoding="utf-8")) or {}
        cases.append(Case(d, settings))
    return cases


def expected_findings(text: str) -> Counter:
    """Multiset of (line, rule id) declared by `expect:` annotations."""
    out: Counter = Counter()
    lines = text.splitlines()
    pending: list[str] = []
    for i, line in enumerate(lines, start=1):
        m = EXPECT.search(line)
        stripped = line.strip()
        comment_only = stripped.startswith("//") or stripped.startswith("/*")
        if m:
            ids = [x.strip() for x in m.group(1).split(",") if x.strip()]
            if comment_only:
                pending += ids
                continue
            for rid in ids:
                out[(i, rid)] += 1
        if pending and stripped and not comment_only:
            for rid in pending:
                out[(i, rid)] += 1
            pending = []
    return out
