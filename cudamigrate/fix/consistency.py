"""All or nothing per symbol: the edits of a consistency group are applied in every file of the run or in none.

Some migrations only build when every use of a symbol moves together: renaming `double4` to `double4_16a` in
a parameter but not in the return type of the same operator leaves `double4_16a` converted to `double4`, which
has no conversion; a texture reference migrated in the file that declares it but not in the file that reads it
leaves reads of a name that is no longer a texture. Rules say which findings belong together with
`fix.consistency` (a template naming the symbol); the engine stores `family:symbol` as `Finding.group`.

The test is on data, not per rule: a group is *broken* when, after fixing, a finding of the group remains in
some output (manual, refused by the syntax guard, in conflict with another edit, unsafe without
`--unsafe-fixes`, display-only) while another finding of the group was applied somewhere. A broken group is
then blocked: every file that applied one of its edits is fixed again without them, until no file applies an
edit of a blocked group. Blocking only grows, so this ends. Every use of a withheld group is then listed.

A symbol may carry a scope (`symbol@scope`, findings/model.py SCOPE): texture references are file-scope objects,
so `tex` declared in one program of the run and `tex` declared in another are two groups, and one that cannot be
migrated does not hold the other back. A use whose declaration the rule could not see, in a file that another
file of the run includes, is `symbol@*`: it may be any of them, so while it stays, every scope of the symbol stays
too (`tied`). A use of a variable its file declares, or in a file nothing includes, has no group
(match/migrations/texture.py `_unseen_use_group`): it shares no translation unit with any reference. A symbol
CUDA declares (a type CM511 renames) is scoped by the program that uses it (`symbol@program:<its first file>`,
scan/grouping.py `consistency_group`): the files of the run and the project headers they reach, joined by
`#include` of a header that spells the symbol and by sharing a directory; a stuck use in one program does not hold
back another program.

`scan` reports what `fix` would do (`as_scanned`): the findings of a run are read as one fix in which every
fixable finding applies and every other one stays, and the same `broken` decides which groups are withheld. A
withheld group's members are shown without a fix (manual, the uses that cannot be rewritten named); a group
that only `--unsafe-fixes` completes shows its safe members as unsafe. The scan cannot foresee a fix the syntax
guard refuses or an edit that conflicts; those the fix still withholds and reports.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Protocol, TypeVar

from ..findings.cost import with_effort
from ..findings.model import ANY_SCOPE, PROGRAM_SCOPE, SCOPE, Finding, sort_key


class FileFix(Protocol):
    """What the settling reads of one file's fix (fix/apply.py's FixResult, which imports this module: a
    protocol here keeps the two out of a cycle): the findings it applied, those left, the groups it withheld."""

    @property
    def applied(self) -> list[Finding]: ...

    @property
    def remaining(self) -> list[Finding]: ...

    @property
    def withheld(self) -> Withheld: ...


T = TypeVar("T")


@dataclass
class Withheld:
    """Groups whose edits were dropped, and for each the uses that could not be rewritten (why, where)."""

    stuck: dict[str, list[str]] = field(default_factory=dict)  # group -> ["path:line:col (reason)", ...]

    def add(self, groups: set[str], results: Iterable[FileFix]) -> None:
        """Record `groups` as withheld, naming their uses (or those of an unscoped use tied to them) that
        remain in `results` (before blocking)."""
        left = sorted((f for r in results for f in r.remaining if f.group), key=sort_key)
        for g in sorted(groups):
            self.stuck.setdefault(g, [where(f, why=True) for f in left if tied(f.group, g)])

    def merge(self, other: "Withheld") -> None:
        for g, uses in other.stuck.items():
            self.stuck.setdefault(g, uses)


def where(f: Finding, why: bool = False) -> str:
    at = f"{f.path}:{f.line}:{f.column}"
    return f"{at} ({reason(f)})" if why else at


REASON_LIMIT = 200  # characters of a manual finding's message quoted as its reason


def reason(f: Finding) -> str:
    """Why a use was not rewritten: the fix's blocker, what its applicability needs, or (manual) its message."""
    blocked = f.context.get("fix_blocked")
    if blocked:
        return str(blocked)
    if f.applicability == "manual":
        msg = f.message if len(f.message) <= REASON_LIMIT else f.message[: REASON_LIMIT - 1] + "…"
        return f"{f.rule_id}, no automatic fix: {msg}"
    return {"unsafe": "unsafe fix: needs --unsafe-fixes", "display-only": "display-only suggested edit"}.get(
        f.applicability, "its fix was refused or conflicts with another edit")


