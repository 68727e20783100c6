"""One header per project for the helpers a migration needs (the texture stand-ins, CM540's NPP stream context),
instead of one copy of them in every file a fix migrates.

The texture migration (match/migrations/texture_edits.py) inserts its helper block, guarded by
`CUDAMIGRATE_TEXOBJ_HELPERS`, in each file that binds a reference, since one file's fix cannot create another
file. Four texture files of one project then hold four copies of the same ~110 lines, which a reviewer rejects.
After the run's fixes are computed (and compile-verified with the copies, which the header holds unchanged), the
copies move into one header, `cudamigrate_texture.h`, in the deepest directory that holds every such file (inside
the paths given), and each file includes it by its relative path: the same code under the same guard, so what
was verified is what builds. A header of that name already in that directory or above it (up to the path given,
or up to the working directory when the paths given lie under it) that holds the guard is reused, so a later fix
of one more file includes it instead of adding a copy; the texture migration sees the guard in an included header
and inserts nothing, so a second fix changes nothing. Nothing moves when only one file gets the block and no
header exists, when the blocks differ, or when a file of that name without the guard is in the way. CM540's stream
context (`CUDAMIGRATE_NPP_STREAM_CONTEXT`) moves the same way, into `cudamigrate_npp.h`. The texture update helper
(`CUDAMIGRATE_TEXOBJ_UPDATE`, inserted after the stand-ins where an attribute is written after a bind) rides with
them into `cudamigrate_texture.h` (the CUDA Handbook's texturing/ had seven copies of it after a shared header).
`fix --commit-per-rule` computes the header of the whole run and rewrites every commit's files with it (the header
goes into the first commit whose files include it; the last tree is the one `fix` writes); `fix -` and the
editor's fixAll include a header that already exists (a buffer writes no file, so without one it keeps its copy).
`--shard` is `scan`'s only: shards fix nothing, so they hold no copies.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

@dataclass(frozen=True)
class Rider:
    """A second guarded block that a kind's migration adds after its own in some files (the texture update helper,
    which calls the stand-ins): a blank line, the block, a blank line. It moves into the kind's header with the
    block it follows, appended to a new header, or left out of the files when a header reused already holds it;
    it stays in the files when a reused header lacks it or the files' copies differ."""

    guard: bytes
    block: re.Pattern[bytes]
    spelled: int


@dataclass(frozen=True)
class Kind:
    """One kind of helper block a migration inserts per file: its guard, the header it moves to, how the inserted
    block reads (after a blank line), how many times the guard is spelled in it, and the lines the header adds for
    a file that includes it first (the declarations the block relies on)."""

    name: str  # as the note names it
    guard: bytes
    header: str
    block: re.Pattern[bytes]
    spelled: int
    needs: bytes
    riders: tuple[Rider, ...] = ()


UPDATE = Rider(
    b"CUDAMIGRATE_TEXOBJ_UPDATE",
    re.compile(rb"(\r?\n)(#ifndef CUDAMIGRATE_TEXOBJ_UPDATE\r?\n.*?#endif /\* CUDAMIGRATE_TEXOBJ_UPDATE \*/\r?\n)\r?\n",
               re.S),
    3)
TEXTURE = Kind(
    "CM601/CM602: the texture helpers", b"CUDAMIGRATE_TEXOBJ_HELPERS", "cudamigrate_texture.h",
    re.compile(rb"(?<=\n)(\r?\n)((?://[^\r\n]*\r?\n)*#ifndef CUDAMIGRATE_TEXOBJ_HELPERS\r?\n.*?"
               rb"#endif /\* CUDAMIGRATE_TEXOBJ_HELPERS \*/\r?\n)", re.S),
    3, b"#include <cuda_runtime.h>\n", (UPDATE,))
# CM540's stream context (match/migrations/npp.py HELPER_TEXT), whose block ends at its one `#endif`
NPP = Kind(
    "CM540: the NPP stream context helpers", b"CUDAMIGRATE_NPP_STREAM_CONTEXT", "cudamigrate_npp.h",
    re.compile(rb"(?<=\n)(\r?\n)(#ifndef CUDAMIGRATE_NPP_STREAM_CONTEXT\r?\n.*?\n#endif\r?\n)", re.S),
    2, b"#include <cuda_runtime.h>\n#include <nppdefs.h>\n")
KINDS = (TEXTURE, NPP)
HEADER = TEXTURE.header
_TOP = b"// Written by `cudamigrate fix`: included by each file whose migration needs these helpers.\n"


@dataclass
class Shared:
    """Where one kind of helpers goes: `header` (real path), its bytes when it is to be written (`None`: reused as
    it is), and each moved file's new bytes (real path -> bytes)."""

    kind: Kind
    header: str
    data: bytes | None
    files: dict[str, bytes] = field(default_factory=dict)
    riders: tuple[Rider, ...] = ()  # the riders the header holds, whose copies leave the files

    def rewrite(self, path: str, before: bytes, after: bytes) -> bytes:
        """`after`, a fix of the file `path` (`before`), with the kind's block that fix inserted replaced by an
        include of the header and the riders the header holds left out; `after` itself when the fix inserted no
        block. `fix --commit-per-rule` rewrites each commit's bytes so, with the final run's header."""
        k = self.kind
        if k.guard in before or after.count(k.guard) != k.spelled:
            return after
        m = k.block.search(after)
        if m is None:
            return after
        nl = m.group(1)
        rel = os.path.relpath(self.header, os.path.dirname(path)).replace(os.sep, "/")
        rest = after[m.end(2):]
        for rider in self.riders:
            r = rider.block.search(rest) if rider.guard not in before else None
            if r is not None:  # the rider and the blank line after it go; the one before it stays
                rest = rest[: r.start()] + r.group(1) + rest[r.end():]
        rest = rest[len(nl):] if rest.startswith(nl + nl) else rest  # the block's own blank line goes with it
        return after[: m.start(2)] + b'#include "' + rel.encode() + b'"' + nl + rest


