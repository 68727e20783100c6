"""A texture reference handed out by a getter, migrated with it: `texture<T, d, m> &get_ref(void) { return ref; }`.

Legacy code shared a reference between files this way (Parboil's sad: the getter is defined beside `ref` in sad4.cu,
declared in sad4.h, and main.cu binds through it: `cudaBindTextureToArray(get_ref(), array)`). The object that
replaces a reference is published through a `__constant__` handle that only code of the reference's own file can
write (without relocatable device code), so the getter now hands out what a bind needs from that file: a
`cudamigrateTextureRef` holding the object's host-side handle, its `cudaTextureDesc`, the `__constant__` symbol and
the reference's channel descriptor (`get_ref().channelDesc` keeps its meaning), returned by reference from a static
in the getter. Binds through it call the stand-ins with those members; the getter's declared type changes in every
declaration. All of it is one consistency group with the reference (`ref@its file`), so it moves in every file or
in none.

Migrated only when that is provably the same program: exactly one definition in the run, whose body is only
`return ref;`, with a file-scope texture reference `ref` of the same file and type; every declaration of the getter
returns that type by reference; every call is `get_ref()` as the reference argument of a bind or unbind, or reads
its `channelDesc`. Anything else keeps the manual findings (texture_refs.getter_reason).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import tree_sitter as ts

from ...findings.model import Edit
from ...parse import walk
from ...rules.schema import Rule
from ..context import FileContext, named_children, node_text, normalize
from ..matchers import Match
from .texture_refs import TEX_BINDS, normalize_spaces, other_context, refs_in_scope
from .texture_uses import line_start

GUARD = "CUDAMIGRATE_TEXOBJ_REF"
STRUCT = """#ifndef CUDAMIGRATE_TEXOBJ_REF
#define CUDAMIGRATE_TEXOBJ_REF
/* cudamigrate CM601: what a function that handed out a texture reference now hands out, for binds in any file:
   the object's host-side handle and state, the __constant__ handle kernels read, and the reference's channelDesc. */
#include <cuda_runtime.h>
struct cudamigrateTextureRef {
    cudaTextureObject_t *obj;
    cudaTextureDesc *desc;
    const void *symbol;
    cudaChannelFormatDesc channelDesc;
};
#endif /* CUDAMIGRATE_TEXOBJ_REF */
"""
TYPE = "cudamigrateTextureRef"


@dataclass(frozen=True)
class Getter:
    """A getter that can be migrated with its reference."""

    name: str
    ref: str  # the reference it returns
    declared_in: Path  # the reference's (and the getter's definition's) file, resolved
    targs: str  # the reference's template arguments (normalized)
    elem: str  # its element type, for cudaCreateChannelDesc<elem>()

    @property
    def group(self) -> str:
        from ...findings.model import SCOPE

        return f"{self.ref}{SCOPE}{self.declared_in}"

    def static(self) -> str:
        """The getter's new body statement: its static description of the reference's object."""
        return (f"static {TYPE} cudamigrate_ref = {{&{self.ref}_obj, &{self.ref}_desc, &{self.ref}, "
                f"cudaCreateChannelDesc<{self.elem}>()}};")


def returned_type(fn: ts.Node) -> tuple[ts.Node, ts.Node] | None:
    """(the `texture<...>` type node, the function declarator) of a declaration or definition of a function that
    returns a texture reference by reference and takes no arguments; None otherwise."""
    t = fn.child_by_field_name("type")
    d = fn.child_by_field_name("declarator")
    if t is None or d is None or t.type != "template_type" or d.type != "reference_declarator":
        return None
    name = t.child_by_field_name("name")
    if name is None or node_text(name) != "texture":
        return None
    fd = d.named_children[-1] if d.named_children else None
    if fd is None or fd.type != "function_declarator":
        return None
    params = fd.child_by_field_name("parameters")
    ps = named_children(params) if params is not None else []
    if len(ps) > 1 or (ps and normalize(node_text(ps[0])) != "void"):
        return None
    if any(c.type in ("attribute_specifier", "ms_declspec_modifier") or node_text(c) in ("__device__", "__global__")
           for c in fn.children):
        return None
    return t, fd


def _targs(t: ts.Node) -> str:
    a = t.child_by_field_name("arguments")
    return ", ".join(normalize_spaces(node_text(c)) for c in named_children(a)) if a is not None else ""


def _name(fd: ts.Node) -> str:
    n = fd.child_by_field_name("declarator")
    return node_text(n) if n is not None else ""


def _definition(octx: FileContext, fname: str) -> Getter | None | bool:
    """The getter defined in `octx`: a Getter, False when a definition of that name is not a migratable getter,
    None when the file defines none."""
    found: Getter | None | bool = None
    for fn in walk.typed_nodes(octx.main.root, frozenset(("function_definition",))):
        rt = returned_type(fn)
        d = fn.child_by_field_name("declarator")
        name = _name(rt[1]) if rt is not None else ""
        if rt is None:
            if d is not None and fname in node_text(d).replace("(", " ( ").split():
                return False  # a function of that name of another shape
            continue
        if name != fname:
            continue
        if found is not None:
            return False
        body = fn.child_by_field_name("body")
        stmts = named_children(body) if body is not None else []
        ret = stmts[0] if len(stmts) == 1 and stmts[0].type == "return_statement" else None
        val = named_children(ret)[0] if ret is not None and named_children(ret) else None
        if val is None or val.type != "identifier":
            return False
        local = {r.name: r for r in refs_in_scope(octx)[0]}
        r = local.get(node_text(val))
        if r is None or r.kind != "texture" or r.problem or r.migrated or r.targs != _targs(rt[0]) or r.same_elsewhere:
            return False
        found = Getter(fname, r.name, Path(os.path.realpath(octx.source.path)), r.targs, r.elem)
    return found


def _uses_allowed(octx: FileContext, g: Getter) -> bool:
    """Every use of the getter's name in the file is one the migration rewrites or keeps valid."""
    for unit in octx.units:
        if unit is not octx.main:
            if g.name.encode() in (unit.root.text or b""):
                return False  # spelled inside a macro body: not rewritten there
            continue
        for ident in walk.typed_nodes(unit.root, frozenset(("identifier",))):
            if node_text(ident) != g.name:
                continue
            p = ident.parent
            if p is not None and p.type == "function_declarator":
                decl = p.parent.parent if p.parent is not None else None  # reference_declarator -> declaration
                rt = returned_type(decl) if decl is not None else None
                if rt is None or not _same(rt[1], p) or _targs(rt[0]) != g.targs:
                    return False
                continue
            if call_use(ident) is None:
                return False
    return True


