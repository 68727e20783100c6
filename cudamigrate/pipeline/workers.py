"""Worker processes with a hard per-file deadline, that die with their parent.

Why: the per-file time budget (engine.Budget) is checked by Python loops, so it cannot stop work running in C
(a regex, a parser, libclang). A ProcessPoolExecutor cannot cancel a running task either. Here each worker
takes one file at a time over its own pipe; a worker still busy `deadline_s` after it got its file is killed
(SIGKILL) and replaced, the file gets a one-line error, and the other files go on. Workers also ask the kernel
to kill them when their parent dies (Linux `PR_SET_PDEATHSIG`; elsewhere a thread watches the parent's pid),
so a `kill -9` of the main `fix` process leaves no workers behind.

The deadline counts the worker's CPU time (Linux `/proc/PID/stat`), like the budget: on a loaded machine a
worker's wall time stretches and a wall-clock kill dropped files an idle machine finished. A worker that makes
no CPU progress (blocked) is still killed after `WALL_BACKSTOP` times its deadline of wall time; where `/proc`
cannot be read the deadline is wall time.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection, wait
from typing import Any

PR_SET_PDEATHSIG = 1
POLL_S = 1.0  # how often the fallback watcher looks at the parent's pid
CPU_POLL_S = 0.5  # how often a busy worker's CPU time is read against its deadline
WALL_BACKSTOP = 10.0  # wall-time kill, in deadlines, for a worker blocked without using CPU
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of process `pid` (None where /proc cannot tell: not Linux, gone)."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14 and 15 of proc(5))
    except (OSError, IndexError, ValueError):
        return None


def die_with_parent(parent: int | None = None) -> None:
    """Make this process end when its parent does (called first thing in every worker)."""
    parent = parent if parent is not None else os.getppid()
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:  # the parent died before prctl took effect
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(POLL_S)

    threading.Thread(target=watch, name="cudamigrate-parent-watch", daemon=True).start()


def _worker_main(conn: Connection, fn: Callable[[Any], Any], parent: int) -> None:
    die_with_parent(parent)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        idx, item = msg
        try:
            out: tuple[int, bool, Any] = (idx, True, fn(item))
        except BaseException as exc:  # noqa: BLE001 - reported as that file's error by the parent
            out = (idx, False, exc)
        try:
            conn.send(out)
        except Exception as exc:  # an unpicklable result or exception: still one answer for that file
            conn.send((idx, False, RuntimeError(f"worker could not send its result: {type(exc).__name__}: {exc}")))


class _Worker:
    def __init__(self, ctx: Any, fn: Callable[[Any], Any]) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker_main, args=(child, fn, os.getpid()), daemon=True)
        self.proc.start()
        child.close()
        self.job: int | None = None
        self.started = 0.0
        self.cpu_started: float | None = None
        self.limit: float | None = None

    def overdue(self, now: float) -> bool:
        """Past its deadline: CPU seconds since it took its file (wall seconds where /proc cannot tell), or
        WALL_BACKSTOP deadlines of wall time."""
        if self.limit is None:
            return False
        wall = now - self.started
        cpu = cpu_seconds(self.proc.pid)
        if cpu is None or self.cpu_started is None:
            return wall >= self.limit
        return cpu - self.cpu_started >= self.limit or wall >= self.limit * WALL_BACKSTOP

    def kill(self) -> None:
        try:
            self.proc.kill()
        except (OSError, ValueError):
            pass
        self.proc.join(5)
        self.conn.close()


class Handout:
    """Which item a free worker takes next: neighbours in input order stay with one worker, and no worker idles
    while another has items left.

    Why: a worker's matchers memoise what they learn of the project headers a file includes (its macros, its
    token-pasting definitions, its preprocessor walk, its parse), and the files of one directory include the
    same headers. Handed out one at a time in input order, a directory's files went to every worker, and each
    worker paid for those headers again (cuda-samples v11.8, 16 workers emulated on 2 cores: +0.87 s of scan CPU
    over one worker, +0.17 s with neighbours kept together; on a 16-core host the difference was within the
    run-to-run spread, README: Speed). Each worker starts on its own contiguous share of the items; one whose share is
    used up takes the back half of the largest share left (work stealing by halves: the thief's items are
    neighbours too, and the end of the run stays balanced)."""

    def __init__(self, count: int, workers: int) -> None:
        bounds = [count * i // workers for i in range(workers + 1)]
        self.shares = [[bounds[i], bounds[i + 1]] for i in range(workers)]  # worker slot -> [next, end)

    def take(self, slot: int) -> int | None:
        """The next item for the worker in `slot`; None when every item has been handed out."""
        share = self.shares[slot]
        if share[0] >= share[1]:
            victim = max(self.shares, key=lambda r: r[1] - r[0])
            if victim[0] >= victim[1]:
                return None
            mid = victim[0] + (victim[1] - victim[0]) // 2
            share[0], share[1], victim[1] = mid, victim[1], mid
        share[0] += 1
        return share[0] - 1


def deadline_map(fn: Callable[[Any], Any], items: list[Any], jobs: int,
                 deadline_s: float | None | Callable[[Any], float | None],
                 failed: Callable[[Any, BaseException], Any], timed_out: Callable[[Any, float], Any],
                 ctx: Any = None, done: Callable[[Any], None] | None = None) -> Iterator[Any]:
    """`fn` over `items` in `jobs` forked workers, results in input order (`done`, when given, is called with each
    result as it arrives: a progress line). Items are handed out by `Handout` (neighbours to one worker). An
    item whose worker raises gets `failed(item, exc)`; one still running after its deadline (`deadline_s`, or
    `deadline_s(item)`; None: no limit) gets `timed_out(item, s)` and its worker is killed and replaced; a worker
    that dies gets `failed` for its item and is replaced (the replacement keeps its share)."""
    import multiprocessing as mp

    limit_of: Callable[[Any], float | None] = deadline_s if callable(deadline_s) else (lambda _it: deadline_s)

    ctx = ctx or mp.get_context("fork")
    workers = [_Worker(ctx, fn) for _ in range(max(1, min(jobs, len(items))))]
    handout = Handout(len(items), len(workers))
    results: dict[int, Any] = {}
    out = 0  # next result to yield
    # When the busy workers' deadlines are next looked at: every CPU_POLL_S, not at every answer. Read at every
    # answer, each of N workers' /proc was read for each of the run's files (N x files reads in the parent:
    # ~12,000 at -j 16 on cuda-samples), CPU that grew with the number of workers.
    next_check = time.monotonic() + CPU_POLL_S
    try:
        while out < len(items):
            for slot, w in enumerate(workers):
                if w.job is None:
                    nxt = handout.take(slot)
                    if nxt is None:  # every item handed out
                        break
                    w.conn.send((nxt, items[nxt]))
                    w.job, w.started, w.limit = nxt, time.monotonic(), limit_of(items[nxt])
                    w.cpu_started = cpu_seconds(w.proc.pid)
            busy = [w for w in workers if w.job is not None]
            # CPU deadlines are polled: how much CPU a worker gets in the next seconds is not known ahead
            timeout = CPU_POLL_S if any(w.limit is not None for w in busy) else None
            ready = wait([w.conn for w in busy], timeout) if busy else []
            now = time.monotonic()
            check = now >= next_check
            if check:
                next_check = now + CPU_POLL_S
            for i, w in enumerate(workers):
                if w.job is None:
                    continue
                job = w.job
                if w.conn in ready:
                    try:
                        idx, ok, val = w.conn.recv()
                        results[idx] = val if ok else failed(items[idx], val)
                        w.job = None
                        if done:
                            done(results[idx])
                        continue
                    except (EOFError, OSError) as exc:  # the worker died (killed, out of memory)
                        results[job] = failed(items[job], RuntimeError(f"worker process died ({exc or 'EOF'})"))
                elif check and w.limit is not None and w.overdue(now):
                    results[job] = timed_out(items[job], w.limit)
                else:
                    continue
                if done:
                    done(results[job])
                w.kill()
                workers[i] = _Worker(ctx, fn)
            while out in results:
                yield results.pop(out)
                out += 1
    finally:
        for w in workers:
            if w.job is None:
                try:
                    w.conn.send(None)
                except OSError:
                    pass
            w.kill() if w.job is not None else None
        for w in workers:
            w.proc.join(5)
            if w.proc.is_alive():
                w.kill()
