"""What changed between every two consecutive CUDA releases with wheels (data/api_releases.json.gz).

Why: the single-pair inventory (data/api_inventory.json, 12.9 -> 13.0, with the library wheels) cannot tell a
project moving from 11.8 to 12.4, or from 13.0 to 13.5, what changed on the way. scripts/build_release_inventory.py
reads the runtime, driver and NVRTC headers of every release from 11.7 to 13.5 and records each declaration a
release deprecated, removed, re-prototyped or announced for deprecation ("will be deprecated in a future CUDA
release", a doc comment, not an attribute). This module reads that file; `uncovered` is what
tests/test_release_inventory.py fails on: an entry that no rule reports and no reviewed exclusion
(data/api_releases_exclusions.yaml) explains.
"""

from __future__ import annotations

import gzip
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: a scan, and the default target on every run, read `versions()` without YAML
    from .inventory import Exclusion


DATA = Path(__file__).resolve().parent.parent / "data"
RELEASES = DATA / "api_releases.json.gz"
EXCLUSIONS = DATA / "api_releases_exclusions.yaml"


@lru_cache(maxsize=2)
def load(path: Path = RELEASES) -> dict:
    """The decompressed document (releases, counts, entries); read once per process."""
    return json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))


def versions(doc: dict | None = None) -> list[tuple[int, int]]:
    """The releases the file covers, oldest first: (11, 7) ... (13, 5)."""
    rels = _release_list(RELEASES) if doc is None else doc["releases"]
    return [(int(a), int(b)) for a, b in (r["version"].split(".") for r in rels)]


_RELEASE_LIST = re.compile(r'"releases": (\[[^\]]*\])')


@lru_cache(maxsize=2)
def _release_list(path: Path) -> list[dict]:
    """The file's `releases`, read from the start of the stream without parsing its entries: every run asks for
    the default target, and the whole document (3.6 MB of JSON with the libraries of every release) takes
    ~60 ms to parse against ~1 ms for this. scripts/build_release_inventory.py writes `releases` second, a list
    of flat objects of strings (no `]` inside); any other shape falls back to the whole document."""
    with gzip.open(path, "rb") as f:
        head = f.read(16384).decode("utf-8", "replace")
    m = _RELEASE_LIST.search(head)
    if m is not None:
        try:
            rels = json.loads(m.group(1))
        except ValueError:
            rels = None
        if isinstance(rels, list) and all(isinstance(r, dict) and "version" in r for r in rels):
            return rels
    return list(load(path)["releases"])


def entry_key(entry: dict) -> str:
    """release:library:name, the key of an exclusion (one name may change in several releases)."""
    return f"{entry['release']}:{entry['library']}:{entry['name']}"


def exclusions(path: Path = EXCLUSIONS) -> dict[str, Exclusion]:
    from .inventory import load_exclusions

    return load_exclusions(path)


def uncovered(doc: dict, reported: set[str], excluded: dict[str, Exclusion]) -> list[str]:
    """Entries (and the alias macros naming them) that no rule reports and no exclusion explains.

    Three kinds need neither, by what the headers say: a removal that a later release declares again
    (`restored`: code targeting that release compiles), a prototype change that every old call still compiles
    against (`compatible`: only by-value integer parameters changed type, NPP 12.4's `int nLength` -> `size_t`),
    and a field of a type the same release removed as a whole (the type's own entry is the finding, where the
    variable is declared), when that type is covered."""
    def covered(e: dict) -> bool:
        if entry_key(e) in excluded or e.get("restored") or e.get("compatible"):
            return True
        return all(n in reported for n in [e["name"], *e.get("aliases", [])])

    removed_types = {(e["release"], e["library"], e["name"]): e for e in doc["entries"]
                     if e["status"] == "removed" and e["kind"] == "type"}
    out = []
    for e in doc["entries"]:
        owner = removed_types.get((e["release"], e["library"], e["name"].rpartition("::")[0]))
        if e["kind"] == "field" and owner is not None and covered(owner):
            continue
        if not covered(e):
            out.append(f"{entry_key(e)} ({e['status']}, {e.get('header') or e.get('old_header')})")
    return out


