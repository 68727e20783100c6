"""`cudamigrate rules --stats`: how much of the CUDA change catalog the rules cover.

A catalog row (`library:api`) is covered when some rule lists that key under `catalog:`. It counts
as having a finding when any such rule exists, and as having an automatic fix when one of those
rules has a `safe` or `unsafe` fix. Keys that name no catalog row are reported (typos), and so are
rows claimed by more than one rule (a generated rule duplicating a hand-written one).
"""

from __future__ import annotations

import csv
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..rules.schema import Rule

CATALOG = Path(__file__).resolve().parent.parent / "data" / "cuda_api_changes.csv"


@dataclass
class Coverage:
    table: dict[tuple[str, str], Counter] = field(default_factory=dict)  # (library, fix_kind) -> rows/finding/auto
    unknown_keys: dict[str, list[str]] = field(default_factory=dict)  # rule id -> keys not in the catalog
    duplicates: dict[str, list[str]] = field(default_factory=dict)  # catalog key -> rule ids (more than one)
    uncovered: list[str] = field(default_factory=list)  # catalog keys without any rule

    def totals(self, by: str | None = None) -> dict[str, Counter]:
        """Sums over all rows (`by=None`), or per fix kind (`by="fix_kind"`) or library."""
        out: dict[str, Counter] = defaultdict(Counter)
        for (lib, kind), c in self.table.items():
            k = "total" if by is None else (kind if by == "fix_kind" else lib)
            out[k].update(c)
        return dict(out)


def inventory_keys() -> set[str]:
    """`library:name` of every entry of the header inventories shipped beside the catalog (empty without them):
    the 12.9 -> 13.0 one, and the per-release one whose math-library entries become generated rules too."""
    from . import inventory, releases

    keys: set[str] = set()
    if inventory.INVENTORY.is_file():
        keys |= {k for e in inventory.load_inventory()["entries"] for k in inventory.entry_keys(e)}
    if releases.RELEASES.is_file():
        keys |= {k for e in releases.load()["entries"] for k in inventory.entry_keys(e)}
    return keys


def read_catalog(path: Path = CATALOG) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def compute(rules: list[Rule], catalog: Path = CATALOG) -> Coverage:
    rows = read_catalog(catalog)
    keys = {f"{r['library']}:{r['api']}" for r in rows}
    # generated rules also list header-inventory entries (data/api_inventory.json) the CSV lacks: known keys,
    # counted by tests/test_api_inventory.py rather than in this table of CSV rows
    keys |= inventory_keys()
    claimed: dict[str, list[str]] = defaultdict(list)
    auto: set[str] = set()
    cov = Coverage()
    for r in rules:
        for key in r.catalog:
            if key not in keys:
                cov.unknown_keys.setdefault(r.id, []).append(key)
                continue
            if r.id not in claimed[key]:
                claimed[key].append(r.id)
            if r.fix_applicability != "manual":
                auto.add(key)
    table: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for row in rows:
        key = f"{row['library']}:{row['api']}"
        c = table[(row["library"], row["fix_kind"])]
        c["rows"] += 1
        if claimed.get(key):
            c["finding"] += 1
        else:
            cov.uncovered.append(key)
        if key in auto:
            c["auto"] += 1
    cov.table = dict(table)
    cov.duplicates = {k: v for k, v in sorted(claimed.items()) if len(v) > 1}
    return cov


def _pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:5.1f}%" if b else "    -"


def coverage_report(rules: list[Rule], fmt: str = "text", catalog: Path = CATALOG) -> str:
    if not catalog.is_file():
        return f"catalog not found at {catalog}"
    cov = compute(rules, catalog)
    if fmt == "json":
        return json.dumps({
            "rows": [{"library": a, "fix_kind": b, "rows": c["rows"], "finding": c["finding"], "auto": c["auto"]}
                     for (a, b), c in sorted(cov.table.items())],
            "by_fix_kind": {k: dict(v) for k, v in sorted(cov.totals("fix_kind").items())},
            "total": dict(cov.totals()["total"]),
            "unknown_keys": cov.unknown_keys,
            "duplicates": cov.duplicates,
            "uncovered": cov.uncovered,
        }, indent=2)
    head = f"{'library':12s} {'fix_kind':10s} {'rows':>5s} {'finding':>8s} {'':6s} {'auto-fix':>8s} {'':6s}"
    lines = [head]
    for (lib, kind), c in sorted(cov.table.items()):
        lines.append(f"{lib:12s} {kind:10s} {c['rows']:5d} {c['finding']:8d} {_pct(c['finding'], c['rows'])} "
                     f"{c['auto']:8d} {_pct(c['auto'], c['rows'])}")
    lines.append("")
    for kind, c in sorted(cov.totals("fix_kind").items()):
        lines.append(f"{'all':12s} {kind:10s} {c['rows']:5d} {c['finding']:8d} {_pct(c['finding'], c['rows'])} "
                     f"{c['auto']:8d} {_pct(c['auto'], c['rows'])}")
    t = cov.totals()["total"]
    lines.append(f"{'total':12s} {'':10s} {t['rows']:5d} {t['finding']:8d} {_pct(t['finding'], t['rows'])} "
                 f"{t['auto']:8d} {_pct(t['auto'], t['rows'])}")
    if cov.uncovered:
        lines.append(f"\n{len(cov.uncovered)} catalog row(s) have no rule (rules/catalog/skipped.yaml says why: rows left to "
                     "hand-written rules, and rows that are not migrations, such as the cuSPARSE Generic API)")
    if cov.duplicates:
        lines.append(f"\n{len(cov.duplicates)} catalog row(s) claimed by more than one rule, e.g. "
                     + "; ".join(f"{k} ({', '.join(v)})" for k, v in list(cov.duplicates.items())[:5]))
    for rid, ks in sorted(cov.unknown_keys.items()):
        lines.append(f"{rid}: catalog key(s) not in the catalog: {', '.join(ks)}")
    return "\n".join(lines)
