"""Reading source files defensively.

Real trees contain binaries named `.h`, Latin-1 comments, BOMs and CRLF files.
We keep the raw bytes untouched (fixes edit byte ranges of exactly these bytes)
and derive a parse buffer of the same length, so byte offsets agree everywhere.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

BOM = b"\xef\xbb\xbf"
DEFAULT_MAX_BYTES = 8 * 1024 * 1024


# a `/* ... */` on one line that ends in a backslash continuation, not after a quote on that line (applied to one
# line at a time: as a re.M pattern over the file it was tried at every byte, 0.8 s of a CCCL + cuda-samples scan)
_MACRO_LINE_COMMENT = re.compile(rb"^([^\"\n]*?)(/\*[^\n]*?\*/)(?=[^\n]*\\\r?$)")


def _blank_macro_line_comments(data: bytes) -> bytes:
    """Every `/* ... */` of a line that ends in a backslash blanked (the line's text before it kept), as long as
    no quote precedes it: the lines holding a `/*` are found with `find`, each rewritten until nothing changes."""
    out: list[bytes] = []
    last = pos = 0
    n = len(data)
    while True:
        i = data.find(b"/*", pos)
        if i == -1:
            break
        ls = data.rfind(b"\n", 0, i) + 1
        le = data.find(b"\n", i)
        le = n if le == -1 else le
        line = data[ls:le]
        if line.endswith(b"\\") or line.endswith(b"\\\r"):
            prev = None
            while prev != line:
                prev, line = line, _MACRO_LINE_COMMENT.sub(lambda m: m.group(1) + b" " * len(m.group(2)), line)
            if line != data[ls:le]:
                out += [data[last:ls], line]
                last = le
        pos = le + 1
    out.append(data[last:])
    return b"".join(out)


def decode_lossless(data: bytes) -> str:
    """Text for edits: bytes that are not UTF-8 (a Latin-1 comment) become lone surrogates, which
    `encode_lossless` turns back into exactly the same bytes, so a fix never rewrites them."""
    return data.decode("utf-8", "surrogateescape")


def encode_lossless(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def displayable(text: str) -> str:
    """Text for reports: an undecodable byte carried as a surrogate shows as U+FFFD (reports are UTF-8)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


class SourceError(Exception):
    """A file that cannot be scanned; str() is the one-line reason."""


@dataclass
class SourceFile:
    path: Path
    data: bytes  # exact bytes on disk
    has_bom: bool = False
    newline: bytes = b"\n"
    utf8: bool = True  # False: some bytes are not UTF-8; they are read and written back unchanged
    warnings: list[str] = field(default_factory=list)
    # statement-like object macros visible here (project_index.statement_macros): blanked for the parser
    statement_macros: frozenset[str] = frozenset()
    stat: os.stat_result | None = None  # fstat before reading (load_source): fix's compare-and-swap
    _line_starts: list[int] | None = None

    @property
    def parse_bytes(self) -> bytes:
        """Bytes handed to the parser, the same length as the file: the BOM and block comments on
        continued macro lines (`x = (call);  /* why */  \\`) blanked to spaces. tree-sitter ends a
        `#define` at such a comment and parses the rest of the macro as top-level code. Uses of
        statement-like macros (`CUERR` for `{ ... }`) become `;` and spaces: written without `;`, they
        would glue the next statement to the macro name."""
        data = b"   " + self.data[3:] if self.has_bom else self.data
        if b"/*" in data and (b"\\\n" in data or b"\\\r\n" in data):
            data = _blank_macro_line_comments(data)
        if self.statement_macros:
            data = blank_statement_macros(data, self.statement_macros)
        return data

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")

    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            starts = [0]
            find = self.data.find
            i = find(b"\n")
            while i != -1:
                starts.append(i + 1)
                i = find(b"\n", i + 1)
            self._line_starts = starts
        return self._line_starts

    def position(self, offset: int) -> tuple[int, int]:
        """1-based line and 1-based column (in characters) of a byte offset."""
        import bisect

        starts = self.line_starts()
        idx = bisect.bisect_right(starts, offset) - 1
        line_start = starts[idx]
        col = len(self.data[line_start:offset].decode("utf-8", errors="replace")) + 1
        if idx == 0 and self.has_bom:
            col = max(1, col - 1)
        return idx + 1, col

    def snippet(self, start: int, end: int) -> str:
        """The line holding byte `start`, bounded to about SNIPPET_LIMIT bytes around [start, end)."""
        import bisect

        starts = self.line_starts()
        idx = bisect.bisect_right(starts, start) - 1
        ls = starts[idx]
        le = starts[idx + 1] if idx + 1 < len(starts) else len(self.data)
        while le > ls and self.data[le - 1 : le] in (b"\n", b"\r"):
            le -= 1
        return clip(self.data, ls, le, start, end)

    def line_text(self, line: int) -> str:
        starts = self.line_starts()
        if line < 1 or line > len(starts):
            return ""
        start = starts[line - 1]
        end = starts[line] if line < len(starts) else len(self.data)
        return self.data[start:end].decode("utf-8", errors="replace").rstrip("\r\n")


_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}
SNIPPET_LIMIT = 200  # bytes of source kept per finding


