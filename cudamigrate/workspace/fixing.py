"""`fix` as a library call: compute each file's fix, prove it by compiling (rolling back what makes a unit
worse), then write it (a locked compare-and-swap, atomic replace) or keep it as a diff; no printing, no exit.

The stages stay callable one by one because the command line prints between them (its warnings, semantic
mode's set-up, the order its lines have always had), but the order of the stages is this module's, once:
compute (pipeline/runner.py's `fix_files`, in workers), verify (fixproof/rollback.py's `Verifier`, before
anything is written), write (fix/write.py, in input order). What a run did comes back as data: each file's
outcome (its lines, its diff, whether it was written), the verification's verdict and rollbacks, the totals
the summary line counts, and a refusal (`--require-verify` that cannot verify: nothing written) as text.
The editor's `source.fixAll` fixes a buffer through `fix_buffer`: nothing is compiled or written there, the
editor applies the edit to its own text."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .request import Request, WorkspaceError, split_values

if TYPE_CHECKING:
    from ..core.config import Config
    from ..findings.model import Finding
    from ..fix.apply import FixResult
    from ..fixproof.rollback import VerifySummary
    from ..pipeline.runner import FixOutcome
    from ..scan.engine import Engine
    from .preparation import Setup


@dataclass(frozen=True)
class FixOptions:
    """What `fix` is asked beyond the scan's Request, each as given (None: the configuration decides).

    `verify`: "auto", "off" or "require" (--verify, --no-verify, --require-verify); `write` False for --diff
    and --dry-run (nothing written, nothing compiled unless `verify` asks); `show_units`: plan verification's
    units and stop; `include_dirs`/`defines`: -I/-D for compiles without a compile database."""

    unsafe: bool = False
    apply_display_only: bool = False
    write: bool = True
    verify: str | None = None
    show_units: bool = False
    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    trust_compile_commands: bool = False
    verify_timeout: float | None = None
    write_outside_links: bool = False
    jobs: int | None = None


@dataclass
class Verification:
    """Compile verification's verdict on a run's computed fixes: the outcomes (repaired by rollbacks), the
    summary (None when verification is off or no compiler is known in `auto` mode), its lines (a found
    database not trusted, each rollback, each unverified unit), and, instead of a run, the units' description
    (`show_units`) or a refusal (`require` that could not verify: nothing may be written)."""

    outcomes: list[FixOutcome]
    summary: VerifySummary | None = None
    lines: list[str] = field(default_factory=list)
    units: str | None = None
    refusal: str | None = None


@dataclass
class FileFix:
    """One file's outcome in input order: the lines to show (errors, notes), the diff when not writing, and
    what it counts. `written_dir`: the directory to fsync after a write."""

    display: str
    lines: list[str] = field(default_factory=list)
    diff: str | None = None
    changed: bool = False
    written_dir: str | None = None
    not_written: bool = False
    error: bool = False
    internal: int = 0
    tracebacks: list[str] = field(default_factory=list)
    applied: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    counted_remaining: int = 0  # a file not written still holds every finding, fixed or not


@dataclass
class SharedHeader:
    """One helper header the run's files share instead of a copy each (fix/shared_helpers.py): the line to
    show, its diff when not writing, or why it could not be written (then each file keeps its own copy)."""

    display: str
    note: str | None = None
    diff: str | None = None
    error: str | None = None
    written_dir: str | None = None


@dataclass
class Fixed:
    """What a `fix` run did, counted only once a file is really written (or, without writing, would be)."""

    files: list[FileFix] = field(default_factory=list)
    verification: Verification | None = None
    withheld: list[str] = field(default_factory=list)  # consistency groups fixed in no file, one line each
    errors: list[str] = field(default_factory=list)  # discovery's and the named paths' problems (`fix` only)
    rule_errors: list[str] = field(default_factory=list)
    shared: list[SharedHeader] = field(default_factory=list)  # helper headers, shown before the files

    @property
    def changed(self) -> int:
        return sum(1 for f in self.files if f.changed)

    @property
    def applied(self) -> list[Finding]:
        return [x for f in self.files for x in f.applied]

    @property
    def remaining(self) -> list[Finding]:
        return [x for f in self.files for x in f.remaining]

    @property
    def remaining_count(self) -> int:
        return sum(f.counted_remaining for f in self.files)

    @property
    def unsafe_left(self) -> int:
        return sum(1 for x in self.remaining if x.applicability == "unsafe")

    @property
    def suggested_left(self) -> int:
        """Findings with a display-only suggested edit, never applied by --unsafe-fixes."""
        return sum(1 for x in self.remaining if x.applicability == "display-only")

    @property
    def not_written(self) -> int:
        return sum(1 for f in self.files if f.not_written)

    @property
    def internal(self) -> int:
        return sum(f.internal for f in self.files)

    @property
    def had_error(self) -> bool:
        return bool(self.errors) or any(f.error for f in self.files)

    @property
    def tracebacks(self) -> list[str]:
        return [t for f in self.files for t in f.tracebacks]


def display_only_rules(engine: Engine, req: Request) -> frozenset[str]:
    """Rules whose display-only suggestions `--apply-display-only` may apply: named by exact id, never by family,
    prefix or ALL, so a suggestion that changes behaviour is applied only by someone who asked for that rule."""
    named = set(split_values(req.select)) | set(split_values(req.extend_select))
    ids = frozenset(r.id for r in engine.rules if r.id in named and r.fix_applicability == "display-only")
    if not ids:
        raise WorkspaceError("--apply-display-only needs the rules named by id with --select or --extend-select "
                             "(e.g. --select CM101), and they must have display-only fixes")
    return ids


def fix_buffer(engine: Engine, path: Path, data: bytes, display: str, unsafe: bool = False,
               display_only: frozenset[str] = frozenset()) -> FixResult:
    """`data` fixed as the file `path` (an editor's buffer, `fix -`): the passes `fix` makes on a file, to a
    fixed point, without compiling or writing anything. A helper header of the project that already holds the
    helpers the fix inserted (fix/shared_helpers.py: `cudamigrate_texture.h` in the buffer's directory or above
    it, up to the working directory) is included instead of a copy, as `fix` of one more file does; no header is
    ever written from here, so without one the buffer keeps its copy."""
    from dataclasses import replace

    from ..fix.apply import fix_bytes
    from ..fix.shared_helpers import share_all

    res = fix_bytes(engine, path, data, display, unsafe=unsafe, display_only=display_only)
    if not res.changed:
        return res
    real = os.path.realpath(path)
    fixed = res.fixed
    for shared in share_all({real: (data, fixed)}, [os.path.dirname(real)], os.path.realpath("."), new_headers=False):
        fixed = shared.files.get(real, fixed)
    return res if fixed == res.fixed else replace(res, fixed=fixed)


def run(run_setup: Setup, req: Request, opts: FixOptions, display_only: frozenset[str] = frozenset(),
        facts: Any = None, progress: Callable[[str], None] | None = None) -> Fixed:
    """Fix the set-up run's files: compute, verify, then write (or keep the diffs when `opts.write` is off).
    A refusal or `show_units` comes back in `result.verification` with nothing written."""
    from ..fix.write import clean_stale, fsync_dir
    from ..pipeline.runner import fix_files

    unique: list[Path] = []
    seen_real: set[str] = set()
    for p in run_setup.files:
        real = os.path.realpath(p)
        if real not in seen_real:  # two names (symlinks) of one file: fix it once
            seen_real.add(real)
            unique.append(p)
    if opts.write:  # temporaries a killed run left behind, before any worker reads or the parent writes
        for d in sorted({os.path.dirname(os.path.realpath(p)) for p in unique}):
            clean_stale(d)
    # edits are computed per file in workers (in order); writes and diffs happen here, in that order
    fixed = fix_files(run_setup.engine, run_setup.spec, unique, opts.unsafe, display_only, opts.jobs, facts=facts)
    verification = verify(run_setup.engine, unique, fixed.outcomes, req, opts, run_setup.cfg, display_only, facts,
                          fixed.blocked, preview=not opts.write, progress=progress)
    out = Fixed(verification=verification, withheld=list(fixed.withheld),
                    errors=list(run_setup.walk_errors), rule_errors=list(run_setup.rule_errors))
    if verification.units is not None or verification.refusal is not None:
        return out
    roots = None if opts.write_outside_links else tuple(str(p) for p in (req.paths or (Path("."),)))
    outcomes, out.shared = share_helpers(list(verification.outcomes), req.paths, opts.write)
    out.files = [settle(outcome, opts.write, roots) for outcome in outcomes]
    if fixed.blocked:  # what remains of a withheld group is not offered as fixable (fix/consistency.py)
        from ..fix.consistency import as_left

        left = iter(as_left([x for f in out.files for x in f.remaining], fixed.blocked, opts.unsafe))
        for f in out.files:
            f.remaining = [next(left) for _ in f.remaining]
    dirs = {f.written_dir for f in out.files} | {h.written_dir for h in out.shared}
    for d in sorted(d for d in dirs if d is not None):
        fsync_dir(d)
    return out


def share_helpers(outcomes: list[FixOutcome], paths: tuple[Path, ...],
                  write: bool) -> tuple[list[FixOutcome], list[SharedHeader]]:
    """The helper blocks the run's fixes inserted (texture stand-ins, NPP stream context), each kind moved into one
    header included by each file (fix/shared_helpers.py): the header is written (or, when not writing, its diff
    kept) before the files that include it; when it cannot be written, each file keeps its own copy."""
    from dataclasses import replace

    from ..fix.shared_helpers import KINDS, header_diff, share
    from ..fix.write import WriteRefused, write_new
    from ..pipeline.runner import display_path

    fixed = {os.path.realpath(o.path): (o.result.original, o.result.fixed) for o in outcomes
             if o.result is not None and o.result.changed and o.error is None and o.internal is None}
    if not fixed:
        return outcomes, []
    roots = [os.path.realpath(p) for p in (paths or (Path("."),))]
    moved: dict[str, bytes] = {}
    shared_out: list[SharedHeader] = []
    for kind in KINDS:  # each kind on the bytes the kinds before it left (fix/shared_helpers.share_all)
        shared = share(fixed, roots, os.path.realpath("."), kind)
        if shared is None:
            continue
        shown = display_path(Path(os.path.relpath(shared.header)))
        one = SharedHeader(shown)
        shared_out.append(one)
        if shared.data is not None and write:
            try:
                one.written_dir = write_new(shared.header, shared.data)
            except (WriteRefused, OSError) as exc:
                why = str(exc) if isinstance(exc, WriteRefused) else f"cannot write: {exc.strerror or exc}"
                one.error = f"{shown}: {why}; each file keeps its own copy of {shared.kind.name.split(': ', 1)[1]}"
                continue  # the files keep this kind's copies; the next kinds are shared on those bytes
        elif shared.data is not None:
            one.diff = header_diff(shown, shared.data)
        verb = ("writes" if write else "would write") if shared.data is not None else ("includes" if write else "would include")
        one.note = (f"note: {shared.kind.name} are in one header: fix {verb} {shown}, included by {len(shared.files)} "
                    "file(s) instead of a copy in each")
        moved.update(shared.files)
        fixed.update({p: (fixed[p][0], b) for p, b in shared.files.items()})
    out = []
    for o in outcomes:
        new = moved.get(os.path.realpath(o.path))
        out.append(replace(o, result=replace(o.result, fixed=new)) if new is not None and o.result is not None else o)
    return out, shared_out


def fix(req: Request, opts: FixOptions = FixOptions(), progress: Callable[[str], None] | None = None) -> Fixed:
    """Prepare the request and fix its files (tree-sitter mode, as `scan` does). WorkspaceError when the request
    or configuration cannot be used; a named path that gives no file is one line of `result.errors`."""
    from ..pipeline.inputs import gate
    from .preparation import prepare, setup

    pre = prepare(req)
    run_setup = setup(req, pre)
    gated: list[str] = []
    run_setup.files, _ = gate(list(req.paths), run_setup.files, run_setup.cfg, gated.append)
    display_only = display_only_rules(run_setup.engine, req) if opts.apply_display_only else frozenset()
    result = run(run_setup, req, opts, display_only, progress=progress)
    result.errors = gated + result.errors
    return result


def verify(engine: Engine, files: list[Path], outcomes: list[FixOutcome], req: Request, opts: FixOptions,
           cfg: Config, display_only: frozenset[str], facts: Any = None, groups: frozenset[str] = frozenset(),
           preview: bool = False, progress: Callable[[str], None] | None = None) -> Verification:
    """Compile verification (cudamigrate/fixproof/rollback.py) of the computed fixes, before anything is written.
    Off, or in `auto` mode without a compiler: the outcomes untouched and no summary. `groups`: the consistency
    groups the run withheld (FixRun.blocked), which a rollback's re-fix must leave out too. `preview` (--diff,
    --dry-run): nothing is written, so nothing is compiled unless the request asks (`verify` set).
    WorkspaceError for a `verify` value that is not a mode."""
    from ..parse.compile_db import find_compile_db, load_error
    from ..fixproof.compile_check import load_database
    from ..fixproof.rollback import Verifier, resolve_mode
    from ..fixproof.units import Unit

    try:
        mode = resolve_mode(opts.verify, cfg.get("verify"))
    except ValueError as exc:
        raise WorkspaceError(str(exc)) from None
    if mode == "off" or (preview and mode == "auto" and opts.verify is None and not opts.show_units):
        return Verification(outcomes)  # --diff/--dry-run show the fix; they compile only with --verify/--require-verify
    from ..pipeline.result_cache import unrecorded

    with unrecorded():  # the ancestors' listings are no cached result's dependency (see workspace/preparation.py)
        db_path = req.compile_commands or find_compile_db(list(req.paths) or [Path(".")])
    db_lines: list[str] = []
    try:
        commands = load_database(db_path)
    except (OSError, ValueError) as exc:  # parse/compile_db.CompileDbError is a ValueError
        why = f"cannot read compile database ({load_error(exc)})"
        if req.compile_commands:  # the build the user named cannot be used: verifying another one would mislead
            raise WorkspaceError(f"{db_path}: {why}") from None
        db_lines.append(f"warning: {db_path}: {why}; fixes are verified without it, with the units and flags "
                        "cudamigrate infers (README: Compile-verified fix)")
        db_path, commands = None, {}
    assert engine.project is not None
    trusted = bool(req.compile_commands or opts.trust_compile_commands
                   or os.environ.get("CUDAMIGRATE_TRUST_COMPILE_COMMANDS") == "1")
    engine = engine.with_run(semantic_provider=facts.facts_for if facts is not None else None)  # rollbacks refix as `fix` did
    v = Verifier(engine, engine.project, files, unsafe=opts.unsafe, display_only=display_only, db_path=db_path,
                 jobs=opts.jobs, use_cache=not req.no_cache, groups=groups, flags=_flags(opts, cfg),
                 trusted=trusted, roots=_project_roots(req.paths, db_path),
                 timeout=opts.verify_timeout or cfg.get("verify-timeout"), progress=progress, commands=commands)
    if opts.show_units:
        from ..fixproof.units import describe

        units = v.plan(list(outcomes))
        return Verification(outcomes, lines=db_lines + _refused_note(v, units, db_path),
                            units=describe([Unit(u, v.why[u]) for u in units], v.command, v.display, v.refused))
    if not v.available():
        if mode == "require":
            return Verification(outcomes, lines=db_lines, refusal="cannot verify fixes: no nvcc on PATH and no "
                                "compile_commands.json (--require-verify); nothing written")
        return Verification(outcomes, lines=db_lines)
    done = list(outcomes)
    with unrecorded():  # compiles in temporary directories (and /tmp's listing): no scan result depends on them
        summary = v.run(done)
    out = Verification(done, summary, db_lines + _refused_note(v, list(v.why), db_path))
    out.lines += [r.text() for r in summary.rollbacks]
    out.lines += [f"note: {u}" for u in summary.unverified]
    if mode == "require" and summary.unverified:
        out.refusal = (f"{summary.line()}\ncannot verify fixes: {len(summary.unverified)} unit(s) compiled neither "
                       "before nor after the fix (--require-verify); nothing written")
    return out


def settle(outcome: FixOutcome, write: bool, roots: tuple[str, ...] | None) -> FileFix:
    """One file's computed (and verified) fix: its lines, written if still unchanged (fix/write.py), or its
    diff when not writing; what it counts. `roots`: the paths named, outside which a symlink's target is not
    written (None: anywhere)."""
    from ..fix.write import WriteRefused, write_checked

    disp, p = outcome.display, Path(outcome.path)
    out = FileFix(disp)
    if outcome.internal is not None:
        out.lines.append(outcome.internal)
        out.internal = 1
        out.tracebacks.append(outcome.traceback or outcome.internal)
        return out
    if outcome.error is not None:
        out.lines.append(outcome.error)
        out.error = True
        return out
    res = outcome.result
    assert res is not None and outcome.snapshot is not None
    out.lines += [f"note: {disp}: {w}" for w in outcome.warnings]
    out.lines += res.errors
    out.error = bool(res.errors)
    out.internal = res.internal
    out.tracebacks += res.tracebacks
    out.remaining = list(res.remaining)
    if res.changed and write:
        try:
            out.written_dir = write_checked(p, res.fixed, outcome.snapshot, roots)
        except (WriteRefused, OSError) as exc:
            why = str(exc) if isinstance(exc, WriteRefused) else f"cannot write: {exc.strerror or exc}"
            out.lines.append(f"{disp}: {why}")
            out.error = True
            out.not_written = True
            out.counted_remaining = len(res.applied) + len(res.remaining)  # the file still holds them all
            return out
    out.applied = list(res.applied)
    out.counted_remaining = len(res.remaining)
    out.changed = res.changed
    if res.changed and not write:
        out.diff = res.diff()
    return out


def _flags(opts: FixOptions, cfg: Config) -> tuple[str, ...]:
    """-I/-D for verification's synthesized commands: the request's, then the configuration's."""
    from ..fixproof.units import user_flags

    base = cfg.path.parent if cfg.path is not None else None
    return user_flags(opts.include_dirs or (), opts.defines or ()) + \
        user_flags(cfg.get("include-dirs") or [], cfg.get("defines") or [], base)


def _project_roots(paths: tuple[Path, ...], db_path: Path | None) -> tuple[str, ...]:
    """The project tree a found database's compiler must lie outside of: the paths given and the database's
    directory (its parent too when that is a build*/ directory)."""
    roots = [os.path.realpath(p if p.is_dir() else p.parent) for p in (paths or (Path("."),))]
    if db_path is not None:
        d = Path(os.path.realpath(db_path)).parent
        roots.append(str(d.parent if d.name.startswith("build") else d))
    return tuple(dict.fromkeys(roots))


def _refused_note(v: Any, units: list[str], db_path: Path | None) -> list[str]:
    """One line when units reached have commands of a found database that are not run (fixproof/consent.py)."""
    refused = [u for u in units if u in v.refused]
    if not refused:
        return []
    return [f"note: {db_path}: found, not named: the command(s) of {len(refused)} unit(s) are not run "
            f"({v.refused[refused[0]]}); those units are not verified. To run them, name the database with "
            "--compile-commands or pass --trust-compile-commands (CUDAMIGRATE_TRUST_COMPILE_COMMANDS=1)"]
