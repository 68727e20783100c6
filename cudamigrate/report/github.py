"""GitHub Actions workflow commands: one `::warning file=…,line=…::message` annotation per finding (its related
locations as `note: path:line:col: message` lines of the message).

Escaping follows @actions/core (toolkit `command.ts`): in the message `%`, CR and LF
become %25, %0D, %0A; in property values `:` and `,` also become %3A and %2C.
"""

from __future__ import annotations

from ..core.textsafe import printable
from .model import Run

LEVELS = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(s: str) -> str:
    # then the other control characters (ESC/OSC from code or file names) shown as `\x1b`, never raw in the log
    return printable(s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def command(level: str, props: dict[str, object], message: str) -> str:
    p = ",".join(f"{k}={escape_property(str(v))}" for k, v in props.items() if v is not None)
    return f"::{level} {p}::{escape_data(message)}" if p else f"::{level}::{escape_data(message)}"


def render(run: Run) -> str:
    out = []
    for f in run.by_roi():
        mark = {"safe": " [fix: cudamigrate fix]", "unsafe": " [fix: cudamigrate fix --unsafe-fixes]",
                "display-only": " [suggested edit, not applied by fix: review it]"}.get(f.applicability, "")
        props = {"file": f.path, "line": f.line, "col": f.column, "endLine": f.end_line,
                 "title": f"{f.rule_id} {f.rule_name}"}
        if f.end_line == f.line:
            props["endColumn"] = f.end_column
        notes = "".join(f"\nnote: {r.path}:{r.line}:{r.column}: {r.message}" for r in f.related)  # (%0A in the log)
        out.append(command(LEVELS.get(f.severity, "warning"), props, f"{f.message}{mark}{notes}"))
    for e in run.errors:
        out.append(command("error", {"title": "cudamigrate"}, e))
    return "".join(line + "\n" for line in out)
