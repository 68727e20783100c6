"""Write a fixture's after.* from `cudamigrate fix` of its before.* (review the diff before committing!)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudamigrate.fixtures import Case, load_cases  # noqa: E402
from tests.helpers import engine_for, fix_text  # noqa: E402

for arg in sys.argv[1:]:
    d = Path(arg).resolve()
    case = next(c for c in load_cases(d.parent) if c.dir == d)
    assert isinstance(case, Case) and case.before is not None
    out = fix_text(engine_for(case), case.before, case.before.read_bytes(), unsafe=case.unsafe,
                   display_only=case.display_only)
    target = case.before.with_name("after" + case.before.suffix)
    target.write_bytes(out)
    print(f"wrote {target}")
