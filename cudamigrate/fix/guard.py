"""The local syntax guard of `fix`: a pass may not create a syntax error anywhere.

Counting ERROR/MISSING nodes before and after misses an edit that moves an error (one error fixed by chance,
another made elsewhere: the totals agree). Instead every error node of the result must be an error node of the
input, shifted by the edits before it; an error node that was not there is blamed on the nearest applied edit,
whose finding is withdrawn. Findings whose match touches an error of the input are not offered a fix at all
(see `parse.treesitter.syntax_blocker`), so the input's errors never sit inside an edit.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path
from dataclasses import dataclass

from ..findings.model import Edit
from ..parse.treesitter import error_nodes, parse
from ..read.source import BOM, SourceFile


def parse_buffer(data: bytes) -> bytes:
    """What the scan parses (BOM and comments on continued macro lines blanked), so that error nodes here are
    the ones the scan's `fix_blocked` check saw."""
    return SourceFile(path=Path("-"), data=data, has_bom=data.startswith(BOM)).parse_bytes


_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*\Z")
_WORD = re.compile(rb"[A-Za-z0-9_]")
# words that change what the parser sees where a name stood (a rename to one of them is not a rename)
KEYWORDS = frozenset(("alignas alignof asm auto bool break case catch char class const constexpr const_cast continue "
                      "decltype default delete do double dynamic_cast else enum explicit export extern false float "
                      "for friend goto if inline int long mutable namespace new noexcept nullptr operator private "
                      "protected public register reinterpret_cast return short signed sizeof static static_assert "
                      "static_cast struct switch template this throw true try typedef typeid typename union "
                      "unsigned using virtual void volatile while defined").split())


def is_rename(data: bytes, e: Edit) -> bool:
    """`e` replaces one whole identifier token of `data` by another identifier: the token stream keeps its
    shape, so the edit cannot make a syntax error (only the parser's recovery around an old one may differ)."""
    old = data[e.start : e.end]
    new = e.text.encode("utf-8", "surrogateescape")
    return (bool(_IDENT.match(old)) and bool(_IDENT.match(new)) and new.decode() not in KEYWORDS
            and not (e.start > 0 and _WORD.match(data, e.start - 1)) and not _WORD.match(data, e.end))


def errors_of(data: bytes) -> list[tuple[str, int, int]]:
    return error_nodes(parse(parse_buffer(data)))


@dataclass
class Shift:
    """Maps offsets of the input, outside the edits, to offsets of the output of non-overlapping edits."""

    ends: list[int]  # edits' end offsets (input), sorted
    deltas: list[int]  # cumulative size change up to and including edit i

    @classmethod
    def of(cls, edits: list[Edit]) -> "Shift":
        ends, deltas = [], []
        d = 0
        for e in sorted(set(edits), key=lambda e: (e.start, e.end)):
            d += len(e.text.encode("utf-8", "surrogateescape")) - (e.end - e.start)
            ends.append(e.end)
            deltas.append(d)
        return cls(ends, deltas)

    def map(self, pos: int) -> int:
        i = bisect.bisect_right(self.ends, pos) - 1
        return pos + (self.deltas[i] if i >= 0 else 0)


def output_spans(pairs: list[tuple[Edit, int]]) -> list[tuple[int, int, int]]:
    """(start, end, group) in the output of each applied (edit, group), sorted."""
    out: list[tuple[int, int, int]] = []
    d = 0
    last: Edit | None = None
    for e, g in sorted(pairs, key=lambda p: (p[0].start, p[0].end, p[1])):
        if last is not None and e == last:  # an identical edit shared by two groups is applied once
            out.append((out[-1][0], out[-1][1], g))
            continue
        n = len(e.text.encode("utf-8", "surrogateescape"))
        out.append((e.start + d, e.start + d + n, g))
        d += n - (e.end - e.start)
        last = e
    return out


def new_errors(before: list[tuple[str, int, int]], after: list[tuple[str, int, int]], shift: Shift) -> list[tuple[str, int, int]]:
    """Error nodes of the output that are not error nodes of the input moved by the edits."""
    old = {(k, shift.map(s), shift.map(e)) for k, s, e in before}
    return [x for x in after if x not in old]


def blame(errors: list[tuple[str, int, int]], spans: list[tuple[int, int, int]]) -> set[int]:
    """The groups to withdraw for new errors: `spans` are (output start, output end, group) of the applied
    edits, sorted; an error is blamed on the edits it touches, else on the nearest edit before it (a parser
    reports a syntax error at or after its cause), else on the first edit."""
    out: set[int] = set()
    starts = [s for s, _, _ in spans]
    for _, es, ee in errors:
        hit: set[int] = set()
        i = bisect.bisect_right(starts, ee) - 1
        while i >= 0 and spans[i][1] >= es:  # applied edits do not overlap: their ends are sorted too
            hit.add(spans[i][2])
            i -= 1
        if not hit:
            i = bisect.bisect_right(starts, es) - 1
            hit = {spans[i][2] if i >= 0 else spans[0][2]}
        out |= hit
    return out
