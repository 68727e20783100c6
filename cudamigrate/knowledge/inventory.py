"""The header-generated API inventory (data/api_inventory.json) as catalog rows, and what covers each entry.

Why: the hand-made catalog (data/cuda_api_changes.csv) misses whole libraries; the inventory, written by
scripts/build_api_inventory.py from the CUDA 13.0 toolkit and library-wheel headers (and the last 12.x
wheels), lists every declaration the headers mark deprecated and every one 13.0 removed or changed.
`inventory_rows` turns the entries that nothing else covers into rows of the catalog's shape, so that
scripts/gen_catalog_rules.py generates their rules the same way as the CSV's; `uncovered` is what
tests/test_api_inventory.py fails on: an entry with neither a rule nor a reviewed exclusion
(data/api_inventory_exclusions.yaml, one reason per entry).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

DATA = Path(__file__).resolve().parent.parent / "data"
INVENTORY = DATA / "api_inventory.json"
EXCLUSIONS = DATA / "api_inventory_exclusions.yaml"

# the inventory's kinds -> the catalog's `kind` column
KINDS = {"function": "function", "type": "type", "enumerator": "enum", "macro": "macro", "field": "struct_field",
         "variable": "enum"}
# the last 12.x release the WHEELS_12 of scripts/build_api_inventory.py belong to (CUDA 12.9 update 1)
LAST_12 = "12.9"

# hand-written rules whose builtin matcher reads a name list instead of listing names in the YAML
BUILTIN_NAME_LISTS = {"npp_non_ctx": DATA / "npp_removed_non_ctx.txt",
                      "npp_size_t_out_param": DATA / "npp_size_t_out_params.txt"}


@dataclass(frozen=True)
class Exclusion:
    """A reviewed decision not to report an inventory entry."""
    key: str  # library:name
    reason: str


def load_inventory(path: Path = INVENTORY) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def load_exclusions(path: Path = EXCLUSIONS) -> dict[str, Exclusion]:
    """library:name -> Exclusion; an entry without a reason is an error (the file is reviewed data)."""
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    out: dict[str, Exclusion] = {}
    for item in doc:
        key, reason = str(item.get("key", "")), str(item.get("reason", "")).strip()
        if not re.fullmatch(r"[\w.]+:[\w:]+", key) or not reason:
            raise ValueError(f"{path.name}: every exclusion needs `key: library:name` and a `reason` ({item!r})")
        if key in out:
            raise ValueError(f"{path.name}: {key} is listed twice")
        out[key] = Exclusion(key, reason)
    return out


def entry_key(entry: dict) -> str:
    return f"{entry['library']}:{entry['name']}"


def entry_keys(entry: dict) -> list[str]:
    """The entry's key and those of the alias macros that name it (the generator may give each a row)."""
    return [entry_key(entry)] + [f"{entry['library']}:{a}" for a in entry.get("aliases", [])]


def _wheel_13(doc: dict, library: str) -> str:
    return doc["sources"]["wheels_13"].get(library, "")


def _where_13(doc: dict, entry: dict, header: str) -> str:
    """The 13.0 header as the catalog's `source` column spells it (gen_catalog_rules.cite reads it)."""
    wheel = _wheel_13(doc, entry["library"])
    return f"{wheel} nvidia/cu13/include/{header}" if wheel else f"cuda-13.0 include/{header}"


def _old_where(doc: dict, entry: dict) -> str:
    return f"{entry['old_header']} in {doc['sources']['wheels_12'].get(entry['library']) or doc['sources']['wheels_12']['cudart']}"


def header_messages(doc: dict) -> dict[tuple[str, str], str]:
    """(library, header file) -> the one message its deprecated declarations give, where they agree on one.

    cusolverSp.h marks some declarations CUSOLVER_DEPRECATED(cuDSS) ("please use cuDSS instead") and others
    CUSOLVER_DEPRECATED_ (no message); the latter's findings quote what the same header says for the former."""
    seen: dict[tuple[str, str], set[str]] = {}
    for e in doc["entries"]:
        if e["status"] == "deprecated" and e.get("message"):
            seen.setdefault((e["library"], e["header"].split(":")[0]), set()).add(e["message"])
    return {k: next(iter(v)) for k, v in seen.items() if len(v) == 1}


