"""One pipeline over many files, for `scan`, `plan` and `fix`, in worker processes when it pays off.

Per file there is one entry point for each kind of work, and each is a pure function of (engine, path, bytes):

  scan_file  read (bounded by `--max-file-size`) -> Engine.scan_bytes -> FileResult
  fix_file   read (bounded) -> fix.apply.fix_bytes (scan, edit, re-scan in passes) -> FixOutcome

`run` maps one of them over the run's files: in this process for small inputs (fewer than
`PARALLEL_MIN_FILES` files) or `-j 1`, else in a process pool whose workers rebuild the engine from an
`EngineSpec`. Results come back in input order, so reports and `fix`'s writes (done by the caller, one file at
a time, through fix/write.py's compare-and-swap) are deterministic whatever the number of workers.

Semantic mode plugs in as an optional facts provider (a `SemanticDB`): for scanning, each file's precomputed
facts travel with it to the worker that scans it (they are picklable and checked against the bytes' digest
there); `fix` needs libclang to reparse the edited bytes with translation units kept in this process, so a fix
run with facts stays in this process.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol, TypeVar

from . import result_cache as cache
from ..scan.engine import Engine, FileResult, Options, guarded_file
from ..core.errors import internal_message, trace
from ..read.project_index import ProjectIndex
from ..knowledge.load import load_rules
from ..read.source import DEFAULT_MAX_BYTES, SourceError, load_source
from ..core.textsafe import display_path, display_paths  # noqa: F401  (display_path re-exported: reports' names)

if TYPE_CHECKING:  # imported where used: a scan loads neither the fixer nor the pool machinery
    from concurrent.futures import Executor, ProcessPoolExecutor

    from ..fix.apply import FixResult
    from ..fix.write import Snapshot

PARALLEL_MIN_FILES = 64  # below this, starting workers costs more than it saves
# from the start of the process: a matcher's memo cache (keyed by a header's stat) filled by an earlier scan in
# this process stands for a read that later files rely on, so the result cache's record of reads must include it
cache.install_read_recorder()
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)  # what a Work returns (a protocol only produces it)


@dataclass
class EngineSpec:
    """Everything needed to rebuild the engine in a worker process."""

    rule_dirs: list[Path]
    options: Options
    max_bytes: int | None = None
    project_files: list[Path] | None = None  # the run's files, for the project index (headers, includers)
    use_rule_cache: bool = True  # False: `--no-cache` (knowledge/rule_cache.py)

    def build(self) -> Engine:
        return Engine(load_rules(self.rule_dirs, use_cache=self.use_rule_cache).rules, self.options,
                      project=ProjectIndex(files=list(self.project_files)) if self.project_files else None)


@dataclass(frozen=True)
class FileJob:
    """One file of the run: its real path, the name reports show, and its shipped semantic facts (or None)."""

    path: str
    display: str
    facts: Any = None


class FactsProvider(Protocol):
    """Semantic mode's facts (parse/clang_db.SemanticDB): precomputed per file, or recomputed for new bytes."""

    facts: dict[str, Any]

    def facts_for(self, path: Path, data: bytes) -> Any: ...


def _shipped(facts: Any) -> Callable[[Path, bytes], Any]:
    """The provider a worker uses for a file's shipped facts: only for the very bytes they were computed from."""
    from ..parse.clang_facts import digest

    return lambda _p, data: facts if facts is not None and facts.digest == digest(data) else None


# --------------------------------------------------------------------------- per-file entry points


def scan_file(engine: Engine, job: FileJob, max_bytes: int | None) -> FileResult:
    """Scan one file: the single place a file's bytes become its FileResult."""
    return scan_file_hashed(engine, job, max_bytes)[0]


def scan_file_hashed(engine: Engine, job: FileJob, max_bytes: int | None) -> tuple[FileResult, str | None]:
    """scan_file, and the content hash of the very bytes scanned (None when unread): the result cache stores
    a result only under the hash of what produced it."""
    try:
        src = load_source(Path(job.path), max_bytes or DEFAULT_MAX_BYTES)
    except SourceError as exc:
        return FileResult(job.display, errors=[f"{job.display}: {exc}"]), None
    except Exception as exc:  # an unexpected failure reading one file must not stop the run
        return guarded_file(job.display, "reading", exc), None
    return engine.scan_guarded(src, job.display), cache.content_hash(src.data)


