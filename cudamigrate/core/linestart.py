"""Preprocessor lines found fast.

`re.compile(rb'^[ \t]*#[ \t]*include...', re.M)` is tried at every byte: a pattern that starts with an anchor
gets none of `re`'s shortcuts. The same pattern without `^[ \t]*`, starting at the `#`, lets `re` jump from one
`#` to the next; keeping only the matches that nothing but spaces and tabs precede on their line gives the
same matches, 10-15x faster over real trees (`tests/test_speed_paths.py` compares both on the corpus).

The conditional groups of a text are read the same way, once (`condition_index`), for the `#if` group around a
line (`enclosing_condition`: the condition a reason names).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator


def directive(pattern: bytes) -> re.Pattern[bytes]:
    """Compile the part of a `^[ \\t]*#...` pattern from its `#` on (no re.M needed)."""
    assert pattern.startswith(b"#"), pattern
    return re.compile(pattern)


def line_start_matches(rx: re.Pattern[bytes], data: bytes) -> Iterator[tuple[int, re.Match[bytes]]]:
    """(start of its line, match) for every match of `rx` that only spaces and tabs precede on its line: the
    matches of `^[ \\t]*` + `rx` under re.M, in order. A match elsewhere is skipped and the search goes on from
    the byte after its start (a pattern that spans lines cannot hide a directive on a later line)."""
    pos = 0
    search = rx.search
    while True:
        m = search(data, pos)
        if m is None:
            return
        s = m.start()
        ls = data.rfind(b"\n", 0, s) + 1
        if ls == s or not data[ls:s].strip(b" \t"):
            yield ls, m
            pos = m.end() if m.end() > s else s + 1
        else:
            pos = s + 1


# comments inside a conditional line, blanked before its text is shown
_COMMENT_RX = re.compile(rb"/\*.*?\*/|//[^\n]*", re.S)
_CONDITIONAL = directive(rb"#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b[^\n]*")


# (start of each conditional directive's line, in order; the innermost group open after it, a header guard's aside:
# (start of its opening line, that line) or None; for an `#ifndef X` taken for a header guard, where its
# `#define X` ends, else -1)
ConditionIndex = tuple[list[int], list["tuple[int, bytes] | None"], list[int]]


def condition_index(data: bytes) -> ConditionIndex:
    """The conditional groups of `data`, in one pass, for `enclosing_condition`: a file with many definitions
    under undecided conditions asks once per definition, and a pass over the text before each one was quadratic
    (bench/bounds.py paste-defs: 2,000 `#ifdef`/`#else` pairs of pasting macros, 175 KB)."""
    positions: list[int] = []
    inner: list[tuple[int, bytes] | None] = []
    guards: list[int] = []
    stack: list[tuple[int, bytes] | None] = []  # None: a header guard's group
    for pos, m in line_start_matches(_CONDITIONAL, data):
        kind = m.group(1)
        guard_end = -1
        if kind in (b"if", b"ifdef", b"ifndef"):
            line = _COMMENT_RX.sub(b" ", m.group(0)).strip()
            after = pos + len(m.group(0))
            gm = re.compile(rb"\s*#[ \t]*define[ \t]+" + re.escape(line.split()[-1]) + rb"\b").match(data, after) \
                if kind == b"ifndef" else None
            guard_end = gm.end() if gm is not None else -1
            stack.append(None if gm is not None else (pos, line))
        elif kind == b"endif" and stack:
            stack.pop()
        positions.append(pos)
        inner.append(next((g for g in reversed(stack) if g is not None), None))
        guards.append(guard_end)
    return positions, inner, guards


def enclosing_condition(data: bytes, at: int, index: ConditionIndex | None = None) -> tuple[int, str] | None:
    """(line number, text) of the opening `#if`/`#ifdef`/`#ifndef` of the innermost conditional group of `data`
    around offset `at` (its `#elif`/`#else` branches included), a header guard (`#ifndef X` then `#define X`)
    aside; None when `at` is in none. `index`: `condition_index(data)`, when asked about several offsets."""
    positions, inner, guards = index if index is not None else condition_index(data)
    i = bisect.bisect_left(positions, at)  # the directives that start before `at`
    got = inner[i - 1] if i else None
    if i and at < guards[i - 1]:  # at its own `#define X` (`#ifndef X` then `#define X(fn) ...`): not a guard yet
        pos = positions[i - 1]
        end = data.find(b"\n", pos)
        line = data[pos:end if end >= 0 else len(data)]
        got = (pos, _COMMENT_RX.sub(b" ", line).strip())
    return None if got is None else (data.count(b"\n", 0, got[0]) + 1, got[1].decode("utf-8", "replace"))
