"""The protocol side of `cudamigrate server`: pygls (a maintained LSP implementation: JSON-RPC framing,
document sync with incremental changes, position encodings) wired to `analysis`.

Diagnostics are published on open, change and save, with each finding's related locations (the uses of a
texture reference reported at its declaration) as `relatedInformation`; code actions offer each finding's fix
(safe, unsafe, suggested edit) and a suppression comment; hover shows the rule's `explain` text. A document the project's
configuration excludes gets no diagnostics, as `scan` would report none.
"""

from __future__ import annotations

import os
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import ServerTextPosition, ServerTextRange

from .. import __version__
from ..findings.model import Finding
from .analysis import Action, Analysis, Engines, analyse, fix_actions, offset, position, suppression_action

SOURCE = "cudamigrate"
_SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
             "info": types.DiagnosticSeverity.Information}
_MARK = {"safe": "[*]", "unsafe": "[~]", "display-only": "[?]", "manual": "[ ]"}


class CudamigrateServer(LanguageServer):
    """The server and its state: one engine per project configuration, the last analysis of each document."""

    def __init__(self) -> None:
        super().__init__("cudamigrate", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.engines = Engines()
        self.analyses: dict[str, Analysis] = {}
        self.refused: dict[str, str] = {}  # configuration file URI -> the refusal shown on it


server = CudamigrateServer()


def _path(uri: str) -> Path:
    """The file a document stands for (config and excludes apply to it); an unsaved one reads as a .cu file."""
    fs = to_fs_path(uri) if uri.startswith("file:") else None
    return Path(fs) if fs else Path("untitled.cu")


def _range(doc: TextDocument, data: bytes, start: int, end: int) -> types.Range:
    (sl, sc), (el, ec) = position(data, start), position(data, end)
    return doc.range_to_client_units(ServerTextRange(ServerTextPosition(sl, sc), ServerTextPosition(el, ec)))


def _related(ls: CudamigrateServer, doc: TextDocument, f: Finding) -> list[types.DiagnosticRelatedInformation]:
    """The finding's related locations (a texture reference's uses) as LSP related information: in this document
    (the finding's own path) or in another file, whose text (open in the editor or on disk) gives the client's
    column units."""
    out = []
    for r in f.related:
        other = doc if r.path == f.path else ls.workspace.get_text_document(from_fs_path(os.path.abspath(r.path)) or r.path)
        start = ServerTextPosition(r.line - 1, r.column - 1)
        end = ServerTextPosition((r.end_line or r.line) - 1, (r.end_column or r.column) - 1)
        try:
            rng = other.range_to_client_units(ServerTextRange(start, end))
        except (OSError, IndexError, ValueError):  # a file gone since the scan: its positions as they are
            rng = types.Range(types.Position(start.line, start.character), types.Position(end.line, end.character))
        out.append(types.DiagnosticRelatedInformation(types.Location(other.uri, rng), r.message))
    return out


def _publish(ls: CudamigrateServer, uri: str) -> None:
    doc = ls.workspace.get_text_document(uri)
    a = analyse(ls.engines, _path(uri), doc.source)
    ls.analyses[uri] = a
    _configuration_state(ls, _path(uri), a)
    for e in a.errors:
        ls.window_log_message(types.LogMessageParams(types.MessageType.Warning, e))
    diags = [types.Diagnostic(
        range=_range(doc, a.data, f.start_byte, f.end_byte), message=f"{_MARK[f.applicability]} {f.message}",
        severity=_SEVERITY.get(f.severity, types.DiagnosticSeverity.Warning), code=f.rule_id, source=SOURCE,
        data={"fingerprint": f.fingerprint}, related_information=_related(ls, doc, f) or None) for f in a.findings]
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=doc.version))


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


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: CudamigrateServer, params: types.DidOpenTextDocumentParams) -> None:
    _publish(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: CudamigrateServer, params: types.DidChangeTextDocumentParams) -> None:
    _publish(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: CudamigrateServer, params: types.DidSaveTextDocumentParams) -> None:
    _publish(ls, params.text_document.uri)  # a saved configuration or header may change the answer


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: CudamigrateServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.analyses.pop(params.text_document.uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))


def _findings_in(ls: CudamigrateServer, uri: str, rng: types.Range) -> tuple[TextDocument, Analysis, list]:
    doc = ls.workspace.get_text_document(uri)
    a = ls.analyses.get(uri)
    if a is None or a.data != doc.source.encode("utf-8"):
        _publish(ls, uri)
        a = ls.analyses[uri]
    r = doc.range_from_client_units(rng)
    lo = offset(a.data, r.start.line, r.start.character)
    hi = offset(a.data, r.end.line, r.end.character)
    return doc, a, [f for f in a.findings if f.start_byte <= hi and lo <= f.end_byte]


def _code_action(doc: TextDocument, a: Analysis, action: Action, diag: types.Diagnostic | None) -> types.CodeAction:
    edits = [types.TextEdit(_range(doc, a.data, e.start, e.end), e.text) for e in action.edits]
    return types.CodeAction(
        title=action.title, kind=types.CodeActionKind.QuickFix, is_preferred=action.preferred or None,
        diagnostics=[diag] if diag is not None else None,
        edit=types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version), edits=edits)]))


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
def code_action(ls: CudamigrateServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    doc, a, found = _findings_in(ls, params.text_document.uri, params.range)
    by_code = {(d.code, d.range.start.line): d for d in params.context.diagnostics if d.source == SOURCE}
    out: list[types.CodeAction] = []
    for f in found:
        diag = by_code.get((f.rule_id, _range(doc, a.data, f.start_byte, f.end_byte).start.line))
        out += [_code_action(doc, a, act, diag) for act in fix_actions(f)]
    seen: set[tuple[str, int]] = set()
    for f in found:  # one suppression per rule and line, after every fix
        key = (f.rule_id, f.line)
        if key not in seen:
            seen.add(key)
            diag = by_code.get((f.rule_id, _range(doc, a.data, f.start_byte, f.end_byte).start.line))
            out.append(_code_action(doc, a, suppression_action(f, a.data), diag))
    return out


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: CudamigrateServer, params: types.HoverParams) -> types.Hover | None:
    rng = types.Range(params.position, params.position)
    doc, a, found = _findings_in(ls, params.text_document.uri, rng)
    if not found:
        return None
    from ..report.explain import explain_text

    engine, _ = ls.engines.for_path(_path(params.text_document.uri))
    rules = {r.id: r for r in engine.rules} if engine is not None else {}
    texts = [explain_text(rules[rid]) for rid in dict.fromkeys(f.rule_id for f in found) if rid in rules]
    if not texts:
        return None
    body = "\n\n---\n\n".join(f"```text\n{t}\n```" for t in texts)
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=body),
                       range=_range(doc, a.data, found[0].start_byte, found[0].end_byte))


def serve() -> None:
    """Speak LSP on stdin/stdout until the client exits."""
    server.start_io()
