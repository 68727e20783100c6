"""A small per-project declaration index: what one file cannot tell about itself.

Legacy code bases keep their declarations in project headers: a class whose `cudaDeviceProp` member
is read as `this->prop.clockRate` in a .cu file, an error macro `#define CUERR { ... }` written after
a launch without `;`, a texture reference declared in `textures.cuh` and bound in `main.cu`. The
tree-sitter pass sees one file at a time, so this index follows the project's own `#include "..."`
files (never system headers) and answers, cheaply and from text:

* `reachable(path, data)`: the project headers a file reaches through `#include "..."` (and through
  `#include <...>` when that names a file of the run);
* `statement_macros(path, data)`: object-like macros, defined in the file or those headers, whose
  body is a statement (`{ ... }` or ending in `;`): a use written without `;` is a whole statement;
* `paste_macros(path, data, live)`: function-like macros, defined in the file or those headers, that paste an
  API prefix onto their argument (`#define cuda(fn) check(cuda##fn)`; parse/pasting.py); with `live` (the
  preprocessor model's walk, match/ppenv.py), only those in branches and headers the preprocessor may take;
* `member_types(path, data, member, owner)`: the declared types of a class/struct member of that
  name in the file or its headers (`prop` -> `cudaDeviceProp`);
* `project_member_type(ctx, owner, member, at)`: the same for a matcher (match/matchers.py's
  `member_expression_type` builds on it) (CM503: `this->prop.clockRate`, `gpu.m_props.computeMode`, a bare member in a method);
* `includers(path)`: the files of the run (the `files` given) that reach `path`, for migrations that
  must change a header together with every file that uses what it declares.

Everything is read lazily and cached per index (one index per run); a file that cannot be read is
simply not followed.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import tree_sitter as ts

from ..core.linestart import ConditionIndex, condition_index, directive, enclosing_condition, line_start_matches
from ..core.stamps import settled
from ..parse.pasting import PasteMacro, merge, merged, paste_definitions, paste_macros

# (from the `#`: `line_start_matches` keeps those at the start of a line; cudamigrate/core/linestart.py says why)
LOCAL_INCLUDE = directive(rb'#[ \t]*include[ \t]*"([^"\n]+)"')
# `#include <mummergpu_kernel.cu>` (found through -I): followed only when it names a file of the run
ANGLE_INCLUDE = directive(rb'#[ \t]*include[ \t]*<([^>\n]+)>')
# `#define NAME body` (object-like: no `(` right after the name), body up to the end of the logical line
_OBJECT_DEFINE = directive(rb"#[ \t]*define[ \t]+([A-Za-z_]\w*)(?![\w(])([^\n\\]*(?:\\(?:\r?\n)?[^\n\\]*)*)")
_COMMENT = re.compile(rb"/\*.*?\*/|//[^\n]*", re.S)
_CONT = re.compile(rb"\\\r?\n")
MAX_DEPTH = 8
# Which `#define`/`#include` lines the preprocessor takes (match/ppenv.py's `live_directives`, bound to how the file
# is compiled): called with the file's key, its bytes and this index's include resolution (`include_target`);
# answers file -> line start -> True (live), None (undecided) or False (dead).
LiveWalk = Callable[[str, bytes, Callable[[str, str, bool], "str | None"]], Mapping[str, Mapping[int, "bool | None"]]]
HEADER_SUFFIXES = {".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl", ".inc", ".tcc", ""}
MAX_HEADER_BYTES = 2 * 1024 * 1024


def statement_body(body: bytes) -> bool:
    """A macro body that is a whole statement: a braced block (`{ ... }`, `if (e) { ... }`) or text
    ending in `;`. Its uses need no `;` after them, and tree-sitter, which does not expand macros,
    then glues the next statement to the macro name (`CUERR cudaThreadSynchronize();` reads as a
    declaration)."""
    text = _COMMENT.sub(b" ", _CONT.sub(b" ", body)).strip()
    if not text:
        return False
    if text.endswith(b";"):
        return True
    if text.endswith(b"}") and text.count(b"{") == text.count(b"}") and text.count(b"{") > 0:
        return not re.match(rb"(struct|class|union|enum|namespace|extern)\b", text)
    return False


@dataclass
class ClassMembers:
    """Members of one class/struct: name -> declared type text (normalized spacing)."""

    owner: str
    members: dict[str, str] = field(default_factory=dict)


@dataclass
class ProjectIndex:
    """Per-run index of project files; `files` are the files the run processes (for `includers`)."""

    files: list[Path] = field(default_factory=list)
    _bytes: dict[Path, bytes | None] = field(default_factory=dict, repr=False)
    _includes: dict[Path, list[Path]] = field(default_factory=dict, repr=False)
    _macros: dict[Path, tuple[frozenset[str], frozenset[str]]] = field(default_factory=dict, repr=False)
    _members: dict[Path, list[ClassMembers]] = field(default_factory=dict, repr=False)
    _pastes: dict[Path, dict[str, PasteMacro]] = field(default_factory=dict, repr=False)
    _includers: dict[Path, list[Path]] | None = field(default=None, repr=False)
    _by_basename: dict[str, list[Path]] | None = field(default=None, repr=False)
    cache: dict = field(default_factory=dict, repr=False)  # for matchers' own per-run results
    _keys: dict[Path, Path] = field(default_factory=dict, repr=False)
    _in_run: dict[tuple[Path, str], Path | None] = field(default_factory=dict, repr=False)
    _last_reachable: tuple[Path, bytes | None, tuple[Path, ...]] | None = field(default=None, repr=False)
    _stamps: dict[Path, tuple[int, int, int] | None] = field(default_factory=dict, repr=False)
    _racy: bool = field(default=False, repr=False)  # a file read changed too close to its read (core/stamps)

    def _key(self, path: Path) -> Path:
        """`_key(path)`, remembered for the run: resolving symlinks costs an lstat per path component, and
        every scanned file resolves each of its includes (14 % of a scan of cuda-samples). Directories are
        remembered too, so a new path in a known directory costs one lstat."""
        got = self._keys.get(path)
        if got is None:
            parent = path.parent
            if path.name not in ("", ".", "..") and parent != path and not os.path.islink(path):
                # what realpath does: the directory resolved (once per run), then a name that is no link
                got = self._key(parent) / path.name
            else:
                got = _key(path)
            self._keys[path] = got
        return got

    # ------------------------------------------------------------------ files and includes
    def read(self, path: Path) -> bytes | None:
        """The file's bytes as first read in this run (headers are kept; other files are read again)."""
        path = self._key(path)
        if path in self._bytes:
            return self._bytes[path]
        stamp = _stamp(path)
        try:
            data = path.read_bytes() if stamp is not None and stamp[1] <= MAX_HEADER_BYTES else None
        except OSError:
            data = None
        if path.suffix.lower() in HEADER_SUFFIXES:
            self._bytes[path] = data
        # every file as first read, not only the headers kept: what the index derives from a file and keeps (its
        # includes, class members, statement macros) is derived from a `.cu` it includes too (`#include "kernel.cu"`)
        if path not in self._stamps:
            self._note(path, stamp)
        return data

    def watch(self, path: Path) -> None:
        """Count a file read outside `read` (the compile database: read/unit_defines.py) in `unchanged`, as it is
        now: what the index keeps from it goes stale with it."""
        self._note(Path(os.path.abspath(path)), _stamp(path))

    def _note(self, path: Path, stamp: tuple[int, int, int] | None) -> None:
        """Keep `path`'s stamp for `unchanged`; one taken too close to the file's change proves nothing later."""
        self._stamps[path] = stamp
        self._racy = self._racy or (stamp is not None and not settled(stamp[0], stamp[2]))

    def unchanged(self) -> bool:
        """Whether every file this index read is as it was first read (same modification time, size and change
        time; one that was missing still is). An index lives for one CLI run, where files do not change under it;
        the editor server keeps one across keystrokes and starts a new one when this is False (a saved header
        edit). False too when a file had changed within core/stamps.RACY_NS of being read: on a filesystem with
        coarse times a second save in the same tick keeps the stamp, so such a read proves nothing later."""
        return not self._racy and all(_stamp(p) == st for p, st in self._stamps.items())

    @property
    def size(self) -> int:
        """How many files this index read and keeps facts of (what a long-lived holder bounds)."""
        return len(self._stamps)

    def resolve(self, includer: Path, name: str) -> Path | None:
        """`#include "name"` from `includer`: its own directory first (what compilers do), then a unique
        file of the run whose path ends with `name` (headers under an -I directory we are not told of)."""
        cand = self._key(includer.parent / name)
        if os.path.isfile(cand):  # False, not OSError, for a name too long for the OS (`#include "((((...`)
            return cand
        by_name = self._by_basename_map()
        suffix = "/" + name.lstrip("./")
        hits = [f for f in by_name.get(Path(name).name, []) if str(f).endswith(suffix)]
        return nearest(self._key(includer), hits)

    def resolve_in_run(self, includer: Path, name: str) -> Path | None:
        """`#include <name>` when it is a file of the run (next to the includer, or the one whose path ends
        with `name`); toolkit and system headers never are."""
        memo = self._in_run  # by directory: the files of a directory say the same `#include <x.h>`
        key = (includer.parent, name)
        if key in memo:
            return memo[key]
        by_name = self._by_basename_map()
        cand = self._key(includer.parent / name)
        if cand in by_name.get(cand.name, []):
            memo[key] = cand
            return cand
        suffix = "/" + name.lstrip("./")
        hits = [f for f in by_name.get(Path(name).name, []) if str(f).endswith(suffix)]
        memo[key] = got = nearest(self._key(includer), hits)
        return got

    def _by_basename_map(self) -> dict[str, list[Path]]:
        if self._by_basename is None:
            self._by_basename = {}
            dirs: dict[Path, Path] = {}
            for f in self.files:
                k = self._keys.get(f)
                if k is None:
                    if f.name in ("", ".", "..") or os.path.islink(f):
                        k = self._key(f)
                    else:  # not a link itself: its directory resolved once stands for it (3x faster on 2,000 files)
                        d = dirs.get(f.parent)
                        if d is None:
                            d = dirs[f.parent] = _key(f.parent)
                        k = self._keys[f] = d / f.name
                self._by_basename.setdefault(k.name, []).append(k)
        return self._by_basename

    def includes(self, path: Path, data: bytes | None = None) -> list[Path]:
        """Project headers `path` includes directly, in order."""
        key = self._key(path)
        if data is None and key in self._includes:
            return self._includes[key]
        out: list[Path] = []
        for _, inc in self.include_sites(key, data):
            if inc is not None and inc not in out:
                out.append(inc)
        self._includes[key] = out
        return out

    def include_sites(self, path: Path, data: bytes | None = None) -> list[tuple[int, Path | None]]:
        """(byte offset of the directive, the project header it names or None) of each `#include` of `path`,
        in order."""
        key = self._key(path)
        data = self.read(key) if data is None else data
        found: list[tuple[int, Path | None]] = []
        for at, m in line_start_matches(LOCAL_INCLUDE, data or b""):
            found.append((at, self.resolve(key, m.group(1).decode("utf-8", "replace"))))
        if self.files and b"<" in (data or b""):
            for at, m in line_start_matches(ANGLE_INCLUDE, data or b""):
                found.append((at, self.resolve_in_run(key, m.group(1).decode("utf-8", "replace"))))
        return sorted(found, key=lambda x: x[0])

    def include_target(self, includer: str, name: str, quoted: bool) -> str | None:
        """The project file `#include "name"` (`quoted`) or `#include <name>` in `includer` names, as
        `include_sites` resolves it (for a preprocessor walk that must follow the same graph)."""
        if quoted:
            got = self.resolve(Path(includer), name)
        else:
            got = self.resolve_in_run(Path(includer), name) if self.files else None
        return None if got is None else str(got)

    def reachable(self, path: Path, data: bytes | None = None) -> list[Path]:
        """Project headers reached from `path` through `#include "..."`, breadth-first, without `path`. The last
        answer is kept: a scanned file asks several times with the same bytes (statement macros, texture)."""
        start = self._key(path)
        last = self._last_reachable
        if last is not None and last[0] == start and last[1] is data:
            return list(last[2])
        seen = self._reachable(start, data)
        self._last_reachable = (start, data, tuple(seen))
        return seen

    def _reachable(self, start: Path, data: bytes | None) -> list[Path]:
        seen: list[Path] = []
        members = {start}  # membership by set: a list lookup made this quadratic (CCCL: ~1,000 headers per file)
        frontier = [(start, data)]
        for _ in range(MAX_DEPTH):
            nxt: list[tuple[Path, bytes | None]] = []
            for p, d in frontier:
                for inc in self.includes(p, d):
                    if inc not in members:
                        members.add(inc)
                        seen.append(inc)
                        nxt.append((inc, None))
            if not nxt:
                break
            frontier = nxt
        return seen

    def includers(self, header: Path) -> list[Path]:
        """Files of the run that reach `header` (directly or through other headers)."""
        return list(self.includer_map().get(self._key(header), []))

    def includer_map(self) -> dict[Path, list[Path]]:
        """header -> the files of the run that reach it: the whole run's include graph, built on first use (it
        reads every file of the run). A run with worker processes builds it before they fork, when a file
        about to be scanned may ask (match/precheck.py: `prepare_shared`), so that it is built once, not once
        per worker."""
        if self._includers is None:
            includers: dict[Path, list[Path]] = {}
            for f in self.files:
                for h in self.reachable(f):
                    includers.setdefault(h, []).append(self._key(f))
            self._includers = includers
        return self._includers

    def prepare_shared_headers(self, min_users: int = 2) -> int:
        """Before worker processes fork, when the run's include graph is built already (`includer_map`): each
        header that `min_users` or more files of the run reach gets its own macros and token-pasting definitions
        worked out here, once, not in every worker that meets one of those files (cuda-samples v11.8: the helper
        and GL headers every sample includes; ~17 ms here against ~0.3 s of workers' CPU at -j 16). Without the
        graph nothing is done (building it only for this would cost wall time). Returns how many were prepared."""
        if self._includers is None:
            return 0
        done = 0
        for header, users in self._includers.items():
            if len(users) >= min_users:
                self._own_macros(header, None)
                self._own_pastes(header)
                done += 1
        return done

    def program(self, path: Path, symbol: str | None = None) -> Path | None:
        """The program `path` belongs to, named by its first file (in path order): the files of the run and the
        project headers they reach, joined by `#include` and by sharing a directory (the sources of one directory
        are taken as one program, linked together: a type in one's `extern` declaration must match the other's
        definition). With `symbol`, a header joins the files that reach it only when its text spells the symbol:
        a common header that never names `double4` shares no use of it (cuda-samples' `helper_cuda.h` does not tie
        every sample together). None when `path` is not in the run (a buffer, a header no file of the run reaches).
        Consistency groups of a type rename are scoped by it (scan/grouping.py `consistency_group`)."""
        key = ("programs", symbol)
        programs = self.cache.get(key)
        if programs is None:
            programs = self.cache[key] = self._programs(symbol.encode() if symbol else None)
        return programs.get(self._key(path))

    def _programs(self, symbol: bytes | None) -> dict[Path, Path]:
        parent: dict[Path, Path] = {}

        def find(p: Path) -> Path:
            root = p
            while parent.setdefault(root, root) != root:
                root = parent[root]
            while p != root:  # path compression
                parent[p], p = root, parent[p]
            return root

        def join(a: Path, b: Path) -> None:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb, key=str)] = min(ra, rb, key=str)

        by_dir: dict[Path, Path] = {}
        for f in self.files:
            k = self._key(f)
            join(k, by_dir.setdefault(k.parent, k))
            for h in self.reachable(f):
                if symbol is None or symbol in (self.read(h) or b""):
                    join(k, h)
        return {p: find(p) for p in list(parent)}

    # ------------------------------------------------------------------ macros
    def _own_macros(self, path: Path, data: bytes | None) -> tuple[frozenset[str], frozenset[str]]:
        """(object macros defined here as statements, those defined here as something else but empty)."""
        key = self._key(path)
        if data is None and key in self._macros:
            return self._macros[key]
        data = self.read(key) if data is None else data
        stmt: set[str] = set()
        other: set[str] = set()
        if data and b"define" in data:
            for _, m in line_start_matches(_OBJECT_DEFINE, data):
                body = m.group(2)
                if statement_body(body):
                    stmt.add(m.group(1).decode("utf-8", "replace"))
                elif _COMMENT.sub(b" ", _CONT.sub(b" ", body)).strip():
                    other.add(m.group(1).decode("utf-8", "replace"))
        got = (frozenset(stmt), frozenset(other))
        self._macros[key] = got
        return got

    def statement_macros(self, path: Path, data: bytes) -> frozenset[str]:
        """Statement-like object macros visible in `path` (its own and its project headers'), without those
        that another visible `#define` makes an expression (`#ifdef DEBUG ... { ... } #else ... f() #endif`)."""
        stmt: set[str] = set()
        other: set[str] = set()
        for p, d in [(path, data)] + [(h, None) for h in self.reachable(path, data)]:
            s, o = self._own_macros(p, d)
            stmt |= s
            other |= o
        return frozenset(stmt - other)

    def paste_macros(self, path: Path, data: bytes, live: LiveWalk | None = None) -> dict[str, PasteMacro]:
        """Token-pasting macros visible in `path` (its own and its project headers'), by name; a name whose
        definitions disagree is blocked (parse/pasting.py's `merge`). With `live`, only the definitions the
        preprocessor may take count, in the headers it may include (`_live_paste_macros`)."""
        out: dict[str, PasteMacro] = dict(paste_macros(data))
        for h in self.reachable(path, data):
            for name, pm in self._own_pastes(h).items():
                out[name] = (merge(out[name], pm) or pm) if name in out else pm
        if not out or live is None:
            return out
        return self._live_paste_macros(path, data, live)

    def _own_pastes(self, header: Path) -> dict[str, PasteMacro]:
        key = self._key(header)
        own = self._pastes.get(key)
        if own is None:
            own = self._pastes[key] = paste_macros(self.read(key) or b"")
        return own

    def _live_paste_macros(self, path: Path, data: bytes, live: LiveWalk) -> dict[str, PasteMacro]:
        """`paste_macros` where a `#define` or an `#include` the preprocessor never takes (a dead branch: the
        `#ifdef __HIPCC__` of a header that supports HIP too) does not count. The headers are those `reachable`
        finds, through live and undecided `#include`s only. Definitions that disagree still block the name, and
        when a condition this model cannot decide chooses between them, the reason says so: with the prefixes
        they paste and the condition (`enclosing_condition`, of the definition or of the `#include` that brings
        it in), whichever definition comes first (parse/pasting.py's `view` matches each prefix's call)."""
        key = self._key(path)
        states = live(str(key), data, self.include_target)

        def alive(p: Path, at: int) -> bool | None:
            return states.get(str(p), {}).get(at)

        order: list[tuple[Path, bytes | None]] = [(key, data)]
        members = {key}
        via: dict[Path, tuple[Path, int]] = {}  # a header -> the first `#include` of it followed (file, offset)
        frontier = [(key, data)]
        for _ in range(MAX_DEPTH):
            nxt: list[tuple[Path, bytes | None]] = []
            for p, d in frontier:
                for at, inc in self.include_sites(p, d):
                    if inc is not None and inc not in members and alive(p, at) is not False:
                        members.add(inc)
                        via[inc] = (p, at)
                        nxt.append((inc, None))
            if not nxt:
                break
            order += nxt
            frontier = nxt
        out: dict[str, PasteMacro] = {}
        undecided: dict[str, list[tuple[Path, int, bytes]]] = {}  # name -> where its undecided definitions are
        for p, d in order:
            text = d if d is not None else (self.read(p) or b"")
            defs = paste_definitions(text)
            taken = [x for x in defs if alive(p, x[0]) is not False]
            for at, name, _ in taken:
                if alive(p, at) is None:
                    undecided.setdefault(name, []).append((p, at, text))
            for name, pm in merged(taken).items():
                out[name] = (merge(out[name], pm) or pm) if name in out else pm
        indexes: dict[Path, ConditionIndex] = {}  # each file's conditional groups, read once (`condition_index`)
        for name, pm in out.items():
            if not pm.blocked or name not in undecided or "several definitions" not in pm.blocked:
                continue
            found = (self._deciding_condition(p, at, text, via, (key, data), indexes) for p, at, text in undecided[name])
            conditions = [c for c in dict.fromkeys(found) if c]
            if pm.others:
                spelled = "` or `".join(x.decode("utf-8", "replace") for x in (pm.prefix, *pm.others))
                which = " and ".join(conditions) if conditions else "a preprocessor condition"
                verb = "decide, conditions" if len(conditions) > 1 else "decides, a condition"
                out[name] = replace(pm, blocked=f"macro `{name}` pastes `{spelled}` as {which} {verb} this tool "
                                                "cannot decide")
            else:
                out[name] = replace(pm, blocked=f"{pm.blocked} (a preprocessor condition this tool cannot decide "
                                                "chooses between them)")
        return out

    def _deciding_condition(self, p: Path, at: int, text: bytes, via: dict[Path, tuple[Path, int]],
                            root: tuple[Path, bytes], indexes: dict[Path, ConditionIndex]) -> str:
        """The condition a definition at `at` of `p` is under, for a reason: the innermost `#if` group around it
        (a header guard aside), else around the `#include` that brought `p` in, and so on up; "" when none.
        `indexes`: the files' `condition_index`, kept by the caller."""
        for _ in range(MAX_DEPTH + 1):
            index = indexes.get(p)
            if index is None:
                index = indexes[p] = condition_index(text)
            got = enclosing_condition(text, at, index)
            if got is not None:
                return f"`{got[1]}` ({p.name}:{got[0]})"
            if p not in via:
                return ""
            p, at = via[p]
            text = root[1] if p == root[0] else (self.read(p) or b"")
        return ""

    # ------------------------------------------------------------------ class members
    def _classes(self, path: Path, data: bytes | None) -> list[ClassMembers]:
        key = self._key(path)
        if data is None and key in self._members:
            return self._members[key]
        data = self.read(key) if data is None else data
        got = class_members(data) if data and (b"class" in data or b"struct" in data) else []
        self._members[key] = got
        return got

    def member_types(self, path: Path, data: bytes, member: str, owner: str | None = None) -> set[str]:
        """Declared types of members named `member` of classes/structs in `path` and its project headers
        (of class `owner` only, when given)."""
        out: set[str] = set()
        for p, d in [(path, data)] + [(h, None) for h in self.reachable(path, data)]:
            for cls in self._classes(p, d):
                if owner is not None and cls.owner != owner:
                    continue
                t = cls.members.get(member)
                if t is not None:
                    out.add(t)
        return out


