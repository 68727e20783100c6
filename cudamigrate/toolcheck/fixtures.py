"""Fixture cases: the executable specification of every rule.

A case is a directory under `fixtures/` holding
  before.<ext>   code the rules must flag; each expected finding is annotated
                 `// expect: CM101` on its line, or on a comment-only line just above it
  after.<ext>    the exact text `cudamigrate fix` must produce from before.<ext>
  ok.<ext>       lookalikes that must produce no finding
  fixture.yaml   optional settings (see `Case`)
  findings.txt   the findings of before.*, one `line:col ID message` per line (then its related locations,
                 `  note line:col message`): the messages are pinned
                 (rewritten by `cudamigrate test ID --update`; review the diff)

A hand-written rule's cases are named after its file: `rules/removals/CM501-cudathread-to-cudadevice.yaml`
-> `fixtures/removals/CM501-cudathread-to-cudadevice/`, variants `CM501-cudathread-to-cudadevice--latin1/`.

`check_case` is the one place the static checks live: `cudamigrate selftest`, `cudamigrate test`,
tests/test_fixtures.py and scripts/regen_fixture.py all call it, so they cannot drift apart.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import yaml

if TYPE_CHECKING:
    from ..scan.engine import Engine
    from ..findings.model import Finding
    from ..rules.schema import Rule

EXPECT = re.compile(r"(?://|/\*)\s*expect:\s*([A-Z0-9, ]+)")
SOURCE_EXTS = (".cu", ".cuh", ".cpp", ".cc", ".c", ".h", ".hpp")  # .c: compiled as C by nvcc
SNAPSHOT = "findings.txt"
VARIANT_SEP = "--"
# Fixture directories whose cases are scenarios across rules rather than one rule's cases: the generated catalog
# rules, semantic-mode precision cases (tests/test_semantic.py) and whole projects.
CROSS_RULE_DIRS = ("catalog", "semantic", "projects")


@dataclass
class Case:
    dir: Path
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.dir.relative_to(self.dir.parents[1])) if len(self.dir.parents) > 1 else self.dir.name

    def file(self, stem: str) -> Path | None:
        for ext in SOURCE_EXTS:
            p = self.dir / f"{stem}{ext}"
            if p.is_file():
                return p
        return None

    @property
    def before(self) -> Path | None:
        return self.file("before")

    @property
    def after(self) -> Path | None:
        return self.file("after")

    @property
    def ok(self) -> Path | None:
        return self.file("ok")

    @property
    def rules(self) -> list[str] | None:
        return self.settings.get("rules")

    @property
    def unsafe(self) -> bool:
        return bool(self.settings.get("unsafe", True))

    @property
    def display_only(self) -> frozenset[str]:
        """Rule ids whose display-only suggestions the golden `after` applies (`fix --apply-display-only`)."""
        return frozenset(self.settings.get("apply_display_only", []) or [])

    @property
    def target(self) -> str:
        return str(self.settings.get("target", "13.0"))

    @property
    def keep_compat(self) -> str | None:
        """The oldest toolkit the case's project declares it builds with (`keep-compat`); CM410 fixes only then."""
        v = self.settings.get("keep_compat")
        return None if v is None else str(v)

    @property
    def options(self) -> dict[str, Any]:
        return self.settings.get("options", {}) or {}

    @property
    def compile(self) -> dict[str, Any]:
        return self.settings.get("compile", {}) or {}

    @property
    def gpu(self) -> dict[str, Any]:
        return self.settings.get("gpu", {}) or {}

    @property
    def semantic(self) -> bool:
        """Semantic-mode cases need libclang and are checked by tests/test_semantic.py, not by `check_case`."""
        return bool(self.settings.get("semantic"))

    @property
    def snapshot(self) -> Path:
        return self.dir / SNAPSHOT

    @property
    def rule_stem(self) -> str:
        """`CM501-cudathread-to-cudadevice` for `.../CM501-cudathread-to-cudadevice--latin1`."""
        return self.dir.name.split(VARIANT_SEP, 1)[0]

    @property
    def rule_id(self) -> str | None:
        """The rule the case is named after (`CM501`), or None for a cross-rule case."""
        m = re.match(r"(CM\d+)-", self.dir.name)
        return m.group(1) if m else None

    def exercises(self, rule_id: str) -> bool:
        """Named after the rule, or selecting it in fixture.yaml (`rules: [...]`)."""
        return self.rule_id == rule_id or rule_id in (self.rules or [])


