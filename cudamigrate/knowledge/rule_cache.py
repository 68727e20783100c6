"""The validated rule set, compiled once into a cache file.

Loading and validating ~160 YAML rules and checking their templates costs 0.2-0.3 s at every start (a
third of a one-file pre-commit run, and again in every worker process); the same validated rules load
from a pickle in ~5 ms. The cache is keyed by the content of every rule file, the tool version, the
Python version, the tool's own source files (size and mtime) and where the packages that loading imports
are installed (environment.py: tree-sitter, its grammar, YAML, Jinja), so it can never serve rules that a
changed rule file, a changed validator or a changed environment would load differently. A rule set with any
load error is never stored: a load that failed (a missing package, a rule being written) is done again on
the next run, so installing what was missing or fixing the rule takes effect at once. It lives in the user cache directory
(`platformdirs`, else `$XDG_CACHE_HOME` or `~/.cache`), is written to a temporary file and renamed into
place (concurrent runs each write a whole file; a reader never sees half of one), and a cache file that
is unreadable, truncated or of another key is ignored and rebuilt without a word.

`CUDAMIGRATE_NO_CACHE=1` or `--no-cache` (`load_rules(use_cache=False)`, worker processes too) bypasses it.
The pickle is only ever read from the user's own cache directory, which is as trusted as the user's
own files: whoever can write there can already change what the user runs.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Callable

from .environment import installed_stamp

NO_CACHE_ENV = "CUDAMIGRATE_NO_CACHE"
CACHE_DIR_ENV = "CUDAMIGRATE_CACHE_DIR"  # overrides the user cache directory (tests, read-only homes)
_MAGIC = b"cudamigrate-rules-v1\n"
_KEEP = 16  # cache files kept (other rule directories, other tool versions); older ones are removed


def disabled() -> bool:
    return os.environ.get(NO_CACHE_ENV, "").strip() not in ("", "0")


def cache_dir() -> Path:
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override)
    try:
        from platformdirs import user_cache_dir

        return Path(user_cache_dir("cudamigrate", appauthor=False))
    except ImportError:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return Path(base) / "cudamigrate"


def _code_stamp() -> bytes:
    """Size and mtime of every source file of the tool: a changed validator or schema means another key."""
    from .. import __version__

    pkg = Path(__file__).resolve().parent.parent
    h = hashlib.sha256(f"{__version__}\0{sys.version}\0{pickle.HIGHEST_PROTOCOL}\0{pkg}\0".encode())
    h.update(installed_stamp().encode())
    for root, dirs, files in os.walk(pkg):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and d != "rules_data")
        for f in sorted(files):
            if f.endswith(".py"):
                st = os.stat(os.path.join(root, f))
                h.update(f"{os.path.relpath(os.path.join(root, f), pkg)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.digest()


def rule_files(dirs: list[Path]) -> list[Path]:
    """The rule files load_rules reads, in its order."""
    return [p for d in dirs for p in sorted(Path(d).rglob("CM*.yaml"))]


def cache_key(dirs: list[Path]) -> str | None:
    """sha256 of the tool's code stamp and every rule file's path and content; None when a file cannot be
    read (the loader reports it; such a rule set is not cached)."""
    h = hashlib.sha256(_code_stamp())
    for d in dirs:
        h.update(f"dir\0{os.path.abspath(d)}\0".encode())
    try:
        for p in rule_files(dirs):
            if not p.is_file() or p.stat().st_size > 1 << 22:
                return None  # a FIFO, a device or a huge file: the loader's own checks and messages apply
            data = p.read_bytes()
            h.update(f"file\0{p}\0{len(data)}\0".encode())
            h.update(data)
    except OSError:
        return None
    return h.hexdigest()


def _read(path: Path, key: str):
    import gc

    paused = gc.isenabled()
    gc.disable()  # tens of thousands of objects: the cyclic collector would walk the growing heap again and again
    try:
        with open(path, "rb") as fh:
            if fh.read(len(_MAGIC)) != _MAGIC or fh.read(64).decode("ascii", "replace") != key:
                return None
            return pickle.load(fh)
    except Exception:  # missing, truncated, from an older layout: rebuild
        return None
    finally:
        if paused:
            gc.enable()


def _write(directory: Path, path: Path, key: str, value) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".rules-", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(_MAGIC + key.encode("ascii"))
                pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)  # atomic: a concurrent reader sees the old file, no file, or this whole one
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        _prune(directory)
    except Exception:  # a read-only or full cache directory only costs speed
        return


def _prune(directory: Path) -> None:
    try:
        files = sorted(directory.glob("rules-*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in files[_KEEP:]:
        try:
            old.unlink()
        except OSError:
            pass


def cached(dirs: list[Path], build: Callable[[list[Path]], object]):
    """build(dirs), or the value a previous build(dirs) stored for the same key."""
    if disabled():
        return build(dirs)
    try:
        key = cache_key(dirs)
    except Exception:
        key = None
    if key is None:
        return build(dirs)
    directory = cache_dir()
    path = directory / f"rules-{key[:32]}.pickle"
    got = _read(path, key)
    if got is not None:
        return got
    value = build(dirs)
    if not getattr(value, "errors", None):  # a failed load is never stored (see the module's docstring)
        _write(directory, path, key, value)
    return value
