"""`cudamigrate selftest`: the fixture cases checked end to end.

Without `--gpu` (static): every case's `// expect:` annotations are found, `fix(before) == after`, the fix is
idempotent, and `ok.*` produces nothing.

With `--gpu` (the GPU stage): for every case whose fixture.yaml says `gpu: {run: true}`,
  1. `fix(before)` is computed with the engine and checked against `after.*`;
  2. the original `before.*` (unless it no longer builds: `compile.before: fail|none`, or
     `gpu.compare: expected`) and the fixed program are built with nvcc for the GPU's architecture, in
     parallel, linking what the case needs (`compile.libs`, plus libraries implied by its #includes);
  3. both run on the GPU (one at a time unless `--run-jobs`), each with a timeout;
  4. their standard outputs are compared: line by line exactly, or, when the case sets `gpu.tolerance`,
     numbers within that relative tolerance (absolute below 1). A case whose original no longer builds is
     compared against `expected.txt` beside it. Lines matching a `gpu.ignore` regex are dropped first.

Comparison modes (`gpu.compare`, or implied):
  before    (default) the fixed program's output must match the original's
  expected  the fixed program's output must match expected.txt (implied by compile.before: fail|none)
  none      both run, only the fixed program must succeed (the original may fail at run time by design)
  run       (implied when there is no after.*, e.g. manual-only rules) the original must run and exit 0
Every program's full standard output is saved under OUT/outputs/<case>/ (to review, or to create expected.txt).

Why one module of ~600 lines: the static and GPU stages run the same cases through one build/run/compare
pipeline whose steps (fix, build both programs, run them, compare outputs, save them) are used only here.

fixture.yaml keys used here:
  compile: {before: compile|fail|none, flags: [...], libs: [cublas, nvrtc, cufft, cusparse, curand, cuda]}
  gpu: {run: true, compare: before|expected|none, libs: [...], tolerance: 1e-5, timeout: 60,
        ignore: [regex, ...], args: [...]}
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import build
from .fixtures import Case, check_case, engine_for, load_cases
# re-exported: callers of the GPU stage (cli/selftest.py, cli/calibrate.py, the tests) reach these through selftest
from .gpu import GpuInfo, RunOutput, detect_gpu, nvcc_version, resolve_arch, run_program  # noqa: F401

NO_GPU_LINE = "no GPU found: GPU stage skipped"
LIB_NAMES = {"cublas": "cuBLAS", "nvrtc": "NVRTC", "cufft": "cuFFT", "cusparse": "cuSPARSE", "curand": "cuRAND",
             "cuda": "the driver library (libcuda.so)"}


# --------------------------------------------------------------------------- comparing outputs
NUMBER = re.compile(r"([-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf(?:inity)?)(?![A-Za-z_]))", re.I)


def _close(a: str, b: str, tol: float) -> bool:
    try:
        x, y = float(a), float(b)
    except ValueError:
        return a == b
    if x != x or y != y:  # NaN
        return x != x and y != y
    if x == y:
        return True
    return abs(x - y) <= tol * max(1.0, abs(x), abs(y))


def lines_match(a: str, b: str, tolerance: float | None) -> bool:
    a, b = a.rstrip(), b.rstrip()
    if tolerance is None:
        return a == b
    pa, pb = NUMBER.split(a), NUMBER.split(b)
    if len(pa) != len(pb):
        return False
    for i, (x, y) in enumerate(zip(pa, pb, strict=True)):
        if i % 2 == 0:
            if x != y:
                return False
        elif not _close(x, y, tolerance):
            return False
    return True


@dataclass
class Comparison:
    identical: bool
    detail: str = ""


def compare_outputs(got: str, want: str, tolerance: float | None = None, ignore: list[str] | None = None) -> Comparison:
    """Compare program outputs line by line (numbers within `tolerance` when given)."""
    rx = [re.compile(p) for p in ignore or []]

    def keep(text: str) -> list[str]:
        return [ln for ln in text.splitlines() if not any(r.search(ln) for r in rx)]

    g, w = keep(got), keep(want)
    for i, (x, y) in enumerate(zip(g, w, strict=False), start=1):  # lengths are compared below
        if not lines_match(x, y, tolerance):
            tol = f" (tolerance {tolerance:g})" if tolerance is not None else ""
            return Comparison(False, f"line {i} differs{tol}: expected {y!r}, got {x!r}")
    if len(g) != len(w):
        return Comparison(False, f"{len(w)} line(s) expected, got {len(g)}" +
                          (f"; first extra: {(g if len(g) > len(w) else w)[min(len(g), len(w))]!r}"))
    return Comparison(True)


# --------------------------------------------------------------------------- one case
@dataclass
class CaseResult:
    name: str
    compare: str = "before"  # before | expected | none | run
    libs: list[str] = field(default_factory=list)
    fix_matches_after: bool | None = None
    built: dict[str, bool] = field(default_factory=dict)  # before/after -> ok
    ran: dict[str, bool] = field(default_factory=dict)
    identical: bool | None = None
    seconds: dict[str, float] = field(default_factory=dict)  # run wall time
    status: str = "pending"  # pass | fail | skip | built
    reasons: list[str] = field(default_factory=list)
    logs: dict[str, str] = field(default_factory=dict)
    record: bool = False  # no expected.txt yet: record the fixed program's output

    def fail(self, why: str) -> None:
        self.status = "fail"
        self.reasons.append(why)


def gpu_cases(cases: list[Case]) -> list[Case]:
    return [c for c in cases if c.gpu.get("run") and c.before is not None]


def case_libs(case: Case) -> list[str]:
    libs = [str(x) for x in list(case.compile.get("libs", []) or []) + list(case.gpu.get("libs", []) or [])]
    libs = list(dict.fromkeys(libs))
    for p in (case.before, case.after):
        if p is not None:
            for lib in build.libs_from_includes(p.read_text(encoding="utf-8", errors="replace")):
                if lib not in libs:
                    libs.append(lib)
    return libs


def compare_mode(case: Case) -> str:
    mode = str(case.gpu.get("compare", "") or "")
    if case.after is None:
        return "run"
    if case.compile.get("before", "compile") in ("fail", "none"):
        return "expected"
    return mode if mode in ("before", "expected", "none") else "before"


def programs(mode: str) -> list[str]:
    """Which programs a comparison mode builds and runs."""
    return {"before": ["before", "after"], "none": ["before", "after"], "expected": ["after"], "run": ["before"]}[mode]


def fixed_source(case: Case) -> tuple[bytes, bool | None, list[str]]:
    """fix(before) computed by the engine, whether it equals after.*, and engine errors."""
    from ..fix.apply import fix_bytes
    from ..knowledge.load import builtin_rules_dir, load_rules

    eng = engine_for(case, _rules(builtin_rules_dir, load_rules))
    assert case.before is not None
    res = fix_bytes(eng, case.before, case.before.read_bytes(), str(case.before), unsafe=case.unsafe,
                    display_only=case.display_only)
    matches = None if case.after is None else (res.fixed == case.after.read_bytes())
    return res.fixed, matches, list(res.errors)


_RULES_CACHE: dict[str, Any] = {}


def _rules(builtin_rules_dir: Callable, load_rules: Callable) -> list:
    if "rules" not in _RULES_CACHE:
        _RULES_CACHE["rules"] = load_rules([builtin_rules_dir()]).rules
    return _RULES_CACHE["rules"]


@dataclass
class Job:
    case: Case
    which: str  # before | after
    src: Path
    exe: Path
    libs: list[str]
    flags: list[str]
    arch: str
    result: build.BuildResult | None = None

    def command(self) -> list[str]:
        return build.nvcc_command(self.src, self.exe, link=True, libs=self.libs, flags=self.flags, arch=self.arch,
                                  include_dirs=[self.case.dir])


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def plan(cases: list[Case], work: Path, arch: str, record_expected: bool = False) -> tuple[list[CaseResult], list[Job]]:
    """Results (with fix checks done) and the nvcc jobs for every GPU case.

    `record_expected`: a case that should compare with a missing expected.txt records the fixed program's
    output instead of failing (status "recorded"; `write_outputs` puts it under expected/<case>/)."""
    results, jobs = [], []
    for case in gpu_cases(cases):
        r = CaseResult(case.name, compare=compare_mode(case), libs=case_libs(case))
        results.append(r)
        if case.before is not None and case.before.suffix in (".cuh", ".h", ".hpp"):
            r.status = "skip"
            r.reasons.append(f"{case.before.name} is a header: nothing to run")
            continue
        missing = [lib for lib in r.libs if not build.lib_available(lib)]
        d = work / _slug(case.name)
        d.mkdir(parents=True, exist_ok=True)
        fixed = b""
        if case.after is not None:
            try:
                fixed, same, errors = fixed_source(case)
            except Exception as exc:  # an engine failure is a failed case, not a crashed stage
                r.fail(f"fix failed: {exc!r}")
                continue
            r.fix_matches_after = same
            if errors:
                r.fail("fix reported errors: " + "; ".join(errors))
            if same is False:
                r.fail("fix(before) differs from after" + case.after.suffix)
        if missing:
            r.status = "skip" if r.status != "fail" else r.status
            r.reasons.append("needs " + ", ".join(LIB_NAMES.get(x, x) for x in missing) + ", not found")
            continue
        assert case.before is not None
        flags = [str(x) for x in case.compile.get("flags", []) or []]
        if "before" in programs(r.compare):
            jobs.append(Job(case, "before", case.before, d / "before", r.libs, flags, arch))
        if r.compare == "expected" and not (case.dir / "expected.txt").is_file():
            if record_expected:
                r.record = True
                r.reasons.append("no expected.txt: the fixed program's output is recorded in expected/ to review "
                                 "and commit")
            else:
                r.fail("compare: expected, but expected.txt is missing (the fixed program's output is saved in "
                       "outputs/; --record-expected writes it as expected/<case>/expected.txt)")
        if "after" in programs(r.compare):
            fixed_src = d / f"fixed{case.before.suffix}"
            fixed_src.write_bytes(fixed)
            jobs.append(Job(case, "after", fixed_src, d / "after", r.libs, flags, arch))
    return results, jobs


def build_all(jobs: list[Job], workers: int, timeout: float = 600, deadline: float | None = None) -> None:
    """Build all jobs in a thread pool; jobs not started by `deadline` (time.monotonic()) fail unbuilt."""
    def one(job: Job) -> None:
        t0 = time.monotonic()
        cmd = job.command()
        if deadline is not None and t0 > deadline:
            job.result = build.BuildResult(False, cmd, "not built: time budget exhausted", 0.0)
            return
        limit = timeout if deadline is None else max(10.0, min(timeout, deadline - t0 + 60))
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=limit)  # nvcc echoes Latin-1 source lines
            job.result = build.BuildResult(p.returncode == 0, cmd, p.stdout + p.stderr, time.monotonic() - t0)
        except subprocess.TimeoutExpired:
            job.result = build.BuildResult(False, cmd, f"nvcc timed out after {limit:.0f}s", time.monotonic() - t0)
        except OSError as exc:
            job.result = build.BuildResult(False, cmd, f"cannot run nvcc: {exc}", time.monotonic() - t0)

    with ThreadPoolExecutor(max(1, workers)) as pool:
        list(pool.map(one, jobs))


def judge(r: CaseResult, case: Case, outputs: dict[str, RunOutput]) -> None:
    """Fill in ran/identical/status from the program outputs."""
    for which, o in outputs.items():
        r.seconds[which] = round(o.seconds, 4)
        r.ran[which] = o.rc == 0
        r.logs[f"{which}.stdout"] = o.stdout[:65536]
        if o.stderr:
            r.logs[f"{which}.stderr"] = o.stderr[-4000:]
        if which == "before" and r.compare == "none":
            continue  # the original may fail by design
        if o.timed_out:
            r.fail(f"{which}: {o.stderr}")
        elif o.rc != 0:
            hint = ""
            if "driver version is insufficient" in o.stderr or "cudaErrorInsufficientDriver" in o.stderr:
                hint = " (the NVIDIA driver is older than the CUDA runtime the program was built with)"
            elif o.stderr.strip() or o.stdout.strip():
                hint = ": " + (o.stderr.strip() or o.stdout.strip()).splitlines()[-1][:200]
            r.fail(f"{which}: exit status {o.rc}{hint}")
    if r.compare in ("run", "none"):
        return  # nothing to compare: running (and exiting 0) is the check
    if "after" not in outputs or not r.ran.get("after"):
        r.identical = False if "after" in outputs else None
        return
    if r.compare == "expected":
        exp = case.dir / "expected.txt"
        if not exp.is_file():
            if r.record and r.status != "fail":
                r.status = "recorded"
            else:
                r.identical = False
            return
        want = exp.read_text(encoding="utf-8")
    else:
        if not r.ran.get("before"):
            r.identical = False
            return
        want = outputs["before"].stdout
    tol = case.gpu.get("tolerance")
    cmp = compare_outputs(outputs["after"].stdout, want, None if tol is None else float(tol),
                          [str(x) for x in case.gpu.get("ignore", []) or []])
    r.identical = cmp.identical
    if not cmp.identical:
        r.fail(f"output differs from {'expected.txt' if r.compare == 'expected' else 'the original'}: {cmp.detail}")


@dataclass
class Report:
    gpu: dict[str, Any] | None
    arch: str
    nvcc: str | None
    date: str
    results: list[CaseResult]
    build_only: bool = False

    @property
    def counts(self) -> Counter:
        return Counter(r.status for r in self.results)

    @property
    def ok(self) -> bool:
        return not any(r.status == "fail" for r in self.results)

    def to_json(self) -> dict[str, Any]:
        return {"gpu": self.gpu, "arch": self.arch, "nvcc": self.nvcc, "date": self.date, "build_only": self.build_only,
                "summary": dict(self.counts), "cases": [asdict(r) for r in self.results]}


def _yn(v: bool | None) -> str:
    return "-" if v is None else ("yes" if v else "NO")


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1000:.0f}"


def table(report: Report) -> str:
    head = ["fixture", "fix==after", "built", "ran", "identical", "before ms", "after ms", "status"]
    rows = []
    for r in report.results:
        want = programs(r.compare)
        built = "-" if not r.built else f"{sum(r.built.get(w, False) for w in want)}/{len(want)}"
        ran = "-" if not r.ran else f"{sum(r.ran.get(w, False) for w in want)}/{len(want)}"
        ident = _yn(r.identical) + (" (expected.txt)" if r.compare == "expected" and r.identical is not None else "")
        if r.compare in ("run", "none"):
            ident = f"n/a ({r.compare})"
        before_ms = _ms(r.seconds.get("before")) if "before" in want else "n/a"
        rows.append([r.name, _yn(r.fix_matches_after), built, ran, ident, before_ms, _ms(r.seconds.get("after")),
                     r.status])
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:{'<' if i == 0 else '>'}{w}}}" for i, w in enumerate(widths))
    out = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*row) for row in rows]
    for r in report.results:
        for why in r.reasons:
            out.append(f"  {r.name}: {why}")
    c = report.counts
    gpu = report.gpu["name"] if report.gpu else "no GPU (build only)"
    out.append(f"{len(report.results)} case(s) on {gpu} ({report.arch}): " +
               ", ".join(f"{c[k]} {k}" for k in ("pass", "recorded", "built", "skip", "fail") if c[k]))
    return "\n".join(out) + "\n"


def run_gpu_stage(fixtures: Path, *, work: Path, jobs: int = 0, timeout: float = 120, arch: str = "auto",
                  gpu: GpuInfo | None = None, build_only: bool = False, run_jobs: int = 1,
                  log: Callable[[str], None] | None = None, budget: float | None = None,
                  record_expected: bool = False) -> Report:
    """Plan, build, run and compare every gpu.run case. `gpu` None with build_only=False means: detect.

    `budget` (seconds): work not started in time is reported as failed ("time budget exhausted") so that
    the results are always written, even when the stage would not finish."""
    log = log or (lambda s: None)
    deadline = None if budget is None else time.monotonic() + budget
    if gpu is None and not build_only:
        gpu = detect_gpu()
    a = resolve_arch(arch, gpu)
    cases = load_cases(fixtures)
    work.mkdir(parents=True, exist_ok=True)
    results, bjobs = plan(cases, work, a, record_expected)
    by_name = {c.name: c for c in cases}
    log(f"building {len(bjobs)} program(s) for {a} ...")
    build_all(bjobs, jobs or max(2, os.cpu_count() or 2), deadline=deadline)
    res_by = {r.name: r for r in results}
    exes: dict[str, dict[str, Path]] = {}
    for j in bjobs:
        r = res_by[j.case.name]
        assert j.result is not None
        r.built[j.which] = j.result.ok
        if not j.result.ok:
            r.fail(f"{j.which} does not build:\n    " + " ".join(j.result.cmd) + "\n    " +
                   "\n    ".join(j.result.output.strip().splitlines()[-15:]))
        else:
            exes.setdefault(j.case.name, {})[j.which] = j.exe
    if not build_only:
        def run_case(name: str) -> None:
            case, r = by_name[name], res_by[name]
            want = programs(r.compare)
            if any(w not in exes.get(name, {}) for w in want):
                return
            t = float(case.gpu.get("timeout", timeout))
            if deadline is not None:
                left = deadline - time.monotonic()
                if left < 2:
                    r.fail("not run: time budget exhausted")
                    return
                t = min(t, left)
            args = [str(x) for x in case.gpu.get("args", []) or []]
            outputs = {w: run_program(exes[name][w], t, args) for w in want}
            judge(r, case, outputs)

        names = [r.name for r in results if r.status != "skip"]
        log(f"running {len(names)} case(s) ...")
        if run_jobs > 1:
            with ThreadPoolExecutor(run_jobs) as pool:
                list(pool.map(run_case, names))
        else:
            for n in names:
                run_case(n)
    for r in results:
        if r.status == "pending":
            r.status = "built" if build_only else "pass"
    return Report(gpu=asdict(gpu) if gpu else None, arch=a, nvcc=nvcc_version(),
                  date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), results=results, build_only=build_only)


def write_outputs(report: Report, out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    j = out / "selftest.json"
    t = out / "selftest.txt"
    doc = report.to_json()
    for case in doc["cases"]:  # full outputs go to files; the JSON keeps their first 4000 characters
        if case["status"] == "recorded" and "after.stdout" in case["logs"]:
            f = out / "expected" / case["name"] / "expected.txt"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(case["logs"]["after.stdout"], encoding="utf-8")
        for k, v in case["logs"].items():
            if k.endswith(".stdout"):
                f = out / "outputs" / _slug(case["name"]) / k
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text(v, encoding="utf-8")
                case["logs"][k] = v[:4000]
    j.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    t.write_text(table(report), encoding="utf-8")
    return j, t


# --------------------------------------------------------------------------- static selftest
def static_selftest(fixtures: Path) -> tuple[list[str], int]:
    """Failures (one line each) of the engine-only checks (`fixtures.check_case`), and the number of cases checked.

    Semantic-mode cases (`semantic: true`) need libclang and are checked by tests/test_semantic.py instead."""
    from ..knowledge.load import builtin_rules_dir, load_rules

    rules = _rules(builtin_rules_dir, load_rules)
    cases = [c for c in load_cases(fixtures) if not c.semantic]
    fails: list[str] = []
    for case in cases:
        fails += check_case(case, rules)
    return fails, len(cases)


def rule_tests(fixtures: Path, rule_ids: list[str], update: bool = False) -> tuple[list[str], list[str], int]:
    """`cudamigrate test [IDS] [--update]`: the static checks of the cases of the given rules (all cases without
    ids). With `update`, each case's findings.txt is rewritten first (its other checks still run).
    Returns (failures, notes, cases checked); an id without a case is a failure, an unknown id a ValueError."""
    from .fixtures import cases_for, refuse_scaffold, scaffold_todos, update_snapshot
    from ..knowledge.load import builtin_rules_dir, load_rules

    rs = load_rules([builtin_rules_dir()])
    if rs.environment is not None:
        raise ValueError(rs.environment)
    rules = rs.rules
    known = {r.id for r in rules}
    all_cases = [c for c in load_cases(fixtures) if not c.semantic]
    fails: list[str] = []
    notes: list[str] = []
    unknown = [rid for rid in rule_ids if rid.upper() not in known]
    if unknown:
        raise ValueError("; ".join(load_errors_of(rid, rs.errors) or f"no such rule: {rid}" for rid in unknown))
    for rid in rule_ids:
        if not cases_for(all_cases, [rid]):
            fails.append(f"{rid}: no fixture case exercises it (fixtures/<family>/<rule stem>/)")
    cases = cases_for(all_cases, rule_ids)
    if update:
        for rid in rule_ids:
            refuse_scaffold(rid, rules, cases_for(all_cases, [rid]))
    for case in cases:
        if update and update_snapshot(case, rules):
            notes.append(f"wrote {case.snapshot}")
        fails += check_case(case, rules)
    todo = sorted({hit for case in cases if case.rule_id for hit in scaffold_todos(case.rule_id, rules, [case])})
    fails += [f"{hit}: the scaffold's TODO is still here (scripts/new_rule.py): write the rule and its cases"
              for hit in todo]
    return fails, notes, len(cases)


def load_errors_of(rule_id: str, errors: list[str]) -> str:
    """The load errors of the rule file named after `rule_id` (`CM599-some-name.yaml`: each error line starts
    with the file's path), joined; "" when that rule has none."""
    rid = rule_id.upper()
    return "; ".join(e for e in errors if Path(e.split(":", 1)[0]).name.upper().startswith(rid + "-")
                     or Path(e.split(":", 1)[0]).name.upper() == rid + ".YAML")


def default_fixtures_dir(cwd: Path | None = None) -> Path:
    """The fixture cases: next to the package (a checkout or editable install), else in the cudamigrate
    checkout that contains the current directory (an installed tool run inside a checkout). The fixtures
    are not shipped in the wheel; when none is found the path next to the package is returned, and the
    caller says what is needed."""
    here = Path(__file__).resolve().parent.parent.parent / "fixtures"
    if here.is_dir():
        return here
    start = (cwd or Path.cwd()).resolve()
    for d in [start, *start.parents]:
        if (d / "fixtures").is_dir() and (d / "rules").is_dir() and _is_checkout(d):
            return d / "fixtures"
    return here


def _is_checkout(d: Path) -> bool:
    try:
        return 'name = "cudamigrate"' in (d / "pyproject.toml").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
