"""Preprocessor lines found fast.

`re.compile(rb'^[ \t]*#[ \t]*include...', re.M)` is tried at every byte: a pattern that starts with an anchor
gets none of `re`'s shortcuts. The same pattern without `^[ \t]*`, starting at the `#`, lets `re` jump from one
`#` to the next; keeping only the matches that nothing but spaces and tabs precede on their line gives the
same matches, 10-15x faster over real trees (`tests/test_speed_paths.py` compares both on the corpus).
"""

from __future__ import annotations

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
