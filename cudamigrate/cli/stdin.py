"""`scan -` / `fix -` for editors: the buffer arrives on stdin and is reported under `--stdin-filename`.

Editors (and ruff's integrations, which this mirrors) pipe the unsaved buffer in and name the file it
belongs to, so the configuration, `exclude` and ignore files apply as they would to that path, and reports
carry that name. The file on disk is never read or written: `fix -` prints the fixed text on stdout.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

STDIN_NAME = "-"
DEFAULT_NAME = "stdin.cu"  # without --stdin-filename: parsed as CUDA, reported as `stdin.cu`


class StdinUsageError(ValueError):
    """`-` mixed with other paths, or --stdin-filename with paths that are not `-`."""


@dataclass(frozen=True)
class StdinInput:
    """The buffer read from stdin and the path it stands for (config, excludes and reports use it)."""

    path: Path
    data: bytes


def wants_stdin(paths: tuple[Path, ...], stdin_filename: Path | None) -> bool:
    """True for `scan -` (or `scan --stdin-filename F` with no paths, as ruff accepts); a usage error for
    `-` next to other paths or --stdin-filename next to real paths, which would be ambiguous."""
    dash = [p for p in paths if str(p) == STDIN_NAME]
    if dash and len(paths) > 1:
        raise StdinUsageError("`-` (read stdin) cannot be combined with other paths")
    if stdin_filename is not None and paths and not dash:
        raise StdinUsageError("--stdin-filename names the buffer read from stdin: pass `-` as the only path")
    return bool(dash) or (stdin_filename is not None and not paths)


def read_stdin(stream, stdin_filename: Path | None) -> StdinInput:
    """The whole of stdin (bytes, exactly) and the path it is reported as."""
    return StdinInput(stdin_filename if stdin_filename is not None else Path(DEFAULT_NAME), stream.read())
