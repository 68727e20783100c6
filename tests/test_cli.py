"""The command line as users and CI see it: exit codes, formats, bad input, config."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from cudamigrate.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
LEGACY = b"""#include <cuda_runtime.h>
int main() {
  float *d; cudaStream_t s; cudaStreamCreate(&s);
  cudaMalloc(&d, 16);
  cudaMemsetAsync(d, 0, 16, 0);
  return 0;
}
"""
CLEAN = b"""#include <cuda_runtime.h>
int main() { float *d; cudaMalloc(&d, 16); cudaMemsetAsync(d, 0, 16, cudaStreamPerThread); return 0; }
"""


def run(*args, cwd=None):
    runner = CliRunner()
    if cwd is not None:
        old = os.getcwd()
        os.chdir(cwd)
    try:
        return runner.invoke(main, list(args), catch_exceptions=False)
    finally:
        if cwd is not None:
            os.chdir(old)


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.cu").write_bytes(LEGACY)
    (tmp_path / "src" / "b.cpp").write_bytes(CLEAN)
    return tmp_path


def test_exit_codes(tree):
    assert run("scan", str(tree / "src" / "b.cpp")).exit_code == 0
    r = run("scan", str(tree / "src"))
    assert r.exit_code == 1
    assert "CM101" in r.output
    assert run("scan", "--exit-zero", str(tree / "src")).exit_code == 0
    assert run("scan", "--target-cuda", "thirteen", str(tree)).exit_code == 2
    assert run("scan", "--format", "nope", str(tree)).exit_code == 2
    assert run("explain", "CM9999").exit_code == 2


def test_json_output_matches_schema(tree):
    r = run("scan", "--format", "json", str(tree / "src"))
    doc = json.loads(r.output)
    schema = json.loads((ROOT / "cudamigrate" / "schemas" / "report.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert doc["summary"]["findings"] == 1
    f = doc["findings"][0]
    # a legacy-stream call next to a created stream: the edit is kept as a display-only suggestion
    assert f["rule"] == "CM101" and f["line"] == 5 and f["applicability"] == "display-only"
    assert f["cost"]["roi"] > 0 and f["fix"]["edits"] and f["fix"]["applicability"] == "display-only"


def test_apply_display_only_needs_rules_named_by_id(tree):
    before = (tree / "src" / "a.cu").read_bytes()
    for sel in ([], ["--select", "streams"], ["--select", "CM1"], ["--select", "ALL"], ["--select", "CM501"]):
        r = run("fix", *sel, "--apply-display-only", str(tree / "src"))
        assert r.exit_code == 2 and "--apply-display-only needs the rules named by id" in r.output, (sel, r.output)
    assert (tree / "src" / "a.cu").read_bytes() == before
    r = run("fix", "--extend-select", "CM101", "--apply-display-only", "--diff", str(tree / "src"))
    assert "cudaStreamPerThread" in r.output


def test_display_only_in_text_and_sarif_reports(tree):
    r = run("scan", str(tree / "src"))
    assert "CM101 [?]" in r.output and "suggested edit that `fix` does not apply" in r.output
    doc = json.loads(run("scan", "--format", "sarif", str(tree / "src")).output)
    res = doc["runs"][0]["results"][0]
    assert res["properties"]["applicability"] == "display-only"
    assert "display-only suggestion" in res["fixes"][0]["description"]["text"]


def test_select_and_ignore(tree):
    assert run("scan", "--ignore", "CM101", str(tree / "src")).exit_code == 0
    assert run("scan", "--select", "CM102", str(tree / "src")).exit_code == 0
    assert run("scan", "--select", "streams", str(tree / "src")).exit_code == 1


def test_statistics(tree):
    r = run("scan", "--statistics", str(tree / "src"))
    assert "CM101" in r.output and r.output.strip().startswith("1")


def test_fix_dry_run_and_diff_do_not_write(tree):
    before = (tree / "src" / "a.cu").read_bytes()
    r = run("fix", "--unsafe-fixes", "--diff", str(tree / "src"))
    assert "cudaStreamPerThread" not in r.stdout  # display-only: never applied by --unsafe-fixes (the diff)
    r = run("fix", "--select", "CM101", "--apply-display-only", "--diff", str(tree / "src"))
    assert "+  cudaMemsetAsync(d, 0, 16, cudaStreamPerThread);" in r.output
    r = run("fix", "--select", "CM101", "--apply-display-only", "--dry-run", str(tree / "src"))
    assert (tree / "src" / "a.cu").read_bytes() == before


def test_fix_without_unsafe_leaves_unsafe_findings(tree):
    before = (tree / "src" / "a.cu").read_bytes()
    r = run("fix", str(tree / "src"))
    assert r.exit_code == 1
    assert (tree / "src" / "a.cu").read_bytes() == before
    assert "1 with a display-only suggested edit" in r.output
    r = run("fix", "--unsafe-fixes", str(tree / "src"))
    assert r.exit_code == 1 and (tree / "src" / "a.cu").read_bytes() == before


def test_fix_writes_keeps_mode_and_is_idempotent(tree):
    p = tree / "src" / "a.cu"
    os.chmod(p, 0o640)
    r = run("fix", "--select", "CM101", "--apply-display-only", str(tree / "src"))
    assert r.exit_code == 0, r.output
    assert b"cudaStreamPerThread" in p.read_bytes()
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640
    once = p.read_bytes()
    run("fix", "--select", "CM101", "--apply-display-only", str(tree / "src"))
    assert p.read_bytes() == once
    assert not list((tree / "src").glob(".*cudamigrate*"))  # no temp files left


def test_bad_inputs_get_one_line_errors_and_others_still_scanned(tree):
    src = tree / "src"
    (src / "bin.cu").write_bytes(b"\x7fELF\x00\x00\x01cudaMemsetAsync")
    (src / "latin1.cu").write_bytes(b"// caf\xe9\nvoid f() { cudaThreadSynchronize(); }  // Jos\xe9\n")
    (src / "trunc.cu").write_bytes(b"int main() { cudaStreamCreate(&s); cudaMemsetAsync(d, 0, 16, 0);\n  for (")
    r = run("scan", str(src))
    assert r.exit_code == 1
    err = r.stderr if hasattr(r, "stderr") else r.output
    lines = [ln for ln in err.splitlines() if ln.startswith("cudamigrate:")]
    assert any("bin.cu" in ln and "binary" in ln for ln in lines)
    # a non-UTF-8 file is scanned, with a one-line note that is not an error
    assert [ln for ln in lines if "latin1.cu" in ln] == [
        f"cudamigrate: note: {src / 'latin1.cu'}: not UTF-8 from byte 6 (line 1); scanned with those bytes kept as they are"]
    # the truncated file is still scanned for what is matchable, and a.cu and latin1.cu too
    assert "trunc.cu:1" in r.output and "a.cu:5" in r.output and "latin1.cu:2" in r.output
    # fix never touches files it cannot read; it fixes the Latin-1 file and keeps its other bytes
    run("fix", "--unsafe-fixes", str(src))
    assert (src / "latin1.cu").read_bytes() == b"// caf\xe9\nvoid f() { cudaDeviceSynchronize(); }  // Jos\xe9\n"
    assert (src / "bin.cu").read_bytes() == b"\x7fELF\x00\x00\x01cudaMemsetAsync"


def test_huge_file_is_skipped_with_reason(tree):
    big = tree / "src" / "big.cu"
    big.write_bytes(b"// x\n" * 1000)
    r = run("scan", "--max-file-size", "100", str(big))
    assert "too large" in (r.stderr if hasattr(r, "stderr") else r.output)
    assert r.exit_code == 1


def test_gitignore_and_config_exclude(tree):
    (tree / ".gitignore").write_text("src/a.cu\n")
    assert run("scan", str(tree)).exit_code == 0
    (tree / ".gitignore").unlink()
    (tree / ".cudamigrate.toml").write_text('exclude = ["src/a.cu"]\n')
    assert run("scan", str(tree)).exit_code == 0
    (tree / ".cudamigrate.toml").write_text('target-cuda = "13.0"\n[options]\nstream = "my_stream"\n')
    r = run("fix", "--select", "CM101", "--apply-display-only", "--diff", str(tree / "src"))
    assert "my_stream" in r.output
    (tree / ".cudamigrate.toml").write_text('bogus = 1\n')
    assert run("scan", str(tree)).exit_code == 2


def test_pyproject_config(tree):
    (tree / "pyproject.toml").write_text('[tool.cudamigrate]\nignore = ["CM101"]\n')
    assert run("scan", str(tree / "src")).exit_code == 0


def test_malformed_rule_yaml_is_reported_and_run_goes_on(tree):
    rules = tree / "myrules"
    rules.mkdir()
    (rules / "CM9001-broken.yaml").write_text("id: CM9001\nname: [unclosed\n")
    (rules / "CM9002-badkey.yaml").write_text(
        "id: CM9002\nname: x\nfamily: f\nsummary: s\nmessage: m\nseverity: loud\nmatch: {call: {names: [foo]}}\nreferences: [r]\n")
    r = run("scan", "--rules-dir", str(rules), str(tree / "src"))
    err = r.stderr if hasattr(r, "stderr") else r.output
    assert "CM9001-broken.yaml: line" in err and "invalid YAML" in err
    assert "CM9002-badkey.yaml: severity:" in err
    assert "CM101" in r.output  # built-in rules still ran
    assert r.exit_code == 2


def test_suppression_comments(tree):
    p = tree / "src" / "a.cu"
    p.write_bytes(LEGACY.replace(b"cudaMemsetAsync(d, 0, 16, 0);", b"cudaMemsetAsync(d, 0, 16, 0);  // cudamigrate: ignore[CM101]"))
    assert run("scan", str(p)).exit_code == 0
    p.write_bytes(b"// cudamigrate: ignore-file[CM101]\n" + LEGACY)
    assert run("scan", str(p)).exit_code == 0
    p.write_bytes(LEGACY.replace(b"  cudaMemsetAsync", b"  // cudamigrate: ignore[CM102]\n  cudaMemsetAsync"))
    assert run("scan", str(p)).exit_code == 1


def test_rules_and_explain():
    r = run("rules")
    assert r.exit_code == 0 and "CM101" in r.output
    r = run("explain", "CM101")
    assert "References:" in r.output and "cudaStreamPerThread" in r.output


def test_installed_copy_finds_rules_from_any_directory(tmp_path):
    r = run("rules", cwd=tmp_path)
    assert "CM101" in r.output


def test_bundled_example_has_findings_for_every_family():
    r = run("scan", "--format", "json", "--exit-zero", str(ROOT / "examples"))
    doc = json.loads(r.output)
    fams = set(doc["summary"]["by_family"])
    assert {"streams", "cublas", "thrust", "nvrtc", "removals"} <= fams


def test_full_rule_id_selects_only_that_rule():
    from cudamigrate.scan.engine import Options, select_rules

    from .helpers import all_rules

    ids = [r.id for r in select_rules(all_rules(), Options(select=["CM101"]))]
    assert ids == ["CM101"]  # not CM1010-CM1019
    ids = {r.id for r in select_rules(all_rules(), Options(select=["CM10"]))}
    assert {"CM101", "CM102", "CM1001"} <= ids  # a prefix still selects the whole range
    ids = {r.id for r in select_rules(all_rules(), Options(ignore=["CM101"]))}
    assert "CM101" not in ids and "CM1010" in ids
