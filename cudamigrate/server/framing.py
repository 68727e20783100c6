"""JSON-RPC framing over a byte stream (`Content-Length: N` headers, a blank line, N bytes of body) that a
wrong client cannot make deaf, kill or exhaust.

pygls's reader trusts the header: a `Content-Length` larger than the body reads on into the next messages
(or waits forever), a huge one asks for that many bytes at once (`MemoryError`), a garbled header line is
skipped without an answer. Here:

- a length over `max_body` is refused at once (an error frame, nothing allocated) and the stream is read on
  for the next header;
- a body that holds another message's header (`Content-Length: N` then CR LF, which JSON text cannot contain
  outside a string) was given too long a length: it is cut there, reported, and the next message is parsed
  from that header, so no later message is lost;
- a partial body or header that the client stops sending is given up after a silence (`stall`), reported,
  and the stream starts afresh;
- garbage between messages is skipped up to the next `Content-Length` header.

Pure: bytes in, frames out; the transport does the reading and timing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADER_END = b"\r\n\r\n"
_LENGTH = re.compile(rb"Content-Length:[ \t]*(\d{1,20})[ \t]*\r?$", re.IGNORECASE | re.MULTILINE)
_INNER_HEADER = re.compile(rb"Content-Length:[ \t]*\d{1,20}[ \t]*\r\n", re.IGNORECASE)
MAX_HEADER = 8192  # bytes of header block without a blank line before it is dropped as garbage


@dataclass(frozen=True)
class Frame:
    """A message body, or the reason a stretch of the stream was not one (`body` None)."""

    body: bytes | None
    error: str = ""


class Framer:
    """Splits the bytes fed to it into frames; keeps at most one partial message (≤ max_body bytes)."""

    def __init__(self, max_body: int) -> None:
        self.max_body = max_body
        self._buf = bytearray()
        self._need: int | None = None  # the body length once a header block is read

    @property
    def pending(self) -> bool:
        """Whether part of a message is waiting for more bytes."""
        return bool(self._buf) or self._need is not None

    def feed(self, chunk: bytes) -> list[Frame]:
        self._buf += chunk
        out: list[Frame] = []
        while True:
            if self._need is None:
                end = self._buf.find(_HEADER_END)
                if end < 0:
                    if len(self._buf) > MAX_HEADER:  # no header block in sight: keep only a possible start
                        keep = self._buf.rfind(b"Content-Length")
                        keep = keep if keep >= 0 and len(self._buf) - keep <= MAX_HEADER else len(self._buf)
                        out.append(Frame(None, f"{keep} bytes without a message header skipped"))
                        del self._buf[:keep]
                    return out
                block = bytes(self._buf[:end])
                del self._buf[: end + len(_HEADER_END)]
                lengths = list(_LENGTH.finditer(block))
                if not lengths:
                    out.append(Frame(None, "message header without a Content-Length"))
                    continue
                n = int(lengths[-1].group(1))
                if n > self.max_body:
                    out.append(Frame(None, f"Content-Length {n} over the limit of {self.max_body} bytes"))
                    continue
                self._need = n
            if len(self._buf) < self._need:
                return out
            body = bytes(self._buf[: self._need])
            del self._buf[: self._need]
            self._need = None
            inner = _INNER_HEADER.search(body)
            if inner is not None and inner.start() > 0:  # the length ran on into the next message
                self._buf[:0] = body[inner.start():]
                out.append(Frame(body[: inner.start()], "Content-Length longer than the message"))
            else:
                out.append(Frame(body))

    def stall(self) -> list[Frame]:
        """The client stopped mid-message: report what was waiting and start afresh."""
        if not self.pending:
            return []
        n, need = len(self._buf), self._need
        self._buf.clear()
        self._need = None
        what = f"{n} of {need} body bytes" if need is not None else f"{n} bytes of an unfinished header"
        return [Frame(None, f"incomplete message dropped after a silence ({what})")]
