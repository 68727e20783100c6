"""Per-file facts that several rules need, computed once and lazily."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import tree_sitter as ts

from ..parse import walk
from ..parse.treesitter import Paste, Unit, note_deep, parent_of
from ..parse.compile_db import Define
from ..read.source import SourceFile
from ..read.unit_defines import file_defines

LOOP_TYPES = {"for_statement", "for_range_loop", "while_statement", "do_statement"}
_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")
_WS = re.compile(r"\s+")


def node_text(node: ts.Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


def source_text(raw: bytes) -> str:
    """Bytes of the scanned file as text, read the way `node_text` reads nodes: a name, alias or string with an
    invalid UTF-8 byte must not raise (that would lose every finding of the rule for the file)."""
    return raw.decode("utf-8", "replace")


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


_SCOPES: dict[int, tuple[ts.Node, Scope]] = {}  # node id -> (node, scope_of(node)); the node keeps its tree alive


def reset_scope_cache() -> None:
    """Forget memoized scopes (the engine calls it before each file: node ids are only unique in live trees)."""
    _SCOPES.clear()
    _OUTER_LOOPS.clear()


_OUTER_LOOPS: dict[int, tuple[ts.Node, ts.Node | None]] = {}  # node id -> (node, outermost loop from it up)
_LOOP_NODE_TYPES = ("for_statement", "for_range_loop", "while_statement", "do_statement")


def outer_loop_of(node: ts.Node) -> ts.Node | None:
    """The outermost `for`/`while`/`do` around `node` within its function (or lambda). Memoized per ancestor, like
    `scope_of`: walking every ancestor per finding made 3,300 calls inside 16,500 parentheses quadratic."""
    path: list[ts.Node] = []  # ancestors without a memoized answer, innermost first
    cur = parent_of(node)
    outer: ts.Node | None = None
    while cur is not None and cur.type not in ("function_definition", "lambda_expression"):
        hit = _OUTER_LOOPS.get(cur.id)
        if hit is not None:
            outer = hit[1]
            break
        path.append(cur)
        cur = parent_of(cur)
    for p in reversed(path):  # from the outermost: an outer loop, once found, stays the answer below it
        if outer is None and p.type in _LOOP_NODE_TYPES:
            outer = p
        _OUTER_LOOPS[p.id] = (p, outer)
    return outer


def _scope_below(p: ts.Node, child: ts.Node, above: Scope) -> Scope:
    """The scope of `child`, given that of its parent `p` (`above`)."""
    t = p.type
    if t == "function_definition":
        name = function_name_of(p)
        if name == "__cudamigrate_macro__":
            return Scope()
        quals = frozenset(
            c.type if not c.is_named else node_text(c)
            for c in p.children
            if c.type in ("__global__", "__device__", "__host__", "storage_class_specifier", "attribute_specifier")
        )
        return Scope(p, name, quals, 0, False)
    loops, in_lambda = above.loop_depth, above.in_lambda
    if t in LOOP_TYPES:
        # a for-initializer and a range-for's range run once: they are not "in the loop"
        once = p.child_by_field_name("initializer") if t == "for_statement" else (
            p.child_by_field_name("right") if t == "for_range_loop" else None)
        if once is None or not (once.start_byte == child.start_byte and once.end_byte == child.end_byte):
            loops += 1
    elif t == "lambda_expression":
        in_lambda = True
    if (loops, in_lambda) == (above.loop_depth, above.in_lambda):
        return above
    return Scope(above.function, above.function_name, above.qualifiers, loops, in_lambda)


def scope_of(node: ts.Node) -> Scope:
    """The function around `node`, the loops between them and whether a lambda is between them.

    Memoized per node: the scope of a node follows from its parent's, so matching every call of a deeply
    nested expression walks each ancestor once instead of once per call."""
    path: list[ts.Node] = []  # node and its ancestors that have no memoized scope yet, innermost first
    cur = node
    base: Scope | None = None
    while True:
        hit = _SCOPES.get(cur.id)
        if hit is not None:
            base = hit[1]
            break
        path.append(cur)
        p = parent_of(cur)
        if p is None:
            break
        cur = p
    note_deep(len(path))
    if base is None:  # reached the root: no function, no loop
        parent = path.pop()
        base = Scope()
        _SCOPES[parent.id] = (parent, base)
    else:
        parent = cur
    scope = base
    for child in reversed(path):
        scope = _scope_below(parent, child, scope)
        _SCOPES[child.id] = (child, scope)
        parent = child
    return scope


# `(function_definition declarator: (_) @d) (declaration declarator: (function_declarator) @d)
#  (field_declaration declarator: (function_declarator) @d)`, walked (parse/walk.py says why)
DEFINED_FUNCTION_PATTERNS = (
    walk.FieldPattern("function_definition", "declarator"),
    walk.FieldPattern("declaration", "declarator", "function_declarator"),
    walk.FieldPattern("field_declaration", "declarator", "function_declarator"),
)
CALL_PATTERNS = (walk.FieldPattern("call_expression", "function"),)  # `(call_expression function: (_) @fn) @call`


@dataclass
class FileContext:
    source: SourceFile
    units: list[Unit]
    options: dict[str, Any] = field(default_factory=dict)
    target: tuple[int, int] = (13, 0)
    semantic: Any = None  # semantic.SemanticContext in semantic mode
    project: Any = None  # project_index.ProjectIndex of the run: project headers, members, includers
    api_names: frozenset[str] = frozenset()  # identifiers the prefilter found (names rules look for)
    include_roots: tuple[str, ...] = ()  # where the project's headers live (the scanned paths), for ppenv
    keep_compat: tuple[int, int] | None = None  # `fix --keep-compat`: oldest toolkit the code must build with
    pastes: tuple[Paste, ...] = ()  # token-pasting macro uses the file's parse spells as their expansion (parse/pasting.py)
    compile_db: str | None = None  # the run's compile database (Options.compile_db), for `command_defines`

    def command_defines(self, path: Path | None = None) -> Callable[[], tuple[Define, ...]]:
        """The `-D`/`-U` flags `path` (this file by default) is compiled with, asked when a preprocessor walk
        needs them (read/unit_defines.py): every walk of the scan (pasting macros, includers' macros, version
        guards) starts from these, so they agree on a file's branches."""
        where = self.source.path if path is None else path

        def flags() -> tuple[Define, ...]:
            return file_defines(self.project, self.compile_db, where)

        return flags

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
        for unit in self.units:
            for _, call, fn in walk.field_matches(unit.root, CALL_PATTERNS):
                name = normalize_name(node_text(fn))
                out.setdefault(name, []).append((unit, call))
        return out

    @cached_property
    def using_namespaces(self) -> set[str]:
        out: set[str] = set()
        for m in re.finditer(rb"using\s+namespace\s+([A-Za-z_][\w:]*)\s*;", self.source.data):
            out.add(source_text(m.group(1)))
        return out

    @cached_property
    def using_names(self) -> set[str]:
        """`using thrust::reduce;` -> {'thrust::reduce'}"""
        out: set[str] = set()
        for m in re.finditer(rb"using\s+(?!namespace\b)((?:[A-Za-z_]\w*\s*::\s*)+[A-Za-z_]\w*)\s*;", self.source.data):
            out.add(normalize_name(source_text(m.group(1))))
        return out

    @cached_property
    def namespace_aliases(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for m in re.finditer(rb"namespace\s+([A-Za-z_]\w*)\s*=\s*([A-Za-z_][\w:\s]*?)\s*;", self.source.data):
            out[source_text(m.group(1))] = normalize_name(source_text(m.group(2)))
        return out

    @cached_property
    def defined_functions(self) -> set[str]:
        """Names of functions defined (with a body) or declared in this file."""
        out: set[str] = set()
        for _, _, d in walk.field_matches(self.main.root, DEFINED_FUNCTION_PATTERNS):
            anc = parent_of(d)
            nested = False
            while anc is not None:
                if anc.type in ("namespace_definition", "class_specifier", "struct_specifier", "union_specifier"):
                    nested = True
                    break
                anc = parent_of(anc)
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
        return [source_text(m.group(1)) for m in re.finditer(rb'#\s*include\s*[<"]([^>"]+)[>"]', self.source.data)]

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


# --------------------------------------------------------------------------- declared types
# `(declaration type: (_) @t) @decl (parameter_declaration type: (_) @t) @decl
#  (optional_parameter_declaration type: (_) @t) @decl (field_declaration type: (_) @t) @decl`, walked
DECL_TYPE_PATTERNS = tuple(walk.FieldPattern(t, "type") for t in (
    "declaration", "parameter_declaration", "optional_parameter_declaration", "field_declaration"))
_ITER_CALLS = {"begin", "end", "cbegin", "cend", "rbegin", "rend", "crbegin", "crend", "data", "raw_pointer_cast"}


def declarator_name(d: ts.Node) -> tuple[str, bool] | None:
    """(variable name, declares an object) of one declarator; pointers and references declare no object."""
    owns = True
    while d.type in ("init_declarator", "reference_declarator", "pointer_declarator", "array_declarator"):
        if d.type in ("reference_declarator", "pointer_declarator"):
            owns = False
        nxt = d.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in d.named_children if c.type.endswith("declarator") or c.type == "identifier"), None)
        if nxt is None:
            return None
        d = nxt
    if d.type == "function_declarator" and parent_of(d) is not None and parent_of(d).type == "declaration" \
            and scope_of(d).function is not None:
        # `thrust::device_vector<int> v(n);` in a block parses like a function declaration (the vexing parse);
        # C++ forbids local function definitions, and local declarations of functions are rare
        inner = d.child_by_field_name("declarator")
        if inner is not None and inner.type == "identifier":
            return node_text(inner), owns
    if d.type in ("identifier", "field_identifier"):
        return node_text(d), owns
    return None


