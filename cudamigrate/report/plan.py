"""The migration plan: what a team lead pastes into a ticket.

A scan answers "what is wrong"; a lead asks "what breaks with the target
toolkit, what does it cost, what do we do first". The plan groups findings by
what leaving them alone costs (impact) and by how they are fixed
(applicability), so that must-do work (build breaks for the target) and
optional work (deprecations, performance, hygiene) are never summed together.

The same order drives the default text listing (`plan_order`): build breaks
first (safe, then unsafe, then manual), then deprecations, performance and
hygiene, each group by ROI.
"""

from __future__ import annotations

import shlex
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from ..findings.model import Finding
from ..findings.jobs import job_minutes, jobs

IMPACT_ORDER = ("build-break", "runtime-break", "deprecated", "performance", "hygiene")
# must-do impact classes: the code does not build, or it builds and then fails, with the target toolkit
MUST_IMPACTS = ("build-break", "runtime-break")
APPLICABILITY_ORDER = ("safe", "unsafe", "display-only", "manual")
ROI_WORDS = (
    "ROI = impact / effort. Impact is what leaving the finding costs: build break 10, run-time break (builds, then "
    "fails with the target) 10, deprecated 5, "
    "performance 3, hygiene 1 (multiplied in context, e.g. x4 inside a loop, or by a GPU measurement). "
    "Effort is what fixing it costs: safe automatic fix 1, unsafe fix needing review 2, suggested edit to check "
    "and apply by hand (display-only) 4, manual 5. "
    "Higher ROI = more value per unit of work; the order only ranks findings within one impact group."
)

JOB_WORDS = ("Estimates count jobs: a rule's manual findings (and suggested edits) in one switch, function or macro "
             "are one job, costed once (the largest estimate among them); other findings are one job each.")


def impact_of(f: Finding) -> str:
    """The finding's impact class; unknown classes (and findings without a cost) count as hygiene."""
    imp = f.cost.impact if f.cost else "hygiene"
    return "build-break" if imp == "removal" else (imp if imp in IMPACT_ORDER else "hygiene")


def roi_of(f: Finding) -> float:
    return f.cost.roi if f.cost else 0.0


def fmt_roi(value: float) -> str:
    """ROI as a reader wants it: one decimal (`4.6`, `12`, `0.5`), never `4.648`."""
    return f"{round(value, 1):g}"


def plan_key(f: Finding) -> tuple:
    """Sort key: impact class, then (for build breaks) safe -> unsafe -> display-only -> manual, then ROI, place."""
    imp = impact_of(f)
    app = _app_rank(f.applicability) if imp in MUST_IMPACTS else 0
    return (IMPACT_ORDER.index(imp), app, -roi_of(f), f.path, f.line, f.column, f.rule_id, f.end_line,
            f.end_column, f.message)


def _app_rank(app: str) -> int:
    return APPLICABILITY_ORDER.index(app) if app in APPLICABILITY_ORDER else len(APPLICABILITY_ORDER)


def plan_order(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=plan_key)


@dataclass
class RuleLine:
    """One rule's share of a step."""

    rule_id: str
    name: str
    findings: int
    files: int
    minutes: float
    explain: str  # the command that shows the rule's documentation and sources
    jobs: int = 0  # hand-work findings in one construct count as one job (cudamigrate/findings/jobs.py)


@dataclass
class Step:
    """One thing to do: a command (or manual work), what it clears, and what to review."""

    title: str
    impact: str
    applicability: str
    findings: int
    files: int
    minutes: float
    command: str | None
    rules: list[RuleLine] = field(default_factory=list)
    review_files: list[str] = field(default_factory=list)
    jobs: int = 0  # the findings counted as jobs (cudamigrate/findings/jobs.py); minutes are per job


@dataclass
class Plan:
    target: str
    files_scanned: int
    must: list[Step]
    optional: list[Step]
    errors: list[str]
    minimum: str | None = None  # the oldest toolkit the project declared (keep-compat); CM410 removes guards only then

    @property
    def must_minutes(self) -> float:
        return sum(s.minutes for s in self.must)

    @property
    def optional_minutes(self) -> float:
        return sum(s.minutes for s in self.optional)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "files_scanned": self.files_scanned,
            "must": {"findings": sum(s.findings for s in self.must), "hours": _hours(self.must_minutes),
                     "steps": [asdict(s) for s in self.must]},
            "optional": {"findings": sum(s.findings for s in self.optional), "hours": _hours(self.optional_minutes),
                         "steps": [asdict(s) for s in self.optional]},
            "unreadable": list(self.errors),
            "minimum": self.minimum,
            "roi": ROI_WORDS,
        }


def _hours(minutes: float) -> float:
    return round(minutes / 60, 1)


def effort_str(minutes: float) -> str:
    """`25 min` under an hour, `1.5 h` above."""
    return f"{round(minutes):d} min" if minutes < 60 else f"{_hours(minutes):g} h"


