"""Texture and surface references (removed in CUDA 12.0) -> texture and surface objects.

One finding per reference and file, carrying every edit that file needs:

* the file-scope declaration `texture<T, dim, mode> name;` becomes
    static cudaTextureDesc name_desc = {...};   // the reference's host-side attributes
    static cudaTextureObject_t name_obj = 0;    // host copy of the object now bound
    __constant__ cudaTextureObject_t name;      // the handle device code reads
  so kernels keep their signatures and every kernel of the translation unit
  that read the reference reads the object through the same name;
* host attribute writes `name.filterMode = ...` go to `name_desc`;
* binds become calls of small helpers (inserted once per file, guarded) that
  fill a cudaResourceDesc, create the object from `name_desc`, publish it to
  `name` with cudaMemcpyToSymbol and destroy the object bound before;
* reads gain the template argument of the object form: `tex2D<float>(name, x, y)`;
* `cudaUnbindTexture(name)` destroys the object.

Anything the rewrite cannot prove safe (a reference passed to a function or
template, addressed with cudaGetTextureReference, an attribute set after the
last bind, a bind with a defaulted size, ...) makes the finding manual, with
the reason in its message.

A header that declares references is migrated on its own; the declaration it
leaves carries a marker comment, so files that include it (and are fixed
later) still know the element type and read mode.

Why one module of ~1,000 lines: this is one transformation, and its stages
(reading declarations, collecting uses, rewriting declarations, binds, reads and
unbinds, judging what blocks it in this file and in the project) all read and
write one per-file `Migration` and decide together whether a reference is
migrated at all: a partial migration does not compile. Split by stage, each
module would need the others' private state; the functions are ordered by stage
instead (declarations, uses, edits, blockers, entry points at the end).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import tree_sitter as ts

from ..findings import Edit
from ..parse import walk
from ..linestart import directive, line_start_matches
from ..parse.treesitter import Unit, parse, parse_header, query
from ..rules.schema import Rule
from ..registry import Registry
from .builtin_registry import BuiltinFn, builtin_schema
from .context import FileContext, named_children, node_text, normalize
from .matchers import Match, identifier_nodes
from ..source import read_regular

# reference-form read functions -> number of arguments after the reference
TEX_READS = {
    "tex1Dfetch": 1, "tex1D": 1, "tex2D": 2, "tex3D": 3, "tex1DLayered": 2, "tex2DLayered": 3,
    "texCubemap": 3, "texCubemapLayered": 4, "tex1DLod": 2, "tex2DLod": 3, "tex3DLod": 4,
    "tex1DLayeredLod": 3, "tex2DLayeredLod": 4, "texCubemapLod": 4, "texCubemapLayeredLod": 5,
    "tex1DGrad": 3, "tex2DGrad": 4, "tex3DGrad": 5, "tex1DLayeredGrad": 4, "tex2DLayeredGrad": 5,
    "tex2Dgather": (2, 3),
}
SURF_FUNCS = {
    "surf1Dread", "surf1Dwrite", "surf2Dread", "surf2Dwrite", "surf3Dread", "surf3Dwrite",
    "surf1DLayeredread", "surf1DLayeredwrite", "surf2DLayeredread", "surf2DLayeredwrite",
    "surfCubemapread", "surfCubemapwrite", "surfCubemapLayeredread", "surfCubemapLayeredwrite",
}
TEX_BINDS = {"cudaBindTexture": 1, "cudaBindTexture2D": 1, "cudaBindTextureToArray": 0,
             "cudaBindTextureToMipmappedArray": 0, "cudaUnbindTexture": 0}
SURF_BINDS = {"cudaBindSurfaceToArray": 0}
REF_APIS = ("cudaGetTextureReference", "cudaGetSurfaceReference", "cudaGetTextureAlignmentOffset")
# what a use `texture_reference_api` reports needs in the text: a bind or reference-API name, a reference type
# name, or a read called without template arguments (`tex2D(ref, ...)`, not `tex2D<float>(obj, ...)`; a comment
# before its `(` counted as maybe)
_REFERENCE_API_TEXT = re.compile(
    rb"\b(?:" + b"|".join(n.encode() for n in (*TEX_BINDS, *SURF_BINDS, *REF_APIS, "textureReference", "surfaceReference"))
    + rb")\b|\b(?:" + b"|".join(n.encode() for n in TEX_READS) + rb")\s*(?:\(|/[/*])")


def reference_api_possible(data: bytes) -> bool:
    """Can `texture_reference_api` report anything in a file holding `data`? (match/precheck.py)"""
    return _REFERENCE_API_TEXT.search(data) is not None


ALL_REMOVED_CALLS = set(TEX_BINDS) | set(SURF_BINDS) | set(REF_APIS)

# textureReference fields -> cudaTextureDesc fields
TEX_FIELDS = {
    "filterMode": "filterMode", "addressMode": "addressMode", "normalized": "normalizedCoords", "sRGB": "sRGB",
    "maxAnisotropy": "maxAnisotropy", "mipmapFilterMode": "mipmapFilterMode", "mipmapLevelBias": "mipmapLevelBias",
    "minMipmapLevelClamp": "minMipmapLevelClamp", "maxMipmapLevelClamp": "maxMipmapLevelClamp",
    "disableTrilinearOptimization": "disableTrilinearOptimization",
}
NORMALIZED_SCALARS = {"char", "signed char", "unsigned char", "short", "unsigned short", "uchar", "ushort"}
VEC_RE = re.compile(r"^(u?char|u?short|u?int|u?long|float|longlong|ulonglong|double)([1-4])$")
MARKER_RE = re.compile(r"//\s*cudamigrate (CM60[12]): (\w+) was (texture|surface)<(.*)>")
HELPER_GUARD = "CUDAMIGRATE_TEXOBJ_HELPERS"
LOCAL_INCLUDE = directive(rb'#[ \t]*include[ \t]*"([^"]+)"')  # at a line's start (linestart.py)


@dataclass
class Ref:
    kind: str  # texture | surface
    name: str
    elem: str
    dim: str
    mode: str
    targs: str  # the template arguments as written (normalized spacing)
    ctor: list[str] = field(default_factory=list)
    storage: str = ""  # "static " or ""
    unit: Unit | None = None
    decl: ts.Node | None = None  # declaration node (this file only)
    declarator: ts.Node | None = None
    problem: str | None = None  # why the declaration itself cannot be migrated
    migrated: bool = False  # known from a cudamigrate marker comment: already a texture/surface object
    path: Path | None = None  # the file that declares it (None: not known)
    same_elsewhere: list["Ref"] = field(default_factory=list)  # identical declarations (other `#if` branches)

    @property
    def local(self) -> bool:
        return self.decl is not None

    @property
    def obj(self) -> str:
        return f"{self.name}_obj"

    @property
    def desc(self) -> str:
        return f"{self.name}_desc"

    def read_type(self, fn: str) -> str | None:
        t = " ".join(self.elem.split())
        if fn == "tex2Dgather":
            if self.mode.endswith("NormalizedFloat"):
                return "float4"
            base = VEC_RE.match(t)
            scalar = base.group(1) if base else {"unsigned char": "uchar", "signed char": "char", "unsigned short": "ushort",
                                                "unsigned int": "uint", "unsigned": "uint"}.get(t, t)
            return f"{scalar}4" if scalar in ("char", "uchar", "short", "ushort", "int", "uint", "float") else None
        if self.mode.endswith("NormalizedFloat"):
            if t in NORMALIZED_SCALARS:
                return "float"
            m = VEC_RE.match(t)
            if m and m.group(1) in ("char", "uchar", "short", "ushort"):
                return f"float{m.group(2)}"
            return None
        return t


def _split_top(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _ref_from_targs(kind: str, name: str, targs: list[str]) -> Ref:
    elem = targs[0] if targs else ""
    if kind == "texture":
        dim = targs[1] if len(targs) > 1 else "cudaTextureType1D"
        mode = targs[2] if len(targs) > 2 else "cudaReadModeElementType"
    else:
        dim = targs[1] if len(targs) > 1 else "cudaSurfaceType1D"
        mode = ""
    return Ref(kind, name, elem, dim, mode, ", ".join(targs))


def _at_file_scope(node: ts.Node) -> bool:
    cur = node.parent
    while cur is not None:
        if cur.type in ("function_definition", "compound_statement", "class_specifier", "struct_specifier",
                        "parameter_list", "template_declaration", "lambda_expression"):
            return False
        if cur.type == "translation_unit":
            return True
        cur = cur.parent
    return True


TEMPLATE_ARGS = (walk.FieldPattern("template_type", "arguments", "template_argument_list"),)
CALL_ARGS = (walk.FieldPattern("call_expression", "arguments", "argument_list"),)
REFERENCE_TYPES = frozenset({"type_identifier"})


def texture_templates(root: ts.Node) -> list[tuple[ts.Node, ts.Node, ts.Node]]:
    """(template type, name, arguments) of `texture<...>`/`surface<...>`, walked (parse/walk.py says why): the
    former query `((template_type name: (type_identifier) @n arguments: (template_argument_list) @a) @t
    (#any-of? @n "texture" "surface"))`."""
    if not _TEMPLATE_TEXT.search(root.text or b""):  # a template's name, then its `<`: no walk needed
        return []
    return [m for m in walk.pair_matches(root, TEMPLATE_ARGS, "name", "type_identifier")
            if m[1].text in (b"texture", b"surface")]


# `texture<`, `surface <`, `texture \` + newline + `<` in a macro, or the word before a comment (a comment may
# stand between a template's name and its `<`)
_TEMPLATE_TEXT = re.compile(rb"\b(?:texture|surface)(?:\s|\\)*(?:<|/[/*])")


def reference_type_names(root: ts.Node) -> list[ts.Node]:
    """`textureReference`/`surfaceReference` type names in document order: the former query
    `((type_identifier) @t (#any-of? @t "textureReference" "surfaceReference"))`, walked."""
    text = root.text or b""
    if b"textureReference" not in text and b"surfaceReference" not in text:
        return []
    return [n for n in walk.typed_nodes(root, REFERENCE_TYPES) if n.text in (b"textureReference", b"surfaceReference")]


def _declarations(root: ts.Node, unit: Unit | None) -> tuple[list[Ref], list[tuple[ts.Node, str]]]:
    """File-scope texture<>/surface<> declarations; other texture<> type uses (parameters, typedefs...)."""
    refs: list[Ref] = []
    odd: list[tuple[ts.Node, str]] = []
    for t, n, a in texture_templates(root):
        kind = node_text(n)
        targs = [normalize_spaces(node_text(c)) for c in named_children(a)]
        decl = t.parent
        fname = _returning_function(decl)
        if fname is not None:
            # `texture<...> &get_ref(void);` / its definition: a helper handing out a reference; code that binds
            # or reads through its calls cannot be rewritten to objects here
            odd.append((t, f"`{kind}<{', '.join(targs)}>` is the return type of `{fname}`: uses through calls of "
                           f"`{fname}` cannot be migrated to {kind} objects automatically"))
            continue
        if decl is None or decl.type != "declaration" or not _at_file_scope(decl):
            what = "a parameter" if decl is not None and decl.type == "parameter_declaration" else "a non-file-scope declaration"
            if decl is not None and decl.type == "type_definition":
                what = "a typedef"
            odd.append((t, f"`{kind}<{', '.join(targs)}>` used as the type of {what}"))
            continue
        text = node_text(decl)
        storage = "static " if re.match(r"\s*static\b", text) else ""
        extern = re.match(r"\s*extern\b", text) is not None
        for d in decl.children_by_field_name("declarator"):
            if d.type not in ("identifier", "init_declarator"):
                # `texture<T> *p;`, `texture<T> a[4];`, or what an error-recovering parse makes of `texture<>&n;`
                # or `texture<>e<d;`: not a reference variable the rewrite can replace
                odd.append((t, f"`{kind}<{', '.join(targs)}>` used in {_declarator_role(d)}"))
                continue
            ctor: list[str] = []
            ident = d
            if d.type == "init_declarator":
                ident = d.child_by_field_name("declarator")
                val = d.child_by_field_name("value")
                if val is not None and val.type == "argument_list":
                    ctor = [node_text(a) for a in named_children(val)]
                else:
                    ident = None
            ref = _ref_from_targs(kind, node_text(ident) if ident is not None and ident.type == "identifier" else node_text(d), targs)
            ref.ctor, ref.storage, ref.unit, ref.decl, ref.declarator = ctor, storage, unit, decl, d
            if ident is None or ident.type != "identifier":
                ref.problem = f"its declaration `{normalize_spaces(text)}` has an unsupported declarator"
            elif extern:
                ref.problem = "it is declared `extern`"
            elif kind == "texture" and len(ctor) > 3:
                ref.problem = "its constructor sets a channel descriptor"
            elif kind == "surface" and ctor:
                ref.problem = "its declaration has constructor arguments"
            elif not targs:
                ref.problem = "its template arguments could not be read"
            refs.append(ref)
    return refs, odd


def _returning_function(decl: ts.Node | None) -> str | None:
    """Name of the function a `texture<>`/`surface<>` type is the return type of (declaration or definition)."""
    if decl is None or decl.type not in ("declaration", "function_definition", "field_declaration"):
        return None
    for d in decl.children_by_field_name("declarator"):
        cur: ts.Node | None = d
        while cur is not None:
            if cur.type == "function_declarator":
                nm = cur.child_by_field_name("declarator")
                return node_text(nm) if nm is not None else "?"
            nxt = cur.child_by_field_name("declarator")
            if nxt is None and cur.type in ("reference_declarator", "pointer_declarator") and cur.named_children:
                nxt = cur.named_children[-1]
            cur = nxt
    return None


def _declarator_role(d: ts.Node) -> str:
    """What a declarator other than a plain name declares, for the manual finding's reason."""
    stack = [d]
    while stack:
        n = stack.pop()
        if n.type == "function_declarator":
            name = n.child_by_field_name("declarator")
            return f"the return type of function `{normalize_spaces(node_text(name))}`" if name is not None else "a function's return type"
        stack.extend(n.named_children)
    what = {"pointer_declarator": "a pointer declaration", "reference_declarator": "a reference declaration",
            "array_declarator": "an array declaration"}.get(d.type, "an unsupported declarator")
    return f"{what} `{normalize_spaces(node_text(d))}`"


