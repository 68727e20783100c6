"""Options and argument checks shared by `scan`, `fix` and `plan`: rule selection, `-` for stdin, `--diff-base`."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import click

from ..core.textsafe import printable
from ..workspace.request import check_regular, version_value
from .request import RUN_FLAGS, RunFlags, refused

FORMATS = ["text", "concise", "json", "sarif", "github", "json-lines", "junit", "html"]


def print_tracebacks(debug: bool, tracebacks: list[str]) -> None:
    if debug:
        for tb in tracebacks:
            click.echo(tb.rstrip("\n"), err=True)


def check_regular_flag(path: Path, flag: str) -> None:
    """An input file given by a flag must be a regular file (workspace/request.py), as a click error."""
    with refused():
        check_regular(path, flag)


def check_writable(path: Path | None, flag: str) -> None:
    """Fail before scanning, not after, when a report or baseline cannot be written where asked."""
    if path is None:
        return
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise click.BadParameter(f"{printable(str(path))}: directory {printable(str(parent))} does not exist",
                                 param_hint=flag)


def version_arg(v: str | None, flag: str) -> tuple[int, int] | None:
    with refused():
        return version_value(v, flag)


def selection_options(fn):
    """The shared flags (rule selection, versions, modes; with stdin_option, force_exclude_option,
    color_option and diff_base_option when the command takes them) handed to the command as one typed
    `flags: RunFlags` (cli/request.py), not as separate keywords."""
    opts = [
        click.option("--select", multiple=True, help="Rule ids, id prefixes or families to enable (comma-separated)."),
        click.option("--ignore", multiple=True, help="Rule ids, id prefixes or families to disable."),
        click.option("--extend-select", multiple=True, help="Enable more rules (including opt-in rules) on top of the defaults."),
        click.option("--target-cuda", "--to", "target", default=None,
                     help="CUDA version the code must build with (default: the release of the compile database's nvcc, "
                          "else of the nvcc on PATH, else the newest release known; reports say which)."),
        click.option("--from", "from_version", default=None,
                     help="CUDA version the code builds with today: rules for changes before it are skipped."),
        click.option("--keep-compat", "keep_compat", default=None,
                     help="Oldest CUDA version the fixed code must still build with: rewrites to APIs introduced after it "
                          "are wrapped in `#if CUDART_VERSION >= ...` / `#else` (old form) / `#endif`."),
        click.option("--rules-dir", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
                     help="Extra directory of rule YAML files (repeatable)."),
        click.option("--no-builtin-rules", is_flag=True, help="Only use --rules-dir rules."),
        click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
                     help="Configuration file (default: nearest .cudamigrate.toml or pyproject.toml [tool.cudamigrate])."),
        click.option("--option", "cli_options", multiple=True, help="Template option KEY=VALUE, e.g. stream=my_stream."),
        # at least 1 (a count of processes, a size in bytes): `-j 0`, `-j -3` and `--max-file-size -5` are usage
        # errors (exit 2) naming the option, not a run that silently does something else
        click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes (default: CPUs)."),
        click.option("--max-file-size", type=click.IntRange(min=1), default=None,
                     help="Skip files larger than this many bytes (default 8 MiB)."),
        click.option("--compile-commands", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
                     help="Semantic mode: parse translation units with libclang using the flags in this "
                          "compile_commands.json (default: as clangd finds it: in . or a build*/ directory, upward from the paths)."),
        click.option("--no-semantic", is_flag=True, help="Never use libclang, even when a compile_commands.json is found."),
        click.option("--timings", is_flag=True, help="Print each phase's wall and CPU time on stderr."),
        click.option("--no-cache", "no_cache", is_flag=True,
                     help="Use no cache: neither read nor write the compiled rule cache or the result cache "
                          "(also: CUDAMIGRATE_NO_CACHE=1; see README: Result cache)."),
        click.option("--debug", is_flag=True, help="Print the traceback of each internal error on stderr."),
    ]

    @functools.wraps(fn)
    def command(*args: Any, **params: Any) -> Any:  # click calls it with every option's value by name
        flags = RunFlags(**{name: params.pop(name) for name in RUN_FLAGS if name in params})
        return fn(*args, flags=flags, **params)

    for o in reversed(opts):
        command = o(command)
    return command


def stdin_option(fn):
    """`--stdin-filename`: the path a buffer piped to `-` stands for (editors)."""
    return click.option("--stdin-filename", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        help="With `-` as the path: read the source from stdin and treat it as this file (config, "
                             "exclude and reports use this name; the file itself is not read or written).")(fn)


def diff_base_option(fn):
    """`--diff-base REF`: only lines changed since a git revision (scan and plan)."""
    return click.option("--diff-base", metavar="REF", default=None,
                        help="Only report findings on lines added or changed since git revision REF (`git diff -U0 "
                             "REF`; untracked files count as wholly changed).")(fn)


def force_exclude_option(fn):
    """`--force-exclude`: what ruff's pre-commit hooks pass (pipeline/inputs.py says what it changes)."""
    return click.option("--force-exclude", is_flag=True,
                        help="Named files that the configuration excludes are skipped silently; when every named "
                             "file is excluded the run passes (exit 0). The pre-commit hooks pass it.")(fn)


def color_option(fn):
    """`--color auto|always|never` (ruff's flag): scan's text and concise reports, fix's remaining findings
    (cli/output.py: use_color)."""
    return click.option("--color", "color", type=click.Choice(["auto", "always", "never"]), default="auto",
                        show_default=True,
                        help="Colour the findings listed: auto on a terminal (not when piped, written with -o or "
                             "NO_COLOR is set).")(fn)
