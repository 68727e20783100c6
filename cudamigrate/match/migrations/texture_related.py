"""Texture and surface references, their uses related to their finding: where the compiler reports them.

A CM601/CM602 finding is reported once per reference and file, at its declaration (or, in a file that reads a
reference declared in a header, at its first use there); nvcc 13.0 reports an error at every use: each read
(`tex1Dfetch(texRef, i)`, `surf2Dwrite(v, surfRef, x, y)`), bind and unbind (`cudaBindTexture(0, texRef, ...)`),
attribute access (`texRef.filterMode = ...`) and each expansion of a macro whose body uses the reference. Each of
those becomes one related location of the finding (`findings.model.Related`: a note in text output, SARIF's
relatedLocations, LSP's relatedInformation), so a reader sees every line the migration touches and every
line the compiler will complain about.

Which uses a finding relates:

* a finding at the reference's declaration: the uses in its own file and in every file of the run that
  includes the declaring file (directly or through other headers: `ProjectIndex.includers`);
* a finding in a file that reads a reference declared elsewhere (reported at its first use there): the other
  uses in that file (the declaring file's own finding relates them all).

A use inside a macro body is related at each expansion of the macro (and of macros that expand it) in a file
that sees the macro's `#define` (the file itself or a project header it reaches), as the compiler reports it
there. At most `MAX_RELATED` locations per finding, in file order (the finding's own file first); the last one
says how many more uses were left out. Part of texture.py's migration; it changes no finding, edit or
verdict, only adds locations.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import tree_sitter as ts

from ...core.textsafe import display_path
from ...findings.model import Related
from ...parse import walk
from ...parse.treesitter import parse_header
from ..context import FileContext, named_children, node_text
from ..matchers import smallest_nodes, word_regex
from .texture_refs import REF_APIS, SURF_BINDS, SURF_FUNCS, TEX_BINDS, TEX_FIELDS, TEX_READS, Ref, other_context
from .texture_uses import fn_name

if TYPE_CHECKING:
    from ...read.source import SourceFile

MAX_RELATED = 20  # related locations per finding; the last one counts the uses left out
MAX_FILES = 200  # files of the run looked at for one reference (the declaring file's includers)
MAX_MACRO_DEPTH = 4  # macros expanding macros that use the reference
_MACROS = frozenset(("preproc_def", "preproc_function_def"))
_IDENT = frozenset(("identifier",))
_COMMENT = re.compile(rb"//[^\n]*|/\*.*?\*/", re.S)

# (start byte, end byte, what the use is) in one file
Site = tuple[int, int, str]


def related_uses(ctx: FileContext, ref: Ref, at: tuple[int, int], peers: list[Ref]) -> list[Related]:
    """The related locations of `ref`'s finding in `ctx`'s file, reported at bytes `at` (left out). `peers`: the
    references declared in the same file (their uses in another file are found in one pass over it)."""
    here = Path(os.path.realpath(ctx.source.path))
    found: list[tuple[str, SourceFile, list[Site]]] = [("", ctx.source, _sites(ctx, here, ctx.source.data, ctx.main.root, ref))]
    if ref.local and ctx.project is not None and ctx.project.files:
        others = sorted({p for p in ctx.project.includers(here) if p != here}, key=str)[:MAX_FILES]
        for path in others:
            got = _other_file_sites(ctx, path, ref, peers)
            if got is not None:
                found.append(got)
    noun = f"{ref.kind} reference `{ref.name}`"
    locs: list[tuple[str, SourceFile, int, int, str]] = []
    for path, src, sites in found:
        for s, e, what in sorted(set(sites)):
            if path == "" and s <= at[0] < max(e, s + 1):
                continue  # the finding's own location
            locs.append((path, src, s, e, what))
    out: list[Related] = []
    for i, (path, src, s, e, what) in enumerate(locs[:MAX_RELATED]):
        line, col = src.position(s)
        eline, ecol = src.position(e)
        msg = f"{noun} declared again here" if what == "declared again" else f"{noun} used here ({what})"
        if i == MAX_RELATED - 1 and len(locs) > MAX_RELATED:
            msg += f"; {len(locs) - MAX_RELATED} more use(s) not listed"
        out.append(Related(path, line, col, eline, ecol, msg))
    return out


def _other_file_sites(ctx: FileContext, path: Path, ref: Ref, peers: list[Ref]) -> tuple[str, SourceFile, list[Site]] | None:
    """A file of the run that includes the declaring file: its uses of `ref`. The file is parsed once per run
    and declaring file, for all the references declared there (`peers`)."""
    assert ctx.project is not None
    decl = os.path.realpath(ref.path or ctx.source.path)
    cache = ctx.project.cache.setdefault(("texture-related", decl), {})
    if path not in cache:
        cache[path] = {}
        data = ctx.project.read(path)
        names = [r for r in dict((r.name, r) for r in [ref, *peers]).values()
                 if data is not None and (r.name.encode() in data or _may_expand(ctx, path, data, r.name))]
        octx = other_context(ctx, path) if names else None
        if octx is not None:
            for r in names:
                sites = _sites(octx, path, octx.source.data, octx.main.root, r)
                if sites:
                    cache[path][r.name] = (display_path(path), octx.source, sites)
    return cache[path].get(ref.name)


def _may_expand(ctx: FileContext, path: Path, data: bytes, name: str) -> bool:
    """Whether the file can expand a macro that uses `name`: a project header it reaches mentions the name in a
    file that defines macros (the exact test, `_macros_using`, needs the file parsed)."""
    nb = name.encode()
    return any(nb in text for _, text in _visible_macro_sources(ctx, path, data))


def _sites(ctx: FileContext, path: Path, data: bytes, root: ts.Node, ref: Ref) -> list[Site]:
    """The uses of `ref` in one file (`root`: its main tree, absolute offsets): direct ones and expansions of the
    macros visible there whose bodies use it."""
    out: list[Site] = []
    name = ref.name
    macros = _macros_using(ctx, path, data, root, name)
    words = {name, *macros}
    rx = word_regex(words)
    if rx is None:
        return out
    hits = list(rx.finditer(root.text or b""))
    for mo, node in zip(hits, smallest_nodes(root, [mo.span() for mo in hits]), strict=True):
        s, e = mo.span()
        if node.type not in _IDENT or node.start_byte != s or node.end_byte != e:
            continue
        word = mo.group(0).decode("utf-8", "replace")
        if word == name:
            what = _use_of(ref, node)
            if what is not None:
                out.append((s, e, what))
            continue
        params = macros[word]
        p = node.parent
        if params is not None and not (p is not None and p.type == "call_expression" and _same(p.child_by_field_name("function"), node)):
            continue  # a function-like macro's name without arguments is not expanded
        end = p.end_byte if params is not None and p is not None else e
        out.append((s, end, f"through macro `{word}`"))
    return out


def _same(a: ts.Node | None, b: ts.Node) -> bool:
    return a is not None and a.start_byte == b.start_byte and a.end_byte == b.end_byte


def _use_of(ref: Ref, ident: ts.Node) -> str | None:
    """What a use of the reference's name does, or None for a declaration of the name (not a use)."""
    p = ident.parent
    decl = p.parent if p is not None and p.type == "init_declarator" else p
    if p is not None and (p.type in ("init_declarator", "parameter_declaration", "field_declaration")
                          and _same(p.child_by_field_name("declarator"), ident)
                          or p.type in ("declaration", "field_declaration")
                          and any(_same(d, ident) for d in p.children_by_field_name("declarator"))):
        t = decl.child_by_field_name("type") if decl is not None and decl.type == "declaration" else None
        if t is not None and t.type == "template_type" and node_text(t.child_by_field_name("name")) == ref.kind:
            # the same reference declared again (the other branch of an `#if`): the compiler stops there too
            return "declared again"
        return None
    node = ident
    while p is not None and (p.type in ("parenthesized_expression", "conditional_expression")
                             or (p.type == "pointer_expression" and node_text(p).lstrip().startswith("&"))):
        node, p = p, p.parent
    if p is not None and p.type == "argument_list" and p.parent is not None and p.parent.type == "call_expression":
        fn, _ = fn_name(p.parent)
        args = named_children(p)
        if ref.kind == "texture" and fn in TEX_READS:
            return f"read by `{fn}`"
        if ref.kind == "surface" and fn in SURF_FUNCS:
            return f"{'written' if fn.endswith('write') else 'read'} by `{fn}`"
        if fn in TEX_BINDS or fn in SURF_BINDS:
            return f"{'unbound' if fn.startswith('cudaUnbind') else 'bound'} by `{fn}`"
        if fn in REF_APIS:
            return f"passed to `{fn}`"
        callee = fn or "a call"
        return f"passed to `{callee}`" if any(_same(a, node) for a in args) else "used"
    if p is not None and p.type == "field_expression" and _same(p.child_by_field_name("argument"), node):
        fld = p.child_by_field_name("field")
        f = node_text(fld) if fld is not None else ""
        if f in TEX_FIELDS or f == "channelDesc":
            return f"its `{f}` {'set' if _assigned(p) else 'read'}"
        return f"its member `{f}`"
    return "used"