def clip(data: bytes, ls: int, le: int, start: int, end: int, limit: int = SNIPPET_LIMIT) -> str:
    """Line data[ls:le] decoded, or when longer than `limit` a window of about `limit` bytes around
    [start, end) with `…` where it was cut: a finding keeps a bounded snippet, not a 100 KB line."""
    if le - ls <= limit:
        return data[ls:le].decode("utf-8", errors="replace")
    s0 = max(ls, min(start, le))
    e0 = max(s0, min(end, le, s0 + limit))
    room = limit - (e0 - s0)
    lo = max(ls, s0 - room // 2)
    hi = min(le, e0 + room - (s0 - lo))
    lo = max(ls, min(lo, hi - limit))
    text = data[lo:hi].decode("utf-8", errors="ignore")  # a character cut at either end is dropped
    return ("…" if lo > ls else "") + text + ("…" if hi < le else "")


def load_source(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> SourceFile:
    """Read and vet a file; raise SourceError with a short reason when it is unusable.

    Opened without blocking and checked with fstat before reading, so a FIFO, `/dev/zero` or a device
    is refused at once instead of hanging the run or reading forever; at most max_bytes + 1 bytes are
    read, so a file growing while we read it cannot exhaust memory. The returned file carries the
    fstat taken before reading: `fix` compares it with the file at write time (compare-and-swap)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
            raise SourceError(f"not a regular file ({kind})")
        if st.st_size > max_bytes:
            raise SourceError(
                f"file too large ({st.st_size} bytes > limit {max_bytes}); raise `max-file-size` to scan it"
            )
        # a binary file (a sparse 1 GB image, an object file) is refused from its first 64 KiB, before the rest
        # is read; the rest is read in one sized read, so a file let in by a raised limit costs its size once
        if b"\x00" in os.pread(fd, HEAD_BYTES, 0):
            raise SourceError("binary file (contains NUL bytes)")
        data = _read_fd(fd, max_bytes + 1, st.st_size + 1)
        if len(data) > max_bytes:
            raise SourceError(f"file too large (grew past the limit {max_bytes} while being read)")
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    src = check_bytes(path, data)
    src.stat = st
    return src


def _check_utf8(data: bytes, chunk: int = 1 << 20) -> None:
    """Raise UnicodeDecodeError (offsets into `data`) when `data` is not UTF-8, decoding 1 MiB at a time: a
    whole-file decode would hold a second copy of a large file."""
    import codecs

    dec = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    for i in range(0, max(len(data), 1), chunk):
        pending = len(dec.getstate()[0])  # bytes of a character split by the previous chunk's end
        try:
            dec.decode(view[i : i + chunk], final=i + chunk >= len(data))
        except UnicodeDecodeError as exc:
            raise UnicodeDecodeError("utf-8", data, i - pending + exc.start, i - pending + exc.end, exc.reason) from None


def check_bytes(path: Path, data: bytes) -> SourceFile:
    if b"\x00" in data[:65536] or b"\x00" in data[-65536:]:
        raise SourceError("binary file (contains NUL bytes)")
    warnings: list[str] = []
    utf8 = True
    try:
        _check_utf8(data)
    except UnicodeDecodeError as exc:
        # Legacy trees hold Latin-1/CP-1252 comments (author names in Boost headers). The code is
        # ASCII, so the file is scanned as is; fixes edit byte ranges and keep every other byte.
        utf8 = False
        line = data.count(b"\n", 0, exc.start) + 1
        warnings.append(f"not UTF-8 from byte {exc.start} (line {line}); scanned with those bytes kept as they are")
    has_bom = data.startswith(BOM)
    newline = b"\r\n" if b"\r\n" in data[:65536] else b"\n"
    return SourceFile(path=path, data=data, has_bom=has_bom, newline=newline, utf8=utf8, warnings=warnings)


def read_regular(path: str | os.PathLike[str], limit: int = DEFAULT_MAX_BYTES) -> bytes:
    """The first `limit` bytes of a regular file, for the project files that matchers read beside the
    scanned one (headers, includers). Opened without blocking and checked with fstat, so a FIFO or device
    that happens to carry a source name raises OSError instead of blocking the scan forever."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{os.fspath(path)}: not a regular file")
        return _read_fd(fd, limit)
    finally:
        os.close(fd)


HEAD_BYTES = 65536  # what check_bytes looks at for NUL bytes, at each end


def _read_fd(fd: int, limit: int, expect: int = 1 << 20) -> bytes:
    """At most `limit` bytes from an open descriptor (a file may grow while we read it): first `expect` bytes
    in one read (the file's size: one buffer, no join copy), then 1 MiB reads."""
    chunks: list[bytes] = []
    left = limit
    size = max(1, min(expect, limit))
    while left > 0:
        b = os.read(fd, min(left, size))
        size = 1 << 20
        if not b:
            break
        chunks.append(b)
        left -= len(b)
    return b"".join(chunks)


def blank_statement_macros(data: bytes, names: Iterable[str]) -> bytes:
    """`data` with each use of a statement-like macro (outside `#` lines and string literals) turned
    into `;` plus spaces, the same length: `k<<<1, 1>>>(d); CUERR` + newline + `cudaThreadSynchronize();`
    then parses as three statements, with every byte offset unchanged."""
    names = sorted(set(names))
    if not names:
        return data
    rx = re.compile(rb"\b(" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b(?!\s*\()")
    out = bytearray(data)
    for m in rx.finditer(data):
        ls = data.rfind(b"\n", 0, m.start()) + 1
        before = data[ls:m.start()]
        if before.lstrip().startswith(b"#") or before.count(b'"') % 2 == 1 or b"//" in before or b"/*" in before:
            continue  # the `#define` itself, a string or a comment (a continued macro line still counts)
        out[m.start():m.end()] = b";" + b" " * (m.end() - m.start() - 1)
    return bytes(out)
