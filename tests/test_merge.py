"""`scan --shard I/N` + `cudamigrate merge` give the report of one run (cudamigrate/shard.py, merge.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from cudamigrate.pipeline.shard import ShardError, parse_shard, shard_files

from .helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
SARIF_SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
ORACLE = Path("/work/oracle/v11.8")  # a public code base (NVIDIA cuda-samples v11.8), where this machine has it


def _key(d: dict) -> str:
    return json.dumps(d, sort_keys=True)


def _shards_and_whole(tree: Path, out: Path, n: int = 4, fmt: str = "json") -> tuple[list[Path], Path]:
    """The tree scanned whole and in n shards (at -j 1: the split is what is tested, not the pool)."""
    whole = out / f"whole.{fmt}"
    run_cli("scan", ".", "--no-cache", "-j", "1", "--format", fmt, "-o", whole, cwd=tree)
    parts = []
    for i in range(1, n + 1):
        p = out / f"shard{i}.{fmt}"
        r = run_cli("scan", ".", "--no-cache", "-j", "1", "--shard", f"{i}/{n}", "--format", fmt, "-o", p, cwd=tree)
        assert r.exit_code in (0, 1), r.output
        parts.append(p)
    return parts, whole


def _assert_same_json(parts: list[Path], whole: Path, tree: Path, out: Path) -> dict:
    merged = out / "merged.json"
    r = run_cli("merge", *parts, "-o", merged, cwd=tree)
    assert r.exit_code == 0, r.output
    a, b = json.loads(whole.read_text()), json.loads(merged.read_text())
    assert sorted(map(_key, a["findings"])) == sorted(map(_key, b["findings"]))  # field for field, byte for byte
    assert a["summary"] == b["summary"] and sorted(a["errors"]) == sorted(b["errors"])
    shard_files_scanned = [json.loads(p.read_text())["summary"]["files_scanned"] for p in parts]
    assert sum(shard_files_scanned) == a["summary"]["files_scanned"] and max(shard_files_scanned) < a["summary"]["files_scanned"]
    return b


def test_shards_of_the_example_app_merge_to_one_run(tmp_path):
    tree = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", tree)
    parts, whole = _shards_and_whole(tree, tmp_path)
    merged = _assert_same_json(parts, whole, tree, tmp_path)
    assert merged["summary"]["findings"] > 0
    # SARIF from the JSON shards, and from SARIF shards: schema-valid, the same results as one SARIF run
    sparts, swhole = _shards_and_whole(tree, tmp_path, fmt="sarif")
    single = json.loads(swhole.read_text())["runs"][0]
    for inputs in (parts, sparts):
        out = tmp_path / "merged.sarif"
        assert run_cli("merge", *inputs, "--format", "sarif", "-o", out, cwd=tree).exit_code == 0
        doc = json.loads(out.read_text())
        jsonschema.validate(doc, SARIF_SCHEMA)
        assert sorted(map(_key, doc["runs"][0]["results"])) == sorted(map(_key, single["results"]))
        assert doc["runs"][0]["properties"] == single["properties"]
    # HTML from the shards: the totals of one run
    html = tmp_path / "merged.html"
    assert run_cli("merge", *parts, "--format", "html", "-o", html, cwd=tree).exit_code == 0
    assert f"{merged['summary']['findings']} findings" in html.read_text() or str(merged["summary"]["findings"]) in html.read_text()


@pytest.mark.skipif(not ORACLE.is_dir(), reason="needs NVIDIA cuda-samples v11.8 at /work/oracle/v11.8")
def test_shards_of_cuda_samples_merge_to_one_run(tmp_path):
    tree = tmp_path / "samples"
    shutil.copytree(ORACLE / "Samples", tree, ignore=shutil.ignore_patterns("*.vcxproj*", "*.sln", "*.ppm", "*.pgm",
                                                                           "*.bmp", "*.raw", "*.dat", "*.bin"))
    parts, whole = _shards_and_whole(tree, tmp_path)
    merged = _assert_same_json(parts, whole, tree, tmp_path)
    assert merged["summary"]["findings"] > 100
    out = tmp_path / "merged.sarif"
    assert run_cli("merge", *parts, "--format", "sarif", "-o", out, cwd=tree).exit_code == 0
    jsonschema.validate(json.loads(out.read_text()), SARIF_SCHEMA)


def test_shard_split_is_a_deterministic_partition():
    files = [Path(f"d{i % 7}/f{i}.cu") for i in range(500)]
    parts = [shard_files(files, i, 4) for i in range(1, 5)]
    assert sorted(p for part in parts for p in part) == sorted(files)  # every file in exactly one shard
    assert all(60 < len(part) < 190 for part in parts)  # spread, not all in one
    assert shard_files(list(reversed(files)), 2, 4) == list(reversed(parts[1]))  # by name, not by position
    assert shard_files(files + [Path("new.cu")], 3, 4)[: len(parts[2])] == parts[2]  # a new file moves no other


@pytest.mark.parametrize("bad", ["0/4", "5/4", "1/0", "x", "1/2/3"])
def test_bad_shard_is_a_usage_error(bad, tmp_path):
    with pytest.raises(ShardError):
        parse_shard(bad)
    (tmp_path / "a.cu").write_text("int x;\n")
    r = run_cli("scan", "--shard", bad, "a.cu", cwd=tmp_path)
    assert r.exit_code == 2 and "--shard" in r.output


def test_merge_rejects_what_is_not_a_cudamigrate_report(tmp_path):
    (tmp_path / "x.json").write_text('{"a": 1}')
    r = run_cli("merge", tmp_path / "x.json")
    assert r.exit_code == 2 and "neither a cudamigrate JSON report nor a SARIF report" in r.output


def test_merge_rejects_reports_for_different_targets(tmp_path):
    (tmp_path / "a.cu").write_text("int main() { cudaThreadSynchronize(); }\n")
    for t in ("12.0", "13.0"):
        run_cli("scan", "a.cu", "--target-cuda", t, "--format", "json", "-o", tmp_path / f"{t}.json", cwd=tmp_path)
    r = run_cli("merge", tmp_path / "12.0.json", tmp_path / "13.0.json", cwd=tmp_path)
    assert r.exit_code == 2 and "different CUDA targets (12.0, 13.0)" in r.output, r.output


def test_sharded_scan_keeps_the_whole_project_index(tmp_path, monkeypatch):
    """A shard's project index holds every file of the run, not only the shard's (headers' includers)."""
    from cudamigrate.cli import scan as cli  # the module whose `setup` the scan command calls

    for i in range(8):
        (tmp_path / f"f{i}.cu").write_text("int x;\n")
    seen = []
    real = cli.setup

    def spy(req, pre=None):
        out = real(req, pre)
        seen.append((len(out.files), len(out.engine.project.files)))
        return out

    monkeypatch.setattr(cli, "setup", spy)
    run_cli("scan", ".", "--shard", "1/4", "--no-cache", cwd=tmp_path)
    assert seen and seen[0][0] < 8 and seen[0][1] == 8


def test_show_files_of_the_shards_partition_the_run(tmp_path):
    for i in range(12):
        (tmp_path / f"f{i}.cu").write_text("int x;\n")
    whole = run_cli("scan", "--show-files", ".", cwd=tmp_path).output.splitlines()
    parts = [run_cli("scan", "--show-files", "--shard", f"{i}/3", ".", cwd=tmp_path).output.splitlines() for i in (1, 2, 3)]
    assert sorted(sum(parts, [])) == sorted(whole) and len(whole) == 12 and all(len(p) < 12 for p in parts)


def _small_shards(tmp_path: Path, n: int = 2, fmt: str = "json") -> tuple[Path, list[Path]]:
    """A tree of four files with findings in every one, scanned in n shards (reports beside the tree)."""
    tree = tmp_path / "tree"
    tree.mkdir(exist_ok=True)
    for i in range(4):
        (tree / f"f{i}.cu").write_text(f"int main{i}() {{ cudaThreadSynchronize(); return 0; }}\n")
    parts = []
    for i in range(1, n + 1):
        p = tmp_path / f"s{i}-of-{n}.{fmt}"
        r = run_cli("scan", ".", "-j", "1", "--shard", f"{i}/{n}", "--format", fmt, "-o", p, cwd=tree)
        assert r.exit_code in (0, 1), r.output
        parts.append(p)
    return tree, parts


def _one_error_line(r) -> str:
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and "Traceback" not in r.output, r.output
    return lines[0]


def test_shard_reports_record_their_identity(tmp_path):
    tree, (a, b) = _small_shards(tmp_path)
    ia, ib = json.loads(a.read_text())["shard"], json.loads(b.read_text())["shard"]
    assert (ia["index"], ia["count"], ib["index"], ib["count"]) == (1, 2, 2, 2)
    assert ia["files"] == ib["files"] and ia["config"] == ib["config"] and ia["root"] == ib["root"] == str(tree)
    whole = tmp_path / "whole.json"
    run_cli("scan", ".", "-j", "1", "--format", "json", "-o", whole, cwd=tree)
    assert "shard" not in json.loads(whole.read_text())  # a whole run's report is as it was


def test_merge_refuses_duplicated_missing_and_mixed_shards(tmp_path):
    tree, (a, b) = _small_shards(tmp_path)
    assert run_cli("merge", a, b, cwd=tree).exit_code == 0
    assert "are both shard 1/2" in _one_error_line(run_cli("merge", a, a, b, cwd=tree))
    assert "shard(s) 2/2 missing: 1 of 2 shard reports given" in _one_error_line(run_cli("merge", a, cwd=tree))
    whole = tmp_path / "whole.json"
    run_cli("scan", ".", "-j", "1", "--format", "json", "-o", whole, cwd=tree)
    assert "is the report of a whole run" in _one_error_line(run_cli("merge", whole, a, b, cwd=tree))
    _, (c1, c2, c3) = _small_shards(tmp_path, n=3)
    assert "(a different shard count)" in _one_error_line(run_cli("merge", a, b, c3, cwd=tree))
    (tree / "f9.cu").write_text("int g() { cudaThreadSynchronize(); return 0; }\n")
    other = tmp_path / "other.json"
    run_cli("scan", ".", "-j", "1", "--shard", "2/2", "--format", "json", "-o", other, cwd=tree)
    assert "(a different file set)" in _one_error_line(run_cli("merge", a, other, cwd=tree))
    (tree / "f9.cu").unlink()
    run_cli("scan", ".", "-j", "1", "--shard", "2/2", "--select", "CM5", "--format", "json", "-o", other, cwd=tree)
    assert "(a different configuration or rule set)" in _one_error_line(run_cli("merge", a, other, cwd=tree))


def test_merge_gates_on_findings_with_a_flag(tmp_path):
    tree, parts = _small_shards(tmp_path)
    assert run_cli("merge", *parts, "-o", tmp_path / "m.json", cwd=tree).exit_code == 0
    assert run_cli("merge", *parts, "--fail-on-findings", "-o", tmp_path / "m.json", cwd=tree).exit_code == 1
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "ok.cu").write_text("int main() { return 0; }\n")
    r = run_cli("scan", ".", "--shard", "1/1", "--format", "json", "-o", tmp_path / "c.json", cwd=clean)
    assert r.exit_code == 0, r.output
    assert run_cli("merge", tmp_path / "c.json", "--fail-on-findings", "-o", tmp_path / "m.json", cwd=clean).exit_code == 0


