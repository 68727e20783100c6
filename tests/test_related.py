"""Related locations (`Finding.related`): the uses of a texture or surface reference whose CM601/CM602 finding is
at its declaration, where nvcc 13.0 reports its errors. Found in the file, through macros at their expansions
and in the files of the run that include the declaring header (match/migrations/texture_related.py); carried by
every output (text notes, JSON, JSON Lines, SARIF relatedLocations, JUnit, GitHub annotations, HTML, merge) and
by the result cache; never part of a finding's identity (fingerprint, baseline)."""

from __future__ import annotations

import dataclasses
import json
import pickle
import sqlite3
from pathlib import Path

import jsonschema
import pytest

from cudamigrate.findings.model import Finding, Related
from cudamigrate.match.migrations.texture_related import MAX_RELATED
from cudamigrate.pipeline import result_cache as cache
from cudamigrate.report import github, html, json as json_report, jsonlines, junit, sarif, text
from cudamigrate.report.model import Run
from cudamigrate.workflow.merge import read_shard

from .conftest import FIXTURES, ROOT
from .helpers import all_rules, run_cli, scan_code

SARIF_SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
REPORT_SCHEMA = json.loads((ROOT / "cudamigrate" / "schemas" / "report.schema.json").read_text())

# a reference read directly, through a macro, and through a macro that expands that macro; an attribute set,
# bound and unbound
CODE = """\
#include <cuda_runtime.h>
texture<float, 1, cudaReadModeElementType> texIn;
#define FETCH(i) tex1Dfetch(texIn, i)
#define TWICE(i) (FETCH(i) + FETCH(i))
__global__ void k(float *out) {
    out[0] = tex1Dfetch(texIn, 0);
    out[1] = FETCH(1);
    out[2] = TWICE(2);
}
void run(float *d, float *out) {
    texIn.filterMode = cudaFilterModePoint;
    cudaBindTexture(0, texIn, d, 64 * sizeof(float));
    k<<<1, 1>>>(out);
    cudaUnbindTexture(texIn);
}
"""
USES = [(6, "read by `tex1Dfetch`"), (7, "through macro `FETCH`"), (8, "through macro `TWICE`"),
        (11, "its `filterMode` set"), (12, "bound by `cudaBindTexture`"), (14, "unbound by `cudaUnbindTexture`")]


def _texture_finding(code: str = CODE, name: str = "t.cu") -> Finding:
    found = [f for f in scan_code(code, ["CM601"], name) if f.rule_id == "CM601"]
    assert len(found) == 1
    return found[0]


def _run(tmp_path: Path) -> Run:
    p = tmp_path / "t.cu"
    p.write_text(CODE)
    f = _texture_finding()
    f = dataclasses.replace(f, path=str(p), related=tuple(dataclasses.replace(r, path=str(p)) for r in f.related))
    return Run([f], [], 1, all_rules(), (13, 0), sources={str(p): CODE.encode()})


# ----------------------------------------------------------------------------- the record
def test_related_is_a_frozen_hashable_record_that_findings_default_to_none_of():
    r = Related("a.cu", 3, 5, 3, 10, "texture reference `t` used here (read by `tex2D`)")
    assert hash(r) == hash(Related.from_dict(json.loads(json.dumps(r.to_dict()))))
    assert Related.from_dict(r.to_dict()) == r
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.line = 4  # type: ignore[misc]
    plain = scan_code("void f() { cudaThreadSynchronize(); }\n", ["CM501"])[0]
    assert plain.related == ()
    f = _texture_finding()
    assert isinstance(f.related, tuple) and all(isinstance(x, Related) for x in f.related)
    json.dumps(f.to_dict())  # serialisable as it is
    assert pickle.loads(pickle.dumps(f)).related == f.related


# ----------------------------------------------------------------------------- what the texture migration relates
def test_every_use_in_the_file_is_related_macro_uses_at_their_expansions():
    f = _texture_finding()
    assert f.line == 2
    assert [(r.line, r.message) for r in f.related] == [
        (line, f"texture reference `texIn` used here ({what})") for line, what in USES]
    assert all(r.path == f.path for r in f.related)
    read = f.related[0]
    assert (read.column, read.end_line, read.end_column) == (25, 6, 30)  # `texIn` in `tex1Dfetch(texIn, 0)`
    twice = f.related[2]
    assert (twice.column, twice.end_column) == (14, 22)  # the expansion `TWICE(2)`, not the #define


