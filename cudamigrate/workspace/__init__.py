"""One run of cudamigrate as a library, whoever asks for it: the command line, the language server, or an
integrator's own program (docs/python-api.md).

A `Request` says what to run; `scan` (or `scan_buffer`, for text not on disk) returns the findings;
`fix` computes, verifies and writes each file's fix (workspace/fixing.py); `prepare` and `setup` are the
steps under both (configuration, options and files; then the checked rules and the engine). Each refuses a
run it cannot start with `WorkspaceError`, in the words `cudamigrate scan` prints before exiting 2."""

from typing import TYPE_CHECKING, Any

# what each public name is imported from, on first use (PEP 562): a scan never pays for fix's modules (fixing
# imports the verifier, the writer and the rollback: ~10 ms of a one-file run), nor a command its siblings'
_FROM = {"FileFix": "fixing", "FixOptions": "fixing", "Fixed": "fixing", "fix": "fixing",
         "Prepared": "preparation", "Setup": "preparation", "prepare": "preparation", "setup": "preparation",
         "Request": "request", "WorkspaceError": "request", "Scanned": "scanning", "scan": "scanning",
         "scan_buffer": "scanning"}

__all__ = ["FileFix", "FixOptions", "Fixed", "Prepared", "Request", "Scanned", "Setup", "WorkspaceError", "fix",
           "prepare", "scan", "scan_buffer", "setup"]

if TYPE_CHECKING:
    from .fixing import FileFix, Fixed, FixOptions, fix
    from .preparation import Prepared, Setup, prepare, setup
    from .request import Request, WorkspaceError
    from .scanning import Scanned, scan, scan_buffer


def __getattr__(name: str) -> Any:
    module = _FROM.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
