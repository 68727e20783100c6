"""Command line: `cudamigrate scan`, `fix`, `plan`, `rules`, `explain`, `test` and the rest.

The group (`main`) with every command of the command line registered on first use: one module per command (scan.py,
fix.py, plan.py, doctor.py, rules.py, selftest.py, calibrate.py), the shared options (options.py) and the
request they make (request.py) beside them; the work behind the commands lives in workspace/, pipeline/,
fix/, report/, toolcheck/, fixproof/ and workflow/. `cudamigrate server` starts the editor server, the other
front end, so it is added above both (entry/command.py, the installed command)."""

from __future__ import annotations

# each command module registers its command on `main` when imported, which the group does on first use of the
# command (app.py: COMMAND_MODULES): a scan does not import fix's, doctor's or calibrate's modules
from .app import COMMAND_MODULES, console, main  # noqa: F401  (the entry point and the group)

if __name__ == "__main__":  # pragma: no cover
    main()
