"""SARIF 2.1.0 for code-scanning services (GitHub, Azure DevOps, IDE viewers).

Regions carry 1-based lines and columns (columns count Unicode code points,
declared by `run.columnKind`; `endColumn` is exclusive) together with the byte
offset and length of the same range. Fixes are the finding's byte edits turned
into `deletedRegion`/`insertedContent` replacements; their line/column form is
computed from the scanned bytes (`Run.sources`), so both forms agree.
`partialFingerprints["cudamigrate/v1"]` is the finding's fingerprint, which
does not change when lines shift above the finding. A finding's related locations
(the uses of a texture reference reported at its declaration) are its
`relatedLocations`, each with an `id` and a message.
"""

from __future__ import annotations

import bisect
import json
import os
import re
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from .. import __version__
from ..findings.model import Finding, Related
from ..read.source import displayable
from ..rules.schema import Rule
from .model import Run

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
URL_RE = re.compile(r"(https?://[^\s)\]>'\"]+|(?<![\w/.])docs\.nvidia\.com/[^\s)\]>'\"]+)")
BOM = b"\xef\xbb\xbf"


class Positions:
    """Byte offset -> (1-based line, 1-based code-point column), as SourceFile.position does."""

    def __init__(self, data: bytes):
        self.data = data
        self.starts = [0]
        i = data.find(b"\n")
        while i != -1:
            self.starts.append(i + 1)
            i = data.find(b"\n", i + 1)

    def __call__(self, offset: int) -> tuple[int, int]:
        idx = bisect.bisect_right(self.starts, offset) - 1
        ls = self.starts[idx]
        col = len(self.data[ls:offset].decode("utf-8", errors="replace")) + 1
        if idx == 0 and self.data.startswith(BOM):
            col = max(1, col - 1)
        return idx + 1, col


def artifact_location(path: str) -> dict:
    p = path.replace("\\", "/")
    if os.path.isabs(path):
        return {"uri": Path(path).as_uri()}
    p = str(PurePosixPath(p))
    return {"uri": quote(p, safe="/-._~"), "uriBaseId": "%SRCROOT%"}


def help_uri(rule: Rule) -> str | None:
    for ref in rule.references:
        m = URL_RE.search(str(ref))
        if m:
            url = m.group(1).rstrip(".,;:")
            return url if url.startswith("http") else "https://" + url
    return None


def rule_descriptor(rule: Rule) -> dict:
    docs = rule.docs or {}
    what, why, safety = (str(docs.get(k, "") or "").strip() for k in ("what", "why", "fix_safety"))
    example = str(docs.get("example", "") or "").rstrip()
    full = " ".join(x for x in (what, why) if x) or rule.summary
    text = [rule.summary]
    md = [f"**{rule.id} {rule.name}**: {rule.summary}"]
    for title, body in (("What", what), ("Why", why), ("Fix safety", safety)):
        if body:
            text.append(f"{title}: {body}")
            md.append(f"**{title}.** {body}")
    if example:
        text.append("Example:\n" + example)
        md.append("```cuda\n" + example + "\n```")
    if rule.references:
        text.append("References:\n" + "\n".join(f"- {r}" for r in rule.references))
        md.append("References:\n\n" + "\n".join(f"- {r}" for r in rule.references))
    sup = f"Suppress one finding with `// cudamigrate: ignore[{rule.id}]` on its line or the line above."
    text.append(sup)
    md.append(sup)
    d: dict = {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": full},
        "help": {"text": "\n\n".join(text), "markdown": "\n\n".join(md)},
        "defaultConfiguration": {"level": LEVELS.get(rule.severity, "warning")},
        "properties": {
            "family": rule.family,
            "tags": ["cuda", rule.family] + [t for t in rule.tags if t not in ("cuda", rule.family)],
            "deprecated_in": rule.deprecated_in,
            "removed_in": rule.removed_in,
            "fix_applicability": rule.fix_applicability,
            "status": rule.status,
        },
    }
    if rule.library:
        d["properties"]["library"] = rule.library
    uri = help_uri(rule)
    if uri:
        d["helpUri"] = uri
    return d


def _fallback_rule(f: Finding) -> dict:
    return {
        "id": f.rule_id, "name": f.rule_name, "shortDescription": {"text": f.rule_name},
        "properties": {"family": f.family, "deprecated_in": f.deprecated_in, "removed_in": f.removed_in},
    }


