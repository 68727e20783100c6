"""How runner.pool_map spreads files over workers: chunk sizes, largest first, results in input order."""

from __future__ import annotations

from concurrent.futures import Future

from cudamigrate.pipeline.runner import chunk_size, pool_map, usable_cpus


class _Recorder:
    """An Executor that runs each submitted chunk at once and remembers the order of submission."""

    def __init__(self) -> None:
        self.submitted: list[list[int]] = []

    def submit(self, fn, *args):
        self.submitted.append(list(args[1]))
        fut: Future = Future()
        fut.set_result(fn(*args))
        return fut


def test_chunks_give_every_worker_several():
    assert chunk_size(2674, 16) == 16  # 2674 // 128 = 20, capped at 16 files a chunk
    assert chunk_size(700, 16) == 5  # 140 chunks for 16 workers
    assert chunk_size(64, 16) == 1 and chunk_size(10, 2) == 1
    assert usable_cpus() >= 1


def test_heaviest_chunks_go_first_and_results_keep_the_input_order():
    pool = _Recorder()
    items = list(range(10))
    weights = {i: (100 if i in (7, 8) else 1) for i in items}
    out = list(pool_map(pool, lambda x: x * 10, items, lambda it, exc: -1, chunk=2, weight=lambda i: weights[i]))
    assert out == [i * 10 for i in items]
    assert sorted(map(tuple, pool.submitted[:2])) == [(6, 7), (8, 9)]  # the two chunks holding the big files


def test_a_failed_chunk_is_one_error_per_file():
    class Failing(_Recorder):
        def submit(self, fn, *args):
            fut: Future = Future()
            if 3 in args[1]:
                fut.set_exception(RuntimeError("worker died"))
            else:
                fut.set_result(fn(*args))
            return fut

    out = list(pool_map(Failing(), lambda x: x, list(range(6)), lambda it, exc: f"err {it}", chunk=2))
    assert out == [0, 1, "err 2", "err 3", 4, 5]
