"""Protocol fuzzer for `cudamigrate server`: a seeded storm of valid and broken LSP traffic against one server
process, then the server's last diagnostics of every document compared with `cudamigrate scan` of the same text.

    python bench/lsp_fuzz.py [--messages 10000] [--seed 20261206] [--time-limit 900]

The traffic (each a frame on the server's stdin): incremental edits at random LSP positions (in or past a
line, inside a surrogate pair) inserting code with findings and odd characters (form feed, vertical tab, NEL,
U+2028/U+2029, lone CR, CRLF, emoji, a lone surrogate), whole-text changes, hover and code-action requests
(also `source.fixAll`), `$/cancelRequest`, saves, closes and reopens, changes of documents never opened,
bursts of edits without a pause, a document over the size limit (10 MB) and a large one under it, and broken
frames: garbage, bodies that are not JSON (or not UTF-8, or nested 100,000 deep), JSON that is not a JSON-RPC
message, invalid params, unknown methods, a header without a length, Content-Length too short, too long, or
over the transport's limit. The fuzzer keeps its own copy of each document (LSP's line rules, UTF-16 columns,
written apart from the server's), so it knows the text the server should hold.

It prints figures and asserts nothing:
- crashes: the process ended before `exit`, an internal-error answer (-32603), or a traceback on stdout or
  stderr;
- hangs: a request of an intact frame left unanswered, or a document whose last diagnostics are not for its
  last version, when the time limit after the last message runs out;
- diagnostics equal to scan: documents whose last published diagnostics (rule and range) equal `scan`'s
  findings of the same text (positions converted by the fuzzer's own model).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cudamigrate.server.framing import Framer  # noqa: E402

CODE = [
    "#include <cuda_runtime.h>\n",
    "    cudaThreadSynchronize();\n",
    "    cudaMemcpyToSymbol(\"sym\", h, 4);\n",
    "texture<float, 1> texIn;\n",
    "__global__ void k(float *o) { o[0] = tex1Dfetch(texIn, 0); }\n",
    "void run(float *d) { cudaBindTexture(0, texIn, d, 64); }\n",
    "    cudaThreadExit();\n",
    "    cudaDeviceSynchronize();\n",
    "int main() {\n    return 0;\n}\n",
    "// cudaThreadSynchronize in a comment\n",
    "    const char *s = \"cudaThreadSynchronize()\";\n",
    "#if 0\n    cudaThreadSynchronize();\n#endif\n",
    "    __syncthreads(); float x = __shfl(v, 0);\n",
]
ODD = ["\f", "\x0b", "\x85", "\u2028", "\u2029", "\r", "\r\n", "\n", "\U0001F600", "\ud800", "\u00e9", "\t",
       "x" * 300, " ", "}", "{", "/*", "*/", "\"", "\\\n"]


def lsp_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\r\n|\r|\n", text)]


def to_index(text: str, starts: list[int], line: int, character: int) -> int:
    """An LSP position (UTF-16 columns) to an index into `text`, clamped as the spec says (past a line's end:
    its end; past the last line: the text's end); a column inside a surrogate pair stops before it."""
    if line >= len(starts):
        return len(text)
    i = starts[line]
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    while end > i and text[end - 1] in "\r\n":
        end -= 1
    units = 0
    while i < end:
        w = 2 if ord(text[i]) > 0xFFFF else 1
        if units + w > character:
            break
        units += w
        i += 1
    return i


def to_position(text: str, starts: list[int], index: int) -> tuple[int, int]:
    line = max(i for i, s in enumerate(starts) if s <= index) if len(starts) < 64 else _bisect(starts, index)
    head = text[starts[line]:index]
    return line, len(head) + sum(1 for c in head if ord(c) > 0xFFFF)


def _bisect(starts: list[int], index: int) -> int:
    import bisect

    return bisect.bisect_right(starts, index) - 1


def stored(text: str) -> str:
    """The text as the server keeps it (and a file holds it): a lone surrogate as U+FFFD."""
    return re.sub("[\ud800-\udfff]", "\ufffd", text)


def frame(obj: object) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Fuzz:
    def __init__(self, seed: int, root: Path) -> None:
        self.rnd = random.Random(seed)
        self.root = root
        self.proc = subprocess.Popen([sys.executable, "-m", "cudamigrate", "server"], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})
        self.got: list[dict] = []
        self.raw_out = bytearray()
        self.err = bytearray()
        self.docs: dict[str, str] = {}  # uri -> text (open documents)
        self.static: set[str] = set()  # the huge and large documents: opened, asked about, not edited
        self.versions: dict[str, int] = {}
        self.pending: set[int] = set()  # ids of requests in intact frames
        self.next_id = 1
        self.sent = 0
        self.kinds: dict[str, int] = {}
        self.outbox: queue.Queue[bytes | None] = queue.Queue(maxsize=500)  # a server that stops reading blocks
        self.deadline = float("inf")  # the writer thread, never the fuzzer past its time limit
        self.stuck = False
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._write, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        framer = Framer(1 << 31)
        assert self.proc.stdout is not None
        while chunk := os.read(self.proc.stdout.fileno(), 1 << 16):
            self.raw_out += chunk
            for f in framer.feed(chunk):
                if f.body is not None:
                    self.got.append(json.loads(f.body))

    def _write(self) -> None:
        assert self.proc.stdin is not None
        while (data := self.outbox.get()) is not None:
            try:
                self.proc.stdin.write(data)
                if self.outbox.empty():
                    self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                return

    def drained(self, timeout: float) -> bool:
        """Whether the server has read everything written so far (False: it stopped reading: a hang)."""
        end = time.monotonic() + timeout
        while not self.outbox.empty() and time.monotonic() < end:
            time.sleep(0.05)
        return self.outbox.empty()

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        while chunk := os.read(self.proc.stderr.fileno(), 1 << 16):
            self.err += chunk

    # -- sending ---------------------------------------------------------------------------------------------
    def write(self, data: bytes, kind: str) -> None:
        if self.stuck:
            return
        try:
            self.outbox.put(data, timeout=max(0.0, self.deadline - time.monotonic()))
        except queue.Full:
            self.stuck = True
            return
        self.sent += 1
        self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def request(self, method: str, params: object, kind: str) -> int:
        i = self.next_id
        self.next_id += 1
        self.pending.add(i)
        self.write(frame({"jsonrpc": "2.0", "id": i, "method": method, "params": params}), kind)
        return i

    def notify(self, method: str, params: object, kind: str) -> None:
        self.write(frame({"jsonrpc": "2.0", "method": method, "params": params}), kind)

    # -- documents -------------------------------------------------------------------------------------------
    def snippet(self) -> str:
        r = self.rnd
        parts = [r.choice(CODE) if r.random() < 0.5 else r.choice(ODD) for _ in range(r.randint(1, 3))]
        return "".join(parts)

    def open(self, name: str, text: str) -> str:
        uri = (self.root / name).as_uri()
        self.docs[uri] = text
        self.versions[uri] = self.versions.get(uri, 0) + 1
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cuda",
                                                              "version": self.versions[uri], "text": text}}, "open")
        return uri

    def position(self, text: str, starts: list[int]) -> dict:
        r = self.rnd
        if r.random() < 0.05:  # past the end of a line or of the document
            return {"line": r.randint(0, len(starts) + 2), "character": r.randint(0, 400)}
        line, col = to_position(text, starts, r.randint(0, len(text)))
        return {"line": line, "character": col + (1 if r.random() < 0.03 else 0)}

    def editable(self) -> list[str]:
        return sorted(set(self.docs) - self.static)

    def edit(self) -> None:
        uri = self.rnd.choice(self.editable())
        text = self.docs[uri]
        starts = lsp_starts(text)
        a, b = self.position(text, starts), self.position(text, starts)
        ia, ib = (to_index(text, starts, p["line"], p["character"]) for p in (a, b))
        if ia > ib:
            a, b, ia, ib = b, a, ib, ia
        new = self.snippet() if self.rnd.random() < 0.8 else ""
        self.docs[uri] = text[:ia] + new + text[ib:]
        self.versions[uri] += 1
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": self.versions[uri]},
                                               "contentChanges": [{"range": {"start": a, "end": b}, "text": new}]},
                    "edit")

    def replace(self) -> None:
        uri = self.rnd.choice(self.editable())
        text = "".join(self.snippet() for _ in range(self.rnd.randint(5, 60)))
        self.docs[uri] = text
        self.versions[uri] += 1
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": self.versions[uri]},
                                               "contentChanges": [{"text": text}]}, "replace")

    def ask(self) -> None:
        r = self.rnd
        pool = sorted(self.docs) if r.random() < 0.02 else self.editable()  # the big ones now and then
        uri = r.choice(pool) if r.random() < 0.9 else (self.root / "never-opened.cu").as_uri()
        text = self.docs.get(uri, "")
        starts = lsp_starts(text)
        p = self.position(text, starts)
        if r.random() < 0.55:
            self.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": p}, "hover")
        else:
            ctx: dict = {"diagnostics": []}
            if r.random() < 0.3:
                ctx["only"] = ["source.fixAll"]
            self.request("textDocument/codeAction", {"textDocument": {"uri": uri},
                                                     "range": {"start": p, "end": self.position(text, starts)},
                                                     "context": ctx}, "codeAction")

    def broken(self) -> None:
        r = self.rnd
        k = r.randrange(12)
        ok = frame({"jsonrpc": "2.0", "method": "$/unknownNotification", "params": {}})
        body = ok.split(b"\r\n\r\n", 1)[1]
        if k == 0:
            self.write(bytes(r.randrange(256) for _ in range(r.randint(1, 200))).replace(b"\r\n\r\n", b""), "garbage")
        elif k == 1:
            self.write(b"Content-Length: 9\r\n\r\n{not json", "not-json")
        elif k == 2:
            self.write(b"Content-Length: 4\r\n\r\n\xff\xfe\xfd\x00", "not-utf8")
        elif k == 3:
            deep = b"[" * 100000 + b"]" * 100000
            self.write(b"Content-Length: %d\r\n\r\n" % len(deep) + deep, "deep-json")
        elif k == 4:
            self.write(frame([1, 2, 3]), "not-jsonrpc")
        elif k == 5:
            self.request("textDocument/hover", {"textDocument": 7, "position": None}, "invalid-params")
        elif k == 6:
            self.request("cudamigrate/noSuchMethod", {}, "unknown-method")
        elif k == 7:
            self.write(b"X-Nothing: 1\r\n\r\n", "no-length")
        elif k == 8:
            self.write(b"Content-Length: %d\r\n\r\n" % (len(body) - 3) + body, "short-length")
        elif k == 9:  # too long: runs into the next frame, which must still be read
            self.write(b"Content-Length: %d\r\n\r\n" % (len(body) + r.randint(30, 400)) + body, "long-length")
        elif k == 10:
            self.write(b"Content-Length: 99999999999999\r\n\r\n", "huge-length")
        else:
            self.notify("textDocument/didChange", {"textDocument": {"uri": "file:///nowhere/x.cu", "version": 3},
                                                   "contentChanges": [{"text": "x"}]}, "change-unopened")

    def other(self) -> None:
        r = self.rnd
        k = r.randrange(4)
        if k == 0 and self.next_id > 1:
            self.notify("$/cancelRequest", {"id": r.randrange(1, self.next_id)}, "cancel")
        elif k == 1:
            uri = r.choice(self.editable())
            self.notify("textDocument/didSave", {"textDocument": {"uri": uri}}, "save")
        elif k == 2:
            uri = r.choice(self.editable())
            text = self.docs.pop(uri)
            self.notify("textDocument/didClose", {"textDocument": {"uri": uri}}, "close")
            self.open(uri.rsplit("/", 1)[1], text)  # and open again, as an editor does on revert
        else:  # a negative position means the start of the line or document: an empty range, nothing changes
            uri = r.choice(self.editable())
            self.versions[uri] += 1
            self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": self.versions[uri]},
                                                   "contentChanges": [{"range": {"start": {"line": -1, "character": -5},
                                                                                 "end": {"line": 0, "character": 0}},
                                                                       "text": ""}]}, "negative-position")

    # -- results ---------------------------------------------------------------------------------------------
    def answered(self) -> set[int]:
        return {m["id"] for m in list(self.got) if "method" not in m and isinstance(m.get("id"), int)}

    def last_diagnostics(self) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for m in list(self.got):
            if m.get("method") == "textDocument/publishDiagnostics":
                out[m["params"]["uri"]] = m["params"]
        return out


