"""Texture and surface references, found: the reference-form APIs, the declarations `texture<T, dim, mode> name;`
(in the file, in the project headers it includes, and as the marker comments a migrated header leaves), and
the cheap byte tests that say whether a file can hold any. Part of texture.py's migration."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import tree_sitter as ts

from ...core.brackets import split_top_level
from ...core.linestart import directive, line_start_matches
from ...parse import pasting, walk
from ...parse.treesitter import Unit, parse, parse_header
from ...read.source import read_regular
from ..context import FileContext, named_children, node_text, normalize
from ..ppenv import live_walk
from .texture_includers import READ_CALL, Includer, includer_refs, includers_may_declare

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
UPDATE_GUARD = "CUDAMIGRATE_TEXOBJ_UPDATE"  # the update helper (texture_edits.UPDATE_HELPER), after the stand-ins


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
        fname = returning_function(decl)
        if fname is not None:
            # `texture<...> &get_ref(void);` / its definition: a helper handing out a reference; code that binds
            # or reads through its calls cannot be rewritten to objects here
            odd.append((t, f"`{kind}<{', '.join(targs)}>` is the return type of `{fname}`: {getter_reason(fname, kind)}"))
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


def getter_reason(fname: str, kind: str = "texture") -> str:
    """Why a reference handed out by a function stays manual (Parboil's sad: `texture<...> &get_ref(void)`, defined
    beside the reference, called by the file that binds it): the object that replaces a reference is published
    through a `__constant__` handle of the reference's own file, and code compiled in another file cannot write
    that handle (a `__constant__` symbol is addressable only from its own translation unit without relocatable
    device code), so the function must hand out something else: its declared type and every call change."""
    return (f"`{fname}` hands the reference out (to code possibly compiled in another file), and the {kind} object "
            f"replacing it is published through a `__constant__` handle that only code of the reference's own file can "
            f"write without relocatable device code, so `{fname}` must hand out that handle, the object's state and "
            f"symbol instead, a change of its declared type and of every call: made automatically only for "
            f"`texture<...> &{fname}(void) {{ return ref; }}`, one definition in the program, declared only in files "
            f"of the run, every call binding, unbinding or reading `.channelDesc` of `{fname}()` (texture_getters.py)")


def returning_function(decl: ts.Node | None) -> str | None:
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


def _header_refs(ctx: FileContext, depth: int = 3) -> tuple[dict[str, Ref], frozenset[str]]:
    """References declared (or already migrated) in locally included headers; the guards of the helper blocks
    there (`HELPER_GUARD`, `UPDATE_GUARD`: a shared header holds the update helper too, fix/shared_helpers.py)."""
    out: dict[str, Ref] = {}
    helpers: set[str] = set()
    seen: set[Path] = set()

    def visit(path: Path, data: bytes, level: int) -> None:
        if ctx.project is not None:
            # the project index also finds headers of the run under an -I directory (`#include "gpu.h"` ->
            # include/gpu.h, `#include <kernels.cu>`)
            # (a header's includes come from the index's per-run cache: only the scanned file's own data is new)
            incs: list[Path | None] = list(ctx.project.includes(path, data if level == depth else None))
        else:
            incs = [Path(os.path.realpath(path.parent / m.group(1).decode("utf-8", "surrogateescape")))
                    for _, m in line_start_matches(LOCAL_INCLUDE, data)]
        for inc in incs:
            if inc is None or inc in seen or not os.path.isfile(inc):
                continue
            seen.add(inc)
            try:
                text = read_regular(inc)
            except OSError:
                continue
            helpers.update(g for g in (HELPER_GUARD, UPDATE_GUARD) if g.encode() in text)
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
        visit(Path(os.path.realpath(ctx.source.path)), ctx.source.data, depth)
    except OSError:
        pass
    return out, frozenset(helpers)


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
    return includers_may_declare(data, path, project, _REFERENCE_TEXT)


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
        r = _ref_from_targs(mk.group(3), mk.group(2), split_top_level(mk.group(4)))
        r.migrated = True
        out.append(r)
    return out


def refs_in_scope(ctx: FileContext):
    """(local refs, odd texture<> uses, refs by name incl. headers and markers, the helper guards of included
    headers); once per file."""
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
    if READ_CALL.search(ctx.source.data):  # a header reading references that its includers declare
        for n, r in includer_refs(ctx, _includer, other_context).items():
            by_name.setdefault(n, r)
    return local, odd, by_name, helpers

def _includer(octx: FileContext) -> Includer:
    """A file that includes headers, as `includer_refs` needs it: its header references, its own file-scope
    declarations as references of that file (not local to the header that reads them: each declaration stays
    where it is, and migrates there), and its `#include` directives."""
    path = Path(os.path.realpath(octx.source.path))
    own = tuple((octx.main.abs(r.decl)[0], replace(r, decl=None, declarator=None, unit=None, same_elsewhere=[], path=path))
                for r in _declarations(octx.main.root, octx.main)[0] if r.decl is not None)
    sites = tuple((at, Path(os.path.realpath(inc)) if inc is not None else None)
                  for at, inc in octx.project.include_sites(path, octx.source.data))
    return Includer(_header_refs(octx)[0], own, sites)


def other_context(ctx: FileContext, path: Path) -> FileContext | None:
    """A FileContext for another project file, parsed like the engine parses it (macro bodies included)."""
    from ...read.source import SourceError, check_bytes

    data = ctx.project.read(path)
    if data is None:
        return None
    try:
        src = check_bytes(path, data)
    except SourceError:
        return None
    src.statement_macros = ctx.project.statement_macros(path, data)
    # uses spelled through a token-pasting macro (`cuda(BindTexture(...))`), seen as the engine sees them
    live = live_walk(path, ctx.target, ctx.command_defines(path))  # as the engine asks
    macros = ctx.project.paste_macros(path, data, live) if b"(" in data else {}
    kw = re.compile(rb"\b(texture|surface|\w*(Texture|Surface)\w*|tex\w+|surf\w+)\b")
    seen, units = pasting.file_units(src.parse_bytes, parse(src.parse_bytes), macros, kw if b"#" in data else None)
    return FileContext(source=src, units=units, target=ctx.target, options=ctx.options, project=ctx.project,
                       pastes=tuple(seen.pastes), compile_db=ctx.compile_db)
