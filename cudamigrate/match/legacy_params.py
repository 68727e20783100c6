"""Stream declarations that only ever hold the legacy default stream, read from one file's tree (both modes).

Why: `streams.py` counts a stream parameter of a function definition, and a stream variable at file scope, as
"another blocking stream" that the legacy stream meets, because in general their value is unknown. Single-stream
code often has both and still only one stream: a wrapper `void upload(float *d, cudaStream_t s = 0)` that every
caller leaves defaulted or passes `0`, `NULL`, `nullptr` or a macro that is 0; a `static cudaStream_t g_stream =
0;` never assigned. Counting those as other streams put legacy-stream findings on single-stream code (issue 25:
tree-sitter mode flagged what semantic mode, which evaluates the arguments, did not).

What counts, decided conservatively on the file's own text (a greatest fixpoint, so that a wrapper forwarding its
stream to another wrapper, or calling itself, keeps the answer):

* a parameter (plain name, no pointer or reference) of a function definition, when the function's name occurs in
  the file only where it is declared, defined or called (never in a macro body, an address or a callback), it is
  called at least once, the parameter is never written in the body (assigned, address taken, bound to a
  reference, incremented) and every call passes the legacy stream or omits the argument where every declaration
  of the name that gives a default gives a null one (a prototype's default counts);
* a file-scope stream variable defined in the file (not `extern`), initialized with the legacy stream (or `static`
  and left zero-initialized), declared once and never written in the file (assigned, address taken, bound to a
  reference, passed to a function that may take it by reference).

"The legacy stream" is an argument spelled as one (`0`, `NULL`, `nullptr`, `cudaStreamLegacy`, their casts, `{}`),
an object-like macro of the file whose every definition is one, a stream variable of the calling function that is
initialized with one and never written there, or a parameter or file-scope variable that itself qualifies.
Calls are matched by name only, so overloads are pooled: one call passing another stream keeps the parameter of
every overload of that name a reason.

Semantic mode adds libclang's whole-TU view of the same question (`FileFacts.null_stream_params`: macros from
headers, values libclang evaluates); streams.py takes the union, so semantic mode never counts a declaration
that tree-sitter mode proves legacy-only.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import tree_sitter as ts

from .arg_spelling import NULL_STREAMS
from .context import normalize

STREAM_TYPES = {"cudaStream_t", "CUstream", "::cudaStream_t", "::CUstream"}
_FUNCTION_DECLARATOR_WRAPPERS = ("pointer_declarator", "reference_declarator", "parenthesized_declarator")
_CALLEE_WRAPPERS = ("qualified_identifier", "template_function", "field_expression")
# APIs and library calls take a stream by value: passing a local stream to them is a read
_API_PREFIX = re.compile(r"^(cuda|cu[A-Z]|cublas|cufft|cusparse|cusolver|curand|npp|nccl|thrust|cub)|^on$")
_STRIP = re.compile(r'^[ \t]*#[ \t]*include[^\n]*|//[^\n]*|/\*.*?\*/|"[^"\\\n]*(?:\\.[^"\\\n]*)*"|\'[^\'\\\n]*(?:\\.[^\'\\\n]*)*\'', re.S | re.M)
MAX_OVERLOADS = 32
_WORD = re.compile(r"[A-Za-z_$][\w$]*")
Deps = frozenset  # offsets of the candidates a value needs to be legacy-only too
_NONE: frozenset[int] = frozenset()


def _text(n: ts.Node | None) -> str:
    return n.text.decode("utf-8", "replace") if n is not None and n.text is not None else ""


def _walk(node: ts.Node) -> Iterator[tuple[ts.Node, ts.Node | None]]:
    """Every node under `node` in pre-order with the innermost function_definition around it (a cursor walk)."""
    cur = node.walk()
    depth = 0
    fns: list[tuple[int, ts.Node]] = []  # (depth, function_definition) of the definitions entered
    while True:
        n = cur.node
        if n is not None:
            yield n, fns[-1][1] if fns else None
            if n.type == "function_definition":
                fns.append((depth, n))
        if cur.goto_first_child():
            depth += 1
            continue
        while not cur.goto_next_sibling():
            if not cur.goto_parent():
                return
            depth -= 1
            while fns and fns[-1][0] >= depth:
                fns.pop()
        while fns and fns[-1][0] >= depth:
            fns.pop()  # a sibling of the definition: outside it


def _strip_outer_parens(t: str) -> str:
    """`((cudaStream_t)0)` -> `(cudaStream_t)0`: parentheses around the whole text, as often as they enclose it."""
    while t.startswith("(") and t.endswith(")"):
        depth = 0
        for i, ch in enumerate(t):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and i < len(t) - 1:
                return t  # the first `(` closes before the end: `(cudaStream_t)0`
        t = t[1:-1].strip()
    return t


def _unparen(n: ts.Node) -> ts.Node:
    while n.type == "parenthesized_expression" and n.named_child_count == 1:
        n = n.named_children[0]
    return n


def _is_stream_type(decl: ts.Node) -> bool:
    return normalize(_text(decl.child_by_field_name("type"))) in STREAM_TYPES


@dataclass
class _Function:
    """One function definition or declaration: its name node and parameter list."""

    name: ts.Node
    params: list[ts.Node]
    definition: ts.Node | None  # the function_definition (None: a prototype)


@dataclass
class _Candidate:
    name: str
    offset: int  # start of the declared name: where libclang locates the declaration
    values: list[tuple[ts.Node, ts.Node | None]] = field(default_factory=list)  # (expression, calling function)
    known: bool = True  # False: some value is not an expression that can be judged (no default, odd use)


def _function_declarator(d: ts.Node | None) -> ts.Node | None:
    while d is not None and d.type in _FUNCTION_DECLARATOR_WRAPPERS:
        d = d.child_by_field_name("declarator") or next((c for c in d.named_children if c.type.endswith("declarator")),
                                                        None)
    return d if d is not None and d.type == "function_declarator" else None


def _decl_name(fd: ts.Node) -> ts.Node | None:
    """The identifier naming a function declarator (`f`, `S::f`, a method's field_identifier)."""
    n = fd.child_by_field_name("declarator")
    while n is not None and n.type in ("qualified_identifier", "template_function"):
        n = n.child_by_field_name("name")
    return n if n is not None and n.type in ("identifier", "field_identifier") else None


def _params(fd: ts.Node) -> list[ts.Node]:
    pl = fd.child_by_field_name("parameters")
    if pl is None:
        return []
    return [c for c in pl.named_children if c.type in ("parameter_declaration", "optional_parameter_declaration",
                                                          "variadic_parameter_declaration")]


def _plain_name(decl: ts.Node) -> ts.Node | None:
    """The name of a declarator that declares a stream object itself (no pointer, reference or array)."""
    d = decl.child_by_field_name("declarator")
    if d is not None and d.type == "init_declarator":
        d = d.child_by_field_name("declarator")
    return d if d is not None and d.type == "identifier" else None


def _callee_name(call: ts.Node) -> ts.Node | None:
    f = call.child_by_field_name("function")
    while f is not None and f.type in _CALLEE_WRAPPERS:
        f = f.child_by_field_name("field" if f.type == "field_expression" else "name")
    return f if f is not None and f.type in ("identifier", "field_identifier") else None


def _enclosing_function(n: ts.Node) -> ts.Node | None:
    p = n.parent
    while p is not None:
        if p.type == "function_definition":
            return p
        if p.type == "lambda_expression":
            return None  # a lambda's own variables and parameters are not looked into
        p = p.parent
    return None


def _declaration_of_name(n: ts.Node) -> ts.Node | None:
    """The declaration whose declarator names `n` (`cudaStream_t n = 0, m;`), else None."""
    p = n.parent
    if p is not None and p.type == "init_declarator" and p.child_by_field_name("declarator") == n:
        n, p = p, p.parent
    if p is not None and p.type == "declaration" and n in p.children_by_field_name("declarator"):
        return p
    return None


def _is_write(ident: ts.Node) -> bool:
    """`x = ...`, `&x`, `x++`, `T &r = x`: the variable may change (or escape) here."""
    p = ident.parent
    if p is None:
        return False
    if p.type == "assignment_expression":
        return p.child_by_field_name("left") == ident
    if p.type == "pointer_expression":
        return _text(p).lstrip().startswith("&")
    if p.type == "update_expression":
        return True
    if p.type == "init_declarator" and p.child_by_field_name("value") == ident:
        d = p.child_by_field_name("declarator")
        return d is not None and d.type == "reference_declarator"
    return False


class LegacyOnly:
    """The analysis of one tree; `offsets()` answers it."""

    def __init__(self, root: ts.Node) -> None:
        self.root = root
        self.macros: dict[str, list[str]] = {}
        self.functions: dict[str, list[_Function]] = {}
        self.calls: dict[str, list[ts.Node]] = {}
        self.idents: dict[str, list[ts.Node]] = {}
        self.idents_in: dict[tuple[int, str], list[ts.Node]] = {}  # (innermost function_definition id, name) -> uses
        self.file_vars: dict[str, ts.Node] = {}  # name -> init_declarator/declarator node of a file-scope stream
        self.file_var_names: dict[str, int] = {}  # name -> how many file-scope declarations of it
        self.params_of: dict[int, dict[str, _Candidate]] = {}  # function_definition id -> name -> candidate
        self.candidates: dict[int, _Candidate] = {}  # offset -> candidate
        self._local_memo: dict[tuple[str, int], Deps | None | Literal[False]] = {}
        self._collect()

    # -- one pass over the tree
    def _collect(self) -> None:
        for n, fn in _walk(self.root):
            t = n.type
            if t in ("identifier", "field_identifier"):
                self.idents.setdefault(_text(n), []).append(n)
                self.idents_in.setdefault((fn.id if fn is not None else -1, _text(n)), []).append(n)
            elif t == "preproc_def":
                name, value = n.child_by_field_name("name"), n.child_by_field_name("value")
                self.macros.setdefault(_text(name), []).append(normalize(_text(value)) if value is not None else "")
            elif t == "call_expression":
                c = _callee_name(n)
                if c is not None:
                    self.calls.setdefault(_text(c), []).append(n)
            elif t == "function_declarator":
                name = _decl_name(n)
                if name is None:
                    continue
                owner = n.parent
                while owner is not None and owner.type in _FUNCTION_DECLARATOR_WRAPPERS:
                    owner = owner.parent
                definition = owner if owner is not None and owner.type == "function_definition" else None
                if owner is None or (definition is None and owner.type not in ("declaration", "field_declaration")):
                    continue  # a function-pointer parameter or type: not a function of this file
                self.functions.setdefault(_text(name), []).append(_Function(name, _params(n), definition))
            elif t == "declaration" and n.parent is not None and n.parent.type in ("translation_unit",
                                                                                     "declaration_list") \
                    and _is_stream_type(n):
                for d in n.children_by_field_name("declarator"):
                    nm = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
                    if nm is not None and nm.type == "identifier":
                        self.file_var_names[_text(nm)] = self.file_var_names.get(_text(nm), 0) + 1
                        self.file_vars[_text(nm)] = d

    # -- what counts as the legacy stream
    def _macro_null(self, name: str, depth: int) -> bool:
        bodies = self.macros.get(name)
        if not bodies or depth > 8:
            return False
        for b in bodies:
            b = _strip_outer_parens(b)
            if b in NULL_STREAMS or b in ("{}", "{0}"):
                continue
            if re.fullmatch(r"[A-Za-z_]\w*", b) and self._macro_null(b, depth + 1):
                continue
            return False
        return True

    def _local_deps(self, name: str, fn: ts.Node, depth: int) -> Deps | None | Literal[False]:
        """A stream variable of `fn` named `name`, null-initialized and never written there: the candidates its
        initializer needs (`_deps`); None when it is not such a variable; False when `fn` declares no variable of
        that name (the name is looked up further out)."""
        memo_key = (name, fn.id)
        if memo_key in self._local_memo:
            return self._local_memo[memo_key]
        self._local_memo[memo_key] = None  # a cycle through initializers (`a = b, b = a`) proves nothing
        got = self._local_deps_uncached(name, fn, depth)
        self._local_memo[memo_key] = got
        return got

    def _local_deps_uncached(self, name: str, fn: ts.Node, depth: int) -> Deps | None | Literal[False]:
        body = fn.child_by_field_name("body")
        if body is None:
            return False
        decls = []
        for n in self.idents_in.get((fn.id, name), []):
            if n.start_byte < body.start_byte or n.end_byte > body.end_byte:
                continue
            decl = _declaration_of_name(n)
            if decl is not None:
                decls.append((n, decl))
            elif _is_write(n) or self._passed_by_reference(n):
                return None
        if not decls:
            return False
        if len(decls) != 1 or not _is_stream_type(decls[0][1]):
            return None
        n = decls[0][0]
        init = n.parent.child_by_field_name("value") if n.parent is not None and n.parent.type == "init_declarator" \
            else None
        return None if init is None else self._deps(init, fn, depth + 1)

    def _passed_by_reference(self, ident: ts.Node) -> bool:
        """`f(x)` where `f` may take `x` by reference: an API takes streams by value; a function of this file whose
        parameter there is not a reference does too; anything else may write it."""
        p = ident.parent
        if p is None or p.type != "argument_list" or p.parent is None or p.parent.type != "call_expression":
            return False
        callee = _callee_name(p.parent)
        if callee is None:
            return True
        name = _text(callee)
        if _API_PREFIX.search(name):
            return False
        fns = self.functions.get(name)
        if not fns:
            return True
        idx = p.named_children.index(ident)
        for f in fns:
            if idx >= len(f.params):
                return True
            d = f.params[idx].child_by_field_name("declarator")
            if d is None or d.type not in ("identifier",):
                return True
        return False

    def _deps(self, expr: ts.Node, fn: ts.Node | None, depth: int = 0) -> Deps | None:
        """Is `expr` (evaluated in function `fn`) the legacy stream? None: no (or unknown); else the candidates
        (offsets) that must all be legacy-only for it to be (empty: it is, whatever they are)."""
        if depth > 16:
            return None
        e = _unparen(expr)
        txt = normalize(_text(e))
        if txt in NULL_STREAMS or (e.type == "initializer_list" and e.named_child_count == 0):
            return _NONE
        if e.type == "cast_expression":
            v = e.child_by_field_name("value")
            return self._deps(v, fn, depth + 1) if v is not None and _is_stream_cast(e) else None
        if e.type != "identifier":
            return None
        if fn is not None:
            cands = self.params_of.get(fn.id, {})
            if txt in cands:
                return frozenset((cands[txt].offset,))
            local = self._local_deps(txt, fn, depth)
            if local is not False:
                return local  # a variable of the function (None: not one that only holds the legacy stream)
        var = self.file_vars.get(txt)
        if var is not None:
            off = _name_offset(var)
            return frozenset((off,)) if off is not None and off in self.candidates else None
        return _NONE if self._macro_null(txt, 0) else None

    # -- candidates and their values
    def _function_is_plain(self, name: str, fns: list[_Function], text_count: int) -> bool:
        """The name occurs only where it is declared, defined or called."""
        seen = 0
        for n in self.idents.get(name, []):
            p = n.parent
            if p is not None and p.type in ("qualified_identifier", "template_function") \
                    and p.child_by_field_name("name") == n:
                p = p.parent
            if p is not None and p.type == "function_declarator":
                seen += 1
            elif p is not None and p.type == "call_expression" and _callee_name(p) == n:
                seen += 1
            elif p is not None and p.type == "field_expression" and p.child_by_field_name("field") == n \
                    and p.parent is not None and p.parent.type == "call_expression":
                seen += 1
            else:
                return False
        return seen == text_count

    def _build(self, text: str) -> None:
        words = Counter(_WORD.findall(text))
        for name, fns in self.functions.items():
            defs = [f for f in fns if f.definition is not None]
            if not defs or not any(_is_stream_type(p) for f in defs for p in f.params):
                continue
            count = words.get(name, 0)
            # many same-named definitions (generated overloads): each would check every call; not worth proving
            plain = len(fns) <= MAX_OVERLOADS and self._function_is_plain(name, fns, count)
            calls = self.calls.get(name, [])
            for f in defs:
                assert f.definition is not None
                per = self.params_of.setdefault(f.definition.id, {})
                for i, p in enumerate(f.params):
                    nm = _plain_name(p)
                    if nm is None or not _is_stream_type(p):
                        continue
                    cand = _Candidate(_text(nm), nm.start_byte)
                    per[cand.name] = cand
                    self.candidates[cand.offset] = cand
                    cand.known = plain and bool(calls) and not self._written_in(cand.name, f.definition)
                    if not cand.known:
                        continue
                    defaults = [d for g in fns if i < len(g.params) and g.params[i].type == "optional_parameter_declaration"
                                for d in [g.params[i].child_by_field_name("default_value")] if d is not None]
                    defaulted = False
                    for call in calls:
                        args = call.child_by_field_name("arguments")
                        argv = [a for a in args.named_children if a.type != "comment"] if args is not None else []
                        if i < len(argv):
                            cand.values.append((argv[i], _enclosing_function(call)))
                        elif defaults:
                            defaulted = True
                        else:
                            cand.known = False
                            break
                    if defaulted:
                        cand.values.extend((d, None) for d in defaults)
        for name, d in self.file_vars.items():
            decl = d.parent
            off = _name_offset(d)
            if off is None or decl is None:
                continue
            cand = _Candidate(name, off)
            self.candidates[off] = cand
            storage = {_text(c) for c in decl.children if c.type == "storage_class_specifier"}
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            # a definition (not `extern`) initialized with a value to judge, or a `static` one left zero-initialized
            # (an uninitialized global of external linkage is typically set by another translation unit)
            cand.known = "extern" not in storage and (d.type == "init_declarator" or "static" in storage) \
                and self.file_var_names.get(name) == 1 \
                and not any(_is_write(n) or self._passed_by_reference(n) for n in self.idents.get(name, []))
            if cand.known and value is not None:
                cand.values.append((value, None))
            elif cand.known and d.type == "init_declarator":
                cand.known = False  # `cudaStream_t s(x);` and other initializers without a value field

    def _written_in(self, name: str, fn: ts.Node) -> bool:
        body = fn.child_by_field_name("body")
        if body is None:
            return True
        return any(body.start_byte <= n.start_byte < body.end_byte and (_is_write(n) or self._passed_by_reference(n))
                   for n in self.idents_in.get((fn.id, name), []))

    def offsets(self, text: str) -> frozenset[int]:
        """The greatest set of candidates whose every value is the legacy stream given that the set's members are:
        each value is judged once (the candidates it needs), then a removal is propagated to what needs it."""
        self._build(text)
        needs: dict[int, set[int]] = {}
        dead: list[int] = []
        for off, c in self.candidates.items():
            deps: set[int] = set()
            ok = c.known
            for e, fn in c.values if ok else ():
                d = self._deps(e, fn)
                if d is None:
                    ok = False
                    break
                deps |= d
            if ok:
                needs[off] = deps
            else:
                dead.append(off)
        needed_by: dict[int, list[int]] = {}
        for off, deps in needs.items():
            for d in deps:
                needed_by.setdefault(d, []).append(off)
        live = set(needs)
        while dead:
            off = dead.pop()
            live.discard(off)
            for user in needed_by.pop(off, ()):
                if user in live:
                    live.discard(user)
                    dead.append(user)
        return frozenset(live)


def _is_stream_cast(e: ts.Node) -> bool:
    t = e.child_by_field_name("type")
    return normalize(_text(t)) in STREAM_TYPES


def _name_offset(d: ts.Node) -> int | None:
    nm = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
    return nm.start_byte if nm is not None and nm.type == "identifier" else None


_LAST: list = [None, frozenset()]  # (root, answer) of the last tree asked about


def legacy_only(root: ts.Node, data: bytes) -> frozenset[int]:
    """Name offsets of the stream parameters and file-scope stream variables of this file (`root`, parsed from
    `data`) that only ever hold the legacy stream."""
    if _LAST[0] is not None and _LAST[0] == root:
        return _LAST[1]
    text = _STRIP.sub(" ", data.decode("utf-8", "replace"))
    got = LegacyOnly(root).offsets(text)
    _LAST[0], _LAST[1] = root, got
    return got
