"""The server's stdio loop: frames read by `framing`, each message answered or reported, never a traceback.

pygls's own loop parses a message inside `json.loads`' object hook, so a request whose parameters do not fit
its type is logged and never answered (the client waits forever), a body that is not JSON is not answered
either, an internal error sends the client a traceback, and `exit` raises a `SystemExit` that the loop
swallows (exit status 0 even without `shutdown`). Here every message goes through `dispatch`:

- not JSON (or not UTF-8): `-32700 Parse error`, id null; not a JSON-RPC object: `-32600 Invalid Request`;
- parameters that do not fit the method: `-32602 Invalid params` to a request, a log line for a notification;
- `exit`: the process ends with 0 after `shutdown`, else 1 (the LSP spec), as does the end of the input;
- before `initialize`: a request is answered `-32002`, a notification dropped (the spec);
- the methods in `own` (the text synchronisation the server keeps itself: `lsp`) go to their handlers, the
  rest to pygls, whose handlers' errors reach the client as one line.

Reading runs on a thread (blocking reads of stdin) that hands chunks to the event loop; a message cut off
mid-way is given up after `STALL_S` of silence, so a wrong `Content-Length` cannot leave the server deaf.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from .framing import Frame, Framer

MAX_MESSAGE_BYTES = 256 << 20  # one JSON-RPC body; a larger Content-Length is refused unread
STALL_S = 2.0  # silence after which a message cut off mid-way is dropped
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, SERVER_NOT_INITIALIZED = -32700, -32600, -32602, -32002
log = logging.getLogger(__name__)


class _OneLine(logging.Formatter):
    """A log record as one line: pygls logs a message it cannot read with its traceback; stderr is the editor's
    server log, and the client already got the error as an answer."""

    def format(self, record: logging.LogRecord) -> str:
        return f"cudamigrate server: {record.levelname.lower()}: {(record.getMessage().splitlines() or [''])[0][:300]}"


def quiet_logging() -> None:
    """Warnings and errors on stderr, one line each."""
    handler = logging.StreamHandler()
    handler.setFormatter(_OneLine())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)


def _id(data: Any) -> int | str | None:
    """A request's id as JSON-RPC allows it (a number or a string), else None."""
    got = data.get("id") if isinstance(data, dict) else None
    return got if isinstance(got, (int, str)) and not isinstance(got, bool) else None


class Transport:
    """Feeds frames from the client to the server and ends the process as the protocol says."""

    def __init__(self, server: LanguageServer, own: dict[str, Callable[[Any], None]],
                 max_body: int = MAX_MESSAGE_BYTES, stall_s: float = STALL_S) -> None:
        self.server, self.own, self.stall_s = server, own, stall_s
        self.framer = Framer(max_body)
        self.exit_code: int | None = None
        self._done: asyncio.Future[int] | None = None
        self._stall: asyncio.TimerHandle | None = None

    # -- answers ------------------------------------------------------------------------------------------
    def error(self, msg_id: int | str | None, code: int, message: str) -> None:
        self.server.protocol._send_data({"jsonrpc": "2.0", "id": msg_id,
                                         "error": {"code": code, "message": message}})

    def note(self, message: str) -> None:
        """A one-line report to the client's log (a bad notification has no one to answer)."""
        self.server.window_log_message(types.LogMessageParams(types.MessageType.Warning, f"cudamigrate: {message}"))

    # -- messages -----------------------------------------------------------------------------------------
    def dispatch(self, frame: Frame) -> None:
        if frame.body is None:
            self.error(None, PARSE_ERROR, f"Parse error: {frame.error}")
            return
        try:
            data = json.loads(frame.body)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            why = f"{frame.error}; " if frame.error else ""
            self.error(None, PARSE_ERROR, f"Parse error: {why}{type(exc).__name__}: {str(exc)[:200]}")
            return
        if not isinstance(data, dict) or data.get("jsonrpc") != "2.0" or not (
                isinstance(data.get("method"), str) or "result" in data or "error" in data):
            self.error(_id(data), INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
            return
        method = data.get("method")
        if method == types.EXIT:
            self.finish(0 if self.server.protocol._shutdown else 1)
            return
        if getattr(self.server.protocol, "_workspace", None) is None and method not in (types.INITIALIZE, None):
            if "id" in data:  # the spec: a request before `initialize` is refused, a notification dropped
                self.error(_id(data), SERVER_NOT_INITIALIZED, f"{method} before initialize")
            return
        try:
            msg = self.server.protocol.structure_message(data)
        except (JsonRpcException, Exception):  # parameters that do not fit the method's type
            if "id" in data and method is not None:
                self.error(_id(data), INVALID_PARAMS, f"Invalid params for {method}")
            else:
                self.note(f"ignored {method or 'message'}: invalid params")
            return
        handler = self.own.get(method) if isinstance(method, str) else None
        if handler is None:
            self.server.protocol.handle_message(msg)
        elif not self.server.protocol._shutdown:
            try:
                handler(msg.params)
            except Exception as exc:  # a bug of ours: one line to the client, the server goes on
                log.exception("%s failed", method)
                self.note(f"{method} failed: {type(exc).__name__}: {exc}")

    def feed(self, chunk: bytes) -> None:
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None
        if not chunk:  # end of input: no `exit` came
            self.finish(0 if self.server.protocol._shutdown else 1)
            return
        for frame in self.framer.feed(chunk):
            if self.exit_code is not None:
                return
            self.dispatch(frame)
        if self.framer.pending and self.exit_code is None:
            self._stall = asyncio.get_running_loop().call_later(self.stall_s, self._stalled)

    def _stalled(self) -> None:
        self._stall = None
        for frame in self.framer.stall():
            self.dispatch(frame)

    def finish(self, code: int) -> None:
        if self.exit_code is None:
            self.exit_code = code
            if self._done is not None and not self._done.done():
                self._done.set_result(code)

    # -- the loop -----------------------------------------------------------------------------------------
    def run(self, stdin: BinaryIO, stdout: BinaryIO) -> int:
        """Serve until `exit` or the end of input; the exit status."""
        return asyncio.run(self._main(stdin, stdout))

    async def _main(self, stdin: BinaryIO, stdout: BinaryIO) -> int:
        quiet_logging()
        loop = asyncio.get_running_loop()
        self._done = loop.create_future()
        self.server.protocol.set_writer(StdoutWriter(stdout))
        fd = stdin.fileno()

        def read() -> None:
            while True:
                try:
                    chunk = os.read(fd, 1 << 16)
                except OSError:
                    chunk = b""
                try:
                    loop.call_soon_threadsafe(self.feed, chunk)
                except RuntimeError:  # the loop has ended
                    return
                if not chunk:
                    return

        threading.Thread(target=read, name="cudamigrate-stdin", daemon=True).start()
        try:
            return await self._done
        except BrokenPipeError:
            return 1
