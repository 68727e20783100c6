"""The result cache: an unchanged file is not scanned again.

A re-scan of an unchanged tree should cost reading and hashing the files, not parsing and matching
them. One entry per scanned file holds its pickled `FileResult`. An entry is used only when all of
these are what they were when it was stored (never stale is the requirement; a wasted re-scan is the
price of every doubt):

* the entry key (`entry_key`): the run digest (tool version and the bytes of the package's own files and
  of the libraries that parse, match and render (tree-sitter, the grammars, Jinja, MarkupSafe, PyYAML),
  the rule files' contents, every option that changes findings, the toolkit whose header names matchers
  consult, the content of the run's compile database, whose -D/-U flags decide `#if` branches), the file's
  absolute path and its displayed path. The code and rule digests are memoized under
  the files' stat signatures (`stat_sig`: size, mtime, ctime, inode, device), and only for files that had
  not changed within `RACY_NS` of being looked at, so a start costs stats, not reading ~20 MB of libraries;
* the file's content hash (`lookup(key, content_hash)` compares it);
* the *shared* digest of the run's other files: the list of files, every file's `#include` lines (they
  decide a header's language and what includes what) and the `#define`, `#undef` and conditional lines before its
  last `#include` (a file it includes sees those macros, in the branches the preprocessor takes:
  match/shadows.py), and the content of every file that can be
  included (a header suffix, or a base name that some `#include` names). When any file of the run
  (or a file the run read outside it) declares a texture or surface reference, the texture migration
  reads every file that sees it: the shared digest then covers every file's content (`coarse`); so it does
  when a file that can be included calls a mask-less warp intrinsic (CM502 reads its includers' callers);
* the files and directories outside the run that the run read while scanning (headers found through
  `-I`-like searches, directory listings): recorded by an audit hook on `open`/`os.listdir`/
  `os.scandir` (so every matcher's reads count, also those behind per-process memo caches, which are
  filled in the same process), stored once per run as a *dependency set*, and checked by hash. Reads
  whose content is in the run digest itself (the tool's, the rules', the toolkit's names) and the rule
  loader's are made `unrecorded()`.

So editing a `.cu` file that no file includes costs that one file; editing a header, an `#include`
line, a rule, an option, the tool or a file read from outside the run re-scans what may depend on it.

Storage: one SQLite database in the user cache directory (`CUDAMIGRATE_CACHE_DIR`, else
`$XDG_CACHE_HOME/cudamigrate`, else `~/.cache/cudamigrate`), WAL journal, writes in one transaction
at the end of a run; a database that is locked, unreadable or corrupt is ignored silently (a corrupt
one is moved aside and rebuilt), as is an entry that does not unpickle. The size is bounded
(`CUDAMIGRATE_CACHE_MAX_MB`, default 256): the least recently used entries go first. Results that
carry errors are never stored (a timeout or an internal error must be retried, not remembered).

`fix` never writes from a cached result: it scans the bytes it is about to edit. A whole unchanged run is
replayed from its stored report (cudamigrate/pipeline/replay.py, stored in the same database: `replays`), under
exactly the conditions above (`RunFiles`).

Why one module of ~880 lines: the entry key, the dependency audit (what a scan read) and the storage must
agree on what "unchanged" means; split apart, a change to one could make the cache stale without the
others noticing, and staleness is the one failure this module must never have.
"""

from __future__ import annotations

from types import FrameType

import dataclasses
import gc
import hashlib
import json
import os
import pickle
import re
import sqlite3
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..core.stamps import RACY_NS, stat_sig, trusted  # noqa: F401  (RACY_NS: pipeline/replay.py names it here)
from ..read.source import read_regular

SCHEMA = 3  # 3: findings carry `related` locations (a pickle of 2 lacks them): older caches are dropped
DEFAULT_MAX_MB = 256
REPLAYS_KEPT = 32  # whole-run replays kept (trees, options and report formats in use)
CACHE_ENV = "CUDAMIGRATE_CACHE_DIR"
MAX_MB_ENV = "CUDAMIGRATE_CACHE_MAX_MB"
HEADER_SUFFIXES = {".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl", ".inc", ".tcc", ".cuinc", ""}
# a texture/surface *reference* declaration (the removed API whose migration is project-wide)
TEXTURE_REF = re.compile(rb"\b(?:texture|surface)\s*<")
# a mask-less warp intrinsic call: CM502 picks its mask from the callers of the function holding it, also in the
# files of the run that include that file (cudamigrate/match/warp_flow.py), so a header holding one depends on the
# content of its includers
WARP_LEGACY = re.compile(rb"\b__(?:shfl(?:_up|_down|_xor)?|ballot|any|all)\s*\(")
# not anchored at line starts (25x faster on large trees): an `#include` in a comment also counts, which
# only makes the shared digest cover more
INCLUDE_LINE = re.compile(rb"#[ \t]*include\b[^\n]*")
# the lines before a file's last `#include` that decide what the included file sees: its macros, and the conditions
# that make them (and the include) live, dead or undecided (match/shadows.py `includer_macros`)
DEFINE_LINE = re.compile(rb"#[ \t]*(?:define|undef|if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b[^\n]*")
INCLUDE_NAME = re.compile(rb'#[ \t]*include[ \t]*[<"]([^">\n]+)[">]')


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=20).hexdigest()


