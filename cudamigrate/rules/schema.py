"""The rule format, and its validation with errors that name file and key."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MATCH_KINDS = ("call", "launch", "include", "identifier", "member", "string", "builtin")
SEVERITIES = ("error", "warning", "info")
STATUSES = ("stable", "preview", "opt-in")
IMPACTS = ("build-break", "runtime-break", "deprecated", "performance", "hygiene")
ID_RE = re.compile(r"^CM\d{3,4}$")
VERSION_RE = re.compile(r"^\d+\.\d+$")

TOP_KEYS = {
    "id": True, "name": True, "family": True, "summary": True, "message": True, "severity": True,
    "status": False, "library": False, "deprecated_in": False, "removed_in": False, "match": True,
    "where": False, "fix": False, "cost": False, "options": False, "data": False, "docs": False,
    "references": True, "tags": False, "catalog": False,
}


class RuleError(Exception):
    """Invalid rule file; str() is one line naming the file and key."""


def parse_version(v: Any) -> tuple[int, int] | None:
    if v is None:
        return None
    s = str(v)
    if not VERSION_RE.match(s):
        raise ValueError(s)
    a, b = s.split(".")
    return int(a), int(b)


@dataclass
class Rule:
    id: str
    name: str
    family: str
    summary: str
    message: str
    severity: str
    match: dict[str, Any]
    references: list[str]
    path: Path
    status: str = "stable"
    library: str | None = None
    deprecated_in: str | None = None
    removed_in: str | None = None
    where: dict[str, Any] | None = None
    fix: dict[str, Any] | None = None
    cost: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    docs: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    catalog: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return next(k for k in MATCH_KINDS if k in self.match)

    @property
    def spec(self) -> Any:
        return self.match[self.kind]

    @property
    def fix_applicability(self) -> str:
        return (self.fix or {}).get("applicability", "manual")

    def keywords(self) -> set[str]:
        """Identifiers whose presence in a file is necessary for a match."""
        kind, spec = self.kind, self.spec
        if kind == "call":
            names = spec["names"]
            return {n.split("::")[-1].split(".")[-1] for n in names}
        if kind == "launch":
            return set()
        if kind == "include":
            # a path's file name, or a prefix's first directory, appears literally in every matching file
            return ({p.split("/")[-1].split(".")[0] for p in spec.get("paths", [])}
                    | {p.split("/")[0] for p in spec.get("prefixes", [])})
        if kind == "identifier":
            # `ns::*` (anything in a namespace) is found through the namespace's own name;
            # other names may hold `*` globs (`cub::Agent*`), which the engine turns into a regex
            out = set()
            for n in spec["names"]:
                parts = n.split("::")
                out.add(parts[-2] if parts[-1] == "*" and len(parts) > 1 else parts[-1])
            return out
        if kind == "member":
            return {n.split("::")[-1] for n in spec["fields"]}
        if kind == "string":
            return set(spec.get("keywords", []))
        if kind == "builtin":
            return set(spec.get("keywords", []))
        return set()

    def needs_launch(self) -> bool:
        return self.kind == "launch"


def _fail(path: Path, key: str, why: str) -> RuleError:
    return RuleError(f"{path}: {key}: {why}")


def validate(doc: Any, path: Path) -> Rule:
    if not isinstance(doc, dict):
        raise _fail(path, "<root>", "a rule file must be a YAML mapping")
    for k in doc:
        if k not in TOP_KEYS:
            raise _fail(path, str(k), f"unknown key (allowed: {', '.join(sorted(TOP_KEYS))})")
    for k, required in TOP_KEYS.items():
        if required and k not in doc:
            raise _fail(path, k, "missing required key")
    rid = doc["id"]
    if not isinstance(rid, str) or not ID_RE.match(rid):
        raise _fail(path, "id", f"must look like CM101, got {rid!r}")
    for k in ("name", "family", "summary", "message"):
        if not isinstance(doc[k], str) or not doc[k].strip():
            raise _fail(path, k, "must be a non-empty string")
    if doc["severity"] not in SEVERITIES:
        raise _fail(path, "severity", f"must be one of {SEVERITIES}")
    status = doc.get("status", "stable")
    if status not in STATUSES:
        raise _fail(path, "status", f"must be one of {STATUSES}")
    for k in ("deprecated_in", "removed_in"):
        if doc.get(k) is not None:
            try:
                parse_version(doc[k])
            except ValueError:
                raise _fail(path, k, f"must be a version like 13.0 (quote it in YAML), got {doc[k]!r}") from None
            doc[k] = str(doc[k])
    match = doc["match"]
    if not isinstance(match, dict):
        raise _fail(path, "match", "must be a mapping")
    kinds = [k for k in match if k in MATCH_KINDS]
    if len(kinds) != 1:
        raise _fail(path, "match", f"needs exactly one of {MATCH_KINDS}")
    extra = set(match) - set(MATCH_KINDS)
    if extra:
        raise _fail(path, f"match.{sorted(extra)[0]}", "unknown key")
    _validate_match(kinds[0], match[kinds[0]], path)
    refs = doc["references"]
    if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
        raise _fail(path, "references", "must be a non-empty list of strings (where the fact comes from)")
    fix = doc.get("fix")
    if fix is not None:
        if not isinstance(fix, dict):
            raise _fail(path, "fix", "must be a mapping")
        app = fix.get("applicability")
        if app not in ("safe", "unsafe", "display-only", "manual"):
            raise _fail(path, "fix.applicability", "must be safe, unsafe, display-only or manual")
        edits = fix.get("edits", [])
        if not isinstance(edits, list):
            raise _fail(path, "fix.edits", "must be a list")
        if app != "manual" and not edits and not fix.get("builtin"):
            raise _fail(path, "fix.edits", "an automatic fix needs edits")
        for i, e in enumerate(edits):
            _validate_edit(e, path, f"fix.edits[{i}]")
        if fix.get("introduced_in") is not None:
            # the toolkit version that introduced the rewritten form (used by `fix --keep-compat`)
            try:
                parse_version(fix["introduced_in"])
            except ValueError:
                raise _fail(path, "fix.introduced_in", f"must be a version like 13.0 (quote it in YAML), got {fix['introduced_in']!r}") from None
            fix["introduced_in"] = str(fix["introduced_in"])
    cost = doc.get("cost", {}) or {}
    if not isinstance(cost, dict):
        raise _fail(path, "cost", "must be a mapping")
    if "impact" in cost and cost["impact"] not in IMPACTS:
        raise _fail(path, "cost.impact", f"must be one of {IMPACTS}")
    if not isinstance(cost.get("adjust", []) or [], list):
        raise _fail(path, "cost.adjust", "must be a list")
    for i, iw in enumerate(cost.get("impact_when", []) or []):
        if not isinstance(iw, dict) or "when" not in iw or iw.get("impact") not in IMPACTS:
            raise _fail(path, f"cost.impact_when[{i}]", f"needs `when` and `impact` (one of {IMPACTS})")
    for i, adj in enumerate(cost.get("adjust", []) or []):
        if not isinstance(adj, dict) or "when" not in adj or "multiply" not in adj:
            raise _fail(path, f"cost.adjust[{i}]", "needs `when` and `multiply`")
        if not _is_number(adj["multiply"]):
            raise _fail(path, f"cost.adjust[{i}].multiply", f"must be a number, got {str(adj['multiply'])[:40]!r}")
    if cost.get("effort_minutes") is not None and not _is_number(cost["effort_minutes"]):
        raise _fail(path, "cost.effort_minutes", "must be a number")
    for k in ("options", "data", "docs"):
        if k in doc and not isinstance(doc[k], dict):
            raise _fail(path, k, "must be a mapping")
    if not path.stem.startswith(rid):
        raise _fail(path, "id", f"file name must start with the rule id {rid}")
    return Rule(
        id=rid, name=doc["name"], family=doc["family"], summary=doc["summary"].strip(),
        message=doc["message"].strip(), severity=doc["severity"], match=match, references=refs, path=path,
        status=status, library=doc.get("library"), deprecated_in=doc.get("deprecated_in"),
        removed_in=doc.get("removed_in"), where=doc.get("where"), fix=fix, cost=cost,
        options=doc.get("options") or {}, data=doc.get("data") or {}, docs=doc.get("docs") or {},
        tags=doc.get("tags") or [], catalog=doc.get("catalog") or [],
    )


def _is_number(v: Any) -> bool:
    """A number, or a string float() reads: YAML 1.1 loads `1e3` (no dot) as the string '1e3'."""
    if isinstance(v, bool):
        return False
    if isinstance(v, (int, float)):
        return True
    if isinstance(v, str):
        try:
            float(v)
            return True
        except ValueError:
            return False
    return False


def _validate_match(kind: str, spec: Any, path: Path) -> None:
    key = f"match.{kind}"
    if not isinstance(spec, dict):
        raise _fail(path, key, "must be a mapping")
    if kind == "call":
        names = spec.get("names")
        if not names or not isinstance(names, (list, dict)):
            raise _fail(path, f"{key}.names", "must be a non-empty list or mapping of name -> parameter names")
        bad = [n for n in names if not isinstance(n, str) or not n.strip()]
        if bad:
            raise _fail(path, f"{key}.names", f"names must be non-empty strings, got {str(bad[0])[:60]!r}")
        if isinstance(names, list):
            spec["names"] = {n: [] for n in names}
        for n, params in spec["names"].items():
            if params is None:
                spec["names"][n] = []
            elif not isinstance(params, list) or not all(isinstance(x, str) for x in params):
                raise _fail(path, f"{key}.names.{n}", "parameter names must be a list of strings")
    elif kind == "launch":
        pass
    elif kind == "include":
        paths, prefixes = spec.get("paths"), spec.get("prefixes")
        if paths is None and prefixes is None:
            raise _fail(path, f"{key}.paths", "must be a non-empty list (or give `prefixes`)")
        for k, v in (("paths", paths), ("prefixes", prefixes)):
            if v is not None and (not isinstance(v, list) or not v):
                raise _fail(path, f"{key}.{k}", "must be a non-empty list")
    elif kind == "identifier":
        if not isinstance(spec.get("names"), list) or not spec["names"] or not all(isinstance(n, str) for n in spec["names"]):
            raise _fail(path, f"{key}.names", "must be a non-empty list of strings")
        roles = spec.get("roles", ["type", "value", "call"])
        if not set(roles) <= {"type", "value", "call"}:
            raise _fail(path, f"{key}.roles", "allowed: type, value, call")
    elif kind == "member":
        if not isinstance(spec.get("fields"), list) or not spec["fields"] or not all(isinstance(n, str) for n in spec["fields"]):
            raise _fail(path, f"{key}.fields", "must be a non-empty list of strings")
    elif kind == "string":
        if "regex" not in spec:
            raise _fail(path, f"{key}.regex", "missing")
        try:
            re.compile(spec["regex"])
        except re.error as exc:
            raise _fail(path, f"{key}.regex", f"invalid regex: {exc}") from None
        if not spec.get("keywords"):
            raise _fail(path, f"{key}.keywords", "list the identifiers a matching file must contain (prefilter)")
    elif kind == "builtin":
        if not isinstance(spec.get("name"), str):
            raise _fail(path, f"{key}.name", "must name a built-in matcher")


EDIT_KEYS = {"replace", "with", "append_arg", "insert_arg", "delete_arg", "delete", "insert_before", "insert_after", "when"}


def _validate_edit(e: Any, path: Path, key: str) -> None:
    if not isinstance(e, dict):
        raise _fail(path, key, "must be a mapping")
    for k in e:
        if k not in EDIT_KEYS:
            raise _fail(path, f"{key}.{k}", f"unknown edit key (allowed: {', '.join(sorted(EDIT_KEYS))})")
    ops = [k for k in ("replace", "append_arg", "insert_arg", "delete_arg", "delete", "insert_before", "insert_after") if k in e]
    if len(ops) != 1:
        raise _fail(path, key, "needs exactly one of replace, append_arg, insert_arg, delete_arg, delete, insert_before, insert_after")
    if ops[0] in ("replace", "insert_arg", "insert_before", "insert_after") and "with" not in e:
        raise _fail(path, f"{key}.with", f"`{ops[0]}` needs `with`")
