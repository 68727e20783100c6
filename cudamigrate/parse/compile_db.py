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


class CompileDbError(ValueError):
    """A compile database that cannot be used: not JSON, or not the shape clang's JSON compilation database
    specifies (an array of objects, each with a string `file` and `directory` when present, and an `arguments`
    array of strings or a `command` string). The message says where; the path is the caller's to name."""


def load_compile_db(path: Path) -> list[Command]:
    """The database's units, one per file: the first entry of a file wins (configurations are not merged). Paths
    are resolved with os.path.realpath, which leaves a symlink loop as it is: Path.resolve raises RuntimeError
    there (before Python 3.13), and one such entry made every file's scan an internal error. OSError when it
    cannot be read, CompileDbError (a ValueError) when it is not a database: as clang does, one bad entry makes
    the whole file unusable rather than a silently partial build."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise CompileDbError("nested too deeply to be a compile database") from None
    except UnicodeDecodeError as exc:
        raise CompileDbError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise CompileDbError(f"not JSON: {exc.msg} (line {exc.lineno} column {exc.colno})") from None
    if not isinstance(entries, list):
        raise CompileDbError(f"not a JSON array of entries (it is {_a(_json_type(entries))})")
    out: dict[Path, Command] = {}
    for n, e in enumerate(entries, 1):
        directory, file, argv = _entry(e, n)
        directory_path = Path(directory or path.parent)
        if not directory_path.is_absolute():
            directory_path = Path(os.path.realpath(path.parent / directory_path))
        f = Path(file)
        f = Path(os.path.realpath(f if f.is_absolute() else directory_path / f))
        if f not in out:
            out[f] = Command(f, directory_path, argv)
    return list(out.values())


def load_error(exc: OSError | ValueError) -> str:
    """Why `load_compile_db` failed, as fix's verification and doctor say it: the system's reason for an OSError
    (not its errno and path), the message of a CompileDbError."""
    return str(exc.strerror or exc) if isinstance(exc, OSError) else str(exc)


def _entry(e: object, n: int) -> tuple[str | None, str, list[str]]:
    """One entry's (directory, file, argv), or CompileDbError naming the entry (1-based) and the field."""
    if not isinstance(e, dict):
        raise CompileDbError(f"entry {n} is {_a(_json_type(e))}, not an object")
    file, directory = e.get("file"), e.get("directory")
    if not isinstance(file, str) or not file:
        raise CompileDbError(f'entry {n}: "file" must be a non-empty string' + ("" if file is None else
                                                                                 f", not {_a(_json_type(file))}"))
    if directory is not None and not isinstance(directory, str):
        raise CompileDbError(f'entry {n} ({file}): "directory" must be a string, not {_a(_json_type(directory))}')
    arguments, command = e.get("arguments"), e.get("command")
    if arguments:
        if not isinstance(arguments, list) or not all(isinstance(a, str) for a in arguments):
            raise CompileDbError(f'entry {n} ({file}): "arguments" must be an array of strings')
        return directory, file, list(arguments)
    if not isinstance(command, str) or not command.strip():
        raise CompileDbError(f'entry {n} ({file}): needs "arguments" (an array of strings) or "command" (a string)')
    try:
        return directory, file, shlex.split(command)
    except ValueError as exc:  # shlex: "No closing quotation", "No escaped character"
        raise CompileDbError(f'entry {n} ({file}): "command" cannot be split: {exc}') from None


def _a(noun: str) -> str:
    return ("an " if noun[0] in "aeiou" else "a ") + noun


def _json_type(v: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(v), "number")


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
