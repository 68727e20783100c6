"""Measured costs for performance rules, per GPU (written by the GPU stage, read by the cost model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DEFAULT_FILE = Path(__file__).resolve().parent / "calibration.json"


def load_calibration(configured: str | None, base: Path) -> dict[str, Any] | None:
    """Rule id -> {"summary": "...", ...} for the best-matching GPU entry, or None."""
    path = (base / configured) if configured else DEFAULT_FILE
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    gpus = doc.get("gpus", [])
    if not gpus:
        return None
    entry = gpus[0]
    out = {}
    for rid, rec in entry.get("rules", {}).items():
        out[rid] = dict(rec)
        out[rid].setdefault("summary", f"measured {rec.get('figure', '')} on {entry.get('gpu', 'GPU')}")
    return out
