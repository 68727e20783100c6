"""Baselines: adopt the tool on a large codebase by reporting only new findings.

A baseline entry records, for one finding, its rule, its file (relative to the
baseline file's directory, so the scan may run from any directory) and a key
made of the rule and the whitespace-normalized text the finding matched. Lines
shifting above a finding, or code reformatting inside it, do not change the
key. Entries are counted, not positional: if a file held two identical
violations when the baseline was written and holds three now, one is new.

Entries also carry the finding's fingerprint (which includes the path as it was
displayed); baselines without `key` (version 1) are matched on it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections import Counter
from pathlib import Path

from ..findings.model import Finding
from ..core.textsafe import one_line, printable

VERSION = 2


class BaselineError(Exception):
    pass


def _rel(path: str, root: Path) -> str:
    try:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    except ValueError:  # another drive on Windows
        rel = os.path.abspath(path)
    return rel.replace(os.sep, "/")


class _Texts:
    """The matched text of findings, read once per file."""

    def __init__(self, sources: dict[str, bytes] | None = None):
        self.cache: dict[str, bytes | None] = dict(sources or {})

    def key(self, f: Finding) -> str | None:
        if f.path not in self.cache:
            try:
                self.cache[f.path] = Path(f.path).read_bytes()
            except OSError:
                self.cache[f.path] = None
        data = self.cache[f.path]
        if data is None or f.end_byte > len(data):
            return None
        norm = b" ".join(data[f.start_byte : f.end_byte].split())
        return hashlib.sha256(f.rule_id.encode() + b"\0" + norm).hexdigest()[:32]


def configured(config_path: Path | None, value: str) -> Path:
    """The configuration's `baseline` key as a path: relative to the configuration file's directory (so every
    hook and CI entry need not repeat `--baseline FILE`, and it means the same file from any directory)."""
    base = config_path.parent if config_path is not None else Path(".")
    return base / value


def entries(findings: list[Finding], root: Path, sources: dict[str, bytes] | None = None) -> list[dict]:
    texts = _Texts(sources)
    out = []
    for f in findings:
        d = {"rule": f.rule_id, "path": _rel(f.path, root), "line": f.line, "fingerprint": f.fingerprint}
        k = texts.key(f)
        if k:
            d["key"] = k
        out.append(d)
    return sorted(out, key=lambda d: (d["path"], d["line"], d["rule"], d.get("key", "")))


def write_baseline(path: Path, findings: list[Finding], sources: dict[str, bytes] | None = None) -> None:
    doc = {"version": VERSION, "tool": "cudamigrate", "findings": entries(findings, path.parent, sources)}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _read_doc(path: Path) -> dict:
    """The baseline document; a FIFO or device is refused (reading it would block or never end)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise BaselineError(f"{printable(str(path))}: not a regular file")
            doc = json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise BaselineError(f"{printable(str(path))}: not a cudamigrate baseline ({one_line(str(exc))})") from None
    return doc


def load_baseline(path: Path) -> tuple[Counter, Counter]:
    """(counts by (relative path, key), counts by (displayed path, fingerprint)) of the baseline's entries."""
    doc = _read_doc(path)
    try:
        if not isinstance(doc, dict) or doc.get("tool", "cudamigrate") != "cudamigrate":
            raise ValueError("not written by cudamigrate")
        if int(doc.get("version", 1)) > VERSION:
            raise ValueError(f"version {doc['version']} is newer than this cudamigrate understands ({VERSION})")
        by_key: Counter = Counter()
        by_fp: Counter = Counter()
        for d in doc["findings"]:
            if d.get("key"):
                by_key[(d["path"], d["key"])] += 1
            else:
                by_fp[(d["path"], d["fingerprint"].split("-")[0])] += 1
        return by_key, by_fp
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BaselineError(f"{printable(str(path))}: not a cudamigrate baseline ({one_line(str(exc))})") from None


def foreign_warning(path: Path, findings: list[Finding]) -> str | None:
    """A warning when the baseline names files but none of today's findings is in any of them: most likely
    a baseline written for another tree (or from another directory layout), which would silently report
    every finding as new."""
    doc = _read_doc(path)
    try:
        base_paths = {str(d["path"]) for d in doc["findings"]}
    except (KeyError, TypeError):
        return None
    if not base_paths or not findings:
        return None
    root = path.parent
    now = {_rel(f.path, root) for f in findings} | {f.path for f in findings}
    if now & base_paths:
        return None
    sample = sorted(base_paths)[0]
    return (f"{printable(str(path))} shares no file with this scan (it names {len(base_paths)} file(s), e.g. "
            f"{printable(sample)}, relative to {printable(str(root))}): it was probably written for another tree, "
            "so every finding is reported as new")


def filter_new(path: Path, findings: list[Finding], sources: dict[str, bytes] | None = None) -> list[Finding]:
    """The findings the baseline at `path` does not account for."""
    by_key, by_fp = load_baseline(path)
    texts = _Texts(sources)
    root = path.parent
    out = []
    for f in findings:
        k = texts.key(f) if by_key else None
        kk = (_rel(f.path, root), k)
        if k is not None and by_key[kk] > 0:
            by_key[kk] -= 1
            continue
        fk = (f.path, f.fingerprint.split("-")[0])
        if by_fp[fk] > 0:
            by_fp[fk] -= 1
            continue
        out.append(f)
    return out