def catalog_row(doc: dict, entry: dict, same_header: str = "") -> dict | None:
    """One inventory entry as a catalog row (the CSV's columns, plus `origin` and, for changed prototypes, `where`).

    None for an entry whose old calls cannot be told from new ones by their argument count (a parameter type
    changed): those need a hand-written rule or a reviewed exclusion."""
    status = entry["status"]
    message = entry.get("message", "")
    repl = entry.get("replacement", "")
    row = {"api": entry["name"], "kind": KINDS[entry["kind"]], "library": entry["library"], "deprecated_in": "",
           "removed_in": "", "replacement": "", "fix_kind": "manual", "notes": "", "source": "", "origin": "inventory"}
    already = f"CUDA {LAST_12} at the latest (the last 12.x header, {_old_where(doc, entry)}, already marks it deprecated)"
    if status in ("deprecated", "unavailable"):
        row["deprecated_in"] = already if entry.get("deprecated_in_12") else "13.0"
        if status == "unavailable":
            row["removed_in"] = "13.0"
        row["source"] = _where_13(doc, entry, entry["header"]) + (f' (deprecated: "{message}")' if message else " (deprecated)")
    elif status == "removed":
        row["removed_in"] = "13.0"
        if entry.get("deprecated_in_12"):
            row["deprecated_in"] = already
        wheel = _wheel_13(doc, entry["library"])
        row["source"] = (f"absent: {wheel} headers (declared at {_old_where(doc, entry)})" if wheel else
                         f"absent: cuda-13.0 include/ (declared at {_old_where(doc, entry)})")
    elif status == "signature":
        old, new, lo, hi = entry["old_args"], entry["new_args"], entry["new_min_args"], entry["new_args"]
        if lo <= old <= hi:
            return None
        row["kind"] = "signature_change"
        row["removed_in"] = "13.0"
        row["where"] = {"argc": old}
        row["replacement"] = f"{entry['name']}{entry['new_signature'][entry['new_signature'].index('('):]}"
        row["source"] = _where_13(doc, entry, entry["header"])
        row["notes"] = (f"the 12.x prototype {entry['old_signature']} ({_old_where(doc, entry)}) took {old} arguments; "
                        f"13.0 takes {new}")
        return row
    if repl:
        row["replacement"] = (f'{repl} (the header\'s message: "{message}")' if message else repl)
    elif message:
        row["notes"] = f'the header\'s message: "{message}"'
    elif same_header:
        row["notes"] = (f"the header gives no message for it, but its other deprecated declarations of "
                        f'{entry["header"].split(":")[0]} say "{same_header}"')
    else:
        row["notes"] = "the header names no replacement"
    return row


def rule_names(rules_dir: Path, skip_dir: Path | None = None) -> set[str]:
    """Every API name a rule under `rules_dir` reports: its `catalog:` keys, its matcher's names and fields,
    and the name lists builtin matchers read. `skip_dir` (the generated catalog) is left out."""
    names: set[str] = set()
    for path in sorted(rules_dir.rglob("CM*.yaml")):
        if skip_dir is not None and skip_dir.resolve() in path.resolve().parents:
            continue
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict):
            continue
        for key in doc.get("catalog") or []:
            names.add(str(key).split(":", 1)[1] if ":" in str(key) else str(key))
        match = doc.get("match") or {}
        for spec in match.values() if isinstance(match, dict) else []:
            if not isinstance(spec, dict):
                continue
            got = spec.get("names")
            if isinstance(got, dict):
                names.update(str(n) for n in got)
            elif isinstance(got, list):
                names.update(str(n) for n in got)
            for f in spec.get("fields") or []:
                for t in spec.get("receiver_types") or []:
                    names.add(f"{t}::{f}")
            lst = BUILTIN_NAME_LISTS.get(str(spec.get("name", "")))
            if lst is not None:
                names.update(line.split()[0] for line in lst.read_text(encoding="utf-8").splitlines()
                             if line.strip() and not line.startswith("#"))
    return names


def inventory_rows(doc: dict, known: Iterable[str], exclusions: dict[str, Exclusion]) -> list[dict]:
    """Catalog rows for the entries that no CSV row or hand-written rule (`known` names) already reports and
    that are not excluded, in the inventory's (sorted) order."""
    seen = set(known)
    rows = []
    said = header_messages(doc)
    for e in doc["entries"]:
        if e["name"] in seen or entry_key(e) in exclusions:
            continue
        row = catalog_row(doc, e, said.get((e["library"], e.get("header", "").split(":")[0]), ""))
        if row is None:
            continue
        rows.append(row)
        seen.add(e["name"])
        for alias in e.get("aliases", []):  # `#define cuTexRefSetAddress2D cuTexRefSetAddress2D_v3`: what code writes
            if alias not in seen:
                rows.append(dict(row, api=alias, notes=f"{row['notes']} (the header's alias macro of {e['name']})".strip()))
                seen.add(alias)
    return rows


def uncovered(doc: dict, reported: set[str], exclusions: dict[str, Exclusion]) -> list[str]:
    """Inventory entries that no rule reports (`reported`: every rule's names) and no exclusion explains."""
    return [f"{e['library']}:{n} ({e['status']}, {e.get('header') or e.get('old_header')})" for e in doc["entries"]
            if entry_key(e) not in exclusions for n in [e["name"], *e.get("aliases", [])] if n not in reported]
