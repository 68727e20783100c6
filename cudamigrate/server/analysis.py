"""What the language server computes, without the protocol: the engine a document is scanned with (the
project's configuration, as the CLI resolves it), its findings, and the byte edits of each code action.

Engines are kept per configuration (file and its mtime, so an edited `.cudamigrate.toml` takes effect on the
next keystroke) and compile database (the one the document's directory finds, as `scan` would: one created
while the server runs, or another subproject's, decides the branches of the documents it compiles), so after
the first document only the scan itself runs: the compiled rules, the keyword
regexes and the warm-up are paid once, as in a CLI run. Only the newest engine of each configuration file is
kept, and at most `MAX_ENGINES` in all, so an editing session does not grow by an engine per saved edit.

Each engine scans with a project index (the project headers a document includes, read once) that is kept
across keystrokes while every file it read (a header, a `.cu` a document includes, the compile database) is
unchanged on disk: a CLI run's index never sees a file change, but an editing session saves headers, and a
kept index would go on answering from their old text (a texture reference's declaration, a statement macro, a
struct's members, the database's -D/-U flags: read/unit_defines.py). A changed or missing file, or more than
`MAX_INDEX_FILES` files read, starts a new index.
"""

from __future__ import annotations

import os
import re
import sys
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.textsafe import printable

if TYPE_CHECKING:
    from ..read.project_index import ProjectIndex
    from ..scan.engine import Engine
    from ..findings.model import Finding

MAX_ENGINES = 4  # configurations (projects) with a live engine; the least recently used goes first
MAX_INDEX_FILES = 4096  # files one engine's project index reads before it starts afresh (bounded memory)


@dataclass
class Analysis:
    """One scan of one document's text."""

    data: bytes
    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    excluded: bool = False
    engine: Engine | None = None  # what scanned it (its rules, its fixes); None when not scanned
    refusal: Refusal | None = None  # the configuration cannot be used: no findings, and the editor is told why


@dataclass(frozen=True)
class Refusal:
    """Why the project's configuration refuses a run (the words `scan` prints before exiting 2) and the
    configuration file at fault (None when no file is: the message then stands alone)."""

    message: str
    config: Path | None


@dataclass(frozen=True)
class ByteEdit:
    """Replace bytes [start, end) of the scanned text with `text` (what LSP's TextEdit carries, in bytes)."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Action:
    """A code action: its title, whether it is the preferred one, and its edits."""

    title: str
    edits: tuple[ByteEdit, ...]
    preferred: bool = False


class Engines:
    """The engine for a path: built once per configuration (path + mtime), with its rules warmed up, after the
    same checks `scan` makes (workspace/preparation.py): a configuration `scan` refuses gives no engine here either."""

    def __init__(self) -> None:
        # (configuration file, its mtime, the compile database the document's directory finds): the database's
        # -D/-U flags decide branches (read/unit_defines.py), and which one a document has can change (a build
        # configured after the server started) or differ between the subprojects of one configuration
        self._by_key: OrderedDict[tuple[str, float, str | None], Engine] = OrderedDict()
        self._index: dict[tuple[str, float, str | None], ProjectIndex] = {}

    def resolve(self, path: Path) -> tuple[Engine | None, Refusal | None, int]:
        """(engine, refusal, the configured `max-file-size` in bytes) for `path`: engine None when the
        configuration excludes `path` (no refusal) or cannot be used (the refusal says why)."""
        from ..read.source import DEFAULT_MAX_BYTES
        from ..workspace.preparation import find_configuration, load_checked, prepare
        from ..workspace.request import Request, WorkspaceError

        req = Request(paths=(path,))
        try:
            cfg = find_configuration(req)
            mtime = os.stat(cfg.path).st_mtime if cfg.path and os.path.exists(cfg.path) else 0.0
            pre = prepare(req)
            key = (str(cfg.path), mtime, pre.opts.compile_db)
            for w in pre.warnings:  # a malformed calibration file: on stderr, as the CLI does
                print(f"cudamigrate: {printable(w)}", file=sys.stderr)
            limit = pre.max_bytes or DEFAULT_MAX_BYTES
            if not pre.files:  # excluded by `exclude` or an ignore file, as `scan` would
                return None, None, limit
            if key not in self._by_key:
                for old in [k for k in self._by_key if k[0] == key[0] and k[1] != key[1]]:  # an older version of it
                    del self._by_key[old]
                    self._index.pop(old, None)
                self._by_key[key] = self._build(pre, load_checked(req, pre).rules)
                while len(self._by_key) > MAX_ENGINES:
                    self._index.pop(self._by_key.popitem(last=False)[0], None)
            self._by_key.move_to_end(key)
        except WorkspaceError as exc:
            return None, Refusal(exc.text(), exc.config), DEFAULT_MAX_BYTES
        return self._by_key[key].with_run(project=self._fresh_index(key)), None, limit

    def _fresh_index(self, key: tuple[str, float, str | None]) -> ProjectIndex:
        """The configuration's project index, new when a file it read changed (or changed too close to being read
        to tell: read/project_index.ProjectIndex.unchanged) or it grew past its bound."""
        from ..read.project_index import ProjectIndex

        index = self._index.get(key)
        if index is None or index.size > MAX_INDEX_FILES or not index.unchanged():
            from ..core.stamps import clear_file_caches

            clear_file_caches()  # what the matchers keep per file for the process goes with the index (core/stamps.py)
            index = self._index[key] = ProjectIndex()
        return index

    def __len__(self) -> int:
        return len(self._by_key)

    @staticmethod
    def _build(pre: Any, rules: list) -> Engine:
        from ..scan.engine import Engine

        engine = Engine(rules, pre.opts)
        engine.warm_up()
        return engine


def analyse(engines: Engines, path: Path, text: str) -> Analysis:
    """Scan an editor buffer as the file `path` (which need not be saved)."""
    from .buffer import encode

    return analyse_bytes(engines, path, encode(text))


def analyse_bytes(engines: Engines, path: Path, data: bytes) -> Analysis:
    """Scan a buffer's UTF-8 bytes as the file `path`; one over the configured `max-file-size` is refused
    with the CLI's reason instead of scanned (a 10 MB buffer would otherwise cost minutes per keystroke)."""
    engine, refusal, limit = engines.resolve(path)
    if engine is None:
        return Analysis(data, errors=[refusal.message] if refusal else [], excluded=refusal is None, refusal=refusal)
    if len(data) > limit:
        return Analysis(data, errors=[f"{path}: not scanned: buffer too large ({len(data)} bytes > limit "
                                      f"{limit}); raise `max-file-size` to scan it"])
    res = engine.scan_bytes(path, data, str(path))
    from ..fix.consistency import as_scanned, minutes_of

    # a group `fix -` would withhold in this buffer offers no quick fix (one use renamed alone would not build)
    return Analysis(data, as_scanned(list(res.findings), minutes_of(engine.rules)), list(res.errors), engine=engine)


