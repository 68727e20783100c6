"""Turning a rule's `fix.edits` into byte-range edits for one match."""

from __future__ import annotations

from typing import Any

import tree_sitter as ts

from ..findings import Edit
from ..templates import render
from .conditions import evaluate, wrapper_of
from .context import FileContext, node_text
from .matchers import Match

STATEMENT_STOP = {"compound_statement", "translation_unit", "declaration_list", "field_declaration_list",
                  "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "case_statement"}


class EditError(Exception):
    pass


def statement_of(node: ts.Node) -> ts.Node:
    cur = node
    while cur.parent is not None and cur.parent.type not in STATEMENT_STOP:
        cur = cur.parent
    return cur


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


def _target(m: Match, ctx: FileContext, target: str) -> tuple[int, int]:
    if target == "node":
        return m.report_range
    if target == "name":
        if m.name_range is None:
            raise EditError("match has no name range")
        return m.name_range
    if target == "callee":
        if m.callee is None:
            raise EditError("match has no callee")
        return m.abs(m.callee)
    if target in ("args", "config"):
        if m.arglist is None:
            raise EditError("match has no argument list")
        s, e = m.abs(m.arglist)
        # inside the parentheses / <<< >>>
        if m.arglist.type == "kernel_call_syntax":
            return s + 3, e - 3
        return s + 1, e - 1
    if target.startswith(("arg.", "config.")):
        key = target.split(".", 1)[1]
        node = m.arg(key)
        if node is None:
            raise EditError(f"no argument {key!r}")
        return m.abs(node)
    if target == "field":
        if m.field_node is None:
            raise EditError("match has no field")
        return m.abs(m.field_node)
    if target == "receiver":
        if m.receiver is None:
            raise EditError("match has no receiver")
        return m.abs(m.receiver)
    if target == "statement":
        return m.abs(statement_of(m.node))
    if target.startswith("capture."):
        key = target.split(".", 1)[1]
        if key not in m.captures:
            raise EditError(f"no capture {key!r}")
        s, e, _ = m.captures[key]
        return s, e
    raise EditError(f"unknown edit target {target!r}")


def _arg_sep(m: Match, ctx: FileContext) -> str:
    """`, ` unless the call already puts each argument on its own line."""
    if len(m.args) >= 2:
        a, b = m.abs(m.args[-2]), m.abs(m.args[-1])
        between = ctx.source.data[a[1] : b[0]].decode("utf-8", "replace")
        if "\n" in between:
            return between[between.index(",") :] if "," in between else ", "
    return ", "


def build_edits(specs: list[dict[str, Any]], m: Match, ctx: FileContext, tctx: dict[str, Any]) -> list[Edit]:
    data = ctx.source.data
    edits: list[Edit] = []
    for spec in specs:
        if "when" in spec and not evaluate(spec["when"], m, ctx):
            continue
        if "replace" in spec:
            s, e = _target(m, ctx, spec["replace"])
            edits.append(Edit(s, e, render(str(spec["with"]), tctx)))
        elif "append_arg" in spec:
            text = render(str(spec["append_arg"]), tctx)
            if m.arglist is None:
                raise EditError("append_arg needs an argument list")
            if m.args:
                end = m.abs(m.args[-1])[1]
                edits.append(Edit(end, end, _arg_sep(m, ctx) + text))
            else:
                s, e = _target(m, ctx, "args")
                edits.append(Edit(s, e, text))
        elif "insert_arg" in spec:
            idx = m.arg_index(str(spec["insert_arg"]))
            text = render(str(spec["with"]), tctx)
            if idx is None:
                raise EditError(f"unknown argument {spec['insert_arg']!r}")
            if idx < len(m.args):
                s = m.abs(m.args[idx])[0]
                edits.append(Edit(s, s, text + ", "))
            elif m.args:
                end = m.abs(m.args[-1])[1]
                edits.append(Edit(end, end, ", " + text))
            else:
                s, e = _target(m, ctx, "args")
                edits.append(Edit(s, e, text))
        elif "delete_arg" in spec:
            idx = m.arg_index(str(spec["delete_arg"]))
            if idx is None or idx >= len(m.args):
                continue
            s, e = m.abs(m.args[idx])
            if idx > 0:
                s = m.abs(m.args[idx - 1])[1]  # drop the preceding comma too
            elif len(m.args) > 1:
                e = m.abs(m.args[1])[0]
            edits.append(Edit(s, e, ""))
        elif "delete" in spec:
            s, e = _target(m, ctx, spec["delete"])
            ls, le, _ = _line_bounds(data, s, e)
            if data[ls:s].strip() == b"" and data[e:le].strip() == b"":
                s, e = ls, le  # the statement owns its lines: remove them whole
            edits.append(Edit(s, e, ""))
        elif "insert_before" in spec or "insert_after" in spec:
            where = spec.get("insert_before") or spec.get("insert_after")
            s, e = _target(m, ctx, where)
            ls, le, indent = _line_bounds(data, s, e)
            nl = ctx.source.newline.decode()
            text = render(str(spec["with"]), {**tctx, "indent": indent})
            lines = [indent + ln if ln else ln for ln in text.split("\n")]
            block = nl.join(lines) + nl
            if "insert_before" in spec:
                edits.append(Edit(ls, ls, block))
            else:
                edits.append(Edit(le, le, block))
    return edits


def template_context(m: Match, ctx: FileContext, options: dict[str, Any]) -> dict[str, Any]:
    data = ctx.source.data
    args: dict[str, str] = {}
    argv: list[str] = []
    for i, node in enumerate(m.args):
        s, e = m.abs(node)
        t = data[s:e].decode("utf-8", "replace") if getattr(node, "located", True) else node_text(node)
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
        "text": data[s:e].decode("utf-8", "replace"),
        "field": node_text(m.field_node) if m.field_node is not None else "",
        "receiver": node_text(m.receiver) if m.receiver is not None else "",
        "options": options,
        "data": m.rule.data,
        "vars": m.vars,
        "groups": m.vars.get("groups", {}),
        "target_cuda": "%d.%d" % ctx.target,
        "file_ext": ctx.ext,
        "nl": ctx.source.newline.decode(),
        "rule": {"id": m.rule.id, "deprecated_in": m.rule.deprecated_in, "removed_in": m.rule.removed_in},
    }
