"""Text split at its top-level commas: template arguments, a prototype's parameters.

Shared by the texture migration (`texture<float, 2, cudaReadModeElementType>`'s arguments) and the release
inventory (scripts/build_release_inventory.py: a prototype's parameter types), which read the same shape.
"""

from __future__ import annotations


def split_top_level(text: str) -> list[str]:
    """`text`'s parts between the commas outside `<>`, `()` and `[]`, stripped; a last empty part is dropped."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out
