"""Rule files from a repository are data, never code: bounds checked before a rule is accepted.

- YAML aliases share one object per anchor, so a "billion laughs" file loads small and explodes only when
  something walks it (messages, reports, `repr`): the document is walked once as if expanded, up to a cap.
- Python's `re` has no timeout, so regexes are validated instead (no new dependency): a length cap, and no
  repeated group that holds another repeat unless a literal that every iteration must contain cannot be
  eaten by the inner repeats (`(a+)+`, `(\\w+\\s?)*`, `(\\(.*\\))*` are refused, `(\\w+::)*` is fine):
  otherwise the ways to split the input between iterations multiply and a failing match backtracks through
  all of them. Alternatives that overlap under a single-level repeat (`(a|a)*`) are not detected.
"""

from __future__ import annotations

import re
from typing import Any

try:  # Python 3.11+
    import re._parser as sre_parse  # type: ignore[import-not-found]
    from re._constants import BRANCH, MAX_REPEAT, MIN_REPEAT, POSSESSIVE_REPEAT, SUBPATTERN  # type: ignore
except ImportError:  # pragma: no cover
    import sre_parse
    from sre_constants import BRANCH, MAX_REPEAT, MIN_REPEAT, SUBPATTERN

    POSSESSIVE_REPEAT = None

MAX_NODES = 200_000  # scalars and containers of a rule document, aliases expanded
MAX_REGEX = 4_000  # characters (the longest shipped regex, an alternation of cuBLAS names, has ~1,400)
MAX_FILE_BYTES = 4 * 1024 * 1024


class UnsafeRule(ValueError):
    pass


def check_expansion(doc: Any, cap: int = MAX_NODES) -> None:
    """Raise UnsafeRule when `doc`, aliases expanded, has more than `cap` nodes (walk stops at the cap)."""
    n = 0
    stack = [doc]
    while stack:
        x = stack.pop()
        n += 1
        if n > cap:
            raise UnsafeRule(f"document too large once YAML aliases are expanded (over {cap} nodes)")
        if isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, str) and len(x) > MAX_FILE_BYTES:
            raise UnsafeRule("string too long")


_UNBOUNDED = 1 << 16
_CATEGORY_PROBE = {"CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_SPACE": r"\s",
                   "CATEGORY_NOT_SPACE": r"\S", "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W"}


def _is_repeat(op: Any) -> bool:
    return op in (MAX_REPEAT, MIN_REPEAT) or (POSSESSIVE_REPEAT is not None and op == POSSESSIVE_REPEAT)


def _char_may_match(op: Any, av: Any, ch: str) -> bool:
    """Whether a one-character item may match `ch` (conservative: True when unsure)."""
    name = str(op)
    if name == "LITERAL":
        return chr(av) == ch
    if name == "NOT_LITERAL":
        return chr(av) != ch
    if name == "IN":
        neg = any(str(o) == "NEGATE" for o, _ in av)
        hit = False
        for o, a in av:
            o = str(o)
            if o == "LITERAL" and chr(a) == ch:
                hit = True
            elif o == "RANGE" and a[0] <= ord(ch) <= a[1]:
                hit = True
            elif o == "CATEGORY":
                probe = _CATEGORY_PROBE.get(str(a))
                hit = hit or probe is None or re.fullmatch(probe, ch) is not None
        return hit != neg
    return True  # ANY and anything else


def _repeats_may_match(items: Any, ch: str) -> bool:
    """Whether some repeat (max > 1) inside `items` may consume `ch`."""
    for op, av in items:
        if _is_repeat(op):
            body = av[2]
            if av[1] > 1 and any(_item_may_match(o, a, ch) for o, a in body):
                return True
            if _repeats_may_match(body, ch):
                return True
        elif op == SUBPATTERN:
            if _repeats_may_match(av[-1], ch):
                return True
        elif op == BRANCH:
            if any(_repeats_may_match(b, ch) for b in av[1]):
                return True
    return False