def digest_of(*parts: Any) -> str:
    h = hashlib.blake2b(digest_size=20)
    for p in parts:
        b = p if isinstance(p, bytes) else str(p).encode("utf-8", "surrogateescape")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


# ----------------------------------------------------------------------------- where
def cache_dir() -> Path:
    """The user cache directory of cudamigrate (created on first write, not here)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "cudamigrate"


def max_bytes_from_env() -> int:
    try:
        return max(1, int(float(os.environ.get(MAX_MB_ENV, DEFAULT_MAX_MB)) * 1024 * 1024))
    except ValueError:
        return DEFAULT_MAX_MB * 1024 * 1024


# ----------------------------------------------------------------------------- what a result depends on
_CODE_DIGEST: str | None = None
# the libraries whose code decides what a scan finds (parsers, grammars, templates, YAML): their files, not only
# their versions (an editable or rebuilt grammar keeps its version)
DEPENDENCY_MODULES = ("tree_sitter", "tree_sitter_cuda", "tree_sitter_cpp", "tree_sitter_c", "jinja2", "markupsafe",
                      "yaml", "_yaml")


def _walk_files(root: str) -> list[str]:
    out: list[str] = []
    if os.path.isfile(root):
        return [root]
    for base, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        out += [os.path.join(base, f) for f in sorted(files) if not f.endswith((".pyc", ".pyo"))]
    return out


def _module_root(name: str) -> str | None:
    try:
        import importlib.util

        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return sorted(spec.submodule_search_locations)[0]
    return spec.origin


def _content_digest(files: list[tuple[str, str]], *head: Any) -> str:
    """Digest of (label, path) files' bytes, labelled; an unreadable file counts as such."""
    parts: list[Any] = list(head)
    for label, p in files:
        try:
            with open(p, "rb") as fh:
                parts += [label, fh.read()]
        except OSError:
            parts += [label, "unreadable"]
    return digest_of(*parts)


def _memoized(memo: "ResultCache | None", kind: str, files: list[tuple[str, str]], *head: Any) -> str:
    """_content_digest, memoized in the result cache under the files' stat signatures: the files are read again
    only when one of them changed (or changed so recently that its stat cannot vouch for its bytes)."""
    now = time.time_ns()
    stamp: list[Any] = [kind, *head]
    ok = True
    for label, p in files:
        try:
            st = os.stat(p)
        except OSError:
            stamp += [label, "missing"]
            continue
        stamp += [label, p, stat_sig(st)]
        ok = ok and trusted(st, now)
    key = kind + ":" + digest_of(*stamp)
    if memo is not None and ok:
        got = memo.memo_get(key)
        if got is not None:
            return got
    value = _content_digest(files, *head)
    if memo is not None and ok:
        memo.memo_put(key, value)
    return value


def code_digest(memo: "ResultCache | None" = None) -> str:
    """The tool version plus the bytes of the package's own files and of the libraries that parse, match and
    render: a development checkout that changes a matcher without bumping the version must not read results
    of the old code."""
    global _CODE_DIGEST
    if _CODE_DIGEST is None:
        from .. import __version__

        pkg = str(Path(__file__).resolve().parent.parent)
        files = [(os.path.relpath(p, pkg), p) for p in _walk_files(pkg)]
        absent = []
        for mod in DEPENDENCY_MODULES:
            root = _module_root(mod)
            if root is None:
                absent.append(mod)
                continue
            files += [(f"{mod}:{os.path.relpath(p, root)}", p) for p in _walk_files(root)]
        _CODE_DIGEST = _memoized(memo, "code", files, __version__, sys.version_info[:2], "absent", *absent)
    return _CODE_DIGEST


def ruleset_digest(rule_dirs: Iterable[Path], memo: "ResultCache | None" = None) -> str:
    """Every file under the rule directories, by relative path and content (rules, data, templates)."""
    files: list[tuple[str, str]] = []
    head: list[Any] = []
    for d in rule_dirs:
        d = Path(d)
        head.append(os.path.abspath(d))
        root = str(d)
        for p in _walk_files(root) if os.path.exists(root) else []:
            files.append((f"{os.path.abspath(d)}:{os.path.relpath(p, root) if p != root else os.path.basename(p)}", p))
    return _memoized(memo, "rules", files, *head)


