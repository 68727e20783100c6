"""Query captures in document order (parse/walk.captured): a QueryCursor's captures of a tree with errors come
out of order, and a matcher that stops at the first capture deciding something gave a different manual reason
for one file scanned alone and in a batch (bench/fuzz.py, seed 20261205, input 6031)."""

from __future__ import annotations

from cudamigrate.parse.treesitter import parse, query
from cudamigrate.parse.walk import captured

BROKEN_BLOCK = b"void f() {\n  int a = 0;\n  g(&a);\n  if (a > -1) std::b);\n  int a;\n  h(&a);\n}\n"


def test_captures_come_in_document_order_even_where_the_cursor_does_not():
    root = parse(BROKEN_BLOCK).root_node
    got = captured(query("(identifier) @id"), root, "id")
    assert [n.start_byte for n in got] == sorted(n.start_byte for n in got)
    assert [n.text for n in got] == [b"f", b"a", b"g", b"a", b"a", b"b", b"a", b"h", b"a"]
