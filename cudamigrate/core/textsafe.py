"""Text from scanned trees (file names, source lines, messages) made safe for terminals and CI logs.

Why: a file name or a source line may hold ESC/OSC sequences (`\\x1b]8;;...`, `\\x1b[2J`), other C0/C1
controls or bidirectional overrides; printed raw they can rewrite the terminal, hide text or forge
GitHub workflow commands. They are shown escaped (`\\x1b`, `\\u202e`), which also keeps every
diagnostic on one line.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence

# C0 controls except TAB, DEL, C1 controls, and the Unicode bidi/format controls used in "Trojan Source"
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _esc(m: re.Match[str]) -> str:
    ch = m.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def printable(s: str) -> str:
    """`s` with control characters escaped; TAB kept. Newlines become `\\n` (one line out)."""
    return _UNSAFE.sub(_esc, s) if _UNSAFE.search(s) else s


def one_line(s: str) -> str:
    return printable(s)


def path_text(p: object) -> str:
    """A path as text, whatever its bytes: undecodable bytes (surrogate escapes) shown as `\\xNN`."""
    s = str(p)
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        s = s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return printable(s)


def finite(x: float, limit: float = 1e12) -> float:
    """A float JSON can carry: NaN becomes 0, infinities and huge values are clamped to +-limit."""
    if isinstance(x, float) and math.isnan(x):
        return 0.0
    return max(-limit, min(limit, x))


def display_path(p: "os.PathLike[str] | str") -> str:
    """The path as reports show it: relative when below the current directory, with undecodable bytes
    and control characters escaped (`\\xff`, `\\x1b`), so no name can break a report or a terminal."""
    return display_paths([p])[0]


def display_paths(paths: "Sequence[os.PathLike[str] | str]") -> list[str]:
    """display_path of each path (what `os.path.relpath` gives below the current directory, the path as
    given elsewhere), with the current directory looked up once: 2,000 relpath calls cost 40 ms."""
    try:
        cwd = os.getcwd()
    except OSError:  # the current directory was removed: relpath would fail too
        return [path_text(p) for p in paths]
    prefix = cwd if cwd.endswith(os.sep) else cwd + os.sep
    out: list[str] = []
    for p in paths:
        ap = os.path.abspath(p)
        if ap == cwd:
            out.append(".")
        elif ap.startswith(prefix) and not ap.startswith("..", len(prefix)):
            out.append(path_text(ap[len(prefix):]))
        else:
            out.append(path_text(p))
    return out
