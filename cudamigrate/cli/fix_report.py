"""`cudamigrate fix`'s rendering of what the workspace layer did (cudamigrate/workspace/fixing.py computes,
verifies and writes): each file's lines and diff, compile verification's lines (or its refusal, or the units it
would compile), and what was fixed and what remains.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from .output import err
from ..core.textsafe import printable

if TYPE_CHECKING:
    from ..fixproof.rollback import VerifySummary
    from ..workspace.fixing import FileFix, SharedHeader, Verification


def show_shared(one: SharedHeader) -> None:
    """A helper header the files share: why it could not be written, or its diff (when not writing) on stdout
    and the note naming it."""
    if one.error is not None:
        err(one.error)
        return
    if one.diff is not None:
        sys.stdout.write(one.diff)
        sys.stdout.flush()
    if one.note is not None:
        err(one.note)


def show_file(one: FileFix) -> None:
    """One file's lines on stderr, then its diff (when not writing) on stdout."""
    for line in one.lines:
        err(line)
    if one.diff is not None:
        if sys.stdout.isatty():  # code's ESC/OSC bytes must not drive the terminal
            click.echo("\n".join(printable(ln) for ln in one.diff.split("\n")), nl=False)
        else:  # piped: exact (click.echo would strip ANSI sequences), so `patch` applies it
            sys.stdout.flush()
            sys.stdout.buffer.write(one.diff.encode("utf-8"))
            sys.stdout.buffer.flush()


def show_verification(v: Verification | None) -> VerifySummary | None:
    """Compile verification's lines on stderr and its summary; with --show-units the units on stdout and exit 0;
    a refusal (--require-verify that could not verify: nothing written) on stderr and exit 2."""
    if v is None:
        return None
    for line in v.lines:
        err(line)
    if v.units is not None:
        click.echo(v.units, nl=False)
        sys.exit(0)
    if v.refusal is not None:
        err(v.refusal)
        sys.exit(2)
    return v.summary


def list_fix_outcome(applied: list, left: list, show_fixes: bool, err: bool = False, color: bool = False) -> None:
    """What `fix` leaves (always, like ruff's --fix) and, with --show-fixes, what it changed: on stdout, as
    ruff writes its remaining diagnostics (`fix . > log` keeps them), or on stderr (`err`) when stdout holds
    the fixed buffer (`fix -`) or the diff (`--diff`, `--dry-run`); painted when `color`."""
    from ..report.plan import plan_order
    from ..report.text import finding_head

    if show_fixes and applied:
        from ..fix.commits import per_file_rules

        click.echo("Fixed:", err=err)
        for path, rules in sorted(per_file_rules(applied).items()):
            click.echo(f"  {path}: " + ", ".join(f"{rid} x{n}" for rid, n in sorted(rules.items())), err=err)
    if left:
        click.echo("Remaining:", err=err)
        for f in plan_order(left):  # (`--color`: painted as scan's findings are)
            click.echo(f"  {finding_head(f, color)} {f.message}", err=err, color=True if color else None)
