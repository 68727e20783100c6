"""A scan never passes silently: paths that do not exist, roots with no source file, named files excluded.

A CI gate that runs `cudamigrate scan build/src` in the wrong directory used to print `No findings in 0
file(s).` and exit 0, and `scan /nonexistent/x` exited 1 like "findings remain". This module looks at the
paths the user named and the files discovery found, and says for each named path that gave nothing why
(missing, no file with a source suffix under it, or every one excluded - by which setting), so the CLI can
print one line per path and exit with its own code for "could not read inputs" (EXIT_INPUT, README: Exit
codes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..core.config import Config
from .discover import SOURCE_SUFFIXES, discover, named_file_excluded, patterns
from ..core.textsafe import path_text

EXIT_INPUT = 3  # could not read the inputs: a named path is missing, or no source file was found under it


@dataclass(frozen=True)
class InputProblem:
    """One line about a named path: `error` (nothing could be read from it) or a `note` (excluded on purpose)."""

    path: Path
    reason: str
    error: bool

    def line(self) -> str:
        return f"{'error' if self.error else 'note'}: {path_text(self.path)}: {self.reason}"


def _missing(p: Path) -> bool:
    """No such path (ENOENT, ENOTDIR); a path that exists but cannot be looked at (EACCES on a directory on
    the way) is read by the scan, which reports why it cannot."""
    try:
        os.lstat(p)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False


def _config_name(cfg: Config) -> str:
    return path_text(cfg.path) if cfg.path is not None else "the configuration"


def _why_excluded_file(p: Path, cfg: Config) -> str:
    """Which setting excludes a named file: the configuration's `exclude` or an ignore file."""
    base = cfg.path.parent if cfg.path is not None else None
    excl = patterns(list(cfg.get("exclude", []) or []))
    if named_file_excluded(p, excl, base, respect_gitignore=False):
        return f"excluded by `exclude` in {_config_name(cfg)}"
    return "excluded by a .gitignore/.cudamigrateignore (set `respect-gitignore = false` to scan it)"


def _any(paths: list[Path], **kw: object) -> bool:
    return next(iter(discover(paths, **kw)), None) is not None  # type: ignore[arg-type]


def _why_empty_dir(d: Path, cfg: Config) -> str:
    """Why discovery found no source file under `d`: none there at all, or excluded - by which setting."""
    base = cfg.path.parent if cfg.path is not None else None
    if not _any([d], exclude=[], respect_gitignore=False, errors=[], base=base):
        suffixes = " ".join(sorted(SOURCE_SUFFIXES))
        return f"no source file found (looked for {suffixes})"
    if not _any([d], exclude=[], respect_gitignore=bool(cfg.get("respect-gitignore", True)), errors=[], base=base):
        return ("no source file found: every one is excluded by a .gitignore/.cudamigrateignore "
                "(set `respect-gitignore = false` to scan them)")
    return f"no source file found: every one is excluded by `exclude` in {_config_name(cfg)}"


def check_inputs(paths: list[Path], files: list[Path], cfg: Config, force_exclude: bool = False) -> list[InputProblem]:
    """One problem per named path that contributes no file: missing (error), a directory with no source file
    left (error), a named file excluded by the configuration (note: excluding it may be intended, as with
    pre-commit passing every changed file). Files that exist are read by the scan, which reports what else is
    wrong with them (a FIFO, no permission) itself.

    `force_exclude` (ruff's `--force-exclude`, which the pre-commit hooks pass): the caller hands over every
    changed file and wants the configuration's excludes to apply to them silently, so an excluded named file
    is no problem at all, and a run whose named files are all excluded scans nothing and passes."""
    out: list[InputProblem] = []
    roots = paths or [Path(".")]
    found = {os.path.abspath(f) for f in files}
    for root in roots:
        if _missing(root):
            out.append(InputProblem(root, "no such file or directory", True))
        elif os.path.isdir(root):
            prefix = os.path.join(os.path.abspath(root), "")
            if not any(f.startswith(prefix) for f in found):
                out.append(InputProblem(root, _why_empty_dir(root, cfg), True))
        elif os.path.abspath(root) not in found and not force_exclude:
            out.append(InputProblem(root, _why_excluded_file(root, cfg), False))
    if not files and not any(p.error for p in out):  # every named file excluded: nothing at all was scanned
        out = [InputProblem(p.path, p.reason + "; no file left to scan", True) for p in out]
    return out


def without_missing(files: list[Path], problems: list[InputProblem]) -> list[Path]:
    """The files to scan less the named ones that do not exist (reported once by check_inputs, not again as an
    unreadable file by the scan)."""
    missing = {str(p.path) for p in problems if p.error and _missing(p.path)}
    return [f for f in files if str(f) not in missing]


def gate(paths: list[Path], files: list[Path], cfg: Config, echo,
         force_exclude: bool = False) -> tuple[list[Path], bool]:
    """What the CLI does with the problems: print one line each (`echo`), and return the files to scan (the
    missing named ones left out) and whether an input error happened (the run then exits EXIT_INPUT)."""
    problems = check_inputs(paths, files, cfg, force_exclude)
    for p in problems:
        echo(p.line())
    return without_missing(files, problems), any(p.error for p in problems)
