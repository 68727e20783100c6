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

The migration in three modules by concern, cut from one: texture_refs.py finds the references (declarations
here, in included headers, marker comments), texture_uses.py analyses their uses (`Migration`: reads, binds,
attribute writes, collisions), texture_edits.py builds the edits
(declarations, helpers, binds, reads, unbinds) and the one finding per reference. This module registers the
builtins, runs the stages in order (`_run`) and judges what blocks a reference in this file and in the
project's other files (which runs them again there). They all read and write one per-file `Migration` and decide
together whether a reference is migrated at all: a partial migration does not compile."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ...core.registry import Registry
from ...findings.model import ANY_SCOPE, SCOPE
from ...parse import walk

from ...rules.schema import Rule
from .builtin_registry import BuiltinFn, builtin_schema
from ..context import FileContext, declaration_of, named_children, node_text, normalize
from ..matchers import Match
from .texture_edits import manual_match, migrate
from .texture_getters import find_getter, getter_bind_match, getter_type_match
from .texture_related import related_uses
from .texture_refs import (
    other_context,
    CALL_ARGS,
    REF_APIS,
    SURF_BINDS,
    TEX_BINDS,
    TEX_READS,
    Ref,
    HELPER_GUARD,
    getter_reason,
    refs_in_scope,
    returning_function,
    reference_type_names,
)
from .texture_uses import Migration, Use, named_reference, fn_name, idents, macro_params, project_type_use, project_types



def _file_blockers(rule: Rule, ctx: FileContext, kind: str) -> dict[tuple[str, str], list[str]]:
    """Why each reference (by declaring file and name) cannot be migrated in this one file, with
    `file:line` in front; computed once per file and run from the file as it was first seen."""
    cache = ctx.project.cache.setdefault(("texture-blockers", kind), {})
    key = Path(os.path.realpath(ctx.source.path))
    if key not in cache:
        out: dict[tuple[str, str], list[str]] = {}
        refs = {n: r for n, r in refs_in_scope(ctx)[2].items() if r.kind == kind}
        for m in _run(rule, ctx, kind, project_check=False):
            r = refs.get(m.vars.get("reference", ""))
            if r is None or not m.vars.get("reason"):
                continue
            decl = os.path.realpath(r.path or ctx.source.path)
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
    decl = Path(os.path.realpath(ref.path or ctx.source.path))
    me = Path(os.path.realpath(ctx.source.path))
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
            other = other_context(ctx, f)
            if other is None:
                continue
            _file_blockers(rule, other, kind)
        out += cache.get(f, {}).get((str(decl), ref.name), [])
    return out


def _run(rule: Rule, ctx: FileContext, kind: str, project_check: bool = True) -> list[Match]:
    local, odd, by_name, helpers = refs_in_scope(ctx)
    if project_check and ctx.project is not None and ctx.project.files:
        _file_blockers(rule, ctx, kind)  # this file's own verdict, fixed from its first reading
    mig = Migration(ctx)
    refs = {n: r for n, r in by_name.items() if r.kind == kind}
    mig.refs = refs
    uses: dict[str, list[Use]] = {n: [] for n in refs}
    for unit, ident in idents(ctx, set(refs)):
        r = refs[node_text(ident)]
        if r.local and unit is r.unit and r.declarator is not None and r.declarator.start_byte <= ident.start_byte < r.declarator.end_byte:
            continue
        if r.local and unit is r.unit and r.decl is not None and r.decl.start_byte <= ident.start_byte < r.decl.end_byte:
            continue  # another declarator of the same declaration
        if unit is ctx.main and any(o.name == r.name and o.decl is not None and o.decl.start_byte <= ident.start_byte < o.decl.end_byte
                                    for o in local):
            continue  # the same name declared again (another `#if` branch): the reference's problem says so
        uses[r.name].append(_getter_use(ctx, r, mig.classify(r, unit, ident)))
    out = []
    for n, r in refs.items():
        if not r.local and not uses[n]:
            continue
        m = migrate(rule, ctx, r, uses[n], mig, helpers)
        if m is not None and project_check and m.fix_applicability != "manual":
            blockers = _project_blockers(rule, ctx, kind, r)
            if blockers:
                m.edits = []
                m.fix_applicability = "manual"
                m.vars["reason"] = "it cannot be migrated in every file that uses it, and a partial migration would " \
                                   "not build: " + "; ".join(dict.fromkeys(blockers))
        if m is not None:
            if project_check:  # (not when judging another file for its blockers: nothing reports that match)
                m.related = related_uses(ctx, r, m.report_range, [o for o in refs.values() if o.local])
            out.append(m)
    if kind == "texture":
        for node, why in odd:
            if node_text(node).startswith("texture"):
                fname = returning_function(node.parent)
                g = find_getter(ctx, fname) if fname is not None and project_check else None
                out.append(getter_type_match(rule, ctx, node, g) if g is not None else manual_match(rule, ctx.main, node, why))
    else:
        for node, why in odd:
            if node_text(node).startswith("surface"):
                out.append(manual_match(rule, ctx.main, node, why))
    return out


