"""The CUDA release a run targets when neither `--target-cuda` nor the configuration names one: the toolkit the
project builds with.

Why: a fixed default (13.0) told a team that builds with 12.4 about 13.0's removals as build breaks, and a team
on 13.5 nothing of what 13.1-13.5 changed. The compiler the project builds with is the best witness of the
release its code must build with: the compile database's nvcc (how the project is really built; its
`nvcc --version`, else the release its installer's directory names, `/usr/local/cuda-12.4/bin/nvcc`), else the
nvcc on PATH, else the newest release cudamigrate knows (the per-release inventory). A compiler newer than that
release is reported as such and the newest release is targeted: no knowledge of a release nobody has read is
claimed. The reason travels with the target into `doctor` and every report, so that a finding counted against
13.0 says why 13.0.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..core.toolkit import nvcc_path, nvcc_release, release_in_path

# compiler launchers a compile database may put before the compiler itself
_LAUNCHERS = {"ccache", "sccache", "distcc"}


@dataclass(frozen=True)
class Target:
    """A release and why it is the target, as a phrase for reports: "from nvcc 13.0 on PATH"."""

    version: tuple[int, int]
    source: str
    explicit: bool = False  # named by the user (flag or configuration): reports need not repeat why

    @property
    def text(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


def explicit(version: tuple[int, int], source: str) -> Target:
    return Target(version, f"from {source}", explicit=True)


def detect(paths: list[Path], compile_commands: Path | None = None,
           known: list[tuple[int, int]] | None = None) -> Target:
    """The default target for a run over `paths` (`compile_commands`: the database the run was given, else the
    one a scan of `paths` finds); `known`: the releases cudamigrate has read (default: the per-release inventory)."""
    releases = known if known is not None else _known()
    db = compile_commands
    if db is None:
        from ..parse.compile_db import find_compile_db

        db = find_compile_db(paths)
    if db is not None:
        found = database_compiler(db)
        if found is not None:
            exe, release = found
            if release is not None:
                return _within(release, f"from the nvcc {_fmt(release)} of {db} ({exe})", releases)
    nvcc = nvcc_path()
    release = nvcc_release(nvcc) if nvcc else None
    if release is not None:
        return _within(release, f"from nvcc {_fmt(release)} on PATH", releases)
    why = "no nvcc on PATH" if nvcc is None else f"{nvcc} printed no release"
    return Target(releases[-1], f"the newest release cudamigrate knows: {why}")


def database_compiler(db: Path) -> tuple[str, tuple[int, int] | None] | None:
    """The first nvcc a compile database's commands run and its release (None when neither `--version` nor its
    path tells), or None when no command runs nvcc or the database cannot be read."""
    try:
        entries = json.loads(db.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested too deeply for json, not a database
        return None
    for e in entries if isinstance(entries, list) else []:
        if not isinstance(e, dict):
            continue
        try:
            argv = e.get("arguments") or shlex.split(str(e.get("command", "")))
        except ValueError:
            continue
        argv = [str(a) for a in argv]
        while argv and os.path.basename(argv[0]) in _LAUNCHERS:
            argv = argv[1:]
        if not argv or not os.path.basename(argv[0]).startswith("nvcc"):
            continue
        exe = argv[0]
        if os.sep not in exe:
            exe = shutil.which(exe) or exe
        elif not os.path.isabs(exe):
            exe = os.path.join(str(e.get("directory") or db.parent), exe)
        return exe, nvcc_release(exe) or release_in_path(exe) or release_in_path(os.path.realpath(exe))
    return None


def _within(release: tuple[int, int], why: str, known: list[tuple[int, int]]) -> Target:
    if known and release > known[-1]:
        return Target(known[-1], f"the newest release cudamigrate knows ({why.removeprefix('from ')} "
                                 f"is newer)")
    return Target(release, why)


def _fmt(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


def _known() -> list[tuple[int, int]]:
    from ..knowledge.releases import versions

    return versions()
