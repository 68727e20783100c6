"""The CLI's semantic-mode setup: find and load the compile database, parse the TUs, warn once per problem;
and the `--timings` line.

Kept apart from `cli/scan.py` so the command module stays about options and output; the runner consumes the
`SemanticDB` this returns as its facts provider.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .output import err

if TYPE_CHECKING:
    from ..parse.clang_db import SemanticDB
    from ..workspace.request import Request


def setup_for_cli(paths: list[Path], files: list[Path], compile_commands: Path | None, enabled: bool,
                  jobs: int | None, warn: Callable[[str], None]) -> SemanticDB | None:
    """Find/load the compile database, parse the TUs of the files being scanned, warn once per problem."""
    if not enabled:
        return None
    from ..parse import clang as cl
    from ..parse.clang_db import open_db

    t0 = time.perf_counter()
    from ..pipeline.result_cache import unrecorded

    with unrecorded():  # listing every ancestor (`/`, `/tmp`) is asked again each run, not a result's dependency
        db_path = compile_commands or cl.find_compile_db(paths or [Path(".")])
    if db_path is None:
        return None
    db = open_db(db_path, warn)
    if db is None:
        return None
    db.timings.add("compile-db", time.perf_counter() - t0)
    wanted = {os.path.realpath(p) for p in files}
    tus = {f for f in db.by_file if f in wanted}
    if not tus and files:
        tus = set(db.by_file)  # only headers asked for: every TU may include them
    db.build(jobs, only=tus)
    for tu, why in sorted(db.failed.items()):
        warn(f"semantic mode: {os.path.relpath(tu)}: {why}; this translation unit is scanned with tree-sitter only")
    uncovered = [p for p in files if os.path.realpath(p) not in db.facts and os.path.realpath(p) not in db.failed]
    if uncovered:
        ex = ", ".join(str(p) for p in uncovered[:3])
        warn(f"semantic mode: {len(uncovered)} file(s) not reached from {db_path} are scanned with tree-sitter only "
             f"(e.g. {ex})")
    return db


def semantic_timed(paths: tuple[Path, ...], files: list[Path], req: Request, jobs: int | None):
    """The semantic database (or None) and the (wall, CPU) seconds it took, for `--timings`."""
    c0 = clock()
    db = semantic(paths, files, req, jobs)
    return db, since(c0, clock())


def semantic(paths: tuple[Path, ...], files: list[Path], req: Request, jobs: int | None):
    """The libclang fact database for semantic mode, or None (tree-sitter only, as `req.no_semantic` asks)."""
    if req.no_semantic:
        return None
    try:
        return setup_for_cli(list(paths), files, req.compile_commands, True, jobs, lambda m: err(f"warning: {m}"))
    except Exception as exc:  # semantic mode only refines: like a TU that fails, fall back to tree-sitter
        from ..core.errors import describe

        err(f"warning: semantic mode failed ({describe(exc)}); scanning with tree-sitter only")
        return None


def clock() -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process and of the worker processes it has waited for)."""
    try:
        import resource
    except ImportError:  # not on POSIX: this process only
        return time.perf_counter(), time.process_time()
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter(), me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def since(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    return b[0] - a[0], b[1] - a[1]


def timings(db, phases: dict[str, tuple[float, float]], nfiles: int) -> None:
    """One stderr line: each phase's wall and CPU time (CPU includes worker processes, counted in the phase
    that ends their pool), then the semantic database's own figures."""
    parts = [f"{k} {w:.2f}s wall {c:.2f}s cpu" for k, (w, c) in phases.items()]
    wall, cpu = sum(w for w, _ in phases.values()), sum(c for _, c in phases.values())
    parts.append(f"total {wall:.2f}s wall {cpu:.2f}s cpu")
    if db is not None:
        parts += [f"{k} {v:.2f}s" for k, v in db.timings.phases.items()]
        parts += [f"{k}={v}" for k, v in db.timings.counts.items()]
    rate = f", {nfiles / wall:.1f} files/s" if wall > 0 else ""
    err(f"timings: {', '.join(parts)}; files={nfiles}{rate}")