def test_merge_outside_the_checkout_keeps_the_source_root_and_snippets(tmp_path):
    tree, parts = _small_shards(tmp_path, fmt="sarif")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for inputs in (parts, _small_shards(tmp_path)[1]):
        out = elsewhere / "m.sarif"
        r = run_cli("merge", *inputs, "--format", "sarif", "-o", out, cwd=elsewhere)
        assert r.exit_code == 0, r.output
        run = json.loads(out.read_text())["runs"][0]
        assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tree.as_uri() + "/"
        regions = [res["locations"][0]["physicalLocation"]["region"] for res in run["results"]]
        assert len(regions) == 4 and all(reg.get("snippet", {}).get("text") == "cudaThreadSynchronize()"
                                          for reg in regions), regions


def test_merge_of_a_hostile_or_foreign_report_is_one_line(tmp_path):
    tree, (a, b) = _small_shards(tmp_path)
    doc = json.loads(a.read_text())
    nan = tmp_path / "nan.json"
    nan.write_text(a.read_text().replace('"roi": ', '"roi": NaN, "x": ', 1))
    assert "NaN is not a number a report may hold" in _one_error_line(run_cli("merge", nan, b, cwd=tree))
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    assert "nested too deeply" in _one_error_line(run_cli("merge", deep, cwd=tree))
    doc["version"] = "0.0.1"
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    assert "written by cudamigrate 0.0.1, not by this version" in _one_error_line(run_cli("merge", old, b, cwd=tree))


def test_shard_reports_are_valid_against_the_report_schema(tmp_path):
    schema = json.loads((ROOT / "cudamigrate" / "schemas" / "report.schema.json").read_text())
    _, parts = _small_shards(tmp_path)
    for p in parts:
        jsonschema.validate(json.loads(p.read_text()), schema)
