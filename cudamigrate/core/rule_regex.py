"""Rule-file regexes run on RE2, a linear-time engine, so no rule can hang a scan.

Why: Python's `re` backtracks, has no timeout, and runs in C where the per-file budget cannot stop it: the
validator used to accept `(a|aa)*b`, which never finishes on a 60-character string, and a rule directory
pulled in through `rules-dirs` could hang CI. RE2 (the `google-re2` wheel, maintained by Google) matches in
time linear in the text for every pattern it compiles; a hand-written detector of "catastrophic" shapes
always misses some (overlapping alternatives, `(\\w|\\d)*`, ...).

RE2 has no lookaround and no backreferences. A rule regex that needs lookaround is the one exception: it runs
on Python's `re`, and is accepted only when every repeat in it repeats a single character (a literal, a class,
`.`, `\\w`): no repeated group, no alternation under a repeat, at most `MAX_FALLBACK_REPEATS` unbounded
repeats. Such a pattern cannot backtrack exponentially. Backreferences are refused.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Protocol

import re2  # type: ignore[import-untyped]

try:  # Python 3.11+
    import re._parser as sre_parse  # type: ignore[import-not-found]
    from re._constants import (  # type: ignore[import-not-found]
        ANY, ASSERT, ASSERT_NOT, BRANCH, CATEGORY, GROUPREF, GROUPREF_EXISTS, IN, LITERAL, MAX_REPEAT, MIN_REPEAT,
        NOT_LITERAL, SUBPATTERN)
except ImportError:  # pragma: no cover
    import sre_parse
    from sre_constants import (ANY, ASSERT, ASSERT_NOT, BRANCH, CATEGORY, GROUPREF, GROUPREF_EXISTS, IN, LITERAL,
                               MAX_REPEAT, MIN_REPEAT, NOT_LITERAL, SUBPATTERN)

MAX_FALLBACK_REPEATS = 4
_UNBOUNDED = 1 << 16
_SINGLE = {ANY, IN, LITERAL, NOT_LITERAL, CATEGORY}
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported once, as a load error, not on stderr by RE2


class Pattern(Protocol):
    @property
    def groupindex(self) -> Any: ...

    def search(self, text: Any) -> Any: ...

    def finditer(self, text: Any) -> Any: ...


class RuleRegexError(ValueError):
    pass


def _repeats(items: Any, out: list[tuple[int, Any]]) -> None:
    """Every repeat (its max count and body), every backreference (max -1) and every lookaround (max -2, its
    body) in a parsed pattern."""
    for op, av in items:
        if op in (MAX_REPEAT, MIN_REPEAT):
            out.append((av[1], av[2]))
            _repeats(av[2], out)
        elif op == SUBPATTERN:
            _repeats(av[-1], out)
        elif op == BRANCH:
            for b in av[1]:
                _repeats(b, out)
        elif op in (ASSERT, ASSERT_NOT):
            out.append((-2, av[1]))
            _repeats(av[1], out)
        elif op in (GROUPREF, GROUPREF_EXISTS):
            out.append((-1, None))


def _fallback_problem(pattern: str, re2_error: str = "") -> str | None:
    """Why `pattern` may not run on Python's `re` (None: it may): see the module docstring."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"invalid regex: {exc}"
    reps: list[tuple[int, Any]] = []
    _repeats(parsed, reps)
    if any(mx == -1 for mx, _ in reps):
        return "backreferences are not supported (rule regexes run on RE2, which matches in linear time)"
    if not any(mx == -2 for mx, _ in reps):
        return f"not supported by RE2, the linear-time engine rule regexes run on: {re2_error or 'unknown construct'}"
    for mx, body in reps:
        if mx > 1 and not (len(body) == 1 and body[0][0] in _SINGLE):
            return ("a regex with lookaround runs on Python's re and may repeat only single characters "
                    "(no repeated group or alternation): rewrite it without lookaround, or without the repeated group")
    if sum(1 for mx, _ in reps if mx >= _UNBOUNDED) > MAX_FALLBACK_REPEATS:
        return f"a regex with lookaround may hold at most {MAX_FALLBACK_REPEATS} unbounded repeats"
    return None


def check_rule_regex(pattern: str) -> None:
    """Raise RuleRegexError (one line) when `pattern` cannot run in bounded time: see the module docstring."""
    try:
        re2.compile(pattern, _OPTIONS)
        return
    except re2.error as exc:
        re2_error = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise RuleRegexError(f"invalid regex: {exc}") from None
    problem = _fallback_problem(pattern, re2_error)
    if problem is not None:
        raise RuleRegexError(problem)


@lru_cache(maxsize=4096)
def rule_regex(pattern: str | bytes, flags: str = "", anchor_end: bool = False) -> Pattern:
    """The compiled form of a rule's regex: RE2, or Python's `re` for an accepted lookaround pattern.
    `flags`: inline flags (`m`: ^/$ at each line, `s`: `.` matches newlines); `anchor_end`: the match must end
    at the end of the text (Python's `\\Z`, RE2's `\\z`)."""
    text = pattern.decode("utf-8", "surrogateescape") if isinstance(pattern, bytes) else pattern
    try:
        src = (f"(?{flags})" if flags else "") + (f"(?:{text})\\z" if anchor_end else text)
        compiled = re2.compile(src.encode() if isinstance(pattern, bytes) else src, _OPTIONS)
        return compiled
    except re2.error:
        pass
    problem = _fallback_problem(text)
    if problem is not None:  # rules are checked at load time; a pattern reaching here unchecked is refused
        raise RuleRegexError(problem)
    src = (f"(?{flags})" if flags else "") + (f"(?:{text})\\Z" if anchor_end else text)
    return re.compile(src.encode() if isinstance(pattern, bytes) else src)


def engine_of(pattern: str) -> str:
    """`re2` or `re`: which engine runs a (checked) rule regex; what the tests and `rules` docs report."""
    return "re" if isinstance(rule_regex(pattern), re.Pattern) else "re2"