def test_a_use_finding_relates_its_other_uses_and_a_surface_its_reads_and_writes():
    hdr = "texture<float, 2> texImg;\n"
    code = ('#include "tex.cuh"\n__global__ void k(float *o) { o[0] = tex2D(texImg, 0.5f, 0.5f); }\n'
            "void b(cudaArray_t a) { cudaBindTextureToArray(texImg, a); }\n")
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "tex.cuh").write_text(hdr)
        (Path(d) / "k.cu").write_text(code)
        found = [f for f in scan_code(code, ["CM601"], str(Path(d) / "k.cu")) if f.rule_id == "CM601"]
    assert [(f.line, [(r.line, r.message) for r in f.related]) for f in found] == [
        (2, [(3, "texture reference `texImg` used here (bound by `cudaBindTextureToArray`)")])]
    surf = ("surface<void, cudaSurfaceType2D> s;\n__global__ void k(float *o) {\n  float v;\n  surf2Dread(&v, s, 0, 0);\n"
            "  surf2Dwrite(v, s, 4, 0);\n}\nvoid b(cudaArray_t a) { cudaBindSurfaceToArray(s, a); }\n")
    f = [x for x in scan_code(surf, ["CM602"]) if x.rule_id == "CM602"][0]
    assert [(r.line, r.message) for r in f.related] == [
        (4, "surface reference `s` used here (read by `surf2Dread`)"),
        (5, "surface reference `s` used here (written by `surf2Dwrite`)"),
        (7, "surface reference `s` used here (bound by `cudaBindSurfaceToArray`)")]


def test_lookalikes_are_not_uses():
    code = CODE.replace("void run(float *d, float *out) {",
                        "struct S { int texIn; };\nint g(S s) { return s.texIn; }  // texIn\n"
                        "void run(float *d, float *out) {\n    const char *n = \"texIn\";")
    f = _texture_finding(code)
    assert [r.message.split("(")[-1] for r in f.related] == [what + ")" for _, what in USES]


def test_related_locations_are_bounded_and_the_last_says_how_many_more():
    n = MAX_RELATED + 10
    code = "texture<float, 1> t;\n__global__ void k(float *o) {\n" + "".join(
        f"    o[{i}] = tex1Dfetch(t, {i});\n" for i in range(n)) + "}\n"
    f = _texture_finding(code)
    assert len(f.related) == MAX_RELATED
    assert [r.line for r in f.related] == list(range(3, 3 + MAX_RELATED))
    assert f.related[-1].message == "texture reference `t` used here (read by `tex1Dfetch`); 10 more use(s) not listed"
    assert not any("more" in r.message for r in f.related[:-1])


def _project_json(path: Path) -> dict:
    r = run_cli("scan", "--format", "json", "--no-cache", "--select", "CM601,CM602,CM603", "-j", "1", path.name,
                cwd=path.parent)
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, REPORT_SCHEMA)
    return doc


def _related_of(doc: dict, path_end: str, line: int) -> list[tuple[str, int, str]]:
    f = next(f for f in doc["findings"] if f["path"].endswith(path_end) and f["line"] == line)
    return [(r["path"].split("/", 1)[1], r["line"], r["message"]) for r in f["related"]]


def test_uses_in_the_files_that_include_the_declaring_header_are_related():
    doc = _project_json(FIXTURES / "texture" / "project")
    assert _related_of(doc, "/textures.cuh", 5) == [
        ("kernels.cuh", 10, "texture reference `texSignal` used here (read by `tex1Dfetch`)"),
        ("kernels.cuh", 31, "texture reference `texSignal` used here (read by `tex1Dfetch`)"),
        ("main.cu", 60, "texture reference `texSignal` used here (bound by `cudaBindTexture`)"),
        ("main.cu", 83, "texture reference `texSignal` used here (unbound by `cudaUnbindTexture`)")]
    # the includer's own finding (at its first use) relates its other uses there
    assert _related_of(doc, "/main.cu", 60) == [
        ("main.cu", 83, "texture reference `texSignal` used here (unbound by `cudaUnbindTexture`)")]


def test_a_macro_of_the_header_expanded_in_an_including_file_is_related_there():
    """textures.cuh declares `texIn` in both branches of an `#if` and reads it in `FETCH_IN(i)`, which kernels.cuh
    expands; main.cu binds it inside `CHECK(...)`."""
    doc = _project_json(FIXTURES / "texture" / "project-macros")
    assert _related_of(doc, "/textures.cuh", 8) == [
        ("textures.cuh", 11, "texture reference `texIn` declared again here"),  # the `#else` branch
        ("kernels.cuh", 6, "texture reference `texIn` used here (through macro `FETCH_IN`)"),
        ("main.cu", 13, "texture reference `texIn` used here (bound by `cudaBindTexture`)"),
        ("main.cu", 16, "texture reference `texIn` used here (unbound by `cudaUnbindTexture`)")]


# ----------------------------------------------------------------------------- identity
def test_related_locations_change_no_fingerprint_and_no_baseline(tmp_path):
    one = CODE.replace("    out[1] = FETCH(1);\n    out[2] = TWICE(2);\n", "")
    (tmp_path / "t.cu").write_text(one)
    a = _texture_finding(one)
    b = _texture_finding()
    assert len(a.related) < len(b.related)
    assert a.fingerprint == b.fingerprint == b.compute_fingerprint(CODE.encode())
    base = tmp_path / "baseline.json"
    r = run_cli("scan", "--select", "CM601", "--write-baseline", base, "t.cu", cwd=tmp_path)
    assert r.exit_code in (0, 1), r.output
    assert "related" not in base.read_text() and "note" not in base.read_text()
    (tmp_path / "t.cu").write_text(CODE)  # more uses, more related locations: the same finding
    r = run_cli("scan", "--select", "CM601", "--baseline", base, "t.cu", cwd=tmp_path)
    assert r.exit_code == 0 and "CM601" not in r.output, r.output


