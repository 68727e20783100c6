"""`thrust::make_tuple` and the like, reached only through a CCCL header that stopped including their declaration.

Why: CCCL 13.3 (the CUDA 13.3 toolkit's) stopped including `<thrust/tuple.h>` from `<thrust/iterator/zip_iterator.h>`
and other public headers. Code that names `thrust::make_tuple`, `thrust::get`, `thrust::tuple` or `thrust::tie`
having included only those compiled up to 13.2 and stops with `namespace "thrust" has no member "make_tuple"`
from 13.3 on. data/cccl_drops.json.gz (scripts/build_cccl_drops.py, from the nvidia-cuda-cccl wheels' headers of
13.0 to 13.5) records, per release pair, each thrust/cub name a public header stopped reaching, the headers
that declare it, and which public headers still reach it.

A use `thrust::NAME` (or `cub::NAME`) is reported when the target release has dropped NAME from a header the
file includes (itself or through the project's headers; a header that includes no CCCL header is judged by the
files of the run that include it), and no header it includes still reaches NAME there. Uses in comments,
strings and dead `#if` branches, unqualified names (a user's own `get`, `std::get`, `using namespace thrust;`)
and a target before the dropping release are left alone (a commented-out or dead `#include` includes nothing). The
fix includes the declaring header after the file's last thrust/cub include before the first use, one the
preprocessor takes (not in a comment or a dead `#if` branch, where it would change nothing): what the dropped
include used to bring in, so behaviour is unchanged.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import tree_sitter as ts

from ...core.registry import Registry
from ...findings.model import Edit
from ...parse import walk
from ...parse.treesitter import query
from ...rules.schema import Rule
from ..context import FileContext, node_text
from ..matchers import INCLUDE_PATTERNS, Match
from .builtin_registry import BuiltinFn, builtin_schema
from .passes import dead_for_target

BUILTINS: Registry[BuiltinFn] = Registry("builtin matcher")  # joined with the others in match/kinds.py
DATA = Path(__file__).resolve().parent.parent.parent / "data" / "cccl_drops.json.gz"
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]((?:thrust|cub)/[^>"\n]+)[>"]', re.M)
_USE = re.compile(r"(?:::)?\s*(thrust|cub)\s*::\s*([A-Za-z_]\w*)")
_HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl", ".inc")


@dataclass(frozen=True)
class Drop:
    """A name the target's CCCL no longer reaches from `headers`, declared by `declared_in` (`path:line`)."""

    name: str
    release: str           # the release that dropped it (the newest drop not after the target)
    headers: frozenset[str]
    declared_in: tuple[str, ...]


@lru_cache(maxsize=1)
def _doc() -> dict[str, Any]:
    return json.loads(gzip.decompress(DATA.read_bytes()))


def _version(v: str) -> tuple[int, int]:
    a, b = v.split(".")[:2]
    return int(a), int(b)


@lru_cache(maxsize=8)
def drops_for(target: tuple[int, int]) -> tuple[dict[str, Drop], dict[str, frozenset[str]]]:
    """(name -> its drop as of `target`, name -> the public headers that still reach it at `target`). Empty before
    the oldest release read; a target after the newest is read as the newest."""
    doc = _doc()
    releases = sorted(doc["releases"], key=_version)
    at = [r for r in releases if _version(r) <= target]
    if not at:
        return {}, {}
    release = at[-1]
    heads = doc["headers"]
    out: dict[str, Drop] = {}
    for d in doc["drops"]:
        if _version(d["to"]) > _version(release):
            continue
        old = out.get(d["name"])
        hs = frozenset(heads[i] for i in d["headers"]) | (old.headers if old else frozenset())
        out[d["name"]] = Drop(d["name"], d["to"], hs, tuple(d["declared_in"]))
    reached = {n: frozenset(heads[i] for i in g["headers"])
               for g in doc["reached_by"].get(release, []) for n in g["names"]}
    return out, reached


def declaring_header(drop: Drop) -> tuple[str, str]:
    """(header, `path:line`) to include for the name: the one named like it (`thrust/tuple.h` for `make_tuple`)
    when several declare it, else the first."""
    stem = drop.name.split("::")[-1]
    best = next((d for d in drop.declared_in if Path(d.split(":")[0]).stem in stem), drop.declared_in[0])
    return best.split(":")[0], best


def _included(data: bytes) -> set[str]:
    return {m.group(1).decode("utf-8", "replace").strip() for m in _INCLUDE.finditer(data)}


def _closure_includes(ctx: FileContext, path: Path, data: bytes) -> set[str]:
    """The thrust/cub headers `path` includes, itself or through the project headers it reaches."""
    got = _included(data)
    proj = ctx.project
    if proj is not None:
        for p in proj.reachable(path, data):
            got |= _included(proj.read(p) or b"")
    return got


