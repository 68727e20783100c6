"""`cudamigrate server` against a client that gets the protocol wrong: raw frames on its stdin, every answer
read from its stdout. Each bad message is answered (or logged) without a traceback, and the messages after it
are still served; the exit status follows the spec."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from cudamigrate.server.framing import Frame, Framer

ROOT = Path(__file__).resolve().parent.parent
CODE = "#include <cuda_runtime.h>\nint main() {\n    cudaThreadSynchronize();\n    return 0;\n}\n"


def frame(obj: object) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def req(i: int, method: str, params: object) -> dict:
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params}


def note(method: str, params: object) -> dict:
    return {"jsonrpc": "2.0", "method": method, "params": params}


class Server:
    """The server process and the messages it has written so far."""

    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "cudamigrate", "server"], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})
        self.got: list[dict] = []
        self.raw = bytearray()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        framer = Framer(1 << 30)
        assert self.proc.stdout is not None
        while chunk := os.read(self.proc.stdout.fileno(), 65536):
            self.raw += chunk
            self.got += [json.loads(f.body) for f in framer.feed(chunk) if f.body is not None]

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def answer(self, i: int | None, timeout: float = 60) -> dict:
        """The response to request `i` (None: the first error response with a null id not yet taken)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for m in self.got:
                if "method" not in m and m.get("id") == i and not m.get("_seen"):
                    m["_seen"] = True
                    return m
            time.sleep(0.02)
        raise AssertionError(f"no answer to {i}: {self.got}")


def test_every_bad_message_is_answered_and_the_server_keeps_serving(tmp_path: Path):
    binary = tmp_path / "blob.cu"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    uri = (tmp_path / "a.cu").as_uri()
    s = Server(tmp_path)
    s.send(frame(req(9, "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})))
    assert s.answer(9)["error"]["code"] == -32002  # before initialize
    s.send(frame(req(1, "initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}})))
    assert "capabilities" in s.answer(1)["result"]
    s.send(frame(note("initialized", {})))
    s.send(b"Content-Length: 5\r\n\r\n{bad}")  # not JSON
    assert s.answer(None)["error"]["code"] == -32700
    s.send(frame(req(2, "textDocument/hover", {"textDocument": 5, "position": "x"})))  # wrong params
    assert s.answer(2)["error"]["code"] == -32602
    s.send(b"Content-Length: 99999999999999\r\n\r\n")  # huge: refused unread, no MemoryError
    assert "over the limit" in s.answer(None)["error"]["message"]
    s.send(frame(note("textDocument/didChange", {  # before didOpen
        "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": "x"}]})))
    lone = json.dumps(CODE + "// \ud800\n")  # a lone surrogate, as JSON escapes it
    s.send(frame(note("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "cuda", "version": 1, "text": json.loads(lone)}})))
    s.send(frame(req(3, "textDocument/hover", {"textDocument": {"uri": (tmp_path / "missing.cu").as_uri()},
                                               "position": {"line": 0, "character": 0}})))
    assert s.answer(3)["result"] is None
    s.send(frame(req(4, "textDocument/hover", {"textDocument": {"uri": binary.as_uri()},
                                               "position": {"line": 0, "character": 1}})))
    assert s.answer(4)["result"] is None
    body = json.dumps(req(5, "textDocument/hover", {"textDocument": {"uri": uri},
                                                    "position": {"line": 2, "character": 8}})).encode()
    s.send(b"Content-Length: %d\r\n\r\n" % (len(body) + 40) + body  # too long: runs into the next message
           + frame(json.loads(body.replace(b'"id": 5', b'"id": 6'))))
    assert "CM501" in s.answer(5)["result"]["contents"]["value"]
    assert "CM501" in s.answer(6)["result"]["contents"]["value"]
    body = json.dumps(req(7, "shutdown", None)).encode()
    s.send(b"Content-Length: %d\r\n\r\n" % (len(body) - 5) + body)  # too short: the rest is skipped
    assert s.answer(None)["error"]["code"] == -32700
    s.send(frame(req(8, "shutdown", None)))
    assert s.answer(8)["result"] is None
    diags = [m["params"] for m in s.got if m.get("method") == "textDocument/publishDiagnostics"]
    assert [d["code"] for d in diags[-1]["diagnostics"]] == ["CM501"] and diags[-1]["uri"] == uri
    s.send(frame(note("exit", None)))
    assert s.proc.wait(30) == 0
    out = bytes(s.raw) + s.proc.stderr.read()  # type: ignore[union-attr]
    assert b"Traceback" not in out and b'"traceback"' not in out
    assert any("not open" in m["params"]["message"] for m in s.got if m.get("method") == "window/logMessage")


def test_exit_without_shutdown_exits_1(tmp_path: Path):
    s = Server(tmp_path)
    s.send(frame(req(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})))
    s.answer(1)
    s.send(frame(note("exit", None)))
    assert s.proc.wait(30) == 1


def test_framer_resynchronises_after_bad_lengths():
    ok = frame({"jsonrpc": "2.0", "method": "x"})
    f = Framer(1000)
    got = f.feed(b"Content-Length: 5000\r\n\r\n" + b"junk" + ok)
    assert [g.body for g in got] == [None, ok.split(b"\r\n\r\n", 1)[1]]
    long_ = b"Content-Length: %d\r\n\r\n{}" % (2 + 30)
    got = f.feed(long_ + ok)
    assert got == [Frame(b"{}", "Content-Length longer than the message"), Frame(ok.split(b"\r\n\r\n", 1)[1])]
    assert f.feed(b"Content-Length: 10\r\n\r\n{") == [] and f.pending
    assert f.stall()[0].body is None and not f.pending