def region(pos: Positions | None, start: int, end: int) -> dict:
    r: dict = {}
    if pos is not None and end <= len(pos.data):
        sl, sc = pos(start)
        el, ec = pos(end)
        r.update(startLine=sl, startColumn=sc, endLine=el, endColumn=ec)
    r.update(byteOffset=start, byteLength=end - start)
    return r


def related_location(ident: int, x: Related) -> dict:
    """A related location (SARIF 2.1.0 §3.27.22): `id` unique within its result, the region and its message."""
    reg: dict = {"startLine": x.line, "startColumn": x.column}
    if x.end_line is not None:
        reg["endLine"] = x.end_line
    if x.end_column is not None and x.end_line is not None:
        reg["endColumn"] = x.end_column
    return {"id": ident, "physicalLocation": {"artifactLocation": artifact_location(x.path), "region": reg},
            "message": {"text": x.message}}


def result(f: Finding, rule_index: dict[str, int], pos: Positions | None) -> dict:
    reg: dict = {"startLine": f.line, "startColumn": f.column, "endLine": f.end_line, "endColumn": f.end_column,
           "byteOffset": f.start_byte, "byteLength": f.end_byte - f.start_byte}
    phys: dict = {"artifactLocation": artifact_location(f.path), "region": reg}
    if pos is not None and f.end_byte <= len(pos.data) and f.end_byte - f.start_byte <= 4096:  # bounded output
        reg["snippet"] = {"text": pos.data[f.start_byte : f.end_byte].decode("utf-8", "replace")}
    if f.snippet:
        phys["contextRegion"] = {"startLine": f.line, "endLine": f.line, "snippet": {"text": f.snippet}}
    loc = {"physicalLocation": phys}
    r: dict = {
        "ruleId": f.rule_id,
        "ruleIndex": rule_index[f.rule_id],
        "level": LEVELS.get(f.severity, "warning"),
        "message": {"text": f.message},
        "locations": [loc],
        "partialFingerprints": {"cudamigrate/v1": f.fingerprint} if f.fingerprint else {},
        "properties": {"applicability": f.applicability},
    }
    if f.related:
        r["relatedLocations"] = [related_location(i, x) for i, x in enumerate(f.related)]
    if f.cost:
        r["properties"].update(roi=f.cost.roi, impact=f.cost.impact, effort_minutes=f.cost.effort_minutes)
        r["rank"] = max(0.0, min(100.0, round(10 * f.cost.roi, 1)))  # SARIF: 0..100
    if f.fix and f.fix.edits and f.applicability != "manual":
        r["fixes"] = [{
            "description": {"text": f"{f.fix.title} ({f.fix.applicability} fix)" if f.fix.applicability != "display-only"
                            else f"{f.fix.title} (display-only suggestion: it changes behaviour, `cudamigrate fix` "
                                 f"never applies it; review before applying)"},
            "artifactChanges": [{
                "artifactLocation": artifact_location(f.path),
                "replacements": [
                    {"deletedRegion": region(pos, e.start, e.end), "insertedContent": {"text": displayable(e.text)}}
                    for e in sorted(f.fix.edits, key=lambda e: (e.start, e.end))
                ],
            }],
        }]
    return r


def document(run: Run) -> dict:
    rules = {r.id: rule_descriptor(r) for r in run.rules}
    for f in run.findings:
        if f.rule_id not in rules:
            rules[f.rule_id] = _fallback_rule(f)
    ordered = [rules[k] for k in sorted(rules)]
    index = {d["id"]: i for i, d in enumerate(ordered)}
    positions: dict[str, Positions | None] = {}
    results = []
    for f in run.by_roi():
        if f.path not in positions:
            data = run.sources.get(f.path)
            positions[f.path] = Positions(data) if data else None
        results.append(result(f, index, positions[f.path]))
    notes = [{"level": "error", "message": {"text": e}} for e in run.errors]
    props: dict[str, Any] = {"files_scanned": run.files_scanned, "target_cuda": run.target_str,
                             "target_source": run.target_source}
    if run.shard is not None:  # only a shard's report says which part of which run it is
        props["shard"] = run.shard
    root = Path(run.source_root) if run.source_root else Path.cwd()
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "cudamigrate",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": ordered,
                "properties": {"target_cuda": run.target_str},
            }},
            "invocations": [{"executionSuccessful": not run.errors, "toolExecutionNotifications": notes}],
            "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri() + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": results,
            "properties": props,
        }],
    }


def render(run: Run) -> str:
    return json.dumps(document(run), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