def _live_includes(ctx: FileContext) -> list[tuple[int, str]]:
    """(end of its line, header name) of each `#include <...>`/`"..."` of the file's own parse that the
    preprocessor may take, in order: not in a comment (the parse has none there), not in a branch dead for the
    target (`#if 0`). A commented-out or dead include neither brings a name in nor is a place to insert one."""
    data = ctx.source.data
    out: list[tuple[int, str]] = []
    for _, inc, path in walk.field_matches(ctx.main.root, INCLUDE_PATTERNS):
        text = node_text(path).strip()
        if len(text) < 2 or text[0] not in "<\"" or dead_for_target(inc, ctx):
            continue
        end = data.find(b"\n", ctx.main.abs(path)[1])
        out.append((len(data) if end < 0 else end + 1, text[1:-1].strip()))
    return out


def _include_sets(ctx: FileContext) -> list[set[str]]:
    """The file's CCCL includes; for a header that reaches none, those of each file of the run including it."""
    proj = ctx.project
    own = {name for _, name in _live_includes(ctx) if name.startswith(("thrust/", "cub/"))}
    if proj is not None:
        for p in proj.reachable(ctx.source.path, ctx.source.data):
            own |= _included(proj.read(p) or b"")
    if own or proj is None or ctx.source.path.suffix.lower() not in _HEADER_SUFFIXES:
        return [own]
    out = []
    for f in proj.includers(ctx.source.path):
        data = proj.read(f)
        if data is not None:
            out.append(_closure_includes(ctx, f, data) | own)
    return out or [own]


def _lacks(includes: set[str], drop: Drop, reached: dict[str, frozenset[str]]) -> bool:
    """Did these includes reach the name only through headers that dropped it?"""
    if not includes & drop.headers:
        return False
    providers = reached.get(drop.name, frozenset()) | {d.split(":")[0] for d in drop.declared_in}
    return not includes & providers


def _insert_at(ctx: FileContext, before: int) -> int | None:
    """Just after the last live thrust/cub include line before offset `before` (the first use: a qualified name
    must be declared before it), else the last live include line before it; None without one (`_live_includes`:
    never in a comment or a dead `#if` branch, where the include would change nothing), or when that include is
    on the last line without a newline (no place to insert)."""
    data = ctx.source.data
    found = [(end, name) for end, name in _live_includes(ctx) if end <= before]
    cccl = [end for end, name in found if name.startswith(("thrust/", "cub/"))]
    at = cccl[-1] if cccl else (found[-1][0] if found else None)
    return None if at is None or not data[:at].endswith(b"\n") else at


@BUILTINS.register("cccl_dropped_include", builtin_schema(), doc=(
    "`thrust::NAME` / `cub::NAME` uses whose only route to NAME's declaration, in the target's CCCL, went through a "
    "header that stopped including it (data/cccl_drops.json.gz); the edit includes the declaring header after the "
    "file's last live thrust/cub include before the first use. vars: `header` (the declaring header), `declared` "
    "(its path:line), `via` (the "
    "included header that dropped it), `release` (the CUDA release that dropped it)."))
def cccl_dropped_include(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    data = ctx.source.data
    if b"thrust" not in data and b"cub" not in data:
        return []
    drops, reached = drops_for(ctx.target)
    if not drops:
        return []
    unit = ctx.main
    uses: list[tuple[ts.Node, Drop]] = []
    seen: set[int] = set()
    for caps in ts.QueryCursor(query("(qualified_identifier) @q")).captures(unit.root).values():
        for node in caps:
            m = _USE.match(node_text(node))
            if m is None or node.start_byte in seen:
                continue
            seen.add(node.start_byte)
            drop = drops.get(f"{m.group(1)}::{m.group(2)}")
            if drop is not None:
                uses.append((node, drop))
    if not uses:
        return []
    sets = _include_sets(ctx)
    flagged: list[tuple[ts.Node, Drop, list[set[str]]]] = []
    for node, drop in sorted(uses, key=lambda u: u[0].start_byte):
        lacking = [s for s in sets if _lacks(s, drop, reached)]
        if lacking and not dead_for_target(node, ctx):
            flagged.append((node, drop, lacking))
    if not flagged:
        return []
    at = _insert_at(ctx, unit.abs(flagged[0][0])[0])  # one place, before every use it declares
    nl = ctx.source.newline.decode()
    out: list[Match] = []
    for node, drop, lacking in flagged:
        header, declared = declaring_header(drop)
        written = node_text(node)
        m = Match(rule=rule, unit=unit, node=node, name=drop.name, written=written)
        s, e = unit.abs(node)
        m.range = (s, s + len(written.split("<")[0].rstrip()))
        m.vars.update(header=header, declared=declared, release=drop.release,
                      via=sorted(lacking[0] & drop.headers)[0])
        if at is not None:
            m.edits = [Edit(at, at, f"#include <{header}>{nl}")]
        else:
            m.fix_applicability = "manual"
        out.append(m)
    return out
