"""What a run is asked to do, as typed data: the paths, the configuration file if one is named, the rule
selection, versions and modes. The command line builds one from its flags (cudamigrate/cli/request.py), the
language server from a document's path (cudamigrate/server/analysis.py), an integrator by hand; the
workspace layer reads nothing else, so the same request gives the same run whoever makes it."""

from __future__ import annotations

import os
import stat as st
from dataclasses import dataclass
from pathlib import Path

from ..core.textsafe import printable
from ..rules.schema import parse_version


class WorkspaceError(Exception):
    """A request or configuration the run cannot start with: `message` says why in one line, `flag` names the
    command-line flag it concerns (None when it is not one flag's fault), `config` the configuration file in
    force, so the terminal prints it as a usage error and the editor shows it on that file."""

    def __init__(self, message: str, flag: str | None = None, config: Path | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.flag = flag
        self.config = config

    def text(self) -> str:
        """The one line the terminal prints after `Error: ` (click's wording for a flag's bad value)."""
        return f"Invalid value for {self.flag}: {self.message}" if self.flag else self.message


@dataclass(frozen=True)
class Request:
    """One run's inputs, each as given (None or empty: not given, so the configuration file decides).

    `select`, `ignore` and `extend_select` hold the values as written (each may be comma-separated); `options`
    holds template options as `KEY=VALUE`."""

    paths: tuple[Path, ...] = ()
    config_path: Path | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    target: str | None = None
    from_version: str | None = None
    keep_compat: str | None = None
    rules_dirs: tuple[Path, ...] = ()
    no_builtin_rules: bool = False
    options: tuple[str, ...] = ()
    max_file_size: int | None = None
    compile_commands: Path | None = None
    no_semantic: bool = False
    no_cache: bool = False
    timings: bool = False
    diff_base: str | None = None


def split_values(values: tuple[str, ...] | list[str] | None) -> list[str]:
    """Values as given on a command line or in a configuration list, each split at commas."""
    out: list[str] = []
    for v in values or []:
        out += [x.strip() for x in str(v).split(",") if x.strip()]
    return out


def version_value(v: str | None, flag: str) -> tuple[int, int] | None:
    """A CUDA version as (major, minor); `13` means 13.0. WorkspaceError naming `flag` when it is not one."""
    if v is None:
        return None
    v = str(v).strip()
    if v.isdigit():  # `--target-cuda 13` means 13.0
        v += ".0"
    try:
        return parse_version(v)
    except ValueError:
        raise WorkspaceError(f"expected a version like 13.0, got {v!r}", flag) from None


def check_regular(path: Path, flag: str) -> None:
    """An input file given by a flag must be a regular file: a FIFO or a device would block or never end."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise WorkspaceError(f"{printable(str(path))}: {exc.strerror or exc}", flag) from None
    if not st.S_ISREG(mode):
        raise WorkspaceError(f"{printable(str(path))}: not a regular file", flag)