def _jsonable(o: Any) -> Any:
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return {k: _jsonable(v) for k, v in sorted(dataclasses.asdict(o).items())}
    if isinstance(o, dict):
        return {str(k): _jsonable(v) for k, v in sorted(o.items(), key=lambda kv: str(kv[0]))}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    if isinstance(o, (str, int, float, bool)) or o is None:
        return o
    if isinstance(o, Path):
        return str(o)
    return repr(o)


def options_digest(options: Any, **extra: Any) -> str:
    """Every option that can change a finding (the engine Options dataclass: target, selection,
    keep-compat, rule options, calibration, include roots, ...) and whatever the caller adds."""
    return digest_of(json.dumps({"options": _jsonable(options), "extra": _jsonable(extra)}, sort_keys=True))


def environment_digest() -> str:
    """The toolkit matchers look at: its path and the names of its headers (`shadows._toolkit_names`)."""
    try:
        from ..core.toolkit import cuda_home

        home = cuda_home()
    except Exception:
        home = None
    names: list[str] = []
    if home is not None:
        try:
            names = sorted(n for n in os.listdir(home / "include") if n.endswith(".h"))
        except OSError:
            pass
    return digest_of(str(home), *names)


def run_digest(rule_dirs: Iterable[Path], options: Any, memo: "ResultCache | None" = None, **extra: Any) -> str:
    with unrecorded():  # what the digest reads is in the digest: not a dependency of the results as well
        # the compile database's content: its units' -D/-U decide `#if` branches (read/unit_defines.py); the audit
        # of reads leaves `.json` files out, so a changed flag re-scans the run through this digest
        db = getattr(options, "compile_db", None)
        return digest_of(SCHEMA, code_digest(memo), ruleset_digest(rule_dirs, memo), options_digest(options, **extra),
                         environment_digest(), *([_file_hash(db)] if db else []))


def entry_key(run: str, path: Path | str, display: str) -> str:
    return digest_of(run, os.path.abspath(path), display)


# ----------------------------------------------------------------------------- the run's files together
@dataclass
class TreeState:
    """The run's files as the cache sees them: content hashes and the shared digests."""

    hashes: dict[str, str | None]  # absolute path -> content hash (None: unreadable)
    fine: str  # file list, include lines, contents of includable files
    coarse: str  # every file's content
    texture: bool  # a file of the run declares a texture/surface reference (or an includable one a warp intrinsic)

    def shared(self, texture_outside: bool) -> str:
        return self.coarse if self.texture or texture_outside else self.fine


def tree_state(contents: Iterable[tuple[str, bytes | None]]) -> TreeState:
    """From (absolute path, bytes or None) of every file of the run."""
    items = sorted(contents, key=lambda x: x[0])
    hashes: dict[str, str | None] = {}
    included: set[bytes] = set()
    includes: list[Any] = []
    texture = False
    for path, data in items:
        hashes[path] = None if data is None else content_hash(data)
        if data is None:
            includes += [path, "unreadable"]
            continue
        if b"include" in data:
            lines = [m.group(0).rstrip(b"\r") for m in INCLUDE_LINE.finditer(data)]
            includes += [path, b"\n".join(lines)]
            if lines and b"define" in data:  # a file it includes sees the macros defined before (match/shadows.py)
                last = data.rfind(lines[-1])
                includes += [b"\n".join(m.rstrip(b"\r") for m in DEFINE_LINE.findall(data, 0, last))]
            included |= {os.path.basename(m) for m in INCLUDE_NAME.findall(data)}
        if not texture and (b"texture" in data or b"surface" in data) and TEXTURE_REF.search(data):
            texture = True
    shared: list[Any] = []
    by_path = dict(items)
    for path, h in hashes.items():
        if os.path.splitext(path)[1].lower() in HEADER_SUFFIXES or os.path.basename(path).encode(
                "utf-8", "surrogateescape") in included:
            shared += [path, str(h)]
            if not texture and h is not None:
                data = by_path[path]
                texture = data is not None and b"__" in data and WARP_LEGACY.search(data) is not None
    fine = digest_of("fine", *hashes.keys(), "includes", *includes, "shared", *shared)
    coarse = digest_of("coarse", *(x for kv in hashes.items() for x in (kv[0], str(kv[1]))))
    return TreeState(hashes, fine, coarse, texture)


# ----------------------------------------------------------------------------- reads outside the run
_NOT_SOURCE = (".py", ".pyc", ".so", ".yaml", ".yml", ".json", ".toml", ".j2", ".csv", ".tsv", ".txt", ".cfg",
               ".pth", ".db", ".db-wal", ".db-shm", ".pickle", ".pkl", ".md", ".typed")