def declarators(decl: ts.Node) -> list[ts.Node]:
    return [c for c in decl.children_by_field_name("declarator")]


def base_variable(node: ts.Node | None) -> ts.Node | None:
    """The variable an iterator/pointer expression is built from: `v.begin() + 1`, `std::end(v)`, `raw_pointer_cast(v.data())`."""
    cur = node
    while cur is not None:
        t = cur.type
        if t == "identifier":
            return cur
        if t in ("parenthesized_expression", "cast_expression"):
            cur = cur.child_by_field_name("value") or (cur.named_children[-1] if cur.named_children else None)
        elif t == "binary_expression" and cur.child_by_field_name("operator") is not None \
                and node_text(cur.child_by_field_name("operator")) in ("+", "-"):
            cur = cur.child_by_field_name("left")
        elif t == "call_expression":
            fn = cur.child_by_field_name("function")
            args = named_children(cur.child_by_field_name("arguments"))
            if fn is not None and fn.type == "field_expression":
                f = fn.child_by_field_name("field")
                if f is None or node_text(f) not in _ITER_CALLS:
                    return None
                cur = fn.child_by_field_name("argument")
            elif fn is not None and normalize_name(node_text(fn)).split("::")[-1] in _ITER_CALLS and len(args) == 1:
                cur = args[0]
            else:
                return None
        else:
            return None
    return None


