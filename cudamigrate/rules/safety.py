"""Rule files from a repository are data, never code: bounds checked before a rule is accepted.

- YAML aliases share one object per anchor, so a "billion laughs" file loads small and explodes only when
  something walks it (messages, reports, `repr`): the document is walked once as if expanded, up to a cap.
- Python's `re` backtracks and has no timeout, so rule regexes run on RE2, a linear-time engine
  (core/rule_regex.py); a regex is accepted when RE2 compiles it, or, for lookaround, when it repeats only
  single characters. A length cap bounds the compiled program.
"""

from __future__ import annotations

from typing import Any

from ..core.rule_regex import RuleRegexError, check_rule_regex

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


def check_regex(pattern: Any) -> None:
    """Raise UnsafeRule for a pattern that is not a string, too long, invalid, or cannot run in linear time
    (core/rule_regex.py: RE2, or a lookaround pattern that repeats only single characters)."""
    if not isinstance(pattern, str):
        raise UnsafeRule(f"regex must be a string, not {type(pattern).__name__}")
    if len(pattern) > MAX_REGEX:
        raise UnsafeRule(f"regex longer than {MAX_REGEX} characters")
    try:
        check_rule_regex(pattern)
    except RuleRegexError as exc:
        raise UnsafeRule(f"regex {pattern!r}: {exc}") from None


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
