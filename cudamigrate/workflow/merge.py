"""`cudamigrate merge`: the JSON or SARIF reports of `scan --shard I/N` runs joined into one report.

A CI matrix scans a monorepo in N jobs (cudamigrate/pipeline/shard.py); one last job merges their reports into the
JSON, SARIF or HTML report one run would have written, with the same totals: files scanned add up, findings
and errors are the union, and the summary is recomputed from them (never added up from the shards', so a
shard counted twice shows as duplicated findings rather than silently inflated totals).

The inputs become a `report.model.Run` again and are rendered by the ordinary renderers:

* from JSON, every field a finding's JSON carries comes back as it was (rule, place, message, snippet,
  cost, fix edits, context, fingerprint, related locations), so a merged JSON report equals a single run's; the byte offsets
  JSON does not carry are recomputed from line and column against the file on disk (as SARIF and HTML
  need them), and are 0 when the file cannot be read;
* from SARIF, what SARIF records (rule, region with byte offsets, message, fixes, applicability, ROI,
  impact, effort minutes, fingerprint, related locations); the cost's scores come from the effort class, and `context` is
  empty. Merge JSON reports when a JSON report must match a single run exactly.

Paths in the reports are relative to the directory each shard ran in, which a shard's report records: the
sources that SARIF regions and HTML code excerpts read are found there (when it exists on the merging
machine, else in the current directory), and the merged SARIF's `%SRCROOT%` is it. `check_set` refuses what
would merge wrong: duplicates, gaps, shards of different runs, a whole-run report among shards, reports of
another tool version.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ..findings.model import Cost, Edit, Finding, Fix, Related
from ..report.model import Run
from ..rules.schema import Rule

# effort classes' scores (README: Cost / ROI model): what a SARIF result does not record
EFFORT_SCORE = {"safe": 1.0, "unsafe": 2.0, "display-only": 4.0, "manual": 5.0}
_LEVEL_SEVERITY = {"error": "error", "warning": "warning", "note": "info", "none": "info"}


class MergeError(ValueError):
    """A report that is not cudamigrate JSON or SARIF, or shards that disagree (target CUDA version)."""


@dataclass
class Shard:
    """One input report, as findings and totals, and what it says of itself: the tool version that wrote it
    and, for a `scan --shard I/N` report, its identity (pipeline/shard.py: identity)."""

    findings: list[Finding]
    errors: list[str]
    files_scanned: int
    target: str
    rule_ids: set[str] = field(default_factory=set)
    version: str = ""
    identity: dict[str, Any] | None = None
    path: str = ""
    target_source: str = ""  # why the shard's target (reports before it was recorded: "")


def _target(text: str, where: str) -> tuple[int, int]:
    try:
        major, minor = (int(x) for x in str(text).split("."))
    except ValueError:
        raise MergeError(f"{where}: target CUDA version {text!r} is not MAJOR.MINOR") from None
    return major, minor


class Sources:
    """The reports' files read once from disk, relative to the directory the shards ran in (`root`, which
    their identity records) or else the current one."""

    def __init__(self, root: str | None = None) -> None:
        self.data: dict[str, bytes] = {}
        self.root = root

    def where(self, path: str) -> str:
        return os.path.join(self.root, path) if self.root else path

    def get(self, path: str) -> bytes:
        if path not in self.data:
            try:
                self.data[path] = Path(self.where(path)).read_bytes()
            except OSError:
                self.data[path] = b""
        return self.data[path]


def byte_offset(data: bytes, line: int, column: int) -> int:
    """The byte offset of a 1-based line and 1-based code-point column (SourceFile.position's inverse; a BOM
    on line 1 is not counted in columns)."""
    start = 0
    for _ in range(line - 1):
        nl = data.find(b"\n", start)
        if nl < 0:
            return len(data)
        start = nl + 1
    if line == 1 and data.startswith(b"\xef\xbb\xbf"):
        start += 3
    end = data.find(b"\n", start)
    text = data[start : len(data) if end < 0 else end].decode("utf-8", errors="replace")
    return start + len(text[: max(0, column - 1)].encode("utf-8"))


def finding_from_json(d: dict[str, Any], sources: Sources) -> Finding:
    """A finding of a JSON report, every field it carries restored."""
    data = sources.get(d["path"])
    start = byte_offset(data, d["line"], d["column"]) if data else 0
    end = byte_offset(data, d["end_line"], d["end_column"]) if data else 0
    c = d.get("cost")
    cost = Cost(c["impact"], c["impact_score"], c["effort"], c["effort_score"], c["effort_minutes"], c["roi"],
                list(c.get("factors") or []), c.get("measured")) if c else None
    fx = d.get("fix")
    fix = Fix(fx["applicability"], fx["title"], [Edit(e["start"], e["end"], e["text"]) for e in fx["edits"]]) if fx else None
    return Finding(rule_id=d["rule"], rule_name=d["name"], family=d["family"], severity=d["severity"], path=d["path"],
                   line=d["line"], column=d["column"], end_line=d["end_line"], end_column=d["end_column"],
                   start_byte=start, end_byte=max(start, end), message=d["message"], snippet=d["snippet"], fix=fix,
                   cost=cost, deprecated_in=d.get("deprecated_in"), removed_in=d.get("removed_in"),
                   context=dict(d.get("context") or {}), fingerprint=d.get("fingerprint") or "",
                   related=tuple(Related.from_dict(x) for x in d.get("related") or ()))


def _sarif_path(loc: dict[str, Any]) -> str:
    uri = loc.get("uri", "")
    if uri.startswith("file:"):
        return unquote(urlparse(uri).path)
    return unquote(uri)


def _fix_title(text: str, applicability: str) -> str:
    """The fix's title from a SARIF fix description (report/sarif.py appends its applicability)."""
    suffix = f" ({applicability} fix)"
    if text.endswith(suffix):
        return text[: -len(suffix)]
    return text.split(" (display-only suggestion:", 1)[0]


