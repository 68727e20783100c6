"""Turning a rule's `fix.edits` into byte-range edits for one match.

Operations (`EDIT_OPS`: replace, delete_arg, ...) and the targets they name (`EDIT_TARGETS`: name, arg.X, statement,
...) are registries: name -> (schema, implementation, doc), checked at rule load time (`check_edit`).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any, Callable

import tree_sitter as ts

from ..parse.shapes import case_of, statement_of
from ..parse.treesitter import parent_of

from ..findings.model import Edit
from ..core.registry import Registry, Schema, SchemaError, anything, condition, did_you_mean, scalar
from ..rules.templates import render
from .warp_flow import divergence_of
from .conditions import evaluate, wrapper_of
from .context import FileContext, node_text
from .language import file_language
from .matchers import Match

class EditError(Exception):
    pass


def _line_bounds(data: bytes, start: int, end: int) -> tuple[int, int, str]:
    ls = data.rfind(b"\n", 0, start) + 1
    le = data.find(b"\n", end)
    le = len(data) if le == -1 else le + 1
    indent = b""
    for ch in data[ls:start]:
        if ch in b" \t":
            indent += bytes([ch])
        else:
            break
    return ls, le, indent.decode()


TargetFn = Callable[[Match, FileContext, str], tuple[int, int]]
# what `replace:`, `delete:`, `insert_before:` and `insert_after:` name: a byte range of the match
EDIT_TARGETS: Registry[TargetFn] = Registry("edit target")
# what an edit does: `{replace: TARGET, with: TEMPLATE}`, `{delete_arg: stream}`, ...
EDIT_OPS: Registry["EditOp"] = Registry("edit operation")


def _target(m: Match, ctx: FileContext, target: str) -> tuple[int, int]:
    entry = EDIT_TARGETS.lookup(target)
    if entry is None:
        raise EditError(EDIT_TARGETS.unknown(target))
    return entry.impl(m, ctx, target)


def _range_target(name: str, attr: str, doc: str) -> None:
    def fn(m: Match, ctx: FileContext, target: str) -> tuple[int, int]:
        rng = getattr(m, attr)
        if rng is None:
            raise EditError(f"match has no {name} range" if name == "name" else f"match has no {name}")
        return rng

    EDIT_TARGETS.add(name, TARGET_SCHEMA, fn, doc)


def _node_target(name: str, attr: str, doc: str) -> None:
    def fn(m: Match, ctx: FileContext, target: str) -> tuple[int, int]:
        node = getattr(m, attr)
        if node is None:
            raise EditError(f"match has no {name}")
        return m.abs(node)

    EDIT_TARGETS.add(name, TARGET_SCHEMA, fn, doc)


TARGET_SCHEMA = anything("")
EDIT_TARGETS.add("node", TARGET_SCHEMA, lambda m, ctx, t: m.report_range, "the whole match (the reported range).")
_range_target("name", "name_range", "the name as written, with its qualification (`::cudaThreadExit`, `cub::Sum`).")


def _identifier(m: Match, ctx: FileContext, target: str) -> tuple[int, int]:
    # the bare identifier: `::cudaThreadExit` keeps its `::`, `thrust::identity` its namespace
    rng = m.ident_range or m.name_range
    if rng is None:
        raise EditError("match has no identifier")
    return rng


EDIT_TARGETS.add("identifier", TARGET_SCHEMA, _identifier,
                 "only the last identifier of the name, so `::` and namespaces are kept.")
_node_target("callee", "callee", "the called expression (`obj.f`, `ns::f`).")


def _inside_arglist(m: Match, ctx: FileContext, target: str) -> tuple[int, int]:
    if m.arglist is None:
        raise EditError("match has no argument list")
    s, e = m.abs(m.arglist)
    # inside the parentheses / <<< >>>
    if m.arglist.type == "kernel_call_syntax":
        return s + 3, e - 3
    return s + 1, e - 1


EDIT_TARGETS.add("args", TARGET_SCHEMA, _inside_arglist, "everything between the call's parentheses.")
EDIT_TARGETS.add("config", TARGET_SCHEMA, _inside_arglist, "everything between a launch's `<<<` and `>>>`.")


def _arg_target(m: Match, ctx: FileContext, target: str) -> tuple[int, int]:
    key = target.split(".", 1)[1]
    node = m.arg(key)
    if node is None:
        raise EditError(f"no argument {key!r}")
    return m.abs(node)


EDIT_TARGETS.add("arg.*", TARGET_SCHEMA, _arg_target, "`arg.NAME` / `arg.INDEX`: one argument of the call.")
EDIT_TARGETS.add("config.*", TARGET_SCHEMA, _arg_target,
                 "`config.grid|block|shmem|stream`: one launch configuration argument.")
_node_target("field", "field_node", "the field of a `member` match (`clockRate` in `prop.clockRate`).")
_node_target("receiver", "receiver", "the object of a `member` match (`prop` in `prop.clockRate`).")
EDIT_TARGETS.add("statement", TARGET_SCHEMA, lambda m, ctx, t: m.abs(statement_of(m.node)),
                 "the statement holding the match (`delete: statement` removes whole lines when the statement owns them).")
EDIT_TARGETS.add("base_specifier", TARGET_SCHEMA, lambda m, ctx, t: _base_specifier_range(m, ctx),
                 "this class in a base-class list (`: public thrust::unary_function<...>`), with its separator.")


def _case_target(m: Match, ctx: FileContext, target: str) -> tuple[int, int]:
    got = case_range(m.node)
    if got is None:
        raise EditError("match is not a case label")
    return m.abs(got[0])[0], m.abs(got[0])[0] + (got[1] - got[0].start_byte)


EDIT_TARGETS.add("case", TARGET_SCHEMA, _case_target,
                 "the `case X:` label with its body, or only the label when the previous case falls into the body.")


def _capture_target(m: Match, ctx: FileContext, target: str) -> tuple[int, int]:
    key = target.split(".", 1)[1]
    if key not in m.captures:
        raise EditError(f"no capture {key!r}")
    s, e, _ = m.captures[key]
    return s, e


EDIT_TARGETS.add("capture.*", TARGET_SCHEMA, _capture_target, "`capture.NAME`: a named group of a `string` matcher's regex.")


JUMPS = {"break_statement", "return_statement", "continue_statement", "goto_statement", "throw_statement"}


def case_range(node: ts.Node) -> tuple[ts.Node, int] | None:
    """(case_statement, end byte) of what removing a case label removes.

    The whole case, body included, when the case before it cannot fall into that body (it ends in
    break/return/continue/goto/throw, or there is none); otherwise only `case X:`, so that the previous
    case keeps falling through into the body.
    """
    case = case_of(node)
    if case is None:
        return None
    body = [c for c in case.named_children if c.type != "comment" and c.start_byte > case.child_by_field_name("value").end_byte]
    prev = case.prev_named_sibling
    while prev is not None and prev.type == "comment":
        prev = prev.prev_named_sibling
    falls_in = False
    if prev is not None and prev.type == "case_statement":
        pbody = [c for c in prev.named_children if c.type != "comment" and c is not prev.child_by_field_name("value")]
        pv = prev.child_by_field_name("value")
        pbody = [c for c in pbody if pv is None or c.start_byte > pv.end_byte]
        last = pbody[-1] if pbody else None
        while last is not None and last.type == "compound_statement" and last.named_children:
            inner = [c for c in last.named_children if c.type != "comment"]
            last = inner[-1] if inner else None
        falls_in = last is None or last.type not in JUMPS
    if falls_in and body:
        colon = next((c for c in case.children if c.type == ":"), None)
        return case, (colon.end_byte if colon is not None else case.child_by_field_name("value").end_byte)
    return case, case.end_byte


def _base_specifier_range(m: Match, ctx: FileContext) -> tuple[int, int]:
    """This base class in `struct S : public A, B {`: `: public A` when it is the only base (with the space
    before it), else `public A, ` / `, B`."""
    node = m.node
    while parent_of(node) is not None and parent_of(node).type != "base_class_clause":
        if parent_of(node).type not in ("qualified_identifier", "template_type"):
            raise EditError("match is not a base class")
        node = parent_of(node)
    clause = parent_of(node)
    if clause is None:
        raise EditError("match is not a base class")
    kids = list(clause.children)
    # entries: (start, end) of `[virtual] [access] type`
    entries: list[tuple[int, int]] = []
    start = None
    for c in kids:
        if c.type in (":", ","):
            continue
        if start is None:
            start = c.start_byte
        if c.type not in ("access_specifier", "virtual"):
            entries.append((start, c.end_byte))
            start = None
    idx = next((i for i, (a, b) in enumerate(entries) if a <= node.start_byte < b), None)
    if idx is None:
        raise EditError("base class not found")
    data = ctx.source.data
    base = m.unit.abs(clause)[0] - clause.start_byte
    if len(entries) == 1:
        s, e = clause.start_byte, clause.end_byte
        while s > 0 and data[base + s - 1 : base + s] in (b" ", b"\t"):
            s -= 1
    elif idx == 0:
        s, e = entries[0][0], entries[1][0]
    else:
        s, e = entries[idx - 1][1], entries[idx][1]
    return base + s, base + e


def _arg_sep(m: Match, ctx: FileContext) -> str:
    """`, ` unless the call already puts each argument on its own line."""
    if len(m.args) >= 2:
        a, b = m.abs(m.args[-2]), m.abs(m.args[-1])
        between = ctx.source.data[a[1] : b[0]].decode("utf-8", "surrogateescape")
        if "\n" in between:
            return between[between.index(",") :] if "," in between else ", "
    return ", "


@dataclass(frozen=True)
class EditOp:
    """How one edit operation turns its spec into byte-range edits; `needs_with`: the spec must give `with`."""

    build: Callable[[dict[str, Any], Match, FileContext, dict[str, Any]], list[Edit]]
    needs_with: bool = False


def _check_target(v: Any, path: str, checker: Any) -> None:
    if not isinstance(v, str) or v not in EDIT_TARGETS:
        raise SchemaError(path, EDIT_TARGETS.unknown(v))


TARGET = Schema("TARGET", _check_target)
TEMPLATE = scalar("TEMPLATE")


def build_edits(specs: list[dict[str, Any]], m: Match, ctx: FileContext, tctx: dict[str, Any]) -> list[Edit]:
    edits: list[Edit] = []
    for spec in specs:
        if "when" in spec and not evaluate(spec["when"], m, ctx):
            continue
        op = next((EDIT_OPS.entries[k] for k in spec if k in EDIT_OPS.entries), None)
        if op is None:
            raise EditError(f"edit names no operation (one of {', '.join(EDIT_OPS.names())})")
        edits += op.impl.build(spec, m, ctx, tctx)
    return edits


def _replace(spec: dict[str, Any], m: Match, ctx: FileContext, tctx: dict[str, Any]) -> list[Edit]:
    s, e = _target(m, ctx, spec["replace"])
    return [Edit(s, e, render(str(spec["with"]), tctx))]


def _append_arg(spec: dict[str, Any], m: Match, ctx: FileContext, tctx: dict[str, Any]) -> list[Edit]:
    text = render(str(spec["append_arg"]), tctx)
    if m.arglist is None:
        raise EditError("append_arg needs an argument list")
    if m.args:
        end = m.abs(m.args[-1])[1]
        return [Edit(end, end, _arg_sep(m, ctx) + text)]
    s, e = _target(m, ctx, "args")
    return [Edit(s, e, text)]


def _insert_arg(spec: dict[str, Any], m: Match, ctx: FileContext, tctx: dict[str, Any]) -> list[Edit]:
    idx = m.arg_index(str(spec["insert_arg"]))
    text = render(str(spec["with"]), tctx)
    if idx is None:
        raise EditError(f"unknown argument {spec['insert_arg']!r}")
    if idx > len(m.args):  # arguments before it are missing: its position would be a guess
        raise EditError(f"argument {spec['insert_arg']!r} cannot be placed: the call has {len(m.args)} argument(s)")
    if idx < len(m.args):
        s = m.abs(m.args[idx])[0]
        return [Edit(s, s, text + ", ")]
    if m.args:
        end = m.abs(m.args[-1])[1]
        return [Edit(end, end, ", " + text)]
    s, e = _target(m, ctx, "args")
    return [Edit(s, e, text)]


def _delete_arg(spec: dict[str, Any], m: Match, ctx: FileContext, tctx: dict[str, Any]) -> list[Edit]:
    idx = m.arg_index(str(spec["delete_arg"]))
    if idx is None or idx >= len(m.args):
        return []
    s, e = m.abs(m.args[idx])
    if idx > 0:
        s = m.abs(m.args[idx - 1])[1]  # drop the preceding comma too
    elif len(m.args) > 1:
        e = m.abs(m.args[1])[0]
    return [Edit(s, e, "")]


def _delete(spec: dict[str, Any], m: Match, ctx: FileContext, tctx: dict[str, Any]) -> list[Edit]:
    data = ctx.source.data
    s, e = _target(m, ctx, spec["delete"])
    ls, le, _ = _line_bounds(data, s, e)
    tail = data[e:le].strip()
    if data[ls:s].strip() == b"" and (tail == b"" or tail.startswith(b"//")):
        s, e = ls, le  # the statement owns its lines (and their trailing comment): remove them whole
    return [Edit(s, e, "")]


def _insert_line(spec: dict[str, Any], m: Match, ctx: FileContext, tctx: dict[str, Any]) -> list[Edit]:
    before = "insert_before" in spec
    where = spec["insert_before"] if before else spec["insert_after"]
    s, e = _target(m, ctx, where)
    ls, le, indent = _line_bounds(ctx.source.data, s, e)
    _check_insert_site(m, ctx.source.data, where, before, s, e, ls, le)
    nl = ctx.source.newline.decode()
    text = render(str(spec["with"]), {**tctx, "indent": indent})
    lines = [indent + ln if ln else ln for ln in text.split("\n")]
    block = nl.join(lines) + nl
    return [Edit(ls, ls, block)] if before else [Edit(le, le, block)]


EDIT_OPS.add("replace", TARGET, EditOp(_replace, needs_with=True), "replace the target by the `with` template.")
EDIT_OPS.add("append_arg", TEMPLATE, EditOp(_append_arg),
             "add an argument at the end; keeps the call's layout (one argument per line stays so).")
EDIT_OPS.add("insert_arg", scalar("NAME|INDEX"), EditOp(_insert_arg, needs_with=True),
             "insert `with` as an argument before this one (or at the end when it is the next); a position past "
             "the arguments present leaves the finding without a fix.")
EDIT_OPS.add("delete_arg", scalar("NAME|INDEX"), EditOp(_delete_arg), "remove this argument and its comma (when present).")
EDIT_OPS.add("delete", TARGET, EditOp(_delete),
             "remove the target; whole lines when the target owns them (a trailing `//` comment goes too).")
EDIT_OPS.add("insert_before", TARGET, EditOp(_insert_line, needs_with=True),
             "insert the `with` lines, indented like the target's line, before that line.")
EDIT_OPS.add("insert_after", TARGET, EditOp(_insert_line, needs_with=True),
             "insert the `with` lines, indented like the target's line, after that line.")
# what an edit may say besides its operation
EDIT_MODIFIERS = {
    "with": (TEMPLATE, "the new text (a template) for `replace`, `insert_arg`, `insert_before`, `insert_after`."),
    "when": (condition(), "the edit is made only when the condition holds."),
}


def check_edit(e: Any, path: str, checker: Any) -> None:
    """One `fix.edits[]` entry: exactly one operation, `with` where it needs one, known keys and targets."""
    if not isinstance(e, dict):
        raise SchemaError(path, "must be a mapping")
    for k, v in e.items():
        if k in EDIT_MODIFIERS:
            EDIT_MODIFIERS[k][0].check(v, f"{path}.{k}", checker)
        else:
            allowed = EDIT_OPS.names() + list(EDIT_MODIFIERS)
            if k not in EDIT_OPS.entries:
                raise SchemaError(f"{path}.{k}", f"unknown edit key {str(k)[:80]!r}" + did_you_mean(str(k), allowed)
                                  + f" (allowed: {', '.join(allowed)})")
            EDIT_OPS.check(k, v, f"{path}.{k}", checker)
    ops = [k for k in e if k in EDIT_OPS.entries]
    if len(ops) != 1:
        raise SchemaError(path, f"needs exactly one of {', '.join(EDIT_OPS.names())}")
    if EDIT_OPS.entries[ops[0]].impl.needs_with and "with" not in e:
        raise SchemaError(f"{path}.with", f"`{ops[0]}` needs `with`")


# statements after which control always reaches the next line: code inserted after any other statement
# (`return f(x);`, `if (f(x) != 0) {...}`, `while (f(x))`, an unbraced `if (c) f(x);`) would run never, too
# late or when the call did not run
SEQUENTIAL_STATEMENTS = {"expression_statement", "declaration"}


def _check_insert_site(m: Match, data: bytes, where: str, before: bool, s: int, e: int, ls: int, le: int) -> None:
    """Refuse an insertion whose place would change what runs when, rather than guess.

    Inserted lines go before the target's first line or after its last one, so the target must own those
    lines: other code sharing the line (`a(); f(x);`) would end up on the wrong side of the insertion.
    """
    if before and data[ls:s].strip():
        raise EditError("the statement shares its first line with other code")
    if not before:
        tail = data[e:le].strip()
        if tail and not tail.startswith((b"//", b"/*")):
            raise EditError("the statement shares its last line with other code")
        if where == "statement":
            kind = statement_of(m.node).type
            if kind not in SEQUENTIAL_STATEMENTS:
                raise EditError(f"code inserted after this {kind.replace('_', ' ')} would not run right after the call")


_USES_TEXT: dict[int, tuple[Any, bool]] = {}  # id(rule) -> (rule, its templates mention `text`)


def _uses_text(rule: Any) -> bool:
    got = _USES_TEXT.get(id(rule))
    if got is None:
        got = _USES_TEXT[id(rule)] = (rule, bool(re.search(r"\btext\b", f"{rule.message}\n{rule.fix!r}")))
    return got[1]


def template_context(m: Match, ctx: FileContext, options: dict[str, Any]) -> dict[str, Any]:
    data = ctx.source.data
    args: dict[str, str] = {}
    argv: list[str] = []
    for i, node in enumerate(m.args):
        s, e = m.abs(node)
        t = data[s:e].decode("utf-8", "surrogateescape") if getattr(node, "located", True) else node_text(node)
        argv.append(t)
        args[str(i)] = t
        if i < len(m.params):
            args[m.params[i]] = t
    s, e = m.report_range
    return {
        "wrapper": wrapper_of(m),
        "name": m.name,
        "written": m.written,
        "callee": node_text(m.callee) if m.callee is not None else m.written,
        "args": args,
        "argv": argv,
        "argc": len(argv),
        "call_args": [node_text(n) for n in m.call_args],
        # the matched text only for rules that quote it: decoding an outer call around thousands of nested
        # ones for every finding made scanning quadratic in nesting
        "text": data[s:e].decode("utf-8", "surrogateescape") if _uses_text(m.rule) else "",
        "field": node_text(m.field_node) if m.field_node is not None else "",
        "receiver": node_text(m.receiver) if m.receiver is not None else "",
        "options": options,
        "data": m.rule.data,
        "vars": m.vars,
        "groups": m.vars.get("groups", {}),
        "target_cuda": f"{ctx.target[0]}.{ctx.target[1]}",
        "file_ext": ctx.ext,
        "lang": file_language(ctx.source.path),  # c | cxx: fixes must be valid in the file's language
        "nl": ctx.source.newline.decode(),
        "rule": {"id": m.rule.id, "deprecated_in": m.rule.deprecated_in, "removed_in": m.rule.removed_in},
        "fresh": _fresh_namer(m, ctx),
        "warp_divergence": _warp_divergence(m, ctx),
    }


def _warp_divergence(m: Match, ctx: FileContext):
    """`{{ warp_divergence() }}`: why only part of a warp may reach the match ("" when the whole warp provably
    does), computed only when a template asks (cudamigrate/match/warp_flow.py)."""
    def why() -> str:
        got = divergence_of(ctx, m.unit, m.node)
        return got.describe() if got is not None else ""

    return why


def _fresh_namer(m: Match, ctx: FileContext):
    """`{{ fresh('info') }}`: a name for a variable a fix declares that cannot collide with another.

    A fix that declares `info` before each of two calls in one function would declare it twice and stop the
    file compiling. The plain name is kept when the file never spells it and the enclosing function holds
    this call only; otherwise the call's line number makes it unique. Every edit of one finding gets the
    same answer, so the declaration and its uses agree.
    """
    def fresh(base: str) -> str:
        data = ctx.source.data
        scope = m.node
        while parent_of(scope) is not None and scope.type != "function_definition":
            scope = parent_of(scope)
        s, e = m.abs(scope)
        calls = _calls_between(ctx, m.name, s, e)
        name = base
        if calls > 1 or _spelled(ctx, base):
            line = data.count(b"\n", 0, m.report_range[0]) + 1
            name = f"{base}_{line}"
        while name != base and _spelled(ctx, name):
            name += "_"
        return name
    return fresh


_WORD = re.compile(rb"\w+")


def _spelled(ctx: FileContext, name: str) -> bool:
    """Does the file spell `name` as a whole word? A set of the file's words, built once: a search of the whole
    file per finding made a function of N fixes cost N file lengths."""
    raw = name.encode()
    if not _WORD.fullmatch(raw):
        return re.search(rb"\b" + re.escape(raw) + rb"\b", ctx.source.data) is not None
    words = ctx.__dict__.get("_words")
    if words is None:
        words = ctx.__dict__["_words"] = set(_WORD.findall(ctx.source.data))
    return raw in words


def _calls_between(ctx: FileContext, api: str, s: int, e: int) -> int:
    """How many `api(` the text [s, e) holds (the positions found once per file and name, then bisected)."""
    raw = api.encode()
    if not _WORD.fullmatch(raw):
        return len(re.findall(rb"\b" + re.escape(raw) + rb"\s*\(", ctx.source.data[s:e]))
    memo = ctx.__dict__.setdefault("_call_spans", {})
    spans = memo.get(raw)
    if spans is None:
        found = list(re.finditer(rb"\b" + re.escape(raw) + rb"\s*\(", ctx.source.data))
        spans = memo[raw] = ([x.start() for x in found], [x.end() for x in found])  # no overlaps: both sorted
    return max(0, bisect_right(spans[1], e) - bisect_left(spans[0], s))


COMPAT_STATEMENTS = {"expression_statement", "declaration", "return_statement"}


def keep_compat_edits(edits: list[Edit], rule: Any, m: Match, ctx: FileContext, keep: tuple[int, int],
                      tctx: dict[str, Any] | None = None) -> list[Edit]:
    """`fix --keep-compat X.Y`: when the rewritten form first appeared after X.Y, keep both forms.

    A rule declares `fix.introduced_in` (the toolkit version that introduced the new form) and
    optionally `fix.compat_macro` (CUDART_VERSION, or CUDA_VERSION for driver code). The statement
    holding the edits is replaced by `#if MACRO >= NEW  /* cudamigrate: keep-compat X.Y */` new statement
    `#else` old statement `#endif`; the marker keeps CM410 from deleting the `#else` in a later run.
    Rewrites that cannot be wrapped (inside a macro definition, or not a statement of their own
    lines) lose their automatic fix rather than break the older toolkit.
    """
    from ..rules.schema import parse_version

    fix = rule.fix or {}
    intro = fix.get("introduced_in")
    if intro is None:
        return edits
    iv = parse_version(str(intro))
    if iv is None or iv <= keep:
        return edits
    if m.unit.in_macro:
        return []
    from .migrations.passes import dead_for_target

    if dead_for_target(m.node, ctx, target=keep):
        return edits  # already under a version guard that the older toolkit does not compile
    data = ctx.source.data
    stmt = statement_of(m.node)
    if stmt.type not in COMPAT_STATEMENTS:
        return []
    s, e = m.abs(stmt)
    if any(ed.start < s or ed.end > e for ed in edits):
        return []
    ls, le, indent = _line_bounds(data, s, e)
    tail = data[e:le].strip()
    if data[ls:s].strip() or (tail and not tail.startswith(b"//")):
        return []
    old = data[ls:le].decode("utf-8", "surrogateescape")
    new_parts, pos = [], ls
    for ed in sorted(edits, key=lambda x: (x.start, x.end)):
        new_parts.append(data[pos:ed.start].decode("utf-8", "surrogateescape"))
        new_parts.append(ed.text)
        pos = ed.end
    new_parts.append(data[pos:le].decode("utf-8", "surrogateescape"))
    new = "".join(new_parts)
    nl = ctx.source.newline.decode()
    if not old.endswith(("\n", "\r")):
        old += nl
        new += nl
    macro = render(str(fix.get("compat_macro", "CUDART_VERSION")), tctx or {}).strip()
    num = iv[0] * 1000 + iv[1] * 10
    # the marker tells CM410 (in this run and in later scans without --keep-compat) that the guard is intended:
    # it is decided only over the toolkits from keep.major.minor on, where it is not decided
    mark = f"/* cudamigrate: keep-compat {keep[0]}.{keep[1]} */"
    text = f"#if {macro} >= {num}  {mark}{nl}{new}#else{nl}{old}#endif{nl}"
    return [Edit(ls, le, text)]