_SOURCE_LIKE = HEADER_SUFFIXES | {".cu", ".cpp", ".cc", ".cxx", ".c", ".c++", ".cp", ".hip", ".cuinc", ".ipp", ".txx"}
_OPENED: set[str] = set()
_LISTED: set[str] = set()
_HOOKED = False
_PAUSED = 0  # > 0: inside `unrecorded()`
_SKIP_PREFIXES: tuple[str, ...] = ()
_SKIP_DIRS: frozenset[str] = frozenset()  # sys.path entries: the import system lists them
_PKG = str(Path(__file__).resolve().parent.parent) + os.sep


def _from_cudamigrate() -> bool:
    """Whether cudamigrate's own code is on the stack (reads of a test harness or a host program that embeds
    cudamigrate, such as pytest creating its temporary directories, are not the scan's dependencies)."""
    f: FrameType | None = sys._getframe(2)
    while f is not None:
        if f.f_code.co_filename.startswith(_PKG):
            return True
        f = f.f_back
    return False


class unrecorded:
    """Reads that are not the scan's dependencies, because what they read is part of the run digest itself
    (the tool's and the rules' files, the toolkit's header names) or is the tool's own state (the rule
    cache): recorded, a rule cache rewrite or a listing of the rule directories would have thrown away
    every cached result."""

    def __enter__(self) -> None:
        global _PAUSED
        _PAUSED += 1

    def __exit__(self, *exc: object) -> None:
        global _PAUSED
        _PAUSED -= 1


def _audit(event: str, args: tuple) -> None:
    if _PAUSED:
        return
    if event == "open":
        p = args[0]
        if isinstance(p, int) or p is None:
            return
        mode = args[1] if len(args) > 1 else None
        if isinstance(mode, str) and ("w" in mode or "a" in mode or "x" in mode or "+" in mode):
            return
        flags = args[2] if len(args) > 2 else 0
        if isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            return
        try:
            s = os.fsdecode(p)
        except Exception:
            return
        if s.endswith(_NOT_SOURCE) or s.startswith(_SKIP_PREFIXES) or not _from_cudamigrate():
            return
        _OPENED.add(os.path.abspath(s))
    elif event in ("os.listdir", "os.scandir"):
        p = args[0] if args else None
        if p is None or isinstance(p, int):
            p = "."
        try:
            s = os.path.abspath(os.fsdecode(p))
        except Exception:
            return
        if s not in _SKIP_DIRS and not (s + os.sep).startswith(_SKIP_PREFIXES) and _from_cudamigrate():
            _LISTED.add(s)


def install_read_recorder() -> None:
    """Record, for the whole process, every file opened for reading and every directory listed (an audit
    hook: it sees the reads of every matcher, whatever helper it goes through). Python's own files and
    the cache are left out. Installed once; audit hooks cannot be removed, the cost is a few string tests
    per open."""
    global _HOOKED, _SKIP_PREFIXES, _SKIP_DIRS
    if _HOOKED:
        return
    _SKIP_DIRS = frozenset(os.path.abspath(p or ".") for p in sys.path)
    pkg = str(Path(__file__).resolve().parent.parent)
    _SKIP_PREFIXES = tuple(sorted({os.path.abspath(p) + os.sep for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}}
                                  | {pkg + os.sep, "/proc/", "/sys/", "/dev/"}))
    sys.addaudithook(_audit)
    _HOOKED = True


def recorded_reads() -> tuple[set[str], set[str]]:
    """Files opened and directories listed in this process so far (all of them: a memo cache filled for
    an earlier file stands for a read that a later file relies on)."""
    return set(_OPENED), set(_LISTED)


def forget_reads() -> None:
    """Start the process's record afresh. A process that makes several runs (the test suite, a program using the
    Python API) keeps every earlier run's reads in the record, so a later run's results also depend on them:
    on the listing of every directory an earlier run read from, `/tmp` included, where any compiler's
    temporaries come and go. That costs re-scans, never a stale result; forgetting is right when the earlier
    runs' files have nothing to do with the next (each test's own tree), and memo caches filled by them cannot
    answer for the next run's files."""
    global _SENT_O, _SENT_L
    _OPENED.clear()
    _LISTED.clear()
    _SENT_O, _SENT_L = set(), set()


def pack(value: Any) -> bytes | None:
    """A result as the cache stores it (compressed pickle), or None when it cannot be pickled. Workers pack
    their results themselves: the parent, which stores every result of the run, would otherwise do all the
    pickling and compressing of a parallel run serially."""
    try:
        return zlib.compress(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), 1)
    except Exception:
        return None


def unpack(blob: bytes) -> Any:
    """`pack`'s inverse."""
    return pickle.loads(zlib.decompress(blob))


def new_reads() -> tuple[list[str], list[str]]:
    """What this process read since the last call (a worker sends it back with each result)."""
    global _SENT_O, _SENT_L
    o, ls = sorted(_OPENED - _SENT_O), sorted(_LISTED - _SENT_L)
    _SENT_O |= set(o)
    _SENT_L |= set(ls)
    return o, ls


_SENT_O: set[str] = set()
_SENT_L: set[str] = set()


