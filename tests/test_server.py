"""`cudamigrate server` end to end: a real LSP client (pytest-lsp) speaks JSON-RPC to the server process."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from cudamigrate.server.analysis import apply_edits

ROOT = Path(__file__).resolve().parent.parent
# cudaThreadSynchronize -> cudaDeviceSynchronize is CM501's safe fix
CODE = "#include <cuda_runtime.h>\nint main() {\n    cudaThreadSynchronize();\n    return 0;\n}\n"
FIXED = CODE.replace("cudaThreadSynchronize", "cudaDeviceSynchronize")


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=[sys.executable, "-m", "cudamigrate", "server"],
    server_env={**os.environ, "PYTHONPATH": str(ROOT)}))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("proj")
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="proj")]))
    lsp_client.root = root  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


def _client_offset(text: str, pos: types.Position) -> int:
    """What an editor means by a position: lines end at \\n, \\r\\n or \\r only (LSP), columns count UTF-16
    units; the result is an index into `text` (code points). Written apart from the server's own buffer."""
    starts = [0] + [m.end() for m in re.finditer("\r\n|\r|\n", text)]
    i = starts[pos.line]
    units = 0
    while units < pos.character and text[i] not in "\r\n":
        units += 2 if ord(text[i]) > 0xFFFF else 1
        i += 1
    return i


def _apply(text: str, edit: types.WorkspaceEdit) -> str:
    """What an editor does with a WorkspaceEdit."""
    edits = []
    for change in edit.document_changes or []:
        for e in change.edits:
            edits.append((_client_offset(text, e.range.start), _client_offset(text, e.range.end), e.new_text))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


async def _open(client: LanguageClient, name: str, text: str) -> tuple[str, list[types.Diagnostic]]:
    path = client.root / name  # type: ignore[attr-defined]
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="cuda", version=1, text=text)))
    while uri not in client.diagnostics:  # (a refused configuration's file gets its diagnostic first)
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return uri, client.diagnostics[uri]


async def _actions(client: LanguageClient, uri: str, diag: types.Diagnostic) -> list[types.CodeAction]:
    got = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri), range=diag.range,
        context=types.CodeActionContext(diagnostics=[diag])))
    return [a for a in got or [] if isinstance(a, types.CodeAction)]


@pytest.mark.asyncio(loop_scope="function")
async def test_diagnostics_then_the_fix_action_gives_the_fixed_text(client: LanguageClient):
    uri, diags = await _open(client, "a.cu", CODE)
    cm101 = [d for d in diags if d.code == "CM501"]
    assert len(cm101) == 1 and cm101[0].source == "cudamigrate"
    assert (cm101[0].range.start.line, cm101[0].range.start.character) == (2, 4)
    actions = await _actions(client, uri, cm101[0])
    fixes = [a for a in actions if a.title.startswith("Fix CM501")]
    assert len(fixes) == 1 and fixes[0].is_preferred, [a.title for a in actions]
    assert _apply(CODE, fixes[0].edit) == FIXED


@pytest.mark.asyncio(loop_scope="function")
async def test_suppression_action_silences_the_finding(client: LanguageClient):
    uri, diags = await _open(client, "b.cu", CODE)
    diag = next(d for d in diags if d.code == "CM501")
    sup = [a for a in await _actions(client, uri, diag) if a.title == "Suppress CM501 on this line"]
    assert len(sup) == 1
    text = _apply(CODE, sup[0].edit)
    assert "    cudaThreadSynchronize();  // cudamigrate: ignore[CM501]\n" in text
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert not [d for d in client.diagnostics[uri] if d.code == "CM501"]


@pytest.mark.asyncio(loop_scope="function")
async def test_changes_are_rescanned_and_hover_explains_the_rule(client: LanguageClient):
    uri, diags = await _open(client, "c.cu", "int main() { return 0; }\n")
    assert list(diags) == []
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=CODE)]))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert [d.code for d in client.diagnostics[uri]].count("CM501") == 1
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(2, 8)))
    assert hover is not None and hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value.startswith("**CM501 ") and "```text" not in hover.contents.value
    assert "`// cudamigrate: ignore[CM501]`" in hover.contents.value


TEXTURE = ("texture<float, 1> texIn;\n"
           "__global__ void k(float *out) {\n"
           "    out[0] = /* \U0001F600 */ tex1Dfetch(texIn, 0);\n"
           "}\n"
           "void run(float *d) { cudaBindTexture(0, texIn, d, 64 * sizeof(float)); }\n")