# ----------------------------------------------------------------------------- for matchers
# What a matcher calls with its FileContext (ctx.project is the run's index): the type of a member read
# through `this->m`, `obj.m`, `ptr->m` or a bare `m` inside a method, from the class in a project header.

def _enclosing_class(node: ts.Node) -> str | None:
    """The class a method belongs to: `Foo` of `int Foo::f() {...}`, or the class whose body holds it."""
    cur = node.parent
    while cur is not None:
        if cur.type in ("class_specifier", "struct_specifier"):
            n = cur.child_by_field_name("name")
            return _text(n) if n is not None else None
        if cur.type == "function_definition":
            d = cur.child_by_field_name("declarator")
            while d is not None and d.type not in ("function_declarator",):
                d = d.child_by_field_name("declarator")
            q = d.child_by_field_name("declarator") if d is not None else None
            if q is not None and q.type == "qualified_identifier":
                scope = q.child_by_field_name("scope")
                if scope is not None:
                    return _text(scope).split("<")[0].split("::")[-1].strip()
        cur = cur.parent
    return None


def project_member_type(ctx: Any, owner: str | None, member: str, at: ts.Node) -> str | None:
    """The declared type of data member `member` (of class `owner`, else of the class of the method
    around `at`) from this file or the project headers it includes; None when unknown or ambiguous."""
    if getattr(ctx, "project", None) is None:
        return None
    if owner is None:
        owner = _enclosing_class(at)
        if owner is None:
            return None
    got = ctx.project.member_types(ctx.source.path, ctx.source.data, member, owner)
    return next(iter(got)) if len(got) == 1 else None