ALIAS_SPAN = 4096  # longest `using`/`typedef` body looked at: each is then linear, whatever follows it
_USING_ALIAS = re.compile(rb"\busing\s+([A-Za-z_]\w*)\s*=\s*(?:typename\s+)?([^;{}]{1,%d});" % ALIAS_SPAN)
_TYPEDEF = re.compile(rb"\btypedef\s+(?:typename\s+)?([^;{}]{1,%d});" % ALIAS_SPAN)
_TRAILING_WORD = re.compile(rb"\s*(\w+)")  # matched on the reversed body: its last word
_ALIASES: list[Any] = [None, {}]  # (bytes, aliases) of the last file: every matcher of a file asks again


def type_aliases(data: bytes) -> dict[str, str]:
    """`using dvec = thrust::device_vector<float>;` and `typedef ... dvec;` -> {'dvec': 'thrust::device_vector'}.

    Linear in the file: the typedef's alias is taken as the last word of its body (found on the reversed
    body), where a lazy `([^;{}]+?)\\s*\\b(\\w+)\\s*;` backtracked over every split of a long body (a 20 KB
    run of letters after `typedef` took 1.8 s); remembered for the last file's bytes (16 calls per file)."""
    if _ALIASES[0] is data:
        return dict(_ALIASES[1])
    out: dict[str, str] = {}
    for m in _USING_ALIAS.finditer(data):
        out[source_text(m.group(1))] = normalize_name(source_text(m.group(2)))
    for m in _TYPEDEF.finditer(data):
        body = m.group(1)
        w = _TRAILING_WORD.match(body[::-1])
        if w is None:
            continue
        name = w.group(1)[::-1]
        start = len(body) - w.end()
        target = body[:start]
        if not (name[:1].isalpha() or name[:1] == b"_") or not target.strip():
            continue
        out[source_text(name)] = normalize_name(source_text(target))
    _ALIASES[:] = [data, out]
    return dict(out)


def declaration_index(root: ts.Node) -> dict[str, list[tuple[ts.Node, ts.Node, bool, int | None]]]:
    """Name -> [(declaration, type node, declares an object, start of its enclosing function)], in file order."""
    out: dict[str, list[tuple[ts.Node, ts.Node, bool, int | None]]] = {}
    for _, decl, tn in walk.field_matches(root, DECL_TYPE_PATTERNS):
        dfn = scope_of(decl).function
        for d in declarators(decl):
            got = declarator_name(d)
            if got is not None:
                out.setdefault(got[0], []).append((decl, tn, got[1], dfn.start_byte if dfn is not None else None))
    return out


_DECL_INDEXES: list[tuple[ts.Node, dict[str, list[tuple[ts.Node, ts.Node, bool, int | None]]]]] = []
_DECL_INDEXED_ROOTS = 4  # the roots indexed last (a file, its macro bodies, a header), most recent first


