"""Per-file facts that several rules need, computed once and lazily."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import tree_sitter as ts

from ..parse.treesitter import Unit, query
from ..source import SourceFile

LOOP_TYPES = {"for_statement", "for_range_loop", "while_statement", "do_statement"}
_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")
_WS = re.compile(r"\s+")


def node_text(node: ts.Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


def normalize(text: str) -> str:
    """Whitespace- and comment-free spelling used to compare expressions."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)
    return _WS.sub("", text)


def normalize_name(text: str) -> str:
    """`::thrust :: reduce<int>` -> `thrust::reduce`."""
    text = normalize(text)
    prev = None
    while prev != text:
        prev, text = text, _TEMPLATE_ARGS.sub("", text)
    return text[2:] if text.startswith("::") else text


def named_children(node: ts.Node | None) -> list[ts.Node]:
    if node is None:
        return []
    return [c for c in node.named_children if c.type != "comment"]


@dataclass
class Scope:
    """Where a node sits: enclosing function and loop facts."""

    function: ts.Node | None = None
    function_name: str | None = None
    qualifiers: frozenset[str] = frozenset()
    loop_depth: int = 0
    in_lambda: bool = False

    @property
    def is_kernel(self) -> bool:
        return "__global__" in self.qualifiers

    @property
    def is_device(self) -> bool:
        return "__device__" in self.qualifiers and "__host__" not in self.qualifiers

    @property
    def is_host(self) -> bool:
        return self.function is not None and not self.is_kernel and not self.is_device

    @property
    def is_main(self) -> bool:
        return self.function_name == "main"


def function_name_of(fn: ts.Node) -> str | None:
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type not in ("function_declarator",):
        nxt = decl.child_by_field_name("declarator")
        if nxt is None:
            break
        decl = nxt
    if decl is not None and decl.type == "function_declarator":
        name = decl.child_by_field_name("declarator")
        if name is not None:
            return normalize_name(node_text(name))
    return None


def scope_of(node: ts.Node) -> Scope:
    loops = 0
    in_lambda = False
    cur = node.parent
    while cur is not None:
        t = cur.type
        if t in LOOP_TYPES:
            # a node in a for-initializer is not "in the loop"
            loops += 1
        elif t == "lambda_expression":
            in_lambda = True
        elif t == "function_definition":
            name = function_name_of(cur)
            if name == "__cudamigrate_macro__":
                return Scope(loop_depth=loops, in_lambda=in_lambda)
            quals = frozenset(
                c.type if not c.is_named else node_text(c)
                for c in cur.children
                if c.type in ("__global__", "__device__", "__host__", "storage_class_specifier", "attribute_specifier")
            )
            return Scope(cur, name, quals, loops, in_lambda)
        cur = cur.parent
    return Scope(loop_depth=loops, in_lambda=in_lambda)


@dataclass
class FileContext:
    source: SourceFile
    units: list[Unit]
    options: dict[str, Any] = field(default_factory=dict)
    target: tuple[int, int] = (13, 0)
    semantic: Any = None  # semantic.SemanticContext in semantic mode

    @property
    def main(self) -> Unit:
        return self.units[0]

    @property
    def ext(self) -> str:
        return self.source.path.suffix.lower()

    @property
    def is_cuda_file(self) -> bool:
        return self.ext in (".cu", ".cuh")

    @cached_property
    def calls(self) -> dict[str, list[tuple[Unit, ts.Node]]]:
        """Every call in the file by normalized callee name (incl. macro bodies)."""
        out: dict[str, list[tuple[Unit, ts.Node]]] = {}
        q = query("(call_expression function: (_) @fn) @call")
        for unit in self.units:
            for _, caps in ts.QueryCursor(q).matches(unit.root):
                name = normalize_name(node_text(caps["fn"][0]))
                out.setdefault(name, []).append((unit, caps["call"][0]))
        return out

    @cached_property
    def using_namespaces(self) -> set[str]:
        out: set[str] = set()
        for m in re.finditer(rb"using\s+namespace\s+([A-Za-z_][\w:]*)\s*;", self.source.data):
            out.add(m.group(1).decode())
        return out

    @cached_property
    def using_names(self) -> set[str]:
        """`using thrust::reduce;` -> {'thrust::reduce'}"""
        out: set[str] = set()
        for m in re.finditer(rb"using\s+(?!namespace\b)((?:[A-Za-z_]\w*\s*::\s*)+[A-Za-z_]\w*)\s*;", self.source.data):
            out.add(normalize_name(m.group(1).decode()))
        return out

    @cached_property
    def namespace_aliases(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for m in re.finditer(rb"namespace\s+([A-Za-z_]\w*)\s*=\s*([A-Za-z_][\w:\s]*?)\s*;", self.source.data):
            out[m.group(1).decode()] = normalize_name(m.group(2).decode())
        return out

    @cached_property
    def defined_functions(self) -> set[str]:
        """Names of functions defined (with a body) or declared in this file."""
        out: set[str] = set()
        q = query("(function_definition declarator: (_) @d) (declaration declarator: (function_declarator) @d) "
                  "(field_declaration declarator: (function_declarator) @d)")
        for _, caps in ts.QueryCursor(q).matches(self.main.root):
            d = caps["d"][0]
            anc = d.parent
            nested = False
            while anc is not None:
                if anc.type in ("namespace_definition", "class_specifier", "struct_specifier", "union_specifier"):
                    nested = True
                    break
                anc = anc.parent
            if nested:
                continue  # my::reduce or a method: never the global API name
            while d is not None and d.type != "function_declarator":
                d = d.child_by_field_name("declarator")
            if d is not None:
                nm = d.child_by_field_name("declarator")
                if nm is not None and "::" not in normalize_name(node_text(nm)):
                    out.add(normalize_name(node_text(nm)))
        return out

    @cached_property
    def includes(self) -> list[str]:
        return [m.group(1).decode() for m in re.finditer(rb'#\s*include\s*[<"]([^>"]+)[>"]', self.source.data)]

    def resolve(self, written: str) -> set[str]:
        """Fully qualified names a written callee/type name may denote in this file."""
        out = {written}
        parts = written.split("::")
        if len(parts) > 1 and parts[0] in self.namespace_aliases:
            out.add("::".join([self.namespace_aliases[parts[0]], *parts[1:]]))
        for ns in self.using_namespaces:
            ns = self.namespace_aliases.get(ns, ns)
            out.add(f"{ns}::{written}")
        for full in self.using_names:
            if full.split("::")[-1] == parts[0]:
                out.add("::".join([full, *parts[1:]]))
        return out
