"""Command line: `cudamigrate scan`, `fix`, `plan`, `rules`, `explain`, `test` and the rest.

The entry point (`console`) and the group (`main`) with every command registered: one module per command
(scan.py, fix.py, plan.py, doctor.py, rules.py, selftest.py, calibrate.py), the shared options (options.py)
and the request they make (request.py) beside them; the work behind the commands lives in workspace/,
pipeline/, fix/, report/, toolcheck/, fixproof/ and workflow/."""

from __future__ import annotations

# each command module registers its command on `main` when imported
from . import calibrate, doctor, fix, merge, plan, rules, scan, selftest, server, verify  # noqa: F401
from .app import console, main  # noqa: F401  (the entry point and the group)

if __name__ == "__main__":  # pragma: no cover
    main()