def _minutes(fs: list[Finding]) -> float:
    """Effort counted by job: a rule's hand-work findings in one switch, function or macro are one job."""
    return job_minutes(fs)


def _jobs(fs: list[Finding]) -> int:
    return len(jobs(fs))


def _rule_lines(fs: list[Finding], names: dict[str, str]) -> list[RuleLine]:
    by_rule: dict[str, list[Finding]] = defaultdict(list)
    for f in fs:
        by_rule[f.rule_id].append(f)
    lines = [RuleLine(rid, names.get(rid) or group[0].rule_name, len(group), len({f.path for f in group}),
                      _minutes(group), f"cudamigrate explain {rid}", _jobs(group)) for rid, group in by_rule.items()]
    return sorted(lines, key=lambda r: (-r.findings, r.rule_id))


def _cmd(args: list[str], paths: list[str], extra: list[str] | None = None) -> str:
    return " ".join(["cudamigrate", *args, *(shlex.quote(a) for a in extra or []),
                     *(shlex.quote(p) for p in paths or ["."])])


def build_plan(findings: list[Finding], errors: list[str], files_scanned: int, target: str,
               rule_names: dict[str, str], paths: list[str], extra: list[str] | None = None,
               minimum: str | None = None) -> Plan:
    """Group findings into must-do steps (build breaks, then run-time breaks) and optional steps (everything else).

    `extra`: the options the plan was made with that the `fix` commands must repeat (--target-cuda, ...)."""
    groups: dict[tuple[str, str], list[Finding]] = defaultdict(list)
    for f in findings:
        groups[(impact_of(f), f.applicability)].append(f)
    must: list[Step] = []
    for must_imp in MUST_IMPACTS:
        bb = {a: groups.get((must_imp, a), []) for a in APPLICABILITY_ORDER}
        pre = "" if must_imp == "build-break" else "run-time failures: "
        if bb["safe"]:
            ids = sorted({f.rule_id for f in bb["safe"]})
            must.append(Step(pre + "automatic fixes that keep behaviour", must_imp, "safe", len(bb["safe"]),
                             len({f.path for f in bb["safe"]}), _minutes(bb["safe"]),
                             _cmd(["fix", "--select", ",".join(ids)], paths, extra), _rule_lines(bb["safe"], rule_names)))
        if bb["unsafe"]:
            ids = sorted({f.rule_id for f in bb["unsafe"]})
            must.append(Step(pre + "automatic fixes that change behaviour: review each", must_imp, "unsafe",
                             len(bb["unsafe"]), len({f.path for f in bb["unsafe"]}), _minutes(bb["unsafe"]),
                             _cmd(["fix", "--unsafe-fixes", "--select", ",".join(ids)], paths, extra),
                             _rule_lines(bb["unsafe"], rule_names), sorted({f.path for f in bb["unsafe"]})))
        if bb["display-only"]:
            must.append(Step(pre + "suggested edits to check and apply by hand", must_imp, "display-only",
                             len(bb["display-only"]), len({f.path for f in bb["display-only"]}),
                             _minutes(bb["display-only"]), None, _rule_lines(bb["display-only"], rule_names)))
        if bb["manual"]:
            must.append(Step(pre + "manual changes", must_imp, "manual", len(bb["manual"]),
                             len({f.path for f in bb["manual"]}), _minutes(bb["manual"]), None,
                             _rule_lines(bb["manual"], rule_names)))
    optional: list[Step] = []
    for imp in (i for i in IMPACT_ORDER if i not in MUST_IMPACTS):
        for app in APPLICABILITY_ORDER:
            fs = groups.get((imp, app), [])
            if not fs:
                continue
            ids = sorted({f.rule_id for f in fs})
            cmd = None
            if app == "safe":
                cmd = _cmd(["fix", "--select", ",".join(ids)], paths, extra)
            elif app == "unsafe":
                cmd = _cmd(["fix", "--unsafe-fixes", "--select", ",".join(ids)], paths, extra)
            title = {"safe": "automatic fixes that keep behaviour", "unsafe": "automatic fixes to review",
                     "display-only": "suggested edits to check and apply by hand", "manual": "manual changes"}[app]
            optional.append(Step(f"{imp}: {title}", imp, app, len(fs), len({f.path for f in fs}), _minutes(fs), cmd,
                                 _rule_lines(fs, rule_names),
                                 sorted({f.path for f in fs}) if app == "unsafe" else []))
    for step, fs in zip(must + optional, _step_findings(groups, must + optional), strict=True):
        step.jobs = _jobs(fs)
    return Plan(target, files_scanned, must, optional, list(errors), minimum)