def _listing(d: str) -> str | None:
    """A directory's source-like names (an in-tree build writing `.o` files next to the sources does not
    count; a header appearing where an `#include` may find it does)."""
    try:
        names = os.listdir(d)
    except OSError:
        return None
    return digest_of(*sorted(n for n in names if os.path.splitext(n)[1].lower() in _SOURCE_LIKE))


_DEP_LIMIT = 1 << 30  # bytes hashed per dependency: all of any real header


def _read_dep(p: str) -> bytes | None:
    """A dependency's bytes, None when unreadable; a FIFO or device that carries a source name reads as
    absent instead of blocking the run (the matchers refused to read it too)."""
    try:
        return read_regular(p, _DEP_LIMIT)
    except OSError:
        return None


def _file_hash(p: str) -> str | None:
    data = _read_dep(p)
    return None if data is None else content_hash(data)


@dataclass
class DepSet:
    """Files and directory listings outside the run, with their hashes when stored."""

    files: dict[str, str | None] = field(default_factory=dict)
    dirs: dict[str, str | None] = field(default_factory=dict)
    texture_ref: bool = False  # a file read by the run itself declares a texture/surface reference
    _memo: str | None = field(default=None, init=False, repr=False, compare=False)  # digest(), once

    @classmethod
    def capture(cls, opened: Iterable[str], listed: Iterable[str], run_files: set[str],
                this_run: Iterable[str] = ()) -> "DepSet":
        """`opened`: every read of the process (memo caches stand for earlier reads); `this_run`: the reads
        made during this run, whose texture declarations decide the coarse mode (the texture migration reads
        the files it needs through the run's own project index, never from a memo of another run)."""
        ours = set(this_run)
        files: dict[str, str | None] = {}
        texture = False
        for p in sorted(set(opened) - run_files):
            if os.path.isdir(p):
                continue
            data = _read_dep(p)  # read once: hashed, and searched for texture declarations when this run read it
            files[p] = None if data is None else content_hash(data)
            texture = texture or (p in ours and data is not None and TEXTURE_REF.search(data) is not None)
        dirs = {os.path.dirname(p) for p in files} | set(listed)
        return cls(files, {d: _listing(d) for d in sorted(dirs)}, texture)

    def digest(self) -> str:
        """Computed once: `finish` stores every result of a run with one DepSet, and serialising it for each
        was a serial cost of the parent that grew with the run's files."""
        if self._memo is None:
            self._memo = digest_of(json.dumps([self.files, self.dirs, self.texture_ref], sort_keys=True))
        return self._memo

    def valid(self) -> bool:
        return all(_file_hash(p) == h for p, h in self.files.items()) and \
            all(_listing(d) == h for d, h in self.dirs.items())

    def texture(self) -> bool:
        return self.texture_ref


# ----------------------------------------------------------------------------- the store
@dataclass
class Entry:
    value: Any
    shared: str
    depset: str


