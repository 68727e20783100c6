"""Baselines: today's findings are silenced, new ones still show, whatever moves around them."""

from __future__ import annotations

import json

from click.testing import CliRunner

from cudamigrate.cli.main import main

CODE = """#include <cuda_runtime.h>
void f(float *d, float *h, size_t n, cudaStream_t s) {  // receives a stream: the legacy stream meets it
  cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, 0);
  cudaMemsetAsync(d, 0, n);
  cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost);
}
"""
NEW = "  cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, 0);\n"


def run(*args):
    r = CliRunner().invoke(main, ["scan", *map(str, args), "--jobs", "1"], catch_exceptions=False)
    return r.exit_code, r.output


def findings(*args):
    code, out = run(*args, "--format", "json")
    return code, json.loads(out)["findings"]


def setup(tmp_path, monkeypatch):
    src = tmp_path / "proj" / "src"
    src.mkdir(parents=True)
    (src / "a.cu").write_text(CODE)
    monkeypatch.chdir(tmp_path / "proj")
    return src / "a.cu"


def test_baseline_silences_current_findings(tmp_path, monkeypatch):
    setup(tmp_path, monkeypatch)
    code, before = findings("src")
    assert code == 1 and len(before) == 3
    code, _ = run("src", "--write-baseline", "base.json", "--exit-zero")
    assert code == 0
    doc = json.loads((tmp_path / "proj" / "base.json").read_text())
    assert doc["version"] == 2 and len(doc["findings"]) == 3 and all(d["key"] for d in doc["findings"])
    code, after = findings("src", "--baseline", "base.json")
    assert (code, after) == (0, [])


def test_new_violation_is_reported_after_lines_shift(tmp_path, monkeypatch):
    a = setup(tmp_path, monkeypatch)
    run("src", "--write-baseline", "base.json")
    lines = CODE.splitlines(keepends=True)
    shifted = ["// a header comment\n", "// that moves everything down\n", "\n"] + lines[:3] + [NEW] + lines[3:]
    a.write_text("".join(shifted))
    code, new = findings("src", "--baseline", "base.json")
    assert code == 1 and len(new) == 1
    assert new[0]["line"] == 7 and "cudaMemcpyAsync" in new[0]["message"]
    # reformatting the old violations does not make them new either
    a.write_text("".join(shifted).replace("cudaMemsetAsync(d, 0, n)", "cudaMemsetAsync(d,\n      0,   n)"))
    code, new = findings("src", "--baseline", "base.json")
    assert [f["line"] for f in new] == [7]


def test_identical_violations_are_counted(tmp_path, monkeypatch):
    a = setup(tmp_path, monkeypatch)
    run("src", "--write-baseline", "base.json")
    line = "  cudaMemsetAsync(d, 0, n);\n"
    a.write_text(CODE.replace(line, line + line))
    code, new = findings("src", "--baseline", "base.json")
    assert len(new) == 1 and "cudaMemsetAsync" in new[0]["message"]


def test_baseline_works_from_another_directory(tmp_path, monkeypatch):
    setup(tmp_path, monkeypatch)
    run("src", "--write-baseline", "base.json")
    monkeypatch.chdir(tmp_path)
    code, new = findings("proj/src", "--baseline", "proj/base.json")
    assert (code, new) == (0, [])
    monkeypatch.chdir(tmp_path / "proj" / "src")
    code, new = findings(".", "--baseline", "../base.json")
    assert (code, new) == (0, [])


def test_other_files_are_not_covered(tmp_path, monkeypatch):
    setup(tmp_path, monkeypatch)
    run("src", "--write-baseline", "base.json")
    (tmp_path / "proj" / "src" / "b.cu").write_text(CODE)
    code, new = findings("src", "--baseline", "base.json")
    assert len(new) == 3 and {f["path"] for f in new} == {"src/b.cu"}


def test_version_1_baselines_still_match(tmp_path, monkeypatch):
    setup(tmp_path, monkeypatch)
    _, cur = findings("src")
    (tmp_path / "proj" / "old.json").write_text(json.dumps({"version": 1, "tool": "cudamigrate", "findings": [
        {"rule": f["rule"], "path": f["path"], "fingerprint": f["fingerprint"], "line": f["line"]} for f in cur]}))
    assert findings("src", "--baseline", "old.json") == (0, [])


def test_bad_baseline_is_a_usage_error(tmp_path, monkeypatch):
    setup(tmp_path, monkeypatch)
    (tmp_path / "proj" / "bad.json").write_text("{not json")
    code, out = run("src", "--baseline", "bad.json")
    assert code == 2 and "not a cudamigrate baseline" in out
    code, out = run("src", "--baseline", "missing.json")
    assert code == 2
