"""JSON Lines: one finding per line, the same objects as the `json` format's `findings`, ordered by ROI.

ASCII-only (`\\uXXXX` escapes), so no tool that splits lines on U+2028, U+0085 and the like can break a record.
"""

from __future__ import annotations

import json

from .json import document
from .model import Run


def render(run: Run) -> str:
    return "".join(json.dumps(d, ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n" for d in document(run)["findings"])