def share_all(fixed: dict[str, tuple[bytes, bytes]], roots: Sequence[str], ceiling: str | None = None,
              new_headers: bool = True) -> list[Shared]:
    """`share` for every kind of helpers, each on the bytes the kinds before it left. Without `new_headers` a kind is
    shared only through a header the project already has (an editor's buffer, or a run whose header write
    failed), so every result can be taken: none rests on a header that will not exist."""
    out = []
    fixed = dict(fixed)
    for kind in KINDS:
        got = share(fixed, roots, ceiling, kind, new_headers)
        if got is not None:
            out.append(got)
            fixed.update({p: (fixed[p][0], b) for p, b in got.files.items()})
    return out


def share(fixed: dict[str, tuple[bytes, bytes]], roots: Sequence[str], ceiling: str | None = None,
          kind: Kind = TEXTURE, new_headers: bool = True) -> Shared | None:
    """The shared header of `kind` for a run's fixes, `fixed`: real path -> (original bytes, fixed bytes); `roots`:
    the real paths the user named (a new header is never placed outside them); an existing one is looked for up to
    the path named, or up to `ceiling` (the working directory) when that holds it (`fix src/new.cu` run from the
    project root finds the project's header). None when nothing moves."""
    blocks: dict[str, re.Match[bytes]] = {}
    for path, (before, after) in fixed.items():
        if kind.guard in before or after.count(kind.guard) != kind.spelled:  # one block, inserted by this fix
            continue
        m = kind.block.search(after)
        if m is not None:
            blocks[path] = m
    if not blocks:
        return None
    texts = {m.group(2).replace(b"\r\n", b"\n") for m in blocks.values()}
    if len(texts) != 1:
        return None
    home = os.path.commonpath([os.path.dirname(p) for p in blocks])
    top = next((r for r in sorted(roots, key=len, reverse=True) if _inside(home, r)), None)
    if top is None:
        return None
    top = top if os.path.isdir(top) else os.path.dirname(top)
    found = _existing(home, ceiling if ceiling is not None and _inside(top, ceiling) else top, kind)
    if found is False:
        return None
    if found is None and (len(blocks) < 2 or not new_headers):
        return None
    header = found if isinstance(found, str) else os.path.join(home, kind.header)
    data = None if isinstance(found, str) else _header_bytes(texts.pop(), kind)
    moving: list[Rider] = []  # the riders whose copies move into the header (or that a reused header holds)
    for rider in kind.riders:
        copies = [r for p in blocks if rider.guard not in fixed[p][0] and fixed[p][1].count(rider.guard) == rider.spelled
                  and (r := rider.block.search(fixed[p][1], blocks[p].end(2))) is not None]
        ridden = {r.group(2).replace(b"\r\n", b"\n") for r in copies}
        if len(ridden) > 1 or (not ridden and data is not None):
            continue
        if data is not None:
            data += b"\n" + ridden.pop()
        elif not _holds(header, rider.guard):
            continue
        moving.append(rider)
    out = Shared(kind, header, data, riders=tuple(moving))
    for path in blocks:
        out.files[path] = out.rewrite(path, *fixed[path])
    return out


def _holds(header: str, guard: bytes) -> bool:
    try:
        return guard in Path(header).read_bytes()
    except OSError:
        return False


def _inside(path: str, root: str) -> bool:
    root = root if os.path.isdir(root) else os.path.dirname(root)
    return os.path.commonpath([path, root]) == root


def _existing(home: str, top: str, kind: Kind) -> str | bool | None:
    """The header of `kind` in `home` or a directory above it up to `top`: its path when it holds the helpers,
    False when a file of that name without them is in the way, None when there is none."""
    top = top if os.path.isdir(top) else os.path.dirname(top)
    d = home
    while True:
        cand = os.path.join(d, kind.header)
        if os.path.lexists(cand):
            try:
                return cand if kind.guard in Path(cand).read_bytes() else False
            except OSError:
                return False
        if d == top or os.path.dirname(d) == d:
            return None
        d = os.path.dirname(d)


def _header_bytes(block: bytes, kind: Kind) -> bytes:
    """The header: a line saying who wrote it, then the block, with what it relies on included after its guard."""
    define = b"#define " + kind.guard + b"\n"
    return _TOP + block.replace(define, define + kind.needs, 1)


def header_diff(path: str, data: bytes) -> str:
    """A new file as `diff -u` shows it (`--diff`)."""
    lines = data.decode("utf-8", "replace").splitlines(keepends=True)
    name = path.lstrip("/")
    return f"--- /dev/null\n+++ b/{name}\n@@ -0,0 +1,{len(lines)} @@\n" + "".join("+" + ln for ln in lines)
