"""`fix --commit-per-rule` / `--commit-per-family`: one reviewable git commit per rule (or family).

Users of codemods ask for this (rector, resyntax): a reviewer reads "CM501:
cudaThread* -> cudaDevice*, 14 findings in 9 files, safe" as one commit
instead of a single mixed diff. Guarantees:

- it refuses to start on a dirty work tree (staged, modified or untracked
  files), so no commit ever contains the user's own changes;
- the final tree equals a single `fix` run: the target contents of every file
  are computed first with the same engine; commit k holds the fixes of groups
  1..k applied to the original files (the engine re-run with only those rules
  selected), and the last commit writes the target contents exactly, so
  interactions between rules end up in the last commit, never lost;
- groups are committed in plan order: build breaks first, then deprecations,
  performance and hygiene;
- the final tree is compile-verified like `fix` (the caller's `verify` hook, cudamigrate/fixproof/rollback.py):
  a finding whose edit makes a unit worse is rolled back before anything is written, and left out of every
  commit, not only the last.
"""

from __future__ import annotations

import subprocess
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

from ..scan.engine import Engine
from ..findings.model import Finding
from .apply import FixResult, fix_bytes
from . import consistency
from .shared_helpers import share_all
from .write import Snapshot, write_checked, write_new


class CommitError(Exception):
    """Why per-rule commits cannot be made (one line)."""


@dataclass
class Group:
    key: str  # rule id or family
    title: str
    rule_ids: list[str]
    findings: list[Finding] = field(default_factory=list)


def git(root: Path, *args: str, check: bool = True) -> str:
    p = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise CommitError(f"git {' '.join(args[:2])} failed: {(p.stderr or p.stdout).strip().splitlines()[-1:]}")
    return p.stdout


