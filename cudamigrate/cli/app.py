"""The `cudamigrate` click group, its exit codes and start-up (the commands register themselves on `main`; cli/main.py
imports them all)."""

from __future__ import annotations

import importlib
import sys

import click

from .. import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INPUT = 3  # could not read the inputs (pipeline/inputs.py; README: Exit codes)

# command -> the module of cli/ that registers it on `main`, imported when the command is asked for: importing
# every command's module (fix, doctor, calibrate, verify... and what they import) cost a one-file scan ~25 ms
# of a ~230 ms run, and `--version` as much
COMMAND_MODULES = {"calibrate": "calibrate", "doctor": "doctor", "explain": "rules", "fix": "fix", "merge": "merge",
                   "plan": "plan", "rules": "rules", "scan": "scan", "selftest": "selftest", "test": "selftest",
                   "verify": "verify"}


class LazyGroup(click.Group):
    """A group whose commands' modules are imported on first use (`--help` lists, and so imports, them all)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(COMMAND_MODULES))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            importlib.import_module(f"{__package__}.{COMMAND_MODULES[cmd_name]}")
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cudamigrate")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Find and fix deprecated, removed and slow CUDA API uses."""
    if ctx.invoked_subcommand not in (None, "doctor"):  # doctor reports it among its checks
        _require_rule_packages()
    if ctx.invoked_subcommand != "scan":  # `scan` settles after loading its rules
        settled()


def _require_rule_packages() -> None:
    """Every command but doctor loads the rules: without a package that loading imports, say so in one line
    and exit 2 (not one "invalid rule" line per rule file, not "unknown rule", not a traceback)."""
    from ..knowledge.environment import missing_dependency

    if "cudamigrate.pipeline.result_cache" in sys.modules:
        # A host process that ran a scan before (the tests run commands in-process): the result cache's audit
        # hook records what cudamigrate reads, and looking for a package lists the import path's folders,
        # which are not the scan's dependencies. In a fresh process the hook is not installed yet.
        from ..pipeline.result_cache import unrecorded

        with unrecorded():
            problem = missing_dependency()
    else:
        problem = missing_dependency()
    if problem is not None:
        from .output import err

        err(problem)
        sys.exit(EXIT_ERROR)


def console() -> None:
    """The `cudamigrate` command (and `python -m cudamigrate`): start-up without the cyclic collector (see
    `settled`)."""
    import gc

    gc.disable()
    try:
        main()
    except Exception as exc:  # noqa: BLE001  a bug that escaped every command's own handling: exit 2, one line
        from ..core.errors import describe, trace
        from .output import err

        if "--debug" in sys.argv[1:]:
            click.echo(trace(exc), err=True, nl=False)
        err(f"internal error: {describe(exc)} (this is a bug in cudamigrate; --debug prints the traceback)")
        sys.exit(EXIT_ERROR)


def settled() -> None:
    """Start-up done (modules imported, rules loaded): when the command started without the cyclic collector
    (`console`), what start-up built lives as long as the process, so it is frozen out of the collector's
    way and the collector turned on for the work. The collector's passes over the growing heap cost 0.15 s of
    a 0.8 s re-scan and 0.04 s of a one-file scan. In a host process that has the collector on (tests calling
    `main` in-process) nothing changes."""
    import gc

    if not gc.isenabled():
        gc.freeze()
        gc.enable()
