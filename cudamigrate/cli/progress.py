"""A progress line on stderr for long scans, only when stderr is a terminal.

Nothing is written when stderr is redirected (files, pipes, CI logs), when
TERM is `dumb`, or for scans under `min_files` files, which finish too fast
for a progress line to help.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty()) and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):  # closed or fake streams
        return False


class StatusLine:
    """One line of status rewritten in place on a terminal (nothing elsewhere), at most every `interval` s;
    `close` erases it. For work counted in steps other than files (compile verification's units); `Progress`
    draws its bar through one."""

    def __init__(self, stream: TextIO | None = None, interval: float = 0.2):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream)
        self.interval = interval
        self._last = 0.0
        self._width = 0

    def __call__(self, text: str) -> None:
        now = time.monotonic()
        if not self.enabled or now - self._last < self.interval:
            return
        self._last = now
        import shutil

        self.show(text[: max(1, shutil.get_terminal_size((80, 24)).columns - 1)])

    def show(self, line: str) -> None:
        """Write `line` over the previous one now (the caller fits it to the terminal)."""
        self.stream.write("\r" + line + " " * max(0, self._width - len(line)))
        self.stream.flush()
        self._width = len(line)

    def close(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0


class Progress:
    def __init__(self, total: int, min_files: int = 200, stream: TextIO | None = None, interval: float = 0.1):
        self.line = StatusLine(stream, interval)
        self.total = total
        self.done = 0
        self.findings = 0
        self.interval = interval
        self.enabled = total >= min_files and self.line.enabled
        self._last = 0.0

    def update(self, result) -> None:
        self.done += 1
        self.findings += len(result.findings)
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < self.interval and self.done != self.total:
            return
        self._last = now
        import shutil  # here: only a terminal that shows the line needs it

        cols = shutil.get_terminal_size((80, 24)).columns
        text = f"{self.done}/{self.total} files, {self.findings} findings"
        bar = max(10, min(30, cols - len(text) - 4))
        filled = int(bar * self.done / max(1, self.total))
        self.line.show(f"[{'#' * filled}{'.' * (bar - filled)}] {text}"[: max(1, cols - 1)])

    def close(self) -> None:
        if self.enabled:
            self.line.close()
