"""Semantic mode, project database: parse the compile database's TUs and keep their facts.

Facts are per file (`FileFacts`), computed for every project file a TU touches;
a header included by several TUs takes its facts from the first one (in path
order), so it is reported once. TUs with the same `-x cuda` flags share one
precompiled CUDA runtime wrapper (about 5x faster). `fix` keeps TUs and reparses
them with the edited bytes (a precompiled preamble makes that cheap).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from . import clang as cl
from .clang_facts import FileFacts, Extractor, digest

# --------------------------------------------------------------------------- parsing TUs

# CXTranslationUnit_Incomplete: no end-of-TU work, i.e. no instantiation of the function templates the TU uses.
# Facts come from the cursors of the code as written (a template's pattern, never its instantiations), and
# constexpr templates that a value needs are instantiated at once anyway; measured on the 20-TU cuda-samples
# database: identical facts, parse CPU -8 % (Thrust TUs -10 %). No detailed preprocessing record either: macro
# uses come from expansion locations.
PARSE_OPTS_SCAN = 0x02
REPARSE_OPTS = 0x0
PREAMBLE_OPTS = 0x04 | 0x100  # precompiled preamble, created on the first parse (for reparses)
PCH_OPTS = 0x02 | 0x40  # CXTranslationUnit_Incomplete | CXTranslationUnit_SkipFunctionBodies


@dataclass
class TUResult:
    file: str
    facts: dict[str, FileFacts] = field(default_factory=dict)
    warning: str | None = None
    parse_s: float = 0.0  # wall seconds
    facts_s: float = 0.0
    parse_cpu_s: float = 0.0  # CPU seconds of the process that parsed it (time.process_time)
    facts_cpu_s: float = 0.0
    errors: int = 0
    pch_used: bool = False


def _fatal(ci, tu, main: str = "") -> tuple[int, str | None]:
    n = 0
    first = None
    for d in tu.diagnostics:
        if d.severity >= ci.Diagnostic.Error:
            n += 1
            if d.severity >= ci.Diagnostic.Fatal and first is None:
                where = f"line {d.location.line}"
                if d.location.file is not None and os.path.realpath(d.location.file.name) != os.path.realpath(main):
                    where = f"{d.location.file.name}:{d.location.line}"
                first = f"{where}: {d.spelling}"
    return n, first


_PCH_WORDS = ("precompiled", "pch", "ast file", "module file")


def _pch_failed(ci, tu) -> bool:
    """A fatal error that comes from loading the PCH (no source location, or clang names the PCH/AST file).

    Any other fatal error (`'omp.h' file not found`) is the TU's own: a plain parse stops at the same place,
    so parsing again without the PCH would only double the cost of a TU that fails anyway (measured: +2.3 s
    CPU on the 20-TU cuda-samples database, where two TUs need OpenMP headers).
    """
    for d in tu.diagnostics:
        if d.severity >= ci.Diagnostic.Fatal:
            text = d.spelling.lower()
            if d.location.file is None or any(w in text for w in _PCH_WORDS):
                return True
    return False


def parse_tu(cmd, keep: bool = False, unsaved: list[tuple[str, bytes]] | None = None, index=None,
             pch: str | None = None):
    """Parse one command; return TUResult (and the TU when keep). `pch`: a shared CUDA runtime PCH."""

    res = TUResult(str(cmd.file))
    try:
        ci = cl.cindex()
    except Exception as exc:
        res.warning = f"libclang unavailable: {exc}"
        return (res, None) if keep else res
    args = cl.clang_args(cmd)
    t0, c0 = time.perf_counter(), time.process_time()
    idx = index or ci.Index.create()
    opts = PARSE_OPTS_SCAN | (PREAMBLE_OPTS if keep else 0)
    files = [(p, d.decode("utf-8", "replace")) for p, d in (unsaved or [])] or None
    tu = None
    if pch and os.path.isfile(pch):
        try:
            tu = idx.parse(str(cmd.file), args=["-include-pch", pch, *args], options=opts, unsaved_files=files)
            if _pch_failed(ci, tu):
                tu = None  # a PCH that does not fit: parse from scratch
            else:
                res.pch_used = True  # a fatal error of the TU's own (a missing header) stays: a plain parse meets it too
        except Exception:
            tu = None
    if tu is None:
        try:
            tu = idx.parse(str(cmd.file), args=args, options=opts, unsaved_files=files)
        except Exception as exc:
            res.warning = f"libclang could not parse it ({exc})"
            return (res, None) if keep else res
    res.parse_s, res.parse_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    res.errors, fatal = _fatal(ci, tu, str(cmd.file))
    if fatal is not None:
        res.warning = f"libclang: {fatal}"
        return (res, tu) if keep else res
    t1, c1 = time.perf_counter(), time.process_time()
    try:
        res.facts = extract(ci, tu, cmd, unsaved, args)
    except Exception as exc:  # never crash a scan on an extractor bug
        res.warning = f"semantic extraction failed ({exc!r})"
        res.facts = {}
    res.facts_s, res.facts_cpu_s = time.perf_counter() - t1, time.process_time() - c1
    return (res, tu) if keep else res


def extract(ci, tu, cmd, unsaved=None, args: list[str] | None = None) -> dict[str, FileFacts]:
    args = args if args is not None else cl.clang_args(cmd)
    incs = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-I", "-isystem", "-iquote")]
    ex = Extractor(ci, tu, cmd.file, cl.cuda_path_for(cmd.argv), incs)
    for p, d in unsaved or []:
        rp = os.path.realpath(p)
        ex.src_cache[rp] = d
        ex.files[rp] = FileFacts(path=rp, digest=digest(d), tu=str(cmd.file))
    return ex.run()


def _parse_worker(item):
    cmd, pch = item
    return parse_tu(cmd, pch=pch)


def _pch_key(args: list[str]) -> list[str]:
    """The flags that shape the precompiled wrapper: all but the project's own -I/-iquote
    directories (kept when one of them shadows a toolkit header the wrapper includes)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-I", "-iquote") and i + 1 < len(args):
            d = args[i + 1]
            if any(os.path.exists(os.path.join(d, h)) for h in ("cuda_runtime.h", "cuda_runtime_api.h", "cuda.h",
                                                                  "driver_types.h", "crt")):
                out += [a, d]
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def build_pch(args: list[str], directory: str) -> str | None:
    """Precompile clang's CUDA runtime wrapper (force-included in every `-x cuda` TU) for one flag set.

    TUs with identical flags then load it instead of re-parsing <cuda_runtime.h> (about 5x faster).
    The wrapper is included first by the driver anyway, so the PCH changes no TU's meaning.
    """
    ci = cl.cindex()
    src = os.path.join(directory, "cudamigrate_prefix.cuh")
    with open(src, "w", encoding="utf-8") as fh:
        fh.write("/* cudamigrate: precompiled CUDA runtime wrapper */\n")
    out = os.path.join(directory, f"prefix-{hashlib.blake2b(repr(args).encode(), digest_size=8).hexdigest()}.pch")
    try:
        # incomplete (0x2): may be saved as a PCH; skip function bodies (0x40): everything in it is clang's wrapper
        # and toolkit/system headers, whose bodies no fact needs (facts are only taken in project files); measured
        # on 19 cuda-samples TUs: identical facts, parse CPU -5 % (docs/semantic-mode.md)
        tu = ci.Index.create().parse(src, args=args, options=PCH_OPTS)
        if any(d.severity >= ci.Diagnostic.Error for d in tu.diagnostics):
            return None
        tu.save(out)
    except Exception:
        return None
    return out if os.path.isfile(out) else None


