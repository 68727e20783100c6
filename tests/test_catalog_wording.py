"""Generated catalog advice reads as a sentence: no `(:` left from a `(none: why)` replacement cell."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _strings(x):
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from _strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from _strings(v)


def test_no_broken_template_punctuation_in_catalog_rules():
    bad = []
    for p in sorted((ROOT / "rules" / "catalog").rglob("*.yaml")):
        for s in _strings(yaml.safe_load(p.read_text())):
            if "(:" in s or "( " in s:
                bad.append(f"{p.name}: {s[:100]}")
    assert not bad, bad