def minimum_line(minimum: str | None) -> str:
    """Which oldest toolkit the plan assumed: it decides which version guards are dead (CM410)."""
    if minimum:
        return f"Oldest CUDA the code must still build with: {minimum} (keep-compat); version guards dead from it on are removed."
    return ("Oldest CUDA the code must still build with: not declared; version guards are reported, not removed "
            "(set keep-compat under [tool.cudamigrate] or pass --keep-compat).")


def _step_findings(groups: dict[tuple[str, str], list[Finding]], steps: list[Step]) -> list[list[Finding]]:
    return [groups.get((s.impact, s.applicability), []) for s in steps]


MAX_LISTED = 10


def _files_line(files: list[str]) -> str:
    shown = ", ".join(files[:MAX_LISTED])
    return shown + (f" and {len(files) - MAX_LISTED} more" if len(files) > MAX_LISTED else "")


def render_text(plan: Plan) -> str:
    """The plan as numbered steps that read well pasted into a ticket."""
    out = [f"Migration plan to CUDA {plan.target} ({plan.files_scanned} file(s) scanned)", minimum_line(plan.minimum), ""]
    nbreak = sum(s.findings for s in plan.must if s.impact == "build-break")
    nrun = sum(s.findings for s in plan.must if s.impact == "runtime-break")
    if plan.must:
        runs = f" and {nrun} run-time break(s) (builds, then fails)" if nrun else ""
        out.append(f"Must do: {nbreak} build break(s){runs} for CUDA {plan.target}, est. {effort_str(plan.must_minutes)}")
    else:
        out.append(f"Must do: nothing: no build breaks for CUDA {plan.target} found.")
    n = 0
    for s in plan.must:
        n += 1
        if s.applicability == "safe":
            out.append(f"{n}. `{s.command}` clears {s.findings} build break(s) in {s.files} file(s) (safe: behaviour kept).")
        elif s.applicability == "unsafe":
            what = "more" if n > 1 else "build break(s)"
            out.append(f"{n}. `{s.command}` clears {s.findings} {what} in {s.files} file(s) (behaviour may change); "
                       f"review these {len(s.review_files)} file(s): {_files_line(s.review_files)}")
        elif s.applicability == "display-only":
            out.append(f"{n}. {s.findings} suggested edit(s){_as_jobs(s.findings, s.jobs)} in {s.files} file(s) to check "
                       f"and apply by hand (est. {effort_str(s.minutes)}; the reports show each edit), by rule:")
        else:
            what = " that fail at run time" if s.impact == "runtime-break" else ""
            out.append(f"{n}. {s.findings} manual item(s){what}{_as_jobs(s.findings, s.jobs)} in {s.files} file(s) "
                       f"(est. {effort_str(s.minutes)}), by rule:")
        if s.applicability != "unsafe" or s.rules:
            for r in s.rules:
                hand = s.applicability in ("manual", "display-only")
                out.append(f"   - {r.rule_id} {r.name}: {r.findings}{_as_jobs(r.findings, r.jobs) if hand else ''} "
                           f"in {r.files} file(s)"
                           + (f", est. {effort_str(r.minutes)}" if hand else "")
                           + f" (`{r.explain}`)")
    if plan.optional:
        nopt = sum(s.findings for s in plan.optional)
        out += ["", f"Optional: {nopt} finding(s), est. {effort_str(plan.optional_minutes)} (not needed to build "
                    f"with CUDA {plan.target})"]
        for s in plan.optional:
            jobs_note = _as_jobs(s.findings, s.jobs) if s.applicability in ("manual", "display-only") else ""
            head = f"- {s.title}: {s.findings}{jobs_note} in {s.files} file(s), est. {effort_str(s.minutes)}"
            out.append(head + (f": `{s.command}`" if s.command else ""))
            top = ", ".join(f"{r.rule_id} x{r.findings}" for r in s.rules[:6])
            more = f", {len(s.rules) - 6} more rule(s)" if len(s.rules) > 6 else ""
            out.append(f"    rules: {top}{more}")
    if plan.errors:
        out += ["", f"Not scanned ({len(plan.errors)} file(s) unreadable):"]
        out += [f"- {e}" for e in plan.errors[:MAX_LISTED]]
        if len(plan.errors) > MAX_LISTED:
            out.append(f"- and {len(plan.errors) - MAX_LISTED} more")
    out += ["", "Order within a group follows ROI. " + ROI_WORDS + " " + JOB_WORDS]
    return "\n".join(out) + "\n"


def _as_jobs(findings: int, njobs: int) -> str:
    """` as 3 job(s)` when grouping by construct made fewer jobs than findings (cudamigrate/findings/jobs.py)."""
    return f" as {njobs} job(s)" if 0 < njobs < findings else ""


def counts_by_impact(findings: Iterable[Finding]) -> dict[str, int]:
    c = Counter(impact_of(f) for f in findings)
    return {k: c.get(k, 0) for k in IMPACT_ORDER}
