"""Scanning one file: prefilter, parse, match, build findings."""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable


from ..findings import cost as costmod
from ..match.migrations import unused_suppressions
from ..match.migrations.passes import dead_for_target
from ..findings.measured import lookup as lookup_calibration
from ..findings.model import Finding, Fix, assign_fingerprints, finding_for, sort_key
from ..core.options import Options  # re-exported: defined apart so the CLI's cached path need not import the engine
from ..match import precheck
from ..match.conditions import ConditionError, evaluate
from ..match.context import FileContext, reset_scope_cache
from ..match.edits import EditError, build_edits, keep_compat_edits, template_context
from ..match.semantic import SemanticContext
from ..match.kinds import MATCHER_KINDS, keywords as rule_keywords
from ..match.matchers import Match, identifier_hits
from ..match.ppenv import live_walk
from ..parse import walk
from ..parse.pasting import file_units, pasted_words, spelled_through
from ..parse.treesitter import ErrorSpans, Unit, parse, register_roots, reset_parent_cache, syntax_blocker
from ..read.generated import GeneratedSpans
from ..read.unit_defines import file_defines
from .grouping import consistency_group
from .regions import PREPROC_IF, disabled_ranges, in_disabled_block, paste_at, unpasted
from .prefilter import KeywordFinder, NameGate, blank, comment_spans, define_regions, glob_regex, words_of
from .selection import select_rules, selector_hits, suppression_warnings, version_phrase
from ..read.project_index import ProjectIndex
from ..rules.schema import Rule
from ..read.source import SourceError, SourceFile, check_bytes, decode_lossless, displayable
from ..findings.suppress import Suppressions
from ..rules.templates import TemplateError, render
from ..core.errors import internal_message, trace
from ..core.textsafe import one_line
from ..findings.jobs import CONSTRUCTS, mark_jobs


class FileTimeout(Exception):
    """A file's scan ran past its time budget (raised by Budget.check, turned into a FileResult error)."""


@dataclass
class Budget:
    """A deadline that long loops check every so often; `None` seconds means no limit.

    It counts this thread's CPU time (`clock`), not wall time: on a loaded machine (2 cores, load 12) a file's
    wall time stretches several times, and a wall-time budget dropped findings there that an idle machine
    kept. The scan of one file runs in one thread, so its CPU time is the work the file costs."""

    seconds: float | None
    deadline: float = 0.0
    _n: int = 0
    clock: Callable[[], float] = time.thread_time

    def __post_init__(self) -> None:
        self.deadline = self.clock() + self.seconds if self.seconds else float("inf")

    def check(self) -> None:
        self._n += 1
        if self._n & 63 == 0 and self.clock() > self.deadline:
            raise FileTimeout(f"scan stopped after the per-file time budget of {self.seconds:g} s of CPU")


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    suppressions: Suppressions | None = None
    skipped: bool = False  # prefilter found nothing to look at
    notes: list[str] = field(default_factory=list)  # one-line remarks that are not errors (non-UTF-8 bytes kept)
    internal: int = 0  # how many of `errors` are internal errors (a bug, not bad input): exit code 2
    tracebacks: list[str] = field(default_factory=list)  # their tracebacks, for --debug

    def add_internal(self, message: str, exc: BaseException) -> None:
        self.errors.append(message)
        self.internal += 1
        self.tracebacks.append(f"{message}\n{trace(exc)}")


def guarded_file(display: str, stage: str, exc: BaseException) -> FileResult:
    """The result of a file whose whole scan failed: one line naming it, nothing else lost."""
    res = FileResult(display)
    res.add_internal(internal_message(display, None, exc, f"internal error while {stage}"), exc)
    return res


MAX_INTERNAL_LINES = 20
# Passes over a file's filtered findings, once its suppressions are known to be used or not: (rule id for an
# internal error's line, pass). Each adds findings of its own rule when that rule is selected.
POST_PASSES = (("CM801", unused_suppressions.post_pass),)  # internal error lines per file; the rest are counted