def load_cases(root: Path) -> list[Case]:
    cases = []
    for d in sorted(p for p in root.rglob("*") if p.is_dir()):
        has = any((d / f"{stem}{ext}").is_file() for stem in ("before", "ok") for ext in SOURCE_EXTS)
        if not has:
            continue
        settings: dict[str, Any] = {}
        y = d / "fixture.yaml"
        if y.is_file():
            settings = yaml.safe_load(y.read_text(encoding="utf-8")) or {}
        cases.append(Case(d, settings))
    return cases


def expected_findings(text: str) -> Counter:
    """Multiset of (line, rule id) declared by `expect:` annotations."""
    out: Counter = Counter()
    lines = text.splitlines()
    pending: list[str] = []
    for i, line in enumerate(lines, start=1):
        m = EXPECT.search(line)
        stripped = line.strip()
        comment_only = stripped.startswith("//") or stripped.startswith("/*")
        if m:
            ids = [x.strip() for x in m.group(1).split(",") if x.strip()]
            if comment_only:
                pending += ids
                continue
            for rid in ids:
                out[(i, rid)] += 1
        if pending and stripped and not comment_only:
            for rid in pending:
                out[(i, rid)] += 1
            pending = []
    return out


# --------------------------------------------------------------------------- the checks
def engine_for(case: Case, rules: list[Rule]) -> Engine:
    """The engine a case is checked with: its target, its `rules:` selection and template options."""
    from ..scan.engine import Engine, Options
    from ..rules.schema import parse_version

    target = parse_version(case.target)
    assert target is not None  # Case.target defaults to "13.0"
    keep = parse_version(case.keep_compat) if case.keep_compat else None
    return Engine(rules, Options(target=target, select=case.rules, extend_select=case.rules or [],
                                 options=case.options, keep_compat=keep))


def fix_case_file(engine: Engine, case: Case, path: Path) -> bytes:
    """`cudamigrate fix` of one of the case's files, with the case's unsafe/display-only settings."""
    from ..fix.apply import fix_bytes

    return fix_bytes(engine, path, path.read_bytes(), str(path), unsafe=case.unsafe,
                     display_only=case.display_only).fixed


def snapshot_text(findings: list[Finding]) -> str:
    """One `line:col ID message` line per finding, in report order (a newline in a message is written `\\n`),
    each followed by its related locations, `  note line:col message` (`  note path:line:col message` in another
    file)."""
    out = []
    for f in findings:
        out.append(f"{f.line}:{f.column} {f.rule_id} {f.message.replace(chr(10), chr(92) + 'n')}\n")
        for r in f.related:
            where = f"{r.line}:{r.column}" if r.path == f.path else f"{r.path}:{r.line}:{r.column}"
            out.append(f"  note {where} {r.message.replace(chr(10), chr(92) + 'n')}\n")
    return "".join(out)


def _check_findings(case: Case, eng: Engine) -> list[str]:
    if case.before is None:
        return []
    data = case.before.read_bytes()
    res = eng.scan_bytes(case.before, data)
    if res.errors:
        return [f"{case.name}: errors scanning {case.before.name}: {res.errors}"]
    got = Counter((f.line, f.rule_id) for f in res.findings)
    want = expected_findings(data.decode("utf-8", "replace"))  # a Latin-1 fixture too
    if not want:
        return [f"{case.name}: {case.before.name} has no `// expect:` annotations"]
    if got != want:
        hint = shadow_hint(case.before.name, data, eng.rules, {rid for _, rid in want - got})
        return [f"{case.name}: findings: unexpected {dict(got - want)}, missing {dict(want - got)}{hint}"]
    return []


