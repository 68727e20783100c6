"""`cudamigrate doctor`: is this machine ready to build and run the migrated code."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .app import EXIT_CLEAN, EXIT_FINDINGS, main
from .options import version_arg


@main.command()
@click.option("--target-cuda", "--to", "target", default=None,
              help="CUDA version the code must build with (default: as scan's: the compile database's nvcc, "
                   "the nvcc on PATH, else the newest release known).")
@click.option("--require-cuda", default=None, help="Blocker unless nvcc is at least this version (and a GPU's driver can run it).")
@click.option("--require-driver", type=int, default=None, help="Blocker unless the driver's major version is at least this "
              "(skipped, not failed, without a GPU).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def doctor(target: str | None, require_cuda: str | None, require_driver: int | None, fmt: str) -> None:
    """Check toolkit, driver, libraries, libclang, Chromium and calibration; exit 1 only on a --require-* blocker."""
    import json

    from ..toolcheck import doctor as dr

    from ..toolcheck.target import detect, explicit

    named = version_arg(target, "--target-cuda")
    tgt = explicit(named, "--target-cuda") if named is not None else detect([Path(".")])
    checks = dr.gather(tgt.version, version_arg(require_cuda, "--require-cuda"), require_driver, tgt.source)
    click.echo(json.dumps(dr.to_json(checks, tgt.version, tgt.source), indent=2) if fmt == "json" else dr.render_table(checks), nl=fmt != "text")
    sys.exit(EXIT_FINDINGS if dr.blockers(checks) else EXIT_CLEAN)