def _unscoped(group: str) -> tuple[str, str | None]:
    """(`family:symbol`, scope or None); the first SCOPE splits (a symbol has none, a scope's path may)."""
    base, sep, scope = group.partition(SCOPE)
    return (base, scope) if sep and ":" in base else (group, None)


def tied(a: str, b: str) -> bool:
    """Whether groups `a` and `b` must be fixed together: the same group, or the same symbol where one of them
    is `symbol@*` (its declaration unknown: it may be the other)."""
    if a == b:
        return True
    (sa, pa), (sb, pb) = _unscoped(a), _unscoped(b)
    return sa == sb and pa is not None and pb is not None and ANY_SCOPE in (pa, pb)


def broken(results: Iterable[FileFix]) -> set[str]:
    """Groups with a use still in some output while another use of the group (or of a group tied to it) was
    rewritten somewhere."""
    rs = list(results)
    left = {f.group for r in rs for f in r.remaining if f.group}
    done = {f.group for r in rs for f in r.applied if f.group}
    scopes: dict[str, set[str | None]] = {}  # each symbol left, with the scopes it is left in
    for g in left:
        base, scope = _unscoped(g)
        scopes.setdefault(base, set()).add(scope)
    out = set()
    for g in done:
        base, scope = _unscoped(g)
        there = scopes.get(base, set())
        if g in left or (scope is not None and there and (ANY_SCOPE in there or scope == ANY_SCOPE and there - {None})):
            out.add(g)
    return out


def fixable(f: Finding, unsafe: bool, display_only: frozenset[str] = frozenset()) -> bool:
    """Safe fixes always; unsafe ones with `--unsafe-fixes`; display-only suggestions only for the rule ids in
    `display_only` (rules the user named by id with `--apply-display-only`), never through `--unsafe-fixes`."""
    if f.fix is None or not f.fix.edits:
        return False
    app = f.fix.applicability
    if app == "display-only":
        return f.rule_id in display_only
    return app == "safe" or (unsafe and app == "unsafe")


@dataclass
class _Foreseen:
    """A scan's findings read as one fix (a FileFix): the fixable ones applied, the others left."""

    applied: list[Finding]
    remaining: list[Finding]
    withheld: Withheld = field(default_factory=Withheld)


def _applies(f: Finding, unsafe: bool) -> bool:
    """Whether a fix would apply `f`: fixable, and not refused (the syntax guard's refusal keeps its edits)."""
    return fixable(f, unsafe) and not f.context.get("fix_blocked")


def _foresee(findings: list[Finding], unsafe: bool) -> set[str]:
    """The groups `fix` (with `--unsafe-fixes` or not) withholds, decided by `broken` as `settle` does, on a fix
    that applies every finding it can."""
    out = _Foreseen([f for f in findings if _applies(f, unsafe)], [f for f in findings if not _applies(f, unsafe)])
    blocked: set[str] = set()
    while more := broken([out]) - blocked:
        blocked |= more
        out = _Foreseen([f for f in out.applied if f.group not in blocked],
                        out.remaining + [f for f in out.applied if f.group in blocked])
    return blocked


SCAN_NOTE_USES = 3  # uses that cannot be rewritten named in a finding's message


def as_scanned(findings: list[Finding], rule_minutes: Mapping[str, float | None] | None = None) -> list[Finding]:
    """The run's findings as `scan` reports them: a member of a group that `fix --unsafe-fixes` withholds has
    no fix (manual; its message names the uses that cannot be rewritten, its `fix_blocked` why), and a safe
    member of a group that only `--unsafe-fixes` completes is unsafe. Other findings are returned as they are
    (the same objects). `rule_minutes`: each rule's own estimate for a manual finding (rules' `cost.effort_minutes`),
    as the engine scores one."""
    if not any(f.group for f in findings):
        return findings
    never = _foresee(findings, unsafe=True)
    unsafe_only = _foresee([f for f in findings if not (f.group in never and fixable(f, True))], unsafe=False)
    return _marked(findings, never, unsafe_only, rule_minutes or {})


def as_left(left: list[Finding], blocked: frozenset[str], unsafe: bool) -> list[Finding]:
    """What a fix leaves, as `as_scanned` shows it: a finding of a group the run withheld (`blocked`, settle's)
    keeps no fix (or, when `--unsafe-fixes` alone would complete the group, shows as unsafe), so the fix's own
    list of what remains never offers it as fixable."""
    if not blocked or not any(f.group in blocked for f in left):
        return left
    with_unsafe = _foresee(left, unsafe=True)
    unsafe_only = set() if unsafe else {g for g in blocked if g not in with_unsafe}
    return _marked(left, set(blocked) - unsafe_only, unsafe_only, {})


