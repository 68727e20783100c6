"""Compile-verified `fix`: every translation unit the edits reach is compiled with them, and without them where
that fails; a unit the edits make worse gets its edits rolled back, bisected by rule and then by finding, until
it is no worse.

Why this shape:

* Rules are the fixer's own claims; the user's compiler is the proof. The units checked are the build's
  translation units that reach a changed file (fixproof/units.py: the compile database's, else the files no other
  file includes), with the commands a found database may run (fixproof/consent.py).
* A unit that builds with the edits cannot be worse, so its original is never compiled; a unit that fails
  before and after proves nothing and is counted unverified; one that fails later than before (fixproof/stages.py)
  has progressed and is no worse.
* A rollback re-runs the very pipeline `fix` uses (fix.apply.fix_bytes) with the blamed findings excluded, so
  the bytes kept are what `fix` would produce without them (later passes, conflicts and guards included).
* Bisecting: the findings that reach a unit are ordered by rule, then file and position. The shortest prefix
  of rules that still makes the unit worse ends with a guilty rule; within that rule, the shortest prefix of
  its findings ends with a guilty finding. That finding is excluded and the search repeats until the unit is no
  worse: about log2(rules) + log2(findings) compiles per guilty finding, and every good edit stays.
* Each rolled-back finding stays in the report as manual, with the compiler's first new error and the unit.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..fix.consistency import symbol_of
from .compile_check import (COMPILE_TIMEOUT, CompileCache, CompileResult, UnitCommand, compile_unit, content_key,
                            load_database, new_errors, nvcc_path, synthesize, worse)
from .stages import changed_lines

if TYPE_CHECKING:
    from ..scan.engine import Engine
    from ..findings.model import Finding
    from ..fix.apply import FixResult
    from ..read.project_index import ProjectIndex
    from ..pipeline.runner import FixOutcome

MODES = ("auto", "off", "require")
MAX_ROUNDS = 4  # rollbacks in one unit can change a header another unit includes: re-check, at most this often


@dataclass
class Rollback:
    """One finding whose fix was rolled back."""

    path: str
    line: int
    rule_id: str
    unit: str
    first_error: str
    fingerprint: str = ""

    def text(self) -> str:
        return f"{self.path}:{self.line}: {self.rule_id}: fix rolled back: {self.unit} does not compile with it: {self.first_error}"


@dataclass
class VerifySummary:
    """What compile verification did, for the summary line and the JSON report."""

    units: int = 0  # units the edits reach
    verified: int = 0  # units that compiled before or after: the compiler could check the edits
    builds_after: int = 0  # units that compile with the edits
    lost: list[str] = field(default_factory=list)  # built with every edit, not after another unit's rollbacks
    originals_compiled: int = 0  # units whose original was compiled: only those that fail with the edits
    compiled_before: int = 0  # of those originals, how many compiled
    worse: int = 0  # still worse after every rollback (0 unless a unit could not be repaired)
    unverified: list[str] = field(default_factory=list)  # units that compiled neither before nor after, with why
    first_errors: list[str] = field(default_factory=list)  # the unverified units' first errors (for the line)
    rollbacks: list[Rollback] = field(default_factory=list)
    compiles: int = 0
    cached: int = 0
    seconds: float = 0.0
    per_unit: list[dict[str, Any]] = field(default_factory=list)  # unit, compiled before, compiles after

    def line(self) -> str:
        s = (f"Verified {self.verified} of {self.units} unit(s) by compiling ({self.builds_after} build after the "
             f"fix): {len(self.rollbacks)} edit(s) rolled back")
        if self.worse:
            s += f", {self.worse} unit(s) still worse"
        if self.lost:
            s += f", {len(self.lost)} unit(s) built with every edit but not after the rollbacks"
        if self.unverified:
            common = Counter(self.first_errors).most_common(1)
            s += f"; {len(self.unverified)} unverified" + (f" (first error: {common[0][0]})" if common else "")
        return s + (f"; {self.compiles} compile(s) ({self.originals_compiled} of original code), {self.cached} "
                    f"cached, {self.seconds:.1f} s added.")

    def to_json(self) -> dict[str, Any]:
        return {"units": self.units, "verified": self.verified, "builds_after": self.builds_after,
                "originals_compiled": self.originals_compiled, "compiled_before": self.compiled_before,
                "worse": self.worse, "lost": self.lost, "rolled_back": len(self.rollbacks), "compiles": self.compiles,
                "cached": self.cached, "seconds": round(self.seconds, 3), "unverified": self.unverified,
                "rollbacks": [r.__dict__ for r in self.rollbacks], "per_unit": self.per_unit}


@dataclass
class _File:
    """A changed file: its original bytes and its current fix (recomputed when findings are excluded)."""

    outcome: FixOutcome
    original: bytes
    excluded: set[tuple[str, str]] = field(default_factory=set)

    @property
    def result(self) -> FixResult:
        assert self.outcome.result is not None
        return self.outcome.result


@dataclass(frozen=True)
class _Item:
    file: str
    rule_id: str
    fingerprint: str
    line: int

    @property
    def key(self) -> tuple[str, str]:
        return self.rule_id, self.fingerprint


class Verifier:
    """Verifies and repairs the computed fixes of one `fix` run (FixOutcomes, before anything is written)."""

    def __init__(self, engine: Engine, index: ProjectIndex, run_files: list[Path], *, unsafe: bool,
                 display_only: frozenset[str] = frozenset(), db_path: Path | None = None, jobs: int | None = None,
                 use_cache: bool = True, nvcc: str | None = None, log: Callable[[str], None] | None = None,
                 groups: frozenset[str] = frozenset(), flags: tuple[str, ...] = (), trusted: bool = True,
                 roots: tuple[str, ...] = (), timeout: float | None = None,
                 progress: Callable[[str], None] | None = None, commands: dict[str, UnitCommand] | None = None):
        self.engine, self.index, self.unsafe, self.display_only = engine, index, unsafe, display_only
        self.groups = groups  # consistency groups the run withheld in every file: a re-fix never applies them
        self.run_files = [Path(os.path.realpath(p)) for p in run_files]
        self.commands = commands if commands is not None else load_database(db_path)  # the caller's, read once
        self.nvcc = nvcc if nvcc is not None else nvcc_path()
        self.jobs = max(1, jobs or min(os.cpu_count() or 1, 8))
        self.cache = CompileCache(use_cache)
        self.log = log or (lambda _s: None)
        self.files: dict[str, _File] = {}
        self.summary = VerifySummary()
        self._fixes: dict[tuple[str, frozenset], FixResult] = {}
        self._cmds: dict[str, UnitCommand | None] = {}
        self.flags = flags  # -I/-D for synthesized commands (fixproof/units.py's user_flags)
        self.why: dict[str, str] = {}  # unit -> why it was chosen (fixproof/units.py)
        self.timeout = timeout or COMPILE_TIMEOUT
        self.progress = progress  # a status line (a terminal's): units compiled of all, compiles, rollbacks
        self._seen: set[str] = set()
        self._total = 0
        self._lock = threading.Lock()
        self.refused: dict[str, str] = {}  # unit -> why a found database's command is not run (fixproof/consent.py)
        if not trusted:
            from .consent import refusal

            for u, c in self.commands.items():
                why = refusal(c.argv, c.directory, roots)
                if why is not None:
                    self.refused[u] = why

    # ------------------------------------------------------------------ what to compile
    def available(self) -> bool:
        return bool(self.nvcc or self.commands)

    def command(self, unit: str) -> UnitCommand | None:
        if unit in self.refused:
            return None
        if unit not in self._cmds:
            cmd = self.commands.get(unit)
            if cmd is None and self.nvcc:
                cmd = synthesize(Path(unit), self._original(unit), self.run_files, self.nvcc, self.flags)
            self._cmds[unit] = cmd
        return self._cmds[unit]

    def _original(self, path: str) -> bytes:
        f = self.files.get(path)
        if f is not None:
            return f.original
        try:
            return Path(path).read_bytes()
        except OSError:
            return b""

    def deps(self, unit: str) -> list[str]:
        """The unit and the project headers it reaches (real paths)."""
        return [unit, *[os.path.realpath(h) for h in self.index.reachable(Path(unit))]]

    def units(self) -> list[str]:
        """The translation units the changed files belong to (fixproof/units.py), with why, in self.why."""
        from .units import select_units

        chosen = select_units(list(self.files), self.index, self.commands, self.display)
        self.why.update((u.path, u.why) for u in chosen)
        return [u.path for u in chosen]

    def plan(self, outcomes: list[FixOutcome]) -> list[str]:
        """The changed files taken from `outcomes`; the units they reach (for `fix --show-units`)."""
        for o in outcomes:
            if o.result is not None and o.result.changed:
                self.files.setdefault(os.path.realpath(o.path), _File(o, o.result.original))
        return self.units()

    def display(self, path: str) -> str:
        f = self.files.get(path)
        if f is not None:
            return f.outcome.display
        from ..core.textsafe import display_path

        return display_path(Path(path))

    # ------------------------------------------------------------------ compiling
    def compile(self, unit: str, changes: dict[str, bytes]) -> CompileResult:
        """The unit compiled with `changes` (real path -> bytes) over the files on disk; cached by content."""
        cmd = self.command(unit)
        assert cmd is not None
        inputs = [(d, changes[d] if d in changes else self._original(d)) for d in self.deps(unit)]
        key = content_key(cmd, inputs)
        res = self.cache.get(key)
        if res is not None:
            self.summary.cached += 1
        else:
            res = compile_unit(cmd, changes or None, {os.path.dirname(d) for d in self.deps(unit)}, self.timeout)
            self.summary.compiles += 1
            self.cache.put(key, res)
        if not res.ok and changes:  # where an error caused by the edits would be (fixproof/stages.py)
            res.changed = changed_lines(changes, self._original)
        if self.progress is not None:
            with self._lock:
                self._seen.add(unit)
                self.progress(f"verifying: {len(self._seen)}/{self._total} unit(s), {self.summary.compiles} "
                              f"compile(s), {len(self.summary.rollbacks)} rollback(s)")
        return res

    def changes(self, unit: str, exclude: dict[str, set[tuple[str, str]]] | None = None) -> dict[str, bytes]:
        """The edited bytes of the changed files the unit reaches, with `exclude` (per file) left out too."""
        out: dict[str, bytes] = {}
        for d in self.deps(unit):
            f = self.files.get(d)
            if f is None:
                continue
            excluded = f.excluded | (exclude or {}).get(d, set())
            data = self.refix(d, excluded).fixed if excluded else f.result.fixed
            if data != f.original:
                out[d] = data
        return out

    def refix(self, path: str, excluded: set[tuple[str, str]]) -> FixResult:
        """The file fixed by the same pipeline with `excluded` findings left out (memoised)."""
        from ..fix.apply import fix_bytes

        key = (path, frozenset(excluded))
        if key not in self._fixes:
            f = self.files[path]
            self._fixes[key] = fix_bytes(self.engine, Path(f.outcome.path), f.original, f.outcome.display,
                                         unsafe=self.unsafe, display_only=self.display_only,
                                         groups=self.groups, exclude=frozenset(excluded))
        return self._fixes[key]

    # ------------------------------------------------------------------ the run
    def run(self, outcomes: list[FixOutcome]) -> VerifySummary:
        """Compile, repair, count; every compile's process group is killed if the run is interrupted."""
        from .procs import interruptible, remove_stale_temps

        remove_stale_temps()  # what a run killed with SIGKILL left behind
        with interruptible():
            return self._run(outcomes)

    def _run(self, outcomes: list[FixOutcome]) -> VerifySummary:
        t0 = time.perf_counter()
        units = []
        for u in self.plan(outcomes):
            if u in self.refused:
                self._unverified(u, "its command in the found compile database is not run: " + self.refused[u])
            elif self.command(u) is None:
                self._unverified(u, "no compile command (no compile database entry and no nvcc)")
            else:
                units.append(u)
        self._total = len(units)
        before: dict[str, CompileResult] = {}  # the original compiled only where the fixed unit fails
        with ThreadPoolExecutor(self.jobs) as pool:
            after = self._first_pass(pool, units, before)
        self.summary.units = len(units) + len(self.summary.unverified)
        built = {u for u in units if after[u].ok}  # with every edit: a rollback that undoes this is a loss, shown
        for _ in range(MAX_ROUNDS):
            bad = [u for u in units if not after[u].ok and worse(before[u], after[u])]
            if not bad:
                break
            touched: set[str] = set()
            for u in bad:
                touched |= self._repair(u, before[u])
            again = [u for u in units if touched & set(self.deps(u))]
            with ThreadPoolExecutor(self.jobs) as pool:
                after.update(zip(again, self._compile_all(pool, again), strict=True))
                self._originals(pool, again, before, after)
        else:
            gone: set[str] = set()
            for u in [u for u in units if not after[u].ok and worse(before[u], after[u])]:  # give up: all its edits
                gone |= self._roll_back_all(u, after[u], before[u])
            for u in [u for u in units if gone & set(self.deps(u))]:  # and their groups' files' units
                after[u] = self.compile(u, self.changes(u))
                if not after[u].ok and u not in before:
                    before[u] = self.compile(u, {})
        self.summary.worse = sum(1 for u in units if not after[u].ok and worse(before[u], after[u]))
        self.summary.lost = [self.display(u) for u in units if u in built and not after[u].ok]
        self.summary.builds_after = sum(1 for u in units if after[u].ok)
        self.summary.originals_compiled = len(before)
        self.summary.compiled_before = sum(1 for b in before.values() if b.ok)
        self.summary.per_unit = [{"unit": self.display(u), "compiles_after": after[u].ok,
                                  "compiled_before": before[u].ok if u in before else None,
                                  "verified": after[u].ok or before[u].ok,
                                  "first_error_after": "" if after[u].ok else after[u].first_error} for u in units]
        for u in units:
            if not after[u].ok and not before[u].ok:
                self._unverified(u, after[u].errors[0].message if after[u].errors else after[u].first_error,
                                 after[u].first_error)
        self.summary.verified = self.summary.units - len(self.summary.unverified)
        self._finish()
        self.summary.seconds = time.perf_counter() - t0
        return self.summary

    def _first_pass(self, pool: ThreadPoolExecutor, units: list[str],
                    before: dict[str, CompileResult]) -> dict[str, CompileResult]:
        """Every unit compiled with its edits; the original of each one that fails is queued as soon as that is
        known, so the pool stays busy (no wait for the slowest fixed unit before the originals start)."""
        jobs = [(u, self.changes(u)) for u in units]  # here: fixing runs the engine, which is not thread-safe
        pending = {pool.submit(self.compile, u, ch): u for u, ch in jobs}
        after: dict[str, CompileResult] = {}
        originals: dict[str, Future[CompileResult]] = {}
        for fut in as_completed(pending):
            u = pending[fut]
            after[u] = fut.result()
            if not after[u].ok:
                originals[u] = pool.submit(self.compile, u, {})
        before.update((u, f.result()) for u, f in originals.items())
        return {u: after[u] for u in units}

    def _originals(self, pool: ThreadPoolExecutor, units: list[str], before: dict[str, CompileResult],
                   after: dict[str, CompileResult]) -> None:
        """Compile the original of each unit that fails with the edits (and was not compiled yet): a unit that
        builds after the fix cannot be worse, so its original is never compiled (half the compiles, or more)."""
        need = [u for u in units if not after[u].ok and u not in before]
        before.update(zip(need, pool.map(lambda u: self.compile(u, {}), need), strict=True))

    def _unverified(self, unit: str, short: str, full: str | None = None) -> None:
        """A unit the compiler could not check: it compiled neither before nor after (a missing header, a compiler
        that does not run), so nothing about the edits is proven by it."""
        self.summary.unverified.append(f"{self.display(unit)}: not verified: {full or short}")
        self.summary.first_errors.append(short)

    def _compile_all(self, pool: ThreadPoolExecutor, units: list[str]) -> list[CompileResult]:
        """The units compiled with their current edits, in parallel; the edits are computed here first, in this
        thread (fixing runs the engine, which is not thread-safe; compiling is a subprocess)."""
        jobs = [(u, self.changes(u)) for u in units]
        return list(pool.map(lambda job: self.compile(*job), jobs))

    def _items(self, unit: str) -> list[_Item]:
        out = []
        for d in self.deps(unit):
            f = self.files.get(d)
            if f is None:
                continue
            out += [_Item(d, a.rule_id, a.fingerprint, a.line) for a in f.result.applied
                    if (a.rule_id, a.fingerprint) not in f.excluded]
        return sorted(out, key=lambda i: (i.rule_id, i.file, i.line, i.fingerprint))

    def _repair(self, unit: str, before: CompileResult) -> set[str]:
        """Exclude the findings that make `unit` worse (bisected); return the files whose fix changed."""
        items = self._items(unit)
        memo: dict[frozenset[_Item], CompileResult] = {}

        def trial(kept: list[_Item]) -> CompileResult:
            k = frozenset(kept)
            if k not in memo:
                excl: dict[str, set[tuple[str, str]]] = {}
                for it in items:
                    if it not in k:
                        excl.setdefault(it.file, set()).add(it.key)
                memo[k] = self.compile(unit, self.changes(unit, excl))
            return memo[k]

        def shortest(prefix_of: Callable[[int], list[_Item]], n: int) -> int:
            """The smallest i (0 <= i < n) whose prefix_of(i) makes the unit worse (prefix_of(n-1) does)."""
            lo, hi = 0, n - 1
            while lo < hi:
                mid = (lo + hi) // 2
                if worse(before, trial(prefix_of(mid))):
                    hi = mid
                else:
                    lo = mid + 1
            return lo

        kept = list(items)
        blamed: list[tuple[_Item, str]] = []
        current = trial(kept)  # not `after`: another unit's rollbacks this round may have changed a shared header
        while kept and worse(before, current):
            rules = list(dict.fromkeys(i.rule_id for i in kept))
            r = shortest(partial(_rule_prefix, kept, rules), len(rules))
            base = [k for k in kept if k.rule_id in rules[:r]]
            own = [k for k in kept if k.rule_id == rules[r]]
            j = shortest(partial(_list_prefix, base, own), len(own))
            culprit = own[j]
            res = trial(base + own[: j + 1])
            first = new_errors(before, res)
            blamed.append((culprit, first[0].text() if first else res.first_error))
            kept.remove(culprit)
            current = trial(kept)
        if worse(before, current):  # the edits of other runs' rules or later passes: nothing left to bisect
            return self._roll_back_all(unit, current, before)
        touched = set()
        for it, why in blamed:
            touched |= self._exclude(it, unit, why)
        return touched

    def _roll_back_all(self, unit: str, after: CompileResult, before: CompileResult) -> set[str]:
        first = new_errors(before, after)
        why = first[0].text() if first else after.first_error
        touched = set()
        for it in self._items(unit):
            touched |= self._exclude(it, unit, why) | {it.file}
        for d in self.deps(unit):  # what a later pass made of them: the original bytes
            f = self.files.get(d)
            if f is not None and self.refix(d, f.excluded).fixed != f.original:
                f.excluded |= {(a.rule_id, a.fingerprint) for a in self.refix(d, f.excluded).applied}
                touched.add(d)
        return touched

    def _exclude(self, it: _Item, unit: str, why: str) -> set[str]:
        """Roll back one finding; when it belongs to a consistency group (fix/consistency.py: a texture
        reference, a renamed type), roll back every applied finding of that group in every file of the run too,
        so that no migration is left half applied across files. Returns the files whose fix changed."""
        f = self.files[it.file]
        if it.key in f.excluded:
            return set()
        f.excluded.add(it.key)
        shown = why.replace(os.path.dirname(it.file) + "/", "")
        self.summary.rollbacks.append(Rollback(f.outcome.display, it.line, it.rule_id, self.display(unit), shown,
                                               it.fingerprint))
        touched = {it.file}
        group = next((a.group for a in f.result.applied if (a.rule_id, a.fingerprint) == it.key and a.group), "")
        if not group:
            return touched
        blame = f"rolled back with {f.outcome.display}:{it.line} ({it.rule_id}), of the same consistency group " \
                f"{symbol_of(group)!r}: {shown}"
        for path, other in self.files.items():
            for a in other.result.applied:
                if a.group == group and (a.rule_id, a.fingerprint) not in other.excluded:
                    other.excluded.add((a.rule_id, a.fingerprint))
                    self.summary.rollbacks.append(Rollback(other.outcome.display, a.line, a.rule_id,
                                                           self.display(unit), blame, a.fingerprint))
                    touched.add(path)
        return touched

    def _finish(self) -> None:
        """Each file with rollbacks gets the fix without them; the rolled-back findings become manual."""
        why = {(r.path, r.rule_id, r.fingerprint): r for r in self.summary.rollbacks}
        for path, f in self.files.items():
            if not f.excluded:
                continue
            res = self.refix(path, f.excluded)
            d = f.outcome.display
            res.remaining = [_manual(x, why.get((d, x.rule_id, x.fingerprint)))
                             if (x.rule_id, x.fingerprint) in f.excluded else x for x in res.remaining]
            f.outcome.result = res


def _rule_prefix(kept: list[_Item], rules: list[str], i: int) -> list[_Item]:
    """The kept findings of the first i+1 rules."""
    return [k for k in kept if k.rule_id in rules[: i + 1]]


def _list_prefix(base: list[_Item], own: list[_Item], i: int) -> list[_Item]:
    return base + own[: i + 1]


def _manual(f: Finding, r: Rollback | None) -> Finding:
    note = f" [fix rolled back: {r.unit} does not compile with it: {r.first_error}]" if r else \
        " [fix rolled back: a unit does not compile with it]"
    return replace(f, fix=None, message=f.message + note)


def resolve_mode(flag: str | None, configured: Any) -> str:
    """--verify/--no-verify/--require-verify, else CUDAMIGRATE_VERIFY, else the `verify` config key, else auto."""
    for v in (flag, os.environ.get("CUDAMIGRATE_VERIFY") or None, configured):
        if v is not None:
            if v not in MODES:
                raise ValueError(f"verify must be one of {', '.join(MODES)}, not {v!r}")
            return str(v)
    return "auto"