def _same(a: ts.Node | None, b: ts.Node | None) -> bool:
    return a is not None and b is not None and (a.start_byte, a.end_byte, a.type) == (b.start_byte, b.end_byte, b.type)


def call_use(ident: ts.Node) -> tuple[str, ts.Node, ts.Node] | None:
    """("bind", the bind call, the `get_ref()` call) or ("channelDesc", ...) for a use of a getter's name that the
    migration handles; None for any other."""
    call = ident.parent
    if call is None or call.type != "call_expression" or not _same(call.child_by_field_name("function"), ident):
        return None
    args = call.child_by_field_name("arguments")
    if args is None or named_children(args):
        return None
    p = call.parent
    if p is not None and p.type == "field_expression" and node_text(p.child_by_field_name("field") or p) == "channelDesc" \
            and node_text(p.child_by_field_name("operator") or p) == ".":
        return ("channelDesc", p, call)
    if p is not None and p.type == "argument_list" and p.parent is not None and p.parent.type == "call_expression":
        bind = p.parent
        fn = node_text(bind.child_by_field_name("function") or bind)
        idx = TEX_BINDS.get(fn)
        args_b = named_children(p)
        if idx is not None and idx < len(args_b) and _same(args_b[idx], call):
            return ("bind", bind, call)
    return None


def find_getter(ctx: FileContext, fname: str) -> Getter | None:
    """The run's getter `fname` when the migration can take it (see the module docstring); kept per run."""
    proj = ctx.project
    program = proj.program(ctx.source.path, fname) if proj is not None and proj.files else None
    # kept per program; a file outside any program (a run of one buffer: `fix -`, the editor, an index with no
    # files) is judged alone, every time: one index serves many such buffers, and (fname, None) would hand one
    # buffer's getter to the next (bench/fuzz.py: a file's findings alone differed from the same file in a batch)
    cache: dict[tuple[str, Path | None], Getter | None] = \
        proj.cache.setdefault("texture-getters", {}) if proj is not None and program is not None else {}
    if (fname, program) in cache:
        return cache[(fname, program)]
    # the files of this program (read/project_index.py `program`: joined by #include and by directory): another
    # program's getter of the same name is another function
    files = [f for f in proj.files if proj.program(Path(f), fname) == program] if program is not None else [ctx.source.path]
    word = fname.encode()
    got: Getter | None = None
    ctxs: list[FileContext] = []
    for f in files:
        here = os.path.realpath(f) == os.path.realpath(ctx.source.path)  # (Path.resolve: RuntimeError on a loop)
        data = ctx.source.data if here else (
            proj.read(Path(f)) if proj is not None else None)
        if data is None:  # a file of the program whose uses cannot be looked at (too large, unreadable, gone)
            got, ctxs = None, []
            break
        if word not in data:
            continue
        octx = ctx if here else (
            other_context(ctx, Path(f)) if proj is not None else None)
        if octx is None:
            got = None
            break
        ctxs.append(octx)
        d = _definition(octx, fname)
        if d is False or (d is not None and got is not None):
            got, ctxs = None, []
            break
        if isinstance(d, Getter):
            got = d
    if got is not None and not all(_uses_allowed(o, got) for o in ctxs):
        got = None
    if got is not None and proj is not None and proj.files:
        # a header outside the run that declares the getter would keep `texture<...> &get_ref(void);`
        run = {os.path.realpath(f) for f in proj.files}
        for o in ctxs:
            for h in proj.reachable(o.source.path, o.source.data):
                data = proj.read(h)
                if os.path.realpath(h) not in run and (data is None or word in data):  # (None: not looked at)
                    got = None
    cache[(fname, program)] = got
    return got


