"""The protocol side of `cudamigrate server`: pygls (a maintained LSP implementation: initialisation,
capabilities, requests) wired to `analysis`, with the server's own documents (`buffer`), scan scheduling
(`schedule`) and stdio loop (`transport`, `framing`).

Diagnostics are published after open, change (debounced: a burst of edits is scanned once, for its last
text) and save, with each finding's related locations (the uses of a texture reference reported at its
declaration) as `relatedInformation` and a `codeDescription` link to the rule's reference; a problem
(an invalid configuration, a buffer over `max-file-size`) is shown to the user once, not as a diagnostic.
Code actions offer each finding's fix (safe, unsafe, suggested edit) and a suppression comment, and
`source.fixAll` applies every safe fix as `fix` would (fix on save); hover shows the rule's documentation
as Markdown. A document the project's configuration excludes gets no diagnostics, as `scan` would report none.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from .. import __version__
from ..findings.model import Finding
from .analysis import Action, Analysis, ByteEdit, Engines, analyse_bytes, fix_actions, offset, suppression_action
from .buffer import UTF8, UTF16, UTF32, Buffer
from .schedule import Scheduler, Snapshot
from .transport import Transport

SOURCE = "cudamigrate"
DEBOUNCE_S = 0.1  # quiet time after a change before its scan (an open or a save is scanned at once)
_SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
             "info": types.DiagnosticSeverity.Information}
_ENCODINGS = {types.PositionEncodingKind.Utf8: UTF8, types.PositionEncodingKind.Utf16: UTF16,
              types.PositionEncodingKind.Utf32: UTF32}


@dataclass(frozen=True)
class Scanned:
    """An analysis and the buffer it was made from (its positions), for one generation of a document."""

    generation: int
    version: int | None
    buffer: Buffer
    analysis: Analysis
    diagnostics: tuple[types.Diagnostic, ...] = ()


class CudamigrateServer(LanguageServer):
    """The server and its state: one engine per project configuration, each open document's buffer and its
    last analysis."""

    def __init__(self) -> None:
        super().__init__("cudamigrate", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.engines = Engines()
        self.buffers: dict[str, Buffer] = {}
        self.scanned: dict[str, Scanned] = {}
        self.shown: dict[str, tuple[str, ...]] = {}  # the problems last shown for a document
        self.refused: dict[str, str] = {}  # configuration file URI -> the refusal shown on it
        self.scheduler: Scheduler[Scanned] = Scheduler(self._snapshot, self._scan, self._publish, DEBOUNCE_S)

    @property
    def encoding(self) -> str:
        """The position encoding agreed at initialisation (UTF-16 before it, as LSP's default)."""
        ws = getattr(self.protocol, "_workspace", None)
        return _ENCODINGS.get(getattr(ws, "position_encoding", None), UTF16)  # type: ignore[arg-type]

    def report_server_error(self, error: Exception, source: Any) -> None:
        """One line to the client's log, never a traceback (requests are answered with their error)."""
        self.window_log_message(types.LogMessageParams(
            types.MessageType.Error, f"cudamigrate: {type(error).__name__}: {error}"))

    # -- scans ----------------------------------------------------------------------------------------------
    def _snapshot(self, uri: str) -> Snapshot | None:
        buf = self.buffers.get(uri)
        return None if buf is None else Snapshot(uri, buf.generation, buf.data)

    def _scan(self, snap: Snapshot) -> Scanned:
        """Runs on the scan worker: the analysis of one snapshot, an internal error reported in it."""
        try:
            a = analyse_bytes(self.engines, _path(snap.uri), snap.data)
        except Exception as exc:  # a bug of ours: reported as a problem, the server goes on
            a = Analysis(snap.data, errors=[f"internal error: {type(exc).__name__}: {exc}"])
        buf = self.buffers.get(snap.uri)
        version = buf.version if buf is not None and buf.generation == snap.generation else None
        s = Scanned(snap.generation, version, Buffer(snap.data, version, self.encoding, snap.generation), a)
        try:
            rules = {r.id: r for r in a.engine.rules} if a.engine is not None else {}
            diags = tuple(_diagnostic(self, s, snap.uri, f, rules.get(f.rule_id)) for f in a.findings)
        except Exception as exc:
            return Scanned(s.generation, version, s.buffer,
                           Analysis(snap.data, errors=[f"internal error: {type(exc).__name__}: {exc}"]))
        return Scanned(s.generation, version, s.buffer, a, diags)

    def _publish(self, snap: Snapshot, s: Scanned) -> None:
        self.scanned[snap.uri] = s
        if self.protocol._shutdown:  # a scan that ended after `shutdown`: nothing more is sent
            return
        refusal = s.analysis.refusal
        _configuration_state(self, _path(snap.uri), s.analysis)  # shown once, as an error, and on the file
        problems = tuple(e for e in s.analysis.errors if refusal is None or e != refusal.message)
        if problems and self.shown.get(snap.uri) != problems:
            for p in problems:
                self.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"cudamigrate: {p}"))
        self.shown[snap.uri] = problems
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=snap.uri, diagnostics=list(s.diagnostics), version=s.version))

    async def current(self, uri: str) -> Scanned | None:
        """The analysis of the document's current text (scanned now if the last one is outdated)."""
        buf = self.buffers.get(uri)
        if buf is None:
            return None
        s = self.scanned.get(uri)
        if s is not None and s.generation == buf.generation:
            return s
        s = await self.scheduler.now(Snapshot(uri, buf.generation, buf.data))
        if uri in self.buffers and self.buffers[uri].generation == s.generation:
            self.scanned[uri] = s
        return s


