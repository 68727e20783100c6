"""A self-contained HTML report: summary with inline SVG charts, and a findings table.

Everything the page shows that comes from scanned code (paths, messages, source
lines, fixes) travels in one `<script type="application/json">` block, escaped so
that no byte sequence can end the block (`<`, `>`, `&`, U+2028, U+2029 become
`\\uXXXX`), and the page's script puts it in the DOM with `textContent` only.
A Content-Security-Policy allows no network access and only the page's own
script (by hash), so the file works from file:// and stays inert even if some
escaping were wrong. The table pages (100 rows at a time) and builds a
finding's details only when opened, which keeps 50,000 findings usable. A finding's
related locations (the uses of a texture reference reported at its declaration)
are listed in its details with their lines.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import json
import posixpath
from collections import Counter, defaultdict
from functools import lru_cache
from typing import Any

from .. import __version__
from ..findings.model import Finding
from .model import Run

CONTEXT = 3  # source lines shown around a finding
MAX_SPAN = 12  # lines of a long finding shown before eliding
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def _lines_of(data: bytes) -> tuple[list[int], list[str]]:
    starts = [0]
    i = data.find(b"\n")
    while i != -1:
        starts.append(i + 1)
        i = data.find(b"\n", i + 1)
    text_lines = [ln.decode("utf-8", "replace").rstrip("\r") for ln in data.split(b"\n")]
    return starts, text_lines


def fix_lines(data: bytes, f: Finding) -> tuple[int, int, list[str]] | None:
    """The finding's fix as (first_line, old_line_count, new_lines): lines first_line..+old_line_count-1 of
    the file become new_lines. None without a fix (or with edits that overlap or run past the end)."""
    if f.fix is None or not f.fix.edits or not data:
        return None
    edits = sorted(f.fix.edits, key=lambda e: (e.start, e.end))
    lo, hi = edits[0].start, max(e.end for e in edits)
    if hi > len(data):
        return None
    ls = data.rfind(b"\n", 0, lo) + 1
    le = data.find(b"\n", hi)
    le = len(data) if le == -1 else le
    parts, pos = [], ls
    for e in edits:
        if e.start < pos:
            return None
        parts.append(data[pos : e.start])
        parts.append(e.text.encode("utf-8", "surrogateescape"))
        pos = e.end
    parts.append(data[pos:le])
    new = b"".join(parts)
    first = data.count(b"\n", 0, ls) + 1
    old_count = data.count(b"\n", ls, le) + 1
    return first, old_count, [x.rstrip("\r") for x in new.decode("utf-8", "replace").split("\n")]


def fix_diff(data: bytes, f: Finding) -> list[Any] | None:
    """The fix as [first_line, [[op, text], ...]] with op in ' ', '-', '+' (what the page shows)."""
    fl = fix_lines(data, f)
    if fl is None:
        return None
    first, n, b = fl
    a = _lines_of(data)[1][first - 1 : first - 1 + n]
    ops: list[list[str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            ops += [[" ", x] for x in a[i1:i2]]
        else:
            ops += [["-", x] for x in a[i1:i2]]
            ops += [["+", x] for x in b[j1:j2]]
    return [first, ops]


def _segments(lines: list[str], wanted: set[int]) -> list[list[Any]]:
    """Sparse source: [[first_line, [text, ...]], ...] covering the wanted 1-based line numbers."""
    out: list[list[Any]] = []
    for n in sorted(wanted):
        if n < 1 or n > len(lines):
            continue
        if out and out[-1][0] + len(out[-1][1]) == n:
            out[-1][1].append(lines[n - 1])
        else:
            out.append([n, [lines[n - 1]]])
    return out


def _directory(path: str) -> str:
    d = posixpath.dirname(path.replace("\\", "/"))
    return d or "."


def _bars(counts: dict[str, int], labels: dict[str, str] | None = None, limit: int = 15) -> list[dict[str, Any]]:
    """Bars of a chart, largest first. `key` is the table filter value a click on the bar applies (None for the
    "N more" bar, which stands for several); `label` what the bar says (full text in its tooltip)."""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    top: list[tuple[str | None, str, int]] = [(k, (labels or {}).get(k, k), v) for k, v in items[:limit]]
    if len(items) > limit:
        top.append((None, f"{len(items) - limit} more", sum(v for _, v in items[limit:])))
    peak = max((v for _, _, v in top), default=1) or 1
    return [{"key": k, "label": lbl, "value": v, "width": round(300 * v / peak, 1)} for k, lbl, v in top]


def roi_why(f: Finding, job_size: int = 1) -> str:
    """The finding's ROI in words: what the impact and effort are and where the numbers come from; with
    `job_size` > 1, that it is one job with the other findings of its rule in its construct (cudamigrate/findings/jobs.py)."""
    c = f.cost
    if c is None:
        return ""
    from .plan import fmt_roi, impact_of

    ctx = f"; {', '.join(c.factors)}" if c.factors else ""
    measured = f"; {c.measured}" if c.measured else ""
    job = (f" One job with {job_size - 1} other {f.rule_id} finding(s) in the {f.context.get('job')}: the plan counts "
           f"their effort once." if job_size > 1 else "")
    return (f"ROI {fmt_roi(c.roi)} = impact {c.impact_score:g} ({impact_of(f)}{ctx}{measured}) / effort "
            f"{c.effort_score:g} ({c.effort}, about {c.effort_minutes:g} min). Higher ROI: more value per unit of work."
            + job)


RELATED_TEXT = 200  # characters of a related location's line shown


def _line_text(sources: dict[str, bytes], parsed: dict[str, tuple[list[int], list[str]]], path: str,
               line: int) -> str | None:
    """The text of a related location's line (bounded), when the run read its file."""
    if path not in parsed:
        data = sources.get(path, b"")
        parsed[path] = _lines_of(data) if data else ([0], [])
    lines = parsed[path][1]
    return lines[line - 1][:RELATED_TEXT] if 0 < line <= len(lines) else None


