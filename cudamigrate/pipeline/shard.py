"""`scan --shard I/N`: one of N deterministic parts of a run's files, for a CI matrix over a monorepo.

Every shard must see the same files in the same order to agree on the split, so the split is a pure function
of each file's path (as given, relative to the scanned roots) and N: a stable hash (SHA-1 of the path text,
not Python's salted `hash`) modulo N. A hash, rather than slicing the sorted list, keeps a file in its shard
when other files are added or removed, so a shard's result cache stays warm across commits. Files are
spread evenly on average; the project index still sees every file (cli: `Prepared.project`), so project-wide
analyses give each shard the answers one run would. `cudamigrate merge` (cudamigrate/workflow/merge.py) joins the
shards' reports.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


class ShardError(ValueError):
    """`--shard` not of the form I/N with 1 <= I <= N."""


def parse_shard(text: str) -> tuple[int, int]:
    """`2/4` -> (2, 4); 1-based like a CI matrix's index + 1."""
    try:
        i, n = (int(x) for x in str(text).split("/"))
    except ValueError:
        raise ShardError(f"expected I/N (e.g. 2/4), got {text!r}") from None
    if n < 1 or not 1 <= i <= n:
        raise ShardError(f"expected 1 <= I <= N, got {text!r}")
    return i, n


def shard_of(path: Path, n: int) -> int:
    """The 1-based shard of a file: the same on every machine, every Python and every run."""
    key = os.fsencode(os.path.normpath(path))
    return int.from_bytes(hashlib.sha1(key).digest()[:8], "big") % n + 1


def shard_files(files: list[Path], i: int, n: int) -> list[Path]:
    """The files of shard i of n, in the run's order."""
    return [f for f in files if shard_of(f, n) == i]


def identity(i: int, n: int, displayed: list[str], config: str, root: str) -> dict[str, object]:
    """What a shard's report records so `merge` can tell a complete set from duplicates, gaps and mixtures:
    its index and count, a digest of the whole run's file set (the displayed paths of every file, sorted: every
    shard of one run sees the same set, another checkout or another path list does not), a digest of the
    configuration (`config`: options and rules), and the directory its paths are relative to."""
    files = hashlib.sha256("\n".join(sorted(displayed)).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return {"index": i, "count": n, "files": files, "config": config[:16], "root": root}
