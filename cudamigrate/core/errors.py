"""Internal errors as one line each: a bug in a matcher, a rule, a template or the fix applier.

Why: one malformed file or one broken rule must never sink a run. Every per-file stage (read, parse,
match, build findings, render templates, build edits, apply, write) runs under a guard; what escapes
becomes `path:line:col: RULE: internal error: Type: message`, the file's other rules and the other
files still run, and the command exits 2. The traceback is kept (as text, so it crosses process
boundaries) and printed with `--debug`.
"""

from __future__ import annotations

import traceback

from .textsafe import one_line

MAX_DETAIL = 240


def describe(exc: BaseException) -> str:
    """`Type: message`, on one line, bounded."""
    text = one_line(str(exc))
    if len(text) > MAX_DETAIL:
        text = text[:MAX_DETAIL] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def internal_message(where: str, rule: str | None, exc: BaseException, stage: str = "internal error") -> str:
    """One line naming the file (and position), the rule and the error. `where` is `path` or `path:line:col`."""
    who = f" {rule}:" if rule else ""
    return f"{where}:{who} {stage}: {describe(exc)}"


def trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