def minutes_of(rules: Iterable[Any]) -> dict[str, float | None]:
    """Each rule's own estimate for a manual finding (`cost.effort_minutes`), for `as_scanned`."""
    return {r.id: (r.cost or {}).get("effort_minutes") for r in rules}


def _marked(findings: list[Finding], never: set[str], unsafe_only: set[str],
            rule_minutes: Mapping[str, float | None]) -> list[Finding]:
    """`findings` with the members of `never` (groups withheld however fixed) made manual and the safe members
    of `unsafe_only` (groups complete only with `--unsafe-fixes`) made unsafe."""
    stuck_of = [f for f in sorted(findings, key=sort_key) if f.group and not _applies(f, True)]
    notes: dict[str, tuple[str, str]] = {}  # group -> (the message's note, fix_blocked)
    out = []
    for f in findings:
        if f.group in never and fixable(f, True):
            if f.group not in notes:
                stuck = [g for g in stuck_of if tied(g.group, f.group)]
                at = [where(g) for g in stuck]
                named = ", ".join(at[:SCAN_NOTE_USES]) + (f" and {len(at) - SCAN_NOTE_USES} more"
                                                          if len(at) > SCAN_NOTE_USES else "")
                note = f"`{symbol_of(f.group)}` is fixed in every file or in none, and " + (
                    f"{len(at)} use(s) cannot be rewritten ({named})" if at else "fix withheld it (its edits conflict)")
                notes[f.group] = (note, f"fix withheld: {note}: " + "; ".join(where(g, why=True) for g in stuck))
            note, blocker = notes[f.group]
            f = replace(f, fix=None, message=f"{f.message} No automatic fix: {note}.",
                        context={**f.context, "fix_blocked": blocker},
                        cost=with_effort(f.cost, "manual", rule_minutes.get(f.rule_id)) if f.cost else None)
        elif f.group in unsafe_only and fixable(f, False) and f.fix is not None:
            note = f"`{symbol_of(f.group)}` is fixed in every file or in none, and other uses' fixes are unsafe"
            f = replace(f, fix=replace(f.fix, applicability="unsafe"), message=f"{f.message} Needs --unsafe-fixes: {note}.",
                        cost=with_effort(f.cost, "unsafe") if f.cost else None)
        out.append(f)
    return out


def symbol_of(group: str) -> str:
    """The symbol a group names, without its family and scope (`removals:double4@program:/p/a.cu` -> `double4`)."""
    return _unscoped(group)[0].partition(":")[2]


def applies_any(res: FileFix, groups: frozenset[str]) -> bool:
    return any(f.group in groups for f in res.applied)


def settle(items: list[T], result_of: Callable[[T], "FileFix | None"],
           refix: Callable[[T, frozenset[str]], T]) -> tuple[list[T], frozenset[str], Withheld]:
    """Fix results of a whole run made consistent per group: `refix(item, blocked)` computes an item's fix again
    without the edits of the `blocked` groups; called only for items that applied an edit of one of them."""
    blocked: frozenset[str] = frozenset()
    withheld = Withheld()
    while True:
        results = [r for r in map(result_of, items) if r is not None]
        more = broken(results) - blocked
        if not more:
            break
        withheld.add(more, results)
        blocked |= more
        out = []
        for it in items:
            r = result_of(it)
            out.append(refix(it, blocked) if r is not None and applies_any(r, blocked) else it)
        items = out
    for r in (r for r in map(result_of, items) if r is not None):
        withheld.merge(r.withheld)
    return items, blocked, withheld


def report(withheld: Withheld, results: Iterable[FileFix]) -> list[str]:
    """One line per withheld group: the uses that could not be rewritten and every use left unchanged."""
    rs = list(results)
    lines = []
    for g, stuck in sorted(withheld.stuck.items()):
        uses = sorted((f for r in rs for f in r.remaining if f.group and tied(f.group, g)), key=sort_key)
        base, scope = _unscoped(g)
        family, _, symbol = base.partition(":")
        declared = ("" if scope is None else " (its declaration not seen)" if scope == ANY_SCOPE
                    else f" (in the program of {display_path(scope[len(PROGRAM_SCOPE):])})"
                    if scope.startswith(PROGRAM_SCOPE) else f" (declared in {display_path(scope)})")
        rules = ", ".join(sorted({f.rule_id for f in uses})) or family
        lines.append(f"{rules}: `{symbol}`{declared}: fix withheld in every file, since {len(stuck)} use(s) cannot be "
                     f"rewritten: {'; '.join(stuck)}. All {len(uses)} use(s) left unchanged: "
                     f"{', '.join(where(f) for f in uses)}")
    return lines


def display_path(path: str) -> str:
    """A scope's path as the user's own paths read: relative to the working directory when under it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if rel.startswith("..") else rel
