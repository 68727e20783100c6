"""Human output, ruff style: `path:line:col: ID [*] message`, then the source line and, indented like clang's
notes, the finding's related locations (`path:line:col: note: message`).

Control characters from file names and source lines (ESC/OSC sequences, bidi overrides) are shown escaped
(`\\x1b`), so printing a report can never drive the terminal."""

from __future__ import annotations

from collections import Counter

from ..core.textsafe import printable
from .model import Run

MARK = {"safe": "[*]", "unsafe": "[~]", "display-only": "[?]", "manual": "[ ]"}


def render(run: Run, show_source: bool = True, sort: str = "plan") -> str:
    lines = []
    from .plan import fmt_roi, plan_order

    if sort == "plan":  # build breaks first (safe, unsafe, manual), then deprecated, performance, hygiene; by ROI
        findings = plan_order(run.findings)
    elif sort == "roi":
        findings = run.by_roi()
    else:
        findings = sorted(run.findings, key=lambda f: (f.path, f.line, f.column))
    for f in findings:
        roi = f.cost.roi if f.cost else 0
        lines.append(printable(f"{f.path}:{f.line}:{f.column}: {f.rule_id} {MARK[f.applicability]} {f.message} (roi {fmt_roi(roi)})"))
        if show_source and f.snippet.strip():
            lines.append(f"    | {printable(f.snippet.rstrip())}")
        for r in f.related:  # clang's notes: where else the finding shows (a texture reference's uses)
            lines.append(printable(f"    {r.note()}"))
    s = run.summary()
    if run.findings:
        app = s["by_applicability"]
        lines.append(
            f"Found {s['findings']} finding(s) in {len({f.path for f in run.findings})} file(s) "
            f"({s['build_breaking']} build-breaking"
            + (f", {s['runtime_breaking']} failing at run time" if s["runtime_breaking"] else "")
            + f" for CUDA {run.target_str}). "
            f"{app['safe']} fixable with `cudamigrate fix`, {app['unsafe']} more with `--unsafe-fixes`, "
            + (f"{app['display-only']} with a suggested edit that `fix` does not apply ([?]), " if app["display-only"] else "")
            + f"{app['manual']} manual."
        )
        lines.append(ROI_LINE)
    else:
        errs = f" ({len(run.errors)} error(s) reported on stderr)" if run.errors else ""
        lines.append(f"No findings in {run.files_scanned} file(s){errs}.")
    return "\n".join(lines) + "\n"


ROI_LINE = ("(roi N) = impact / effort: the value of fixing a finding per unit of work; build breaks come first "
            "whatever their ROI (`cudamigrate explain ID` shows how a rule scores).")


def statistics(run: Run) -> str:
    counts = Counter(f.rule_id for f in run.findings)
    fixable = Counter(f.rule_id for f in run.findings if f.applicability in ("safe", "unsafe"))
    names = {r.id: r.name for r in run.rules}
    out = []
    for rid, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        mark = "[*]" if fixable[rid] else "[ ]"
        out.append(f"{n:6d}  {rid:6s} {mark} {names.get(rid, '')}")
    return "\n".join(out) + ("\n" if out else "")
