"""Walking the user's paths: source extensions, .gitignore-style ignores, config excludes."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from ..core.textsafe import path_text

if TYPE_CHECKING:
    import pathspec

SOURCE_SUFFIXES = {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx", ".inl", ".cuinc"}
ALWAYS_SKIP = {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", "node_modules", ".tox", ".mypy_cache"}


def _spec_for(directory: Path, errors: list[str] | None = None) -> "pathspec.PathSpec | _NoPatterns | None":
    """The ignore files' patterns of `directory`. A pattern pathspec cannot compile (`[z-a]`, which git accepts
    and matches nothing with) matches nothing here too, and is one line in `errors` naming the file and line."""
    lines: list[str] = []
    for name in (".gitignore", ".cudamigrateignore"):
        p = directory / name
        try:
            if p.is_file():
                own = p.read_text(encoding="utf-8", errors="replace").splitlines()
            else:
                continue
        except OSError:
            continue
        try:
            patterns(own)
        except (re.error, ValueError, RecursionError):
            from ..core.config_check import glob_problem

            kept = []
            for i, line in enumerate(own, 1):
                why = glob_problem(line)
                if why is None:
                    kept.append(line)
                    continue
                msg = f"{path_text(p)}:{i}: pattern {line!r} cannot be used: {why}; it matches nothing (as in git)"
                if errors is not None and msg not in errors:
                    errors.append(msg)
            own = kept
        lines += own
    if not lines:
        return None
    return patterns(lines)


class _NoPatterns:
    """What a PathSpec of no patterns is (it matches nothing), without importing pathspec (12 ms of a
    one-file run outside any ignore file)."""

    @staticmethod
    def match_file(_path: str) -> bool:
        return False


def patterns(lines: list[str]) -> "pathspec.PathSpec | _NoPatterns":
    """Gitignore-style patterns."""
    if not lines:
        return _NoPatterns()
    import pathspec

    return pathspec.PathSpec.from_lines("gitignore", lines)


def _rel_to(p: Path, base: Path | None) -> str | None:
    """p relative to base (posix), or None when p is not under base."""
    if base is None:
        return None
    rel = os.path.relpath(os.path.abspath(p), os.path.abspath(base))
    return None if rel == ".." or rel.startswith("../") else rel


def _under(rel: str) -> str:
    """A directory's relative path as the prefix of its entries' (`a/b` -> `a/b/`, `.` -> ``)."""
    return "" if rel == "." else rel + "/"


def _named_file_ignored(p: Path, errors: list[str] | None = None) -> bool:
    """A named file under a `.gitignore`/`.cudamigrateignore` of its directory or one above, up to the git root."""
    f = Path(os.path.abspath(p))
    d = f.parent
    while True:
        spec = _spec_for(d, errors)
        if spec is not None and spec.match_file(os.path.relpath(f, d)):
            return True
        if (d / ".git").exists() or d.parent == d:
            return False
        d = d.parent


def named_file_excluded(p: Path, excl: "pathspec.PathSpec | _NoPatterns", base: Path | None, respect_gitignore: bool,
                        errors: list[str] | None = None) -> bool:
    """A file named on the command line (or by --stdin-filename; it need not exist) that `exclude` or an
    ignore file covers: patterns anchored at `base` (the configuration's directory), else at the cwd."""
    rel = _rel_to(p, base)
    rel = rel if rel is not None else (_rel_to(p, Path.cwd()) or p.name)
    return bool(excl.match_file(rel)) or (respect_gitignore and _named_file_ignored(p, errors))


def discover(paths: list[Path], exclude: list[str] | None = None, suffixes: set[str] | None = None,
             respect_gitignore: bool = True, errors: list[str] | None = None, base: Path | None = None
             ) -> Iterator[Path]:
    """Yield source files under `paths` in a stable order.

    `exclude` patterns are anchored at `base` (the configuration file's directory) when given, else at each
    scanned root. They apply to files named explicitly too (what ruff's --force-exclude does: pre-commit
    passes file names), as do `.gitignore`/`.cudamigrateignore` files. Other files named explicitly are always
    yielded (reading them reports what is wrong: missing, a FIFO, a device...). What cannot be walked (a loop
    of symlinks, a directory without search permission) is appended to `errors` as one line naming it.
    """
    suffixes = suffixes or SOURCE_SUFFIXES
    excl = patterns(list(exclude or []))
    seen: set[Path] = set()

    def problem(p: object, what: str, exc: OSError) -> None:
        if errors is not None:
            errors.append(f"{path_text(p)}: {what}: {exc.strerror or exc}")

    for root in paths:
        try:
            is_dir = root.is_dir()
            if not is_dir and named_file_excluded(root, excl, base, respect_gitignore, errors):
                continue
        except OSError as exc:
            problem(root, "cannot read", exc)
            continue
        if not is_dir:
            if root not in seen:
                seen.add(root)
                yield root
            continue
        stack: list[tuple[Path, list[tuple[Path, "pathspec.PathSpec | _NoPatterns"]]]] = [(root, [])]
        while stack:
            d, specs = stack.pop()
            spec = _spec_for(d, errors) if respect_gitignore else None
            if spec is not None:
                specs = specs + [(d, spec)]
            try:
                entries = sorted(os.scandir(d), key=lambda e: e.name)
            except OSError as exc:
                problem(d, "cannot list directory", exc)
                continue
            # the directory's paths relative to the root, the base and each ignore file's directory, computed
            # once per directory (os.path.relpath per entry was most of a large tree's walk)
            dir_root = _under(os.path.relpath(d, root))
            dir_base = _rel_to(d, base)
            dir_base = None if dir_base is None else _under(dir_base)
            dir_specs = [(_under(os.path.relpath(d, sd)), sp) for sd, sp in specs]
            subdirs = []
            for e in entries:
                p = Path(e.path)
                try:
                    is_dir = e.is_dir(follow_symlinks=False)
                    if is_dir and e.name in ALWAYS_SKIP:
                        continue
                    slash = "/" if is_dir else ""
                    rel = (dir_base if dir_base is not None else dir_root) + e.name
                    if excl.match_file(rel + slash):
                        continue
                    if any(sp.match_file(prefix + e.name + slash) for prefix, sp in dir_specs):
                        continue
                    if is_dir:
                        subdirs.append(p)
                        continue
                    if p.suffix.lower() not in suffixes or p in seen:
                        continue
                    if e.is_file():
                        seen.add(p)
                        yield p
                except OSError as exc:  # a loop of symlinks, a vanished entry
                    problem(p, "cannot read", exc)
            for sd in reversed(subdirs):
                stack.append((sd, specs))
