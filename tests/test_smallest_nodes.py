"""`matchers.smallest_nodes`: one cursor over ranges in document order gives, for each, exactly the node
`descendant_for_byte_range` gives (the identifier lookup of every rule rests on it), on nested calls,
comments, strings, macros, preprocessor branches and broken code."""

from __future__ import annotations

import re

from cudamigrate.match.matchers import smallest_nodes
from cudamigrate.parse.treesitter import parse

NESTED = "void f(void* p, int n) {\n  " + "cudaMemsetAsync(" * 60 + "p" + ", 0, n, 0)" * 60 + ";\n}\n"
MIXED = """#include <cuda_runtime.h>
#define LAUNCH(k, s) k<<<1, 1, 0, s>>>()  // cudaStream_t in a comment
/* cudaMemcpyAsync(a, b, n, cudaMemcpyDefault, 0) in a block comment */
const char* s = "cudaThreadSynchronize()";
#if CUDART_VERSION < 13000
int x = cudaThreadSynchronize();
#else
int x = cudaDeviceSynchronize();
#endif
struct S { cudaStream_t stream; } st;
void g() { st.stream = 0; cudaStreamSynchronize(st.stream); auto l = [](cudaStream_t q) { return q; }; l(0); }
void broken( { cudaMemcpyAsync(0, 0, 4, cudaMemcpyDefault, 0
"""


def _check(code: str) -> int:
    data = code.encode()
    root = parse(data).root_node
    spans = [m.span() for m in re.finditer(rb"\b\w+\b", data)]
    got = list(smallest_nodes(root, spans))
    assert len(got) == len(spans)
    for (s, e), node in zip(spans, got, strict=True):
        want = root.descendant_for_byte_range(s, e)
        assert (node.start_byte, node.end_byte, node.type) == (want.start_byte, want.end_byte, want.type), (s, e)
    return len(spans)


def test_same_nodes_as_descendant_for_byte_range_on_nested_calls():
    assert _check(NESTED) == 5 + 60 * 4 + 2


def test_same_nodes_on_comments_strings_macros_branches_and_broken_code():
    assert _check(MIXED) == 70


def test_ranges_in_one_place_and_an_empty_list():
    data = b"int a = b + c;\n"
    root = parse(data).root_node
    assert [n.type for n in smallest_nodes(root, [(8, 9), (8, 9), (12, 13)])] == ["identifier"] * 3
    assert list(smallest_nodes(root, [])) == []
