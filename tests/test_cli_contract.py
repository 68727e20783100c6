"""The CLI contract: no silent failure. Unknown selectors, wrongly typed config values and impossible version
ranges stop the run with exit 2 and a message that names the flag or config key (issue 14, item 4)."""

from __future__ import annotations

from pathlib import Path

import pytest


from .helpers import run_cli

LEGACY = b"""#include <cuda_runtime.h>
int main() {
  float *d, *e; cudaStream_t s; cudaStreamCreate(&s);
  cudaMalloc(&d, 16); cudaMalloc(&e, 16);
  cudaMemsetAsync(e, 0, 16, s);
  cudaMemsetAsync(d, 0, 16, 0);  /* the legacy stream meets work in flight on s: CM101 */
  cudaThreadSynchronize();
  return 0;
}
"""


def run(*args, cwd):
    return run_cli(*args, cwd=cwd)


@pytest.fixture
def src(tmp_path):
    (tmp_path / "a.cu").write_bytes(LEGACY)
    return tmp_path


@pytest.mark.parametrize("flag,value,hint", [
    ("--select", "CM9999", None),
    ("--select", "streamz", "streams"),
    ("--select", "cm101", "CM101"),
    ("--select", "all", "ALL"),
    ("--ignore", "CM9999", None),
    ("--ignore", "CM5O1", "CM501"),
    ("--extend-select", "stream", "streams"),
])
def test_unknown_selector_is_an_error(src, flag, value, hint):
    for cmd in ("scan", "fix", "plan"):
        r = run(cmd, flag, value, "a.cu", cwd=src)
        assert r.exit_code == 2, (cmd, r.output)
        assert f"{flag}: unknown rule selector {value!r}" in r.stderr
        if hint:
            assert f"did you mean {hint!r}?" in r.stderr
    assert (src / "a.cu").read_bytes() == LEGACY  # fix wrote nothing


@pytest.mark.parametrize("value", ["CM1", "CM101", "streams", "ALL", "legacy-stream-async-api"])
def test_valid_selectors_still_work(src, value):
    assert run("scan", "--select", value, "a.cu", cwd=src).exit_code == 1


def test_unknown_selector_in_config(src):
    (src / ".cudamigrate.toml").write_text('ignore = ["CM9999"]\n')
    r = run("scan", "a.cu", cwd=src)
    assert r.exit_code == 2 and ".cudamigrate.toml: ignore: unknown rule selector 'CM9999'" in r.stderr


@pytest.mark.parametrize("toml,key", [
    ('select = "streams"\n', "select"),
    ("ignore = 5\n", "ignore"),
    ('exclude = "third_party/"\n', "exclude"),
    ('target-cuda = "thirteen"\n', "target-cuda"),
    ("max-file-size = \"big\"\n", "max-file-size"),
    ("respect-gitignore = \"no\"\n", "respect-gitignore"),
])
def test_config_types_checked_with_key_named(src, toml, key):
    (src / ".cudamigrate.toml").write_text(toml)
    r = run("scan", "a.cu", cwd=src)
    assert r.exit_code == 2, r.output
    assert f"`{key}` must be" in r.stderr and "Traceback" not in r.output


def test_config_versions_as_numbers_and_keep_compat(src):
    (src / ".cudamigrate.toml").write_text("target-cuda = 13\nkeep-compat = 12.0\n")
    r = run("scan", "--format", "json", "a.cu", cwd=src)
    assert r.exit_code == 1, r.stderr
    assert '"CM501"' in r.stdout  # cudaThreadSynchronize: removed in 13.0, so 13 was read as 13.0
    (src / ".cudamigrate.toml").write_text("target-cuda = 12\n")
    r = run("scan", "--format", "json", "a.cu", cwd=src)
    assert r.exit_code == 1 and '"build-break"' not in r.stdout


@pytest.mark.parametrize("args,msg", [
    (["--target-cuda", "99.0"], "--target-cuda 99.0 is outside"),
    (["--target-cuda", "14.0"], "--target-cuda 14.0 is outside"),
    (["--from", "13.0", "--target-cuda", "12.0"], "--from 13.0 is newer than --target-cuda 12.0"),
    (["--keep-compat", "13.0", "--target-cuda", "12.0"], "--keep-compat 13.0 is newer"),
])
def test_version_range_checked(src, args, msg):
    r = run("scan", *args, "a.cu", cwd=src)
    assert r.exit_code == 2 and msg in r.stderr


def test_major_only_version_means_dot_zero(src):
    a = run("scan", "--format", "json", "--target-cuda", "13", "a.cu", cwd=src)
    b = run("scan", "--format", "json", "--target-cuda", "13.0", "a.cu", cwd=src)
    assert a.exit_code == b.exit_code == 1 and a.stdout == b.stdout


SUPPRESSED = b"""#include <cuda_runtime.h>
void f() {
  cudaThreadSynchronize();  // cudamigrate: ignore[CM501]
  cudaThreadSynchronize();
  // cudamigrate: ignore[CM501]
  cudaThreadSynchronize();
  cudaThreadSynchronize();  // cudamigrate: ignore[CM5O1]
  /* cudamigrate: ignore[CM501] */ cudaThreadSynchronize();
  cudaThreadSynchronize();
}
"""