def fix_actions(f: Finding) -> list[Action]:
    """The finding's own fix as an action, labelled like the CLI's marks: safe, unsafe (changes behaviour:
    the rule's message says how) or a suggested edit (display-only) to review; none for a manual finding."""
    if f.fix is None or not f.fix.edits:
        return []
    label = {"safe": "Fix", "unsafe": "Unsafe fix", "display-only": "Suggested edit"}.get(f.fix.applicability)
    if label is None:
        return []
    edits = tuple(ByteEdit(e.start, e.end, e.text) for e in f.fix.edits)
    return [Action(f"{label} {f.rule_id}: {f.fix.title}", edits, preferred=f.fix.applicability == "safe")]


_SUPPRESSION = re.compile(rb"cudamigrate:\s*ignore\[([A-Za-z0-9_,\s]*)\]")


def suppression_action(f: Finding, data: bytes) -> Action:
    """`// cudamigrate: ignore[ID]` at the end of the finding's first line (a trailing comment covers its own
    line: cudamigrate/findings/suppress.py), or ID added to the list of one already there. Before a line-continuation
    backslash (a macro body) it is a block comment, so the continuation still holds."""
    start = data.rfind(b"\n", 0, f.start_byte) + 1
    end = data.find(b"\n", f.start_byte)
    end = len(data) if end < 0 else end
    if end > start and data[end - 1 : end] == b"\r":
        end -= 1
    line = data[start:end]
    title = f"Suppress {f.rule_id} on this line"
    m = _SUPPRESSION.search(line)
    if m is not None:
        at = start + m.end(1)
        sep = ", " if m.group(1).strip() else ""
        return Action(title, (ByteEdit(at, at, f"{sep}{f.rule_id}"),))
    body = line.rstrip(b" \t")
    if body.endswith(b"\\"):
        at = start + len(body) - 1
        return Action(title, (ByteEdit(at, at, f"/* cudamigrate: ignore[{f.rule_id}] */ "),))
    at = start + len(body)
    return Action(title, (ByteEdit(at, at, f"  // cudamigrate: ignore[{f.rule_id}]"),))


def apply_edits(data: bytes, edits: tuple[ByteEdit, ...] | list[ByteEdit]) -> bytes:
    """The text after the edits (non-overlapping, any order): what the client computes, for tests."""
    out = data
    for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        out = out[: e.start] + e.text.encode("utf-8") + out[e.end :]
    return out


def position(data: bytes, offset: int) -> tuple[int, int]:
    """0-based line (counted at `\\n`) and column in code points of a byte offset: the engine's coordinates
    (a finding's and a related location's, less one), not LSP's; `buffer.Buffer` gives the client's."""
    line = data.count(b"\n", 0, offset)
    start = data.rfind(b"\n", 0, offset) + 1
    return line, len(data[start:offset].decode("utf-8", errors="replace"))


def offset(data: bytes, line: int, column: int) -> int:
    """The byte offset of a 0-based (line, column in code points): the inverse of `position`."""
    start = 0
    for _ in range(line):
        nl = data.find(b"\n", start)
        if nl < 0:
            return len(data)
        start = nl + 1
    end = data.find(b"\n", start)
    text = data[start : len(data) if end < 0 else end].decode("utf-8", errors="replace")
    return start + len(text[:column].encode("utf-8"))
