"""Named vocabularies (matcher kinds, conditions, edits, cost keys): `name -> (schema, implementation, doc)`.

Why: the rule language was spread over if/elif chains, so a misspelt key in a rule file loaded cleanly and then
silently changed what the rule did at scan time. Each vocabulary is now a `Registry` filled where its words are
implemented; the rule loader checks every key of a rule file against it (one-line error with a did-you-mean), and
`scripts/gen_rules_doc.py` writes the tables of `rules/README.md` from the same entries' docs.

A `Schema` checks one value and says, for the docs, how it is written (`form`). Schemas that hold nested
vocabulary (a condition inside `any:`) call back into the `Checker` they are given, so this module knows no
vocabulary itself and imports nothing from the package.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Iterator, Protocol, TypeVar

T = TypeVar("T")


class SchemaError(Exception):
    """A rule value that does not fit its vocabulary; `path` is where in the rule (`fix.edits[0].replace`)."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class Checker(Protocol):
    """What a schema may ask about nested vocabulary (implemented by `rules.vocabulary`)."""

    def condition(self, value: Any, path: str) -> None: ...

    def option_names(self) -> list[str]: ...  # the options the rule declares (`options:`)


@dataclass(frozen=True)
class Schema:
    """How a value is written (`form`, shown in the docs) and the check that it is."""

    form: str
    check: Callable[[Any, str, Checker], None]


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One word of a vocabulary."""

    name: str
    schema: Schema
    impl: T
    doc: str


def did_you_mean(word: str, known: list[str]) -> str:
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


@dataclass
class Registry(Generic[T]):
    """The words of one vocabulary, in the order they were registered (the order of the docs)."""

    kind: str  # what a word is, in error messages: "condition", "edit target", ...
    # words written `prefix.NAME` (`arg.stream`) are registered once as `prefix.*`
    entries: dict[str, Entry[T]] = field(default_factory=dict)

    def add(self, name: str, schema: Schema, impl: T, doc: str) -> T:
        if name in self.entries:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self.entries[name] = Entry(name, schema, impl, " ".join(doc.split()))
        return impl

    def register(self, name: str, schema: Schema, doc: str | None = None) -> Callable[[T], T]:
        """Decorator above the implementation; without `doc`, the first paragraph of its docstring is the doc."""
        def deco(fn: T) -> T:
            text = doc if doc is not None else (getattr(fn, "__doc__", None) or "").strip().split("\n\n")[0]
            return self.add(name, schema, fn, text)

        return deco

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.lookup(name) is not None

    def __iter__(self) -> Iterator[Entry[T]]:
        return iter(self.entries.values())

    def names(self) -> list[str]:
        return list(self.entries)

    def lookup(self, name: str) -> Entry[T] | None:
        if name.endswith("*"):
            return None  # `arg.*` is how a prefix word is registered, not a word
        got = self.entries.get(name)
        if got is None and "." in name and not name.endswith("."):
            got = self.entries.get(name.split(".", 1)[0] + ".*")
        return got

    def get(self, name: str) -> Entry[T]:
        got = self.lookup(name)
        if got is None:
            raise KeyError(self.unknown(name))
        return got

    def unknown(self, name: Any) -> str:
        return f"unknown {self.kind} {str(name)[:80]!r}" + did_you_mean(str(name), self.names())

    def check(self, name: Any, value: Any, path: str, checker: Checker) -> None:
        """`name: value` at `path` is a known word with a valid value."""
        entry = self.lookup(name) if isinstance(name, str) else None
        if entry is None:
            raise SchemaError(path, self.unknown(name))
        entry.schema.check(value, path, checker)

    @staticmethod
    def union(kind: str, *parts: "Registry[T]") -> "Registry[T]":
        """One registry from several modules' registries (builtin matchers live next to their helpers)."""
        out: Registry[T] = Registry(kind)
        for part in parts:
            for e in part:
                out.add(e.name, e.schema, e.impl, e.doc)
        return out


# --------------------------------------------------------------------------- schema combinators
def _type_name(v: Any) -> str:
    return "null" if v is None else {bool: "boolean", int: "integer", float: "number", str: "string",
                                       list: "list", dict: "mapping"}.get(type(v), type(v).__name__)


def _need(ok: bool, path: str, form: str, v: Any) -> None:
    if not ok:
        raise SchemaError(path, f"must be {form}, got {_type_name(v)} {str(v)[:60]!r}")


def _is_number(v: Any) -> bool:
    """A number, or a string float() reads: YAML 1.1 loads `1e3` (no dot) as the string '1e3'."""
    if isinstance(v, bool):
        return False
    if isinstance(v, (int, float)):
        return True
    if isinstance(v, str):
        try:
            float(v)
            return True
        except ValueError:
            return False
    return False


def anything(form: str = "any value") -> Schema:
    return Schema(form, lambda v, p, c: None)


def boolean() -> Schema:
    return Schema("true|false", lambda v, p, c: _need(isinstance(v, bool), p, "true or false", v))


def integer() -> Schema:
    return Schema("N", lambda v, p, c: _need(isinstance(v, int) and not isinstance(v, bool), p, "an integer", v))


def number() -> Schema:
    return Schema("NUMBER", lambda v, p, c: _need(_is_number(v), p, "a number", v))