def normalize_spaces(text: str) -> str:
    return " ".join(text.split())


def _header_refs(ctx: FileContext, depth: int = 3) -> tuple[dict[str, Ref], bool]:
    """References declared (or already migrated) in locally included headers; whether helpers are there."""
    out: dict[str, Ref] = {}
    helpers = False
    seen: set[Path] = set()

    def visit(path: Path, data: bytes, level: int) -> None:
        nonlocal helpers
        if ctx.project is not None:
            # the project index also finds headers of the run under an -I directory (`#include "gpu.h"` ->
            # include/gpu.h, `#include <kernels.cu>`)
            # (a header's includes come from the index's per-run cache: only the scanned file's own data is new)
            incs: list[Path | None] = list(ctx.project.includes(path, data if level == depth else None))
        else:
            incs = [(path.parent / m.group(1).decode("utf-8", "surrogateescape")).resolve() for _, m in line_start_matches(LOCAL_INCLUDE, data)]
        for inc in incs:
            if inc is None or inc in seen or not os.path.isfile(inc):
                continue
            seen.add(inc)
            try:
                text = read_regular(inc)
            except OSError:
                continue
            if HELPER_GUARD.encode() in text:
                helpers = True
            for r in _marker_refs(text):
                r.path = inc
                out.setdefault(r.name, r)
            if b"texture" in text or b"surface" in text:
                for r in _header_declarations(ctx, inc, text):
                    first = out.setdefault(r.name, r)
                    if first is not r and first.path == inc and not _same_declaration(first, r) and first.problem is None:
                        first.problem = (f"`{inc.name}` declares it more than once with different types or settings "
                                         "(e.g. in `#if`/`#else` branches)")
            if level > 1:
                visit(inc, text, level - 1)

    try:
        visit(ctx.source.path.resolve(), ctx.source.data, depth)
    except OSError:
        pass
    return out, helpers


