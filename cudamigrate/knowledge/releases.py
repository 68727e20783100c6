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
    d = load() if doc is None else doc
    return [(int(a), int(b)) for a, b in (r["version"].split(".") for r in d["releases"])]


def entry_key(entry: dict) -> str:
    """release:library:name, the key of an exclusion (one name may change in several releases)."""
    return f"{entry['release']}:{entry['library']}:{entry['name']}"


def exclusions(path: Path = EXCLUSIONS) -> dict[str, Exclusion]:
    from .inventory import load_exclusions

    return load_exclusions(path)


def uncovered(doc: dict, reported: set[str], excluded: dict[str, Exclusion]) -> list[str]:
    """Entries (and the alias macros naming them) that no rule reports and no exclusion explains.

    Two kinds need neither, by what the headers say: a removal that a later release declares again
    (`restored`: code targeting that release compiles), and a field of a type the same release removed as a
    whole (the type's own entry is the finding, where the variable is declared), when that type is covered."""
    def covered(e: dict) -> bool:
        if entry_key(e) in excluded or e.get("restored"):
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