def ints() -> Schema:
    """`N` or `[N, ...]`."""
    def check(v: Any, p: str, c: Checker) -> None:
        items = v if isinstance(v, list) else [v]
        _need(bool(items) and all(isinstance(x, int) and not isinstance(x, bool) for x in items), p,
              "an integer or a list of integers", v)

    return Schema("N|[N, ...]", check)


def string(form: str = "TEXT") -> Schema:
    return Schema(form, lambda v, p, c: _need(isinstance(v, str), p, "a string", v))


def scalar(form: str = "VALUE") -> Schema:
    return Schema(form, lambda v, p, c: _need(isinstance(v, (str, int, float)) and not isinstance(v, bool), p,
                                                 "a string or a number", v))


def regex() -> Schema:
    def check(v: Any, p: str, c: Checker) -> None:
        _need(isinstance(v, str), p, "a regular expression (string)", v)
        from .rule_regex import RuleRegexError, check_rule_regex

        try:
            check_rule_regex(v)
        except RuleRegexError as exc:
            raise SchemaError(p, str(exc)) from None

    return Schema("REGEX", check)


def strings(form: str = "NAME|[NAME, ...]") -> Schema:
    """One string or a list of them."""
    def check(v: Any, p: str, c: Checker) -> None:
        items = v if isinstance(v, list) else [v]
        _need(all(isinstance(x, str) for x in items), p, "a string or a list of strings", v)

    return Schema(form, check)


def string_list(form: str = "[NAME, ...]", nonempty: bool = True) -> Schema:
    def check(v: Any, p: str, c: Checker) -> None:
        _need(isinstance(v, list) and (bool(v) or not nonempty) and all(isinstance(x, str) and x.strip() for x in v),
              p, "a non-empty list of strings" if nonempty else "a list of strings", v)

    return Schema(form, check)


def one_of(*choices: str, many: bool = False) -> Schema:
    """One of the words (or, with `many`, a list of them); a misspelt word gets a did-you-mean."""
    def check(v: Any, p: str, c: Checker) -> None:
        items = v if many and isinstance(v, list) else [v]
        for x in items:
            if x not in choices:
                raise SchemaError(p, f"must be {' or '.join(choices) if len(choices) < 3 else 'one of ' + ', '.join(choices)}"
                                     f", got {str(x)[:60]!r}" + did_you_mean(str(x), list(choices)))

    form = "|".join(choices) + ("|[...]" if many else "")
    return Schema(form, check)


def mapping(fields: dict[str, Schema], required: tuple[str, ...] = (), form: str | None = None,
            what: str = "key") -> Schema:
    """A mapping with known keys: an unknown one is an error naming it, with a did-you-mean."""
    def check(v: Any, p: str, c: Checker) -> None:
        _need(isinstance(v, dict), p, "a mapping", v)
        for k, val in v.items():
            if k not in fields:
                raise SchemaError(f"{p}.{k}", f"unknown {what} {str(k)[:80]!r}" + did_you_mean(str(k), list(fields))
                                  + f" (allowed: {', '.join(fields)})")
            fields[k].check(val, f"{p}.{k}", c)
        for k in required:
            if k not in v:
                raise SchemaError(f"{p}.{k}", "missing required key")

    return Schema(form or "{" + ", ".join(f"{k}: {s.form}" for k, s in fields.items()) + "}", check)


def free_mapping(form: str = "{KEY: VALUE, ...}") -> Schema:
    """A mapping whose keys are the rule's own names (`var: {role: x}`, `option: {stream: ...}`)."""
    return Schema(form, lambda v, p, c: _need(isinstance(v, dict), p, "a mapping", v))


def list_of(item: Schema, form: str | None = None) -> Schema:
    def check(v: Any, p: str, c: Checker) -> None:
        _need(isinstance(v, list), p, "a list", v)
        for i, x in enumerate(v):
            item.check(x, f"{p}[{i}]", c)

    return Schema(form or f"[{item.form}, ...]", check)


def either(*options: tuple[Callable[[Any], bool], Schema]) -> Schema:
    """The first schema whose guard accepts the value's shape checks it (`[names]` or `{names: ...}`)."""
    def check(v: Any, p: str, c: Checker) -> None:
        for guard, schema in options:
            if guard(v):
                schema.check(v, p, c)
                return
        raise SchemaError(p, f"must be {' or '.join(s.form for _, s in options)}, got {_type_name(v)}")

    return Schema(" or ".join(s.form for _, s in options), check)


def nullable(schema: Schema) -> Schema:
    """The schema, or an empty YAML value (`adjust:` with nothing after it)."""
    return Schema(schema.form, lambda v, p, c: None if v is None else schema.check(v, p, c))


def condition(form: str = "CONDITION") -> Schema:
    """A nested condition (`not: {...}`, `fix.when`, `cost.adjust[].when`)."""
    return Schema(form, lambda v, p, c: c.condition(v, p))


def conditions() -> Schema:
    def check(v: Any, p: str, c: Checker) -> None:
        _need(isinstance(v, list), p, "a list of conditions", v)
        for i, x in enumerate(v):
            c.condition(x, f"{p}[{i}]")

    return Schema("[CONDITION, ...]", check)
