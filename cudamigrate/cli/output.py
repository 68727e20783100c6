"""How the CLI writes its one-line messages (errors, warnings, notes) on stderr."""

from __future__ import annotations

import os
from typing import IO

import click

from ..core.textsafe import printable


def err(msg: str) -> None:
    """One line on stderr; control characters from file names and code are shown escaped."""
    click.echo(f"cudamigrate: {printable(msg)}", err=True)


def use_color(choice: str | None, stream: IO[str] | None, to_file: bool = False) -> bool:
    """`--color auto|always|never`: auto colours a terminal only, never a file or a pipe, and never when
    `NO_COLOR` is set to anything but empty (no-color.org); always and never are what they say."""
    if choice == "always":
        return True
    if choice == "never" or to_file or os.environ.get("NO_COLOR"):
        return False
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False
