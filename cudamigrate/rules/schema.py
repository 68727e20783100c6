"""The rule format's frame (ids, versions, fix and cost shape) and its validation with errors that name file and key.

The vocabulary inside it (matcher kinds, conditions, edits, cost keys) is checked by `rules.vocabulary` against
the registries where each word is implemented; `rules.load` runs both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.registry import did_you_mean

SEVERITIES = ("error", "warning", "info")
STATUSES = ("stable", "preview", "opt-in")
ID_RE = re.compile(r"^CM\d{3,4}$")
VERSION_RE = re.compile(r"^\d+\.\d+$")

TOP_KEYS = {
    "id": True, "name": True, "family": True, "summary": True, "message": True, "severity": True,
    "status": False, "library": False, "deprecated_in": False, "removed_in": False, "match": True,
    "announced_in": False, "breaks": False,
    "where": False, "fix": False, "cost": False, "options": False, "data": False, "docs": False,
    "references": True, "tags": False, "catalog": False, "consistency": False,
}
# `fix:` keys; its `when` and `edits` are vocabulary, checked by `rules.vocabulary`
FIX_KEYS = ("applicability", "title", "when", "edits", "builtin", "introduced_in", "compat_macro")


class RuleError(Exception):
    """Invalid rule file; str() is one line naming the file and key."""


class TemplateError(Exception):
    """A rule's message or edit template that the sandbox refuses (here, below both `templates` and
    `jinja_sandbox`, so that the light front and the jinja2 side share it without importing each other)."""


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
    # the release whose headers announce a future deprecation ("will be deprecated in a future CUDA release"):
    # such a rule applies only when --target-cuda reaches that release (scan/engine.py in_window)
    announced_in: str | None = None
    # which of nvcc's passes the removal breaks: "device" when the host pass still compiles the code (the
    # intrinsic is declared there, ptxas alone rejects the instruction), so code every device pass leaves out is
    # not reported (scan/engine.py, match/migrations/passes.dead_for_target); None: any pass
    breaks: str | None = None
    where: dict[str, Any] | None = None
    fix: dict[str, Any] | None = None
    cost: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    docs: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    catalog: list[str] = field(default_factory=list)
    # a template naming the symbol a finding belongs to: the findings of one (family, symbol) are fixed in every
    # file of a run or in none (fix/consistency.py)
    consistency: str | None = None

    @property
    def kind(self) -> str:
        """The matcher kind (`call`, `builtin`, ...): the one key of `match` (see `match/kinds.py`)."""
        return next(iter(self.match))

    @property
    def spec(self) -> Any:
        return self.match[self.kind]

    @property
    def generated(self) -> bool:
        """Written by `scripts/gen_catalog_rules.py` from the API change catalog (`tags: [generated]`)."""
        return "generated" in self.tags

    @property
    def fix_applicability(self) -> str:
        return (self.fix or {}).get("applicability", "manual")


def _fail(path: Path, key: str, why: str) -> RuleError:
    return RuleError(f"{path}: {key}: {why}")


def validate(doc: Any, path: Path) -> Rule:
    if not isinstance(doc, dict):
        raise _fail(path, "<root>", "a rule file must be a YAML mapping")
    for k in doc:
        if k not in TOP_KEYS:
            raise _fail(path, str(k), f"unknown key {str(k)[:80]!r}{did_you_mean(str(k), list(TOP_KEYS))} (allowed: {', '.join(sorted(TOP_KEYS))})")
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
    for k in ("deprecated_in", "removed_in", "announced_in"):
        if doc.get(k) is not None:
            try:
                parse_version(doc[k])
            except ValueError:
                raise _fail(path, k, f"must be a version like 13.0 (quote it in YAML), got {doc[k]!r}") from None
            doc[k] = str(doc[k])
    match = doc["match"]
    if not isinstance(match, dict):
        raise _fail(path, "match", "must be a mapping")
    if len(match) != 1:  # which kinds exist, and their specs, are checked by rules.vocabulary
        raise _fail(path, "match", f"needs exactly one matcher kind, got {len(match)}")
    refs = doc["references"]
    if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
        raise _fail(path, "references", "must be a non-empty list of strings (where the fact comes from)")
    fix = doc.get("fix")
    if fix is not None:
        if not isinstance(fix, dict):
            raise _fail(path, "fix", "must be a mapping")
        for k in fix:
            if k not in FIX_KEYS:
                raise _fail(path, f"fix.{k}", f"unknown key {str(k)[:80]!r}{did_you_mean(str(k), list(FIX_KEYS))} (allowed: {', '.join(FIX_KEYS)})")
        app = fix.get("applicability")
        if app not in ("safe", "unsafe", "display-only", "manual"):
            raise _fail(path, "fix.applicability", "must be safe, unsafe, display-only or manual")
        edits = fix.get("edits", [])
        if not isinstance(edits, list):
            raise _fail(path, "fix.edits", "must be a list")
        if app != "manual" and not edits and not fix.get("builtin"):
            raise _fail(path, "fix.edits", "an automatic fix needs edits")
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
    for k in ("options", "data", "docs"):
        if k in doc and not isinstance(doc[k], dict):
            raise _fail(path, k, "must be a mapping")
    if not path.stem.startswith(rid):
        raise _fail(path, "id", f"file name must start with the rule id {rid}")
    if doc.get("breaks") not in (None, "device"):
        raise _fail(path, "breaks", f"must be device (the removal breaks only nvcc's device passes), got {doc['breaks']!r}")
    return Rule(
        id=rid, name=doc["name"], family=doc["family"], summary=doc["summary"].strip(),
        message=doc["message"].strip(), severity=doc["severity"], match=match, references=refs, path=path,
        status=status, library=doc.get("library"), deprecated_in=doc.get("deprecated_in"),
        removed_in=doc.get("removed_in"), announced_in=doc.get("announced_in"), breaks=doc.get("breaks"), where=doc.get("where"), fix=fix, cost=cost,
        options=doc.get("options") or {}, data=doc.get("data") or {}, docs=doc.get("docs") or {},
        tags=doc.get("tags") or [], catalog=doc.get("catalog") or [], consistency=_consistency(doc, path),
    )


def _consistency(doc: dict[str, Any], path: Path) -> str | None:
    spec = doc.get("consistency")
    if spec is not None and (not isinstance(spec, str) or not spec.strip()):
        raise _fail(path, "consistency", "must be a template naming the symbol (e.g. \"{{ name }}\")")
    return spec
