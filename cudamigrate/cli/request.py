"""The command line's side of preparation: its flags as a workspace Request, `-` read from stdin, the paths
that give no file, and the workspace's refusals as click's usage errors (exit 2, `Error: ...`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from ..core.config import Config
from ..workspace.request import Request, WorkspaceError
from .output import err


def request_of(paths: tuple[Path, ...], kw: dict[str, Any]) -> Request:
    """The request `scan`, `fix` and `plan`'s shared flags (cli/options.py) make."""
    return Request(paths=tuple(paths), config_path=kw.get("config_path"), select=tuple(kw.get("select") or ()),
                   ignore=tuple(kw.get("ignore") or ()), extend_select=tuple(kw.get("extend_select") or ()),
                   target=kw.get("target"), from_version=kw.get("from_version"), keep_compat=kw.get("keep_compat"),
                   rules_dirs=tuple(kw.get("rules_dir") or ()), no_builtin_rules=bool(kw.get("no_builtin_rules")),
                   options=tuple(kw.get("cli_options") or ()), max_file_size=kw.get("max_file_size"),
                   compile_commands=kw.get("compile_commands"), no_semantic=bool(kw.get("no_semantic")),
                   no_cache=bool(kw.get("no_cache")), timings=bool(kw.get("timings")), diff_base=kw.get("diff_base"))


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


def stdin_input(req: Request, kw: dict[str, Any]):
    """(the buffer for `scan -`/`fix -` (a StdinInput) or None for ordinary paths, the request to run). Semantic
    mode is off for a buffer: libclang reads files from disk, and the buffer is not on disk."""
    from .stdin import StdinUsageError, read_stdin, wants_stdin

    try:
        if not wants_stdin(req.paths, kw.get("stdin_filename")):
            return None, req
    except StdinUsageError as exc:
        raise click.UsageError(str(exc)) from None
    kw["no_semantic"] = True  # for cli/semantic.py, which reads the flags
    stdin = read_stdin(sys.stdin.buffer, kw.get("stdin_filename"))
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
