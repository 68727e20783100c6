"""Where a project's compile_commands.json is, as clangd looks for it, and what its units say: apart from semantic
mode (parse/clang.py) so that finding the database (the default target's compiler, whether to go semantic) and
reading its units' `-D`/`-U` flags (the preprocessor model's branches: read/unit_defines.py) load nothing of
libclang."""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
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


@dataclass
class Command:
    file: Path  # absolute, resolved
    directory: Path
    argv: list[str]


def load_compile_db(path: Path) -> list[Command]:
    """The database's units, one per file: the first entry of a file wins (configurations are not merged). Paths
    are resolved with os.path.realpath, which leaves a symlink loop as it is: Path.resolve raises RuntimeError
    there (before Python 3.13), and one such entry made every file's scan an internal error."""
    entries = json.loads(path.read_text(encoding="utf-8"))
    out: dict[Path, Command] = {}
    for e in entries:
        directory = Path(e.get("directory") or path.parent)
        if not directory.is_absolute():
            directory = Path(os.path.realpath(path.parent / directory))
        argv = e.get("arguments") or shlex.split(e.get("command", ""))
        f = Path(e["file"])
        f = Path(os.path.realpath(f if f.is_absolute() else directory / f))
        if f not in out:
            out[f] = Command(f, directory, list(argv))
    return list(out.values())


Define = tuple[str, "str | None"]  # (NAME, VALUE) for -DNAME=VALUE (-DNAME: "1"), (NAME, None) for -UNAME


# nvcc's long spellings of -D and -U (`nvcc --help`: --define-macro, --undefine-macro), with or without `=`
LONG_DEFINES = {"--define-macro": "-D", "--undefine-macro": "-U"}


def compiler_option_items(value: str) -> list[str]:
    """The host-compiler options of one `-Xcompiler`/`--compiler-options` value: nvcc splits the list at commas,
    and the host compiler's command line at spaces (`-Xcompiler "-DA -DB"` passes two options)."""
    return [t for part in value.split(",") for t in part.split()]


def command_defines(argv: list[str]) -> tuple[Define, ...]:
    """The `-D`/`-U` flags of a unit's command line, in order, in the forms semantic mode passes on to clang
    (parse/clang.py's `clang_args`): `-D X`, `-DX`, `-U X`, `-UX`, nvcc's `--define-macro[=]X` and
    `--undefine-macro[=]X`, and those inside `-Xcompiler`/`--compiler-options` (comma- or space-separated).
    `-DNAME` is `-DNAME=1`, as for gcc, clang and nvcc."""
    out: list[Define] = []

    def add(flag: str, value: str) -> None:
        name, eq, val = value.partition("=")
        if not name:
            return
        out.append((name, None) if flag == "-U" else (name, val if eq else "1"))

    i = 1
    while i < len(argv):
        a = argv[i]
        key, eq, val = a.partition("=")
        if a in ("-D", "-U") and i + 1 < len(argv):
            add(a, argv[i + 1])
            i += 2
            continue
        if key in LONG_DEFINES:
            add(LONG_DEFINES[key], val if eq else (argv[i + 1] if i + 1 < len(argv) else ""))
            i += 1 if eq else 2
            continue
        if a.startswith(("-D", "-U")):
            add(a[:2], a[2:])
        elif key in ("-Xcompiler", "--compiler-options"):
            for x in compiler_option_items(val if eq else (argv[i + 1] if i + 1 < len(argv) else "")):
                if x.startswith(("-D", "-U")) and len(x) > 2:
                    add(x[:2], x[2:])
            i += 1 if eq else 2
            continue
        i += 1
    return tuple(out)