def build_data(run: Run) -> dict[str, Any]:
    from .plan import impact_of, plan_order

    findings = plan_order(run.findings)  # the plan's order: build breaks first (safe, unsafe, manual), then by impact
    rules_by_id = {r.id: r for r in run.rules}
    rule_ids = sorted({f.rule_id for f in findings})
    rule_index = {r: i for i, r in enumerate(rule_ids)}
    files = sorted({f.path for f in findings})
    file_index = {p: i for i, p in enumerate(files)}
    messages: dict[str, int] = {}
    rules_out = []
    for rid in rule_ids:
        r = rules_by_id.get(rid)
        sample = next(f for f in findings if f.rule_id == rid)
        docs = (r.docs if r else {}) or {}
        rules_out.append({
            "id": rid,
            "name": r.name if r else sample.rule_name,
            "family": r.family if r else sample.family,
            "summary": r.summary if r else "",
            "what": str(docs.get("what", "") or ""),
            "why": str(docs.get("why", "") or ""),
            "fix_safety": str(docs.get("fix_safety", "") or ""),
            "example": str(docs.get("example", "") or ""),
            "references": [str(x) for x in (r.references if r else [])],
            "deprecated_in": r.deprecated_in if r else sample.deprecated_in,
            "removed_in": r.removed_in if r else sample.removed_in,
        })
    from ..findings.jobs import job_key, jobs

    job_sizes = {k: len(fs) for k, fs in jobs(findings).items()}
    wanted: dict[str, set[int]] = defaultdict(set)
    parsed: dict[str, tuple[list[int], list[str]]] = {}
    rows = []
    for f in findings:
        data = run.sources.get(f.path, b"")
        if f.path not in parsed:
            parsed[f.path] = _lines_of(data) if data else ([0], [])
        last = min(f.end_line, f.line + MAX_SPAN)
        wanted[f.path].update(range(f.line - CONTEXT, last + CONTEXT + 1))
        mi = messages.setdefault(f.message, len(messages))
        ti = messages.setdefault(f.fix.title, len(messages)) if f.fix else -1
        fl = fix_lines(data, f)
        if fl is not None:  # the page takes the old lines from the source excerpt
            wanted[f.path].update(range(fl[0], fl[0] + fl[1]))
        c = f.cost
        wi = messages.setdefault(roi_why(f, job_sizes[job_key(f)]), len(messages))
        rows.append([
            rule_index[f.rule_id], file_index[f.path], f.line, f.column, f.end_line, f.end_column,
            f.severity, f.applicability, c.roi if c else 0, c.effort_minutes if c else 0,
            impact_of(f) if c else "", mi, list(fl) if fl else None, ti, f.fingerprint, wi,
            [[r.path, r.line, r.column, messages.setdefault(r.message, len(messages)),
              _line_text(run.sources, parsed, r.path, r.line)] for r in f.related],
        ])
    src = {str(file_index[p]): _segments(parsed[p][1], wanted[p]) for p in files if parsed[p][1]}
    return {
        "version": __version__,
        "target": run.target_str,
        "fields": ["rule", "file", "line", "col", "endLine", "endCol", "severity", "applicability", "roi",
                   "effortMinutes", "impact", "message", "fix", "fixTitle", "fingerprint", "roiWhy", "related"],
        "rules": rules_out,
        "files": files,
        "messages": list(messages),  # string table for message and fixTitle
        "findings": rows,
        "src": src,
    }


