"""Measured costs for performance rules, per GPU (written by `cudamigrate calibrate`, read by the cost model).

File format (cudamigrate/data/calibration.json by default, or `calibration = "file.json"` in the configuration):

    {"version": 1,
     "gpus": [{"gpu": "NVIDIA H200", "driver": "570.xx", "cuda": "13.0", "compute_cap": "9.0",
               "date": "2026-12-03T07:00:00Z",
               "rules": {"CM101": {"figure": "38 µs per call vs 4 µs", "bad_us": 38.0, "good_us": 4.0,
                                   "ratio": 9.5, "summary": "measured on NVIDIA H200: ..."},
                         "cublas-handle-per-call": {...}}}]}

Keys under "rules" are rule ids, or calibration keys that a rule names with `cost: {calibration: KEY}`
(a rule looks itself up by id first, then by that key). The entry whose "gpu" matches the user's GPU
(nvidia-smi's name, or CUDAMIGRATE_GPU_NAME; case-insensitive, ignoring an "NVIDIA " prefix) is used.
When no entry matches, there is no measured figure and the rule's declared estimate stands.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any


DEFAULT_FILE = Path(__file__).resolve().parent.parent / "data" / "calibration.json"


def current_gpu() -> str | None:
    """The user's GPU name: CUDAMIGRATE_GPU_NAME, else nvidia-smi's first GPU, else None."""
    from ..toolcheck.gpu import first_gpu_name  # here: a scan without calibration never asks nvidia-smi

    return os.environ.get("CUDAMIGRATE_GPU_NAME") or first_gpu_name()


def normalize_gpu(name: str) -> str:
    n = " ".join(name.lower().replace("_", " ").split())
    return re.sub(r"^nvidia\s+", "", n)


def read_doc(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested too deeply for json
        return None
    return doc if isinstance(doc, dict) else None


def select_entry(doc: dict[str, Any] | None, gpu: str | None) -> dict[str, Any] | None:
    """The newest entry measured on `gpu`, or None."""
    if not doc or not gpu:
        return None
    want = normalize_gpu(gpu)
    hits = [e for e in doc.get("gpus", []) or [] if isinstance(e, dict) and normalize_gpu(str(e.get("gpu", ""))) == want]
    if not hits:
        return None
    return max(hits, key=lambda e: str(e.get("date", "")))


def summary(entry: dict[str, Any], rec: dict[str, Any]) -> str:
    if rec.get("summary"):
        return str(rec["summary"])
    return f"measured on {entry.get('gpu', 'GPU')}: {rec.get('figure', '')}".rstrip(": ")


def entry_records(entry: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for key, rec in (entry.get("rules", {}) or {}).items():
        if isinstance(rec, dict):
            r = dict(rec)
            r["summary"] = summary(entry, rec)
            r.setdefault("gpu", entry.get("gpu"))
            out[key] = r
    return out


def calibration_path(configured: str | None, base: Path) -> Path:
    return (base / configured) if configured else DEFAULT_FILE


def load_calibration(configured: str | None, base: Path, gpu: str | None = None) -> dict[str, Any] | None:
    """Key (rule id or calibration key) -> {"summary": ..., ...} for the user's GPU, or None (declared estimates)."""
    doc = read_doc(calibration_path(configured, base))
    if not doc or not doc.get("gpus"):
        return None
    entry = select_entry(doc, gpu or current_gpu())
    if entry is None:
        return None
    return entry_records(entry)


def lookup(calibration: dict[str, Any] | None, rule: Any) -> dict[str, Any] | None:
    """The measured record of a rule: by id, then by the key its `cost.calibration` names."""
    if not calibration:
        return None
    rec = calibration.get(rule.id)
    if rec is None:
        key = (getattr(rule, "cost", None) or {}).get("calibration")
        if key:
            rec = calibration.get(str(key))
    return rec


def all_measurements(rule: Any, configured: str | None = None, base: Path = Path(".")) -> list[dict[str, Any]]:
    """Every GPU's measured record for `rule` (for `cudamigrate explain`)."""
    doc = read_doc(calibration_path(configured, base))
    out = []
    for entry in (doc or {}).get("gpus", []) or []:
        if isinstance(entry, dict):
            rec = lookup(entry_records(entry), rule)
            if rec is not None:
                out.append(rec)
    return out