# what a declaration (`texture<...>`, `surface <...>`, with a comment before `<` counted as maybe) or a migration
# marker comment needs in the text
_REFERENCE_TEXT = re.compile(rb"cudamigrate|" + _TEMPLATE_TEXT.pattern)


def references_possible(data: bytes, path: Path, project: Any) -> bool:
    """Can the texture/surface reference builtins report anything for the file `path` holding `data`, before it
    is parsed? Every reference they migrate is declared as `texture<...>`/`surface<...>`, or marked as migrated by
    a `// cudamigrate CM60x: NAME was texture<...>` comment, in the file or in a project header `_header_refs`
    visits (a subset of those `project.reachable` lists); odd uses are `texture<...>` types in the file itself.
    So none of that text anywhere there (`_REFERENCE_TEXT`): nothing to report (match/precheck.py). A header
    that cannot be read here counts as holding it."""
    if _REFERENCE_TEXT.search(data):
        return True
    if project is None:
        return True
    try:
        headers = project.reachable(path, data)
    except OSError:
        return True
    seen: dict[Path, bool] = project.cache.setdefault("texture.reference_text", {})  # per header, for the run
    for h in headers:
        got = seen.get(h)
        if got is None:
            text = project.read(h)
            got = seen[h] = text is None or _REFERENCE_TEXT.search(text) is not None
        if got:
            return True
    return False


