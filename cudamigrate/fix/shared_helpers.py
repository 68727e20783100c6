"""One header per project for the texture stand-ins, instead of one copy of them in every file a fix migrates.

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
header exists, when the blocks differ, or when a file of that name without the guard is in the way.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

HEADER = "cudamigrate_texture.h"
GUARD = b"CUDAMIGRATE_TEXOBJ_HELPERS"
# the block as the migration inserts it: after a blank line, its comment lines, then the guarded code
_BLOCK = re.compile(rb"(?<=\n)(\r?\n)((?://[^\r\n]*\r?\n)*#ifndef CUDAMIGRATE_TEXOBJ_HELPERS\r?\n.*?"
                    rb"#endif /\* CUDAMIGRATE_TEXOBJ_HELPERS \*/\r?\n)", re.S)
_TOP = b"// Written by `cudamigrate fix` (CM601/CM602): included by each file whose texture references it migrated.\n"


@dataclass
class Shared:
    """Where the helpers go: `header` (real path), its bytes when it is to be written (`None`: reused as it is),
    and each moved file's new bytes (real path -> bytes)."""

    header: str
    data: bytes | None
    files: dict[str, bytes] = field(default_factory=dict)


def share(fixed: dict[str, tuple[bytes, bytes]], roots: Sequence[str], ceiling: str | None = None) -> Shared | None:
    """The shared header for a run's fixes, `fixed`: real path -> (original bytes, fixed bytes); `roots`: the real
    paths the user named (a new header is never placed outside them); an existing one is looked for up to the path
    named, or up to `ceiling` (the working directory) when that holds it (`fix src/new.cu` run from the project
    root finds the project's header). None when nothing moves."""
    blocks: dict[str, re.Match[bytes]] = {}
    for path, (before, after) in fixed.items():
        if GUARD in before or after.count(GUARD) != 3:  # #ifndef, #define, #endif of one block the fix inserted
            continue
        m = _BLOCK.search(after)
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
    found = _existing(home, ceiling if ceiling is not None and _inside(top, ceiling) else top)
    if found is False:
        return None
    if found is None and len(blocks) < 2:
        return None
    header = found if isinstance(found, str) else os.path.join(home, HEADER)
    data = None if isinstance(found, str) else _header_bytes(texts.pop())
    out = Shared(header, data)
    for path, m in blocks.items():
        nl = m.group(1)
        rel = os.path.relpath(header, os.path.dirname(path)).replace(os.sep, "/")
        after = fixed[path][1]
        rest = after[m.end(2):]
        rest = rest[len(nl):] if rest.startswith(nl + nl) else rest  # the block's own blank line goes with it
        out.files[path] = after[: m.start(2)] + b'#include "' + rel.encode() + b'"' + nl + rest
    return out


def _inside(path: str, root: str) -> bool:
    root = root if os.path.isdir(root) else os.path.dirname(root)
    return os.path.commonpath([path, root]) == root


def _existing(home: str, top: str) -> str | bool | None:
    """The header of that name in `home` or a directory above it up to `top`: its path when it holds the helpers,
    False when a file of that name without them is in the way, None when there is none."""
    top = top if os.path.isdir(top) else os.path.dirname(top)
    d = home
    while True:
        cand = os.path.join(d, HEADER)
        if os.path.lexists(cand):
            try:
                return cand if GUARD in Path(cand).read_bytes() else False
            except OSError:
                return False
        if d == top or os.path.dirname(d) == d:
            return None
        d = os.path.dirname(d)


def _header_bytes(block: bytes) -> bytes:
    """The header: a line saying who wrote it, then the block, with the runtime API declared for a host compiler."""
    define = b"#define CUDAMIGRATE_TEXOBJ_HELPERS\n"
    return _TOP + block.replace(define, define + b"#include <cuda_runtime.h>\n", 1)


def header_diff(path: str, data: bytes) -> str:
    """A new file as `diff -u` shows it (`--diff`)."""
    lines = data.decode("utf-8", "replace").splitlines(keepends=True)
    name = path.lstrip("/")
    return f"--- /dev/null\n+++ b/{name}\n@@ -0,0 +1,{len(lines)} @@\n" + "".join("+" + ln for ln in lines)
