"""Write a fixture case's after.* from `cudamigrate fix` of its before.*, and its findings.txt (the pinned
messages), through the same `cudamigrate.toolcheck.fixtures` functions the checks use. Review the diff before committing!

    python scripts/regen_fixture.py fixtures/removals/CM501-cudathread-to-cudadevice [...]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudamigrate.toolcheck.fixtures import (  # noqa: E402
    ScaffoldTodo,
    engine_for,
    fix_case_file,
    load_cases,
    refuse_scaffold,
    update_snapshot,
)
from cudamigrate.knowledge.load import builtin_rules_dir, load_rules  # noqa: E402


def main(args: list[str]) -> int:
    rs = load_rules([builtin_rules_dir()])
    if rs.errors:
        print("\n".join(rs.errors), file=sys.stderr)
        return 2
    for arg in args:
        d = Path(arg).resolve()
        case = next((c for c in load_cases(d.parent) if c.dir == d), None)
        if case is None or case.before is None:
            print(f"{arg}: not a fixture case with a before.* file", file=sys.stderr)
            return 2
        try:  # the scaffold's placeholder recorded as the expected output would make its test pass
            refuse_scaffold(case.rule_id, rs.rules, [case])
        except ScaffoldTodo as exc:
            print(f"{arg}: {exc}", file=sys.stderr)
            return 2
        fixed = fix_case_file(engine_for(case, rs.rules), case, case.before)
        if case.after is None and fixed == case.before.read_bytes():
            print(f"{arg}: the fix changes nothing, no after.* written")
        else:
            target = case.before.with_name("after" + case.before.suffix)
            target.write_bytes(fixed)
            print(f"wrote {target}")
        if update_snapshot(case, rs.rules):
            print(f"wrote {case.snapshot}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