def shadow_hint(name: str, data: bytes, rules: list[Rule], missing: set[str]) -> str:
    """Why expected findings may be missing when the case's own file declares the API's name (a stand-in
    prototype written instead of the header): its uses are then the file's own, never the CUDA API's
    (match/shadows.py), and the finding is dropped without a word. "" when the file declares none."""
    if not missing:
        return ""
    from ..match.kinds import keywords
    from ..match.shadows import declarations
    from ..parse.treesitter import parse

    names = {k for r in rules if r.id in missing for k in keywords(r) if "*" not in k}
    found = {n: [d for d in ds if d.function is None and d.klass is None]
             for n, ds in declarations(parse(data).root_node, names, local=True).items()}
    parts = [f"`{n}` (a {ds[0].kind}, line {ds[0].line})" for n, ds in sorted(found.items()) if ds]
    if not parts:
        return ""
    return (f"; {name} declares {', '.join(parts)} itself, so its uses are the file's own, not the CUDA API "
            "(match/shadows.py): include the header that declares it instead")


def _check_messages(case: Case, eng: Engine) -> list[str]:
    if case.before is None:
        return []
    res = eng.scan_bytes(case.before, case.before.read_bytes())
    text = snapshot_text(res.findings)
    if not case.snapshot.is_file():
        return [f"{case.name}: no {SNAPSHOT} (write it with `cudamigrate test {case.rule_id or 'ID'} --update`)"]
    pinned = case.snapshot.read_text(encoding="utf-8")
    if pinned != text:
        old, new = set(pinned.splitlines()), set(text.splitlines())
        diff = [f"-{x}" for x in pinned.splitlines() if x not in new] + [f"+{x}" for x in text.splitlines() if x not in old]
        return [f"{case.name}: messages differ from {SNAPSHOT} (`cudamigrate test --update` after review): "
                + (" | ".join(diff) or "order changed")]
    return []


def _check_fix(case: Case, eng: Engine) -> list[str]:
    if case.before is None or case.after is None:
        return []
    # bytes, not text: a fixture with Latin-1 bytes must come back with exactly those bytes
    if fix_case_file(eng, case, case.before) != case.after.read_bytes():
        return [f"{case.name}: fix({case.before.name}) differs from {case.after.name}"]
    return []


def _check_idempotent(case: Case, eng: Engine) -> list[str]:
    if case.after is None:
        return []
    if fix_case_file(eng, case, case.after) != case.after.read_bytes():
        return [f"{case.name}: fixing {case.after.name} again changes it"]
    return []


def _check_lookalikes(case: Case, eng: Engine) -> list[str]:
    if case.ok is None:
        return []
    res = eng.scan_bytes(case.ok, case.ok.read_bytes())
    if res.errors:
        return [f"{case.name}: errors scanning {case.ok.name}: {res.errors}"]
    if res.findings:
        return [f"{case.name}: {case.ok.name} is flagged: "
                + ", ".join(f"{f.rule_id}@{f.line}" for f in res.findings)]
    return []


CHECKS: dict[str, Callable[[Case, Engine], list[str]]] = {
    "findings": _check_findings,      # every `// expect:` found, nothing else
    "messages": _check_messages,      # the messages equal findings.txt
    "fix": _check_fix,                # fix(before) == after, byte for byte
    "idempotent": _check_idempotent,  # fix(after) == after
    "lookalikes": _check_lookalikes,  # ok.* produces nothing
}


def check_case(case: Case, rules: list[Rule], checks: tuple[str, ...] = tuple(CHECKS)) -> list[str]:
    """Failures (one line each) of the static checks of one case; [] when it passes."""
    eng = engine_for(case, rules)
    return [msg for name in checks for msg in CHECKS[name](case, eng)]


