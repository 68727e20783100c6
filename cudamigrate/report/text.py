"""Human output, ruff style: `path:line:col: ID [*] message`, then the source line and, indented like clang's
notes, the finding's related locations (`path:line:col: note: message`).

Control characters from file names and source lines (ESC/OSC sequences, bidi overrides) are shown escaped
(`\\x1b`), so printing a report can never drive the terminal."""

from __future__ import annotations

from collections import Counter

from ..core.textsafe import printable
from .model import Run

MARK = {"safe": "[*]", "unsafe": "[~]", "display-only": "[?]", "manual": "[ ]"}
# ANSI SGR codes of `--color` (ruff's palette: bold location, red code, the fix marker by how safe it is)
STYLE = {"path": "1", "rule": "1;31", "safe": "32", "unsafe": "33", "display-only": "36", "manual": "2"}


def _paint(text: str, style: str, color: bool) -> str:
    """`text` (already printable) in an SGR style when `color` is on; as it is otherwise."""
    return f"\x1b[{STYLE[style]}m{text}\x1b[0m" if color else text


def _ordered(run: Run, sort: str) -> list:
    from .plan import plan_order

    if sort == "plan":  # build breaks first (safe, unsafe, manual), then deprecated, performance, hygiene; by ROI
        return plan_order(run.findings)
    if sort == "roi":
        return run.by_roi()
    return sorted(run.findings, key=lambda f: (f.path, f.line, f.column))


def finding_head(f, color: bool) -> str:
    """`path:line:col: ID [*]` of a finding, escaped, painted when `color` is on."""
    return (_paint(printable(f"{f.path}:{f.line}:{f.column}:"), "path", color) + " "
            + _paint(printable(f.rule_id), "rule", color) + " " + _paint(MARK[f.applicability], f.applicability, color))


def render(run: Run, show_source: bool = True, sort: str = "plan", color: bool = False) -> str:
    lines = []
    from .plan import fmt_roi

    for f in _ordered(run, sort):
        roi = f.cost.roi if f.cost else 0
        lines.append(finding_head(f, color) + " " + printable(f"{f.message} (roi {fmt_roi(roi)})"))
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
            + f" for CUDA {run.target_str}{_why(run)}). "
            f"{app['safe']} fixable with `cudamigrate fix`, {app['unsafe']} more with `--unsafe-fixes`, "
            + (f"{app['display-only']} with a suggested edit that `fix` does not apply ([?]), " if app["display-only"] else "")
            + f"{app['manual']} manual."
        )
        lines.append(ROI_LINE)
    else:
        errs = f" ({len(run.errors)} error(s) reported on stderr)" if run.errors else ""
        target = f" for CUDA {run.target_str}{_why(run)}" if run.target_default else ""
        lines.append(f"No findings in {run.files_scanned} file(s){target}{errs}.")
    return "\n".join(lines) + "\n"


def _why(run: Run) -> str:
    """", from nvcc 13.0 on PATH" when the target was not named by the user (who knows why then), else ""."""
    return f", {printable(run.target_source)}" if run.target_default and run.target_source else ""


ROI_LINE = ("(roi N) = impact / effort: the value of fixing a finding per unit of work; build breaks come first "
            "whatever their ROI (`cudamigrate explain ID` shows how a rule scores).")


def concise(run: Run, sort: str = "plan", color: bool = False) -> str:
    """`--format concise` (ruff's name): one line per finding, `path:line:col: ID [*] message`, no source line,
    notes or ROI, then one summary line; for editors' error lists, grep and quick reading."""
    lines = [finding_head(f, color) + " " + printable(f.message) for f in _ordered(run, sort)]
    files = len({f.path for f in run.findings})
    lines.append(f"Found {len(run.findings)} finding(s) in {files} file(s)." if run.findings
                 else f"No findings in {run.files_scanned} file(s).")
    return "\n".join(lines) + "\n"


# the statistics' marker of a rule: the most automatic fix among its findings, in the findings list's vocabulary
_BEST_FIRST = ("safe", "unsafe", "display-only", "manual")


def statistics(run: Run) -> str:
    counts = Counter(f.rule_id for f in run.findings)
    kinds: dict[str, set[str]] = {}
    for f in run.findings:
        kinds.setdefault(f.rule_id, set()).add(f.applicability)
    names = {r.id: r.name for r in run.rules}
    out = []
    for rid, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        mark = MARK[next(k for k in _BEST_FIRST if k in kinds[rid])]
        out.append(f"{n:6d}  {rid:6s} {mark} {names.get(rid, '')}")
    return "\n".join(out) + ("\n" if out else "")
