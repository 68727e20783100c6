"""Running the engine over many files, in parallel when it pays off."""

from __future__ import annotations

import os
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .engine import Engine, FileResult, Options, guarded_file
from .project_index import ProjectIndex
from .rules.load import load_rules
from .textsafe import path_text

_WORKER: Engine | None = None
_MAX_BYTES: int | None = None


@dataclass
class EngineSpec:
    """Everything needed to rebuild the engine in a worker process."""

    rule_dirs: list[Path]
    options: Options
    max_bytes: int | None = None
    project_files: list[Path] | None = None  # the run's files, for the project index (headers, includers)

    def build(self) -> Engine:
        engine = Engine(load_rules(self.rule_dirs).rules, self.options)
        if self.project_files:
            engine.project = ProjectIndex(files=list(self.project_files))
        return engine


def _init(spec: EngineSpec) -> None:
    global _WORKER, _MAX_BYTES
    _WORKER = spec.build()
    _MAX_BYTES = spec.max_bytes


def _scan_one(item: tuple[str, str]) -> FileResult:
    path, display = item
    assert _WORKER is not None
    return _WORKER.scan_path(Path(path), display, _MAX_BYTES)


def _scan_chunk(fn: Callable[[Any], FileResult], items: list[Any]) -> list[FileResult]:
    return [fn(it) for it in items]


def pool_map(pool: Executor, fn: Callable[[Any], FileResult], items: list[Any], display: Callable[[Any], str],
             chunk: int = 16) -> Iterator[FileResult]:
    """fn over items in the pool, in order. A chunk whose worker fails (died, could not pickle a result)
    gives each of its files a one-line internal error instead of losing the whole run."""
    futures = [(items[i : i + chunk], pool.submit(_scan_chunk, fn, items[i : i + chunk]))
               for i in range(0, len(items), chunk)]
    for part, fut in futures:
        try:
            results = fut.result()
        except Exception as exc:
            results = [guarded_file(display(it), "scanning in a worker process", exc) for it in part]
        yield from results


def display_path(p: Path) -> str:
    """The path as reports show it: relative when below the current directory, with undecodable bytes
    and control characters escaped (`\\xff`, `\\x1b`), so no name can break a report or a terminal."""
    try:
        rel = os.path.relpath(p)
    except ValueError:
        return path_text(p)
    return path_text(p if rel.startswith("..") else rel)


def scan_files(
    engine: Engine, spec: EngineSpec, files: list[Path], jobs: int | None = None,
    progress: Callable[[FileResult], None] | None = None,
) -> Iterable[FileResult]:
    jobs = jobs or min(os.cpu_count() or 1, 8)
    items = [(str(p), display_path(p)) for p in files]
    if jobs <= 1 or len(items) < 64:
        for path, disp in items:
            r = engine.scan_path(Path(path), disp, spec.max_bytes)
            if progress:
                progress(r)
            yield r
        return
    with ProcessPoolExecutor(max_workers=jobs, initializer=_init, initargs=(spec,)) as pool:
        for r in pool_map(pool, _scan_one, items, lambda it: it[1]):
            if progress:
                progress(r)
            yield r