def _header_declarations(ctx: FileContext, inc: Path, text: bytes) -> list[Ref]:
    """The references a project header declares (without nodes: they are not this file's). Parsed once per run:
    most files of a tree include the same helper headers (cuda-samples v11.8: 40% of a scan went to parsing
    them again for every file); each caller gets its own copies, since callers annotate them."""
    cache = ctx.project.cache.setdefault("texture.header_declarations", {}) if ctx.project is not None else {}
    got = cache.get((inc, text))
    if got is None:
        # (no `texture<`/`surface<` text: no declaration to find, nothing to parse)
        got = _declarations(parse_header(text).root_node, None)[0] if _TEMPLATE_TEXT.search(text) else []
        for r in got:
            r.decl = None
            r.declarator = None
            r.path = inc
        cache[(inc, text)] = got
    return [replace(r, ctor=list(r.ctor), same_elsewhere=list(r.same_elsewhere)) for r in got]


def _marker_refs(data: bytes) -> list[Ref]:
    out = []
    for mk in MARKER_RE.finditer(data.decode("utf-8", "surrogateescape")):
        r = _ref_from_targs(mk.group(3), mk.group(2), _split_top(mk.group(4)))
        r.migrated = True
        out.append(r)
    return out


def _line_start(data: bytes, pos: int) -> int:
    return data.rfind(b"\n", 0, pos) + 1


def _indent(data: bytes, pos: int) -> str:
    ls = _line_start(data, pos)
    m = re.match(rb"[ \t]*", data[ls:pos])
    return m.group(0).decode("utf-8", "replace") if m else ""


def _fn_name(call: ts.Node) -> tuple[str, bool]:
    fn = call.child_by_field_name("function")
    if fn is None:
        return "", False
    if fn.type == "template_function":
        nm = fn.child_by_field_name("name")
        return (node_text(nm) if nm is not None else ""), True
    if fn.type == "qualified_identifier" and node_text(fn).startswith("::"):
        return node_text(fn)[2:].strip(), False
    return node_text(fn), False