@dataclass
class FixOutcome:
    """What fixing one file computed; the caller writes `result.fixed` (compare-and-swap against `snapshot`)."""

    display: str
    path: str
    result: FixResult | None = None
    snapshot: Snapshot | None = None
    warnings: list[str] = field(default_factory=list)  # notes about the bytes read (non-UTF-8 kept, ...)
    error: str | None = None  # the file could not be read (bad input: exit 1)
    internal: str | None = None  # a bug while fixing it (exit 2)
    traceback: str | None = None


def fix_file(engine: Engine, job: FileJob, max_bytes: int | None, unsafe: bool,
             display_only: frozenset[str] = frozenset()) -> FixOutcome:
    """Compute one file's fix; writes nothing (the parent writes, in order)."""
    from ..fix import apply as fix_apply
    from ..fix.write import Snapshot

    out = FixOutcome(job.display, job.path)
    try:
        try:
            src = load_source(Path(job.path), max_bytes or DEFAULT_MAX_BYTES)
        except SourceError as exc:
            out.error = f"{job.display}: {exc}"
            return out
        out.warnings = list(src.warnings)
        out.result = fix_apply.fix_bytes(engine, Path(job.path), src.data, job.display, unsafe=unsafe, display_only=display_only)
        assert src.stat is not None  # load_source fstat()s the file it reads
        out.snapshot = Snapshot.of(src.stat, src.data)
    except Exception as exc:  # never stop half way: the other files are still fixed
        return _fix_failed(job.display, job.path, exc, "internal error while fixing")
    return out


def _fix_failed(display: str, path: str, exc: BaseException, stage: str) -> FixOutcome:
    msg = internal_message(display, None, exc, stage)
    return FixOutcome(display, path, internal=msg, traceback=f"{msg}\n{trace(exc)}")


# --------------------------------------------------------------------------- the work, as picklable objects


class Work(Protocol[R_co]):
    def __call__(self, engine: Engine, job: FileJob) -> R_co: ...

    def failed(self, job: FileJob, exc: BaseException) -> R_co: ...

    def timed_out(self, job: FileJob, seconds: float) -> R_co: ...


@dataclass(frozen=True)
class ScanWork:
    max_bytes: int | None = None
    ships_facts = True  # precomputed facts travel with each file
    budgets = 1  # per-file time budgets one file's work may use

    def __call__(self, engine: Engine, job: FileJob) -> FileResult:
        return scan_file(engine, job, self.max_bytes)

    def failed(self, job: FileJob, exc: BaseException) -> FileResult:
        return guarded_file(job.display, "scanning in a worker process", exc)

    def timed_out(self, job: FileJob, seconds: float) -> FileResult:
        return FileResult(job.display, errors=[hard_deadline_message(job.display, seconds)])


@dataclass(frozen=True)
class CachedScanWork:
    """ScanWork for a cached run: (result, content hash of the scanned bytes, files and directories this
    process read since its last answer) - what the result cache needs to store the result safely."""

    max_bytes: int | None = None
    ships_facts = False  # semantic mode is not cached
    budgets = 1

    def __call__(self, engine: Engine, job: FileJob) -> tuple[FileResult | bytes, str | None, tuple[list[str], list[str]]]:
        """The result packed for the cache (`cache.pack`) where it can be: the parent unpacks it (it would
        unpickle it anyway) and stores the very bytes, instead of pickling every result again serially."""
        result, scanned = scan_file_hashed(engine, job, self.max_bytes)
        packed = None
        if _IN_POOL and scanned is not None and not result.errors and not result.internal:
            packed = cache.pack(result)
        return (packed if packed is not None else result), scanned, cache.new_reads()

    def failed(self, job: FileJob, exc: BaseException) -> tuple[FileResult, None, tuple[list[str], list[str]]]:
        return guarded_file(job.display, "scanning in a worker process", exc), None, ([], [])

    def timed_out(self, job: FileJob, seconds: float) -> tuple[FileResult, None, tuple[list[str], list[str]]]:
        return FileResult(job.display, errors=[hard_deadline_message(job.display, seconds)]), None, ([], [])