def struct_edit_needed(ctx: FileContext, g: Getter) -> bool:
    """Whether this file gets the struct: it declares the getter and no project header it includes does."""
    if GUARD.encode() in ctx.source.data:
        return False
    proj = ctx.project
    if proj is None:
        return True
    for h in proj.reachable(ctx.source.path, ctx.source.data):
        data = proj.read(h)
        if data is not None and (GUARD.encode() in data or _declares(data, g)):
            return False
    return True


def _declares(data: bytes, g: Getter) -> bool:
    """A header spelling the getter's declaration (`texture<...> &name(`), which gets the struct itself."""
    import re

    return re.search(rb"\btexture\s*<[^;{}]*>\s*&\s*" + re.escape(g.name.encode()) + rb"\s*\(", data) is not None


def _vars(m: Match, g: Getter, reason: str) -> Match:
    m.vars.update({"reference": g.ref, "kind": "texture", "type": f"texture<{g.targs}>", "reason": reason, "local": False,
                   "reads": 0, "binds": 0, "updates": "", "element": g.elem, "mode": "", "getter": g.name,
                   "getter_file": g.declared_in.name, "reference_group": g.group, "function": m.name})
    m.fix_applicability = "unsafe"
    return m


def getter_type_match(rule: Rule, ctx: FileContext, node: ts.Node, g: Getter) -> Match:
    """The getter's declared type `texture<...>` (a declaration or its definition) -> `cudamigrateTextureRef`, and
    the struct where no header this file includes declares the getter."""
    m = Match(rule=rule, unit=ctx.main, node=node, name=node_text(node), written=node_text(node))
    s, e = ctx.main.abs(node)
    m.edits = [Edit(s, e, TYPE)]
    if struct_edit_needed(ctx, g):  # on the lines before the declaration
        decl = node.parent if node.parent is not None else node
        at = line_start(ctx.source.data, ctx.main.abs(decl)[0])
        m.edits.insert(0, Edit(at, at, STRUCT))
    return _vars(m, g, "")


def getter_bind_match(rule: Rule, ctx: FileContext, call: ts.Node, fn: str, gcall: ts.Node, g: Getter,
                      helpers: bool) -> Match:
    """A bind or unbind through the getter -> the stand-in with the members it hands out (manual where the call
    has a form the stand-ins do not take: a bind that leaves the size to its default)."""
    from .texture_edits import HELPERS, helper_position
    from .texture_uses import is_channel_desc

    m = Match(rule=rule, unit=ctx.main, node=call, name=fn, written=fn)
    args = [node_text(a) for a in named_children(call.child_by_field_name("arguments"))]
    G = node_text(gcall)
    n = len(args)
    text = None
    if fn in ("cudaBindTextureToArray", "cudaBindTextureToMipmappedArray") and n in (2, 3):
        helper = "cudamigrateBindTextureToArray" if fn == "cudaBindTextureToArray" else "cudamigrateBindTextureToMipmappedArray"
        text = f"{helper}({G}.obj, {G}.symbol, {args[1]}, {G}.desc)"
    elif fn == "cudaBindTexture" and (n == 5 or (n == 4 and not is_channel_desc(ctx, args[3]))):
        # (4 arguments ending in a channel descriptor leave the size to its default, as for a reference of the file)
        desc, size = (args[3], args[4]) if n == 5 else (f"{G}.channelDesc", args[3])
        text = f"cudamigrateBindTexture({args[0]}, {G}.obj, {G}.symbol, {args[2]}, {desc}, {size}, {G}.desc)"
    elif fn == "cudaBindTexture2D" and n in (6, 7):
        desc, rest = (args[3], args[4:]) if n == 7 else (f"{G}.channelDesc", args[3:])
        text = f"cudamigrateBindTexture2D({args[0]}, {G}.obj, {G}.symbol, {args[2]}, {desc}, {', '.join(rest)}, {G}.desc)"
    elif fn == "cudaUnbindTexture" and n == 1:
        text = f"cudamigrateUnbindTexture({G}.obj)"
    if text is None:
        why = (f"`{fn}` through `{g.name}()` leaves the size to its default (the whole address space), which a "
               "texture object cannot take: pass the size in bytes" if fn == "cudaBindTexture" and n == 4 else
               f"`{fn}` with {n} argument(s) through `{g.name}()` has no stand-in form")
        m.vars.update({"function": fn, "reason": why,
                       "reference": g.ref, "reference_group": g.group})
        m.edits = []
        m.fix_applicability = "manual"
        return m
    s, e = ctx.main.abs(call)
    m.edits = [Edit(s, e, text)]
    if helpers:
        hp = helper_position(ctx, s)
        m.edits.insert(0, Edit(hp, hp, HELPERS))
    return _vars(m, g, f"`{fn}` binds the reference `{g.name}()` hands out, now the description of texture object "
                       f"`{g.ref}` of {g.declared_in.name}: the stand-in publishes the object there")