def catalog_rows(doc: dict, known: set[str], excluded: dict[str, Exclusion]) -> list[dict]:
    """Catalog rows (scripts/gen_catalog_rules.py turns them into generated rules) for the math-library
    entries (cuBLAS ... nvJitLink: not `doc["libraries"]`, the runtime's, which hand-written rules and reviewed
    exclusions cover) that no CSV row or rule reports (`known`), with the release that made the change as the
    row's version: removed -> removed_in, deprecated -> deprecated_in, a prototype whose old argument count no
    longer fits -> a rule for calls with that count. The row's `source` names the header:line of the release
    before and the wheels of both (one part: the generator quotes a row's first `;`-separated source), which each
    finding quotes. A prototype change that old calls cannot be told from by their count gets no row (a
    hand-written rule or a reviewed exclusion covers it), nor does a field of a type the same release removed, nor
    a removed whole header (an include rule is hand-written: CM582's NVTX 2 headers)."""
    from .inventory import KINDS

    wheels = doc.get("library_wheels", {})
    seen = set(known)
    rows: list[dict] = []
    removed_types = {(e["release"], e["library"], e["name"]) for e in doc["entries"]
                     if e["status"] == "removed" and e["kind"] == "type"}
    for e in doc["entries"]:
        if (e["library"] in doc["libraries"] or e["status"] == "announced" or e["kind"] == "header" or e["name"] in seen
                or entry_key(e) in excluded or e.get("restored") or e.get("compatible")):
            continue
        if e["kind"] == "field" and (e["release"], e["library"], e["name"].rpartition("::")[0]) in removed_types:
            continue  # the type's own row (or rule) reports the variable's declaration
        rel, prev, status = e["release"], e["previous"], e["status"]
        new_wheel = wheels.get(rel, {}).get(e["library"], "")
        old_wheel = wheels.get(prev, {}).get(e["library"], "")
        message, repl = e.get("message", ""), e.get("replacement", "")
        row = {"api": e["name"], "kind": KINDS[e["kind"]], "library": e["library"], "deprecated_in": "",
               "removed_in": "", "replacement": "", "fix_kind": "manual", "notes": "", "source": "",
               "origin": "releases"}
        if status in ("deprecated", "unavailable"):
            row["deprecated_in"] = rel
            if status == "unavailable":
                row["removed_in"] = rel
            row["source"] = (f"CUDA {rel} {e['header']} of {new_wheel}"
                             + (f' (deprecated: "{message}")' if message else " (deprecated)")
                             + f", not deprecated at CUDA {prev} {e['old_header']} of {old_wheel}")
        elif status == "removed":
            row["removed_in"] = rel
            row["source"] = (f"CUDA {prev} {e['old_header']} of {old_wheel}, "
                             f"not declared by the CUDA {rel} headers of {new_wheel}")
        elif status == "signature":
            old, new, lo = e["old_args"], e["new_args"], e["new_min_args"]
            if lo <= old <= new:
                continue
            sig = e["new_signature"]
            row.update(kind="signature_change", removed_in=rel, where={"argc": old},
                       replacement=f"{e['name']}{sig[sig.index('('):]}",
                       source=f"CUDA {rel} {e['header']} of {new_wheel}, was CUDA {prev} {e['old_header']} of {old_wheel}",
                       notes=(f"the CUDA {prev} prototype {e['old_signature']} took {old} arguments; "
                              f"CUDA {rel} takes {new}"))
            rows.append(row)
            seen.add(e["name"])
            continue
        else:
            continue
        if repl:
            row["replacement"] = f'{repl} (the header\'s message: "{message}")' if message else repl
        elif message:
            row["notes"] = f'the header\'s message: "{message}"'
        else:
            row["notes"] = "the header names no replacement"
        rows.append(row)
        seen.add(e["name"])
        for alias in e.get("aliases", []):
            if alias not in seen:
                rows.append(dict(row, api=alias, notes=f"{row['notes']} (the header's alias macro of {e['name']})"))
                seen.add(alias)
    return rows


def earlier_removals(doc: dict, rows: list[dict]) -> list[str]:
    """Correct, in place, the catalog rows (CSV) of a math library whose `removed_in` is later than the release
    whose headers removed the name (cuFFT: the catalog says 13.0 for cufftBox3d, removed by CUDA 12.1's cuFFT
    11.0.2.54, and cufftXtSetDistribution, removed by 12.4's 11.2.1.3): the finding must name the release that
    made the change. The row's `notes` keep what the catalog said and cite the headers. Returns `library:api`
    of the rows changed."""
    wheels = doc.get("library_wheels", {})
    first: dict[tuple[str, str], dict] = {}
    for e in doc["entries"]:
        if e["status"] == "removed" and e["library"] not in doc["libraries"] and not e.get("restored"):
            first.setdefault((e["library"], e["name"]), e)
    changed = []
    for r in rows:
        e = first.get((r["library"], r["api"]))
        was = r["removed_in"].strip()
        if e is None or not re.fullmatch(r"\d+\.\d+", was):
            continue
        if tuple(map(int, e["release"].split("."))) >= tuple(map(int, was.split("."))):
            continue
        r["removed_in"] = e["release"]
        note = (f"removed in CUDA {e['release']}, not {was} as the catalog had it: declared at {e['old_header']} of "
                f"{wheels.get(e['previous'], {}).get(e['library'], e.get('source', ''))} (CUDA {e['previous']}), not by "
                f"{wheels.get(e['release'], {}).get(e['library'], '')} (CUDA {e['release']})")
        r["notes"] = f"{r['notes']}; {note}" if r["notes"].strip() else note
        changed.append(f"{r['library']}:{r['api']}")
    return changed