def _item_may_match(op: Any, av: Any, ch: str) -> bool:
    if op == SUBPATTERN:
        return any(_item_may_match(o, a, ch) for o, a in av[-1])
    if op == BRANCH:
        return any(_item_may_match(o, a, ch) for b in av[1] for o, a in b)
    if _is_repeat(op):
        return any(_item_may_match(o, a, ch) for o, a in av[2])
    return _char_may_match(op, av, ch)


def _mandatory_literals(items: Any) -> set[str]:
    """Characters that every match of `items` contains as a literal."""
    out: set[str] = set()
    for op, av in items:
        if str(op) == "LITERAL":
            out.add(chr(av))
        elif op == SUBPATTERN:
            out |= _mandatory_literals(av[-1])
        elif op == BRANCH:
            sets = [_mandatory_literals(b) for b in av[1]]
            out |= set.intersection(*sets) if sets else set()
        elif _is_repeat(op) and av[0] >= 1:
            out |= _mandatory_literals(av[2])
    return out


def _has_inner_repeat(items: Any) -> bool:
    for op, av in items:
        if _is_repeat(op) and av[1] > 1:
            return True
        if op == SUBPATTERN and _has_inner_repeat(av[-1]):
            return True
        if op == BRANCH and any(_has_inner_repeat(b) for b in av[1]):
            return True
    return False


def _ambiguous_repeat(items: Any) -> bool:
    r"""A repeat (max > 1) over a body holding another repeat, where the body has no mandatory literal that
    the inner repeats cannot consume (`(a+)+`, `(\w+\s?)*`): the ways to split the input between the
    iterations multiply, and a failing match backtracks through all of them. `(\w+::)*` is delimited by
    `:` (which `\w+` cannot eat), so it is fine."""
    for op, av in items:
        if _is_repeat(op):
            body = av[2]
            if av[1] > 1 and _has_inner_repeat(body):
                if not any(not _repeats_may_match(body, ch) for ch in _mandatory_literals(body)):
                    return True
            if _ambiguous_repeat(body):
                return True
        elif op == SUBPATTERN and _ambiguous_repeat(av[-1]):
            return True
        elif op == BRANCH and any(_ambiguous_repeat(b) for b in av[1]):
            return True
    return False


def check_regex(pattern: Any) -> None:
    """Raise UnsafeRule for a pattern that is not a string, too long, invalid, or exponential to backtrack."""
    if not isinstance(pattern, str):
        raise UnsafeRule(f"regex must be a string, not {type(pattern).__name__}")
    if len(pattern) > MAX_REGEX:
        raise UnsafeRule(f"regex longer than {MAX_REGEX} characters")
    try:
        re.compile(pattern)
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise UnsafeRule(f"invalid regex: {exc}") from None
    if _ambiguous_repeat(parsed):
        raise UnsafeRule(f"regex {pattern!r} nests unbounded repeats (catastrophic backtracking)")


def is_regex_key(key: str) -> bool:
    """Keys whose values the matcher and the conditions compile as regexes."""
    return key in ("regex", "preceded_by") or (key.endswith("matches") and key != "argc_matches_params")


def check_regexes(doc: Any, where: str = "") -> None:
    """Validate every regex-valued key of a rule document; raise UnsafeRule naming the key."""
    stack: list[tuple[Any, str]] = [(doc, where)]
    while stack:
        x, at = stack.pop()
        if isinstance(x, dict):
            for k, v in x.items():
                path = f"{at}.{k}" if at else str(k)
                if isinstance(k, str) and is_regex_key(k) and not isinstance(v, (dict, bool, int)):
                    for p in v if isinstance(v, list) else [v]:
                        try:
                            check_regex(p)
                        except UnsafeRule as exc:
                            raise UnsafeRule(f"{path}: {exc}") from None
                else:
                    stack.append((v, path))
        elif isinstance(x, list):
            stack.extend((v, f"{at}[{i}]") for i, v in enumerate(x))
