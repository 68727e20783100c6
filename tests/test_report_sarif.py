"""SARIF 2.1.0: schema-valid, rule metadata, regions and fixes that agree with the byte edits, stable fingerprints."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from .reportutil import EXAMPLE, scan
from .test_report_html import EVIL, EVIL_NAME

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())

MULTIBYTE = (
    "\ufeff#include <cuda_runtime.h>\n"
    "void f(float *d, float *h, int n, cudaStream_t other) {  /* meets another stream */\n"
    "  /* é日本 */ cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, 0);  // ü\n"
    "  /* 😀 */ cudaMemsetAsync(d, 0, n);\n"
    "}\n"
)


def sarif(tmp_path, *paths):
    code, text = scan([*paths, "--format", "sarif"], tmp_path / "out.sarif")
    doc = json.loads(text)
    jsonschema.validate(doc, SCHEMA)
    return doc


def write(tmp_path, name, text):
    d = tmp_path / "src"
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_bytes(text.encode("utf-8"))
    return p


def offset_of(text: str, line: int, col: int) -> int:
    """Index into `text` of a 1-based line and 1-based code-point column."""
    lines = text.split("\n")
    return sum(len(x) + 1 for x in lines[: line - 1]) + col - 1


def apply_regions(text: str, reps: list[dict]) -> str:
    for r in sorted(reps, key=lambda r: (r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"]), reverse=True):
        g = r["deletedRegion"]
        a, b = offset_of(text, g["startLine"], g["startColumn"]), offset_of(text, g["endLine"], g["endColumn"])
        text = text[:a] + r["insertedContent"]["text"] + text[b:]
    return text


def apply_bytes(data: bytes, reps: list[dict]) -> bytes:
    for r in sorted(reps, key=lambda r: r["deletedRegion"]["byteOffset"], reverse=True):
        g = r["deletedRegion"]
        data = data[: g["byteOffset"]] + r["insertedContent"]["text"].encode() + data[g["byteOffset"] + g["byteLength"]:]
    return data


def test_example_is_valid_sarif_with_rules(tmp_path):
    doc = sarif(tmp_path, EXAMPLE)
    run = doc["runs"][0]
    assert doc["version"] == "2.1.0"
    rules = run["tool"]["driver"]["rules"]
    assert run["results"]
    for res in run["results"]:
        rule = rules[res["ruleIndex"]]
        assert rule["id"] == res["ruleId"]
        assert res["level"] in ("error", "warning", "note")
        assert res["partialFingerprints"]["cudamigrate/v1"]
        reg = res["locations"][0]["physicalLocation"]["region"]
        assert reg["startLine"] >= 1 and reg["startColumn"] >= 1
    for rule in rules:
        for k in ("id", "name", "shortDescription", "fullDescription", "help", "properties"):
            assert k in rule, (rule["id"], k)
        assert rule["help"]["text"] and rule["help"]["markdown"]
        assert "family" in rule["properties"] and "fix_applicability" in rule["properties"]
        assert "deprecated_in" in rule["properties"] and "removed_in" in rule["properties"]
    assert any(r.get("helpUri", "").startswith("https://") for r in rules)


def test_regions_and_fixes_agree_with_bytes_despite_bom_and_multibyte(tmp_path):
    p = write(tmp_path, "mb.cu", MULTIBYTE)
    doc = sarif(tmp_path, p)
    data = p.read_bytes()
    text = data.decode("utf-8")[1:]  # the BOM is not a column
    results = doc["runs"][0]["results"]
    assert len(results) == 2
    for res in results:
        reg = res["locations"][0]["physicalLocation"]["region"]
        a = offset_of(text, reg["startLine"], reg["startColumn"])
        b = offset_of(text, reg["endLine"], reg["endColumn"])
        by = data[reg["byteOffset"] : reg["byteOffset"] + reg["byteLength"]].decode()
        assert text[a:b] == by == reg["snippet"]["text"]
        assert by.startswith(("cudaMemcpyAsync", "cudaMemsetAsync"))
        reps = res["fixes"][0]["artifactChanges"][0]["replacements"]
        via_bytes = apply_bytes(data, reps).decode("utf-8")[1:]
        assert apply_regions(text, reps) == via_bytes
        assert "cudaStreamPerThread" in via_bytes


def test_fingerprints_survive_line_shifts(tmp_path):
    p = write(tmp_path, "a.cu", MULTIBYTE)
    before = sarif(tmp_path, p)["runs"][0]["results"]
    p.write_bytes(("// new\n// lines\n" + MULTIBYTE.lstrip("\ufeff")).encode())
    after = sarif(tmp_path, p)["runs"][0]["results"]
    fp = lambda rs: sorted(r["partialFingerprints"]["cudamigrate/v1"] for r in rs)  # noqa: E731
    assert fp(before) == fp(after)
    assert sorted(r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in after) == \
        sorted(r["locations"][0]["physicalLocation"]["region"]["startLine"] + 2 for r in before)


def test_hostile_names_and_text_stay_valid(tmp_path):
    p = write(tmp_path, EVIL_NAME, EVIL)
    doc = sarif(tmp_path, p)
    uri = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert "<" not in uri and "%3C" in uri


def test_empty_run_is_valid(tmp_path):
    p = write(tmp_path, "clean.cu", "int main() { return 0; }\n")
    doc = sarif(tmp_path, p)
    assert doc["runs"][0]["results"] == []


@pytest.mark.parametrize("path,expect", [("a b/c#d.cu", "a%20b/c%23d.cu"), ("x/y.cu", "x/y.cu")])
def test_artifact_uris(path, expect):
    from cudamigrate.report.sarif import artifact_location

    assert artifact_location(path) == {"uri": expect, "uriBaseId": "%SRCROOT%"}
    assert artifact_location("/abs/" + path)["uri"].startswith("file:///abs/")