@dataclass(frozen=True)
class FixWork:
    max_bytes: int | None = None
    unsafe: bool = False
    display_only: frozenset[str] = frozenset()
    ships_facts = False  # fixing reparses edited bytes: libclang's translation units live in this process
    budgets = 2 * (1 + 10)  # a fix scans once per pass (fix/apply.py: MAX_PASSES 10), then checks the result

    def __call__(self, engine: Engine, job: FileJob) -> FixOutcome:
        return fix_file(engine, job, self.max_bytes, self.unsafe, self.display_only)

    def failed(self, job: FileJob, exc: BaseException) -> FixOutcome:
        return _fix_failed(job.display, job.path, exc, "internal error while fixing in a worker process")

    def timed_out(self, job: FileJob, seconds: float) -> FixOutcome:
        return FixOutcome(job.display, job.path, error=hard_deadline_message(job.display, seconds) + "; not fixed")


# --------------------------------------------------------------------------- running


_WORKER: Engine | None = None
_WORK: Any = None


HARD_DEADLINE_FACTOR = 1.5  # the in-Python budget stops a file first; the kill is for work in C it cannot stop
HARD_DEADLINE_GRACE_S = 10.0


def hard_deadline(budget_s: float | None, work: Any) -> float | None:
    """Seconds after which a worker still busy with one file is killed (None: the run has no budget)."""
    if budget_s is None:
        return None
    return budget_s * getattr(work, "budgets", 1) * HARD_DEADLINE_FACTOR + HARD_DEADLINE_GRACE_S


def hard_deadline_message(display: str, seconds: float) -> str:
    return (f"{display}: worker stopped after the hard per-file deadline of {seconds:g} s (work the time budget "
            f"could not interrupt; pathological input?); no findings reported for it")


def _init(spec: EngineSpec, work: Any) -> None:
    from .workers import die_with_parent

    die_with_parent()
    global _WORKER, _WORK
    _WORKER = spec.build()
    _WORK = work


def _pool(engine: Engine, spec: EngineSpec, work: Any, jobs: int) -> ProcessPoolExecutor:
    """Workers that start with this process's engine: forked where the platform allows, so the compiled
    rule set (rules, templates, keyword regexes) and the project index are inherited instead of loaded
    again in every worker; elsewhere (spawn) each worker rebuilds the engine from `spec` once."""
    import multiprocessing as mp  # here: a one-file run never starts a pool
    from concurrent.futures import ProcessPoolExecutor

    global _WORKER, _WORK
    if "fork" in mp.get_all_start_methods() and sys.platform.startswith("linux"):
        _WORKER, _WORK = engine, work  # what the forked children see
        engine.warm_up()
        return ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("fork"))
    return ProcessPoolExecutor(max_workers=jobs, initializer=_init, initargs=(spec, work))


_IN_POOL = False  # True in pool workers only (set by `_in_worker`): CachedScanWork packs results there


def _in_worker(job: FileJob) -> Any:
    global _IN_POOL
    _IN_POOL = True
    assert _WORKER is not None
    return _WORK(_WORKER.with_run(semantic_provider=_shipped(job.facts) if job.facts is not None else None), job)