def finding_from_sarif(r: dict[str, Any], rules: list[dict[str, Any]]) -> Finding:
    """A SARIF result as a finding: what SARIF records (see the module's docstring)."""
    desc = rules[r["ruleIndex"]] if isinstance(r.get("ruleIndex"), int) and r["ruleIndex"] < len(rules) else {}
    props = desc.get("properties", {}) or {}
    phys = r["locations"][0]["physicalLocation"]
    reg = phys["region"]
    rp = r.get("properties", {}) or {}
    applicability = rp.get("applicability", "manual")
    fix = None
    for fx in r.get("fixes") or []:
        title = fx.get("description", {}).get("text", "")
        title = _fix_title(title, applicability)
        edits = [Edit(rep["deletedRegion"]["byteOffset"], rep["deletedRegion"]["byteOffset"]
                      + rep["deletedRegion"].get("byteLength", 0), rep.get("insertedContent", {}).get("text", ""))
                 for ch in fx.get("artifactChanges", []) for rep in ch.get("replacements", [])]
        fix = Fix(applicability, title, edits)
    cost = None
    if "roi" in rp:
        effort = {"display-only": "manual"}.get(applicability, applicability)
        score = EFFORT_SCORE.get(applicability, 5.0)
        cost = Cost(rp.get("impact", ""), round(rp["roi"] * score, 3), effort, score, rp.get("effort_minutes", 0.0), rp["roi"])
    start = reg.get("byteOffset", 0)
    return Finding(rule_id=r["ruleId"], rule_name=desc.get("name", r["ruleId"]), family=props.get("family", ""),
                   severity=_LEVEL_SEVERITY.get(r.get("level", "warning"), "warning"),
                   path=_sarif_path(phys["artifactLocation"]), line=reg["startLine"], column=reg["startColumn"],
                   end_line=reg.get("endLine", reg["startLine"]), end_column=reg.get("endColumn", reg["startColumn"]),
                   start_byte=start, end_byte=start + reg.get("byteLength", 0), message=r["message"]["text"],
                   snippet=phys.get("contextRegion", {}).get("snippet", {}).get("text", ""), fix=fix, cost=cost,
                   deprecated_in=props.get("deprecated_in"), removed_in=props.get("removed_in"),
                   fingerprint=(r.get("partialFingerprints") or {}).get("cudamigrate/v1", ""),
                   related=tuple(_related_from_sarif(x) for x in r.get("relatedLocations") or ()
                                 if (x.get("physicalLocation") or {}).get("region", {}).get("startLine")))