def run(args: argparse.Namespace) -> None:
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lsp-fuzz-") as tmp:
        root = Path(tmp)
        fz = Fuzz(args.seed, root)
        fz.deadline = t0 + args.time_limit
        fz.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}, "initialize")
        fz.notify("initialized", {}, "initialized")
        for i in range(6):
            fz.open(f"doc{i}.cu", "".join(fz.snippet() for _ in range(fz.rnd.randint(20, 120))))
        big = ("#include <cuda_runtime.h>\nvoid f() {\n    cudaThreadSynchronize();\n}\n" * 160000)[: 10 << 20]
        fz.static |= {fz.open("huge.cu", big),  # over the 8 MiB default: refused with a message
                      fz.open("large.cu", "".join(CODE) * 300)}  # ~4,000 lines, scanned
        while fz.sent < args.messages and time.monotonic() - t0 < args.time_limit and not fz.stuck:
            r = fz.rnd.random()
            if r < 0.55:
                fz.edit()
            elif r < 0.58:
                fz.replace()
            elif r < 0.73:
                fz.ask()
            elif r < 0.88:
                fz.broken()
            else:
                fz.other()
            if fz.rnd.random() < 0.004:  # a burst ends: let the debounce fire and scans run
                time.sleep(0.15)
        fz.request("textDocument/hover", {"textDocument": {"uri": (root / "doc0.cu").as_uri()},
                                          "position": {"line": 0, "character": 0}}, "hover")
        sent_s = time.monotonic() - t0
        deadline = time.monotonic() + args.settle
        fz.deadline = deadline
        stopped_reading = fz.stuck or not fz.drained(args.settle)
        while time.monotonic() < deadline and fz.proc.poll() is None:
            last = fz.last_diagnostics()
            if fz.pending <= fz.answered() and all(
                    last.get(u, {}).get("version") == v for u, v in fz.versions.items() if u in fz.docs):
                break
            time.sleep(0.1)
        crashed_early = fz.proc.poll() is not None
        unanswered = fz.pending - fz.answered()
        last = fz.last_diagnostics()
        stale = [u for u in fz.docs if last.get(u, {}).get("version") != fz.versions[u]]
        internal = [m for m in fz.got if "method" not in m and (m.get("error") or {}).get("code") == -32603]
        fz.deadline = time.monotonic() + 10
        fz.write(frame({"jsonrpc": "2.0", "id": 999999, "method": "shutdown"}), "shutdown")
        fz.write(frame({"jsonrpc": "2.0", "method": "exit"}), "exit")
        try:
            code = fz.proc.wait(60)
        except subprocess.TimeoutExpired:
            fz.proc.kill()
            code = -1
        try:
            fz.outbox.put_nowait(None)  # the writer thread ends (or is left blocked on a dead pipe: a daemon)
        except queue.Full:
            pass
        time.sleep(0.2)
        tracebacks = (b"Traceback" in fz.raw_out) + (b"Traceback" in fz.err) + (b'"traceback"' in fz.raw_out)
        equal, compared, diffs = compare(fz, root, last)
        crashes = int(crashed_early) + len(internal) + tracebacks + (code != 0)
        print(f"seed {args.seed}: {fz.sent} messages sent in {sent_s:.1f} s ({len(fz.pending)} requests), "
              f"total {time.monotonic() - t0:.1f} s")
        print("by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(fz.kinds.items(), key=lambda kv: -kv[1])))
        print(f"crashes: {crashes} (ended early: {int(crashed_early)}, internal errors: {len(internal)}, "
              f"tracebacks: {tracebacks}, exit status {code})")
        print(f"hangs: {len(unanswered) + len(stale) + stopped_reading} (unanswered requests: {len(unanswered)}, "
              f"documents without diagnostics of their last version: {len(stale)}, stopped reading its input: "
              f"{int(stopped_reading)})")
        errors = [m for m in fz.got if "method" not in m and m.get("error")]
        codes: dict[int, int] = {}
        for m in errors:
            codes[m["error"]["code"]] = codes.get(m["error"]["code"], 0) + 1
        print("error answers by code: " + ", ".join(f"{c}: {n}" for c, n in sorted(codes.items())))
        shown = [m for m in fz.got if m.get("method") == "window/showMessage"]
        print(f"messages shown: {len(shown)} ({sum('too large' in m['params']['message'] for m in shown)} size-limit)")
        total = sum(len(d.get("diagnostics", [])) for u, d in last.items() if u in fz.docs)
        print(f"diagnostics equal to scan: {equal}/{compared} documents ({total} diagnostics in the last publications)")
        for d in diffs[:5]:
            print("  " + d)


def compare(fz: Fuzz, root: Path, last: dict[str, dict]) -> tuple[int, int, list[str]]:
    """Write each open document's text to its file, `scan` them, and compare rules and ranges."""
    from urllib.parse import unquote, urlparse

    paths = {}
    for uri, text in fz.docs.items():
        p = Path(unquote(urlparse(uri).path))
        p.write_bytes(stored(text).encode("utf-8"))
        paths[str(p)] = uri
    out = subprocess.run([sys.executable, "-m", "cudamigrate", "scan", "--format", "json", *sorted(paths)],
                         cwd=ROOT, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    report = json.loads(out.stdout)
    want: dict[str, list] = {u: [] for u in paths.values()}
    for f in report["findings"]:
        uri = paths[f["path"]]
        text = stored(fz.docs[uri])
        starts = lsp_starts(text)
        lo = nl_index(text, f["line"], f["column"])
        hi = nl_index(text, f["end_line"], f["end_column"])
        want[uri].append((f["rule"], to_position(text, starts, lo), to_position(text, starts, hi)))
    equal, diffs = 0, []
    for uri, w in want.items():
        got = [(d["code"], (d["range"]["start"]["line"], d["range"]["start"]["character"]),
                (d["range"]["end"]["line"], d["range"]["end"]["character"]))
               for d in last.get(uri, {}).get("diagnostics", [])]
        if sorted(got) == sorted(w):
            equal += 1
        else:
            diffs.append(f"{uri.rsplit('/', 1)[1]}: server {sorted(set(got) - set(w))[:3]} scan {sorted(set(w) - set(got))[:3]}")
    return equal, len(want), diffs


def nl_index(text: str, line: int, column: int) -> int:
    """`scan`'s 1-based line (counted at \\n) and code-point column to an index into `text`."""
    start = 0
    for _ in range(line - 1):
        start = text.index("\n", start) + 1
    return start + column - 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=20261206)
    ap.add_argument("--time-limit", type=float, default=900, help="seconds for sending")
    ap.add_argument("--settle", type=float, default=120, help="seconds to wait for the last answers")
    run(ap.parse_args())


if __name__ == "__main__":
    main()
