"""Finding and loading rule files (from the repo, the installed package, or a user directory)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..core.textsafe import one_line
from ..rules import safety
from ..rules.schema import Rule, RuleError, validate
from ..rules.templates import Precompiled, precompile, preload
from .environment import missing_dependency


def builtin_rules_dir() -> Path:
    pkg = Path(__file__).resolve().parent.parent
    shipped = pkg / "rules_data"
    if shipped.is_dir():
        return shipped
    return pkg.parent / "rules"


@dataclass
class RuleSet:
    rules: list[Rule] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    environment: str | None = None  # a package rule loading needs is missing: the one error, no rule loaded
    templates: Precompiled = field(default_factory=dict)  # the rules' templates compiled (rules/templates.py)

    def by_id(self) -> dict[str, Rule]:
        return {r.id: r for r in self.rules}


def _loader():
    """libyaml's loader is ~8x faster than the pure-Python one; the generated catalog rules are large.
    Imported here, not at module level: a start-up that finds the rule cache never needs YAML."""
    import yaml

    return yaml, getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_rule_file(path: Path) -> Rule:
    from ..rules.templates import TemplateError, check_template

    yaml, loader = _loader()
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):  # a FIFO or device would block or never end
            raise RuleError(f"{path}: <file>: not a regular file")
        if st.st_size > safety.MAX_FILE_BYTES:
            raise RuleError(f"{path}: <file>: too large ({st.st_size} bytes > {safety.MAX_FILE_BYTES})")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"{path}: <file>: cannot read ({exc})") from None
    try:
        doc = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "<yaml>"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise RuleError(f"{path}: {where}: invalid YAML ({problem})") from None
    try:
        safety.check_expansion(doc)
        safety.check_regexes(doc)
    except safety.UnsafeRule as exc:
        raise RuleError(f"{path}: {exc}") from None
    try:
        rule = validate(doc, path)
        from .vocabulary import check_rule  # the registries import tree-sitter: only when rules are validated

        check_rule(rule)  # every condition, edit, matcher and cost key against its registry
    except RuleError:
        raise
    except Exception as exc:  # a shape the schema checks did not foresee: still one line, never a traceback
        raise RuleError(f"{path}: <rule>: invalid rule ({type(exc).__name__}: {one_line(str(exc))[:200]})") from None
    for key, tmpl in _templates(rule):
        try:
            check_template(tmpl)
        except TemplateError as exc:
            raise RuleError(f"{path}: {key}: {exc}") from None
    return rule


def _templates(rule: Rule):
    yield "message", rule.message
    if rule.fix:
        if "title" in rule.fix:
            yield "fix.title", str(rule.fix["title"])
        for i, e in enumerate(rule.fix.get("edits", [])):
            for k in ("with", "append_arg"):
                if k in e and isinstance(e[k], str):
                    yield f"fix.edits[{i}].{k}", e[k]


def load_rules(dirs: list[Path] | None = None, use_cache: bool = True) -> RuleSet:
    """Load every `*.yaml` under the given directories; bad files become errors, not crashes.
    The validated result comes from the rule cache when the files and the tool are unchanged (rule_cache.py);
    `use_cache=False` (`--no-cache`) neither reads nor writes it."""
    dirs = list(dirs or [builtin_rules_dir()])
    if not use_cache:
        return load_rules_uncached(dirs)
    from .rule_cache import cached

    rs = cached(dirs, load_rules_uncached)
    preload(getattr(rs, "templates", None) or {})
    return rs


def load_rules_uncached(dirs: list[Path] | None = None) -> RuleSet:
    """Read, validate and check every rule file (what the cache stores)."""
    dirs = dirs or [builtin_rules_dir()]
    problem = missing_dependency()
    if problem is not None:  # every rule would fail alike: one line, not one per rule file
        return RuleSet(errors=[problem], environment=problem)
    rs = RuleSet()
    seen: dict[str, Path] = {}
    for d in dirs:
        for path in sorted(d.rglob("CM*.yaml")):
            try:
                rule = load_rule_file(path)
            except RuleError as exc:
                rs.errors.append(str(exc))
                continue
            if rule.id in seen:
                rs.errors.append(f"{path}: id: duplicate rule id {rule.id} (also in {seen[rule.id]})")
                continue
            seen[rule.id] = path
            rs.rules.append(rule)
    rs.rules.sort(key=lambda r: r.id)
    rs.templates = precompile(t for r in rs.rules for _, t in _templates(r))
    return rs
