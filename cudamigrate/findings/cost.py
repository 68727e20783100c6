"""Cost / return-on-investment model.

impact  : what it costs to leave the finding alone
          build-break 10 (removed at or before the target toolkit), runtime-break 10 (compiles,
          fails when run with the target toolkit or GPU, e.g. a CDP1 limit on sm_90), deprecated 5
          (removed later or only deprecated), performance 3, hygiene 1;
          rules may set `cost.impact`, and `cost.adjust` multiplies it in context
          (inside a loop, where the translation unit uses other streams, ...).
effort  : what it costs to fix: safe automatic fix 1, unsafe automatic fix 2
          (needs review), display-only suggestion 4 (an edit is shown, but a person must
          check the ordering it changes and apply it), manual 5; `cost.effort_minutes`
          estimates wall time.
roi     : impact / effort, the order in which output is sorted.
Measured figures (calibration) adjust a performance rule's declared estimate
when a calibration for the user's GPU exists (see `measured_factor`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from .model import Cost
from ..core.registry import Registry, condition, list_of, mapping, nullable, number, one_of, string
from ..core.textsafe import finite

MAX_SCORE = 1e9  # scores are clamped to +-MAX_SCORE (JSON has no Infinity or NaN)

IMPACT_SCORES = {"build-break": 10.0, "runtime-break": 10.0, "deprecated": 5.0, "performance": 3.0, "hygiene": 1.0}
EFFORT_SCORES = {"safe": 1.0, "unsafe": 2.0, "display-only": 4.0, "manual": 5.0}
EFFORT_MINUTES = {"safe": 1.0, "unsafe": 5.0, "display-only": 20.0, "manual": 30.0}


def _version(v: str | None) -> tuple[int, int] | None:
    if not v:
        return None
    a, b = v.split(".")
    return int(a), int(b)


def base_impact(declared: str | None, deprecated_in: str | None, removed_in: str | None, target: tuple[int, int],
                override: str | None = None) -> str:
    """`override`: the impact a rule's `cost.impact_when` gives in this context (e.g. `deprecated` for a removed C
    signature that C++ still compiles through an overload); it wins over the versions."""
    if override:
        return override
    rem = _version(removed_in)
    if declared == "runtime-break":  # compiles, but fails at run time once the removal is reached
        return declared if rem is None or rem <= target else "deprecated"
    if rem is not None and rem <= target:
        return "build-break"
    if declared:
        if declared == "build-break":  # a declared break that the target has not reached yet
            return "deprecated"
        return declared
    if rem is not None or _version(deprecated_in) is not None:
        return "deprecated"
    return "hygiene"


def score(
    *,
    declared_impact: str | None,
    deprecated_in: str | None,
    removed_in: str | None,
    target: tuple[int, int],
    applicability: str,
    multipliers: list[tuple[float, str]],
    effort_minutes: float | None = None,
    measured: str | None = None,
    impact_override: str | None = None,
) -> Cost:
    impact = base_impact(declared_impact, deprecated_in, removed_in, target, impact_override)
    value = IMPACT_SCORES[impact]
    factors = []
    for mult, why in multipliers:
        mult = finite(float(mult), MAX_SCORE)  # a rule's `.inf`/`.nan`/1e999 must not reach JSON as Infinity/NaN
        value = finite(value * mult, MAX_SCORE)
        factors.append(f"x{mult:g} {why}")
    effort_score = EFFORT_SCORES[applicability]
    # a rule's own estimate is the time a person needs: it applies to manual findings and display-only suggestions
    minutes = effort_minutes if effort_minutes is not None and applicability in ("manual", "display-only") \
        else EFFORT_MINUTES[applicability]
    minutes = finite(float(minutes), MAX_SCORE)  # the schema admits numbers and numeric strings only
    return Cost(
        impact=impact,
        impact_score=round(value, 3),
        effort=applicability,
        effort_score=effort_score,
        effort_minutes=minutes,
        roi=round(value / effort_score, 3),
        factors=factors,
        measured=measured,
    )


def with_effort(cost: Cost, applicability: str, rule_minutes: float | None = None) -> Cost:
    """`cost` for a finding whose applicability changed after scoring (a withheld consistency group's member is
    manual, fix/consistency.py): the same impact, the effort of the new applicability; its minutes as `score`
    gives them (the rule's own estimate, `rule_minutes`, for a manual finding)."""
    if cost.effort == applicability:
        return cost
    minutes = rule_minutes if rule_minutes is not None and applicability in ("manual", "display-only") \
        else EFFORT_MINUTES[applicability]
    minutes = finite(float(minutes), MAX_SCORE)
    score_ = EFFORT_SCORES[applicability]
    return replace(cost, effort=applicability, effort_score=score_, effort_minutes=minutes,
                   roi=round(cost.impact_score / score_, 3))


def measured_factor(ratio: float | None) -> float | None:
    """Impact multiplier from a calibrated slowdown (bad pattern time / fixed pattern time).

    0.5 + log10(ratio), clamped to [0.25, 3]: no measurable difference (ratio ~1) halves the declared
    impact, 3.4x (legacy-stream launches on an H200) keeps it, 17x (per-call cuBLAS handles) raises it by 1.7,
    and a thousandfold slowdown (device_vector element reads) triples it.
    """
    import math

    if ratio is None or not isinstance(ratio, (int, float)) or ratio <= 0:
        return None
    return round(min(3.0, max(0.25, 0.5 + math.log10(ratio))), 3)


def declared(rule_cost: dict[str, Any]) -> tuple[str | None, float | None]:
    return rule_cost.get("impact"), rule_cost.get("effort_minutes")


# --------------------------------------------------------------------------- a rule's `cost:` keys
Holds = Callable[[Any], bool]  # does this condition hold for the finding at hand?


@dataclass
class Context:
    """What a rule's context-dependent cost keys say about one finding."""

    impact_override: str | None = None
    multipliers: list[tuple[float, str]] = field(default_factory=list)


# name -> what the key contributes for one finding (None: a declared value that `score` reads directly)
COST_KEYS: Registry[Callable[[Any, Holds, Context], None] | None] = Registry("cost key")


def in_context(rule_cost: dict[str, Any], holds: Holds) -> Context:
    """The impact override and multipliers that a rule's `cost.impact_when` / `cost.adjust` give one finding."""
    out = Context()
    for key, val in rule_cost.items():
        entry = COST_KEYS.lookup(key)
        if entry is not None and entry.impl is not None and val:
            entry.impl(val, holds, out)
    return out


def _impact_when(entries: list[dict[str, Any]], holds: Holds, out: Context) -> None:
    out.impact_override = next((iw["impact"] for iw in entries if holds(iw["when"])), None)


def _adjust(entries: list[dict[str, Any]], holds: Holds, out: Context) -> None:
    for adj in entries:
        if holds(adj["when"]):
            out.multipliers.append((float(adj["multiply"]), adj.get("reason", "context")))


IMPACT = one_of(*IMPACT_SCORES)
COST_KEYS.add("impact", IMPACT, None,
              "what leaving the finding costs: `build-break` 10 (a removal at or before the target toolkit; a "
              "declared `build-break` the target has not reached counts as `deprecated`), `runtime-break` 10 "
              "(compiles, fails when run with the target toolkit or GPU, e.g. a CDP1 limit on sm_90; `deprecated` "
              "before its `removed_in`), `deprecated` 5, "
              "`performance` 3, `hygiene` 1. Without it the versions decide.")
COST_KEYS.add("effort_minutes", nullable(number()), None,
              "a person's time to fix it by hand; used for manual findings and display-only suggestions.")
COST_KEYS.add("adjust", nullable(list_of(mapping({"when": condition(), "multiply": number(), "reason": string()},
                                        required=("when", "multiply")),
                                form="[{when: CONDITION, multiply: NUMBER, reason: TEXT}, ...]")),
              _adjust, "each entry whose condition holds multiplies the impact score (`reason` is shown in the "
                       "finding's cost factors), e.g. `{when: {inside: loop}, multiply: 2, reason: inside a loop}`.")
COST_KEYS.add("impact_when", nullable(list_of(mapping({"when": condition(), "impact": IMPACT}, required=("when", "impact")),
                                              form="[{when: CONDITION, impact: IMPACT}, ...]")),
              _impact_when, "the first entry whose condition holds sets the finding's impact; it wins over "
                            "`removed_in` (CM507: a removed C signature that C++ still compiles through an overload).")
