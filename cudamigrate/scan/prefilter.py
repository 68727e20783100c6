"""Cheap byte-level facts that decide which rules a file needs before it is parsed.

The keyword prefilter lets a file through when a rule's keyword appears in it; the keywords are the
last name components (`on` from `thrust::cuda::par.on`, `max`, `count`, `find`), so in real trees most
files passed because of a word in a comment. Three refinements, each a superset test (they may keep a
rule that then finds nothing, never drop one that could match):

- `comment_spans`: where the comments are, so that identifier rules need a keyword in code. The lexer
  is conservative: anything it cannot lex for certain (a raw string literal, an unterminated comment)
  counts as code.
- `NameGate`: a name rule matches only a name whose every component (`thrust`, `cuda`, `par`, `on`)
  appears somewhere in the file, since `FileContext.resolve` only completes a written name from the
  file's own `using`/namespace-alias declarations. A file without the word `thrust` never runs the
  `thrust::`-only rules.
- `define_regions`: the `#define` lines (with their continuations), so that the macro-body query runs
  only when a keyword appears in one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from ..match.kinds import keywords as rule_keywords
from ..rules.schema import Rule

# comments, plus the tokens inside which `//` or `/*` is not a comment: strings, character literals (not a
# C++14 digit separator `1'000`: no word character or quote before the quote or its prefix) and `<...>` include
# paths. Every branch starts with a literal byte and loops are unrolled (`[^"\\]*(?:\\.[^"\\]*)*`, not
# `(?:[^"\\]|\\.)*`): `re` then jumps between candidate bytes instead of trying each branch at every byte,
# twice as fast over real trees. A match is a comment when it starts with `/`.
_CHAR_BODY = rb"[^'\\\n]*(?:\\.[^'\\\n]*)*'"
_LEX = re.compile(
    rb"//[^\n\\]*(?:\\(?:\r\n|.)[^\n\\]*)*|/\*.*?\*/"
    rb"|\"[^\"\\\n]*(?:\\.[^\"\\\n]*)*\""
    rb"|'(?<![\w']')" + _CHAR_BODY
    + rb"|u8'(?<![\w']u8')" + _CHAR_BODY
    + rb"|[uUL]'(?<![\w'][uUL]')" + _CHAR_BODY
    + rb"|\#[ \t]*include[ \t]*<[^>\n]*>",
    re.S,
)
_RAW_STRING = re.compile(rb"R\"[^\s()\\]{0,16}\(")
_DEFINE = re.compile(rb"#[ \t]*define\b[^\n\\]*(?:\\(?:\r\n|.)[^\n\\]*)*", re.S)
_WORD = re.compile(r"[A-Za-z_]\w*")
_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")


# bytes that are not ASCII word characters (`\w` of a bytes pattern) -> space: `translate` + `split` gives the
# words `\bkeyword\b` can match, twice as fast as `re.findall(rb"\w+")`
_NOT_WORD = bytes(b if chr(b).isascii() and (chr(b).isalnum() or b == 0x5F) else 0x20 for b in range(256))


def words_of(data: bytes) -> set[bytes]:
    """The distinct ASCII words (`\\w+`) of `data`."""
    return set(data.translate(_NOT_WORD).split())


@dataclass
class KeywordFinder:
    """The rules' keywords that occur in a file as whole words (`\\bkw\\b`), plus the words that `*` keywords
    (`Agent*`) match. A set intersection of the file's words with the keywords: as fast as one regex of ~1,000
    alternatives over the bytes, without compiling that regex at every start (0.3 s, a third of a one-file run).
    The `*` keywords are matched against the file's distinct words, not its bytes."""

    words: frozenset[bytes]
    globs: re.Pattern[bytes] | None = None  # one word per line: `^(?:Agent\w*|...)$`

    @classmethod
    def build(cls, keywords: Iterable[str], glob_patterns: Iterable[str]) -> "KeywordFinder | None":
        words = frozenset(k.encode() for k in keywords)
        pats = list(glob_patterns)
        if not words and not pats:
            return None
        return cls(words, re.compile(rb"^(?:" + "|".join(pats).encode() + rb")$", re.M) if pats else None)

    def find(self, data: bytes) -> set[str]:
        return self.find_words(words_of(data))

    def find_words(self, present: set[bytes]) -> set[str]:
        """`find` over a file's distinct words (`words_of`)."""
        got = present & self.words
        if self.globs is not None:
            got |= set(self.globs.findall(b"\n".join(present)))
        return {w.decode() for w in got}


