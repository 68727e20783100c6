"""The server's copy of an editor buffer, kept as the UTF-8 bytes the engine scans, with LSP's positions.

LSP ends a line at `\\n`, `\\r\\n` or `\\r` only; Python's `str.splitlines()` (what pygls's documents use) also
ends one at a form feed, a vertical tab, NEL, U+2028 and U+2029, so after any of them a position names
another place than the editor's, an incremental edit lands in the wrong place and the copy drifts from the
editor's text. Here lines are found in the bytes with exactly LSP's three terminators, and a column is
counted in the encoding the client and server agreed on (UTF-16 code units unless the client offered
another): the same `(line, character)` as the editor's for every text.

A client's text may hold a lone surrogate (JSON's `"\\ud800"`), which has no UTF-8 form: it is kept as
U+FFFD, one code point and one UTF-16 unit like the surrogate, so every later position still matches.
"""

from __future__ import annotations

import bisect
import re
from itertools import accumulate, count
from dataclasses import dataclass, field

_EOL = re.compile(rb"\r\n|\r|\n")
_SURROGATE = re.compile("[\ud800-\udfff]")

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
_GENERATIONS = count(1)


def encode(text: str) -> bytes:
    """UTF-8 of a client's text, a lone surrogate as U+FFFD (same width in code points and UTF-16 units)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


def line_starts(data: bytes) -> list[int]:
    """Byte offset of each line's start, lines ended by `\\n`, `\\r\\n` or `\\r` only (LSP's rule)."""
    if b"\r" not in data:  # the common case, without a match object per line
        return list(accumulate((len(line) + 1 for line in data.split(b"\n")[:-1]), initial=0))
    return [0] + [m.end() for m in _EOL.finditer(data)]


def units(text: str, encoding: str) -> int:
    """The length of `text` in the client's position units."""
    if encoding == UTF16:
        return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text)


def _prefix(text: str, count: int, encoding: str) -> str:
    """The longest prefix of `text` at most `count` units long (a column inside a character stops before it)."""
    if encoding == UTF32:
        return text[:count]
    n = 0
    for i, c in enumerate(text):
        n += (2 if ord(c) > 0xFFFF else 1) if encoding == UTF16 else len(c.encode("utf-8", "surrogatepass"))
        if n > count:
            return text[:i]
    return text


@dataclass
class Buffer:
    """One open document: its bytes, its version and where its lines start."""

    data: bytes
    version: int | None = None
    encoding: str = UTF16
    generation: int = 0  # this text's number, unique in the process: what tells a scan's text from the current
    # one (a client's versions may repeat, and a document closed and opened again starts afresh)
    _starts: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._starts = line_starts(self.data)
        self.generation = self.generation or next(_GENERATIONS)

    def touch(self) -> None:
        """A new generation for the same text (a save: the configuration or a header may have changed)."""
        self.generation = next(_GENERATIONS)

    @classmethod
    def of(cls, text: str, version: int | None = None, encoding: str = UTF16) -> Buffer:
        return cls(encode(text), version, encoding)

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")

    def _line_bounds(self, line: int) -> tuple[int, int]:
        """Byte [start, end) of a line's content, without its terminator."""
        start = self._starts[line]
        end = self._starts[line + 1] if line + 1 < len(self._starts) else len(self.data)
        while end > start and self.data[end - 1] in b"\r\n":
            end -= 1
        return start, end

    def offset(self, line: int, character: int) -> int:
        """The byte offset of a client position; past a line's end is its end, past the last line the buffer's
        end (the spec's "defaults back to the line length"), a negative value the line's or buffer's start."""
        if line >= len(self._starts):
            return len(self.data)
        if line < 0:
            return 0
        start, end = self._line_bounds(line)
        if character <= 0:
            return start
        content = self.data[start:end].decode("utf-8", "replace")
        return start + len(_prefix(content, character, self.encoding).encode("utf-8"))

    def position(self, offset: int) -> tuple[int, int]:
        """The client position (line, character) of a byte offset."""
        offset = max(0, min(offset, len(self.data)))
        line = bisect.bisect_right(self._starts, offset) - 1
        start, end = self._line_bounds(line)
        head = self.data[start:min(offset, end)].decode("utf-8", "replace")
        return line, units(head, self.encoding)

    def edit(self, start: int, end: int, text: str, version: int | None = None) -> None:
        """Replace bytes [start, end) with `text` (an incremental change), keeping the line index true."""
        start = max(0, min(start, len(self.data)))
        end = max(start, min(end, len(self.data)))
        new = encode(text)
        delta = len(new) - (end - start)
        self.data = self.data[:start] + new + self.data[end:]
        # only the lines around the edit are found again (a CR before it may now pair with an LF it inserted);
        # the later ones move by `delta`: a keystroke in a 10 MB buffer does not re-split the whole of it
        starts = self._starts
        lo = max(bisect.bisect_right(starts, start) - 2, 0)
        hi = bisect.bisect_right(starts, end) + 1
        begin = starts[lo]
        stop = starts[hi] + delta if hi < len(starts) else len(self.data)
        middle = [begin + x for x in line_starts(self.data[begin:stop])]
        if hi < len(starts):
            middle = [x for x in middle if x < stop]
            self._starts = starts[:lo] + middle + [x + delta for x in starts[hi:]]
        else:
            self._starts = starts[:lo] + middle
        self.version = version if version is not None else self.version
        self.generation = next(_GENERATIONS)

    def replace(self, text: str, version: int | None = None) -> None:
        """Take the whole text (a full change)."""
        self.edit(0, len(self.data), text, version)