@pytest.mark.asyncio(loop_scope="function")
async def test_texture_reference_diagnostic_relates_each_use(client: LanguageClient):
    """CM601 at the declaration carries every use as relatedInformation, in the client's (UTF-16) units."""
    uri, diags = await _open(client, "tex.cu", TEXTURE)
    diag = next(d for d in diags if d.code == "CM601")
    assert diag.range.start.line == 0
    rel = diag.related_information or []
    assert [(r.location.uri, r.location.range.start.line, r.location.range.start.character,
             r.location.range.end.character, r.message) for r in rel] == [
        (uri, 2, 33, 38, "texture reference `texIn` used here (read by `tex1Dfetch`)"),  # 😀: 2 UTF-16 units
        (uri, 4, 40, 45, "texture reference `texIn` used here (bound by `cudaBindTexture`)")]


@pytest.mark.asyncio(loop_scope="function")
async def test_project_configuration_applies(client: LanguageClient):
    root = client.root  # type: ignore[attr-defined]
    (root / ".cudamigrate.toml").write_text('ignore = ["CM501"]\nexclude = ["gen/"]\n')
    (root / "gen").mkdir()
    _, diags = await _open(client, "d.cu", CODE)
    assert "CM501" not in [d.code for d in diags]
    (root / ".cudamigrate.toml").write_text('exclude = ["gen/"]\n')
    _, diags = await _open(client, "gen/e.cu", CODE)
    assert list(diags) == []  # excluded, as `scan` would report nothing


@pytest.mark.asyncio(loop_scope="function")
@pytest.mark.parametrize("config,words", [('select = ["CM9999"]\n', "CM9999"), ('target-cuda = "99.0"\n', "99.0")])
async def test_a_configuration_scan_refuses_reaches_the_editor(client: LanguageClient, config, words):
    """What makes `scan` exit 2 is shown as an error message and marked on the configuration file, not
    silently answered with no diagnostics; fixing the file takes the mark away."""
    root = client.root  # type: ignore[attr-defined]
    cfg = root / ".cudamigrate.toml"
    cfg.write_text(config)
    path = root / "r.cu"
    path.write_text(CODE)
    uri, cfg_uri = path.as_uri(), cfg.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="cuda", version=1, text=CODE)))
    while uri not in client.diagnostics:
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    shown = [m for m in client.messages if m.type == types.MessageType.Error]
    assert len(shown) == 1 and words in shown[0].message
    assert [d.message for d in client.diagnostics[cfg_uri]] == [shown[0].message.removeprefix("cudamigrate: ")]
    assert words in client.diagnostics[cfg_uri][0].message and list(client.diagnostics[uri]) == []
    cfg.write_text("")
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
    while client.diagnostics[cfg_uri] or not client.diagnostics[uri]:
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert "CM501" in [d.code for d in client.diagnostics[uri]]


def _finding_at(code: str, word: str):
    from cudamigrate.findings.model import Finding

    start = code.encode().index(word.encode())
    return Finding("CM501", "n", "f", "error", "t.cu", 1, 1, 1, 1, start, start + len(word), "m", "")


@pytest.mark.parametrize("code,after", [
    ("  cudaThreadSynchronize();\n", "  cudaThreadSynchronize();  // cudamigrate: ignore[CM501]\n"),
    ("  cudaThreadSynchronize();\r\n", "  cudaThreadSynchronize();  // cudamigrate: ignore[CM501]\r\n"),
    ("  cudaThreadSynchronize();  // cudamigrate: ignore[CM101]\n",
     "  cudaThreadSynchronize();  // cudamigrate: ignore[CM101, CM501]\n"),
    ("#define SYNC() \\\n  cudaThreadSynchronize(); \\\n  x()\n",
     "#define SYNC() \\\n  cudaThreadSynchronize(); /* cudamigrate: ignore[CM501] */ \\\n  x()\n"),
    ("cudaThreadSynchronize()", "cudaThreadSynchronize()  // cudamigrate: ignore[CM501]"),
])
def test_suppression_edit_in_every_line_shape(code, after):
    from cudamigrate.server.analysis import suppression_action

    act = suppression_action(_finding_at(code, "cudaThreadSynchronize"), code.encode())
    assert apply_edits(code.encode(), act.edits).decode() == after


def test_positions_round_trip_through_multibyte_text():
    from cudamigrate.server.analysis import offset, position

    data = "// é – ü\nint x; /* ∑ */ cudaFree(p);\n".encode()
    at = data.index(b"cudaFree")
    line, col = position(data, at)
    assert (line, col) == (1, 15) and offset(data, line, col) == at