def _configuration_state(ls: CudamigrateServer, path: Path, a: Analysis) -> None:
    """A configuration `scan` would refuse (exit 2) is shown once as an error message and marked on the
    configuration file itself; the mark goes once a document under that file's directory scans again."""
    r = a.refusal
    if r is None:
        ls.refused.pop("", None)
        for config_uri in [u for u in ls.refused if path.is_relative_to(Path(to_fs_path(u) or "/").parent)]:
            del ls.refused[config_uri]
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=config_uri, diagnostics=[]))
        return
    key = (from_fs_path(os.path.abspath(r.config)) or "") if r.config is not None else ""
    if ls.refused.get(key) == r.message:
        return
    ls.refused[key] = r.message
    ls.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"cudamigrate: {r.message}"))
    if key:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=key, diagnostics=[types.Diagnostic(
            range=types.Range(types.Position(0, 0), types.Position(1, 0)), message=r.message,
            severity=types.DiagnosticSeverity.Error, source=SOURCE)]))


server = CudamigrateServer()


def _path(uri: str) -> Path:
    """The file a document stands for (config and excludes apply to it); an unsaved one reads as a .cu file."""
    fs = to_fs_path(uri) if uri.startswith("file:") else None
    return Path(fs) if fs else Path("untitled.cu")


def _range(buf: Buffer, start: int, end: int) -> types.Range:
    (sl, sc), (el, ec) = buf.position(start), buf.position(end)
    return types.Range(types.Position(sl, sc), types.Position(el, ec))


def _other(ls: CudamigrateServer, path: str) -> tuple[str, Buffer | None]:
    """Another file's uri and text: its editor buffer if open, else the file as `scan` reads it (or None)."""
    from ..read.source import SourceError, load_source

    uri = from_fs_path(os.path.abspath(path)) or path
    if uri in ls.buffers:
        return uri, ls.buffers[uri]
    try:
        return uri, Buffer(load_source(Path(path)).data, encoding=ls.encoding)
    except (SourceError, OSError, ValueError):
        return uri, None


def _related(ls: CudamigrateServer, s: Scanned, uri: str, f: Finding) -> list[types.DiagnosticRelatedInformation]:
    """The finding's related locations (a texture reference's uses) as LSP related information, in the
    client's units: lines and code-point columns (counted at `\\n`, as the engine does) to bytes, then to
    LSP positions of that text."""
    out = []
    for r in f.related:
        where, buf = (uri, s.buffer) if r.path == f.path else _other(ls, r.path)
        if buf is None:  # a file gone since the scan: its positions as they are
            rng = types.Range(types.Position(r.line - 1, r.column - 1),
                              types.Position((r.end_line or r.line) - 1, (r.end_column or r.column) - 1))
        else:
            rng = _range(buf, offset(buf.data, r.line - 1, r.column - 1),
                         offset(buf.data, (r.end_line or r.line) - 1, (r.end_column or r.column) - 1))
        out.append(types.DiagnosticRelatedInformation(types.Location(where, rng), r.message))
    return out


