"""When the server scans a document: after the typing stops (debounce), one scan at a time, and never for
text that is already outdated.

Each change restarts the document's timer, so a burst of keystrokes costs one scan of the last text; a scan
that was queued for a generation the buffer has since left is skipped before it starts, and a result that
arrives for an outdated generation is dropped, so the editor only ever receives diagnostics of the text it
shows. Scans run on one worker thread, in order, so the protocol loop keeps reading (cancellations,
further edits) while the engine works, and the engine is never used by two threads at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Snapshot:
    """What one scan reads: a document's bytes at one generation (the server's count of its edits)."""

    uri: str
    generation: int
    data: bytes


class Scheduler(Generic[T]):
    """Debounced, serialised, outdated-work-dropping scans of documents.

    `snapshot(uri)` gives the document's current Snapshot (None once closed), `work(snapshot)` scans it on the
    worker thread, `done(snapshot, result)` publishes on the loop - only while the snapshot is still current.
    """

    def __init__(self, snapshot: Callable[[str], Snapshot | None], work: Callable[[Snapshot], T],
                 done: Callable[[Snapshot, T], None], delay: float) -> None:
        self.snapshot, self.work, self.done, self.delay = snapshot, work, done, delay
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cudamigrate-scan")
        self.scans = 0  # scans that ran (for tests and benches)
        self.skipped = 0  # outdated scans skipped before they started or dropped after

    def _current(self, snap: Snapshot) -> bool:
        now = self.snapshot(snap.uri)
        return now is not None and now.generation == snap.generation

    def request(self, uri: str, delay: float | None = None) -> None:
        """Scan `uri` once no further request for it has come for `delay` seconds (0: at the next turn)."""
        self.cancel(uri)
        loop = asyncio.get_running_loop()
        self._timers[uri] = loop.call_later(self.delay if delay is None else delay, self._start, uri)

    def cancel(self, uri: str) -> None:
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()

    def _start(self, uri: str) -> None:
        self._timers.pop(uri, None)
        snap = self.snapshot(uri)
        if snap is None:
            return
        fut = asyncio.get_running_loop().run_in_executor(self._pool, self._run, snap)
        fut.add_done_callback(lambda f: self._finish(snap, f))

    def _run(self, snap: Snapshot) -> Any:
        if not self._current(snap):  # outdated while it waited for the worker: not started
            return _SKIPPED
        self.scans += 1
        return self.work(snap)

    def _finish(self, snap: Snapshot, fut: asyncio.Future) -> None:
        if fut.cancelled():
            return
        result = fut.result()  # `work` reports its own errors in its result
        if result is _SKIPPED or not self._current(snap):
            self.skipped += 1
            return
        self.done(snap, result)

    async def now(self, snap: Snapshot) -> T:
        """Scan `snap` on the worker now (a request that needs the current findings), in turn with the rest."""
        return await self.call(self.work, snap)

    async def call(self, fn: Callable[..., R], *args: Any) -> R:
        """Run `fn` on the worker, in turn with the scans (what uses an engine runs there, one at a time)."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    def close(self) -> None:
        for uri in list(self._timers):
            self.cancel(uri)
        self._pool.shutdown(wait=False, cancel_futures=True)


_SKIPPED: Any = object()