def repo_root(paths: list[Path]) -> Path:
    start = paths[0] if paths else Path(".")
    d = start if start.is_dir() else start.parent
    p = subprocess.run(["git", "-C", str(d or Path(".")), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if p.returncode != 0:
        raise CommitError(f"{start}: not inside a git work tree (--commit-per-rule needs one)")
    return Path(p.stdout.strip()).resolve()


def ensure_clean(root: Path) -> None:
    status = git(root, "status", "--porcelain", "--untracked-files=all")
    lines = [ln for ln in status.splitlines() if ln.strip()]  # "XY path": keep the leading status column
    if lines:
        shown = ", ".join(x[3:] for x in lines[:5]) + (f" and {len(lines) - 5} more" if len(lines) > 5 else "")
        raise CommitError(f"work tree at {root} is not clean ({shown}): commit or stash first, "
                          "so that the per-rule commits hold only cudamigrate's changes")


def _impact_rank(f: Finding) -> int:
    from ..report.plan import IMPACT_ORDER, impact_of

    return IMPACT_ORDER.index(impact_of(f))


def group_findings(applied: list[Finding], by: str, names: dict[str, str]) -> list[Group]:
    """Applied findings grouped by rule (or family), in plan order (most urgent impact first, then id)."""
    groups: dict[str, Group] = {}
    for f in applied:
        key = f.rule_id if by == "rule" else f.family
        g = groups.get(key)
        if g is None:
            title = f"{f.rule_id} {names.get(f.rule_id) or f.rule_name}" if by == "rule" else f"{f.family} rules"
            g = groups[key] = Group(key, title, [])
        if f.rule_id not in g.rule_ids:
            g.rule_ids.append(f.rule_id)
        g.findings.append(f)
    return sorted(groups.values(), key=lambda g: (min(_impact_rank(f) for f in g.findings), g.key))


def message(g: Group, rules_by_id: dict, files: list[str]) -> str:
    """The commit message: what changed, applicability, counts, and what the reviewer must check."""
    apps = Counter(f.applicability for f in g.findings)
    app = "display-only" if apps.get("display-only") else "unsafe" if apps.get("unsafe") else "safe"
    head = f"cudamigrate: {g.title} ({app} fix)"
    per_file = Counter(f.path for f in g.findings)
    lines = [head, ""]
    for rid in sorted(g.rule_ids):
        r = rules_by_id.get(rid)
        if r is not None:
            lines.append(f"{rid} {r.name}: {r.summary}")
    titles = sorted({f.fix.title for f in g.findings if f.fix and f.fix.title})
    lines += ["", "What changed:"] + [f"- {t}" for t in titles[:10]]
    if len(titles) > 10:
        lines.append(f"- and {len(titles) - 10} more")
    lines += ["", f"Fixed {len(g.findings)} finding(s) in {len(files)} file(s):"]
    lines += [f"- {p} ({per_file.get(p, 0)})" for p in files[:30]]
    if len(files) > 30:
        lines.append(f"- and {len(files) - 30} more")
    lines.append("")
    if app in ("unsafe", "display-only"):
        how = "--unsafe-fixes" if app == "unsafe" else "--apply-display-only"
        lines.append(f"Applicability: {app} (applied with {how}): behaviour may change. Reviewer: check")
        lines.append("each change against the rule's note below, and run the affected code paths.")
        for rid in sorted(g.rule_ids):
            r = rules_by_id.get(rid)
            note = str((r.docs or {}).get("fix_safety", "") or "").strip() if r is not None else ""
            if note:
                lines += ["", f"{rid} fix safety: " + " ".join(note.split())[:800]]
    else:
        lines.append("Applicability: safe: the rewrite keeps behaviour. Reviewer: check that it builds")
        lines.append("with the target toolkit.")
    lines += ["", "Sources and details: " + ", ".join(f"`cudamigrate explain {rid}`" for rid in sorted(g.rule_ids))]
    return "\n".join(lines) + "\n"


@dataclass
class CommitResult:
    commits: list[tuple[str, str]]  # (sha, subject)
    applied: list[Finding]
    files: int
    remaining: list[Finding]


Verify = Callable[[list[tuple[Path, FixResult]], frozenset[str]],
                  tuple[list[tuple[Path, FixResult]], dict[Path, frozenset[tuple[str, str]]]]]


def commit_per_group(engine: Engine, files: list[Path], display: Callable[[Path], str], by: str, unsafe: bool,
                     load: Callable[[Path], bytes], log: Callable[[str], None],
                     display_only: frozenset[str] = frozenset(), verify: Verify | None = None,
                     roots: Sequence[Path] = ()) -> CommitResult:
    """Fix `files` as one `fix` run would, committing group by group (see the module docstring). `verify(computed,
    withheld groups)` gives the results repaired by compile verification and, per file, the findings it rolled
    back (rule id, fingerprint), which every commit leaves out. `roots`: the paths named (`fix`'s limit for a
    shared helper header, fix/shared_helpers.py): the final run's header is written with the first commit whose
    files include it, and every commit's files include it instead of a copy of the helpers."""
    root = repo_root(files)
    ensure_clean(root)
    originals: dict[Path, bytes] = {}
    targets: dict[Path, bytes] = {}
    applied: list[Finding] = []
    remaining: list[Finding] = []
    computed: list[tuple[Path, FixResult]] = []
    for p in files:
        try:
            data = load(p)
        except Exception as exc:  # SourceError and OSError: reported like `fix` does, file skipped
            log(f"{display(p)}: {exc}")
            continue
        computed.append((p, fix_bytes(engine, p, data, display(p), unsafe=unsafe, display_only=display_only)))

    def refix(item: tuple[Path, FixResult], groups: frozenset[str]) -> tuple[Path, FixResult]:
        p, res = item
        return p, fix_bytes(engine, p, res.original, display(p), unsafe=unsafe, display_only=display_only, groups=groups)

    # all or nothing per consistency group, across every file (fix/consistency.py), as `fix` does
    computed, withheld_groups, withheld = consistency.settle(computed, lambda it: it[1], refix)
    excluded: dict[Path, frozenset[tuple[str, str]]] = {}
    if verify is not None:
        computed, excluded = verify(computed, withheld_groups)
    for p, res in computed:
        for e in res.errors:
            log(e)
        remaining += res.remaining
        if res.changed:
            originals[p], targets[p] = res.original, res.fixed
            applied += res.applied
    for line in consistency.report(withheld, [res for _, res in computed]):
        log(f"note: {line}")
    shared = share_all({os.path.realpath(p): (originals[p], targets[p]) for p in originals},
                       [os.path.realpath(r) for r in (roots or (Path("."),))], os.path.realpath("."))
    names = {r.id: r.name for r in engine.rules}
    groups = group_findings(applied, by, names)
    rules_by_id = {r.id: r for r in engine.rules}
    commits: list[tuple[str, str]] = []
    written: set[str] = set()
    selected: list[str] = []
    current = dict(originals)
    for gi, g in enumerate(groups):
        selected += g.rule_ids
        last = gi == len(groups) - 1
        # project-wide facts (headers, class members) as the full run saw them
        sub = Engine(engine.rules, replace(engine.opts, select=list(selected), extend_select=list(selected)),
                     project=getattr(engine, "project", None), semantic_provider=engine.semantic_provider)
        updates: dict[Path, bytes] = {}
        for p, data in originals.items():
            new = targets[p] if last else fix_bytes(sub, p, data, display(p), unsafe=unsafe, display_only=display_only,
                                                    groups=withheld_groups, exclude=excluded.get(p, frozenset())).fixed
            for one in shared:  # the helpers in the run's one header, as `fix` leaves them
                new = one.rewrite(os.path.realpath(p), data, new)
            if new != current[p]:
                updates[p] = new
        if not updates:
            log(f"note: {g.title}: no change left to commit (another rule's fix covered it)")
            continue
        rel = [str((p.absolute().parent.resolve() / p.name).relative_to(root)) for p in updates]  # a link stays a link
        for one in shared:  # the header first, with the first commit whose files include it
            if one.data is not None and one.header not in written and any(
                    _includes(new, one.header, p) and not _includes(current[p], one.header, p) for p, new in updates.items()):
                write_new(one.header, one.data)  # WriteRefused when a file of that name appeared meanwhile
                written.add(one.header)
                rel.append(os.path.relpath(one.header, os.path.realpath(root)))
        changed = list(updates)
        for p, new in updates.items():
            # checked write: refused (WriteRefused) if someone changed the file since it was read
            write_checked(p, new, Snapshot.of(os.stat(os.path.realpath(p)), current[p]))
            current[p] = new
        git(root, "add", "--", *rel)
        msg = message(g, rules_by_id, sorted(display(p) for p in changed))
        git(root, "commit", "-q", "--no-verify", "-m", msg)
        sha = git(root, "rev-parse", "--short", "HEAD").strip()
        commits.append((sha, msg.splitlines()[0]))
    return CommitResult(commits, applied, len(originals), remaining)


def _includes(data: bytes, header: str, path: Path) -> bool:
    rel = os.path.relpath(header, os.path.dirname(os.path.realpath(path))).replace(os.sep, "/")
    return b'#include "' + rel.encode() + b'"' in data


def per_file_rules(applied: list[Finding]) -> dict[str, Counter]:
    """path -> Counter(rule id) of applied fixes (for --show-fixes)."""
    out: dict[str, Counter] = defaultdict(Counter)
    for f in applied:
        out[f.path][f.rule_id] += 1
    return out
