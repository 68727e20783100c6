"""Texture and surface references, their edits built: the object declarations, the bind helpers inserted once
per file, binds, reads and unbinds rewritten, one finding per reference carrying them all (`migrate`).
Part of texture.py's migration."""

from __future__ import annotations

import os

import tree_sitter as ts

from ...findings.model import SCOPE, Edit
from ...parse.treesitter import Unit
from ...rules.schema import Rule
from ..context import FileContext, named_children, node_text, normalize
from ..matchers import Match
from .texture_channel import channel_desc_edit
from .texture_refs import HELPER_GUARD, TEX_FIELDS, UPDATE_GUARD, Ref, normalize_spaces
from .texture_uses import Migration, Use, name_collision, function_of, indent_at, is_channel_desc, line_start


def _desc_init(ref: Ref) -> str:
    norm = ref.ctor[0] if len(ref.ctor) > 0 else None
    fmode = ref.ctor[1] if len(ref.ctor) > 1 else "cudaFilterModePoint"
    amode = ref.ctor[2] if len(ref.ctor) > 2 else "cudaAddressModeClamp"
    init = f"{{{{{amode}, {amode}, {amode}}}, {fmode}, {ref.mode}"
    if norm is not None and normalize(norm) not in ("0", "false"):
        init += f", 0, {{0, 0, 0, 0}}, {norm}"
    return init + "}"


def _new_declaration(ref: Ref, indent: str, nl: str) -> str:
    if ref.kind == "texture":
        lines = [
            f"// cudamigrate CM601: {ref.name} was texture<{ref.targs}>; device code reads the texture object in `{ref.name}`",
            f"static cudaTextureDesc {ref.desc} = {_desc_init(ref)};",
            f"static cudaTextureObject_t {ref.obj} = 0;",
            f"{ref.storage}__constant__ cudaTextureObject_t {ref.name};",
        ]
    else:
        lines = [
            f"// cudamigrate CM602: {ref.name} was surface<{ref.targs}>; device code uses the surface object in `{ref.name}`",
            f"static cudaSurfaceObject_t {ref.obj} = 0;",
            f"{ref.storage}__constant__ cudaSurfaceObject_t {ref.name};",
        ]
    return (nl + indent).join(lines)


