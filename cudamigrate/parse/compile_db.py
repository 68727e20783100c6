"""Where a project's compile_commands.json is, as clangd looks for it: a path search only, apart from semantic mode
(parse/clang.py) so that finding the database (the default target's compiler, whether to go semantic) loads
nothing of libclang."""

from __future__ import annotations

import os
from pathlib import Path

DB_NAME = "compile_commands.json"


def find_compile_db(paths: list[Path]) -> Path | None:
    """The compile_commands.json clangd would pick for each path: in the path's directory or an ancestor, that
    directory's own or one in a `build*/` (or `out/`) subdirectory of it, nearest first, stopping at the
    repository's root. Among several build directories of one level, `build/` wins, then by name."""
    seen: set[Path] = set()
    # os.path's predicates: a directory without search permission or a symlink loop is "not there", not a crash
    starts = [Path(os.path.realpath(p)) if os.path.isdir(p) else Path(os.path.realpath(p)).parent
              for p in (paths or [Path(".")])]
    for start in starts:
        for d in [start, *start.parents]:
            if d in seen:
                break
            seen.add(d)
            for cand in _db_candidates(d):
                if os.path.isfile(cand):
                    return cand
            if os.path.exists(d / ".git"):
                break  # the repository's root: never pick up an unrelated database above it
    return None


def _db_candidates(d: Path) -> list[Path]:
    subs = ["build"] + sorted(n for n in _listdir(d) if n.startswith("build") and n != "build") + ["out"]
    return [d / DB_NAME] + [d / sub / DB_NAME for sub in subs]


def _listdir(d: Path) -> list[str]:
    try:
        return os.listdir(d)
    except OSError:
        return []