# ----------------------------------------------------------------------------- the outputs
def test_text_output_shows_notes_under_the_finding(tmp_path):
    run = _run(tmp_path)
    p = run.findings[0].path
    out = text.render(run).splitlines()
    i = next(i for i, ln in enumerate(out) if " CM601 " in ln)
    assert out[i + 1].startswith("    | texture<float")
    assert out[i + 2 : i + 2 + len(USES)] == [
        f"    {p}:{r.line}:{r.column}: note: {r.message}" for r in run.findings[0].related]


def test_json_and_json_lines_carry_related(tmp_path):
    run = _run(tmp_path)
    doc = json_report.document(run)
    jsonschema.validate(doc, REPORT_SCHEMA)
    rel = doc["findings"][0]["related"]
    assert [(r["line"], r["message"]) for r in rel] == [(r.line, r.message) for r in run.findings[0].related]
    assert set(rel[0]) == {"path", "line", "column", "end_line", "end_column", "message"}
    line = json.loads(jsonlines.render(run).splitlines()[0])
    assert line["related"] == rel


def test_sarif_carries_related_locations_with_ids_and_messages(tmp_path):
    run = _run(tmp_path)
    doc = sarif.document(run)
    jsonschema.validate(doc, SARIF_SCHEMA)
    locs = doc["runs"][0]["results"][0]["relatedLocations"]
    assert [x["id"] for x in locs] == list(range(len(USES)))
    first = locs[0]
    assert first["message"]["text"] == "texture reference `texIn` used here (read by `tex1Dfetch`)"
    assert first["physicalLocation"]["region"] == {"startLine": 6, "startColumn": 25, "endLine": 6, "endColumn": 30}
    assert first["physicalLocation"]["artifactLocation"] == sarif.artifact_location(run.findings[0].path)
    plain = dataclasses.replace(run.findings[0], related=())
    assert "relatedLocations" not in sarif.result(plain, {"CM601": 0}, None)


def test_junit_github_and_html_carry_related(tmp_path):
    run = _run(tmp_path)
    p = run.findings[0].path
    assert f"{p}:12:24: note: texture reference `texIn` used here (bound by `cudaBindTexture`)" in junit.render(run)
    gh = github.render(run)
    assert github.escape_data(f"\nnote: {p}:12:24: texture reference `texIn` used here (bound by `cudaBindTexture`)") in gh
    data = html.build_data(run)
    row = data["findings"][0]
    rel = row[data["fields"].index("related")]
    assert [(x[0], x[1], x[2], data["messages"][x[3]]) for x in rel] == [
        (p, r.line, r.column, r.message) for r in run.findings[0].related]
    assert rel[0][4] == "    out[0] = tex1Dfetch(texIn, 0);"  # the related line, shown in the details
    assert "Related locations" in html.render(run)


def test_merge_restores_related_from_json_and_sarif(tmp_path):
    run = _run(tmp_path)
    want = run.findings[0].related
    for name, body in (("r.json", json_report.render(run)), ("r.sarif", sarif.render(run))):
        (tmp_path / name).write_text(body)
        got = read_shard(tmp_path / name, {}).findings[0].related
        assert got == want, name


# ----------------------------------------------------------------------------- the result cache
def test_related_survive_the_result_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAMIGRATE_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "t.cu").write_text(CODE)
    first = run_cli("scan", "--format", "json", "-j", "1", "src", cwd=tmp_path)
    again = run_cli("scan", "--format", "json", "-j", "1", "src", cwd=tmp_path)
    fresh = run_cli("scan", "--format", "json", "-j", "1", "--no-cache", "src", cwd=tmp_path)
    rel = [f["related"] for f in json.loads(first.stdout)["findings"] if f["rule"] == "CM601"]
    assert len(rel) == 1 and len(rel[0]) == len(USES)
    assert first.stdout == again.stdout == fresh.stdout
    f = _texture_finding()
    assert cache.unpack(cache.pack(f)).related == f.related


def test_a_cache_of_the_format_before_related_is_dropped(tmp_path):
    """Findings pickled before `related` existed: the cache format version says so, and they are not read."""
    assert cache.SCHEMA >= 3
    path = tmp_path / "results.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE meta (k TEXT PRIMARY KEY, v TEXT)")
    db.execute("INSERT INTO meta VALUES ('schema', '2')")
    db.execute("CREATE TABLE entries (key TEXT PRIMARY KEY, content TEXT, shared TEXT, depset TEXT, value BLOB,"
               " size INTEGER, used REAL)")
    db.execute("INSERT INTO entries VALUES ('k', 'c', '', '', ?, 1, 0)", (cache.pack("old"),))
    db.commit()
    db.close()
    rc = cache.ResultCache(path)
    assert rc.lookup("k", "c") is None
    rc.close()
