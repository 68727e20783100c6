"""A progress line on stderr for long scans, only when stderr is a terminal."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int, min_files: int = 200):
        self.total = total
        self.done = 0
        self.findings = 0
        self.enabled = sys.stderr.isatty() and total >= min_files
        self._last = 0.0

    def update(self, result) -> None:
        self.done += 1
        self.findings += len(result.findings)
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and self.done != self.total:
            return
        self._last = now
        width = 30
        filled = int(width * self.done / max(1, self.total))
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} files, {self.findings} findings")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * 79 + "\r")
            sys.stderr.flush()