def summary_view(run: Run) -> dict[str, Any]:
    from .plan import impact_of

    s = run.summary()
    fs = run.findings
    n = len(fs) or 1
    app = s["by_applicability"]
    dirs: dict[str, dict[str, Any]] = {}
    for f in fs:
        d = dirs.setdefault(_directory(f.path), {"findings": 0, "build_breaking": 0, "fixable": 0, "roi": 0.0,
                                                 "minutes": 0.0, "files": set()})
        d["findings"] += 1
        d["files"].add(f.path)
        if f.cost:
            d["roi"] += f.cost.roi
            d["minutes"] += f.cost.effort_minutes
            if f.cost.impact == "build-break":
                d["build_breaking"] += 1
        if f.applicability in ("safe", "unsafe"):
            d["fixable"] += 1
    dir_rows = sorted(({"dir": k, **v, "files": len(v["files"]), "roi": round(v["roi"], 2),
                        "hours": round(v["minutes"] / 60, 1)} for k, v in dirs.items()),
                      key=lambda r: (-r["roi"], r["dir"]))
    rule_names = {r.id: r.name for r in run.rules}
    rule_labels = {k: f"{k} {rule_names.get(k, '')}".strip() for k in s["by_rule"]}
    colors = {"safe": "#1a7f37", "unsafe": "#b35900", "display-only": "#6f42c1", "manual": "#8a8f98"}
    share = [{"key": k, "value": app[k], "pct": round(100 * app[k] / n, 1), "color": colors[k]}
             for k in ("safe", "unsafe", "display-only", "manual")]
    x = 0.0
    for part in share:
        part["x"] = round(x, 2)
        part["w"] = round(600 * part["value"] / n, 2) if fs else 0
        x += part["w"]
    return {
        "s": s,
        "files_with_findings": len({f.path for f in fs}),
        "hours": round(s["effort_minutes"] / 60, 1),
        "share": share,
        "family_bars": _bars(s["by_family"]),
        "rule_bars": _bars(s["by_rule"], rule_labels),
        "severity_bars": _bars(s["by_severity"]),
        "impact_bars": _bars(dict(Counter(impact_of(f) for f in fs if f.cost))),
        "fixable_pct": round(100 * (app["safe"] + app["unsafe"]) / n, 1),
        "dirs": dir_rows[:25],
        "dirs_more": max(0, len(dir_rows) - 25),
        "dirs_total": len(dir_rows),
        "unused_suppressions": len(run.unused_suppressions),
        "safe_pct": round(100 * app["safe"] / n, 1),
        "review_pct": round(100 * app["unsafe"] / n, 1),
        **_plan_view(run),
    }


def _plan_view(run: Run) -> dict[str, Any]:
    """The migration plan the page leads with (the same as `cudamigrate plan`), and the ROI in words."""
    from .plan import ROI_WORDS, build_plan, counts_by_impact, effort_str

    from .plan import minimum_line

    plan = build_plan(run.findings, run.errors, run.files_scanned, run.target_str, {r.id: r.name for r in run.rules},
                      [], minimum=run.minimum_str)
    return {"plan": plan, "minimum_line": minimum_line(plan.minimum), "effort_str": effort_str, "roi_words": ROI_WORDS,
            "impact_counts": counts_by_impact(run.findings),
            "must_effort": effort_str(plan.must_minutes), "optional_effort": effort_str(plan.optional_minutes)}


def json_for_script(obj: Any) -> str:
    """JSON that can sit inside <script type="application/json"> whatever the strings hold."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


@lru_cache(maxsize=1)
def _env():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("cudamigrate.report", "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    )


@lru_cache(maxsize=1)
def _script() -> str:
    return _env().loader.get_source(_env(), "report.js")[0]


def csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
            "connect-src 'none'; form-action 'none'; base-uri 'none'")


def render(run: Run) -> str:
    script = _script()
    return _env().get_template("report.html.j2").render(
        run=run, v=summary_view(run), data_json=json_for_script(build_data(run)), script=script, csp=csp(script),
        version=__version__,
    )


__all__ = ["render", "build_data", "fix_diff", "json_for_script"]