class ResultCache:
    """Entries by key; every failure of the database turns the cache off for the run, silently."""

    def __init__(self, path: Path | None = None, max_bytes: int | None = None, freeze: bool = False):
        """`freeze`: results looked up live until the process ends (the CLI): `gc.freeze()` them."""
        self.freeze = freeze
        self.path = path or cache_dir() / "results.sqlite"
        self.max_bytes = max_bytes or max_bytes_from_env()
        self.db: sqlite3.Connection | None = None
        self._touched: list[str] = []
        self._pending: list[tuple[str, str, str, str, bytes]] = []
        self._pending_deps: dict[str, bytes] = {}
        self._depsets: dict[str, DepSet | None] = {}
        self._pending_memo: dict[str, str] = {}
        self._pending_replays: dict[str, bytes] = {}
        self._touched_replays: list[str] = []
        self._open()

    # -- connection
    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        db = sqlite3.connect(str(self.path), timeout=5.0, isolation_level=None)
        db.execute("PRAGMA busy_timeout=5000")
        try:
            db.execute("PRAGMA journal_mode=WAL")
            # a cache: a commit lost to a power cut costs a re-scan; WAL keeps the file consistent without an
            # fsync per commit (two of them were 10 ms of a one-file run)
            db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError:
            pass
        db.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
        row = db.execute("SELECT v FROM meta WHERE k='schema'").fetchone()
        if row is not None and row[0] != str(SCHEMA):
            for table in ("entries", "depsets", "memo", "replays"):
                db.execute(f"DROP TABLE IF EXISTS {table}")
        db.execute("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, content TEXT, shared TEXT,"
                   " depset TEXT, value BLOB, size INTEGER, used REAL)")
        db.execute("CREATE TABLE IF NOT EXISTS depsets (id TEXT PRIMARY KEY, body BLOB, used REAL)")
        db.execute("CREATE TABLE IF NOT EXISTS memo (k TEXT PRIMARY KEY, v TEXT, used REAL)")
        db.execute("CREATE TABLE IF NOT EXISTS replays (key TEXT PRIMARY KEY, body BLOB, size INTEGER, used REAL)")
        if row is None or row[0] != str(SCHEMA):
            db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA),))
        try:
            os.chmod(self.path, 0o600)
        except OSError:
            pass
        return db

    def _open(self) -> None:
        try:
            self.db = self._connect()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                self.db = None  # another run holds it: run without the cache
                return
            self._move_aside()  # corrupt: start again
            try:
                self.db = self._connect()
            except (sqlite3.Error, OSError):
                self.db = None
        except OSError:
            self.db = None

    def _move_aside(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            try:
                os.replace(str(self.path) + suffix, f"{self.path}{suffix}.corrupt")
            except OSError:
                pass

    @property
    def enabled(self) -> bool:
        return self.db is not None

    def _fail(self) -> None:
        try:
            if self.db is not None:
                self.db.close()
        except sqlite3.Error:
            pass
        self.db = None

    # -- entries
    def lookup(self, key: str, content: str) -> Entry | None:
        """The entry stored under `key` for exactly this content hash, or None."""
        got = self.lookup_many([(key, content)])
        return got.get(key)

    def lookup_many(self, wanted: list[tuple[str, str]]) -> dict[str, Entry]:
        if self.db is None or not wanted:
            return {}
        out: dict[str, Entry] = {}
        want = dict(wanted)
        keys = list(want)
        # unpickling builds ~6 objects per finding: the cyclic collector, run again and again over the growing
        # heap, doubled the cost (0.5 -> 0.2 s for 11,000 findings); results hold no cycles to collect
        paused = gc.isenabled()
        gc.disable()
        # the least-recently-used order needs no precision finer than an hour: rewriting every entry's time
        # on every run grew the journal by the whole tree each time
        stale_use, touched = time.time() - 3600, []
        try:
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                rows = self.db.execute(
                    f"SELECT key, content, shared, depset, value, used FROM entries WHERE key IN ({','.join('?' * len(part))})",
                    part).fetchall()
                for key, content, shared, depset, value, used in rows:
                    if content != want.get(key):
                        continue
                    try:
                        obj = pickle.loads(zlib.decompress(value))
                    except Exception:
                        continue  # an entry that does not read back is a miss
                    out[key] = Entry(obj, shared, depset)
                    if not isinstance(used, (int, float)) or used < stale_use:
                        touched.append(key)
        except sqlite3.Error:
            self._fail()
            return {}
        finally:
            if paused:
                if self.freeze:
                    gc.freeze()  # they live as long as the run: never walked by the collector
                gc.enable()
        self._touched += touched
        return out

    def depset(self, ident: str) -> DepSet | None:
        if ident in self._depsets:
            return self._depsets[ident]
        got: DepSet | None = None
        if self.db is not None:
            try:
                row = self.db.execute("SELECT body FROM depsets WHERE id=?", (ident,)).fetchone()
                if row is not None:
                    files, dirs, tex = json.loads(zlib.decompress(row[0]))
                    got = DepSet(dict(files), dict(dirs), bool(tex))
            except (sqlite3.Error, ValueError, zlib.error, TypeError):
                got = None
        self._depsets[ident] = got
        return got

    # -- digests memoized under stat signatures (code_digest, ruleset_digest)
    def memo_get(self, key: str) -> str | None:
        if key in self._pending_memo:
            return self._pending_memo[key]
        if self.db is None:
            return None
        try:
            row = self.db.execute("SELECT v FROM memo WHERE k=?", (key,)).fetchone()
        except sqlite3.Error:
            self._fail()
            return None
        return None if row is None else str(row[0])

    def memo_put(self, key: str, value: str) -> None:
        self._pending_memo[key] = value

    # -- a whole run's replay (cudamigrate/pipeline/replay.py): one opaque body per key
    def replay_get(self, key: str) -> bytes | None:
        if self.db is None:
            return None
        try:
            row = self.db.execute("SELECT body FROM replays WHERE key=?", (key,)).fetchone()
        except sqlite3.Error:
            self._fail()
            return None
        if row is None:
            return None
        self._touched_replays.append(key)
        return bytes(row[0])

    def replay_put(self, key: str, body: bytes) -> None:
        self._pending_replays[key] = body

    def store(self, key: str, content: str, value: Any, shared: str = "", depset: DepSet | None = None,
              blob: bytes | None = None) -> None:
        """Queue an entry; `flush` writes the queue in one transaction. `blob`: `pack(value)` when a worker
        process computed it already (the parent then does not pickle and compress every result itself)."""
        if blob is None:
            blob = pack(value)
        if blob is None:
            return  # an unpicklable result is simply not cached
        ident = ""
        if depset is not None:
            ident = depset.digest()
            if ident not in self._pending_deps:
                self._pending_deps[ident] = zlib.compress(
                    json.dumps([depset.files, depset.dirs, depset.texture_ref]).encode(), 1)
        self._pending.append((key, content, shared, ident, blob))

    def flush(self) -> None:
        db = self.db
        if db is None:
            return
        if not (self._pending or self._pending_deps or self._touched or self._pending_memo or self._pending_replays
                or self._touched_replays):
            return  # nothing to write: no write lock taken
        now = time.time()
        try:
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT OR REPLACE INTO memo VALUES (?, ?, ?)",
                           [(k, v, now) for k, v in self._pending_memo.items()])
            db.executemany("INSERT OR REPLACE INTO replays VALUES (?, ?, ?, ?)",
                           [(k, b, len(b), now) for k, b in self._pending_replays.items()])
            if self._touched_replays:
                db.executemany("UPDATE replays SET used=? WHERE key=?", [(now, k) for k in self._touched_replays])
            for ident, body in self._pending_deps.items():
                db.execute("INSERT OR REPLACE INTO depsets VALUES (?, ?, ?)", (ident, body, now))
            db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?)",
                           [(k, c, s, d, b, len(b), now) for k, c, s, d, b in self._pending])
            if self._touched:
                db.executemany("UPDATE entries SET used=? WHERE key=?", [(now, k) for k in self._touched])
            if self._pending or self._pending_replays:
                self._prune(db)
            db.execute("COMMIT")
        except sqlite3.Error:
            try:
                db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
        finally:
            self._pending.clear()
            self._pending_deps.clear()
            self._touched.clear()
            self._pending_memo.clear()
            self._pending_replays.clear()
            self._touched_replays.clear()

    def _prune(self, db: sqlite3.Connection) -> None:
        """Least recently used entries out until the values fit in max_bytes; unused dependency sets out."""
        total = db.execute("SELECT COALESCE(SUM(size), 0) FROM entries").fetchone()[0] if self._pending else 0
        if total > self.max_bytes:
            excess = total - int(self.max_bytes * 0.8)
            rows = db.execute("SELECT key, size FROM entries ORDER BY used ASC").fetchall()
            drop = []
            for key, size in rows:
                if excess <= 0:
                    break
                drop.append((key,))
                excess -= size
            db.executemany("DELETE FROM entries WHERE key=?", drop)
            db.execute("DELETE FROM depsets WHERE id NOT IN (SELECT DISTINCT depset FROM entries)")
        # replays hold whole reports: the most recently used REPLAYS_KEPT, within a fifth of the size bound
        rows = db.execute("SELECT key, size FROM replays ORDER BY used DESC").fetchall()
        budget, drop = self.max_bytes // 5, []
        for n, (key, size) in enumerate(rows):
            budget -= size
            if n >= REPLAYS_KEPT or budget < 0:
                drop.append((key,))
        db.executemany("DELETE FROM replays WHERE key=?", drop)
        db.execute("DELETE FROM memo WHERE used < ?", (time.time() - 30 * 86400,))

    def close(self) -> None:
        self.flush()
        self._fail()


