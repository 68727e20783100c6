"""One run of cudamigrate as a library, whoever asks for it: the command line, the language server, or an
integrator's own program (docs/python-api.md).

A `Request` says what to run; `scan` (or `scan_buffer`, for text not on disk) returns the findings;
`fix` computes, verifies and writes each file's fix (workspace/fixing.py); `prepare` and `setup` are the
steps under both (configuration, options and files; then the checked rules and the engine). Each refuses a
run it cannot start with `WorkspaceError`, in the words `cudamigrate scan` prints before exiting 2."""

from .fixing import FileFix, Fixed, FixOptions, fix
from .preparation import Prepared, Setup, prepare, setup
from .request import Request, WorkspaceError
from .scanning import Scanned, scan, scan_buffer

__all__ = ["FileFix", "FixOptions", "Fixed", "Prepared", "Request", "Scanned", "Setup", "WorkspaceError", "fix",
           "prepare", "scan", "scan_buffer", "setup"]
