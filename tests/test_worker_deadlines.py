"""Worker processes: a hard per-file deadline that stops work in C, and no worker outliving its parent."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

from cudamigrate.pipeline.workers import deadline_map


def _work(x):
    if x == "hang":
        re.match(r"(a|aa)*b", "a" * 200)  # exponential in Python's re, in C: no Python-level check can stop it
    return (x, os.getpid())


def test_a_file_stuck_in_c_is_killed_and_the_others_go_on():
    """Only the stuck item has a deadline (set by the test), so no result depends on how loaded the machine is:
    the stuck one never finishes, and the others are never timed."""
    out = list(deadline_map(_work, ["x", "hang", "y", "z"], 1, lambda it: 0.5 if it == "hang" else None,
                            failed=lambda it, exc: ("failed", it), timed_out=lambda it, s: ("timeout", it, s)))
    assert out[0][0] == "x" and out[2][0] == "y" and out[3][0] == "z"
    assert out[1] == ("timeout", "hang", 0.5)
    assert out[0][1] != out[2][1]  # the killed worker was replaced


def _wait(x):
    time.sleep(1.5)  # wall time passes, CPU time does not: what a loaded machine does to a worker
    return x


def test_the_deadline_counts_cpu_time_not_wall_time():
    """A worker that waits 1.5 s (using no CPU) past a 0.5 s deadline is not killed: on a loaded machine the
    wall time of a file stretches, and a wall-clock kill dropped files an idle machine finished."""
    out = list(deadline_map(_wait, ["slow"], 1, 0.5, failed=lambda it, exc: ("failed", it),
                            timed_out=lambda it, s: ("timeout", it)))
    assert out == ["slow"]


def test_the_scan_budget_counts_cpu_time_not_wall_time(monkeypatch):
    """The wall clock jumps 1,000 s at every reading during the scan: a CPU-time budget of 60 s is not spent."""
    from pathlib import Path

    import cudamigrate.scan.engine as engine_mod

    from .helpers import engine_for

    eng = engine_for(time_budget_s=60.0)
    code = b"void f() {\n" + b"  cudaThreadSynchronize();\n" * 300 + b"}\n"
    t = [time.monotonic()]

    def jumping() -> float:
        t[0] += 1000.0
        return t[0]

    monkeypatch.setattr(engine_mod.time, "monotonic", jumping)
    res = eng.scan_bytes(Path("t.cu"), code)
    assert not res.errors and len([f for f in res.findings if f.rule_id == "CM501"]) == 300


def test_a_worker_that_dies_gives_that_file_an_error():
    out = list(deadline_map(lambda x: os._exit(3) if x == "die" else x, ["a", "die", "b"], 1, None,
                            failed=lambda it, exc: ("failed", it), timed_out=lambda it, s: ("timeout", it)))
    assert out == ["a", ("failed", "die"), "b"]


PARENT = r"""
import os, re, sys
sys.path.insert(0, sys.argv[1])
from cudamigrate.pipeline.workers import deadline_map
def work(x):
    os.write(1, f"{os.getpid()}\n".encode())  # one write: two workers do not interleave
    re.match(r"(a|aa)*b", "a" * 200)
list(deadline_map(work, [1, 2], 2, None, failed=lambda i, e: None, timed_out=lambda i, s: None))
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (already dead, not yet reaped by init) counts as gone
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_workers_die_with_their_parent():
    """kill -9 of the main process (no cleanup runs in it) leaves no worker behind."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.Popen([sys.executable, "-c", PARENT, root], stdout=subprocess.PIPE, text=True)
    workers = [int(p.stdout.readline()), int(p.stdout.readline())]
    assert all(_alive(w) for w in workers)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    for _ in range(600):  # the kernel's PDEATHSIG is immediate; the bound only keeps a broken build from hanging
        if not any(_alive(w) for w in workers):
            break
        time.sleep(0.05)
    assert not any(_alive(w) for w in workers)


def _staggered(x):
    time.sleep(0.002 * (x % 4))  # workers answer at different times: at each answer others are still busy
    return x


def test_busy_workers_deadlines_are_polled_not_read_at_every_answer(monkeypatch):
    """The parent reads a worker's CPU time once when it hands it a file and then only at each poll
    (`CPU_POLL_S`): read at every answer for every busy worker, the parent's CPU grew with workers x files
    (at -j 16 on cuda-samples' 791 files, ~12,000 reads of /proc)."""
    from cudamigrate.pipeline import workers

    reads = []
    real = workers.cpu_seconds
    monkeypatch.setattr(workers, "cpu_seconds", lambda pid: reads.append(pid) or real(pid))
    monkeypatch.setattr(workers, "CPU_POLL_S", 60.0)  # no poll falls due within this test
    items = list(range(120))
    out = list(deadline_map(_staggered, items, 4, 60.0, failed=lambda it, exc: ("failed", it),
                            timed_out=lambda it, s: ("timeout", it)))
    assert out == items
    assert len(reads) == len(items)  # one per file handed out; none per answer


def test_handout_keeps_neighbours_together_and_hands_out_each_item_once():
    """Each worker starts on its own contiguous share; one whose share is used up takes the back half of the
    largest share left. Every item is handed out exactly once, whatever order the workers ask in."""
    import random

    from cudamigrate.pipeline.workers import Handout

    h = Handout(16, 4)
    assert [h.take(s) for s in (0, 1, 2, 3)] == [0, 4, 8, 12]  # the shares' first items
    assert [h.take(0) for _ in range(3)] == [1, 2, 3]
    assert h.take(0) == 6  # share 0 is used up: the back half of the largest share left (share 1's 5..7)
    assert h.take(1) == 5
    rnd = random.Random(3)
    for count, workers in ((0, 1), (1, 4), (7, 3), (100, 16), (791, 16)):
        h = Handout(count, workers)
        got = []
        while True:
            slots = list(range(workers))
            rnd.shuffle(slots)
            taken = [h.take(s) for s in slots]
            got += [t for t in taken if t is not None]
            if all(t is None for t in taken):
                break
        assert sorted(got) == list(range(count))


def _dirs(x):
    return os.getpid(), x


def test_a_workers_files_are_neighbours():
    """What the hand-out is for: with 4 workers over 40 items, each worker's items are a few runs of consecutive
    items, not every 4th item (handed out one at a time in input order, a directory's files went to every
    worker, and each paid for the headers they share)."""
    out = list(deadline_map(_dirs, list(range(40)), 4, None, failed=lambda it, exc: None,
                            timed_out=lambda it, s: None))
    assert [x for _, x in out] == list(range(40))  # results in input order
    by_worker: dict[int, list[int]] = {}
    for pid, x in out:
        by_worker.setdefault(pid, []).append(x)
    runs = sum(1 + sum(1 for a, b in zip(xs, xs[1:]) if b != a + 1) for xs in by_worker.values())
    assert runs <= 20, by_worker  # each worker's share, plus stolen halves at the end (one at a time: ~40)