def blank(data: bytes, spans: list[tuple[int, int]]) -> bytes:
    """`data` with the given ranges replaced by spaces (same length)."""
    out, last = [], 0
    for s, e in spans:
        out += [data[last:s], b" " * (e - s)]
        last = e
    out.append(data[last:])
    return b"".join(out)


def comment_spans(data: bytes) -> list[tuple[int, int]]:
    """Sorted (start, end) byte ranges of the comments; empty when the file has a raw string literal
    (its body could hold `/*` or `"`: then nothing is treated as a comment)."""
    if b"/" not in data or _RAW_STRING.search(data):
        return []
    return [m.span() for m in _LEX.finditer(data) if data[m.start()] == 0x2F]  # `/`


def define_regions(data: bytes) -> list[bytes]:
    """The text of every `#define` line with its continuation lines (a superset of tree-sitter's macro bodies)."""
    if b"define" not in data:
        return []
    return [m.group(0) for m in _DEFINE.finditer(data)]


def name_words(name: str) -> frozenset[str]:
    """The identifier words of a rule's name (`thrust::cuda::par().on` -> thrust, cuda, par, on), without
    template arguments and glob components (`cub::Agent*` -> cub)."""
    prev = None
    while prev != name:
        prev, name = name, _TEMPLATE_ARGS.sub("", name)
    return frozenset(w for w in _WORD.findall(name.replace("*", " * "))
                     if not any(w in part and "*" in part for part in re.split(r"::|\.", name)))


@dataclass
class NameGate:
    """Per rule, the word sets of its names; a rule can match in a file only if, for one of its names,
    every word is present in the file."""

    needs: dict[str, list[frozenset[str]]]  # rule id -> one word set per name
    words: frozenset[bytes] = frozenset()  # every word a gated name needs that is not a keyword itself

    @classmethod
    def build(cls, rules: Iterable[Rule]) -> "NameGate":
        needs: dict[str, list[frozenset[str]]] = {}
        extra: set[str] = set()  # words that are not keywords themselves (the prefilter finds those)
        for r in rules:
            if r.kind not in ("call", "identifier"):
                continue
            sets = list(dict.fromkeys(name_words(n) for n in r.spec.get("names", [])))
            kws = rule_keywords(r)
            more = {w for s in sets for w in s - kws}
            if all(sets) and more:  # some name needs more than its keyword
                needs[r.id] = sets
                extra |= more
        return cls(needs, frozenset(w.encode() for w in extra))

    def gated(self, rule_id: str) -> bool:
        return rule_id in self.needs

    def present(self, words: set[bytes]) -> set[str]:
        """The gate words among a file's distinct words (`words_of`: anywhere, a `using` in a comment still
        counts, as it does for `FileContext.resolve`)."""
        return {w.decode() for w in self.words & words}

    def admits(self, rule_id: str, present: set[str]) -> bool:
        """`present`: the gate words found by `present()` and the keywords found by the prefilter."""
        sets = self.needs.get(rule_id)
        return sets is None or any(s <= present for s in sets)


def glob_regex(k: str) -> str:
    """A keyword with `*` (any identifier characters) as a regex."""
    return "".join(r"\w*" if part == "*" else re.escape(part) for part in re.split(r"(\*)", k))


def _trie_regex(words: list[str]) -> str:
    """One alternation for many literal words, factored by common prefixes (re tries them in order,
    so a flat alternation of ~1000 names costs ~1000 attempts at every position)."""
    trie: dict = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:
        ends = "" in node
        alts = [re.escape(ch) + emit(sub) for ch, sub in sorted(node.items()) if ch != ""]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        if ends:
            return "(?:" + body + ")?"
        return body

    return emit(trie)


def keyword_regex(words: list[str], patterns: list[str]) -> re.Pattern[bytes] | None:
    """One regex for a rule set's keywords (literal words as a trie, then glob patterns), whole words only: what
    the word-set `KeywordFinder` must find, the reference tests hold it to."""
    alts = []
    if words:
        alts.append(_trie_regex(sorted(set(words))))
    alts += patterns
    if not alts:
        return None
    return re.compile((r"\b(" + "|".join(alts) + r")\b").encode())