def _getter_use(ctx: FileContext, r: Ref, u: Use) -> Use:
    """`return ref;` in a getter: a "getter" use when texture_getters.py migrates the getter with the reference,
    else the reason it cannot."""
    if u.what != "return":
        return u
    ret, fname, why = u.detail
    g = find_getter(ctx, fname) if r.local and u.unit is ctx.main and r.kind == "texture" else None
    if g is not None and g.ref == r.name and g.declared_in == Path(os.path.realpath(ctx.source.path)):
        return Use(u.node, u.unit, "getter", (ret, g))
    return Use(u.node, u.unit, "other", why)


_INCLUDE_NAME = re.compile(rb'#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]')


def _unseen_use_group(ctx: FileContext, unit: Any, at: Any, named: str) -> str:
    """The consistency group of a use of `named` whose `texture<>` declaration this file does not see.

    It may be the use of any reference of that name that shares a translation unit with this file (`@*`: a
    file included after the declaration elsewhere), and only those: none when the file declares its own
    `named` (a `cudaTextureObject_t` of a half-finished port is another variable), and none when no file of
    the run includes this one (or names it in an `#include`), since then it shares no translation unit with
    any declaration of the run; another program's `texture<> named` must not wait for it."""
    if not named:
        return ""
    if not unit.in_macro and declaration_of(unit.root, named, at) is not None:
        return ""
    if not _may_be_included(ctx):
        return ""
    return f"{named}{SCOPE}{ANY_SCOPE}"


def _may_be_included(ctx: FileContext) -> bool:
    proj = ctx.project
    if proj is None or not proj.files:
        return True  # no run to ask (one buffer): any declaration may be in view
    if proj.includers(ctx.source.path):
        return True
    names = proj.cache.get("texture-included-names")
    if names is None:  # every name an `#include` of the run spells, by basename: a -I or macro path too
        names = set()
        for f in proj.files:
            data = proj.read(f) or b""
            names.update(os.path.basename(m.group(1).decode("utf-8", "replace")) for m in _INCLUDE_NAME.finditer(data))
        proj.cache["texture-included-names"] = names
    return ctx.source.path.name in names


BUILTINS: Registry[BuiltinFn] = Registry("builtin matcher")  # joined with the others in match/kinds.py


@BUILTINS.register("texture_reference", builtin_schema(), doc=(
    "texture references (`texture<T, dim, mode>`, the removed reference API) with their binds, reads and "
    "field settings, migrated together to a `cudaTextureObject_t` when every use is understood; otherwise a "
    "manual finding that says why (`cudamigrate/match/migrations/texture.py`)."))
def texture_reference(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    return _run(rule, ctx, "texture")


@BUILTINS.register("surface_reference", builtin_schema(), doc=(
    "surface references (`surface<void, dim>`), migrated like `texture_reference` to a `cudaSurfaceObject_t`."))
def surface_reference(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    return _run(rule, ctx, "surface")


@BUILTINS.register("texture_reference_api", builtin_schema())
def texture_reference_api(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    """Uses of the removed reference API that no CM601/CM602 finding accounts for."""
    _, _, by_name, guards = refs_in_scope(ctx)
    out: list[Match] = []
    # the stand-ins for binds through a getter: inserted with the first such bind of the file (texture_getters.py)
    getter_helpers = HELPER_GUARD not in guards and HELPER_GUARD.encode() not in ctx.source.data
    for unit in ctx.units:
        # `(call_expression function: (_) @fn arguments: (argument_list) @args) @call`, walked
        for call, _, argl in walk.pair_matches(unit.root, CALL_ARGS, "function"):
            fn, templ = fn_name(call)
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
                    callee = name.split("(", 1)[0].strip()
                    g = find_getter(ctx, callee) if unit is ctx.main and ref_arg is not None and \
                        ref_arg.type == "call_expression" else None
                    if g is not None:
                        out.append(getter_bind_match(rule, ctx, call, fn, ref_arg, g, getter_helpers))
                        getter_helpers = False
                        continue
                    why = f"`{fn}` binds the reference returned by `{name}`: {getter_reason(callee)}"
                elif unit.in_macro and unit.macro_name and name in macro_params(ctx, unit.macro_name):
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
            named = named_reference(ref_arg, args, fn)
            if named and unit.in_macro and unit.macro_name and named in macro_params(ctx, unit.macro_name):
                # a macro's parameter is no reference: whatever its name, it must not join (and withhold) the
                # consistency group of a reference so named elsewhere in the run; CM601 reports each passed one
                if fn in TEX_READS:
                    why = (f"`{fn}` in macro `{unit.macro_name}` reads its parameter `{named}`: the references passed to "
                           f"`{unit.macro_name}` cannot be migrated automatically (CM601 reports each)")
                named = ""
            m = Match(rule=rule, unit=unit, node=call, name=fn, written=fn)
            m.vars.update({"function": fn, "reason": why, "reference": named,
                           "reference_group": _unseen_use_group(ctx, unit, call, named)})
            out.append(m)
    for unit in ctx.units:
        for node in reference_type_names(unit.root):
            if project_type_use(node, project_types(unit.root)):
                continue
            m = Match(rule=rule, unit=unit, node=node, name=node_text(node), written=node_text(node))
            m.vars.update({"function": node_text(node),
                           "reason": f"the `{node_text(node)}` type is gone from the CUDA 13.0 headers"})
            out.append(m)
    return out
