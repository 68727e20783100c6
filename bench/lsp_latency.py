"""Language server latency: the time from a buffer's text to its diagnostics' findings, after warm-up.

    python bench/lsp_latency.py [FILES...]   (default: examples/legacy-app's sources)

Times `cudamigrate.server.analysis.analyse` (configuration lookup, engine from the per-configuration cache,
scan of the buffer) - what `textDocument/didChange` runs before publishing. The first call builds and warms
the engine; the figures are the median and worst of the next 20 calls per file. Prints figures, asserts
nothing.
"""

from __future__ import annotations

import statistics
import sys
import time
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


if __name__ == "__main__":
    main(sys.argv[1:])
