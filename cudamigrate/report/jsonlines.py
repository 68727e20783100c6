"""JSON Lines: one finding per line, the same objects as the `json` format's `findings`, ordered by ROI."""

from __future__ import annotations

import json

from .json import document
from .model import Run


def render(run: Run) -> str:
    return "".join(json.dumps(d, ensure_ascii=False, separators=(",", ":")) + "\n" for d in document(run)["findings"])
