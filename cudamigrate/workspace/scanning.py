"""`scan` as a library call: a request in, the findings and what went wrong out, no printing and no exit.
The command line adds what is its own (replay of an unchanged run, progress, semantic set-up, reports,
baselines, exit codes); an integrator gets the same findings `cudamigrate scan --no-semantic` reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..fix.consistency import as_scanned, minutes_of
from .preparation import diff_scope, on_changed_lines, prepare, setup
from .request import Request

if TYPE_CHECKING:
    from ..findings.model import Finding
    from ..rules.schema import Rule


@dataclass
class Scanned:
    """One scan's outcome: the findings (each file's, in input order), one line per file that could not be
    scanned or walked, one line per bad rule file, notes (non-UTF-8 bytes kept), the rules that ran, and how
    many internal errors (a bug, not bad input) the errors hold."""

    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    rule_errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    files_scanned: int = 0
    internal: int = 0
    warnings: list[str] = field(default_factory=list)


def scan(req: Request, jobs: int | None = None) -> Scanned:
    """Scan the request's paths in tree-sitter mode (the result cache used unless `req.no_cache`).
    WorkspaceError when the request or configuration cannot be used."""
    from ..pipeline.runner import scan_files

    pre = prepare(req)
    run = setup(req, pre)
    changed, files = diff_scope(req, run.files)
    out = Scanned(errors=list(run.walk_errors), rule_errors=list(run.rule_errors), rules=list(run.engine.rules),
                  files_scanned=len(files), warnings=list(pre.warnings))
    for res in scan_files(run.engine, run.spec, files, jobs, use_cache=not req.no_cache):
        out.findings += res.findings
        out.errors += res.errors
        out.notes += res.notes
        out.internal += res.internal
    out.findings = on_changed_lines(as_scanned(out.findings, minutes_of(run.engine.rules)), files, changed)
    return out


def scan_buffer(req: Request, path: Path, data: bytes) -> Scanned:
    """Scan `data` as the file `path` (an editor's unsaved buffer: the file need not exist); nothing when the
    configuration excludes `path`, as `scan` would report nothing."""
    from dataclasses import replace

    from ..pipeline.runner import display_path

    req = replace(req, paths=(path,))
    pre = prepare(req)
    run = setup(req, pre)
    out = Scanned(rule_errors=list(run.rule_errors), rules=list(run.engine.rules), files_scanned=len(run.files),
                  warnings=list(pre.warnings))
    for p in run.files:
        res = run.engine.scan_bytes(p, data, display_path(p))
        out.findings += res.findings
        out.errors += res.errors
        out.notes += res.notes
        out.internal += res.internal
    out.findings = as_scanned(out.findings, minutes_of(run.engine.rules))
    return out