HELPERS = r"""
// cudamigrate CM601/CM602: stand-ins for the texture/surface reference API removed in CUDA 12.0.
// Each creates an object from the reference's state, publishes it to the __constant__ handle the
// kernels read, then destroys the object bound before (cudaMemcpyToSymbol from pageable memory
// synchronizes the stream first, so kernels already queued on it are done with the old object).
#ifndef CUDAMIGRATE_TEXOBJ_HELPERS
#define CUDAMIGRATE_TEXOBJ_HELPERS
#include <string.h>
inline cudaError_t cudamigratePublishTexture(cudaTextureObject_t *obj, const void *symbol,
                                             const cudaResourceDesc *res, const cudaTextureDesc *tex)
{
    cudaTextureObject_t old = *obj;
    cudaError_t err = cudaCreateTextureObject(obj, res, tex, NULL);
    if (err != cudaSuccess) {
        *obj = old;
        return err;
    }
    err = cudaMemcpyToSymbol(symbol, obj, sizeof(*obj));
    if (old != 0)
        cudaDestroyTextureObject(old);
    return err;
}
/* Texture objects need a base address aligned to cudaDevAttrTextureAlignment, where cudaBindTexture*()
   returned the misalignment in *offset: bind the aligned-down address and return the same offset. */
inline size_t cudamigrateTextureOffset(size_t *offset, const void *devPtr)
{
    if (offset == NULL)
        return 0;
    int dev = 0, align = 1;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&align, cudaDevAttrTextureAlignment, dev);
    *offset = (size_t)devPtr % (size_t)(align > 0 ? align : 1);
    return *offset;
}
inline cudaError_t cudamigrateBindTexture(size_t *offset, cudaTextureObject_t *obj, const void *symbol,
                                          const void *devPtr, cudaChannelFormatDesc desc, size_t size,
                                          const cudaTextureDesc *tex)
{
    size_t off = cudamigrateTextureOffset(offset, devPtr);
    cudaResourceDesc res;
    memset(&res, 0, sizeof(res));
    res.resType = cudaResourceTypeLinear;
    res.res.linear.devPtr = (char *)devPtr - off;
    res.res.linear.desc = desc;
    res.res.linear.sizeInBytes = size + off;
    return cudamigratePublishTexture(obj, symbol, &res, tex);
}
inline cudaError_t cudamigrateBindTexture2D(size_t *offset, cudaTextureObject_t *obj, const void *symbol,
                                            const void *devPtr, cudaChannelFormatDesc desc, size_t width,
                                            size_t height, size_t pitch, const cudaTextureDesc *tex)
{
    size_t off = cudamigrateTextureOffset(offset, devPtr);
    size_t texel = (size_t)(desc.x + desc.y + desc.z + desc.w) / 8;
    if (off != 0 && (texel == 0 || off % texel != 0))
        return cudaErrorInvalidValue;
    cudaResourceDesc res;
    memset(&res, 0, sizeof(res));
    res.resType = cudaResourceTypePitch2D;
    res.res.pitch2D.devPtr = (char *)devPtr - off;
    res.res.pitch2D.desc = desc;
    res.res.pitch2D.width = width + (off != 0 ? off / texel : 0);
    res.res.pitch2D.height = height;
    res.res.pitch2D.pitchInBytes = pitch;
    return cudamigratePublishTexture(obj, symbol, &res, tex);
}
inline cudaError_t cudamigrateBindTextureToArray(cudaTextureObject_t *obj, const void *symbol,
                                                 cudaArray_const_t array, const cudaTextureDesc *tex)
{
    cudaResourceDesc res;
    memset(&res, 0, sizeof(res));
    res.resType = cudaResourceTypeArray;
    res.res.array.array = (cudaArray_t)array;
    return cudamigratePublishTexture(obj, symbol, &res, tex);
}
inline cudaError_t cudamigrateBindTextureToMipmappedArray(cudaTextureObject_t *obj, const void *symbol,
                                                          cudaMipmappedArray_const_t mipmap,
                                                          const cudaTextureDesc *tex)
{
    cudaResourceDesc res;
    memset(&res, 0, sizeof(res));
    res.resType = cudaResourceTypeMipmappedArray;
    res.res.mipmap.mipmap = (cudaMipmappedArray_t)mipmap;
    return cudamigratePublishTexture(obj, symbol, &res, tex);
}
/* cudaUnbindTexture did not wait for kernels, and kernels still running may read the object, which must not be
   destroyed under them: the object stays until the next bind of the reference replaces and destroys it (after
   the queued kernels are done, as above), or until the program ends. */
inline cudaError_t cudamigrateUnbindTexture(cudaTextureObject_t *obj)
{
    (void)obj;
    return cudaSuccess;
}
inline cudaError_t cudamigrateBindSurfaceToArray(cudaSurfaceObject_t *obj, const void *symbol,
                                                 cudaArray_const_t array)
{
    cudaResourceDesc res;
    memset(&res, 0, sizeof(res));
    res.resType = cudaResourceTypeArray;
    res.res.array.array = (cudaArray_t)array;
    cudaSurfaceObject_t old = *obj;
    cudaError_t err = cudaCreateSurfaceObject(obj, &res);
    if (err != cudaSuccess) {
        *obj = old;
        return err;
    }
    err = cudaMemcpyToSymbol(symbol, obj, sizeof(*obj));
    if (old != 0)
        cudaDestroySurfaceObject(old);
    return err;
}
#endif /* CUDAMIGRATE_TEXOBJ_HELPERS */

"""
# after the stand-ins (it calls cudamigratePublishTexture); inserted only where an attribute is written after a bind
UPDATE_HELPER = r"""#ifndef CUDAMIGRATE_TEXOBJ_UPDATE
#define CUDAMIGRATE_TEXOBJ_UPDATE
/* cudamigrate CM601: an attribute of the reference (filterMode, addressMode, normalized, ...) written after the bind
   took effect at the next launch; an object takes its attributes when it is created: create it again over the
   same resource with the attributes as they are now and publish it (the old one goes as at a bind). */
inline cudaError_t cudamigrateUpdateTexture(cudaTextureObject_t *obj, const void *symbol, const cudaTextureDesc *tex)
{
    if (*obj == 0)
        return cudaSuccess; /* not bound yet: the bind takes the attributes */
    cudaResourceDesc res;
    cudaError_t err = cudaGetTextureObjectResourceDesc(&res, *obj);
    if (err != cudaSuccess)
        return err;
    return cudamigratePublishTexture(obj, symbol, &res, tex);
}
#endif /* CUDAMIGRATE_TEXOBJ_UPDATE */

"""


