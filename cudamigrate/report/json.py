"""Machine output: one JSON document with findings, costs, fixes and a summary."""

from __future__ import annotations

import json

from .. import __version__
from ..read.source import displayable
from .model import Run


def document(run: Run) -> dict:
    findings = []
    for f in run.by_roi():
        d = {
            "rule": f.rule_id,
            "name": f.rule_name,
            "family": f.family,
            "severity": f.severity,
            "path": f.path,
            "line": f.line,
            "column": f.column,
            "end_line": f.end_line,
            "end_column": f.end_column,
            "message": f.message,
            "snippet": f.snippet,
            "deprecated_in": f.deprecated_in,
            "removed_in": f.removed_in,
            "applicability": f.applicability,
            "cost": {
                "impact": f.cost.impact,
                "impact_score": f.cost.impact_score,
                "effort": f.cost.effort,
                "effort_score": f.cost.effort_score,
                "effort_minutes": f.cost.effort_minutes,
                "roi": f.cost.roi,
                "factors": f.cost.factors,
                "measured": f.cost.measured,
            } if f.cost else None,
            "fix": {
                "applicability": f.fix.applicability,
                "title": f.fix.title,
                "edits": [{"start": e.start, "end": e.end, "text": displayable(e.text)} for e in f.fix.edits],
            } if f.fix else None,
            "context": f.context,
            "fingerprint": f.fingerprint,
            "related": [r.to_dict() for r in f.related],
        }
        findings.append(d)
    doc = {
        "tool": "cudamigrate",
        "version": __version__,
        "target_cuda": run.target_str,
        "target_source": run.target_source,
        "summary": run.summary(),
        "findings": findings,
        "errors": run.errors,
    }
    if run.shard is not None:  # only a shard's report says which part of which run it is
        doc["shard"] = run.shard
    return doc


def render(run: Run) -> str:
    return json.dumps(document(run), indent=2, allow_nan=False) + "\n"
