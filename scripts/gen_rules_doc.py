#!/usr/bin/env python3
"""Rewrite the vocabulary tables of rules/README.md from the registries (`--check`: only report differences).

Run it after adding or changing a matcher kind, builtin matcher, condition, edit operation or target, or cost key:
their docs live next to their implementations (`CONDITIONS.add(...)` in cudamigrate/match/conditions.py, ...).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cudamigrate.knowledge.readme_tables import update  # noqa: E402

README = ROOT / "rules" / "README.md"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="exit 1 when rules/README.md is not up to date")
    args = ap.parse_args()
    text = README.read_text(encoding="utf-8")
    new, missing = update(text)
    if missing:
        print(f"{README}: no generated block for: {', '.join(missing)}", file=sys.stderr)
        return 1
    if new == text:
        print(f"{README}: up to date")
        return 0
    if args.check:
        print(f"{README}: stale; run python scripts/gen_rules_doc.py", file=sys.stderr)
        return 1
    README.write_text(new, encoding="utf-8")
    print(f"{README}: tables rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