def nearest(includer: Path, hits: list[Path]) -> Path | None:
    """The one candidate header nearest the includer: the only one, else the only one sharing the longest
    directory prefix with it. Two projects scanned together often have headers of the same name
    (`include/gpu_info.h` in each); the includer's own project is where its `-I` directories point. A tie
    (two candidates equally near) stays unresolved rather than guessed."""
    if len(hits) <= 1:
        return hits[0] if hits else None
    parts = includer.parent.parts

    def shared(h: Path) -> int:
        n = 0
        for a, b in zip(parts, h.parent.parts, strict=False):
            if a != b:
                break
            n += 1
        return n

    depth = {h: shared(h) for h in hits}
    best = max(depth.values())
    top = [h for h in hits if depth[h] == best]
    return top[0] if len(top) == 1 else None


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """(modification time in ns, size, change time in ns) of a regular file; None when it is missing or not a
    file."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ctime_ns) if stat.S_ISREG(st.st_mode) else None


def _key(path: Path) -> Path:
    try:  # os.path.realpath: Path.resolve raises RuntimeError on a symlink loop (before Python 3.13)
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return path


def class_members(data: bytes) -> list[ClassMembers]:
    """Data members of every named class/struct in `data`: `cudaDeviceProp prop, *pp;` -> prop, pp."""
    from ..parse.treesitter import parse, query

    out: list[ClassMembers] = []
    tree = parse(data)
    q = query("[(class_specifier name: (_) @n body: (field_declaration_list) @b)"
              " (struct_specifier name: (_) @n body: (field_declaration_list) @b)]")
    for _, caps in ts.QueryCursor(q).matches(tree.root_node):
        owner = _text(caps["n"][0]).split("::")[-1].split("<")[0].strip()
        cls = ClassMembers(owner)
        for fd in caps["b"][0].named_children:
            if fd.type != "field_declaration":
                continue
            tnode = fd.child_by_field_name("type")
            if tnode is None:
                continue
            ttext = " ".join(_text(tnode).split())
            for d in fd.children_by_field_name("declarator"):
                name = _declarator_name(d)
                if name is not None and d.type != "function_declarator":
                    cls.members.setdefault(name, ttext)
        out.append(cls)
    return out


def _declarator_name(d: ts.Node) -> str | None:
    cur: ts.Node | None = d
    while cur is not None and cur.type not in ("field_identifier", "identifier"):
        if cur.type == "function_declarator":
            return None
        cur = cur.child_by_field_name("declarator") or (cur.named_children[0] if cur.named_children else None)
    return _text(cur) if cur is not None else None


def _text(node: ts.Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""
