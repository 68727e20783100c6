"""Baselines: adopt the tool on a large codebase by reporting only new findings.

Findings are matched by fingerprint (rule, file, normalized matched text and
its ordinal), so lines shifting above a finding do not make it "new".
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from .findings import Finding

VERSION = 1


class BaselineError(Exception):
    pass


def write_baseline(path: Path, findings: list[Finding]) -> None:
    doc = {
        "version": VERSION,
        "tool": "cudamigrate",
        "findings": sorted(
            ({"rule": f.rule_id, "path": f.path, "fingerprint": f.fingerprint, "line": f.line} for f in findings),
            key=lambda d: (d["path"], d["line"], d["rule"]),
        ),
    }
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def load_baseline(path: Path) -> Counter:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return Counter((d["path"], d["fingerprint"].split("-")[0]) for d in doc["findings"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BaselineError(f"{path}: not a cudamigrate baseline ({exc})") from None


def filter_new(path: Path, findings: list[Finding]) -> list[Finding]:
    known = load_baseline(path)
    out = []
    for f in findings:
        key = (f.path, f.fingerprint.split("-")[0])
        if known[key] > 0:
            known[key] -= 1
        else:
            out.append(f)
    return out