def _related_from_sarif(x: dict[str, Any]) -> Related:
    """A SARIF related location (report/sarif.py's `related_location`) as a finding's `Related`."""
    phys = x["physicalLocation"]
    reg = phys["region"]
    return Related(_sarif_path(phys.get("artifactLocation", {})), reg["startLine"], reg.get("startColumn", 1),
                   reg.get("endLine"), reg.get("endColumn"), (x.get("message") or {}).get("text", ""))


def _no_constant(name: str) -> Any:
    """json.loads's hook for NaN and Infinity, which no cudamigrate report holds (its writers refuse them)."""
    raise ValueError(f"{name} is not a number a report may hold")


def load_report(path: Path) -> Any:
    """A report file's JSON, or MergeError in one line: unreadable, not JSON, NaN/Infinity, nested too deeply."""
    where = str(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except OSError as exc:
        raise MergeError(f"{where}: cannot read: {exc.strerror or exc}") from None
    except RecursionError:
        raise MergeError(f"{where}: not a cudamigrate report: JSON nested too deeply") from None
    except ValueError as exc:  # (UnicodeDecodeError and JSONDecodeError are ValueErrors)
        raise MergeError(f"{where}: not JSON: {exc}") from None


def _identity(value: Any, where: str) -> dict[str, Any] | None:
    """A report's shard identity, checked for shape (None: a report of a whole run)."""
    if value is None:
        return None
    if not (isinstance(value, dict) and all(isinstance(value.get(k), int) and not isinstance(value.get(k), bool)
                                            for k in ("index", "count"))
            and all(isinstance(value.get(k), str) for k in ("files", "config", "root"))
            and 1 <= value["index"] <= value["count"]):
        raise MergeError(f"{where}: not a cudamigrate report: malformed `shard` record")
    return value


def read_shard(path: Path, sources: Sources) -> Shard:
    """One report, JSON or SARIF (told apart by content, not by name)."""
    where = str(path)
    doc = load_report(path)
    try:
        if isinstance(doc, dict) and doc.get("tool") == "cudamigrate":
            ident = _identity(doc.get("shard"), where)
            if ident is not None and sources.root is None and os.path.isdir(ident["root"]):
                sources.root = ident["root"]
            return Shard([finding_from_json(d, sources) for d in doc["findings"]], list(doc["errors"]),
                         int(doc["summary"]["files_scanned"]), str(doc["target_cuda"]), version=str(doc.get("version")),
                         identity=ident, path=where, target_source=str(doc.get("target_source") or ""))
        if isinstance(doc, dict) and isinstance(doc.get("runs"), list) and len(doc["runs"]) == 1:
            run = doc["runs"][0]
            driver = run["tool"]["driver"]
            if driver.get("name") != "cudamigrate":
                raise MergeError(f"{where}: a SARIF report of {driver.get('name')!r}, not of cudamigrate")
            rules = driver.get("rules", [])
            notes = [n["message"]["text"] for inv in run.get("invocations", [])
                     for n in inv.get("toolExecutionNotifications", [])]
            ident = _identity(run["properties"].get("shard"), where)
            if ident is not None and sources.root is None and os.path.isdir(ident["root"]):
                sources.root = ident["root"]
            return Shard([finding_from_sarif(r, rules) for r in run.get("results", [])], notes,
                         int(run["properties"]["files_scanned"]), str(run["properties"]["target_cuda"]),
                         {d["id"] for d in rules}, version=str(driver.get("version")), identity=ident, path=where,
                         target_source=str(run["properties"].get("target_source") or ""))
    except (KeyError, TypeError, IndexError, ValueError, AttributeError) as exc:
        raise MergeError(f"{where}: not a cudamigrate report ({type(exc).__name__}: {exc})") from None
    raise MergeError(f"{where}: neither a cudamigrate JSON report nor a SARIF report")


def check_set(shards: list[Shard]) -> None:
    """MergeError naming the reports when they are not one run's: another tool version than this one, a
    whole-run report beside shards or beside another report, shards of different runs (count, file set,
    configuration), the same shard twice, or missing shards."""
    from .. import __version__

    for s in shards:
        if s.version != __version__:
            raise MergeError(f"{s.path}: written by cudamigrate {s.version}, not by this version ({__version__}); "
                             "merge with the version that scanned")
    whole = [s for s in shards if s.identity is None]
    if whole and len(shards) > 1:
        raise MergeError(f"{whole[0].path} is the report of a whole run, not of a `--shard I/N` run: merging it "
                         f"with {len(shards) - 1} other report(s) would count its findings twice")
    if whole:
        return
    first = shards[0]
    for key, what in (("count", "a different shard count"), ("files", "a different file set"),
                      ("config", "a different configuration or rule set")):
        for s in shards[1:]:
            if s.identity[key] != first.identity[key]:  # type: ignore[index]
                raise MergeError(f"{s.path} and {first.path} are shards of different runs ({what}): merge the "
                                 "shards of one run")
    seen: dict[int, str] = {}
    for s in shards:
        i = s.identity["index"]  # type: ignore[index]
        if i in seen:
            raise MergeError(f"{s.path} and {seen[i]} are both shard {i}/{first.identity['count']}: "  # type: ignore[index]
                             "each shard once")
        seen[i] = s.path
    n = first.identity["count"]  # type: ignore[index]
    missing = [f"{i}/{n}" for i in range(1, n + 1) if i not in seen]
    if missing:
        raise MergeError(f"shard(s) {', '.join(missing)} missing: {len(seen)} of {n} shard reports given")


def merge(paths: list[Path], rules: list[Rule]) -> Run:
    """The shards' reports as one run. `rules`: the rule set the shards ran with (SARIF and HTML describe
    them); with SARIF inputs, only those the shards' SARIF described (plus any a finding names)."""
    sources = Sources()
    shards = [read_shard(p, sources) for p in paths]
    if not shards:
        raise MergeError("no report to merge")
    targets = {s.target for s in shards}
    if len(targets) > 1:
        raise MergeError(f"the reports were made for different CUDA targets ({', '.join(sorted(targets))})")
    check_set(shards)
    described = set().union(*(s.rule_ids for s in shards))
    found = {f.rule_id for s in shards for f in s.findings}
    if described:
        rules = [r for r in rules if r.id in described | found]
    findings = [f for s in shards for f in s.findings]
    return Run(findings=findings, errors=[e for s in shards for e in s.errors],
               files_scanned=sum(s.files_scanned for s in shards), rules=rules,
               target=_target(targets.pop(), str(paths[0])),
               sources={f.path: sources.get(f.path) for f in findings if os.path.exists(sources.where(f.path))},
               source_root=sources.root,
               target_source=shards[0].target_source if len({s.target_source for s in shards}) == 1 else "")


def merged_run(paths: list[Path], rule_dirs: list[Path]) -> Run:
    """`merge`'s run: the reports joined, described by the default selection of the rules in `rule_dirs` for
    the reports' target (a shard run with --select lists fewer rules in its SARIF; its findings are the same)."""
    from ..scan.selection import select_rules
    from ..core.options import Options
    from ..knowledge.load import load_rules

    rules = load_rules(rule_dirs).rules
    run = merge(paths, rules)
    used = {f.rule_id for f in run.findings}
    chosen = {r.id for r in select_rules(run.rules, Options(target=run.target))} | used
    run.rules = [r for r in run.rules if r.id in chosen]
    return run