def helper_position(ctx: FileContext, before: int) -> int:
    """After the last top-level #include preceding `before`; else the start of the first top-level item."""
    root = ctx.main.root
    pos = None
    first = None
    for c in root.children:
        if c.type == "comment":
            continue
        if first is None:
            first = c.start_byte
        if c.type == "preproc_include" and c.end_byte <= before:
            pos = c.end_byte
            if not ctx.source.data[c.start_byte:c.end_byte].endswith(b"\n"):
                e = ctx.source.data.find(b"\n", c.end_byte)
                pos = len(ctx.source.data) if e == -1 else e + 1
    if pos is not None:
        return pos
    return line_start(ctx.source.data, first if first is not None else 0)


def _bind_edit(mig: Migration, ref: Ref, unit: Unit, call: ts.Node, fn: str, addr: bool) -> tuple[Edit | None, str | None]:
    args = [mig.text(unit, a) for a in named_children(call.child_by_field_name("arguments"))]
    s, e = unit.abs(call)
    obj, sym, desc = f"&{ref.obj}", f"&{ref.name}", f"&{ref.desc}"

    def chan(text: str) -> str:
        t = normalize(text)
        if t in (f"{ref.name}.channelDesc", f"&{ref.name}.channelDesc", f"{ref.name}->channelDesc"):
            return f"cudaCreateChannelDesc<{ref.elem}>()"
        if addr:  # C API: the descriptor is passed by pointer
            return text.strip()[1:].strip() if text.strip().startswith("&") else f"*({text})"
        return text

    n = len(args)
    if fn == "cudaBindTexture":
        if n == 5:
            d, size = chan(args[3]), args[4]
        elif n == 4 and not is_channel_desc(mig.ctx, args[3], ref):
            d, size = f"cudaCreateChannelDesc<{ref.elem}>()", args[3]
        else:
            return None, (f"`cudaBindTexture` at line {mig.line(unit, call)} leaves the size to its default (the whole "
                          "address space), which a texture object cannot take: pass the size in bytes")
        return Edit(s, e, f"cudamigrateBindTexture({args[0]}, {obj}, {sym}, {args[2]}, {d}, {size}, {desc})"), None
    if fn == "cudaBindTexture2D":
        if n == 7:
            d, rest = chan(args[3]), args[4:]
        elif n == 6:
            d, rest = f"cudaCreateChannelDesc<{ref.elem}>()", args[3:]
        else:
            return None, f"`cudaBindTexture2D` at line {mig.line(unit, call)} has {n} arguments"
        return Edit(s, e, f"cudamigrateBindTexture2D({args[0]}, {obj}, {sym}, {args[2]}, {d}, {', '.join(rest)}, {desc})"), None
    if fn in ("cudaBindTextureToArray", "cudaBindTextureToMipmappedArray"):
        if n not in (2, 3):
            return None, f"`{fn}` at line {mig.line(unit, call)} has {n} arguments"
        helper = "cudamigrateBindTextureToArray" if fn == "cudaBindTextureToArray" else "cudamigrateBindTextureToMipmappedArray"
        return Edit(s, e, f"{helper}({obj}, {sym}, {args[1]}, {desc})"), None
    if fn == "cudaUnbindTexture":
        return Edit(s, e, f"cudamigrateUnbindTexture({obj})"), None
    if fn == "cudaBindSurfaceToArray":
        if n not in (2, 3):
            return None, f"`{fn}` at line {mig.line(unit, call)} has {n} arguments"
        return Edit(s, e, f"cudamigrateBindSurfaceToArray({obj}, {sym}, {args[1]})"), None
    return None, f"`{fn}` is not handled"


def _attr_edits(unit: Unit, p: ts.Node, desc: str, fld: str) -> list[Edit]:
    """`tex.filterMode` -> `tex_desc.filterMode` (`tex.normalized` -> `tex_desc.normalizedCoords`) as renames of
    its identifiers, not one edit over the expression: the fix's syntax guard checks a file with its renames
    undone, since tree-sitter's recovery around a statement macro without `;` (`CUDA_ERRCK` on the line before)
    moves with a name's length; one edit over the whole expression was refused as a new syntax error there and
    withheld the reference's migration in every file (Parboil rpes)."""
    arg, name = p.child_by_field_name("argument"), p.child_by_field_name("field")
    if arg is None or arg.type != "identifier" or name is None:
        s, e = unit.abs(p)
        return [Edit(s, e, f"{desc}.{TEX_FIELDS[fld]}")]
    out = [Edit(*unit.abs(arg), desc)]
    if TEX_FIELDS[fld] != fld:
        out.append(Edit(*unit.abs(name), TEX_FIELDS[fld]))
    return out


