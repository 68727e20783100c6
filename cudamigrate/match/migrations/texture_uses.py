"""Texture and surface references, their uses analysed: every read, bind, attribute write and other use of a
reference in a file (`Migration`), and what makes one unsafe to rewrite (collisions, uses of its type).
Part of texture.py's migration."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import tree_sitter as ts

from ...parse.walk import captured
from ...parse.treesitter import Unit, query
from ...read.generated import GeneratedSpans
from ..context import FileContext, named_children, node_text, normalize
from ..matchers import identifier_nodes
from .texture_channel import writes_channel_desc
from .texture_refs import (REF_APIS, SURF_BINDS, SURF_FUNCS, TEX_BINDS, TEX_FIELDS, TEX_READS, Ref, getter_reason,
                           normalize_spaces)


def line_start(data: bytes, pos: int) -> int:
    return data.rfind(b"\n", 0, pos) + 1


def indent_at(data: bytes, pos: int) -> str:
    ls = line_start(data, pos)
    m = re.match(rb"[ \t]*", data[ls:pos])
    return m.group(0).decode("utf-8", "replace") if m else ""


def fn_name(call: ts.Node) -> tuple[str, bool]:
    fn = call.child_by_field_name("function")
    if fn is None:
        return "", False
    if fn.type == "template_function":
        nm = fn.child_by_field_name("name")
        return (node_text(nm) if nm is not None else ""), True
    if fn.type == "qualified_identifier" and node_text(fn).startswith("::"):
        return node_text(fn)[2:].strip(), False
    return node_text(fn), False


def function_of(node: ts.Node) -> ts.Node | None:
    cur = node.parent
    while cur is not None:
        if cur.type == "function_definition":
            return cur
        cur = cur.parent
    return None


def is_channel_desc(ctx: FileContext, text: str, ref: Ref | None = None) -> bool:
    t = normalize(text).lstrip("&*")
    if t.startswith("cudaCreateChannelDesc") or t.endswith(".channelDesc") or t.endswith("->channelDesc"):
        return True
    names = set(re.findall(r"cudaChannelFormatDesc\s*[&*]?\s*(\w+)", ctx.source.text))
    return t in names


@dataclass
class Use:
    node: ts.Node
    unit: Unit
    what: str  # read | surf | bind | attr | other
    detail: Any = None


class Migration:
    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.refs: dict[str, Ref] = {}  # the references of one kind being migrated (set by _run)
        self.data = ctx.source.data
        self.nl = ctx.source.newline.decode()

    def text(self, unit: Unit, node: ts.Node) -> str:
        s, e = unit.abs(node)
        return self.data[s:e].decode("utf-8", "surrogateescape")

    def classify(self, ref: Ref, unit: Unit, ident: ts.Node) -> Use:
        p = ident.parent
        node = ident
        addr = False
        if p is not None and p.type == "pointer_expression" and node_text(p).lstrip().startswith("&"):
            addr, node, p = True, p, p.parent
        if p is not None and p.type == "conditional_expression" and not _same_node(p.child_by_field_name("condition"), node):
            # `tex1Dfetch(flag ? texA : texB, i)`: both branches are references of the same type, so after the
            # migration both are texture objects and the selected one is read like a single reference
            cons, alt = p.child_by_field_name("consequence"), p.child_by_field_name("alternative")
            other = alt if _same_node(cons, node) else cons
            o = getattr(self, "refs", {}).get(node_text(other)) if other is not None and other.type == "identifier" else None
            if o is not None and o.kind == ref.kind and o.targs == ref.targs and o.name != ref.name:
                node, p = p, p.parent
                while p is not None and p.type == "parenthesized_expression":
                    node, p = p, p.parent
        if p is not None and p.type == "argument_list" and p.parent is not None and p.parent.type == "call_expression":
            call = p.parent
            args = named_children(p)
            idx = next((i for i, a in enumerate(args) if a.start_byte == node.start_byte and a.end_byte == node.end_byte), -1)
            fn, templ = fn_name(call)
            # already in object form (this file was fixed while the header declaring the reference was not yet)
            if fn.startswith("cudamigrate") or (templ and (fn in TEX_READS or fn in SURF_FUNCS) and not ref.local):
                return Use(ident, unit, "done")
            if ref.kind == "texture" and fn in TEX_READS and idx == 0 and not addr and fn not in self.ctx.defined_functions:
                want = TEX_READS[fn]
                ok = len(args) - 1 in (want if isinstance(want, tuple) else (want,))
                if templ:
                    return Use(ident, unit, "other", f"read with explicit template arguments in `{normalize_spaces(self.text(unit, call))}`")
                if not ok:
                    return Use(ident, unit, "other", f"`{fn}` called with {len(args)} arguments")
                return Use(ident, unit, "read", (call, fn))
            if ref.kind == "surface" and fn in SURF_FUNCS and idx in (0, 1) and not addr:
                return Use(ident, unit, "surf", call)
            binds = TEX_BINDS if ref.kind == "texture" else SURF_BINDS
            if fn in binds and idx == binds[fn]:
                return Use(ident, unit, "bind", (call, fn, addr))
            if fn in REF_APIS:
                return Use(ident, unit, "other", f"it is addressed through `{fn}` (line {self.line(unit, call)})")
            callee = fn or normalize_spaces(self.text(unit, call.child_by_field_name("function")))
            return Use(ident, unit, "other", f"it is passed to `{callee}` (line {self.line(unit, call)})")
        if p is not None and p.type == "field_expression" and not addr and p.child_by_field_name("argument") is not None \
                and p.child_by_field_name("argument").start_byte == ident.start_byte:
            fld = node_text(p.child_by_field_name("field"))
            if ref.kind == "texture" and fld in TEX_FIELDS:
                return Use(ident, unit, "attr", (p, fld))
            if fld == "channelDesc":
                par = p.parent
                written = par is not None and par.type == "assignment_expression" and par.child_by_field_name("left") is not None \
                    and par.child_by_field_name("left").start_byte == p.start_byte
                writer = None if written else writes_channel_desc(p)
                if writer:
                    return Use(ident, unit, "other", f"its `channelDesc` is written by `{writer}` (line {self.line(unit, p)})")
                if not written and ref.kind == "texture":
                    return Use(ident, unit, "chan", p)
                if written and ref.kind == "texture" and par.parent is not None and par.parent.type == "expression_statement":
                    # `tex.channelDesc = desc;` before a bind that passes its own descriptor: the object takes the
                    # descriptor from the bind, so the statement can go (checked in _migrate)
                    return Use(ident, unit, "chanset", par.parent)
                return Use(ident, unit, "other", f"its `channelDesc` is {'assigned' if written else 'read'} (line {self.line(unit, p)})")
            return Use(ident, unit, "other", f"its field `{fld}` has no texture-object counterpart here (line {self.line(unit, p)})")
        if ref.migrated and p is not None and p.type == "declaration" and re.search(
                r"cuda(Texture|Surface)Object_t", node_text(p.child_by_field_name("type") or p)):
            return Use(ident, unit, "done")
        if ref.migrated and _in_getter_static(ident):
            return Use(ident, unit, "done")  # `static cudamigrateTextureRef ref_ref = {..., &ref, ...};` (texture_getters.py)
        ctxnode = p if p is not None else ident
        fdef = function_of(ident) if p is not None and p.type == "return_statement" else None
        fdecl = fdef.child_by_field_name("declarator") if fdef is not None else None
        fname = returned_by(fdecl)
        if fname is not None:  # texture.py turns it into a "getter" use when texture_getters.py takes the getter
            return Use(ident, unit, "return", (p, fname, f"`{fname}` returns it (line {self.line(unit, ident)}): "
                                                         f"{getter_reason(fname, ref.kind)}"))
        return Use(ident, unit, "other", f"it is used in `{normalize_spaces(self.text(unit, ctxnode))[:60]}` (line {self.line(unit, ident)})")

    def line(self, unit: Unit, node: ts.Node) -> int:
        return self.ctx.source.position(unit.abs(node)[0])[0]


def _in_getter_static(ident: ts.Node) -> bool:
    """`&ref` in the initializer of the `cudamigrateTextureRef` a migrated getter describes its object with."""
    cur = ident.parent
    while cur is not None and cur.type in ("pointer_expression", "initializer_list", "init_declarator"):
        cur = cur.parent
    return cur is not None and cur.type == "declaration" and node_text(cur.child_by_field_name("type") or cur) == \
        "cudamigrateTextureRef"


def returned_by(declarator: ts.Node | None) -> str | None:
    """The name a function declarator declares when the function returns a reference (`T &name(...)`): a helper
    that hands a texture reference out by reference, not one that returns a copy of some value."""
    cur = declarator
    while cur is not None and cur.type in ("reference_declarator", "pointer_declarator"):
        cur = cur.named_children[-1] if cur.named_children else None
    if cur is None or cur.type != "function_declarator" or declarator is None or declarator.type != "reference_declarator":
        return None
    nm = cur.child_by_field_name("declarator")
    return node_text(nm) if nm is not None else None


def _same_node(a: ts.Node | None, b: ts.Node | None) -> bool:
    return a is not None and b is not None and a.start_byte == b.start_byte and a.end_byte == b.end_byte


def idents(ctx: FileContext, names: set[str]) -> list[tuple[Unit, ts.Node]]:
    made = GeneratedSpans.of(ctx.source.data)  # the helpers a fix inserted: their parameters are no uses
    out = [(u, n) for u, n in identifier_nodes(ctx, names, frozenset(("identifier",))) if u.abs(n)[0] not in made]
    out.sort(key=lambda un: un[0].abs(un[1]))  # file order: the first use is where a header's reference is reported
    return out


def name_collision(ctx: FileContext, ref: Ref) -> str | None:
    text = ctx.source.text
    names = [ref.obj] + ([ref.desc] if ref.kind == "texture" else [])
    for nm in names:
        if re.search(r"\b" + re.escape(nm) + r"\b", text):
            return f"the name `{nm}` the migration needs is already used in this file"
    return None


def macro_params(ctx: FileContext, macro: str) -> list[str]:
    m = re.search(rb"^[ \t]*#[ \t]*define[ \t]+" + re.escape(macro.encode()) + rb"\(([^)]*)\)", ctx.source.data, re.M)
    return [p.strip() for p in m.group(1).decode("utf-8", "replace").split(",")] if m else []


def named_reference(ref_arg: ts.Node | None, args: list[ts.Node], fn: str) -> str:
    """The reference a CM603 call names (its consistency group with CM601/CM602: fix/consistency.py)."""
    node = ref_arg if ref_arg is not None else (args[0] if fn in TEX_READS and args else args[-1] if args else None)
    name = normalize(node_text(node)).lstrip("&") if node is not None else ""
    return name if re.fullmatch(r"[A-Za-z_]\w*", name) else ""


_TYPE_DECLS = ("struct_specifier", "class_specifier", "union_specifier", "enum_specifier")


def project_types(root: ts.Node) -> dict[str, bool]:
    """Type names the file declares itself (`struct textureReference {...}`, `typedef ... surfaceReference;`),
    mapped to whether one such declaration is at file scope (outside any namespace or class)."""
    out: dict[str, bool] = {}
    q = query("(struct_specifier name: (type_identifier) @n body: (_)) (class_specifier name: (type_identifier) @n body: (_)) "
              "(union_specifier name: (type_identifier) @n body: (_)) (type_definition declarator: (type_identifier) @n)")
    for node in captured(q, root, "n"):
        anc, file_scope = node.parent, True
        while anc is not None:
            if anc.type in ("namespace_definition", "field_declaration_list"):
                file_scope = False
            anc = anc.parent
        name = node_text(node)
        out[name] = out.get(name, False) or file_scope
    return out


def project_type_use(node: ts.Node, declared: dict[str, bool]) -> bool:
    """The CUDA type is not meant: `node` names the project's own declaration of a type with that name, a use
    qualified by a namespace or class (`legacy::textureReference`; the CUDA type is global), or an unqualified use
    where the file declares the name at file scope."""
    name = node_text(node)
    if name not in declared:
        return False
    parent = node.parent
    if parent is not None and parent.type in (*_TYPE_DECLS, "type_definition"):
        return True
    if parent is not None and parent.type == "qualified_identifier":
        scope = parent.child_by_field_name("scope")
        return scope is not None and node_text(scope) not in ("", "::")
    return declared[name]
