"""Running the engine over many files, in parallel when it pays off."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from .engine import Engine, FileResult, Options
from .project_index import ProjectIndex
from .rules.load import load_rules

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


def display_path(p: Path) -> str:
    try:
        rel = os.path.relpath(p)
    except ValueError:
        return str(p)
    return str(p) if rel.startswith("..") else rel


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
        for r in pool.map(_scan_one, items, chunksize=16):
            if progress:
                progress(r)
            yield r
