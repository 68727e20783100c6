"""Per-file ignores (`per-file-ignores = {"tests/**" = ["CM101"]}`, ruff's key): rules turned off for the
files a glob matches.

Why a table of its own and not `ignore`: generated or vendored files often need one rule off while the rest
of the project keeps it. The globs are gitignore-style patterns anchored at the configuration file's
directory, as `exclude`'s are, so one pattern means the same file in both keys.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


class PerFileIgnoresError(ValueError):
    """A glob that cannot be compiled (the message names it and why)."""


@lru_cache(maxsize=256)
def _spec(glob: str) -> Any:
    import pathspec

    return pathspec.PathSpec.from_lines("gitignore", [glob])


def check_glob(glob: str) -> None:
    """PerFileIgnoresError when `glob` is not a usable pattern (an inverted range `[z-a]`, ...)."""
    try:
        _spec(glob).match_file("x")
    except Exception as exc:  # pathspec raises re.error, ValueError, ... for a bad pattern
        raise PerFileIgnoresError(f"has a bad glob {glob!r}: {exc}") from None


@dataclass(frozen=True)
class PerFileIgnores:
    """(glob, rule selectors) pairs and the directory the globs are anchored at. Plain data, so the engine's
    options still pickle to the workers and go into the result cache's key as they are."""

    base: str
    table: tuple[tuple[str, tuple[str, ...]], ...]

    def selectors_for(self, path: str | os.PathLike[str]) -> tuple[str, ...]:
        """The rule selectors (ids, prefixes, families, ALL) ignored in the file at `path`."""
        if not self.table:
            return ()
        rel = os.path.relpath(os.path.abspath(path), self.base)
        if rel == ".." or rel.startswith("../"):  # outside the configuration's tree: as `exclude` does, by name
            rel = os.path.relpath(os.path.abspath(path))
            if rel.startswith("../"):
                rel = os.path.basename(path)
        out: list[str] = []
        for glob, selectors in self.table:
            if _spec(glob).match_file(rel):
                out += selectors
        return tuple(out)


def from_config(base: str, value: dict[str, list[str]] | None) -> PerFileIgnores | None:
    """The configuration's table (already type-checked) as PerFileIgnores; None when absent or empty."""
    if not value:
        return None
    for glob in value:
        check_glob(glob)
    return PerFileIgnores(os.path.abspath(base), tuple((g, tuple(v)) for g, v in sorted(value.items())))
