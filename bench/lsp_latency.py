"""Language server latency: the time from a buffer's text to its diagnostics' findings, after warm-up.

    python bench/lsp_latency.py [FILES...]   (default: examples/legacy-app's sources)

Times `cudamigrate.server.analysis.analyse` (configuration lookup, engine from the per-configuration cache,
scan of the buffer) - what `textDocument/didChange` runs before publishing. The first call builds and warms
the engine; the figures are the median and worst of the next 20 calls per file. Prints figures, asserts
nothing.

    python bench/lsp_latency.py --lsp FILE

Through the server process, as an editor sees it: the file opened, then 20 single-character edits, each
timed from the `didChange` written to its `publishDiagnostics` read (the debounce, `DEBOUNCE_S`, included),
then 10 edits back to back, timed from the last one to the one publication that answers them.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cudamigrate.server.analysis import Engines, analyse  # noqa: E402


def main(argv: list[str]) -> None:
    files = [Path(a) for a in argv] or sorted((ROOT / "examples" / "legacy-app").rglob("*.cu*"))
    engines = Engines()
    t0 = time.perf_counter()
    analyse(engines, files[0].resolve(), files[0].read_text(errors="replace"))
    print(f"first call (engine build + warm-up): {1000 * (time.perf_counter() - t0):.0f} ms")
    for f in files:
        text = f.read_text(errors="replace")
        times = []
        for i in range(21):
            t = time.perf_counter()
            a = analyse(engines, f.resolve(), text + "\n" * i)  # a new buffer each time, as after a keystroke
            times.append(1000 * (time.perf_counter() - t))
        times = times[1:]
        print(f"{f.name}: {len(text.splitlines())} lines, {len(a.findings)} findings: median "
              f"{statistics.median(times):.1f} ms, max {max(times):.1f} ms")


def server_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The server subprocess's environment: the caller's, with this checkout put first on PYTHONPATH and the
    caller's entries kept after it (scripts/device_run.sh puts the carried wheels, re2 among them, there:
    replacing PYTHONPATH left the GPU machine's server unable to import them)."""
    return {**environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), environ.get("PYTHONPATH")]))}


def through_server(path: Path) -> None:
    import json
    import subprocess
    import threading

    from cudamigrate.server.framing import Framer
    from cudamigrate.server.lsp import DEBOUNCE_S

    proc = subprocess.Popen([sys.executable, "-m", "cudamigrate", "server"], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=server_env(os.environ))
    published: dict[int, float] = {}

    def read() -> None:
        framer = Framer(1 << 30)
        while chunk := os.read(proc.stdout.fileno(), 1 << 16):  # type: ignore[union-attr]
            for f in framer.feed(chunk):
                m = json.loads(f.body) if f.body else {}
                if m.get("method") == "textDocument/publishDiagnostics":
                    published[m["params"]["version"]] = time.perf_counter()

    def send(obj: dict) -> float:
        body = json.dumps(obj).encode()
        proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        return time.perf_counter()

    def wait(version: int) -> float:
        while version not in published:
            time.sleep(0.001)
        return published[version]

    threading.Thread(target=read, daemon=True).start()
    uri = path.resolve().as_uri()
    text = path.read_text(errors="replace")
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None,
                                                                      "capabilities": {}}})
    t = send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "cuda", "version": 1, "text": text}}})
    print(f"{path.name}: {len(text.splitlines())} lines; open to diagnostics (engine build): "
          f"{1000 * (wait(1) - t):.0f} ms")

    def edit(version: int) -> float:
        char = " " if version % 2 else ""
        return send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"range": {
                "start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0 if char else 1}},
                "text": char}]}})

    times = []
    for v in range(2, 22):
        t = edit(v)
        times.append(1000 * (wait(v) - t))
        time.sleep(0.3)
    print(f"  one edit to its diagnostics: median {statistics.median(times):.0f} ms, max {max(times):.0f} ms "
          f"(debounce {1000 * DEBOUNCE_S:.0f} ms included)")
    for v in range(22, 32):
        t = edit(v)
    done = wait(31)
    time.sleep(1.0)
    answered = sorted(v for v in published if 22 <= v <= 31)
    print(f"  10 quick edits: last diagnostics {1000 * (done - t):.0f} ms after the last edit; versions answered: "
          f"{answered}")
    send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    send({"jsonrpc": "2.0", "method": "exit"})
    proc.wait(30)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--lsp"]:
        through_server(Path(sys.argv[2]))
    else:
        main(sys.argv[1:])
