"""CUDA-named identifiers that no header of the target release spells: a build break no rule knows yet.

Why: the rules know the removals someone wrote down; legacy code also calls what nobody did (a function removed
before 11.7, a typo'd enumerator, an API of a newer release than the target). Every `cuda[A-Z]...` and
`cu[A-Z]...` name belongs to NVIDIA's runtime and driver API by convention, and data/cuda_names.json.gz
(scripts/build_release_inventory.py) records which of the 17 releases from 11.7 to 13.5 spell each such name
anywhere in their runtime, crt, profiler-API and NVRTC headers. A name the target's headers never spell, that
the project does not declare either, cannot compile; the finding says the last release that had it, or that
none from 11.7 on did, and the closest name the target does have.

Conservative on purpose: names that a rule of this run reports (`ctx.api_names`) are that rule's; qualified
names (`cuda::std::...`, `mylib::cudaFoo`) and fields are left alone; a name declared in the file (a function,
variable, macro, type, enumerator, parameter) or spelled anywhere in a project header the file reaches is the
project's (so is a name that is a member of a class of the file, used inside its methods); `cuFile*`
(GPUDirect Storage, its own wheel) is not read from the runtime headers.
"""

from __future__ import annotations

import difflib
import gzip
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import tree_sitter as ts

from ...core.registry import Registry
from ...parse.treesitter import query
from ...rules.schema import Rule
from ..context import FileContext, node_text
from ..matchers import Match
from .builtin_registry import BuiltinFn, builtin_schema
from .passes import dead_for_target

BUILTINS: Registry[BuiltinFn] = Registry("builtin matcher")  # joined with the others in match/kinds.py
DATA = Path(__file__).resolve().parent.parent.parent / "data" / "cuda_names.json.gz"
_NAME = re.compile(r"(?:cuda|cu)[A-Z]\w*")
_NOT_RUNTIME = ("cuFile",)  # GPUDirect Storage: cufile.h, not in the runtime wheels
_DECLARED = (
    "(function_declarator declarator: (identifier) @d) (init_declarator declarator: (identifier) @d) "
    "(declaration declarator: (identifier) @d) (parameter_declaration declarator: (identifier) @d) "
    "(pointer_declarator declarator: (identifier) @d) (reference_declarator (identifier) @d) "
    "(array_declarator declarator: (identifier) @d) (preproc_def name: (identifier) @d) "
    "(preproc_function_def name: (identifier) @d) (preproc_params (identifier) @d) "
    "(type_definition declarator: (type_identifier) @d) (enumerator name: (identifier) @d) "
    "(struct_specifier name: (type_identifier) @d) (class_specifier name: (type_identifier) @d) "
    "(enum_specifier name: (type_identifier) @d) (union_specifier name: (type_identifier) @d) "
    "(field_identifier) @d")  # a member of that name anywhere in the file: `cudaExtMem` used inside a method
_USES = "(identifier) @u (type_identifier) @u"


@lru_cache(maxsize=1)
def release_names() -> tuple[tuple[tuple[int, int], ...], dict[str, int]]:
    """(releases oldest first, name -> bitmask of the releases whose headers spell it)."""
    doc = json.loads(gzip.decompress(DATA.read_bytes()))
    rel = tuple((int(a), int(b)) for a, b in (v.split(".") for v in doc["releases"]))
    return rel, doc["names"]


def target_index(target: tuple[int, int], releases: tuple[tuple[int, int], ...]) -> int | None:
    """The release whose headers stand for `target`: the newest one not after it; None before the oldest."""
    idx = [i for i, r in enumerate(releases) if r <= target]
    return idx[-1] if idx else None


@lru_cache(maxsize=32)
def _spelled_by(index: int) -> tuple[str, ...]:
    _, names = release_names()
    return tuple(sorted(n for n, bits in names.items() if bits >> index & 1))


@lru_cache(maxsize=4096)
def _suggestion(name: str, index: int) -> str:
    """The closest name release `index` spells, or '': once per name, not per use (a file that uses one unknown
    name a thousand times asked difflib a thousand times over ~10,000 names)."""
    close = difflib.get_close_matches(name, _spelled_by(index), n=1, cutoff=0.75)
    return close[0] if close else ""


def _fmt(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


def _project_text(ctx: FileContext) -> bytes:
    """The bytes of the project headers the file reaches (one blob: a name spelled there is the project's)."""
    proj = ctx.project
    if proj is None:
        return b""
    out = []
    for p in proj.reachable(ctx.source.path, ctx.source.data):
        data = proj.read(p)
        if data:
            out.append(data)
    return b"\n".join(out)


def _qualified(node: ts.Node) -> bool:
    parent = node.parent
    return parent is not None and parent.type in ("qualified_identifier", "namespace_identifier") and \
        parent.child_by_field_name("scope") is not None and parent.child_by_field_name("scope") != node


@BUILTINS.register("unknown_cuda_name", builtin_schema(), doc=(
    "`cuda[A-Z]...` / `cu[A-Z]...` identifiers (calls, values, types) that no header of the target release spells "
    "(data/cuda_names.json.gz, 11.7 to 13.5) and that the file or its project headers do not declare, unless a "
    "rule of this run matches the name; vars: `last` (the newest release before the target that spells it, or ''), "
    "`first` (the oldest release after the target that spells it, or ''), "
    "`suggestion` (the closest name the target spells, or ''), `release` (the release read for the target)."))
def unknown_cuda_name(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    releases, names = release_names()
    at = target_index(ctx.target, releases)
    if at is None:
        return []  # a target older than 11.7: no headers read for it
    unit = ctx.main
    root = unit.root
    declared = {node_text(n) for caps in _captures(_DECLARED, root) for n in caps}
    uses = [n for caps in _captures(_USES, root) for n in caps]
    project = None
    in_project: dict[str, bool] = {}  # a name's search of the project text, once per name
    out: list[Match] = []
    for node in sorted(uses, key=lambda n: n.start_byte):
        name = node_text(node)
        if not _NAME.fullmatch(name) or name.startswith(_NOT_RUNTIME) or name in declared or name in ctx.api_names:
            continue
        if names.get(name, 0) >> at & 1 or _qualified(node):
            continue
        if project is None:
            project = _project_text(ctx)
        if name not in in_project:
            in_project[name] = re.search(rb"\b" + re.escape(name.encode()) + rb"\b", project) is not None
        if in_project[name] or dead_for_target(node, ctx):
            continue
        bits = names.get(name, 0) & ((1 << at) - 1)
        last = _fmt(releases[bits.bit_length() - 1]) if bits else ""
        later = names.get(name, 0) >> (at + 1)
        first = _fmt(releases[at + 1 + (later & -later).bit_length() - 1]) if later else ""
        m = Match(rule=rule, unit=unit, node=node, name=name, written=name)
        m.vars.update(last=last, first=first, suggestion=_suggestion(name, at), release=_fmt(releases[at]))
        out.append(m)
    return out


def _captures(q: str, root: ts.Node) -> list[list[ts.Node]]:
    return list(ts.QueryCursor(query(q)).captures(root).values())