def _assigned(field: ts.Node) -> bool:
    """`tex.filterMode = ...` (also `tex.addressMode[0] = ...`): the field is written."""
    node, p = field, field.parent
    while p is not None and p.type == "subscript_expression" and _same(p.child_by_field_name("argument"), node):
        node, p = p, p.parent
    return p is not None and p.type == "assignment_expression" and _same(p.child_by_field_name("left"), node)


def _visible_macro_sources(ctx: FileContext, path: Path, data: bytes | None) -> list[tuple[Path, bytes]]:
    """The project headers `path` reaches (`data`: its bytes) that define macros: (path, bytes)."""
    if ctx.project is None:
        return []
    out = []
    try:
        headers = ctx.project.reachable(path, data)
    except OSError:
        return []
    for h in headers[:MAX_FILES]:
        text = ctx.project.read(h)
        if text is not None and b"define" in text:
            out.append((h, text))
    return out


def _macro_defs(ctx: FileContext, path: Path, data: bytes, root: ts.Node) -> dict[str, tuple[list[str] | None, bytes]]:
    """The `#define`s visible in the file (its own, then those of the project headers it reaches): name ->
    (parameters, None for an object-like macro; body without comments). Once per file context."""
    cached = getattr(ctx, "_texture_macro_defs", None)
    if cached is not None:
        return cached
    defs: dict[str, tuple[list[str] | None, bytes]] = {}
    sources: list[ts.Node] = [root] if b"define" in data else []
    sources += [parse_header(text).root_node for h, text in _visible_macro_sources(ctx, path, data) if h != path]
    for tree_root in sources:
        for d in walk.typed_nodes(tree_root, _MACROS):
            nm = d.child_by_field_name("name")
            body = d.child_by_field_name("value")
            if nm is None or body is None:
                continue
            params = None
            if d.type == "preproc_function_def":
                pl = d.child_by_field_name("parameters")
                params = [node_text(x) for x in named_children(pl)] if pl is not None else []
            defs.setdefault(node_text(nm), (params, _COMMENT.sub(b" ", body.text or b"")))
    try:
        ctx._texture_macro_defs = defs  # type: ignore[attr-defined]  # a per-file cache on the context
    except AttributeError:
        pass
    return defs


def _macros_using(ctx: FileContext, path: Path, data: bytes, root: ts.Node, name: str) -> dict[str, list[str] | None]:
    """Macros visible in the file whose body uses `name`, directly or through another such macro (at most
    `MAX_MACRO_DEPTH` deep): macro name -> its parameters (None: object-like). A macro whose parameter is
    called `name` does not use the reference."""
    defs = _macro_defs(ctx, path, data, root)
    using: dict[str, list[str] | None] = {}
    if not defs:
        return using
    wanted = {name}
    for _ in range(MAX_MACRO_DEPTH):
        rx = word_regex(wanted)
        if rx is None:
            break
        new: set[str] = set()
        for m, (params, text) in defs.items():
            if m in using or m == name:
                continue
            hits = {w.decode("utf-8", "replace") for w in rx.findall(text)}
            if hits - set(params or ()):
                using[m] = params
                new.add(m)
        if not new:
            break
        wanted = new
    return using
