"""Validation of rule selectors (`--select`, `--ignore`, `--extend-select` and their config keys).

A selector that matches no rule used to be a silent no-op: `--select CM9999`
or `--select streamz` printed "No findings" and exited 0, so a CI gate with a
typo passed forever. Every selector must now match at least one loaded rule
(opt-in rules included); otherwise the run stops with exit 2 and a "did you
mean" suggestion.
"""

from __future__ import annotations

import difflib
from typing import Iterable

from .schema import Rule


def _hits(rule: Rule, sel: str, all_ids: set[str]) -> bool:
    """The engine's selector semantics (scan/selection.py: selector_hits), without its module-level id registry."""
    if sel == "ALL" or rule.family == sel or rule.name == sel:
        return True
    if sel in all_ids:
        return rule.id == sel
    return rule.id.startswith(sel)


def suggestion(sel: str, rules: list[Rule]) -> str | None:
    """The closest valid selector: same text in another case, else the nearest id, family or name."""
    ids = {r.id for r in rules}
    words = sorted(ids | {r.family for r in rules} | {r.name for r in rules} | {"ALL"})
    for w in words:
        if w.lower() == sel.lower():
            return w
    digits = sel[:2].upper() + sel[2:].translate(str.maketrans("OoIl", "0011"))  # CM5O1 -> CM501
    if digits in ids:
        return digits
    close = difflib.get_close_matches(sel, words, n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(sel.upper(), sorted(ids), n=1, cutoff=0.6)
    return close[0] if close else None


def unknown(selectors: Iterable[str], rules: list[Rule]) -> list[str]:
    ids = {r.id for r in rules}
    return [s for s in selectors if s and not any(_hits(r, s, ids) for r in rules)]


def check(sources: dict[str, list[str]], rules: list[Rule]) -> list[str]:
    """One message per selector that matches no rule; `sources` maps where it came from to its values."""
    out = []
    for where, values in sources.items():
        for s in unknown(values, rules):
            hint = suggestion(s, rules)
            out.append(f"{where}: unknown rule selector {s!r}" + (f"; did you mean {hint!r}?" if hint else "")
                       + " (`cudamigrate rules --all` lists ids, families and names)")
    return out


def closest_id(rid: str, ids: set[str]) -> str | None:
    """The rule id a mistyped id most likely meant (`CM5O1`, `cm501` -> CM501), or None."""
    digits = rid[:2].upper() + rid[2:].translate(str.maketrans("OoIl", "0011"))
    if digits in ids:
        return digits
    close = difflib.get_close_matches(digits, sorted(ids), n=1, cutoff=0.75)
    return close[0] if close else None
