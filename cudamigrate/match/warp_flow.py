"""Does the whole warp reach a call? The mask of a `_sync` warp intrinsic (CM502) depends on it.

Why: `__shfl_down_sync(0xffffffff, ...)` promises that all 32 lanes execute the call together; on sm_70+ a call
that only some lanes reach with the full mask is undefined behaviour (CUDA C++ Programming Guide, "Warp Shuffle
Functions" and "Warp Vote Functions": "all non-exited threads named in mask must execute the same intrinsic
with the same mask"). The legacy intrinsics meant "the lanes that are active" (`__activemask()`), so the full
mask is the right rewrite only where the warp provably arrives whole:

* no enclosing `if`/`switch`/`?:`/`&&`/`||` or loop whose condition may differ between lanes;
* no `return` (or `break`/`continue` of an enclosing loop) before it under such a condition;
* the same for every call of the enclosing `__device__` function (or macro) in the file, recursively.

A condition is uniform when it is built only from literals, `blockIdx`/`blockDim`/`gridDim`/`warpSize`, names
the function does not declare (constants, macros, globals, template parameters), kernel parameters,
parameters of a device function that every caller in the file passes uniform values, locals whose every
assignment is uniform (and made where the warp is converged), fields of those, and a few pure math functions
of uniform arguments. `threadIdx`, loads (`a[i]`, `*p`, `p->n`: other threads may write the memory between
the lanes' reads), other calls and anything else may vary.
Syntactic and conservative: the answer "converged" must be provable; a kernel launched with a block size that
is not a multiple of 32 still has a partial last warp, which the rule's message warns about.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import tree_sitter as ts

from ..parse import walk
from ..parse.treesitter import Unit, parent_of, parse_header
from ..read.source import SourceFile
from .context import FileContext, LOOP_TYPES, function_name_of, named_children, node_text, scope_of

UNIFORM_BUILTINS = frozenset({"blockIdx", "blockDim", "gridDim", "warpSize", "true", "false", "nullptr", "NULL"})
VARYING_BUILTINS = frozenset({"threadIdx"})
PURE_CALLS = frozenset({"min", "max", "abs", "fabs", "fabsf", "fmin", "fminf", "fmax", "fmaxf", "sqrt", "sqrtf",
                        "ceil", "ceilf", "floor", "floorf", "log2", "log2f", "__popc", "__clz", "__ffs",
                        "std::min", "std::max", "static_cast", "sizeof"})
_EXITS = frozenset({"return_statement", "goto_statement", "break_statement", "continue_statement"})
_MAX_DEPTH = 6  # callers of callers followed; deeper answers "not provable"


@dataclass
class Divergence:
    """Why a call may be reached by only part of a warp: the construct, its line (1-based) and the function."""

    what: str
    line: int
    function: str

    path: str = ""  # the file, when it is not the scanned one

    def describe(self) -> str:
        where = f"{self.path}:{self.line}" if self.path else f"line {self.line}"
        return f"{self.what} ({where}{', in `' + self.function + '`' if self.function else ''})"


def _int(text: str) -> int | None:
    try:
        return int(text.rstrip("uUlL"), 0)
    except ValueError:
        return None


def _is_kernel(fn: ts.Node) -> bool:
    body = fn.child_by_field_name("body")
    return body is not None and scope_of(body).is_kernel


def _short(node: ts.Node, limit: int = 40) -> str:
    text = " ".join(node_text(node).split())
    while text.startswith("(") and text.endswith(")") and text.count("(") == 1:
        text = text[1:-1]
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class WarpFlow:
    """The per-file analysis; memoizes callers and variable uniformity (one instance per FileContext)."""

    ctx: FileContext
    _uniform_vars: dict[tuple[int, str], bool] = field(default_factory=dict)
    _active: set[tuple[int, str]] = field(default_factory=set)
    _reach: dict[int, Divergence | None] = field(default_factory=dict)
    # per-function facts, each computed once: a walk of the function per query made N constructs in one
    # function cost N^2 (bench/bounds.py's repeat shapes: 100 KB of CM502 took 7-18 s of CPU)
    _writes_index: dict[int, tuple[dict[str, list[tuple[ts.Node, ts.Node | None]]], set[str]]] = field(default_factory=dict)
    _thread_x_locals: dict[tuple[int, str], bool] = field(default_factory=dict)
    _one_dim: dict[int, bool] = field(default_factory=dict)
    _decl_scopes: dict[tuple[int, str], ts.Node] = field(default_factory=dict)
    _exits: dict[int, list[ts.Node]] = field(default_factory=dict)
    _exit_guard: dict[int, str | None] = field(default_factory=dict)

    def _shown(self) -> str:
        """"" for the scanned file; another file's name as its findings would show it."""
        if self.ctx.__dict__.get("_warp_flow") is self:
            return ""
        return self.ctx.source.path.name

    def _line(self, unit: Unit, node: ts.Node) -> int:
        return self.ctx.source.data.count(b"\n", 0, unit.abs(node)[0]) + 1

    # ------------------------------------------------------------------ reaching a node
    def divergence(self, unit: Unit, node: ts.Node, depth: int = 0) -> Divergence | None:
        """None when every lane of the warp provably reaches `node` together; else the first reason found."""
        key = node.id
        if key in self._reach:
            return self._reach[key]
        self._reach[key] = Divergence("a recursive call", self._line(unit, node), "")  # cycles are not provable
        got = self._divergence(unit, node, depth)
        self._reach[key] = got
        return got

    def _divergence(self, unit: Unit, node: ts.Node, depth: int) -> Divergence | None:
        fn = None if unit.in_macro else scope_of(node).function
        if unit.in_macro:
            name = unit.macro_name or ""
        else:
            name = (function_name_of(fn) or "") if fn is not None else ""
        got = self._local(unit, node, fn, name)
        if got is not None:
            return got
        if fn is not None and _is_kernel(fn):
            return None  # a kernel: the warp starts whole
        if not name:
            return None  # file scope or an unnamed function: nothing the file says about its callers
        if depth >= _MAX_DEPTH:
            return Divergence("callers nested too deep to follow", self._line(unit, node), name)
        for flow, cunit, call in self.callers(name, fn):
            why = flow.divergence(cunit, call, depth + 1)
            if why is not None:
                if why.what.startswith("`"):  # `g` is called inside ...: f is called from g, which is called ...
                    head, _, rest = why.what.partition(" is called ")
                    return Divergence(f"`{name}` is called from {head}, which is called {rest}", why.line, why.function,
                                      why.path or flow._shown())
                return Divergence(f"`{name}` is called {why.what}", why.line, why.function, why.path or flow._shown())
        return None

    def callers(self, name: str, fn: ts.Node | None) -> list[tuple["WarpFlow", Unit, ts.Node]]:
        """The calls of `name` in the file, except those inside the function itself (recursion), and in the files
        of the run that include this one (a header's `__device__` helper is called by the .cu files using it)."""
        out: list[tuple[WarpFlow, Unit, ts.Node]] = []
        for cunit, call in self.ctx.calls.get(name, []):
            if fn is not None and cunit is self.ctx.main and fn.start_byte <= call.start_byte < fn.end_byte:
                continue
            out.append((self, cunit, call))
        for flow in self._includers():
            out.extend((flow, cunit, call) for cunit, call in flow.ctx.calls.get(name, []))
        return out

    def _includers(self) -> list["WarpFlow"]:
        """The analyses of the run's files that include this one (read and parsed once per run)."""
        proj = self.ctx.project
        if proj is None or not getattr(proj, "files", None):
            return []
        cache = proj.cache.setdefault("warp-flow-includers", {})
        out = []
        for path in proj.includers(self.ctx.source.path):
            if path not in cache:
                data = proj.read(path)
                cache[path] = None if data is None else WarpFlow(FileContext(
                    source=SourceFile(path=path, data=data), units=[Unit(tree=parse_header(data), base=0)],
                    project=proj))
            if cache[path] is not None:
                out.append(cache[path])
        return out

    def _local(self, unit: Unit, node: ts.Node, fn: ts.Node | None, name: str) -> Divergence | None:
        """Divergence inside the function (or macro body) holding `node`: enclosing conditions, earlier exits."""
        loops: list[ts.Node] = []
        child, p = node, parent_of(node)
        while p is not None and (fn is None or p.id != fn.id) and p.type != "translation_unit":
            why = self._guard(unit, p, child, fn)
            if why is not None:
                return Divergence(f"inside {why}", self._line(unit, p), name)
            if p.type in LOOP_TYPES and self._in_body(p, child):
                loops.append(p)
            if p.type == "lambda_expression":
                return Divergence("inside a lambda", self._line(unit, p), name)
            child, p = p, parent_of(p)
        scope = fn if fn is not None else unit.root
        exits = self._exits.get(scope.id)
        if exits is None:
            exits = self._exits[scope.id] = list(walk.typed_nodes(scope, _EXITS))
        for ex in exits:
            if ex.type in ("return_statement", "goto_statement") and ex.start_byte >= node.start_byte:
                continue
            if ex.type in ("break_statement", "continue_statement") and not any(
                    lp.start_byte <= ex.start_byte < lp.end_byte for lp in loops):
                continue
            if ex.id not in self._exit_guard:
                self._exit_guard[ex.id] = self._guarded_by(unit, ex, fn)
            cond = self._exit_guard[ex.id]
            if cond is not None:
                return Divergence(f"after `{_short(ex)}` inside {cond}", self._line(unit, ex), name)
        return None

    def _guarded_by(self, unit: Unit, node: ts.Node, fn: ts.Node | None, stop: ts.Node | None = None) -> str | None:
        """The first lane-dependent condition that decides whether `node` runs (up to the function, or `stop`)."""
        child, p = node, parent_of(node)
        while p is not None and (fn is None or p.id != fn.id) and (stop is None or p.id != stop.id) \
                and p.type != "translation_unit":
            if p.type == "lambda_expression":
                return None  # a lambda's own exit
            why = self._guard(unit, p, child, fn)
            if why is not None:
                return why
            child, p = p, parent_of(p)
        return None

    @staticmethod
    def _in_body(loop: ts.Node, child: ts.Node) -> bool:
        body = loop.child_by_field_name("body")
        return body is not None and body.id == child.id

    def _guard(self, unit: Unit, p: ts.Node, child: ts.Node, fn: ts.Node | None) -> str | None:
        """The condition of `p` when it decides whether `child` runs and may differ between lanes, as text."""
        t = p.type
        cond: ts.Node | None = None
        if t in ("if_statement", "switch_statement", "while_statement", "do_statement", "conditional_expression"):
            c = p.child_by_field_name("condition")
            if c is not None and c.id != child.id:
                cond = c
        elif t == "for_statement":
            c = p.child_by_field_name("condition")
            init = p.child_by_field_name("initializer")
            if init is not None and init.id == child.id:
                return None
            if c is not None and c.id != child.id:
                if not self.uniform(unit, c, fn) or not self._loop_vars_uniform(unit, p, fn):
                    return f"`for (...; {_short(c)}; ...)`"
            return None
        elif t == "binary_expression":
            op = p.child_by_field_name("operator")
            left = p.child_by_field_name("left")
            if op is not None and op.type in ("&&", "||", "and", "or") and left is not None and left.id != child.id:
                cond = left
        if cond is None or self.uniform(unit, cond, fn):
            return None
        kw = {"if_statement": "if", "switch_statement": "switch", "while_statement": "while",
              "do_statement": "while", "conditional_expression": "?:", "binary_expression": "&&/||"}[t]
        return f"`{kw} ({_short(cond)})`" if kw not in ("?:", "&&/||") else f"the `{kw}` operand after `{_short(cond)}`"

    def _loop_vars_uniform(self, unit: Unit, loop: ts.Node, fn: ts.Node | None) -> bool:
        """A `for` whose initializer declares its variables from uniform values (the condition is checked apart)."""
        init = loop.child_by_field_name("initializer")
        return init is None or self.uniform(unit, init, fn)

    # ------------------------------------------------------------------ uniform values
    def uniform(self, unit: Unit, expr: ts.Node, fn: ts.Node | None) -> bool:
        t = expr.type
        if t in ("number_literal", "char_literal", "string_literal", "true", "false", "null", "nullptr",
                 "sizeof_expression", "alignof_expression", "comment", "primitive_type", "type_descriptor"):
            return True
        if t == "identifier":
            return self._uniform_name(unit, node_text(expr), expr, fn)
        if t in ("qualified_identifier", "template_function"):
            return True  # a constant or function named by scope: never a local
        if t == "field_expression":
            arg = expr.child_by_field_name("argument")
            op = expr.child_by_field_name("operator")
            if arg is None or (op is not None and op.type == "->"):
                return False  # `p->n` is a load
            if arg.type == "identifier":
                name = node_text(arg)
                if name in VARYING_BUILTINS:
                    return False
                if name in UNIFORM_BUILTINS:
                    return True
            return self.uniform(unit, arg, fn)
        if t == "call_expression":
            callee = expr.child_by_field_name("function")
            args = expr.child_by_field_name("arguments")
            if callee is None or node_text(callee).replace(" ", "") not in PURE_CALLS:
                return False
            return all(self.uniform(unit, a, fn) for a in named_children(args))
        if t == "binary_expression" and fn is not None and self._warp_granular(unit, expr, fn):
            return True
        if t in ("subscript_expression", "pointer_expression") and not node_text(expr).startswith("&"):
            return False  # a load: memory may differ between the lanes' reads (other threads write it)
        if t in ("parenthesized_expression", "binary_expression", "unary_expression", "pointer_expression",
                 "conditional_expression", "cast_expression", "subscript_argument_list", "comma_expression",
                 "condition_clause", "declaration", "init_declarator", "initializer_list", "argument_list",
                 "expression_statement"):
            return all(self.uniform(unit, c, fn) for c in named_children(expr)
                       if c.type not in ("type_descriptor", "primitive_type", "type_identifier"))
        return False

    def _warp_granular(self, unit: Unit, expr: ts.Node, fn: ts.Node) -> bool:
        """`threadIdx.x / 32`, `threadIdx.x >> 5`, `threadIdx.x < 32 * k` (`tid < 64`, `tid >= 32`): the same for
        every lane of a warp when the block is one-dimensional, since a warp is then 32 consecutive `threadIdx.x`
        (CUDA C++ Programming Guide, "SIMT Architecture"); taken as one-dimensional when the function never
        names `threadIdx.y` or `threadIdx.z`."""
        op = expr.child_by_field_name("operator")
        left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
        if op is None or left is None or right is None:
            return False
        o = op.type
        if o in (">", ">=", "<=", "<") and self._thread_x(unit, right, fn):
            left, right = right, left
            o = {">": "<", ">=": "<=", "<=": ">=", "<": ">"}[o]
        if not self._thread_x(unit, left, fn):
            return False
        if o == "/" and self._multiple_of_32(right, 0):
            return self._one_dimensional(fn)
        if o == ">>" and right.type == "number_literal" and _int(node_text(right)) is not None \
                and (_int(node_text(right)) or 0) >= 5:
            return self._one_dimensional(fn)
        if o in ("<", ">=") and self._multiple_of_32(right, 0) or o in ("<=", ">") and self._multiple_of_32(right, 31):
            return self._one_dimensional(fn)
        return False

    @staticmethod
    def _multiple_of_32(node: ts.Node, rest: int) -> bool:
        text = node_text(node).strip()
        if text == "warpSize":
            return rest == 0
        v = _int(text)
        return v is not None and v % 32 == rest

    def _thread_x(self, unit: Unit, node: ts.Node, fn: ts.Node) -> bool:
        """`threadIdx.x`, or a local of the function whose only value is it (`int tid = threadIdx.x;`)."""
        text = "".join(node_text(node).split())
        while text.startswith("(") and text.endswith(")"):
            text = text[1:-1]
        if text == "threadIdx.x":
            return True
        if node.type != "identifier":
            return False
        key = (fn.id, text)
        got = self._thread_x_locals.get(key)
        if got is None:
            body = fn.child_by_field_name("body")
            writes = self._writes(body, text) if body is not None else None
            got = self._thread_x_locals[key] = bool(writes) and all(
                v is not None and "".join(node_text(v).split()) == "threadIdx.x" for _, v in writes or [])
        return got

    def _one_dimensional(self, fn: ts.Node) -> bool:
        got = self._one_dim.get(fn.id)
        if got is None:
            text = "".join(node_text(fn).split())
            got = self._one_dim[fn.id] = "threadIdx.y" not in text and "threadIdx.z" not in text
        return got

    def _uniform_name(self, unit: Unit, name: str, at: ts.Node, fn: ts.Node | None) -> bool:
        if name in VARYING_BUILTINS:
            return False
        if name in UNIFORM_BUILTINS or fn is None:
            return True  # a macro body: its names are its callers' (their conditions are checked there)
        key = (fn.id, name)
        if key in self._uniform_vars:
            return self._uniform_vars[key]
        if key in self._active:
            return True  # `offset /= 2` reads offset: assume the value in hand, decided by the other writes
        self._active.add(key)
        try:
            got = self._uniform_var(unit, name, fn)
        finally:
            self._active.discard(key)
        self._uniform_vars[key] = got
        return got

    def _uniform_var(self, unit: Unit, name: str, fn: ts.Node) -> bool:
        params = self._params(fn)
        if name in params:
            if _is_kernel(fn):
                return True  # kernel arguments are the same for every thread
            idx = params.index(name)
            fname = function_name_of(fn) or ""
            for flow, cunit, call in self.callers(fname, fn):
                args = named_children(call.child_by_field_name("arguments"))
                cfn = None if cunit.in_macro else scope_of(call).function
                if idx >= len(args) or not flow.uniform(cunit, args[idx], cfn):
                    return False
            return bool(fname)
        body = fn.child_by_field_name("body")
        if body is None:
            return True
        writes = self._writes(body, name)
        if writes is None:
            return True  # not a local of the function: a constant, global or template parameter
        scope = self._decl_scope(body, name)
        for w, value in writes:
            # a write under a lane-dependent condition makes the lanes' values differ, unless that condition also
            # encloses the declaration (then it encloses every use: the lanes there all took the same path)
            if value is None or not self.uniform(unit, value, fn) or self._guarded_by(unit, w, fn, scope) is not None:
                return False
        return True

    def _decl_scope(self, body: ts.Node, name: str) -> ts.Node:
        key = (body.id, name)
        got = self._decl_scopes.get(key)
        if got is None:
            got = self._decl_scopes[key] = self._find_decl_scope(body, name)
        return got

    @staticmethod
    def _find_decl_scope(body: ts.Node, name: str) -> ts.Node:
        """The statement or block a local's declaration is in (its uses and writes are all inside it)."""
        for n in walk.typed_nodes(body, frozenset({"init_declarator", "declaration"})):
            d = n.child_by_field_name("declarator")
            if d is not None and node_text(d) == name or n.type == "declaration" and any(
                    node_text(x) == name for x in n.children_by_field_name("declarator")):
                decl = n if n.type == "declaration" else (n.parent or n)
                return decl.parent or body
        return body

    @staticmethod
    def _params(fn: ts.Node) -> list[str]:
        d = fn.child_by_field_name("declarator")
        while d is not None and d.type != "function_declarator":
            d = d.child_by_field_name("declarator")
        plist = d.child_by_field_name("parameters") if d is not None else None
        out = []
        for p in named_children(plist):
            x = p.child_by_field_name("declarator")
            while x is not None and x.type not in ("identifier",):
                x = x.child_by_field_name("declarator") or (named_children(x)[0] if named_children(x) else None)
            out.append(node_text(x) if x is not None else "")
        return out

    def _writes(self, body: ts.Node, name: str) -> list[tuple[ts.Node, ts.Node | None]] | None:
        """Every declaration of and write to local `name` with the value written (None: unknown, e.g. `&x`
        taken or `++x` of a value); None when the function declares no such local. The body's writes are
        indexed by name in one walk (`_index_writes`), once per function."""
        got = self._writes_index.get(body.id)
        if got is None:
            got = self._writes_index[body.id] = self._index_writes(body)
        writes, declared = got
        return list(writes.get(name, ())) if name in declared else None

    @staticmethod
    def _index_writes(body: ts.Node) -> tuple[dict[str, list[tuple[ts.Node, ts.Node | None]]], set[str]]:
        """name -> its declarations and writes in document order, and the names the body declares."""
        declared: set[str] = set()
        out: dict[str, list[tuple[ts.Node, ts.Node | None]]] = {}
        for n in walk.typed_nodes(body, frozenset({"init_declarator", "declaration", "assignment_expression",
                                                   "update_expression", "pointer_expression"})):
            if n.type == "init_declarator":
                d = n.child_by_field_name("declarator")
                if d is not None:
                    declared.add(node_text(d))
                    out.setdefault(node_text(d), []).append((n, n.child_by_field_name("value")))
            elif n.type == "declaration":
                for d in n.children_by_field_name("declarator"):
                    if d.type == "identifier":
                        declared.add(node_text(d))  # `int x;`: the writes decide
                    elif d.type == "array_declarator":
                        name = node_text(d.child_by_field_name("declarator") or d)
                        declared.add(name)
                        out.setdefault(name, []).append((n, None))  # a local array: its elements are data
            elif n.type == "assignment_expression":
                left = n.child_by_field_name("left")
                if left is not None:
                    out.setdefault(node_text(left), []).append((n, n.child_by_field_name("right")))
            elif n.type == "update_expression":
                arg = n.child_by_field_name("argument")
                if arg is not None:
                    out.setdefault(node_text(arg), []).append((n, arg))  # x++ keeps a uniform x uniform
            elif n.type == "pointer_expression":
                text = node_text(n).replace(" ", "")
                if text.startswith("&"):
                    out.setdefault(text[1:], []).append((n, None))
        return out, declared


def warp_flow(ctx: FileContext) -> WarpFlow:
    """The file's WarpFlow, built once (kept on the context like the declaration index)."""
    got = ctx.__dict__.get("_warp_flow")
    if got is None:
        got = ctx.__dict__["_warp_flow"] = WarpFlow(ctx)
    return got


def divergence_of(ctx: FileContext, unit: Unit, node: ts.Node) -> Divergence | None:
    return warp_flow(ctx).divergence(unit, node)
