"""Which translation units compile verification compiles for the files a fix changed, and why.

Why this shape:

* A unit is what the build compiles, never a file that only gets included. With a compile database (named with
  --compile-commands or found as clangd finds it), the units of a changed file are the database's entries that
  are that file or reach it through `#include "..."`. Without one, they are the files of the run that no other
  file of the run includes and that reach the changed file: a `.cu` included by `main.cu` (Parboil's and
  Rodinia's layout) is part of `main.cu`, and compiled alone it fails on names its includer declares first.
* A changed header that no unit reaches is still compiled on its own (as a CUDA unit), so that an edit nobody
  includes is checked at least for syntax; a changed file the database does not know is compiled with a
  synthesized command and says so.
* Each unit carries why it was chosen, for `fix --show-units`: a user whose verification compiles the wrong
  thing can see it and give the database or the flags that make it right.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from .compile_check import UnitCommand, is_source

if TYPE_CHECKING:
    from ..read.project_index import ProjectIndex


@dataclass(frozen=True)
class Unit:
    """One translation unit to compile: its real path and why it was chosen."""

    path: str
    why: str


def _real(p: Path | str) -> str:
    return os.path.realpath(p)


def select_units(changed: Iterable[str], index: ProjectIndex, database: dict[str, UnitCommand],
                 show: Callable[[str], str] = str) -> list[Unit]:
    """The units for the changed files (real paths), in order, each once (the first reason wins)."""
    out: dict[str, str] = {}
    reaches: dict[str, set[str]] | None = None
    if database:
        reaches = {u: {u, *(_real(h) for h in index.reachable(Path(u)))} for u in database}
    for path in changed:
        for unit, why in (_from_database(path, reaches, show) if reaches is not None else []) or \
                _from_layout(path, index, show, bool(database)):
            out.setdefault(unit, why)
    return [Unit(u, w) for u, w in out.items()]


def _from_database(path: str, reaches: dict[str, set[str]], show: Callable[[str], str]) -> list[tuple[str, str]]:
    got = []
    for unit, deps in reaches.items():
        if unit == path:
            got.append((unit, "an entry of the compile database"))
        elif path in deps:
            got.append((unit, f"an entry of the compile database that includes {show(path)}"))
    return got


def _from_layout(path: str, index: ProjectIndex, show: Callable[[str], str], has_db: bool) -> list[tuple[str, str]]:
    """Without a database entry: the files of the run that no other file includes and that reach `path`."""
    note = "; not in the compile database" if has_db else ""
    users = [_real(u) for u in index.includers(Path(path))]
    if not users:
        if is_source(path):
            return [(path, f"a source file no file of the run includes{note}")]
        return [(path, f"a header no file of the run includes, compiled on its own{note}")]
    roots = [u for u in users if not index.includers(Path(u))] or users  # a cycle of includes: every includer
    roots = [u for u in roots if is_source(u)] or roots
    return [(u, f"includes {show(path)}; no file of the run includes it{note}") for u in dict.fromkeys(roots)]


def user_flags(include_dirs: Iterable[str], defines: Iterable[str], base: Path | None = None) -> tuple[str, ...]:
    """`-I` and `-D` flags for synthesized commands (projects without a compile database), from the command line
    (--include-dir/-I, --define/-D, relative to the working directory) and the configuration (`include-dirs`,
    `defines`, relative to the configuration file's directory: `base`)."""
    out: list[str] = []
    for d in include_dirs:
        p = Path(d).expanduser()
        if not p.is_absolute():
            p = (base or Path.cwd()) / p
        out.append(f"-I{_real(p)}")
    out += [f"-D{d}" for d in defines]
    return tuple(dict.fromkeys(out))


def describe(units: list[Unit], command: Callable[[str], UnitCommand | None], show: Callable[[str], str],
             refused: dict[str, str] | None = None) -> str:
    """The `fix --show-units` listing: each unit, why it was chosen, and the command it is compiled with (or why
    a found database's command is not run: `refused`)."""
    lines = []
    for u in units:
        cmd = command(u.path)
        if refused and u.path in refused:
            lines += [f"{show(u.path)}: {u.why}", f"  not run (found compile database): {refused[u.path]}"]
            continue
        how = "no command (no compile database entry and no nvcc)" if cmd is None else \
            f"cd {shlex.quote(cmd.directory)} && {shlex.join(cmd.argv)}" + \
            (" (synthesized)" if cmd.synthesized else " (compile database)")
        lines += [f"{show(u.path)}: {u.why}", f"  {how}"]
    return "\n".join(lines) + ("\n" if lines else "")