def _declaration_edits(ref: Ref, data: bytes, nl: str) -> list[Edit]:
    """Replace the reference's declaration by the object form (taking it out of a multi-name declaration)."""
    d = ref.decl
    s, e = ref.unit.abs(d)
    decls = d.children_by_field_name("declarator")
    if len(decls) == 1:
        return [Edit(s, e, _new_declaration(ref, indent_at(data, s), nl))]
    # several references in one declaration: take this one out, declare its object before it
    i = next(i for i, x in enumerate(decls) if x.start_byte == ref.declarator.start_byte)
    if i + 1 < len(decls):
        rs, re_ = ref.unit.abs(decls[i])[0], ref.unit.abs(decls[i + 1])[0]
    else:
        rs, re_ = ref.unit.abs(decls[i - 1])[1], ref.unit.abs(decls[i])[1]
    ls = line_start(data, s)
    indent = indent_at(data, s)
    return [Edit(rs, re_, ""), Edit(ls, ls, indent + _new_declaration(ref, indent, nl) + nl)]


def _bind_passes_descriptor(mig: Migration, ref: Ref, unit: Unit, call: ts.Node, fn: str) -> bool:
    """Whether a bind brings its own channel descriptor (or binds an array, which has one), so that a
    `channelDesc` assigned to the reference before does not matter."""
    args = named_children(call.child_by_field_name("arguments"))
    if fn in ("cudaBindTextureToArray", "cudaBindTextureToMipmappedArray"):
        return True
    pos = {"cudaBindTexture": (5, 3), "cudaBindTexture2D": (7, 3)}.get(fn)
    if pos is None or len(args) != pos[0]:
        return False
    return "channelDesc" not in normalize(mig.text(unit, args[pos[1]]))


def _delete_statement(data: bytes, s: int, e: int) -> Edit:
    """Delete a statement, with its line when nothing else is on it."""
    ls = line_start(data, s)
    le = data.find(b"\n", e)
    le = len(data) if le == -1 else le + 1
    if not data[ls:s].strip() and not data[e:le].strip():
        return Edit(ls, le, "")
    return Edit(s, e, "")


def _written_statement(field: ts.Node) -> ts.Node | None:
    """The statement `tex.f = v;` (or `tex.addressMode[i] = v;`) that writes the attribute `field` names, when it
    is a statement of a block (where a call can follow it); None for a read or any other shape."""
    target = field
    if target.parent is not None and target.parent.type == "subscript_expression":
        target = target.parent
    assign = target.parent
    if assign is None or assign.type != "assignment_expression" or not _same(assign.child_by_field_name("left"), target):
        return None
    stmt = assign.parent
    if stmt is None or stmt.type != "expression_statement" or stmt.parent is None or stmt.parent.type != "compound_statement":
        return None
    return stmt


def _is_read(field: ts.Node) -> bool:
    """Whether the attribute `field` names is only read there (not assigned, incremented or decremented)."""
    target = field.parent if field.parent is not None and field.parent.type == "subscript_expression" else field
    par = target.parent
    if par is None:
        return True
    if par.type == "assignment_expression":
        return not _same(par.child_by_field_name("left"), target)
    return par.type != "update_expression"


def _same(a: ts.Node | None, b: ts.Node) -> bool:
    return a is not None and (a.start_byte, a.end_byte) == (b.start_byte, b.end_byte)


def _after_statement(data: bytes, end: int, indent: str, nl: str, text: str) -> Edit:
    """`text` on a line of its own after the statement ending at `end` (after a `//` comment on its line)."""
    le = data.find(b"\n", end)
    le = len(data) if le == -1 else le - 1 if data[le - 1 : le] == b"\r" else le
    rest = data[end:le].strip()
    at = le if not rest or rest.startswith(b"//") else end
    return Edit(at, at, nl + indent + text)


def _update_helper_edit(ctx: FileContext, data: bytes, nl: str, first: int) -> Edit:
    """Where the update helper goes when the stand-ins are already there: after their block in this file, else
    (an included header holds them) after the includes."""
    end = data.find(f"#endif /* {HELPER_GUARD} */".encode())
    if end != -1:
        le = data.find(b"\n", end)
        at = len(data) if le == -1 else le + 1
        return Edit(at, at, nl + UPDATE_HELPER.rstrip("\n").replace("\n", nl) + nl)
    hp = helper_position(ctx, first)
    return Edit(hp, hp, nl + UPDATE_HELPER.replace("\n", nl))


