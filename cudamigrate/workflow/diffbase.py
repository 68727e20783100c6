"""`scan --diff-base REF`: only findings on lines changed since a git revision.

Next to the file baseline (`baseline.py`, which remembers findings), this answers "did this branch add
legacy CUDA?" without recording anything: a line counts as changed when `git diff -U0 REF` adds or
modifies it in the work tree (staged or not), and an untracked file (not ignored) counts as wholly changed.
A finding is kept when any of its lines is changed. Files outside the work tree have no history here and
are left out, like unchanged files.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_ESC = {b"a": 7, b"b": 8, b"t": 9, b"n": 10, b"v": 11, b"f": 12, b"r": 13, b'"': 34, b"\\": 92}


class DiffBaseError(Exception):
    """Not a git work tree, an unknown revision, or git itself failing: one line for the user."""


@dataclass
class ChangedLines:
    """Per real file path: the changed 1-based line numbers, or None when the whole file is new."""

    files: dict[str, set[int] | None] = field(default_factory=dict)

    def has_file(self, path: Path) -> bool:
        return os.path.realpath(path) in self.files

    def covers(self, path: Path, line: int, end_line: int) -> bool:
        key = os.path.realpath(path)
        if key not in self.files:
            return False
        lines = self.files[key]
        return lines is None or any(n in lines for n in range(line, max(line, end_line) + 1))


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-c", "core.quotepath=false", *args], cwd=cwd, capture_output=True,
                              timeout=300)
    except FileNotFoundError:
        raise DiffBaseError("--diff-base needs git, which is not on PATH") from None


def _unquote(name: bytes) -> bytes:
    """A path as git prints it: C-quoted ("a\\tb", octal escapes) when it holds unusual bytes."""
    if not (name.startswith(b'"') and name.endswith(b'"')):
        return name
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i : i + 1]
        if c == b"\\" and i + 1 < len(body):
            nxt = body[i + 1 : i + 2]
            if nxt.isdigit():
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out.append(_ESC.get(nxt, nxt[0]))
            i += 2
            continue
        out += c
        i += 1
    return bytes(out)


def parse_diff(diff: bytes) -> dict[bytes, set[int]]:
    """`git diff -U0` output -> {new path (relative to the top, bytes): added or modified line numbers}."""
    out: dict[bytes, set[int]] = {}
    current: bytes | None = None
    for line in diff.split(b"\n"):
        if line.startswith(b"+++ "):
            name = _unquote(line[4:].rstrip(b"\r"))
            current = None if name == b"/dev/null" else name[2:] if name.startswith(b"b/") else name
            if current is not None:
                out.setdefault(current, set())
        elif current is not None and line.startswith(b"@@"):
            m = HUNK.match(line)
            if m:
                start, count = int(m.group(1)), int(m.group(2) or 1)
                out[current].update(range(start, start + count))
    return out


def changed_lines(ref: str, where: Path) -> ChangedLines:
    """The lines changed since `ref` in the git work tree holding `where` (a scanned path)."""
    cwd = where if where.is_dir() else where.parent
    cwd = cwd if str(cwd) else Path(".")
    top = _git(["rev-parse", "--show-toplevel"], cwd)
    if top.returncode != 0:
        raise DiffBaseError(f"--diff-base {ref}: {cwd} is not inside a git work tree")
    root = Path(os.fsdecode(top.stdout.strip()))
    if ref.startswith("-") or _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], root).returncode != 0:
        raise DiffBaseError(f"--diff-base {ref}: not a commit in {root} (a branch, tag or sha, e.g. origin/main)")
    diff = _git(["diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules",
                 "--src-prefix=a/", "--dst-prefix=b/", ref, "--"], root)
    if diff.returncode != 0:
        raise DiffBaseError(f"--diff-base {ref}: git diff failed: {os.fsdecode(diff.stderr).strip()[:300]}")
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], root)
    if untracked.returncode != 0:
        raise DiffBaseError(f"--diff-base {ref}: git ls-files failed: {os.fsdecode(untracked.stderr).strip()[:300]}")
    res = ChangedLines()
    for rel, lines in parse_diff(diff.stdout).items():
        res.files[os.path.realpath(root / os.fsdecode(rel))] = lines
    for rel in filter(None, untracked.stdout.split(b"\0")):
        res.files[os.path.realpath(root / os.fsdecode(rel))] = None
    return res
