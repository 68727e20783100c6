"""Matcher kinds (`match: {call: ...}`, `{builtin: ...}`, ...): one registry that the engine dispatches through.

Each kind says how its spec is written (schema), which identifiers a file must contain for it to match
(`keywords`, the prefilter), and how it finds matches: `hit` runs on each identifier the file's one keyword
query finds (call, identifier, member), `scan` runs once per file (launch, include, string, builtin).
Builtin matchers are code that lives next to its helpers (texture.py, npp.py, ...); each of those modules keeps
a registry of its own, joined here into `BUILTINS` by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import tree_sitter as ts

from .migrations import unused_suppressions
from ..parse.treesitter import Unit
from ..core.registry import Registry, Schema, SchemaError, boolean, mapping, one_of, regex, string, string_list
from ..rules.schema import Rule
from .migrations import builtins, cccl_drops, header_deprecated, inline_ptx, npp, texture, unknown_names
from .context import FileContext
from .matchers import Match, includes, launches, match_call, match_identifier, match_member, strings

BUILTINS: Registry[builtins.BuiltinFn] = Registry.union(
    "builtin matcher", builtins.BUILTINS, texture.BUILTINS, inline_ptx.BUILTINS, npp.BUILTINS,
    unused_suppressions.BUILTINS, header_deprecated.BUILTINS, unknown_names.BUILTINS,
    cccl_drops.BUILTINS)

HitFn = Callable[[Rule, FileContext, Unit, ts.Node], "Match | None"]
ScanFn = Callable[[Rule, FileContext, dict[str, Any]], "list[Match]"]


@dataclass(frozen=True)
class MatcherKind:
    """How one kind of `match:` finds its matches; exactly one of `hit` and `scan` is set."""

    keywords: Callable[[dict[str, Any]], set[str]]
    hit: HitFn | None = None
    scan: ScanFn | None = None
    prepare: Callable[[dict[str, Any]], None] | None = None  # normalizes a checked spec in place


MATCHER_KINDS: Registry[MatcherKind] = Registry("matcher kind")


def run_builtin(rule: Rule, ctx: FileContext, options: dict[str, Any]) -> list[Match]:
    return BUILTINS.get(rule.spec["name"]).impl(rule, ctx, options)


def _last(name: str) -> str:
    return name.split("::")[-1].split(".")[-1]


def _call_keywords(spec: dict[str, Any]) -> set[str]:
    return {_last(n) for n in spec["names"]}


def _identifier_keywords(spec: dict[str, Any]) -> set[str]:
    # `ns::*` (anything in a namespace) is found through the namespace's own name;
    # other names may hold `*` globs (`cub::Agent*`), which the engine turns into a regex
    out = set()
    for n in spec["names"]:
        parts = n.split("::")
        out.add(parts[-2] if parts[-1] == "*" and len(parts) > 1 else parts[-1])
    return out


def _include_keywords(spec: dict[str, Any]) -> set[str]:
    # a path's file name, or a prefix's first directory, appears literally in every matching file
    return ({p.split("/")[-1].split(".")[0] for p in spec.get("paths", [])}
            | {p.split("/")[0] for p in spec.get("prefixes", [])})


def _listed_keywords(spec: dict[str, Any]) -> set[str]:
    return set(spec.get("keywords", []) or [])


def _check_call_names(v: Any, path: str, checker: Any) -> None:
    if not v or not isinstance(v, (list, dict)):
        raise SchemaError(path, "must be a non-empty list or mapping of name -> parameter names")
    bad = [n for n in v if not isinstance(n, str) or not n.strip()]
    if bad:
        raise SchemaError(path, f"names must be non-empty strings, got {str(bad[0])[:60]!r}")
    if isinstance(v, dict):
        for n, params in v.items():
            if params is not None and (not isinstance(params, list) or not all(isinstance(x, str) for x in params)):
                raise SchemaError(f"{path}.{n}", "parameter names must be a list of strings")


def _prepare_call(spec: dict[str, Any]) -> None:
    names = spec["names"]
    spec["names"] = {n: list(p or []) for n, p in names.items()} if isinstance(names, dict) else {n: [] for n in names}


def _check_include(v: Any, path: str, checker: Any) -> None:
    mapping({"paths": string_list(), "prefixes": string_list()}).check(v, path, checker)
    if "paths" not in v and "prefixes" not in v:
        raise SchemaError(f"{path}.paths", "must be a non-empty list (or give `prefixes`)")


def _check_string(v: Any, path: str, checker: Any) -> None:
    mapping({"regex": regex(), "keywords": string_list()}, required=("regex",)).check(v, path, checker)
    if not v.get("keywords"):
        raise SchemaError(f"{path}.keywords", "list the identifiers a matching file must contain (prefilter)")


def _check_builtin(v: Any, path: str, checker: Any) -> None:
    if not isinstance(v, dict) or not isinstance(v.get("name"), str):
        raise SchemaError(f"{path}.name", "must name a built-in matcher")
    BUILTINS.check(v["name"], v, path, checker)


ROLES = ("type", "value", "call")
CALLEE_IDENTITY = boolean()

MATCHER_KINDS.add(
    "call", mapping({"names": Schema("[API, ...] or {API: [PARAM, ...]}", _check_call_names), "adl": string("NAMESPACE"),
                     "callee_identity": CALLEE_IDENTITY}, required=("names",),
                    form="{names: {API: [PARAM, ...]}, adl: NAMESPACE, callee_identity: false}"),
    MatcherKind(_call_keywords, hit=match_call, prepare=_prepare_call),
    "calls of a function by (qualified) name; parameter names let conditions and edits say `arg.stream`. "
    "`using namespace`, namespace aliases and `using ns::f;` are resolved; methods (`obj.f()`), other namespaces "
    "(`my::f`) and functions the file defines itself are not matched. `adl: thrust` also matches unqualified calls "
    "whose first argument is `thrust::...`. Names may end in a member call: `thrust::cuda::par.on`. Example: "
    "`call: {names: {cudaMemcpyAsync: [dst, src, count, kind, stream]}}`.")
MATCHER_KINDS.add(
    "launch", mapping({}, form="{}"), MatcherKind(lambda spec: set(), scan=lambda r, ctx, o: launches(r, ctx)),
    "kernel launches `k<<<grid, block, shmem, stream>>>(...)`; `args` are the launch configuration (`grid`, "
    "`block`, `shmem`, `stream`).")
MATCHER_KINDS.add(
    "include", Schema("{paths: [PATH, ...], prefixes: [DIR/, ...]}", _check_include),
    MatcherKind(_include_keywords, scan=lambda r, ctx, o: includes(r, ctx)),
    "`#include <...>` / `\"...\"` of one of the paths, or of a path starting with one of the prefixes.")
MATCHER_KINDS.add(
    "identifier", mapping({"names": string_list(), "roles": one_of(*ROLES, many=True), "callee_identity": CALLEE_IDENTITY},
                          required=("names",), form="{names: [NAME, ...], roles: [type, value, call]}"),
    MatcherKind(_identifier_keywords, hit=match_identifier),
    "a (qualified) name used as a type, a value or a callee; declarations of user variables with that name are "
    "not matched; `ns::*` matches anything in a namespace, `cub::Agent*` a glob. Example: "
    "`identifier: {names: [double4], roles: [type]}`.")
MATCHER_KINDS.add(
    "member", mapping({"fields": string_list(), "receiver_types": string_list()}, required=("fields",),
                      form="{fields: [FIELD, ...], receiver_types: [TYPE, ...]}"),
    MatcherKind(lambda spec: {n.split("::")[-1] for n in spec["fields"]}, hit=match_member),
    "`x.field` / `x->field`; the receiver's declared type is checked when it can be found.")
MATCHER_KINDS.add(
    "string", Schema("{regex: REGEX, keywords: [NAME, ...]}", _check_string),
    MatcherKind(_listed_keywords, scan=lambda r, ctx, o: strings(r, ctx)),
    "regex over string literal contents (NVRTC options); named groups become `capture.NAME` edit targets; "
    "`keywords` are identifiers a matching file must contain.")
MATCHER_KINDS.add(
    "builtin", Schema("{name: BUILTIN, keywords: [NAME, ...], ...}", _check_builtin),
    MatcherKind(_listed_keywords, scan=run_builtin),
    "a Python matcher for patterns that need several nodes (see the builtin matchers below); a builtin that "
    "computes its own edits says `fix: {builtin: true}`.")


def kind_of(rule: Rule) -> MatcherKind:
    return MATCHER_KINDS.get(rule.kind).impl


def keywords(rule: Rule) -> set[str]:
    """Identifiers whose presence in a file is necessary for a match (empty: the rule always runs)."""
    return kind_of(rule).keywords(rule.spec)

