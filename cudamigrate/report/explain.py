"""`cudamigrate explain ID` and the language server's hover: a rule's documentation as text."""

from __future__ import annotations

import textwrap

from ..rules.schema import Rule


def explain_text(rule: Rule, measured: list[dict] | None = None, gpu: str | None = None) -> str:
    """`measured`: calibration records of this rule (one per GPU); `gpu`: the user's GPU, to mark its record."""
    out = [f"{rule.id} {rule.name} ({rule.family}, {rule.severity})", "", rule.summary, ""]
    versions = []
    if rule.deprecated_in:
        versions.append(f"deprecated in CUDA {rule.deprecated_in}")
    if rule.removed_in:
        versions.append(f"removed in CUDA {rule.removed_in}")
    if versions:
        out += ["Versions: " + ", ".join(versions), ""]
    for key, title in (("what", "What it finds"), ("why", "Why"), ("fix_safety", "Fix"), ("example", "Example")):
        val = rule.docs.get(key)
        if val:
            out.append(title + ":")
            out += [textwrap.indent(str(val).rstrip(), "  "), ""]
    if measured:
        from ..findings.measured import normalize_gpu

        out.append("Measured cost:")
        for rec in measured:
            mine = gpu is not None and normalize_gpu(str(rec.get("gpu", ""))) == normalize_gpu(gpu)
            out.append(f"  - {rec.get('summary')}" + (" (your GPU)" if mine else ""))
        out.append("")
    elif rule.cost.get("impact") == "performance":
        out += ["Measured cost: no calibration for this GPU; the declared estimate applies.", ""]
    out.append(f"Automatic fix: {rule.fix_applicability}")
    out += ["", "Score:", textwrap.indent(textwrap.fill(_score_words(rule), 100), "  ")]
    out += ["", "Estimate:", textwrap.indent(textwrap.fill(_estimate_words(rule), 100), "  ")]
    if rule.status == "opt-in":
        out.append("Opt-in: enable with --extend-select " + rule.id)
    out.append("")
    out.append("References:")
    out += [f"  - {r}" for r in rule.references]
    out.append("")
    out.append(f"Suppress with: // cudamigrate: ignore[{rule.id}]")
    return "\n".join(out)


def _score_words(rule: Rule) -> str:
    """How this rule's `(roi N)` is computed, in words (the same model as cost.py)."""
    from ..findings.cost import EFFORT_SCORES, IMPACT_SCORES
    from ..report.plan import ROI_WORDS

    declared = rule.cost.get("impact")
    if declared == "runtime-break":
        imp = (f"run-time break ({IMPACT_SCORES['runtime-break']:g}: builds, then fails)"
               + (f" when --target-cuda >= {rule.removed_in}, else deprecated" if rule.removed_in else ""))
    elif rule.removed_in:
        imp = f"build break ({IMPACT_SCORES['build-break']:g}) when --target-cuda >= {rule.removed_in}, else deprecated"
    elif declared:
        imp = f"{declared} ({IMPACT_SCORES.get(declared, 1):g})"
    elif rule.deprecated_in:
        imp = f"deprecated ({IMPACT_SCORES['deprecated']:g})"
    else:
        imp = f"hygiene ({IMPACT_SCORES['hygiene']:g})"
    app = rule.fix_applicability
    return (f"impact {imp}; effort {app} ({EFFORT_SCORES[app]:g}). {ROI_WORDS}")


def _estimate_words(rule: Rule) -> str:
    """How the plan turns this rule's findings into an effort estimate (findings/jobs.py)."""
    from ..report.plan import JOB_WORDS

    try:
        each = f"about {float(rule.cost['effort_minutes']):g} min per job (declared in the rule)"
    except (KeyError, TypeError, ValueError):
        each = "the effort class's minutes per job"
    return f"{each}. {JOB_WORDS}"
