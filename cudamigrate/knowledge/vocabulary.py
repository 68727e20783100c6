"""Every key of a rule checked against the registries of the words it may use, at load time.

Why: conditions, edits, matcher kinds and cost keys used to be if/elif chains read at scan time, so a typo such as
`fix: {when: {nmae: ...}}` loaded cleanly and then silently dropped the rule's findings. Here each place a rule
holds vocabulary (`match`, `where`, `fix.when`, `fix.edits[]` and their `when`, `cost.*`, nested `all`/`any`/`not`)
is walked once; the first unknown word or ill-formed value becomes one `path: json.path: reason` line.
"""

from __future__ import annotations

from typing import Any

from ..findings import cost as costmod
from ..match import conditions as cond
from ..match import edits as editmod
from ..match.kinds import MATCHER_KINDS
from ..core.registry import SchemaError, did_you_mean
from ..rules.schema import Rule, RuleError


class Vocabulary:
    """The `Checker` that schemas call back for nested vocabulary, for one rule."""

    def __init__(self, options: dict[str, Any] | None = None):
        self.options = dict(options or {})

    def option_names(self) -> list[str]:
        return list(self.options)

    def condition(self, value: Any, path: str) -> None:
        """A condition: None, a list (all hold), or a mapping of known conditions (arg tests only with `arg`)."""
        if value is None:
            return
        if isinstance(value, list):
            for i, c in enumerate(value):
                self.condition(c, f"{path}[{i}]")
            return
        if not isinstance(value, dict):
            raise SchemaError(path, f"a condition must be a mapping or a list of them, got {str(value)[:60]!r}")
        has_arg = "arg" in value
        for key, val in value.items():
            where = f"{path}.{key}"
            if key in cond.ARG_TESTS.entries:
                if not has_arg:
                    raise SchemaError(where, f"`{key}` tests an argument: give `arg: NAME|INDEX` in the same mapping")
                cond.ARG_TESTS.check(key, val, where, self)
            elif isinstance(key, str) and key in cond.CONDITIONS.entries:
                cond.CONDITIONS.check(key, val, where, self)
            else:
                known = cond.CONDITIONS.names() + (cond.ARG_TESTS.names() if has_arg else [])
                raise SchemaError(where, f"unknown condition {str(key)[:80]!r}" + did_you_mean(str(key), known))

    def match(self, match: dict[str, Any]) -> None:
        (kind, spec), = match.items()
        MATCHER_KINDS.check(kind, spec, f"match.{kind}", self)
        prepare = MATCHER_KINDS.get(kind).impl.prepare
        if prepare is not None:
            prepare(spec)

    def fix(self, fix: dict[str, Any]) -> None:
        self.condition(fix.get("when"), "fix.when")
        for i, e in enumerate(fix.get("edits", []) or []):
            editmod.check_edit(e, f"fix.edits[{i}]", self)

    def cost(self, cost: dict[str, Any]) -> None:
        for key, val in cost.items():
            costmod.COST_KEYS.check(key, val, f"cost.{key}", self)


def check_rule(rule: Rule) -> None:
    """Raise RuleError (`file: json.path: reason`) at the rule's first unknown word or ill-formed value."""
    v = Vocabulary(rule.options)
    try:
        v.match(rule.match)
        v.condition(rule.where, "where")
        if rule.fix is not None:
            v.fix(rule.fix)
        v.cost(rule.cost)
    except SchemaError as exc:
        raise RuleError(f"{rule.path}: {exc.path}: {exc.message}") from None
