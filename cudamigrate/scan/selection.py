"""Which rules a run uses: the selectors (`--select`, `--ignore`, `--extend-select`: ALL, a family, a rule
name, an id or an id prefix), the families made only of opt-in rules, and each rule's version window
(`--from`, `--target-cuda`) with the phrase a message gives it; and the note for a suppression comment that
names no loaded rule. Pure functions of the rules and the options,
apart from the engine that matches them."""

from __future__ import annotations

from ..core.options import Options
from ..findings.suppress import Suppressions, unknown_ids
from ..rules.schema import Rule, parse_version
from ..rules.selectors import closest_id


def selector_hits(rule: Rule, sel: str, all_ids: set[str]) -> bool:
    """ALL, a family, a rule name, a full rule id (exactly: CM101 does not select CM1010) or an id prefix (CM1).
    `all_ids`: the ids of the rules loaded for this run (an id of another run must not change this one)."""
    sel = sel.strip()
    if sel == "ALL" or rule.family == sel or rule.name == sel:
        return True
    if sel in all_ids:
        return rule.id == sel
    return rule.id.startswith(sel)


def opt_in_families(rules: list[Rule]) -> set[str]:
    """Families made only of opt-in rules (`announced`): selecting the family by name is choosing them."""
    fams: dict[str, bool] = {}
    for r in rules:
        fams[r.family] = fams.get(r.family, True) and r.status == "opt-in"
    return {f for f, only in fams.items() if only}


def select_rules(rules: list[Rule], opts: Options) -> list[Rule]:
    all_ids = {r.id for r in rules}
    whole = opt_in_families(rules)
    out = []
    for r in rules:
        chosen_explicitly = any(selector_hits(r, s, all_ids) and (s == r.id or (s == r.family and s in whole))
                                for s in (opts.select or []) + opts.extend_select)
        if opts.select is not None:
            if not any(selector_hits(r, s, all_ids) for s in opts.select):
                if not any(selector_hits(r, s, all_ids) for s in opts.extend_select):
                    continue
        elif opts.extend_select and any(selector_hits(r, s, all_ids) for s in opts.extend_select):
            chosen_explicitly = True
        if r.status == "opt-in" and not chosen_explicitly:
            continue
        if any(selector_hits(r, s, all_ids) for s in opts.ignore):
            continue
        if not in_window(r, opts.from_version, opts.target):
            continue
        out.append(r)
    return out


def in_window(r: Rule, lo: tuple[int, int] | None, hi: tuple[int, int]) -> bool:
    """A versioned rule applies when its deprecation or removal falls in (lo, hi], or is later than hi; an
    announcement applies from its release on."""
    announced = parse_version(r.announced_in) if r.announced_in else None
    if announced is not None and announced > hi:
        return False  # the target's headers do not announce it yet
    versions = [parse_version(v) for v in (r.deprecated_in, r.removed_in) if v]
    if not versions:
        return True
    dep = parse_version(r.deprecated_in) if r.deprecated_in else None
    rem = parse_version(r.removed_in) if r.removed_in else None
    if lo is not None and rem is not None and rem <= lo:
        return False  # already gone before the code's current toolkit: it cannot be in code that builds
    if lo is not None and rem is None and dep is not None and dep <= lo:
        return False  # deprecated before the window: nothing new to tell
    if dep is not None and dep > hi and (rem is None or rem > hi):
        return False  # deprecated only after the target
    return True


def version_phrase(rule: Rule, target: tuple[int, int]) -> str:
    removed = parse_version(rule.removed_in) if rule.removed_in else None
    if removed is not None and removed <= target:
        return f"removed in CUDA {rule.removed_in}"
    if rule.deprecated_in and rule.removed_in:
        return f"deprecated since CUDA {rule.deprecated_in}, removed in {rule.removed_in}"
    if rule.deprecated_in:
        return f"deprecated since CUDA {rule.deprecated_in}"
    if rule.removed_in:
        return f"removed in CUDA {rule.removed_in}"
    return ""


def suppression_warnings(sups: Suppressions, display: str, all_ids: set[str]) -> list[str]:
    """One note per unknown rule id (not among `all_ids`, the loaded rules) in a suppression comment, with a
    did-you-mean."""
    out = []
    for line, rid in unknown_ids(sups, all_ids):
        hint = closest_id(rid, all_ids)
        out.append(f"{display}:{line}: unknown rule id {rid} in `cudamigrate: ignore[...]`: it suppresses nothing"
                   + (f"; did you mean {hint}?" if hint else ""))
    return out
