"""The command line's side of preparation: its shared flags typed once (RunFlags) and the workspace Request
they make, `-` read from stdin, the paths that give no file, and the workspace's refusals as click's usage
errors (exit 2, `Error: ...`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..core.config import Config
from ..workspace.request import Request, WorkspaceError
from .output import err

if TYPE_CHECKING:
    from .stdin import StdinInput


@dataclass(frozen=True)
class RunFlags:
    """The flags `scan`, `fix` and `plan` share (cli/options.py), typed once when the command is called: the
    workspace Request they make (`request`) and the command line's own (workers, tracebacks, stdin, colour).
    A flag a command does not take keeps its default."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    target: str | None = None
    from_version: str | None = None
    keep_compat: str | None = None
    rules_dir: tuple[Path, ...] = ()
    no_builtin_rules: bool = False
    config_path: Path | None = None
    cli_options: tuple[str, ...] = ()
    jobs: int | None = None
    max_file_size: int | None = None
    compile_commands: Path | None = None
    no_semantic: bool = False
    timings: bool = False
    no_cache: bool = False
    debug: bool = False
    stdin_filename: Path | None = None
    force_exclude: bool = False
    color: str | None = None
    diff_base: str | None = None

    def request(self, paths: tuple[Path, ...]) -> Request:
        """The workspace request these flags make for `paths`."""
        return Request(paths=tuple(paths), config_path=self.config_path, select=tuple(self.select),
                       ignore=tuple(self.ignore), extend_select=tuple(self.extend_select), target=self.target,
                       from_version=self.from_version, keep_compat=self.keep_compat, rules_dirs=tuple(self.rules_dir),
                       no_builtin_rules=self.no_builtin_rules, options=tuple(self.cli_options),
                       max_file_size=self.max_file_size, compile_commands=self.compile_commands,
                       no_semantic=self.no_semantic, no_cache=self.no_cache, timings=self.timings,
                       diff_base=self.diff_base)


RUN_FLAGS = frozenset(f.name for f in fields(RunFlags))


def usage_error(exc: WorkspaceError) -> click.ClickException:
    """A workspace refusal as the CLI has always printed it: a flag's bad value, or a usage error."""
    if exc.flag is not None:
        return click.BadParameter(exc.message, param_hint=exc.flag)
    return click.UsageError(exc.message)


@contextmanager
def refused() -> Iterator[None]:
    """Run workspace calls; their refusals become click's usage errors (exit 2)."""
    try:
        yield
    except WorkspaceError as exc:
        raise usage_error(exc) from None


def stdin_input(flags: RunFlags, paths: tuple[Path, ...]) -> tuple[StdinInput | None, Request]:
    """(the buffer for `scan -`/`fix -` or None for ordinary paths, the request to run). Semantic mode is off
    for a buffer: libclang reads files from disk, and the buffer is not on disk."""
    from .stdin import StdinUsageError, read_stdin, wants_stdin

    req = flags.request(paths)
    try:
        if not wants_stdin(req.paths, flags.stdin_filename):
            return None, req
    except StdinUsageError as exc:
        raise click.UsageError(str(exc)) from None
    stdin = read_stdin(sys.stdin.buffer, flags.stdin_filename)
    return stdin, replace(req, paths=(stdin.path,), no_semantic=True)


def input_gate(paths: tuple[Path, ...], files: list[Path], cfg: Config, stdin: bool,
               force_exclude: bool = False) -> tuple[list[Path], bool]:
    """`fix` and `plan`: the named paths that give no file, one line each (pipeline/inputs.py); exit 3 at
    once when nothing is left to read. (stdin: a buffer whose name is excluded is handled as ruff does.)"""
    if stdin:
        return files, False
    from ..pipeline.inputs import gate
    from .app import EXIT_INPUT

    files, input_error = gate(list(paths), files, cfg, err, force_exclude)
    if input_error and not files:
        sys.exit(EXIT_INPUT)
    return files, input_error
