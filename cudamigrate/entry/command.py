"""The `cudamigrate` command as installed (the console script and `python -m cudamigrate`): the command line's
group (cli/main.py) with `cudamigrate server` added, which starts the editor server (server/lsp.py).

Why a package of its own: the command line and the editor server are two front ends over the workspace layer,
and neither may import the other (docs/architecture.md). The one command that starts the server belongs to
neither, so it is registered here, above both, the only module that sees the two."""

from __future__ import annotations

from ..cli.app import console as _start
from ..cli.main import main


@main.command()
def server() -> None:
    """Language Server (LSP over stdio) for editors: diagnostics as you type, fixes and suppressions as code
    actions, the rule's explanation on hover; the project's configuration applies as for `scan`."""
    from ..server.lsp import serve

    serve()


def console() -> None:
    """The `cudamigrate` command: every command registered (the server's just above), then the CLI's start-up."""
    _start()
