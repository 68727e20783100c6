"""A whole scan's report, replayed while nothing it was made from has changed.

With every file's result cached (cudamigrate/pipeline/result_cache.py), re-scanning an unchanged tree still cost loading the
rules, building the engine and rebuilding every stored finding from its pickle (~15 us a finding: 0.2 s for a
tree with 11,000 findings), then rendering the report again. A replay stores the rendered report itself (what
`scan` printed on stdout, its notes on stderr, whether it had findings), under a key made of everything the
report depends on:

* the run digest of the result cache (tool and library code, rule files, options, toolkit: `cache.run_digest`);
* the run's files, by absolute and displayed path, in order (what discovery found, so excludes and
  `.gitignore` changes count);
* the presentation: format, sort order, `--statistics`.

and it is used only when, besides, every file's bytes hash as they did (a file whose stat signature is
unchanged and was not changed within `core.stamps.RACY_NS` of being read is taken as unchanged, as git does; any
other is read and hashed again) and every dependency set the files' results rest on (headers found outside the
run, directory listings) is still valid. That is exactly the condition under which each file's cached result
would be used, so a replay prints what the full pipeline would print: tests/test_cache_replay.py checks it
byte for byte against `--no-cache` after edits of a file, a header, a rule and an option.

A replay is stored only for a run with no errors at all (unreadable files, walk errors, rule errors, internal
errors), without semantic mode, baseline, `--diff-base`, stdin or `--timings`, whose every file's result was
cached or stored: anything else takes the full path every time.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from typing import Any

from . import result_cache as cache


@dataclass
class Replay:
    files: list[tuple[str, tuple[int, ...] | None, str]]  # (absolute path, stat signature or None, content hash)
    depsets: list[str]
    stdout: str
    notes: list[str]  # stderr lines, in order
    findings: bool  # any finding: exit 1 unless --exit-zero

    def encode(self) -> bytes:
        # json.dumps escapes every non-ASCII character (lone surrogates of undecodable names too)
        return zlib.compress(json.dumps([[[p, sig, h] for p, sig, h in self.files], self.depsets, self.stdout,
                                         self.notes, self.findings]).encode("ascii"), 1)

    @classmethod
    def decode(cls, body: bytes) -> "Replay":
        files, depsets, stdout, notes, findings = json.loads(zlib.decompress(body).decode("ascii"))
        return cls([(p, None if sig is None else tuple(sig), h) for p, sig, h in files], list(depsets), str(stdout),
                   [str(n) for n in notes], bool(findings))


def replay_key(run: str, items: list[tuple[str, str]], presentation: dict[str, Any]) -> str:
    return cache.digest_of("replay", run, json.dumps(items), json.dumps(presentation, sort_keys=True))


def _file_unchanged(path: str, sig: tuple[int, ...] | None, content: str, max_bytes: int) -> bool:
    if sig is not None and cache.stat_of(path) == sig:
        return True
    data, _ = cache.read_limited(path, max_bytes)
    return data is not None and cache.content_hash(data) == content


def valid(r: Replay, db: cache.ResultCache, items: list[tuple[str, str]], max_bytes: int) -> bool:
    """Whether every file and every dependency set of `r` is as it was when it was stored."""
    if [f[0] for f in r.files] != [os.path.abspath(p) for p, _ in items]:
        return False
    if not all(_file_unchanged(p, sig, h, max_bytes) for p, sig, h in r.files):
        return False
    for ident in r.depsets:
        if not ident:
            continue
        ds = db.depset(ident)
        if ds is None or not ds.valid():
            return False
    return True


def lookup(db: cache.ResultCache, key: str, items: list[tuple[str, str]], max_bytes: int) -> Replay | None:
    body = db.replay_get(key)
    if body is None:
        return None
    try:
        r = Replay.decode(body)
    except (ValueError, TypeError, zlib.error):
        return None  # an entry that does not read back is a miss
    return r if valid(r, db, items, max_bytes) else None


def store(db: cache.ResultCache, key: str, r: Replay) -> None:
    db.replay_put(key, r.encode())
    db.flush()
