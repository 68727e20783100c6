"""How the CLI writes its one-line messages (errors, warnings, notes) on stderr."""

from __future__ import annotations

import click

from ..core.textsafe import printable


def err(msg: str) -> None:
    """One line on stderr; control characters from file names and code are shown escaped."""
    click.echo(f"cudamigrate: {printable(msg)}", err=True)
