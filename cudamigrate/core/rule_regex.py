"""Rule-file regexes run on RE2, a linear-time engine, so no rule can hang a scan.

Why: Python's `re` backtracks, has no timeout, and runs in C where the per-file budget cannot stop it: the
validator used to accept `(a|aa)*b`, which never finishes on a 60-character string, and a rule directory
pulled in through `rules-dirs` could hang CI. RE2 (the `google-re2` wheel, maintained by Google) matches in
time linear in the text for every pattern it compiles; a hand-written detector of "catastrophic" shapes
always misses some (overlapping alternatives, `(\\w|\\d)*`, ...).

A pattern RE2 cannot compile is refused when the rule loads, with the reason: lookaround, backreferences,
possessive repeats, repeat counts over 1,000. There is no fallback to Python's `re`: the last one (lookaround
patterns that repeat only single characters) still let `(?=a)a*a*a*a*b` run for minutes on 300 characters
(polynomial backtracking) and six `a{0,65535}` for a minute on 100. A rule that needs "not followed by"
states it as data instead (`name_not_matches`, `file_not_matches`, `not:`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Protocol

import re2  # type: ignore[import-untyped]

try:  # Python 3.11+
    import re._parser as sre_parse  # type: ignore[import-not-found]
    from re._constants import (  # type: ignore[import-not-found]
        ASSERT, ASSERT_NOT, BRANCH, GROUPREF, GROUPREF_EXISTS, MAX_REPEAT, MIN_REPEAT, SUBPATTERN)
except ImportError:  # pragma: no cover
    import sre_parse
    from sre_constants import (ASSERT, ASSERT_NOT, BRANCH, GROUPREF, GROUPREF_EXISTS, MAX_REPEAT, MIN_REPEAT,
                               SUBPATTERN)

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported once, as a load error, not on stderr by RE2


class Pattern(Protocol):
    @property
    def groupindex(self) -> Any: ...

    def search(self, text: Any) -> Any: ...

    def finditer(self, text: Any) -> Any: ...


class RuleRegexError(ValueError):
    pass


def _constructs(items: Any, out: set[str]) -> None:
    """The constructs RE2 lacks that a parsed pattern uses: `lookaround`, `backreference`."""
    for op, av in items:
        if op in (MAX_REPEAT, MIN_REPEAT):
            _constructs(av[2], out)
        elif op == SUBPATTERN:
            _constructs(av[-1], out)
        elif op == BRANCH:
            for b in av[1]:
                _constructs(b, out)
        elif op in (ASSERT, ASSERT_NOT):
            out.add("lookaround")
            _constructs(av[1], out)
        elif op in (GROUPREF, GROUPREF_EXISTS):
            out.add("backreference")


def _refusal(pattern: str, re2_error: str) -> str:
    """Why RE2 refused `pattern`, in the rule author's terms (one line)."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"invalid regex: {exc}"
    found: set[str] = set()
    _constructs(parsed, found)
    if "backreference" in found:
        return "backreferences are not supported (rule regexes run on RE2, which matches in linear time)"
    if "lookaround" in found:
        return ("lookaround ((?=, (?!, (?<=, (?<!) is not supported (rule regexes run on RE2, which matches in "
                "linear time): state \"not followed by\" as a condition (name_not_matches, file_not_matches, not:)")
    return f"not supported by RE2, the linear-time engine rule regexes run on: {re2_error or 'unknown construct'}"


def _re2_error(exc: Exception) -> str:
    return exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)


def check_rule_regex(pattern: str) -> None:
    """Raise RuleRegexError (one line) when RE2 cannot compile `pattern`: see the module docstring."""
    try:
        re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raise RuleRegexError(_refusal(pattern, _re2_error(exc))) from None


@lru_cache(maxsize=4096)
def rule_regex(pattern: str | bytes, flags: str = "", anchor_end: bool = False) -> Pattern:
    """The RE2 form of a rule's regex (checked when the rule loaded; an unchecked one RE2 refuses raises
    RuleRegexError). `flags`: inline flags (`m`: ^/$ at each line, `s`: `.` matches newlines); `anchor_end`:
    the match must end at the end of the text (RE2's `\\z`)."""
    text = pattern.decode("utf-8", "surrogateescape") if isinstance(pattern, bytes) else pattern
    src = (f"(?{flags})" if flags else "") + (f"(?:{text})\\z" if anchor_end else text)
    try:
        return re2.compile(src.encode() if isinstance(pattern, bytes) else src, _OPTIONS)
    except re2.error as exc:
        raise RuleRegexError(_refusal(text, _re2_error(exc))) from None


def engine_of(pattern: str) -> str:
    """The engine that runs a (checked) rule regex: always `re2`; what the tests and `rules` docs report."""
    rule_regex(pattern)
    return "re2"