def _chunk(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    return [fn(it) for it in items]


def usable_cpus() -> int:
    """The CPUs this process may run on (a CI container's CPU set, `taskset`), all of them: `-j`'s default.
    (It was capped at 8, which left half of a 16-core CI host idle.)"""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


CHUNKS_PER_WORKER = 8  # enough chunks that a slow one is a small part of a worker's share
MAX_CHUNK = 16  # files per chunk at most: fewer round trips on huge runs, still fine-grained


def chunk_size(n_items: int, jobs: int) -> int:
    """Files per chunk: small enough that every worker gets several chunks (the last ones to finish are then
    short, so no core idles while one worker ends a long chunk), large enough to amortise a round trip."""
    return max(1, min(MAX_CHUNK, n_items // (jobs * CHUNKS_PER_WORKER)))


def _weight(item: Any) -> int:
    """A file's expected cost: its size (scan time grows with it); 0 when it cannot be stat'ed."""
    try:
        return os.stat(item.path).st_size
    except (OSError, AttributeError, TypeError):
        return 0


def pool_map(pool: "Executor", fn: Callable[[Any], R], items: list[Any], failed: Callable[[Any, BaseException], R],
             chunk: int = 16, weight: Callable[[Any], int] | None = None) -> Iterator[R]:
    """fn over items in the pool, results in input order. With `weight`, chunks are submitted heaviest first
    (longest-processing-time-first: the big files start at once instead of arriving last and leaving the
    other workers idle at the end); each chunk holds neighbours in input order, so a directory's files (and
    the headers they share, which a worker's matchers memoise) stay together. A chunk whose worker fails
    (died, could not pickle a result) gives each of its files a one-line internal error (`failed`) instead
    of losing the whole run."""
    parts = [items[i : i + chunk] for i in range(0, len(items), chunk)]
    order = list(range(len(parts)))
    if weight is not None:
        sizes = [sum(weight(it) for it in part) for part in parts]
        order.sort(key=lambda k: -sizes[k])
    futures: dict[int, Any] = {k: pool.submit(_chunk, fn, parts[k]) for k in order}
    for k, part in enumerate(parts):
        try:
            results = futures.pop(k).result()
        except Exception as exc:
            results = [failed(it, exc) for it in part]
        yield from results


def run(engine: Engine, spec: EngineSpec, files: list[Path], work: Any, jobs: int | None = None,
        progress: Callable[[Any], None] | None = None, facts: FactsProvider | None = None) -> Iterator[Any]:
    """`work` (ScanWork, FixWork) over `files`, results in input order; `facts`: semantic mode's provider."""
    jobs = jobs or usable_cpus()
    ship = facts is not None and work.ships_facts
    items = [FileJob(str(p), d, facts.facts.get(os.path.realpath(p)) if ship and facts is not None else None)
             for p, d in zip(files, display_paths(files), strict=True)]
    if jobs <= 1 or len(items) < PARALLEL_MIN_FILES or (facts is not None and not ship):
        for job in items:
            if ship:
                r = work(engine.with_run(semantic_provider=_shipped(job.facts)), job)
            else:
                r = work(engine.with_run(semantic_provider=facts.facts_for) if facts is not None else engine, job)
            if progress:
                progress(r)
            yield r
        return
    import multiprocessing as mp

    if "fork" in mp.get_all_start_methods() and sys.platform.startswith("linux"):
        # forked workers inherit this engine; each is killed and replaced when one file runs past the deadline
        from .workers import deadline_map

        global _WORKER, _WORK
        _WORKER, _WORK = engine, work
        engine.warm_up([Path(job.path) for job in items])
        deadline = hard_deadline(engine.opts.time_budget_s, work)
        timed_out = getattr(work, "timed_out", None) or (
            lambda job, secs: work.failed(job, TimeoutError(hard_deadline_message(job.display, secs))))
        # progress as each file arrives (workers finish out of input order; results still come in it)
        yield from deadline_map(_in_worker, items, jobs, deadline, work.failed, timed_out, done=progress)
        return
    with _pool(engine, spec, work, jobs) as pool:
        for r in pool_map(pool, _in_worker, items, work.failed, chunk_size(len(items), jobs), _weight):
            if progress:
                progress(r)
            yield r


def scan_files(engine: Engine, spec: EngineSpec, files: list[Path], jobs: int | None = None,
               progress: Callable[[FileResult], None] | None = None,
               facts: FactsProvider | None = None, use_cache: bool = False,
               completed: list[tuple[str, cache.RunFiles]] | None = None,
               digest: str | None = None, db: cache.ResultCache | None = None) -> Iterator[FileResult]:
    """Scan `files` (see `run`). With `use_cache` (and no semantic facts), files whose stored result is still
    valid (cudamigrate/pipeline/result_cache.py) are not scanned again, and what is scanned is stored. `completed` receives
    (run digest, files) when every file's result ended up cached (what a replay needs: cudamigrate/pipeline/replay.py);
    `digest`: the run digest when the caller computed it already (`run_digest(engine, spec)`); `db`: the
    caller's open result cache (it closes it), else one is opened and closed here."""
    if use_cache and facts is None and not os.environ.get("CUDAMIGRATE_NO_CACHE"):
        own = db is None
        db = db if db is not None else cache.ResultCache()
        if db.enabled:
            return _scan_cached(engine, spec, files, jobs, progress, db, completed, digest, own)
    return run(engine, spec, files, ScanWork(spec.max_bytes), jobs, progress, facts)


def run_digest(engine: Engine, spec: EngineSpec, memo: cache.ResultCache | None = None) -> str:
    """What every cached result of this run depends on besides the files (cudamigrate/pipeline/result_cache.py)."""
    return cache.run_digest(spec.rule_dirs, engine.opts, memo, max_bytes=spec.max_bytes)


def _scan_cached(engine: Engine, spec: EngineSpec, files: list[Path], jobs: int | None,
                 progress: Callable[[FileResult], None] | None, db: cache.ResultCache,
                 completed: list[tuple[str, cache.RunFiles]] | None = None,
                 digest: str | None = None, own: bool = True) -> Iterator[FileResult]:
    """Cached results where valid, the others scanned (in workers when many), all in input order."""
    try:
        items = list(zip(map(str, files), display_paths(files), strict=True))
        run_ = cache.CachedRun(db, digest or run_digest(engine, spec, db), items, spec.max_bytes or DEFAULT_MAX_BYTES)
        before, _ = cache.recorded_reads()
        cache.new_reads()  # forked workers then report only what they read themselves
        hits, todo = run_.partition()
        opened, listed = cache.recorded_reads()
        in_workers: set[str] = set()
        fresh = run(engine, spec, [files[i] for i in todo], CachedScanWork(spec.max_bytes), jobs)
        pending = iter(todo)
        for i in range(len(items)):
            if i in hits:
                r = hits[i]
            else:
                r, scanned, (o, ls) = next(fresh)
                blob = r if isinstance(r, bytes) else None
                r = cache.unpack(r) if blob is not None else r
                opened.update(o)
                in_workers.update(o)
                listed.update(ls)
                run_.record(next(pending), r, scanned, blob)
            if progress:
                progress(r)
            yield r
        o, ls = cache.recorded_reads()
        run_.finish(opened | o, listed | ls, (o - before) | in_workers)
        if completed is not None and run_.complete is not None:
            completed.append((run_.run, run_.complete))
    finally:
        if own:
            db.close()
        else:
            db.flush()


def fix_files(engine: Engine, spec: EngineSpec, files: list[Path], unsafe: bool,
              display_only: frozenset[str] = frozenset(), jobs: int | None = None,
              facts: FactsProvider | None = None) -> "FixRun":
    """Compute the fixes of `files` (see `run`); the caller writes them, in this order. The outcomes are
    settled across the run first (fix/consistency.py): a consistency group is fixed in every file or in none,
    so files that applied an edit of a group some other file cannot fix are fixed again here without it.
    `fix_files(...).withheld` lists those groups (one line each, every use named)."""
    from ..fix import consistency
    from ..fix.apply import fix_bytes

    outcomes = list(run(engine, spec, files, FixWork(spec.max_bytes, unsafe, display_only), jobs, None, facts))

    def refix(out: FixOutcome, groups: frozenset[str]) -> FixOutcome:
        assert out.result is not None
        run_engine = engine.with_run(semantic_provider=facts.facts_for if facts is not None else None)
        try:
            res = fix_bytes(run_engine, Path(out.path), out.result.original, out.display, unsafe=unsafe,
                            display_only=display_only, groups=groups)
        except Exception as exc:  # like fix_file: one file's bug is one line, the others go on
            return _fix_failed(out.display, out.path, exc, "internal error while fixing")
        return replace(out, result=res)

    outcomes, blocked, withheld = consistency.settle(outcomes, lambda o: o.result, refix)
    return FixRun(outcomes, consistency.report(withheld, [o.result for o in outcomes if o.result is not None]),
                  blocked)


@dataclass
class FixRun:
    """A run's fix outcomes (in input order) and the consistency groups withheld in every file (one line each)."""

    outcomes: list[FixOutcome]
    withheld: list[str]
    blocked: frozenset[str] = frozenset()  # the groups withheld: every later re-fix of a file leaves them out too

    def __iter__(self) -> Iterator[FixOutcome]:
        return iter(self.outcomes)