def _recent_declaration_index(root: ts.Node) -> dict[str, list[tuple[ts.Node, ts.Node, bool, int | None]]]:
    """`declaration_index(root)`, kept for the last few roots: callers without a file context (the device
    property analysis) indexed the whole tree once per lookup, N lookups in a file costing N trees."""
    for i, (r, index) in enumerate(_DECL_INDEXES):
        if r == root:
            if i:
                _DECL_INDEXES.insert(0, _DECL_INDEXES.pop(i))
            return index
    index = declaration_index(root)
    _DECL_INDEXES.insert(0, (root, index))
    del _DECL_INDEXES[_DECL_INDEXED_ROOTS:]
    return index


_DECL_TYPES = frozenset(p.node_type for p in DECL_TYPE_PATTERNS)
_NAMED_DECLS: list[tuple[ts.Node, dict[str, list[tuple[ts.Node, ts.Node, bool, int | None]]]]] = []
_NAMES_BEFORE_INDEX = 32  # names looked up one by one in a tree before its whole index is built instead


def declarations_named(root: ts.Node, name: str) -> list[tuple[ts.Node, ts.Node, bool, int | None]] | None:
    """`declaration_index(root).get(name, [])`, from the declarations that hold a leaf spelled `name`
    (walk.holders) instead of every declaration of the tree; None when the name occurs too often or too deep
    for that (or two type nodes tie in document order), and the caller indexes the tree."""
    decls = walk.holders(root, name, _DECL_TYPES)
    if decls is None:
        return None
    pairs = sorted((((tn.start_byte, -tn.end_byte), tn, decl) for decl in decls
                    for tn in decl.children_by_field_name("type") if tn.is_named), key=lambda p: p[0])
    if len({k for k, _, _ in pairs}) != len(pairs):
        return None
    out = []
    for _, tn, decl in pairs:  # the index's order: the type nodes' pre-order
        dfn = scope_of(decl).function
        for d in declarators(decl):
            got = declarator_name(d)
            if got is not None and got[0] == name:
                out.append((decl, tn, got[1], dfn.start_byte if dfn is not None else None))
    return out


def _recent_declarations(root: ts.Node, name: str) -> list[tuple[ts.Node, ts.Node, bool, int | None]]:
    """The declarations of `name` in `root`'s index: from the whole index when it is built, else found for
    this name alone (kept for the last few roots) until a tree has been asked about _NAMES_BEFORE_INDEX names."""
    for r, index in _DECL_INDEXES:
        if r == root:
            return index.get(name, [])
    named = next((n for r, n in _NAMED_DECLS if r == root), None)
    if named is None:
        named = {}
        _NAMED_DECLS.insert(0, (root, named))
        del _NAMED_DECLS[_DECL_INDEXED_ROOTS:]
    if name not in named:
        got = declarations_named(root, name) if len(named) < _NAMES_BEFORE_INDEX else None
        if got is None:
            return _recent_declaration_index(root).get(name, [])
        named[name] = got
    return named[name]


def declaration_of(root: ts.Node, ident: str, at: ts.Node,
                   index: dict[str, list[tuple[ts.Node, ts.Node, bool, int | None]]] | None = None
                   ) -> tuple[ts.Node, ts.Node, bool] | None:
    """(declaration, its type node, declares an object) of the closest declaration of `ident` before `at`.

    Declarations inside a function that does not enclose `at` are skipped, so a `v` of another function
    is never taken for this one's. Pass `index` (from `declaration_index(root)`) to avoid re-querying."""
    fn = scope_of(at).function
    best = None
    for decl, tnode, owns, dfn in (index.get(ident, []) if index is not None else _recent_declarations(root, ident)):
        if decl.start_byte > at.start_byte:
            continue
        if dfn is not None and (fn is None or dfn != fn.start_byte):
            continue
        if best is None or decl.start_byte > best[0].start_byte:
            best = (decl, tnode, owns)
    return best


def declared_types(ctx: FileContext, unit: Unit, ident: str, at: ts.Node) -> set[str]:
    """Every spelling the declared type of `ident` may denote: written, alias-expanded, namespace-resolved."""
    cache = ctx.__dict__.setdefault("_decl_index", {})
    if id(unit) not in cache:
        cache[id(unit)] = declaration_index(unit.root)  # one query per unit, not one per lookup
    got = declaration_of(unit.root, ident, at, cache[id(unit)])
    if got is None:
        return set()
    t = normalize_name(node_text(got[1]))
    aliases = type_aliases(ctx.source.data)
    seen = {t}
    while t in aliases and aliases[t] not in seen:
        t = aliases[t]
        seen.add(t)
    out: set[str] = set()
    for x in seen:
        out |= ctx.resolve(x)
    return out
