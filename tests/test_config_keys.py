"""Configuration keys ruff users expect: `baseline` (no `--baseline FILE` on every hook and CI entry) and
`per-file-ignores` (rules off in the files a glob matches)."""

from __future__ import annotations

import json

from .helpers import run_cli

# CM101 (a legacy-stream call beside another stream) and CM501 (cudaThreadSynchronize)
CODE = """#include <cuda_runtime.h>
void f(float *d, size_t n, cudaStream_t s) {
  cudaMemsetAsync(d, 0, n);
  cudaThreadSynchronize();
}
"""


def _ids(r) -> list[tuple[str, str]]:
    assert r.exit_code in (0, 1), r.output
    return sorted((f["path"], f["rule"]) for f in json.loads(r.output)["findings"])


def test_baseline_key_is_read_relative_to_the_configuration(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.cu").write_text(CODE)
    (tmp_path / "ci").mkdir()
    r = run_cli("scan", "src", "--write-baseline", "ci/base.json", cwd=tmp_path)
    assert r.exit_code == 1, r.output
    (tmp_path / ".cudamigrate.toml").write_text('baseline = "ci/base.json"\n')
    r = run_cli("scan", ".", "--format", "json", cwd=tmp_path / "src")  # from another directory: same file
    assert r.exit_code == 0 and _ids(r) == [], r.output
    with (tmp_path / "src" / "a.cu").open("a") as fh:
        fh.write("void g() { cudaThreadSynchronize(); }\n")
    r = run_cli("scan", ".", "--format", "json", cwd=tmp_path / "src")
    assert r.exit_code == 1 and [rid for _, rid in _ids(r)] == ["CM501"], r.output


def test_baseline_key_naming_a_missing_file_is_one_line_exit_2(tmp_path):
    (tmp_path / ".cudamigrate.toml").write_text('baseline = "none.json"\n')
    (tmp_path / "a.cu").write_text(CODE)
    r = run_cli("scan", "a.cu", cwd=tmp_path)
    assert r.exit_code == 2 and "`baseline` in" in r.output and "none.json" in r.output, r.output


def test_per_file_ignores_turn_a_rule_off_only_where_the_glob_matches(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.cu").write_text(CODE)
    (tmp_path / "a.cu").write_text(CODE)
    r = run_cli("scan", ".", "--format", "json", "--jobs", "1", cwd=tmp_path)
    everywhere = _ids(r)
    cm001 = [(p, rid) for p, rid in everywhere if rid == "CM501"]
    assert ("tests/t.cu", "CM501") in cm001 and ("a.cu", "CM501") in cm001, everywhere
    (tmp_path / ".cudamigrate.toml").write_text('per-file-ignores = {"tests/**" = ["CM501"]}\n')
    r = run_cli("scan", ".", "--format", "json", "--jobs", "1", cwd=tmp_path)
    assert _ids(r) == [x for x in everywhere if x != ("tests/t.cu", "CM501")]
    r = run_cli("scan", "t.cu", "--format", "json", "--jobs", "1", cwd=tmp_path / "tests")  # anchored at the config
    assert ("t.cu", "CM501") not in _ids(r)


def test_per_file_ignores_bad_values_are_one_line_errors(tmp_path):
    (tmp_path / "a.cu").write_text(CODE)
    for value, words in (('{"tests/**" = 5}', "`per-file-ignores` must be a table of glob = [rule ids]"),
                         ('{"[z-a]" = ["CM501"]}', "`per-file-ignores` has a bad glob '[z-a]'"),
                         ('{"*.cu" = ["CM50x"]}', "unknown rule selector 'CM50x'")):
        (tmp_path / ".cudamigrate.toml").write_text(f"per-file-ignores = {value}\n")
        r = run_cli("scan", "a.cu", cwd=tmp_path)
        assert r.exit_code == 2 and words in r.output and "Traceback" not in r.output, (value, r.output)


def test_per_file_ignores_hold_for_fix_too(tmp_path):
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "g.cu").write_text(CODE)
    (tmp_path / "a.cu").write_text(CODE)
    (tmp_path / ".cudamigrate.toml").write_text('per-file-ignores = {"gen/" = ["removals"]}\n')
    r = run_cli("fix", "--no-verify", ".", cwd=tmp_path)
    assert r.exit_code == 1, r.output  # CM101 remains in both
    assert (tmp_path / "gen" / "g.cu").read_text() == CODE  # CM501 (family removals) is off under gen/
    assert "cudaDeviceSynchronize();" in (tmp_path / "a.cu").read_text()


def test_readme_configuration_example_loads_as_written(tmp_path):
    """The README's `[tool.cudamigrate]` example is a valid configuration (it named a `core.options` table)."""
    import re
    from pathlib import Path

    from cudamigrate.core.config import load_config

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Configuration\n"):]
    block = re.search(r"```toml\n(.*?)```", section, re.S)[1]
    head = "" if block.lstrip().startswith("[tool.cudamigrate]") else "[tool.cudamigrate]\n"
    (tmp_path / "pyproject.toml").write_text(head + block)
    cfg = load_config(tmp_path / "pyproject.toml", ("tool", "cudamigrate"))
    assert cfg.get("options") == {"stream": "cudaStreamPerThread"} and cfg.get("per-file-ignores")


def test_show_settings_names_per_file_ignores_and_the_baseline(tmp_path):
    (tmp_path / ".cudamigrate.toml").write_text('baseline = "b.json"\nper-file-ignores = {"gen/" = ["CM501", "CM1"]}\n')
    (tmp_path / "a.cu").write_text(CODE)
    r = run_cli("scan", "--show-settings", ".", cwd=tmp_path)
    got = dict(ln.split(" = ", 1) for ln in r.output.splitlines())
    assert got["per-file-ignores"] == "[gen/: CM501,CM1]" and got["baseline"] == str(tmp_path / "b.json"), r.output