def test_suppression_scope(tmp_path):
    """A comment sharing its line with code covers that line only; a comment alone on a line covers the next."""
    (tmp_path / "a.cu").write_bytes(SUPPRESSED)
    r = run("scan", "--select", "CM501", "--format", "json", "a.cu", cwd=tmp_path)
    import json

    lines = sorted(f["line"] for f in json.loads(r.stdout)["findings"])
    assert lines == [4, 7, 9], lines  # 3: trailing; 6: comment alone above it; 8: block comment before code
    assert "a.cu:7: unknown rule id CM5O1 in `cudamigrate: ignore[...]`" in r.stderr
    assert "did you mean CM501?" in r.stderr


def _project(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "third_party" / "lib").mkdir(parents=True)
    (tmp_path / "src" / "jit.cpp").write_bytes(LEGACY)
    (tmp_path / "src" / "main.cu").write_bytes(LEGACY)
    (tmp_path / "third_party" / "lib" / "v.cu").write_bytes(LEGACY)
    (tmp_path / ".cudamigrate.toml").write_text('exclude = ["third_party/", "src/jit.cpp"]\n')
    return tmp_path


def _paths(r):
    import json

    return sorted({f["path"] for f in json.loads(r.stdout)["findings"]})


def test_exclude_applies_to_named_files(tmp_path):
    """pre-commit passes file names: excluded ones are skipped by scan and never rewritten by fix."""
    d = _project(tmp_path)
    r = run("scan", "--format", "json", "src/jit.cpp", "src/main.cu", "third_party/lib/v.cu", cwd=d)
    assert _paths(r) == ["src/main.cu"]
    r = run("fix", "third_party/lib/v.cu", "src/jit.cpp", cwd=d)
    assert (d / "third_party" / "lib" / "v.cu").read_bytes() == LEGACY
    assert (d / "src" / "jit.cpp").read_bytes() == LEGACY
    (d / ".cudamigrate.toml").unlink()
    (d / ".gitignore").write_text("third_party/\n")
    r = run("scan", "--format", "json", "third_party/lib/v.cu", "src/main.cu", cwd=d)
    assert _paths(r) == ["src/main.cu"]


def test_exclude_anchored_at_config_dir(tmp_path):
    """`src/jit.cpp` is anchored at the config file's directory, whatever directory is scanned."""
    d = _project(tmp_path)
    assert _paths(run("scan", "--format", "json", "src", cwd=d)) == ["src/main.cu"]
    r = run("scan", "--format", "json", ".", cwd=d / "src")
    assert _paths(r) == ["main.cu"]
    r = run("scan", "--format", "json", str(d / "src"), cwd=d.parent)
    assert [p.rsplit("/", 2)[-2:] for p in _paths(r)] == [["src", "main.cu"]]


def test_selftest_finds_fixtures_from_an_installed_tool(tmp_path, monkeypatch):
    """Installed (no fixtures next to the package): the checkout around the current directory is used;
    outside any checkout, selftest says what it needs and exits 2."""
    from cudamigrate.toolcheck import selftest as st

    root = Path(__file__).resolve().parent.parent
    monkeypatch.setattr(st, "__file__", str(tmp_path / "site-packages" / "cudamigrate" / "selftest.py"))
    assert st.default_fixtures_dir(cwd=root / "rules" / "streams") == root / "fixtures"
    assert not st.default_fixtures_dir(cwd=tmp_path).is_dir()
    r = run("selftest", cwd=tmp_path)
    assert r.exit_code == 2 and "run it inside a checkout of cudamigrate or pass --fixtures DIR" in r.stderr


def test_unknown_config_key_is_an_error_with_a_suggestion(src):
    (src / ".cudamigrate.toml").write_text('selct = ["streams"]\n')
    for cmd in ("scan", "fix", "plan"):
        r = run(cmd, "a.cu", cwd=src)
        assert r.exit_code == 2 and "unknown key 'selct'; did you mean 'select'?" in r.stderr, (cmd, r.output)
    assert (src / "a.cu").read_bytes() == LEGACY


@pytest.mark.parametrize("command", ["scan", "fix", "plan"])
@pytest.mark.parametrize("args,flag", [(["--max-file-size", "-5"], "'--max-file-size'"), (["-j", "0"], "'--jobs' / '-j'"),
                                       (["-j", "-3"], "'--jobs' / '-j'"), (["--max-file-size=0"], "'--max-file-size'")])
def test_numeric_options_out_of_range_are_usage_errors(tmp_path, command, args, flag):
    (tmp_path / "a.cu").write_bytes(LEGACY)
    r = run(command, *args, "a.cu", cwd=tmp_path)
    errors = [ln for ln in r.output.splitlines() if ln.startswith("Error:")]
    assert r.exit_code == 2 and len(errors) == 1 and flag in errors[0] and "is not in the range x>=1" in errors[0], r.output
    assert (tmp_path / "a.cu").read_bytes() == LEGACY  # nothing ran