def _function_of(node: ts.Node) -> ts.Node | None:
    cur = node.parent
    while cur is not None:
        if cur.type == "function_definition":
            return cur
        cur = cur.parent
    return None


def _is_channel_desc(ctx: FileContext, text: str, ref: Ref) -> bool:
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
            fn, templ = _fn_name(call)
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
        ctxnode = p if p is not None else ident
        return Use(ident, unit, "other", f"it is used in `{normalize_spaces(self.text(unit, ctxnode))[:60]}` (line {self.line(unit, ident)})")

    def line(self, unit: Unit, node: ts.Node) -> int:
        return self.ctx.source.position(unit.abs(node)[0])[0]


def _same_node(a: ts.Node | None, b: ts.Node | None) -> bool:
    return a is not None and b is not None and a.start_byte == b.start_byte and a.end_byte == b.end_byte


def _idents(ctx: FileContext, names: set[str]) -> list[tuple[Unit, ts.Node]]:
    out = list(identifier_nodes(ctx, names, frozenset(("identifier",))))
    out.sort(key=lambda un: un[0].abs(un[1]))  # file order: the first use is where a header's reference is reported
    return out


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
/* Unbinding destroys the object; kernels still running may read it, so wait for them first. */
inline cudaError_t cudamigrateUnbindTexture(cudaTextureObject_t *obj)
{
    if (*obj == 0)
        return cudaSuccess;
    cudaError_t err = cudaDeviceSynchronize();
    cudaError_t err2 = cudaDestroyTextureObject(*obj);
    *obj = 0;
    return err != cudaSuccess ? err : err2;
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


def _helper_position(ctx: FileContext, before: int) -> int:
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
    return _line_start(ctx.source.data, first if first is not None else 0)


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
        elif n == 4 and not _is_channel_desc(mig.ctx, args[3], ref):
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


def _declaration_edits(ref: Ref, data: bytes, nl: str) -> list[Edit]:
    """Replace the reference's declaration by the object form (taking it out of a multi-name declaration)."""
    d = ref.decl
    s, e = ref.unit.abs(d)
    decls = d.children_by_field_name("declarator")
    if len(decls) == 1:
        return [Edit(s, e, _new_declaration(ref, _indent(data, s), nl))]
    # several references in one declaration: take this one out, declare its object before it
    i = next(i for i, x in enumerate(decls) if x.start_byte == ref.declarator.start_byte)
    if i + 1 < len(decls):
        rs, re_ = ref.unit.abs(decls[i])[0], ref.unit.abs(decls[i + 1])[0]
    else:
        rs, re_ = ref.unit.abs(decls[i - 1])[1], ref.unit.abs(decls[i])[1]
    ls = _line_start(data, s)
    indent = _indent(data, s)
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
    ls = _line_start(data, s)
    le = data.find(b"\n", e)
    le = len(data) if le == -1 else le + 1
    if not data[ls:s].strip() and not data[e:le].strip():
        return Edit(ls, le, "")
    return Edit(s, e, "")


def _collisions(ctx: FileContext, ref: Ref) -> str | None:
    text = ctx.source.text
    names = [ref.obj] + ([ref.desc] if ref.kind == "texture" else [])
    for nm in names:
        if re.search(r"\b" + re.escape(nm) + r"\b", text):
            return f"the name `{nm}` the migration needs is already used in this file"
    return None


def _migrate(rule: Rule, ctx: FileContext, ref: Ref, uses: list[Use], mig: Migration, helpers_present: bool) -> Match | None:
    data = ctx.source.data
    reasons: list[str] = []
    edits: list[Edit] = []
    if ref.problem:
        reasons.append(ref.problem)
    if ref.local:
        c = _collisions(ctx, ref)
        if c:
            reasons.append(c)
    elif not uses:
        return None
    needs_helpers = False
    chan_reads: list[int] = []  # lines reading `tex.channelDesc`
    chan_sets: list[int] = []  # lines assigning it
    implicit_desc: list[int] = []  # lines of binds that take the descriptor from the reference
    binds: list[tuple[int, ts.Node | None]] = []  # (abs start, function)
    attrs: list[tuple[int, ts.Node | None, int]] = []
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
        elif u.what == "attr":
            p, fld = u.detail
            s, e = u.unit.abs(p)
            edits.append(Edit(s, e, f"{ref.desc}.{TEX_FIELDS[fld]}"))
            attrs.append((s, _function_of(p), mig.line(u.unit, p)))
        elif u.what == "chan":
            s, e = u.unit.abs(u.detail)
            edits.append(Edit(s, e, f"cudaCreateChannelDesc<{ref.elem}>()"))
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
            if fn != "cudaUnbindTexture":
                binds.append((ed.start, _function_of(call)))
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
    # an attribute set after the last bind in its function would not reach the object any more
    for pos, fn, line in attrs:
        same = [b for b, f in binds if f is not None and fn is not None and f.start_byte == fn.start_byte]
        if any(b < pos for b in same) and not any(b > pos for b in same):
            reasons.append(f"an attribute is set at line {line} after the reference is bound and is not followed by a new bind: "
                           "a texture object's attributes are fixed when it is created")
    if ref.local:
        for one in [ref] + ref.same_elsewhere:  # the same declaration in each `#if` branch: each one is replaced
            edits += _declaration_edits(one, data, mig.nl)
    # an edit inside another of this finding's edits (a `name.channelDesc` argument of its bind) is already covered
    edits = [x for x in edits if not any(o is not x and o.start <= x.start and x.end <= o.end and o.end > o.start
                                         and (o.start, o.end) != (x.start, x.end) for o in edits)]
    if needs_helpers and not helpers_present and HELPER_GUARD.encode() not in data:
        first = min(x.start for x in edits)
        hp = _helper_position(ctx, first)
        edits.insert(0, Edit(hp, hp, HELPERS.replace("\n", mig.nl)))
    if ref.local:
        node, unit = ref.declarator if ref.declarator.type == "identifier" else ref.declarator.child_by_field_name("declarator"), ref.unit
        node = node if node is not None else ref.decl  # never a match without a node to report
    else:
        unit, node = uses[0].unit, uses[0].node
    m = Match(rule=rule, unit=unit, node=node, name=ref.name, written=ref.name)
    m.vars.update({
        "reference": ref.name, "kind": ref.kind, "type": f"{ref.kind}<{ref.targs}>", "element": ref.elem,
        "mode": ref.mode, "local": ref.local, "reads": sum(1 for u in uses if u.what in ("read", "surf")),
        "binds": sum(1 for u in uses if u.what == "bind"),
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


def _refs_in_scope(ctx: FileContext):
    """(local refs, odd texture<> uses, refs by name incl. headers and markers, helpers present); once per file."""
    cached = getattr(ctx, "_texture_scope", None)
    if cached is not None:
        return cached
    res = _compute_scope(ctx)
    try:
        ctx._texture_scope = res  # type: ignore[attr-defined]  # a per-file cache on the context
    except AttributeError:
        pass
    return res


def _same_declaration(a: Ref, b: Ref) -> bool:
    """Declarations one migration serves: the object form depends on the element type, the read mode,
    the constructor settings and the storage class, not on the dimensionality (`#if TREE_2D texture<uint4, 2>
    t; #else texture<uint4, 1> t;` -> the same `cudaTextureObject_t`, `tex2D<uint4>` and `tex1Dfetch<uint4>`)."""
    def key(r: Ref) -> tuple:
        return (r.kind, normalize(r.elem), normalize(r.mode), [normalize(c) for c in r.ctor], r.storage)

    return key(a) == key(b)


def _compute_scope(ctx: FileContext):
    local, odd = _declarations(ctx.main.root, ctx.main)
    headers, helpers = _header_refs(ctx)
    by_name: dict[str, Ref] = {}
    for r in local:
        same = [o for o in local if o.name == r.name]
        if len(same) > 1 and r.problem is None and r.name not in by_name:  # `#if A texture<...> t; #else ... #endif`
            if all(_same_declaration(o, r) and o.problem is None for o in same):
                r.same_elsewhere = [o for o in same if o is not r]  # one object serves every branch
            else:
                lines = ", ".join(str(ctx.source.position(ctx.main.abs(o.decl)[0])[0]) for o in same if o.decl is not None)
                r.problem = (f"it is declared {len(same)} times with different types or settings (lines {lines}, e.g. in "
                             "`#if`/`#else` branches): reads and binds would need a different object type per branch")
        by_name.setdefault(r.name, r)
    for r in _marker_refs(ctx.source.data):
        by_name.setdefault(r.name, r)
    for n, r in headers.items():
        by_name.setdefault(n, r)
    return local, odd, by_name, helpers


def _other_context(ctx: FileContext, path: Path) -> FileContext | None:
    """A FileContext for another project file, parsed like the engine parses it (macro bodies included)."""
    from ..parse.treesitter import macro_units
    from ..source import SourceError, check_bytes

    data = ctx.project.read(path)
    if data is None:
        return None
    try:
        src = check_bytes(path, data)
    except SourceError:
        return None
    src.statement_macros = ctx.project.statement_macros(path, data)
    pbytes = src.parse_bytes
    tree = parse(pbytes)
    kw = re.compile(rb"\b(texture|surface|\w*(Texture|Surface)\w*|tex\w+|surf\w+)\b")
    units = [Unit(tree=tree, base=0)] + (macro_units(tree, pbytes, kw) if b"#" in data else [])
    return FileContext(source=src, units=units, target=ctx.target, options=ctx.options, project=ctx.project)


def _file_blockers(rule: Rule, ctx: FileContext, kind: str) -> dict[tuple[str, str], list[str]]:
    """Why each reference (by declaring file and name) cannot be migrated in this one file, with
    `file:line` in front; computed once per file and run from the file as it was first seen."""
    cache = ctx.project.cache.setdefault(("texture-blockers", kind), {})
    key = ctx.source.path.resolve()
    if key not in cache:
        out: dict[tuple[str, str], list[str]] = {}
        refs = {n: r for n, r in _refs_in_scope(ctx)[2].items() if r.kind == kind}
        for m in _run(rule, ctx, kind, project_check=False):
            r = refs.get(m.vars.get("reference", ""))
            if r is None or not m.vars.get("reason"):
                continue
            decl = str((r.path or ctx.source.path).resolve())
            line = ctx.source.position(m.report_range[0])[0]
            out.setdefault((decl, r.name), []).append(f"{_shown(ctx.source.path)}:{line}: {m.vars['reason']}")
        cache[key] = out
    return cache[key]


def _shown(path: Path) -> str:
    import os

    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith("..") else rel


def _project_blockers(rule: Rule, ctx: FileContext, kind: str, ref: Ref) -> list[str]:
    """Reasons found in the other files of the run that see `ref`'s declaration (the declaring file and
    every file that includes it): one blocked use anywhere leaves the whole migration manual, since
    migrating the declaration breaks the use, and leaving it breaks the migrated uses."""
    if ctx.project is None or not ctx.project.files or ref.migrated:
        return []
    decl = (ref.path or ctx.source.path).resolve()
    me = ctx.source.path.resolve()
    users = [decl] + ctx.project.includers(decl)
    out: list[str] = []
    for f in dict.fromkeys(users):
        if f == me:
            continue
        data = ctx.project.read(f)
        if data is None or ref.name.encode() not in data:
            continue
        cache = ctx.project.cache.setdefault(("texture-blockers", kind), {})
        if f not in cache:
            other = _other_context(ctx, f)
            if other is None:
                continue
            _file_blockers(rule, other, kind)
        out += cache.get(f, {}).get((str(decl), ref.name), [])
    return out


def _run(rule: Rule, ctx: FileContext, kind: str, project_check: bool = True) -> list[Match]:
    local, odd, by_name, helpers = _refs_in_scope(ctx)
    if project_check and ctx.project is not None and ctx.project.files:
        _file_blockers(rule, ctx, kind)  # this file's own verdict, fixed from its first reading
    mig = Migration(ctx)
    refs = {n: r for n, r in by_name.items() if r.kind == kind}
    mig.refs = refs
    uses: dict[str, list[Use]] = {n: [] for n in refs}
    for unit, ident in _idents(ctx, set(refs)):
        r = refs[node_text(ident)]
        if r.local and unit is r.unit and r.declarator is not None and r.declarator.start_byte <= ident.start_byte < r.declarator.end_byte:
            continue
        if r.local and unit is r.unit and r.decl is not None and r.decl.start_byte <= ident.start_byte < r.decl.end_byte:
            continue  # another declarator of the same declaration
        if unit is ctx.main and any(o.name == r.name and o.decl is not None and o.decl.start_byte <= ident.start_byte < o.decl.end_byte
                                    for o in local):
            continue  # the same name declared again (another `#if` branch): the reference's problem says so
        uses[r.name].append(mig.classify(r, unit, ident))
    out = []
    for n, r in refs.items():
        if not r.local and not uses[n]:
            continue
        m = _migrate(rule, ctx, r, uses[n], mig, helpers)
        if m is not None and project_check and m.fix_applicability != "manual":
            blockers = _project_blockers(rule, ctx, kind, r)
            if blockers:
                m.edits = []
                m.fix_applicability = "manual"
                m.vars["reason"] = "it cannot be migrated in every file that uses it, and a partial migration would " \
                                   "not build: " + "; ".join(dict.fromkeys(blockers))
        if m is not None:
            out.append(m)
    if kind == "texture":
        for node, why in odd:
            if node_text(node).startswith("texture"):
                out.append(_manual(rule, ctx.main, node, why))
    else:
        for node, why in odd:
            if node_text(node).startswith("surface"):
                out.append(_manual(rule, ctx.main, node, why))
    return out


def _macro_params(ctx: FileContext, macro: str) -> list[str]:
    m = re.search(rb"^[ \t]*#[ \t]*define[ \t]+" + re.escape(macro.encode()) + rb"\(([^)]*)\)", ctx.source.data, re.M)
    return [p.strip() for p in m.group(1).decode("utf-8", "replace").split(",")] if m else []


def _manual(rule: Rule, unit: Unit, node: ts.Node, why: str) -> Match:
    m = Match(rule=rule, unit=unit, node=node, name=node_text(node), written=node_text(node))
    m.vars.update({"reference": "", "kind": "", "type": normalize_spaces(node_text(node)), "reason": why, "local": False,
                   "reads": 0, "binds": 0, "element": "", "mode": ""})
    m.edits = []
    m.fix_applicability = "manual"
    return m


BUILTINS: Registry[BuiltinFn] = Registry("builtin matcher")  # joined with the others in match/kinds.py


@BUILTINS.register("texture_reference", builtin_schema(), doc=(
    "texture references (`texture<T, dim, mode>`, the removed reference API) with their binds, reads and "
    "field settings, migrated together to a `cudaTextureObject_t` when every use is understood; otherwise a "
    "manual finding that says why (`cudamigrate/match/texture.py`)."))
def texture_reference(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    return _run(rule, ctx, "texture")


@BUILTINS.register("surface_reference", builtin_schema(), doc=(
    "surface references (`surface<void, dim>`), migrated like `texture_reference` to a `cudaSurfaceObject_t`."))
def surface_reference(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    return _run(rule, ctx, "surface")


@BUILTINS.register("texture_reference_api", builtin_schema())
def texture_reference_api(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    """Uses of the removed reference API that no CM601/CM602 finding accounts for."""
    _, _, by_name, _ = _refs_in_scope(ctx)
    out: list[Match] = []
    for unit in ctx.units:
        # `(call_expression function: (_) @fn arguments: (argument_list) @args) @call`, walked
        for call, _, argl in walk.pair_matches(unit.root, CALL_ARGS, "function"):
            fn, templ = _fn_name(call)
            args = named_children(argl)
            if fn in ctx.defined_functions:
                continue
            ref_arg = None
            if fn in TEX_BINDS or fn in SURF_BINDS:
                idx = {**TEX_BINDS, **SURF_BINDS}[fn]
                ref_arg = args[idx] if idx < len(args) else None
                name = normalize(node_text(ref_arg)).lstrip("&") if ref_arg is not None else ""
                if name in by_name:
                    continue
                why = f"`{fn}` binds `{name or '?'}`, whose `texture<>`/`surface<>` declaration is not in this file or the headers it includes"
                if "(" in name:
                    why = f"`{fn}` binds the reference returned by `{name}`: a reference handed out by a helper cannot be migrated automatically"
                elif unit.in_macro and unit.macro_name and name in _macro_params(ctx, unit.macro_name):
                    why = (f"`{fn}` in macro `{unit.macro_name}` binds its parameter `{name}`: the references passed to "
                           f"`{unit.macro_name}` cannot be migrated automatically (CM601 reports each)")
            elif fn in REF_APIS:
                name = normalize(node_text(args[-1])).lstrip("&") if args else ""
                if name in by_name:
                    continue  # the reference's own finding says why it is manual
                why = f"`{fn}` was removed with texture and surface references"
            elif fn in TEX_READS and not templ:
                want = TEX_READS[fn]
                if not args or len(args) - 1 not in (want if isinstance(want, tuple) else (want,)):
                    continue
                a0 = normalize(node_text(args[0]))
                if not re.fullmatch(r"[A-Za-z_][\w:]*", a0) or a0 in by_name:
                    continue
                why = (f"`{fn}({a0}, ...)` reads a texture reference (object reads take `<T>`), but `{a0}` is not declared "
                       "as a file-scope `texture<>` in this file or the headers it includes")
            else:
                continue
            m = Match(rule=rule, unit=unit, node=call, name=fn, written=fn)
            m.vars.update({"function": fn, "reason": why})
            out.append(m)
    for unit in ctx.units:
        for node in reference_type_names(unit.root):
            if _project_type_use(node, _project_types(unit.root)):
                continue
            m = Match(rule=rule, unit=unit, node=node, name=node_text(node), written=node_text(node))
            m.vars.update({"function": node_text(node),
                           "reason": f"the `{node_text(node)}` type is gone from the CUDA 13.0 headers"})
            out.append(m)
    return out


_TYPE_DECLS = ("struct_specifier", "class_specifier", "union_specifier", "enum_specifier")


def _project_types(root: ts.Node) -> dict[str, bool]:
    """Type names the file declares itself (`struct textureReference {...}`, `typedef ... surfaceReference;`),
    mapped to whether one such declaration is at file scope (outside any namespace or class)."""
    out: dict[str, bool] = {}
    q = query("(struct_specifier name: (type_identifier) @n body: (_)) (class_specifier name: (type_identifier) @n body: (_)) "
              "(union_specifier name: (type_identifier) @n body: (_)) (type_definition declarator: (type_identifier) @n)")
    for node in ts.QueryCursor(q).captures(root).get("n", []):
        anc, file_scope = node.parent, True
        while anc is not None:
            if anc.type in ("namespace_definition", "field_declaration_list"):
                file_scope = False
            anc = anc.parent
        name = node_text(node)
        out[name] = out.get(name, False) or file_scope
    return out


def _project_type_use(node: ts.Node, declared: dict[str, bool]) -> bool:
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
