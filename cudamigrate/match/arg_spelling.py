"""How an argument is spelled: the `is:` vocabulary of `where:` conditions (`null`, `null_stream`, `zero`, ...).

Apart from `conditions.py` so that the semantic `where:` condition (`match/semantic.py`), which falls back to
these spellings when libclang has no value, and `conditions.py`, which dispatches to it, import it without a cycle.
"""

from __future__ import annotations

import tree_sitter as ts

from .context import node_text, normalize

NULL_SPELLINGS = {"0", "NULL", "nullptr", "0L", "0UL", "0U", "0LL", "__null", "(void*)0", "((void*)0)"}
NULL_STREAMS = NULL_SPELLINGS | {
    "cudaStreamLegacy", "CU_STREAM_LEGACY", "(cudaStream_t)0", "(cudaStream_t)NULL", "(cudaStream_t)nullptr",
    "static_cast<cudaStream_t>(0)", "static_cast<cudaStream_t>(NULL)", "static_cast<cudaStream_t>(nullptr)",
    "cudaStream_t(0)", "cudaStream_t()", "cudaStream_t{}", "cudaStream_t{0}", "(CUstream)0", "(CUstream)NULL",
    "reinterpret_cast<cudaStream_t>(0)", "(cudaStream_t)(0)",
}
LITERAL_TYPES = {"number_literal", "string_literal", "char_literal", "true", "false", "null", "concatenated_string"}


class ConditionError(Exception):
    pass


def arg_is(node: ts.Node, what: str) -> bool:
    text = normalize(node_text(node))
    while text.startswith("(") and text.endswith(")") and text.count("(") == 1:
        text = text[1:-1]
    if what == "null_stream":
        return text in NULL_STREAMS
    if what == "null":
        return text in NULL_SPELLINGS
    if what == "literal":
        return node.type in LITERAL_TYPES
    if what == "identifier":
        return node.type == "identifier"
    if what == "address_of":
        return node.type == "pointer_expression" and text.startswith("&")
    if what == "zero":
        return text in ("0", "0u", "0U", "0L", "0UL")
    raise ConditionError(f"unknown `is:` value {what!r}")