def scaffold_todos(rule_id: str, rules: list[Rule], cases: list[Case]) -> list[str]:
    """`file:line` of every `TODO` that scripts/new_rule.py's scaffold left in the rule file or its fixture
    cases (no hand-written rule or case holds one: tests/test_rule_loading.py checks)."""
    rule = next((r for r in rules if r.id == rule_id.upper()), None)
    files = ([rule.path] if rule is not None else []) + sorted(p for c in cases for p in c.dir.iterdir() if p.is_file())
    out = []
    for path in files:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        out += [f"{path}:{i}" for i, line in enumerate(lines, 1) if "TODO" in line]
    return out


class ScaffoldTodo(ValueError):
    """A rule or case still holding scripts/new_rule.py's TODO: nothing is recorded from it."""


def refuse_scaffold(rule_id: str | None, rules: list[Rule], cases: list[Case]) -> None:
    """The one guard of every writer of a case's expected output (`cudamigrate test --update`,
    scripts/regen_fixture.py): ScaffoldTodo while a TODO remains, so that the findings and the fix recorded are
    the rule's, not the placeholder's, and a half-filled scaffold keeps failing its own test."""
    todo = scaffold_todos(rule_id, rules, cases) if rule_id else []
    if todo:
        raise ScaffoldTodo(f"--update refused: the scaffold's TODO is still in {', '.join(todo)}; write the rule and "
                           "its cases first, so that the findings recorded are the rule's, not a placeholder's")


def update_snapshot(case: Case, rules: list[Rule]) -> bool:
    """Rewrite the case's findings.txt from the current engine (the one writer of it; refused while the
    scaffold's TODO remains); True when it changed."""
    if case.before is None:
        return False
    refuse_scaffold(case.rule_id, rules, [case])
    text = snapshot_text(engine_for(case, rules).scan_bytes(case.before, case.before.read_bytes()).findings)
    if case.snapshot.is_file() and case.snapshot.read_text(encoding="utf-8") == text:
        return False
    case.snapshot.write_text(text, encoding="utf-8")
    return True


def cases_for(cases: list[Case], rule_ids: list[str]) -> list[Case]:
    """The cases of the given rules (named after one, or selecting one); all cases when no id is given."""
    if not rule_ids:
        return list(cases)
    wanted = [r.upper() for r in rule_ids]
    return [c for c in cases if any(c.exercises(r) for r in wanted)]


def hand_written_stems(rules: list[Rule]) -> dict[str, str]:
    """Rule id -> rule file stem of the hand-written rules (not the generated `rules/catalog/` ones)."""
    return {r.id: r.path.stem for r in rules if "catalog" not in r.path.parts}


def naming_problems(cases: list[Case], fixtures: Path, rule_stems: dict[str, str]) -> list[str]:
    """A hand-written rule (`rule_stems`: id -> file stem) without a case named after it, and cases outside
    the cross-rule directories whose name is not `<stem>` or `<stem>--variant` of a known rule."""
    problems = []
    named: set[str] = set()
    for c in cases:
        rel = c.dir.relative_to(fixtures)
        if rel.parts[0] in CROSS_RULE_DIRS:
            if c.rule_id and c.rule_id not in rule_stems:
                problems.append(f"{rel}: names unknown rule {c.rule_id}")
            continue
        rid = c.rule_id
        if rid is None or rule_stems.get(rid) != c.rule_stem:
            problems.append(f"{rel}: not named after a rule file (`<rule stem>` or `<rule stem>--variant`)")
            continue
        if c.rules is not None and rid not in c.rules:
            problems.append(f"{rel}: fixture.yaml `rules:` does not select {rid}, the rule it is named after")
        named.add(rid)
    problems += [f"{stem}: no case named after it (fixtures/<family>/{stem}/)"
                 for rid, stem in sorted(rule_stems.items()) if rid not in named]
    return problems