def _change(client: LanguageClient, uri: str, version: int, text: str,
            rng: types.Range | None = None) -> None:
    change = (types.TextDocumentContentChangePartial(range=rng, text=text) if rng is not None
              else types.TextDocumentContentChangeWholeDocument(text=text))
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=[change]))


# a form feed, a vertical tab, NEL, U+2028 and U+2029 end a line for str.splitlines() but not for LSP
ODD = ("#include <cuda_runtime.h>\n\f// page \x0b two \x85 three \u2028 four \u2029 five \U0001F600\n"
       "int main() {\n    /* \u00e9\f */ cudaThreadSynchronize();\n    return 0;\n}\n")


@pytest.mark.asyncio(loop_scope="function")
async def test_odd_line_breaks_give_lsp_positions_and_an_incremental_edit_keeps_the_fix_right(client: LanguageClient):
    """Only \\n, \\r\\n and \\r end a line: the finding's range is the editor's, an incremental edit after a form
    feed lands where the editor made it, and the fix offered then gives correct code."""
    uri, diags = await _open(client, "ff.cu", ODD)
    diag = next(d for d in diags if d.code == "CM501")
    assert (diag.range.start.line, diag.range.start.character, diag.range.end.character) == (3, 13, 36)  # `cudaThreadSynchronize()`
    # the editor inserts `int rc = 0; ` before the call, in LSP positions
    at = types.Position(3, 13)
    _change(client, uri, 2, "int rc = 0; ", types.Range(at, at))
    text = ODD.replace("*/ cudaThread", "*/ int rc = 0; cudaThread")
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    diag = next(d for d in client.diagnostics[uri] if d.code == "CM501")
    assert (diag.range.start.line, diag.range.start.character) == (3, 25)
    fix = next(a for a in await _actions(client, uri, diag) if a.title.startswith("Fix CM501"))
    assert _apply(text, fix.edit) == text.replace("cudaThreadSynchronize", "cudaDeviceSynchronize")


@pytest.mark.asyncio(loop_scope="function")
async def test_a_burst_of_edits_is_answered_once_for_the_last_version(client: LanguageClient):
    uri, _ = await _open(client, "burst.cu", "int main() { return 0; }\n")
    for v in range(2, 12):  # ten quick edits; only the last one holds the removed call
        _change(client, uri, v, CODE if v == 11 else f"int main() {{ return {v}; }}\n")
    got = await asyncio.wait_for(client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 60)
    assert got.version == 11 and [d.code for d in got.diagnostics].count("CM501") == 1
    with pytest.raises(asyncio.TimeoutError):  # and nothing else: no diagnostics of an outdated version
        await asyncio.wait_for(client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 1.0)


@pytest.mark.asyncio(loop_scope="function")
async def test_a_buffer_over_the_size_limit_is_refused_with_a_message(client: LanguageClient):
    root = client.root  # type: ignore[attr-defined]
    (root / ".cudamigrate.toml").write_text("max-file-size = 1000\n")
    big = CODE + "// padding\n" * 100
    _, diags = await _open(client, "big.cu", big)
    assert list(diags) == []
    assert any("too large" in m.message and "max-file-size" in m.message for m in client.messages), client.messages


@pytest.mark.asyncio(loop_scope="function")
async def test_a_configuration_error_is_shown(client: LanguageClient):
    root = client.root  # type: ignore[attr-defined]
    (root / ".cudamigrate.toml").write_text("selec = [\"CM5\"]\n")
    _, diags = await _open(client, "cfg.cu", CODE)
    assert list(diags) == []
    assert any("selec" in m.message for m in client.messages), client.messages


@pytest.mark.asyncio(loop_scope="function")
async def test_fix_all_source_action_link_and_plain_message(client: LanguageClient):
    text = CODE.replace("    return 0;", "    cudaThreadSynchronize();\n    return 0;")
    uri, diags = await _open(client, "all.cu", text)
    diag = next(d for d in diags if d.code == "CM501")
    assert diag.message == diag.message.lstrip("[*~?] ") and not diag.message.startswith("[")
    assert diag.code_description is not None and diag.code_description.href.startswith("https://")
    got = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri), range=types.Range(types.Position(0, 0), types.Position(0, 0)),
        context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll])))
    assert [a.kind for a in got or []] == [types.CodeActionKind.SourceFixAll]
    assert _apply(text, got[0].edit) == text.replace("cudaThreadSynchronize", "cudaDeviceSynchronize")
