"""`cudamigrate rules --stats`: how much of the CUDA change catalog the rules cover."""

from __future__ import annotations

import csv
import json
from collections import Counter, defaultdict
from pathlib import Path

from .rules.schema import Rule

CATALOG = Path(__file__).resolve().parent / "data" / "cuda_api_changes.csv"


def coverage_report(rules: list[Rule], fmt: str = "text") -> str:
    covered_auto: set[str] = set()
    covered_any: set[str] = set()
    for r in rules:
        for key in r.catalog:
            covered_any.add(key)
            if r.fix_applicability != "manual":
                covered_auto.add(key)
    if not CATALOG.is_file():
        return f"catalog not found at {CATALOG}"
    rows = list(csv.DictReader(CATALOG.open(encoding="utf-8")))
    table: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for row in rows:
        key = f"{row['library']}:{row['api']}"
        k = (row["library"], row["fix_kind"])
        table[k]["rows"] += 1
        if key in covered_any:
            table[k]["finding"] += 1
        if key in covered_auto:
            table[k]["auto"] += 1
    if fmt == "json":
        return json.dumps([{"library": a, "fix_kind": b, **c} for (a, b), c in sorted(table.items())], indent=2)
    lines = [f"{'library':12s} {'fix_kind':10s} {'rows':>5s} {'finding':>8s} {'auto-fix':>8s}"]
    tot = Counter()
    for (lib, kind), c in sorted(table.items()):
        lines.append(f"{lib:12s} {kind:10s} {c['rows']:5d} {c['finding']:8d} {c['auto']:8d}")
        tot.update(c)
    lines.append(f"{'total':12s} {'':10s} {tot['rows']:5d} {tot['finding']:8d} {tot['auto']:8d}")
    return "\n".join(lines)