# ----------------------------------------------------------------------------- one cached run
def read_limited(path: str, limit: int) -> tuple[bytes | None, tuple[int, ...] | None]:
    """The bytes of a regular file of at most `limit` bytes and its stat signature (taken before reading)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None, None
    try:
        import stat as statmod

        st = os.fstat(fd)
        if not statmod.S_ISREG(st.st_mode) or st.st_size > limit:
            return None, None
        if b"\x00" in os.pread(fd, 65536, 0):  # binary: scanning refuses it from this head too, unread
            return None, None
        chunks, left, size = [], limit + 1, st.st_size + 1  # one sized read: no second copy from a join
        while left > 0:
            b = os.read(fd, min(left, size))
            size = 1 << 20
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        data = b"".join(chunks)
        return (None, None) if len(data) > limit else (data, stat_sig(st))
    except OSError:
        return None, None
    finally:
        os.close(fd)


def stat_of(path: str) -> tuple[int, ...] | None:
    try:
        return stat_sig(os.stat(path))
    except OSError:
        return None


@dataclass
class RunFiles:
    """A complete cached run's files, for a replay (cudamigrate/pipeline/replay.py): (absolute path, stat signature or
    None when the stat cannot vouch for the bytes, content hash) of each file, and the dependency sets that
    their results rest on."""

    files: list[tuple[str, tuple[int, ...] | None, str]]
    depsets: list[str]


@dataclass
class CachedRun:
    """One scan's use of the cache: which files can be answered from it (`partition`), and storing
    what the scan found for the others (`record`, then `finish`).

    `items` are (path, display) pairs of the run's files, in report order. A result is stored only when
    the bytes the engine scanned hash to what `partition` read (`record`'s `scanned`), it has no errors,
    and no file of the run changed size or mtime while the run went on."""

    cache: ResultCache
    run: str
    items: list[tuple[str, str]]
    max_bytes: int = 16 * 1024 * 1024
    state: TreeState | None = None
    keys: list[str] = field(default_factory=list)
    contents: list[str | None] = field(default_factory=list)
    stats: dict[str, tuple[int, ...] | None] = field(default_factory=dict)
    _store: dict[int, Any] = field(default_factory=dict)
    _blobs: dict[int, bytes] = field(default_factory=dict)  # _store's results packed by the workers
    _valid_depsets: dict[str, bool] = field(default_factory=dict)
    looked_ns: int = 0  # when the files were read (their stats vouch for their bytes only if older)
    hits: int = 0
    used_depsets: set[str] = field(default_factory=set)
    complete: RunFiles | None = None  # after `finish`: every file's result is cached (hit or stored)

    def _look(self, paths: list[str]) -> list[tuple[str, bytes | None, tuple[int, ...] | None, str | None]]:
        """(path, bytes, stat signature, content hash) of each file, in order. Many files are read and hashed
        by threads (reads and BLAKE2 release the GIL): done one by one, this was a serial part of a parallel
        run that grows with the tree while the workers wait."""
        def look(ap: str) -> tuple[str, bytes | None, tuple[int, ...] | None, str | None]:
            data, st = read_limited(ap, self.max_bytes)
            return ap, data, st, None if data is None else content_hash(data)

        if len(paths) < 64:
            return [look(ap) for ap in paths]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
            return list(pool.map(look, paths, chunksize=32))

    def partition(self) -> tuple[dict[int, Any], list[int]]:
        """({index: cached FileResult}, indexes to scan)."""
        datas: list[tuple[str, bytes | None]] = []
        self.looked_ns = time.time_ns()
        paths = [os.path.abspath(path) for path, _ in self.items]
        for (ap, data, st, content), (_, display) in zip(self._look(paths), self.items, strict=True):
            self.stats[ap] = st
            datas.append((ap, data))
            self.keys.append(entry_key(self.run, ap, display))
            self.contents.append(content)
        self.state = tree_state(datas)
        wanted = [(k, c) for k, c in zip(self.keys, self.contents, strict=True) if c is not None]
        found = self.cache.lookup_many(wanted)
        hits: dict[int, Any] = {}
        todo: list[int] = []
        for i, key in enumerate(self.keys):
            e = found.get(key)
            if e is not None and self._usable(e):
                hits[i] = e.value
                self.used_depsets.add(e.depset)
            else:
                todo.append(i)
        self.hits = len(hits)
        return hits, todo

    def _usable(self, e: Entry) -> bool:
        assert self.state is not None
        if e.depset not in self._valid_depsets:
            ds = self.cache.depset(e.depset) if e.depset else DepSet()
            ok = ds is not None and ds.valid()
            self._valid_depsets[e.depset] = ok
            self._valid_depsets["texture:" + e.depset] = bool(ok and ds is not None and ds.texture())
        if not self._valid_depsets[e.depset]:
            return False
        return e.shared == self.state.shared(self._valid_depsets["texture:" + e.depset])

    def record(self, index: int, result: Any, scanned: str | None, blob: bytes | None = None) -> None:
        """Keep `result` of item `index` for `finish`, when `scanned` (the content hash of the bytes the
        engine read) is the hash `partition` saw and the result carries no error. `blob`: `pack(result)`,
        when already computed."""
        if scanned is None or scanned != self.contents[index]:
            return
        if getattr(result, "errors", None) or getattr(result, "internal", 0):
            return
        self._store[index] = result
        if blob is not None:
            self._blobs[index] = blob

    def finish(self, opened: Iterable[str], listed: Iterable[str], this_run: Iterable[str] = ()) -> int:
        """Store the recorded results with the process's reads outside the run's files (`this_run`: those
        made during this run); how many were stored. Sets `complete` when every file's result is cached."""
        assert self.state is not None
        try:
            if any(stat_of(p) != st for p, st in self.stats.items()):
                return 0  # a file changed during the run: what was scanned may not be what was hashed
            depsets = set(self.used_depsets)
            if self._store:
                deps = DepSet.capture(opened, listed, set(self.state.hashes), this_run)
                shared = self.state.shared(deps.texture())
                for i, res in sorted(self._store.items()):
                    self.cache.store(self.keys[i], self.contents[i] or "", res, shared, deps, self._blobs.get(i))
                depsets.add(deps.digest())
            if self.hits + len(self._store) == len(self.items):
                files = []
                for (path, _), content in zip(self.items, self.contents, strict=True):
                    ap = os.path.abspath(path)
                    st = self.stats.get(ap)
                    files.append((ap, st if st is not None and trusted(st, self.looked_ns) else None, content or ""))
                self.complete = RunFiles(files, sorted(depsets))
            return len(self._store)
        finally:
            self.cache.flush()
