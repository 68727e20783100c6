"""The workspace layer as integrators call it (docs/python-api.md): the findings `scan` reports, the
refusals `scan` exits 2 with, and a buffer scanned under a path the configuration applies to."""

from __future__ import annotations

import json

import pytest

from cudamigrate.workspace import Request, WorkspaceError, scan, scan_buffer

from .helpers import run_cli

CODE = "#include <cuda_runtime.h>\nint main() {\n    cudaThreadSynchronize();\n    return 0;\n}\n"


def test_scan_gives_the_findings_the_command_reports(tmp_path):
    (tmp_path / "a.cu").write_text(CODE)
    (tmp_path / "b.cu").write_text(CODE.replace("cudaThreadSynchronize", "cudaThreadExit"))
    got = scan(Request(paths=(tmp_path,), no_cache=True))
    r = run_cli("scan", "--format", "json", "--no-cache", "--no-semantic", str(tmp_path))
    cli = [(f["path"], f["rule"], f["line"]) for f in json.loads(r.output)["findings"]]
    assert sorted((f.path, f.rule_id, f.line) for f in got.findings) == sorted(cli)
    assert got.files_scanned == 2 and got.errors == [] and got.internal == 0 and cli


@pytest.mark.parametrize("config,words", [('select = ["CM9999"]\n', "'CM9999'"), ('target-cuda = "99.0"\n', "99.0"),
                                          ('target-cuda = "x"\n', "must be a CUDA version"), ("select = [\n", "cannot read")])
def test_a_configuration_scan_refuses_is_refused_naming_its_file(tmp_path, config, words):
    (tmp_path / ".cudamigrate.toml").write_text(config)
    (tmp_path / "a.cu").write_text(CODE)
    with pytest.raises(WorkspaceError) as got:
        scan(Request(paths=(tmp_path / "a.cu",), no_cache=True))
    assert words in got.value.text() and got.value.config == tmp_path / ".cudamigrate.toml"
    r = run_cli("scan", "--no-cache", str(tmp_path / "a.cu"))
    assert r.exit_code == 2 and got.value.text() in " ".join(r.output.split())


def test_scan_buffer_scans_unsaved_text_under_its_configuration(tmp_path):
    (tmp_path / ".cudamigrate.toml").write_text('ignore = ["CM501"]\nexclude = ["gen/"]\n')
    data = CODE.encode()
    assert scan_buffer(Request(), tmp_path / "gen" / "x.cu", data).findings == []  # excluded: nothing
    assert "CM501" not in {f.rule_id for f in scan_buffer(Request(), tmp_path / "x.cu", data).findings}
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / ".cudamigrate.toml").write_text("")
    assert "CM501" in {f.rule_id for f in scan_buffer(Request(), tmp_path / "other" / "x.cu", data).findings}