def migrate(rule: Rule, ctx: FileContext, ref: Ref, uses: list[Use], mig: Migration,
            helpers_present: frozenset[str]) -> Match | None:
    """`helpers_present`: the guards of the helper blocks in included headers (nothing is inserted again)."""
    data = ctx.source.data
    reasons: list[str] = []
    edits: list[Edit] = []
    if ref.problem:
        reasons.append(ref.problem)
    if ref.local:
        c = name_collision(ctx, ref)
        if c:
            reasons.append(c)
    elif not uses:
        return None
    needs_helpers = False
    chan_reads: list[int] = []  # lines reading `tex.channelDesc`
    chan_sets: list[int] = []  # lines assigning it
    implicit_desc: list[int] = []  # lines of binds that take the descriptor from the reference
    binds: list[tuple[int, ts.Node | None]] = []  # (abs start, function)
    attrs: list[tuple[int, ts.Node | None, int, ts.Node, Unit]] = []  # (abs start, function, line, field, unit)
    unbinds: list[tuple[int, ts.Node | None]] = []
    for u in uses:
        if u.what == "other":
            reasons.append(str(u.detail))
        elif u.what == "read":
            call, fn = u.detail
            rt = ref.read_type(fn)
            if rt is None:
                reasons.append(f"no object form of `{fn}` for texture<{ref.targs}> is known")
                continue
            fnode = call.child_by_field_name("function")
            _, fe = u.unit.abs(fnode)
            edits.append(Edit(fe, fe, f"<{rt}>"))
        elif u.what == "getter":  # `return ref;` -> the description of its object (texture_getters.py)
            ret, g = u.detail
            s, e = u.unit.abs(ret)
            edits.append(Edit(s, e, f"{g.static()}{mig.nl}{indent_at(data, s)}return cudamigrate_ref;"))
        elif u.what == "attr":
            p, fld = u.detail
            s, e = u.unit.abs(p)
            edits += _attr_edits(u.unit, p, ref.desc, fld)
            attrs.append((s, function_of(p), mig.line(u.unit, p), p, u.unit))
        elif u.what == "chan":
            s, e = u.unit.abs(u.detail)
            edits.append(channel_desc_edit(u.detail, s, e, ref.elem, u.unit.abs))
            chan_reads.append(mig.line(u.unit, u.detail))
        elif u.what == "chanset":
            stmt = u.detail
            if stmt.parent is not None and stmt.parent.type == "compound_statement":
                edits.append(_delete_statement(data, *u.unit.abs(stmt)))
            else:  # the body of an `if`/`for` without braces: an empty statement keeps the next one outside it
                edits.append(Edit(*u.unit.abs(stmt), ";"))
            chan_sets.append(mig.line(u.unit, u.detail))
        elif u.what == "bind":
            call, fn, addr = u.detail
            ed, why = _bind_edit(mig, ref, u.unit, call, fn, addr)
            if why:
                reasons.append(why)
                continue
            edits.append(ed)
            needs_helpers = True
            if fn == "cudaUnbindTexture":
                unbinds.append((ed.start, function_of(call)))
            else:
                binds.append((ed.start, function_of(call)))
                if not _bind_passes_descriptor(mig, ref, u.unit, call, fn):
                    implicit_desc.append(mig.line(u.unit, call))
    if chan_sets:
        where = ", ".join(map(str, chan_sets))
        if implicit_desc:
            reasons.append(f"its `channelDesc` is assigned (line {where}) and the bind at line {implicit_desc[0]} takes the "
                           "descriptor from the reference")
        elif chan_reads:
            reasons.append(f"its `channelDesc` is assigned (line {where}) and read (line {chan_reads[0]})")
        elif not binds:
            reasons.append(f"its `channelDesc` is assigned (line {where}) in a file that does not bind it")
    # an attribute written after the last bind in its function would not reach the object, which is created at the
    # bind: the object is created again after the last such write of each block (the reference applied the
    # attributes at the next launch); a write that is no statement of a block, or follows an unbind, stays manual
    late: dict[tuple[int, int], ts.Node] = {}  # (function, block) -> the last late write statement in it
    for pos, fn, line, fld, unit in attrs:
        same = [b for b, f in binds if f is not None and fn is not None and f.start_byte == fn.start_byte]
        if any(b < pos for b in same) and not any(b > pos for b in same):
            last = max(b for b in same if b < pos)
            unbound = any(last < x < pos for x, f in unbinds if f is not None and fn is not None and f.start_byte == fn.start_byte)
            if _is_read(fld):
                continue  # the object's attributes are the descriptor's: reading them needs nothing
            stmt = _written_statement(fld) if unit is ctx.main and not unbound else None
            if stmt is None:
                reasons.append(f"an attribute is set at line {line} after the reference is bound and is not followed by "
                               "a new bind, " + ("after an unbind" if unbound else "not as a statement of its own")
                               + ": a texture object's attributes are fixed when it is created")
                continue
            assert fn is not None and stmt.parent is not None
            key = (fn.start_byte, stmt.parent.start_byte)
            if key not in late or late[key].start_byte < stmt.start_byte:
                late[key] = stmt
    for stmt in late.values():
        s, e = ctx.main.abs(stmt)
        edits.append(_after_statement(data, e, indent_at(data, s), mig.nl,
                                      f"cudamigrateUpdateTexture(&{ref.obj}, &{ref.name}, &{ref.desc});"))
    if ref.local:
        for one in [ref] + ref.same_elsewhere:  # the same declaration in each `#if` branch: each one is replaced
            edits += _declaration_edits(one, data, mig.nl)
    # an edit inside another of this finding's edits (a `name.channelDesc` argument of its bind) is already covered
    edits = [x for x in edits if not any(o is not x and o.start <= x.start and x.end <= o.end and o.end > o.start
                                         and (o.start, o.end) != (x.start, x.end) for o in edits)]
    update = bool(late) and UPDATE_GUARD.encode() not in data and UPDATE_GUARD not in helpers_present
    if needs_helpers and HELPER_GUARD not in helpers_present and HELPER_GUARD.encode() not in data:
        first = min(x.start for x in edits)
        hp = helper_position(ctx, first)
        edits.insert(0, Edit(hp, hp, (HELPERS + (UPDATE_HELPER if update else "")).replace("\n", mig.nl)))
    elif update:
        edits.insert(0, _update_helper_edit(ctx, data, mig.nl, min(x.start for x in edits)))
    if ref.local:
        node, unit = ref.declarator if ref.declarator.type == "identifier" else ref.declarator.child_by_field_name("declarator"), ref.unit
        node = node if node is not None else ref.decl  # never a match without a node to report
    else:
        unit, node = uses[0].unit, uses[0].node
    m = Match(rule=rule, unit=unit, node=node, name=ref.name, written=ref.name)
    declared_in = ref.path if not ref.local and ref.path is not None else ctx.source.path
    m.vars.update({
        # the consistency group: this reference, by its declaring file (fix/consistency.py: `symbol@scope`), so that
        # an unrelated reference of the same name in another program of the run is not tied to it
        # (resolved, as the paths of header references are: a file reached through a link is one declaration)
        "reference_group": f"{ref.name}{SCOPE}{os.path.realpath(declared_in)}",
        "reference": ref.name, "kind": ref.kind, "type": f"{ref.kind}<{ref.targs}>", "element": ref.elem,
        "mode": ref.mode, "local": ref.local, "reads": sum(1 for u in uses if u.what in ("read", "surf")),
        "binds": sum(1 for u in uses if u.what == "bind"),
        "updates": ", ".join(str(mig.line(ctx.main, st)) for st in sorted(late.values(), key=lambda n: n.start_byte)),
        "reason": "; ".join(dict.fromkeys(reasons)) if reasons else "",
    })
    if not ref.local and not reasons and not edits:
        return None  # nothing left to change here (already migrated, or surface calls that keep their text)
    if reasons:
        m.edits = []
        m.fix_applicability = "manual"
    else:
        m.edits = edits
        m.fix_applicability = "unsafe"
    return m


def manual_match(rule: Rule, unit: Unit, node: ts.Node, why: str) -> Match:
    m = Match(rule=rule, unit=unit, node=node, name=node_text(node), written=node_text(node))
    m.vars.update({"reference": "", "kind": "", "type": normalize_spaces(node_text(node)), "reason": why, "local": False,
                   "reads": 0, "binds": 0, "updates": "", "element": "", "mode": ""})
    m.edits = []
    m.fix_applicability = "manual"
    return m