def _diagnostic(ls: CudamigrateServer, s: Scanned, uri: str, f: Finding, rule: Any) -> types.Diagnostic:
    """A finding as a diagnostic: its message without the CLI's fix marks (the code actions say what is
    offered), its rule's first reference as the code's link."""
    from ..report.sarif import help_uri

    link = help_uri(rule) if rule is not None else None
    return types.Diagnostic(
        range=_range(s.buffer, f.start_byte, f.end_byte), message=f.message,
        severity=_SEVERITY.get(f.severity, types.DiagnosticSeverity.Warning), code=f.rule_id, source=SOURCE,
        code_description=types.CodeDescription(href=link) if link else None,
        data={"fingerprint": f.fingerprint}, related_information=_related(ls, s, uri, f) or None)


# -- text synchronisation: the server's own buffers (transport hands these notifications here) ---------------
@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: CudamigrateServer, params: types.DidOpenTextDocumentParams) -> None:
    doc = params.text_document
    ls.buffers[doc.uri] = Buffer.of(doc.text, doc.version, ls.encoding)
    ls.scheduler.request(doc.uri, 0)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: CudamigrateServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    buf = ls.buffers.get(uri)
    if buf is None:
        ls.window_log_message(types.LogMessageParams(
            types.MessageType.Warning, f"cudamigrate: change ignored: {uri} is not open (no didOpen)"))
        return
    for change in params.content_changes:
        if isinstance(change, types.TextDocumentContentChangePartial):
            start, end = change.range.start, change.range.end
            buf.edit(buf.offset(start.line, start.character), buf.offset(end.line, end.character), change.text)
        else:
            buf.replace(change.text)
    buf.version = params.text_document.version
    ls.scheduler.request(uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
def did_save(ls: CudamigrateServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    if uri in ls.buffers:  # a saved configuration or header may change the answer: scan again at once
        ls.buffers[uri].touch()
        ls.scheduler.request(uri, 0)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: CudamigrateServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.scheduler.cancel(uri)
    for table in (ls.buffers, ls.scanned, ls.shown):
        table.pop(uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


# -- requests -------------------------------------------------------------------------------------------------
def _found(s: Scanned, rng: types.Range) -> list[Finding]:
    lo = s.buffer.offset(rng.start.line, rng.start.character)
    hi = s.buffer.offset(rng.end.line, rng.end.character)
    return [f for f in s.analysis.findings if f.start_byte <= hi and lo <= f.end_byte]


def _code_action(uri: str, s: Scanned, action: Action, diag: types.Diagnostic | None,
                 kind: str = types.CodeActionKind.QuickFix) -> types.CodeAction:
    edits = [types.TextEdit(_range(s.buffer, e.start, e.end), e.text) for e in action.edits]
    return types.CodeAction(
        title=action.title, kind=kind, is_preferred=action.preferred or None,
        diagnostics=[diag] if diag is not None else None,
        edit=types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=s.version), edits=edits)]))


def fix_all(uri: str, s: Scanned) -> Action | None:
    """Every safe fix of the document, applied as `fix` applies them (passes to a fixed point, overlaps and
    fixes that would break parsing left out), as one edit of the span that changes; None when nothing does.
    Runs on the scan worker (it scans with the document's engine). The workspace's `fix_buffer`, as `fix -`:
    nothing is compiled or written here, the editor applies the edit to its own text."""
    from ..workspace.fixing import fix_buffer

    engine = s.analysis.engine
    if engine is None or not any(f.fix is not None and f.fix.applicability == "safe" for f in s.analysis.findings):
        return None
    data = s.buffer.data
    fixed = fix_buffer(engine, _path(uri), data, str(_path(uri))).fixed
    if fixed == data:
        return None
    a, b = data.decode("utf-8", "surrogateescape"), fixed.decode("utf-8", "surrogateescape")
    head = len(os.path.commonprefix([a, b]))
    tail = len(os.path.commonprefix([a[head:][::-1], b[head:][::-1]]))
    start, end = len(a[:head].encode("utf-8", "surrogateescape")), len(a[:len(a) - tail].encode("utf-8", "surrogateescape"))
    return Action("Fix all safe cudamigrate findings", (ByteEdit(start, end, b[head:len(b) - tail]),))