# --------------------------------------------------------------------------- the project database


@dataclass
class Timings:
    phases: dict[str, float] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)

    def add(self, phase: str, seconds: float) -> None:
        self.phases[phase] = self.phases.get(phase, 0.0) + seconds

    def line(self) -> str:
        parts = [f"{k} {v:.2f}s" for k, v in self.phases.items()]
        extra = [f"{k}={v}" for k, v in self.counts.items()]
        return "timings: " + ", ".join(parts + extra)


class SemanticDB:
    """Facts for every project file reached from the compile database's TUs."""

    def __init__(self, commands: list, warnings: list[str] | None = None):
        self.commands = sorted(commands, key=lambda c: str(c.file))
        self.by_file = {str(c.file): c for c in self.commands}
        self.facts: dict[str, FileFacts] = {}
        self.owner: dict[str, str] = {}  # file -> TU its facts came from
        self.failed: dict[str, str] = {}  # TU -> warning
        self.warnings: list[str] = list(warnings or [])
        self.timings = Timings()
        self._tus: dict[str, Any] = {}
        self._index = None
        self.use_pch = True
        self._pch: dict[str, str] = {}  # TU -> PCH file
        self._pch_dir: tempfile.TemporaryDirectory[str] | None = None
        self._pch_by_key: dict[tuple, str | None] = {}
        # per TU, in build order: its timings and whether it used the shared PCH (facts left out), for
        # `scripts/bench_semantic.py` and the tests
        self.tu_timings: dict[str, TUResult] = {}

    # scanning: all TUs in parallel, facts shipped back
    def build(self, jobs: int | None = None, only: set[str] | None = None, min_group: int = 2) -> None:
        cmds = [c for c in self.commands if only is None or str(c.file) in only]
        t0 = time.perf_counter()
        jobs = jobs or min(os.cpu_count() or 1, 8)
        results: list[TUResult] = []
        if self.use_pch:
            self._build_pchs(cmds, min_group)
        self.timings.add("pch", time.perf_counter() - t0)
        items = [(c, self._pch.get(str(c.file))) for c in cmds]
        if jobs <= 1 or len(cmds) <= 1:
            results = [_parse_worker(i) for i in items]
        else:
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(max_workers=min(jobs, len(cmds))) as pool:
                results = list(pool.map(_parse_worker, items, chunksize=max(1, len(cmds) // (jobs * 4))))
        for r in results:
            self._merge(r)
            self.tu_timings[r.file] = replace(r, facts={})
        self.timings.add("libclang-wall", time.perf_counter() - t0)
        # per-TU wall intervals summed over the workers (not CPU: a worker waiting for the disk or for a core
        # of a loaded machine counts here), and the CPU those workers spent
        self.timings.add("libclang-parse-wall-sum", sum(r.parse_s for r in results))
        self.timings.add("libclang-parse-cpu", sum(r.parse_cpu_s for r in results))
        self.timings.add("facts-wall-sum", sum(r.facts_s for r in results))
        self.timings.add("facts-cpu", sum(r.facts_cpu_s for r in results))
        self.timings.counts["tus"] = len(cmds)
        self.timings.counts["tus_with_pch"] = sum(1 for r in results if r.pch_used)
        self.timings.counts["jobs"] = jobs

    def _build_pchs(self, cmds, min_group: int = 2) -> None:
        """One PCH per distinct `-x cuda` flag set shared by two or more TUs."""
        import tempfile

        groups: dict[tuple, list] = {}
        for c in cmds:
            a = tuple(_pch_key(cl.clang_args(c)))
            if a[:2] == ("-x", "cuda"):
                groups.setdefault(a, []).append(c)
        for a, cs in groups.items():
            if len(cs) < min_group:
                continue
            if self._pch_dir is None:
                self._pch_dir = tempfile.TemporaryDirectory(prefix="cudamigrate-pch-")
            if a not in self._pch_by_key:
                self._pch_by_key[a] = build_pch(list(a), self._pch_dir.name)
            pch = self._pch_by_key[a]
            if pch:
                for c in cs:
                    self._pch[str(c.file)] = pch
        self.timings.counts["pch"] = len(set(self._pch.values()))

    def _merge(self, r: TUResult) -> None:
        if r.warning:
            self.failed[r.file] = r.warning
            return
        for path, ff in r.facts.items():
            if path not in self.facts:
                self.facts[path] = ff
                self.owner[path] = r.file
            elif ff.digest == self.facts[path].digest:
                # a header's macro bodies are expanded by every TU that uses them
                mine = self.facts[path].expanded_bodies
                for off, n in ff.expanded_bodies.items():
                    mine[off] = mine.get(off, 0) + n

    def tu_for(self, path: str) -> Any:
        if path in self.by_file:
            return self.by_file[path]
        owner = self.owner.get(path)
        return self.by_file.get(owner) if owner else None

    # fixing: keep TUs, reparse with the edited bytes (precompiled preamble makes that cheap)
    def facts_for(self, path: Path, data: bytes) -> FileFacts | None:
        rp = os.path.realpath(path)
        ff = self.facts.get(rp)
        if ff is not None and ff.digest == digest(data):
            return ff
        cmd = self.tu_for(rp)
        if cmd is None or str(cmd.file) in self.failed:
            return None
        t0 = time.perf_counter()
        res = self._reparse(cmd, [(rp, data)])
        self.timings.add("libclang-reparse", time.perf_counter() - t0)
        if res is None:
            return None
        got = res.get(rp)
        if got is not None and got.digest == digest(data):
            return got
        return None

    def _reparse(self, cmd, unsaved):
        try:
            ci = cl.cindex()
        except Exception:
            return None
        key = str(cmd.file)
        tu = self._tus.get(key)
        if tu is None:
            if self._index is None:
                self._index = ci.Index.create()
            res, tu = parse_tu(cmd, keep=True, unsaved=unsaved, index=self._index, pch=self._pch.get(key))
            if tu is None or res.warning:
                return None
            self._tus[key] = tu
            return res.facts
        try:
            tu.reparse(unsaved_files=[(p, d.decode("utf-8", "replace")) for p, d in unsaved], options=REPARSE_OPTS)
        except Exception:
            return None
        n, fatal = _fatal(ci, tu)
        if fatal is not None:
            return None
        return extract(ci, tu, cmd, unsaved)


def open_db(db_path: Path, warn: Callable[[str], None]) -> SemanticDB | None:
    """Load compile_commands.json; None (after ONE warning) when libclang is not usable."""
    ok, why = cl.available()
    if not ok:
        warn(f"semantic mode unavailable: {why}; scanning with tree-sitter only")
        return None
    try:
        cmds = cl.load_compile_db(db_path)
    except (OSError, ValueError, KeyError) as exc:
        warn(f"{db_path}: cannot read compile database ({exc}); scanning with tree-sitter only")
        return None
    return SemanticDB(cmds)


