"""The `-D`/`-U` flags a file is compiled with, from the project's compile database.

Which branch of `#ifdef USE_HIP` nvcc takes is often decided on the command line (CMake's
`add_definitions(-DUSE_HIP)`), not in the source. The preprocessor model (match/ppenv.py) decides a branch
only when it is the same in every possible world, so without the command line such a branch stays undecided.
`file_defines` gives, once per run, the flags the model may start from:

* a file the database compiles: its unit's `-D`/`-U` flags, in order (parse/compile_db.py's
  `command_defines`, read from the same units semantic mode parses: `load_compile_db`);
* any other file (a header, a `.cu` included by another): the flags on which every unit that reaches it
  (through the run's `#include` graph, read/project_index.py's `reachable`) agrees; a name the units set
  differently, or that some unit leaves alone, is not passed, so its branch stays undecided (the model's
  conservative answer, as without a database);
* nothing when no unit reaches the file, or the run has no database (or one that cannot be read: semantic
  mode reports that).

Callers: the scan's token-pasting macros (parse/pasting.py through read/project_index.py), an includer's macros
(match/shadows.py) and CM410's version guards (match/migrations/builtins.py): all of them ask here, so they agree
on one file's branches. Reading the database records it as the scan's dependency (pipeline/result_cache.py's
audit of reads): a changed `-D` in it makes the cached results of the run stale.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..parse.compile_db import Define, command_defines, load_compile_db

if TYPE_CHECKING:
    from .project_index import ProjectIndex

_ABSENT = ("", None)  # a unit that leaves a name alone (no flag names it)


@dataclass
class UnitDefines:
    """One run's database, read once: each unit's flags, and (built on the first file that is not a unit) which
    units reach each other file."""

    units: dict[Path, tuple[Define, ...]] = field(default_factory=dict)
    reached_by: dict[Path, list[Path]] | None = None

    def for_file(self, project: ProjectIndex, path: Path) -> tuple[Define, ...]:
        key = Path(os.path.realpath(path))  # as `load_compile_db` and `reachable` name files
        own = self.units.get(key)
        if own is not None:
            return own
        if self.reached_by is None:
            self.reached_by = {}
            for unit in self.units:
                for h in project.reachable(unit):
                    self.reached_by.setdefault(h, []).append(unit)
        return agreed([self.units[u] for u in self.reached_by.get(key, [])])


def agreed(flag_lists: list[tuple[Define, ...]]) -> tuple[Define, ...]:
    """The settings every one of `flag_lists` ends with, in the first list's order: a name whose final
    setting differs between lists, or that a list does not name, is left out (undecided)."""
    if not flag_lists:
        return ()
    finals = [dict(flags) for flags in flag_lists]
    out: list[Define] = []
    for name, value in finals[0].items():
        if all(f.get(name, _ABSENT) == value for f in finals[1:]):
            out.append((name, value))
    return tuple(out)


def file_defines(project: ProjectIndex | None, db: str | None, path: Path) -> tuple[Define, ...]:
    """The flags match/ppenv.py starts `path`'s walk from (module docstring), for the run's database `db`
    (Options.compile_db); kept in the run's project index."""
    if project is None or db is None:
        return ()
    got = project.cache.get(("unit_defines", db))
    if got is None:
        # stamped before it is read: an editing session's index (server/analysis.py) starts afresh once the
        # database changes (a build reconfigured with other -D flags), not at the next header edit
        project.watch(Path(db))
        try:
            units = {c.file: command_defines(c.argv) for c in load_compile_db(Path(db))}
        # unreadable, not a database's shape, or nested too deep for json (RecursionError): no flags, never an
        # internal error of every file's scan
        except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
            units = {}
        got = project.cache[("unit_defines", db)] = UnitDefines(units)
    return got.for_file(project, path)
