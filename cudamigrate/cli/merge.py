"""`cudamigrate merge`: the reports of `scan --shard I/N` runs joined into one (the work is in workflow/merge.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..core.textsafe import printable
from .app import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, main
from .output import err as _err
from .options import check_writable
from .scan import write_report, render_report


@main.command()
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["json", "sarif", "html"]), default="json", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the report to a file.")
@click.option("--rules-dir", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Extra rule directory the shards ran with (describes their rules in SARIF and HTML).")
@click.option("--fail-on-findings", is_flag=True,
              help="Exit 1 when the merged report holds findings or errors, as `scan` does: the CI gate.")
def merge(reports: tuple[Path, ...], fmt: str, output: Path | None, rules_dir: tuple[Path, ...],
          fail_on_findings: bool) -> None:
    """Join the JSON or SARIF reports of `scan --shard I/N` runs into one JSON, SARIF or HTML report with the
    totals of a single run. Refuses (exit 2) the same shard twice, missing shards, shards of different runs and
    reports of another version. Reports name files relative to the directory the shards ran in."""
    from ..knowledge.load import builtin_rules_dir
    from ..workflow.merge import MergeError, merged_run

    if fmt == "html" and output is None:
        output = Path("cudamigrate-report.html")
        _err(f"writing the HTML report to {output} (choose the file with -o)")
    check_writable(output, "--output")
    try:
        run = merged_run(list(reports), [builtin_rules_dir(), *rules_dir])
    except MergeError as exc:
        _err(printable(str(exc)))
        sys.exit(EXIT_ERROR)
    write_report(render_report(fmt, run), output)
    sys.exit(EXIT_FINDINGS if fail_on_findings and (run.findings or run.errors) else EXIT_CLEAN)
