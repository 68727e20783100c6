"""`cudamigrate server`: the Language Server for editors (the work is in server/)."""

from __future__ import annotations

from .app import main


@main.command()
def server() -> None:
    """Language Server (LSP over stdio) for editors: diagnostics as you type, fixes and suppressions as code
    actions, the rule's explanation on hover; the project's configuration applies as for `scan`."""
    from ..server.lsp import serve

    serve()