# What `Engine.warm_up` scans: no #include (it reads no file), and the API uses most rule families meet.
WARM_UP_NAME = "cudamigrate-warm-up.cu"
WARM_UP_SOURCE = b"""__global__ void k(float *x) { x[0] = tex1Dfetch(t, 0); }
#define CHECK(x) x
int main() {
    cudaStream_t s; cudaStreamCreate(&s); float *d; CHECK(cudaMalloc(&d, 4));
    k<<<1, 1>>>(d); cudaMemcpy(d, d, 4, cudaMemcpyDeviceToHost); cudaThreadSynchronize();
    thrust::device_vector<int> v; thrust::reduce(v.begin(), v.end());
    cudaDeviceProp p; int c = p.clockRate; cublasHandle_t h; cublasCreate(&h);
#if CUDART_VERSION < 9000
    return 1;
#endif
    return c;
}
"""


_RUN_STATE = frozenset({"project", "semantic_provider"})


class Keep:
    """`with_run`'s default: leave that piece of run state as it is (None is a value: no semantic facts)."""


KEEP = Keep()


class Engine:
    """The compiled rule set and options, shared by every file of a run. What belongs to one run (the project
    index, semantic mode's facts) is given to the constructor or to `with_run`, which returns a copy: it is
    never set on a shared engine, so one caller's run cannot leak into another's (assigning it raises)."""

    def __init__(self, rules: list[Rule], opts: Options | None = None, project: ProjectIndex | None = None,
                 semantic_provider: Callable[[Path, bytes], Any] | None = None):
        self.opts = opts or Options()
        self.all_ids = {r.id for r in rules}  # every loaded rule, selected or not: known in suppressions
        self.rules = select_rules(rules, self.opts)
        self.by_keyword: dict[str, list[Rule]] = {}
        self.always: list[Rule] = []
        for r in self.rules:
            kws = rule_keywords(r)
            if r.kind == "launch":
                self.always.append(r)
                continue
            if not kws:
                self.always.append(r)
            for k in kws:
                self.by_keyword.setdefault(k, []).append(r)
        # keywords with `*` (from glob names such as `cub::Agent*`) match any identifier of that shape
        self.glob_keywords = [(re.compile(glob_regex(k) + r"\Z"), k) for k in sorted(k for k in self.by_keyword if "*" in k)]
        self._rules_cache: dict[str, list[Rule]] = {}
        self.name_gate = NameGate.build(self.rules)
        self.prefilter = KeywordFinder.build([k for k in self.by_keyword if "*" not in k],
                                             [glob_regex(k) for _, k in self.glob_keywords])
        # semantic mode: (path, bytes) -> FileFacts | None (parse/clang_facts.py), given by the runner
        self.semantic_provider: Callable[[Path, bytes], Any] | None = semantic_provider
        # the run's project files (the workspace passes the discovered files): headers, members, includers
        self.project = project if project is not None else ProjectIndex()
        # rules that may be found impossible for a file before it is parsed (match/precheck.py): by their `where:`
        # (not builtins, which may record project-wide facts while they run), or by a test of their builtin
        self.prechecked = frozenset(r.id for r in self.rules if r.where is not None and r.kind != "builtin")
        self.prechecked_builtins = {r.id: r.spec.get("name") for r in self.rules
                                    if r.kind == "builtin" and r.spec.get("name") in precheck.BUILTIN_PRECHECKS}
        self._built = True

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _RUN_STATE and getattr(self, "_built", False):
            raise AttributeError(f"Engine.{name} is one run's state: pass it to Engine(...) or engine.with_run(...)")
        object.__setattr__(self, name, value)

    def with_run(self, *, project: ProjectIndex | None = None,
                 semantic_provider: Callable[[Path, bytes], Any] | None | Keep = KEEP) -> Engine:
        """This engine for one run: the same compiled rules (shared, not rebuilt), with this project index
        and semantic provider (each kept as it is when not given; `semantic_provider=None`: tree-sitter only)."""
        import copy

        out = copy.copy(self)
        if project is not None:
            object.__setattr__(out, "project", project)
        if not isinstance(semantic_provider, Keep):
            object.__setattr__(out, "semantic_provider", semantic_provider)
        return out

    def _narrow(self, candidates: dict[str, Rule], found: set[str], in_code: set[str], words: set[bytes]) -> dict[str, Rule]:
        """The candidates that can match (see prefilter.py): a call, identifier or member rule needs one of its
        keywords outside comments, and a name rule every word of one of its names somewhere in the file.
        The order of the others is kept (rules run, and matches arrive, in candidate order)."""
        code_rules = {r.id for k in in_code for r in self.rules_for(k)}
        present: set[str] | None = None
        out: dict[str, Rule] = {}
        for rid, r in candidates.items():
            if MATCHER_KINDS.get(r.kind).impl.hit is not None:
                if rid not in code_rules:
                    continue
                if self.name_gate.gated(rid):
                    if present is None:
                        present = self.name_gate.present(words) | found
                    if not self.name_gate.admits(rid, present):
                        continue
            out[rid] = r
        return out

    def rules_for(self, word: str) -> list[Rule]:
        """Rules that an identifier found by the prefilter may concern."""
        got = self._rules_cache.get(word)
        if got is None:
            got = list(self.by_keyword.get(word, []))
            for rx, k in self.glob_keywords:
                if rx.match(word):
                    got += [r for r in self.by_keyword[k] if r not in got]
            self._rules_cache[word] = got
        return got

    def rule_options(self, rule: Rule) -> dict[str, Any]:
        o = dict(rule.options)
        for k in o:
            if k in self.opts.options:
                o[k] = self.opts.options[k]
        o.update(self.opts.rule_options.get(rule.id, {}))
        return o

    # ---------------------------------------------------------------- scanning
    def scan_path(self, path: Path, display: str | None = None, max_bytes: int | None = None) -> FileResult:
        from ..read.source import DEFAULT_MAX_BYTES, load_source

        disp = display or str(path)
        try:
            src = load_source(path, max_bytes or DEFAULT_MAX_BYTES)
        except SourceError as exc:
            return FileResult(disp, errors=[f"{disp}: {exc}"])
        except Exception as exc:  # an unexpected failure reading one file must not stop the run
            return guarded_file(disp, "reading", exc)
        return self.scan_guarded(src, disp)

    def scan_guarded(self, src: SourceFile, display: str) -> FileResult:
        """scan_source, with anything that escapes it turned into this file's one-line internal error."""
        try:
            return self.scan_source(src, display)
        except RecursionError as exc:
            return guarded_file(display, "scanning (nesting too deep)", exc)
        except Exception as exc:
            return guarded_file(display, "scanning", exc)

    def scan_bytes(self, path: Path, data: bytes, display: str | None = None) -> FileResult:
        disp = display or str(path)
        try:
            src = check_bytes(path, data)
        except SourceError as exc:
            return FileResult(disp, errors=[f"{disp}: {exc}"])
        return self.scan_guarded(src, disp)

    def warm_up(self, files: list[Path] | None = None) -> None:
        """Scan a small in-memory file once: what every scan loads on first use (the parser, lazily imported
        matcher modules, the template sandbox, compiled patterns) is then loaded in this process, and worker
        processes forked from it inherit it instead of each loading it again (~0.1 s CPU per worker). With
        `files` (those the workers will scan), the run's project index also builds what the selected builtins'
        prechecks will ask of it, and the headers they share (`prepare_shared`, `prepare_shared_headers`)."""
        try:  # on a copy with an empty index: the run's index learns nothing from this file
            self.with_run(project=ProjectIndex()).scan_bytes(Path(WARM_UP_NAME), WARM_UP_SOURCE)
            if files:
                precheck.prepare_shared(self.prechecked_builtins.values(), self.project, files)
        except Exception:  # only a speed-up: a failure here is met again, and reported, by the real scans
            pass

    def scan_source(self, src: SourceFile, display: str, semantic: Any = None) -> FileResult:
        res = FileResult(display, notes=[f"{display}: {w}" for w in src.warnings])
        data = src.data
        found: set[str] = set()
        in_code: set[str] = set()  # the keywords met outside comments
        words: set[bytes] = set()

        def flags() -> tuple[tuple[str, str | None], ...]:  # the compile database's -D/-U (read/unit_defines.py)
            return file_defines(self.project, self.opts.compile_db, src.path)

        macros = self.project.paste_macros(src.path, data, live_walk(src.path, self.opts.target, flags)) if b"(" in data else {}
        pasted: set[bytes] = set()
        if self.prefilter is not None:
            words = words_of(data)
            pasted = pasted_words(data, macros) if macros else set()
            found = in_code = self.prefilter.find_words(words | pasted)
            comments = comment_spans(data) if found else []
            if comments:
                in_code = self.prefilter.find(blank(data, comments))
                if pasted:  # (a paste in a comment has no unit: `pasted_units` reads the tree)
                    in_code |= self.prefilter.find_words(pasted_words(blank(data, comments), macros))
        if semantic is None and self.semantic_provider is not None:
            semantic = self._semantic_context(src)
        if semantic is not None:  # names that reach this file through macros and headers
            found |= semantic.keywords() & set(self.by_keyword)
        keys = sorted(found)  # rules run, and matches arrive, in the same order whatever PYTHONHASHSEED is
        candidates: dict[str, Rule] = {}
        for k in keys:
            for r in self.rules_for(k):
                candidates[r.id] = r
        if candidates and semantic is None and b"cudamigrate" not in data:
            # (a file with suppression comments keeps the plain keyword test: which files are checked for
            # unused suppressions must not change)
            candidates = self._narrow(candidates, found, in_code, words)
        for r in self.always:
            if r.kind == "launch" and b"<<<" not in data and not (semantic is not None and semantic.has_launch):
                continue
            candidates[r.id] = r
        if semantic is None and b"cudamigrate" not in data and not (
                self.prechecked.isdisjoint(candidates) and self.prechecked_builtins.keys().isdisjoint(candidates)):
            # (as in `_narrow`: a file with suppression comments keeps its rules)
            text = precheck.FileText(data, src.path, self.project)
            candidates = {k: r for k, r in candidates.items()
                          if (k not in self.prechecked or precheck.possible(r.where, text))
                          and (k not in self.prechecked_builtins or precheck.builtin_possible(self.prechecked_builtins[k], text))}
        off = self.opts.per_file_ignores.selectors_for(src.path) if self.opts.per_file_ignores else ()
        if off:  # `per-file-ignores`: these rules do not run here (their findings are filtered below too)
            candidates = {k: r for k, r in candidates.items() if not any(selector_hits(r, s, self.all_ids) for s in off)}
        if not candidates:
            res.skipped = True
            return res
        if b"define" in data or b'include' in data:
            src.statement_macros = self.project.statement_macros(src.path, data)
        pbytes = src.parse_bytes
        kw_rx = None
        if b"#" in data and keys:
            pat = rb"\b(" + b"|".join(re.escape(k.encode()) for k in keys) + rb")\b"
            if any(r.kind == "string" for r in candidates.values()):
                pat += rb'|"'  # string rules look at literals in macro bodies too: `#define OPT "-arch=sm_70"`
            kw_rx = re.compile(pat)
            if not any(kw_rx.search(d) for d in define_regions(pbytes)):  # else no macro body would be parsed
                kw_rx = None
        # calls spelled through a token-pasting macro: `cuda(ThreadSynchronize())` (parse/pasting.py)
        seen, units = file_units(pbytes, parse(pbytes), macros if pasted else {}, kw_rx)
        ctx = FileContext(source=src, units=units, target=self.opts.target, options=self.opts.rule_options,
                          semantic=semantic, project=self.project, api_names=frozenset(found),
                          include_roots=self.opts.include_roots, keep_compat=self.opts.keep_compat,
                          pastes=tuple(seen.pastes), compile_db=self.opts.compile_db)
        reset_parent_cache()
        reset_scope_cache()
        register_roots([u.root for u in units])
        self._budget = Budget(self.opts.time_budget_s)
        self._partial: list[Finding] = []
        try:
            res = self._scan_units(ctx, res, candidates, keys, semantic, display)
        except FileTimeout as exc:
            res = self._timed_out(display, src.data, exc, res.notes)
        finally:
            reset_parent_cache()
            reset_scope_cache()
        if off:  # what post-passes add (CM801) for a rule off in this file
            by_id = {r.id: r for r in self.rules}
            res.findings = [f for f in res.findings if f.rule_id not in by_id
                            or not any(selector_hits(by_id[f.rule_id], s, self.all_ids) for s in off)]
        return res

    def _timed_out(self, display: str, data: bytes, exc: FileTimeout, notes: list[str]) -> FileResult:
        """A file past its budget keeps the findings already made (suppressions applied), with an error line
        saying the rest of the file was not checked: dropping them all hid build breaks already found."""
        kept = list(self._partial)
        sup = Suppressions.scan(data)
        if sup.items:
            kept = [f for f in kept if not sup.suppressed(f.rule_id, f.line, f.end_line)]
        what = (f"the {len(kept)} finding(s) made before it are reported, the rest of the file was not checked"
                if kept else "no findings reported for it")
        return FileResult(display, findings=kept, errors=[f"{display}: {exc} (pathological input?); {what}"],
                          suppressions=sup, notes=notes)

    def _scan_units(self, ctx: FileContext, res: FileResult, candidates: dict[str, Rule], keys: list[str],
                    semantic: Any, display: str) -> FileResult:
        src, data = ctx.source, ctx.source.data
        matches: list[Match] = []
        hit_rules: dict[str, list[Rule]] = {}
        for k in keys:
            rs = [r for r in self.rules_for(k) if MATCHER_KINDS.get(r.kind).impl.hit is not None and r.id in candidates]
            if rs:
                hit_rules[k] = rs
        internal: list[tuple[str, BaseException]] = []

        def where(unit: Unit | None, node: Any) -> str:
            try:
                line, col = src.position(unit.abs(node)[0])
                return f"{display}:{line}:{col}"
            except Exception:
                return display

        budget = self._budget
        for unit, node in identifier_hits(ctx, hit_rules):
            budget.check()
            text = node.text.decode("utf-8", "replace")
            # a call spelled through a token-pasting macro is in no libclang fact at this offset (its facts are the
            # macro's expansion, which `expansion_matches` leaves to this view): matched as tree-sitter matches it
            pasted = unit.paste is not None or (
                bool(ctx.pastes) and paste_at(ctx.pastes, node.start_byte + unit.base) is not None)
            for r in hit_rules.get(text, []):
                try:
                    matcher = MATCHER_KINDS.get(r.kind).impl.hit
                    assert matcher is not None  # hit_rules holds per-identifier kinds only
                    if semantic is not None and not pasted:
                        matcher = semantic.wrap(r.kind, matcher)
                    m = matcher(r, ctx, unit, node)
                except Exception as exc:  # a matcher bug must not stop the scan
                    internal.append((internal_message(where(unit, node), r.id, exc, "matcher error"), exc))
                    continue
                if m is not None:
                    matches.append(m)
        for r in candidates.values():
            scan = MATCHER_KINDS.get(r.kind).impl.scan  # per-file kinds: launch, include, string, builtin
            if scan is None:
                continue
            try:
                got = scan(r, ctx, self.rule_options(r))
                if r.kind == "launch" and semantic is not None:
                    got = semantic.refine_launches(got)
                matches += got
            except Exception as exc:
                internal.append((internal_message(display, r.id, exc, "matcher error"), exc))
        if semantic is not None:
            try:
                expanded = semantic.expansion_matches(list(candidates.values()), ctx)
                sites = list(ctx.pastes) + [u.paste for u in ctx.units if u.paste is not None]
                if sites:  # a token-pasting macro's use: its call is matched in the view already (parse/pasting.py)
                    expanded = [x for x in expanded if not any(p.site[0] <= x.report_range[0] < p.site[1] for p in sites)]
                matches += expanded
            except Exception as exc:
                internal.append((internal_message(display, None, exc, "semantic macro expansions"), exc))
        res.findings, more = self._findings(matches, ctx, display)
        internal += more
        try:  # hand work grouped by construct, for the plan's effort (cudamigrate/findings/jobs.py)
            mark_jobs(res.findings, lambda: walk.typed_nodes(ctx.main.root, frozenset(CONSTRUCTS)),
                      lambda b: src.position(b)[0], ctx.main.root)
        except Exception as exc:
            internal.append((internal_message(display, None, exc, "grouping manual findings"), exc))
        res.suppressions = Suppressions.scan(data)
        if res.suppressions.items:
            res.notes += suppression_warnings(res.suppressions, display, self.all_ids)
            res.findings = [f for f in res.findings if not res.suppressions.suppressed(f.rule_id, f.line, f.end_line)]
            for rid, post_pass in POST_PASSES:
                try:
                    post_pass(self.rules, self.opts.select, self.opts.target, src, display, res)
                except Exception as exc:
                    internal.append((internal_message(display, rid, exc), exc))
        seen: set[str] = set()
        for msg, err in internal:
            if msg not in seen:
                seen.add(msg)
                if len(seen) <= MAX_INTERNAL_LINES:
                    res.add_internal(msg, err)
        res.errors = sorted(set(res.errors))
        if len(seen) > MAX_INTERNAL_LINES:  # one bug hit at every call: a few lines tell it, not thousands
            res.errors.append(f"{display}: ... and {len(seen) - MAX_INTERNAL_LINES} more internal error(s) in this file")
            res.internal += len(seen) - MAX_INTERNAL_LINES
        return res

    def _fix(self, m: Match, ctx: FileContext, tctx: dict[str, Any], data: bytes) -> Fix | None:
        """The match's automatic fix, if its rule has one and it changes something."""
        r = m.rule
        if r.fix is not None and r.fix.get("applicability") != "manual":
            if r.fix.get("when") is None or evaluate(r.fix["when"], m, ctx):
                try:
                    edits = m.edits if m.edits is not None else build_edits(r.fix.get("edits", []), m, ctx, tctx)
                except EditError as exc:
                    paste = m.unit.paste or paste_at(ctx.pastes, m.report_range[0])
                    if paste is None:
                        raise
                    raise EditError(f"{spelled_through(paste)}; the rewrite is not one of its argument ({exc})") from exc
                edits = unpasted(edits, m.unit.paste, ctx.pastes)
                edits = [e for e in edits if decode_lossless(data[e.start : e.end]) != e.text]
                if edits and self.opts.keep_compat is not None:
                    edits = keep_compat_edits(edits, r, m, ctx, self.opts.keep_compat, tctx)
                    if not edits:  # reported as the finding's blocker (and by a withheld consistency group)
                        raise EditError(f"with --keep-compat {self.opts.keep_compat[0]}.{self.opts.keep_compat[1]} "
                                        "the rewrite cannot be wrapped in `#if` here (not a statement of its own "
                                        "lines, e.g. a struct member or parameter, or inside a macro)")
                if edits:
                    title = displayable(render(str(r.fix.get("title", r.summary)), tctx))
                    return Fix(m.fix_applicability or r.fix["applicability"], title, sorted(edits, key=lambda e: (e.start, e.end)))
        elif m.edits:
            edits = unpasted(m.edits, m.unit.paste, ctx.pastes)
            return Fix(m.fix_applicability or "unsafe", r.summary, sorted(edits, key=lambda e: (e.start, e.end)))
        return None

    def _semantic_context(self, src: SourceFile) -> Any:
        try:
            facts = self.semantic_provider(src.path, src.data) if self.semantic_provider else None
        except Exception:  # semantic mode only refines: never lose the tree-sitter scan
            return None
        if facts is None:
            return None
        return SemanticContext(facts)

    def _findings(self, matches: list[Match], ctx: FileContext, display: str
                  ) -> tuple[list[Finding], list[tuple[str, BaseException]]]:
        """Findings from matches; a match whose rule fails (template, condition, edit, or a bug) becomes
        one internal error naming the file, position and rule, and the other matches go on."""
        out: list[Finding] = []
        self._partial = out  # what a timeout keeps (`_timed_out`)
        errors: list[tuple[str, BaseException]] = []
        seen: set[tuple[str, int, int]] = set()
        data = ctx.source.data
        error_spans = ErrorSpans.of_units(ctx.units)
        disabled = disabled_ranges(ctx.units[0].tree) if PREPROC_IF.search(data) else []
        made = GeneratedSpans.of(data)  # what a fix inserted (its helper blocks) is never a finding
        budget = getattr(self, "_budget", None) or Budget(None)
        for m in matches:
            budget.check()
            r = m.rule
            try:
                start, end = m.report_range
                paste = m.unit.paste or (paste_at(ctx.pastes, start) if ctx.pastes else None)
                if paste is not None:  # the pasted prefix is not in the file: report from the argument
                    start = min(max(start, paste.arg[0]), end)
                line, col = ctx.source.position(start)
            except Exception as exc:
                errors.append((internal_message(display, r.id, exc, "rule error"), exc))
                continue
            key = (r.id, start, end)
            if key in seen:
                continue
            if disabled and in_disabled_block(disabled, start):
                continue
            if made and start in made:
                continue
            try:
                at = m.node if m.unit.paste is None else ctx.main.root.descendant_for_byte_range(*m.unit.paste.site)
                if (r.removed_in or r.deprecated_in) and at is not None and dead_for_target(at, ctx, r.breaks == "device"):
                    continue  # version-guarded code that the target toolkit never compiles
                if r.where is not None and not evaluate(r.where, m, ctx):
                    continue
                opts = self.rule_options(r)
                tctx = template_context(m, ctx, opts)
                tctx["version"] = version_phrase(r, self.opts.target)
                message = clip_message(" ".join(render(r.message, tctx).split()))
                group = consistency_group(r, tctx, ctx)
                fix = None
                blocked = None
                try:
                    fix = self._fix(m, ctx, tctx, data)
                except (TemplateError, EditError) as exc:
                    # the call does not have the shape the rewrite needs (too few arguments, ...): report the
                    # finding without a fix rather than edit at a guessed position or drop the finding
                    blocked = f"no automatic fix: {exc}"
                if fix is not None and m.vars.get("fix_blocked"):  # e.g. a project declaration shadows the API
                    blocked = m.vars["fix_blocked"]
                    message = f"{message} No automatic fix: {blocked}."
                elif fix is not None:
                    blocked = syntax_blocker(error_spans, m.abs(m.arglist) if m.arglist is not None else None, fix.edits,
                                             data, (m.ident_range or m.name_range) if r.kind == "identifier" else None)
                if not blocked and ctx.semantic is not None:
                    blocked = ctx.semantic.fix_blocker(m, fix.edits if fix else None, ctx)
                if blocked:
                    fix = None
                in_context = costmod.in_context(r.cost, functools.partial(_evaluate_at, m=m, ctx=ctx))
                impact_override, mults = in_context.impact_override, in_context.multipliers
            except (TemplateError, ConditionError, EditError) as exc:
                errors.append((f"{display}:{line}:{col}: {r.id}: {one_line(str(exc))}", exc))
                continue
            except Exception as exc:  # a broken rule (bad regex in `where`, ...) must not stop the scan
                errors.append((internal_message(f"{display}:{line}:{col}", r.id, exc, "rule error"), exc))
                continue
            seen.add(key)
            app = "manual" if fix is None else fix.applicability
            measured = None
            calib = lookup_calibration(self.opts.calibration, r)
            if calib:
                measured = calib.get("summary")
                if measured:
                    message = f"{message} ({measured})"
                factor = costmod.measured_factor(calib.get("ratio"))
                if factor is not None:
                    mults = mults + [(factor, f"measured {calib.get('ratio'):.3g}x slowdown on this GPU")]
            c = costmod.score(
                declared_impact=r.cost.get("impact"), deprecated_in=r.deprecated_in, removed_in=r.removed_in,
                target=self.opts.target, applicability=app, multipliers=mults,
                effort_minutes=r.cost.get("effort_minutes"), measured=measured, impact_override=impact_override,
            )
            context: dict[str, Any] = {"in_macro": m.unit.in_macro}
            if m.unit.macro_name:
                context["macro"] = m.unit.macro_name
            if paste is not None:
                context.update(in_macro=True, macro=paste.macro)
            if m.vars.get("macro"):
                context.update(in_macro=True, macro=m.vars["macro"], expanded_at_use=True)
            if blocked:
                context["fix_blocked"] = blocked
            f = finding_for(r, display, ctx.source, start, end, displayable(message), fix, c, context)
            f.group = group
            if m.related:
                f.related = tuple(replace(x, path=display) if not x.path else x for x in m.related)
            out.append(f)
        out.sort(key=sort_key)
        assign_fingerprints(out, data)
        return out, errors


MESSAGE_LIMIT = 1000


def _evaluate_at(cond: Any, m: Match, ctx: FileContext) -> bool:
    return evaluate(cond, m, ctx)


def clip_message(text: str) -> str:
    """A message quotes source (`{{ text }}`, arguments): keep it bounded on pathological code."""
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"
