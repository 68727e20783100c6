"""`cudamigrate rules` and `cudamigrate explain ID`: the rule set and one rule's documentation."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..core.config import ConfigError, find_config
from ..knowledge.load import builtin_rules_dir, load_rules
from .app import EXIT_CLEAN, EXIT_ERROR, main
from .output import err as _err


@main.command("rules")
@click.option("--stats", is_flag=True, help="Catalog coverage by library and fix kind.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.option("--all", "show_all", is_flag=True,
              help="Every rule: also the catalog-generated ones and the opt-in ones (default: hand-written rules "
                   "that run by default).")
@click.option("--rules-dir", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Also load (and check) the rules of this directory; repeatable.")
@click.option("--no-builtin-rules", is_flag=True, help="Only the --rules-dir rules.")
def rules_cmd(stats: bool, fmt: str, show_all: bool, rules_dir: tuple[Path, ...], no_builtin_rules: bool) -> None:
    """List the rules; exit 2 when a rule file is invalid (each such file gets one `file: key: reason` line)."""
    import json

    rs = load_rules(([] if no_builtin_rules else [builtin_rules_dir()]) + list(rules_dir))
    for e in rs.errors:
        _err(e)
    code = EXIT_ERROR if rs.errors else EXIT_CLEAN
    if stats:
        from ..knowledge.catalog import coverage_report

        click.echo(coverage_report(rs.rules, fmt))
        sys.exit(code)
    rows = [r for r in rs.rules if show_all or (r.status != "opt-in" and not r.generated)]
    if fmt == "json":
        click.echo(json.dumps([{
            "id": r.id, "name": r.name, "family": r.family, "status": r.status, "severity": r.severity,
            "summary": r.summary, "fix": r.fix_applicability, "deprecated_in": r.deprecated_in, "removed_in": r.removed_in,
            "generated": r.generated,
        } for r in rows], indent=2))
        sys.exit(code)
    for r in rows:
        mark = {"safe": "[*]", "unsafe": "[~]", "display-only": "[?]", "manual": "[ ]"}[r.fix_applicability]
        status = f" ({r.status})" if r.status != "stable" else ""
        click.echo(f"{r.id:7s} {mark} {r.family:10s} {r.name}{status}: {r.summary}")
    hidden = len(rs.rules) - len(rows)
    if hidden:
        gen = sum(1 for r in rs.rules if r.generated)
        opt = sum(1 for r in rs.rules if r.status == "opt-in" and not r.generated)
        click.echo(f"... and {hidden} more ({gen} generated from the API change catalog, {opt} opt-in): "
                   "`cudamigrate rules --all` lists every rule")
    sys.exit(code)


@main.command()
@click.argument("rule_id")
def explain(rule_id: str) -> None:
    """Explain a rule: what, why, how it is fixed, and where the facts come from."""
    from ..report.explain import explain_text

    rs = load_rules()
    rule = rs.by_id().get(rule_id.upper())
    if rule is None:
        _err(f"unknown rule {rule_id!r}; `cudamigrate rules` lists them")
        sys.exit(EXIT_ERROR)
    from ..findings.measured import all_measurements, current_gpu

    try:
        cfg = find_config(Path("."))
    except ConfigError:
        cfg = None
    base = cfg.path.parent if cfg is not None and cfg.path else Path(".")
    measured = all_measurements(rule, cfg.get("calibration") if cfg is not None else None, base)
    click.echo(explain_text(rule, measured, current_gpu() if measured else None))
