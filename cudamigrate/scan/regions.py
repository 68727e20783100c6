"""Where in a file a match counts, and where its edits land: `#if 0` branches (code there is documentation, not
code) and the uses of token-pasting macros (a call seen in the view parse/pasting.py gives is edited through
the macro's argument). Apart from scan/engine.py, which asks them per match."""

from __future__ import annotations

import re

from ..findings.model import Edit
from ..match.edits import EditError
from ..parse import walk
from ..parse.pasting import unpaste
from ..parse.treesitter import Paste

# the `#if` token of the grammar (tree-sitter-c's preprocessor(): `#`, blanks, the word): without one there is no
# preproc_if node, and no query to compile (10 ms of a one-file run)
PREPROC_IF = re.compile(rb"#[ \t]*if(?![A-Za-z0-9_])")


IF_CONDITION_PATTERNS = (walk.FieldPattern("preproc_if", "condition"),)  # `(preproc_if condition: (_) @c) @if`


def disabled_ranges(tree) -> list[tuple[int, int]]:
    """Byte ranges of `#if 0` branches (not their `#else`): code there is documentation, not code.
    Computed once per file: walking each match's ancestors costs O(depth) per step in tree-sitter,
    which made deeply nested calls cubic."""
    out: list[tuple[int, int]] = []
    for _, node, cond in walk.field_matches(tree.root_node, IF_CONDITION_PATTERNS):
        if (cond.text or b"").strip() not in (b"0", b"(0)"):
            continue
        alt = node.child_by_field_name("alternative")
        out.append((cond.end_byte, alt.start_byte if alt is not None else node.end_byte))
    return sorted(out)


def unpasted(edits: list[Edit], unit_paste: Paste | None, pastes: tuple[Paste, ...]) -> list[Edit]:
    """Edits made in a view of the file that spells token-pasting macros' uses as their expansion (a pasted
    unit's, `unit_paste`, or the file's own parse, `pastes`), as edits of the file (parse/pasting.py's
    `unpaste`), or EditError saying why the rewrite is not one of the macro's argument alone."""
    if unit_paste is None and not pastes:
        return edits
    out: list[Edit] = []
    for e in edits:
        got: tuple[int, int, str] | str | None = None
        if unit_paste is not None:
            got = unpaste(e.start, e.end, e.text, unit_paste)
        else:
            for p in pastes:
                got = unpaste(e.start, e.end, e.text, p, in_file=True)
                if got is not None:
                    break
        if isinstance(got, str):
            raise EditError(got)
        out.append(e if got is None else Edit(*got))
    return out


def paste_at(pastes: tuple[Paste, ...], at: int) -> Paste | None:
    """The token-pasting macro use of the file's view that holds offset `at`."""
    for p in pastes:
        if p.site[0] <= at < p.site[1]:
            return p
    return None


def in_disabled_block(ranges: list[tuple[int, int]], start: int) -> bool:
    return any(s <= start < e for s, e in ranges)