def _internal(exc: Exception) -> JsonRpcInternalError:
    """A request's failure as the client sees it: one line, no traceback."""
    return JsonRpcInternalError(message=f"cudamigrate: {type(exc).__name__}: {exc}")


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll]))
async def code_action(ls: CudamigrateServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    try:
        return await _code_actions(ls, params)
    except Exception as exc:
        raise _internal(exc) from None


async def _code_actions(ls: CudamigrateServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    s = await ls.current(uri)
    if s is None:
        return []
    only = params.context.only
    out: list[types.CodeAction] = []
    if only is None or any(types.CodeActionKind.SourceFixAll.startswith(k) for k in only):
        act = await ls.scheduler.call(fix_all, uri, s)
        if act is not None:
            out.append(_code_action(uri, s, act, None, types.CodeActionKind.SourceFixAll))
    if only is not None and not any(types.CodeActionKind.QuickFix.startswith(k) for k in only):
        return out
    found = _found(s, params.range)
    by_code = {(d.code, d.range.start.line): d for d in params.context.diagnostics if d.source == SOURCE}
    for f in found:
        diag = by_code.get((f.rule_id, _range(s.buffer, f.start_byte, f.end_byte).start.line))
        out += [_code_action(uri, s, act, diag) for act in fix_actions(f)]
    seen: set[tuple[str, int]] = set()
    for f in found:  # one suppression per rule and line, after every fix
        key = (f.rule_id, f.line)
        if key not in seen:
            seen.add(key)
            diag = by_code.get((f.rule_id, _range(s.buffer, f.start_byte, f.end_byte).start.line))
            out.append(_code_action(uri, s, suppression_action(f, s.buffer.data), diag))
    return out


@server.feature(types.TEXT_DOCUMENT_HOVER)
async def hover(ls: CudamigrateServer, params: types.HoverParams) -> types.Hover | None:
    try:
        return await _hover(ls, params)
    except Exception as exc:
        raise _internal(exc) from None


async def _hover(ls: CudamigrateServer, params: types.HoverParams) -> types.Hover | None:
    from ..report.sarif import rule_descriptor

    uri = params.text_document.uri
    s = await ls.current(uri)  # a document not open (a missing or binary file) has no findings
    if s is None:
        return None
    found = _found(s, types.Range(params.position, params.position))
    rules = {r.id: r for r in s.analysis.engine.rules} if found and s.analysis.engine is not None else {}
    texts = [rule_descriptor(rules[rid])["help"]["markdown"] for rid in dict.fromkeys(f.rule_id for f in found)
             if rid in rules]
    if not texts:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(texts)),
                       range=_range(s.buffer, found[0].start_byte, found[0].end_byte))


def serve() -> None:
    """Speak LSP on stdin/stdout until the client exits; the exit status is the spec's (1 without shutdown)."""
    own = {types.TEXT_DOCUMENT_DID_OPEN: lambda p: did_open(server, p),
           types.TEXT_DOCUMENT_DID_CHANGE: lambda p: did_change(server, p),
           types.TEXT_DOCUMENT_DID_SAVE: lambda p: did_save(server, p),
           types.TEXT_DOCUMENT_DID_CLOSE: lambda p: did_close(server, p)}
    code = Transport(server, own).run(sys.stdin.buffer, sys.stdout.buffer)
    server.scheduler.close()
    sys.stdout.flush()
    os._exit(code)  # the scan worker may be mid-scan: end the process now, as `exit` asks
