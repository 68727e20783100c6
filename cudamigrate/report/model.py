"""What a report is built from: the findings of a run plus its context."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..findings.model import Finding
from ..rules.schema import Rule


@dataclass
class Run:
    findings: list[Finding]
    errors: list[str]
    files_scanned: int
    rules: list[Rule]
    target: tuple[int, int]
    sources: dict[str, bytes] = field(default_factory=dict)  # for reports that show code
    unused_suppressions: list[dict[str, Any]] = field(default_factory=list)
    keep_compat: tuple[int, int] | None = None  # the project's declared oldest toolkit (decides CM410's fixes)
    # `scan --shard I/N`: the shard's identity (index, count, the run's file-set and configuration digests,
    # root), recorded in JSON and SARIF so `merge` can refuse duplicates, gaps and mixtures (workflow/merge.py)
    shard: dict[str, Any] | None = None
    source_root: str | None = None  # the directory report paths are relative to (default: the current one)
    # why the target is what it is ("from nvcc 13.0 on PATH", "from --target-cuda"; cudamigrate/toolcheck/target.py):
    # JSON, SARIF and HTML always say it; the text summary only when no flag or configuration named the target
    target_source: str = ""
    target_default: bool = False

    @property
    def minimum_str(self) -> str | None:
        return f"{self.keep_compat[0]}.{self.keep_compat[1]}" if self.keep_compat else None

    @property
    def target_str(self) -> str:
        return f"{self.target[0]}.{self.target[1]}"

    def by_roi(self) -> list[Finding]:
        return sorted(self.findings, key=lambda f: (-(f.cost.roi if f.cost else 0), f.path, f.line, f.column, f.rule_id,
                                                  f.end_line, f.end_column, f.message))

    def summary(self) -> dict[str, Any]:
        fs = self.findings
        app = Counter(f.applicability for f in fs)
        return {
            "files_scanned": self.files_scanned,
            "findings": len(fs),
            "errors": len(self.errors),
            "build_breaking": sum(1 for f in fs if f.cost and f.cost.impact == "build-break"),
            "runtime_breaking": sum(1 for f in fs if f.cost and f.cost.impact == "runtime-break"),
            "by_applicability": {k: app.get(k, 0) for k in ("safe", "unsafe", "display-only", "manual")},
            "by_rule": dict(sorted(Counter(f.rule_id for f in fs).items())),
            "by_family": dict(sorted(Counter(f.family for f in fs).items())),
            "by_severity": dict(sorted(Counter(f.severity for f in fs).items())),
            "total_roi": round(sum(f.cost.roi for f in fs if f.cost), 3),
            "effort_minutes": round(sum(f.cost.effort_minutes for f in fs if f.cost), 1),
        }
