"""Ordinary trees that used to crash or hang (issue 15): each gets one line naming the path and the reason,
the other files are still processed, usage and configuration errors exit 2, nothing blocks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


from .helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
GOOD = b"int main() { cudaThreadSynchronize(); return 0; }\n"


def run(*args, cwd=None):
    return run_cli(*args, cwd=cwd)


def cli(*args, cwd=None, timeout=60):
    """The real command in a subprocess, so a hang is a timeout and a crash a traceback on stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "cudamigrate", *args], cwd=cwd, env=env, capture_output=True,
                          timeout=timeout)


def _errors(r) -> list[str]:
    return [ln for ln in r.output.splitlines() if ln.startswith("cudamigrate:")]


def test_non_utf8_file_name(tmp_path):
    bad = os.fsencode(str(tmp_path)) + b"/bad\xff\xfename.cu"
    with open(bad, "wb") as fh:
        fh.write(GOOD)
    (tmp_path / "good.cu").write_bytes(GOOD)
    p = cli("scan", "--format", "json", str(tmp_path))
    assert p.returncode == 1, p.stderr
    import json

    doc = json.loads(p.stdout)
    assert sorted(f["path"].rsplit("/", 1)[1] for f in doc["findings"]) == ["bad\\xff\\xfename.cu", "good.cu"]
    p = cli("fix", "--select", "CM501", str(tmp_path))
    assert p.returncode == 0, p.stderr
    with open(bad, "rb") as fh:
        assert b"cudaDeviceSynchronize" in fh.read()


def test_loop_of_two_symlinks(tmp_path):
    (tmp_path / "good.cu").write_bytes(GOOD)
    os.symlink("l2.cu", tmp_path / "l1.cu")
    os.symlink("l1.cu", tmp_path / "l2.cu")
    r = run("scan", str(tmp_path))
    errs = _errors(r)
    assert any("l1.cu: cannot read: Too many levels of symbolic links" in e for e in errs), r.output
    assert "good.cu:1:" in r.output and r.exit_code == 1
    r = run("scan", str(tmp_path / "l1.cu"))  # named explicitly
    assert "l1.cu: cannot read" in r.output and r.exit_code == 1


@pytest.mark.skipif(not shutil.which("setpriv"), reason="needs setpriv to drop root's DAC override")
def test_directory_without_search_permission(tmp_path):
    (tmp_path / "good.cu").write_bytes(GOOD)
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "in.cu").write_bytes(GOOD)
    os.chmod(sub, 0)
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        # as root, permissions are not checked: drop the capabilities that bypass them
        prefix = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
        p = subprocess.run(prefix + [sys.executable, "-m", "cudamigrate", "scan", str(tmp_path), str(sub / "in.cu")],
                           cwd=tmp_path, env=env, capture_output=True, timeout=60)
        err = p.stderr.decode()
        assert "Traceback" not in err, err
        assert f"{sub}: cannot list directory: Permission denied" in err
        assert "in.cu: cannot read: Permission denied" in err
        assert b"good.cu:1:" in p.stdout and p.returncode == 1
    finally:
        os.chmod(sub, 0o755)


@pytest.mark.parametrize("value,why", [
    ("select = [1, 2]", "`select` must be a string or a list of strings"),
    ("exclude = 5", "`exclude` must be a string or a list of strings"),
    ('max-file-size = "big"', "`max-file-size` must be a positive integer"),
    ("options = {stream = {a = {b = 1}}}", "`options` must be a table"),
    ("rule-options = 3", "`rule-options` must be tables"),
    ("target-cuda = [13]", "`target-cuda` must be a version"),
    ('respect-gitignore = "no"', "`respect-gitignore` must be true or false"),
    ("select = " + "[" * 2000 + "]" * 2000, "nested too deeply"),
])
def test_wrongly_typed_or_deeply_nested_config(tmp_path, value, why):
    (tmp_path / "good.cu").write_bytes(GOOD)
    (tmp_path / ".cudamigrate.toml").write_text(value + "\n")
    r = run("scan", str(tmp_path / "good.cu"))
    assert r.exit_code == 2 and why in r.output, r.output


def test_numeric_target_and_string_list_config_are_accepted(tmp_path):
    # a bare string where a list is expected is an error naming the key (tests/test_cli_contract.py)
    (tmp_path / "good.cu").write_bytes(GOOD)
    (tmp_path / ".cudamigrate.toml").write_text('target-cuda = 13.0\nselect = ["CM501"]\nexclude = ["vendor/"]\n')
    r = run("scan", str(tmp_path))
    assert r.exit_code == 1 and "CM501" in r.output, r.output


def test_non_string_names_in_a_rule_file(tmp_path):
    rd = tmp_path / "rules"
    rd.mkdir()
    (rd / "CM9901-x.yaml").write_text("id: CM9901\nname: x\nfamily: test\nsummary: s\nseverity: info\nmessage: m\n"
                                      "match: {call: {names: [1, {a: b}, [c]]}}\nreferences: [test]\n")
    (rd / "CM9902-y.yaml").write_text("id: CM9902\nname: y\nfamily: test\nsummary: s\nseverity: info\nmessage: m\n"
                                      "match: {call: {names: {cudaFree: [1, 2]}}}\nreferences: [test]\n")
    (tmp_path / "good.cu").write_bytes(GOOD)
    r = run("scan", "--rules-dir", str(rd), str(tmp_path / "good.cu"))
    errs = _errors(r)
    assert any("CM9901-x.yaml: match.call.names: names must be non-empty strings" in e for e in errs), r.output
    assert any("CM9902-y.yaml: match.call.names.cudaFree: parameter names must be a list of strings" in e for e in errs)
    assert "good.cu:1:" in r.output and r.exit_code == 2


@pytest.mark.parametrize("flag", ["--write-baseline", "-o"])
def test_output_into_a_missing_directory(tmp_path, flag):
    (tmp_path / "good.cu").write_bytes(GOOD)
    r = run("scan", flag, str(tmp_path / "nope" / "out.json"), str(tmp_path / "good.cu"))
    assert r.exit_code == 2 and "does not exist" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("flag", ["--config", "--baseline"])
def test_config_or_baseline_on_a_fifo_does_not_block(tmp_path, flag):
    (tmp_path / "good.cu").write_bytes(GOOD)
    os.mkfifo(tmp_path / "fifo")
    p = cli("scan", flag, str(tmp_path / "fifo"), str(tmp_path / "good.cu"), timeout=60)
    assert p.returncode == 2 and b"not a regular file" in p.stderr, p.stderr


def test_explicit_fifo_and_dev_zero_are_errors(tmp_path):
    os.mkfifo(tmp_path / "pipe.cu")
    p = cli("scan", "--target-cuda", "13.0", str(tmp_path / "pipe.cu"), "/dev/zero", timeout=60)
    err = p.stderr.decode()
    assert "pipe.cu: not a regular file (a FIFO)" in err
    assert "/dev/zero: not a regular file (a character device)" in err
    assert b"No findings in 2 file(s) (2 error(s) reported on stderr)." in p.stdout
    assert p.returncode == 1
    p = cli("fix", str(tmp_path / "pipe.cu"), timeout=60)
    assert b"not a regular file (a FIFO)" in p.stderr and p.returncode == 1


def test_fifo_inside_a_directory_is_skipped_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.cu")
    (tmp_path / "good.cu").write_bytes(GOOD)
    p = cli("scan", str(tmp_path), timeout=60)
    assert b"good.cu:1:" in p.stdout and p.returncode == 1


def test_file_deleted_mid_run(tmp_path, monkeypatch):
    """Found by the walk, gone when read (scan), or gone before the write (fix)."""
    from cudamigrate.cli import scan as cli_mod  # the module whose `setup` the scan command calls

    (tmp_path / "good.cu").write_bytes(GOOD)
    (tmp_path / "gone.cu").write_bytes(GOOD)
    real_setup = cli_mod.setup

    def setup_then_delete(req, *rest):
        out = real_setup(req, *rest)
        (tmp_path / "gone.cu").unlink()
        return out

    monkeypatch.setattr(cli_mod, "setup", setup_then_delete)
    r = run("scan", str(tmp_path))
    assert "gone.cu: cannot read: No such file or directory" in r.output
    assert "good.cu:1:" in r.output and r.exit_code == 1
    monkeypatch.setattr(cli_mod, "setup", real_setup)

    import cudamigrate.fix.apply as apply_mod

    (tmp_path / "gone.cu").write_bytes(GOOD)
    real_fix = apply_mod.fix_bytes

    def delete_before_write(engine, path, data, display, **kw):
        res = real_fix(engine, path, data, display, **kw)
        if path.name == "gone.cu":
            path.unlink()
        return res

    monkeypatch.setattr(apply_mod, "fix_bytes", delete_before_write)
    r = run("fix", "--select", "CM501", str(tmp_path))
    assert "gone.cu: cannot write: No such file or directory" in r.output, r.output
    assert b"cudaDeviceSynchronize" in (tmp_path / "good.cu").read_bytes()
    assert not (tmp_path / "gone.cu").exists()
    assert "Fixed 1 finding(s) in 1 file(s)" in r.output and r.exit_code == 1


def test_wrongly_typed_cost_in_a_rule_file(tmp_path):
    rd = tmp_path / "rules"
    rd.mkdir()
    head = "name: {n}\nfamily: test\nsummary: s\nseverity: info\nmessage: m\nmatch: {{call: {{names: [cudaFree]}}}}\nreferences: [test]\n"
    (rd / "CM9903-a.yaml").write_text("id: CM9903\n" + head.format(n="a") + "cost: {effort_minutes: soon}\n")
    (rd / "CM9904-b.yaml").write_text("id: CM9904\n" + head.format(n="b") + "cost: {adjust: [{when: {argc: 1}, multiply: lots}]}\n")
    (rd / "CM9905-c.yaml").write_text("id: CM9905\n" + head.format(n="c") + "cost: {adjust: {when: 1}}\n")
    (tmp_path / "a.cu").write_bytes(b"void f(void *p) { cudaFree(p); }\n")
    r = run("scan", "--no-builtin-rules", "--rules-dir", str(rd), str(tmp_path / "a.cu"))
    errs = _errors(r)
    assert any("CM9903-a.yaml: cost.effort_minutes: must be a number" in e for e in errs), r.output
    assert any("CM9904-b.yaml: cost.adjust[0].multiply: must be a number" in e for e in errs)
    assert any("CM9905-c.yaml: cost.adjust: must be a list" in e for e in errs)
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_fifo_beside_a_header_never_blocks_the_scan(tmp_path):
    """Matchers read project files beside the scanned one (a header's includers decide its language,
    project headers hold shadowing declarations and streams): a FIFO with a source name among them must be
    skipped, not opened for a blocking read. Found when the suite hung on a FIFO left by another test."""
    proj = tmp_path / "proj"
    (proj / "inc").mkdir(parents=True)
    (proj / "inc" / "api.h").write_text("#include <cuda_runtime.h>\ninline void f() { cudaThreadSynchronize(); }\n")
    os.mkfifo(proj / "inc" / "pipe.c")
    os.mkfifo(proj / "pipe.cu")
    os.mkfifo(proj / "inc" / "other.h")
    (proj / "main.cu").write_text('#include "inc/api.h"\n#include "inc/other.h"\nint main() { f(); }\n')
    r = subprocess.run([sys.executable, "-m", "cudamigrate", "scan", str(proj / "inc" / "api.h"), str(proj / "main.cu"),
                        "--jobs", "1"], capture_output=True, text=True, timeout=60)
    assert "CM501" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("value,why", [
    ('rules-dirs = ["missing"]', "`rules-dirs` entry 'missing' is not an existing directory"),
    ('rules-dirs = ["/"]', "`rules-dirs` entry '/' lies outside the project"),
    ('rules-dirs = ["../elsewhere"]', "lies outside the project"),
    ("[rule-options.CM9999]\nstream = \"s\"", "`rule-options.CM9999`: no loaded rule has this id"),
    ("[rule-options.CM101]\nstraem = \"s\"", "`rule-options.CM101.straem`: CM101 has no such option"),
    ("[rule-options.CM101]\nstream = 5", "`rule-options.CM101.stream` must be a string like its default"),
    ("[options]\nstream = 5", "`options.stream` must be a string"),
])
def test_config_entries_that_cannot_be_used_are_errors(tmp_path, value, why):
    """Before, each was accepted silently: a missing or outside rules dir, an option for no rule, `5` as code."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (proj / "good.cu").write_bytes(GOOD)
    (proj / ".cudamigrate.toml").write_text(value + "\n")
    r = run("scan", str(proj / "good.cu"))
    assert r.exit_code == 2 and why in r.output, r.output
    assert str(proj / ".cudamigrate.toml") in r.output


def test_rules_dir_outside_the_project_is_allowed_on_the_command_line(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (proj / "good.cu").write_bytes(GOOD)
    r = run("scan", "--rules-dir", str(tmp_path / "elsewhere"), str(proj / "good.cu"))
    assert r.exit_code == 1 and "CM501" in r.output, r.output  # scanned with it: the file's finding


SPARSE = r"""
import os, resource, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from cudamigrate.pipeline.result_cache import read_limited
from cudamigrate.read.source import SourceError, load_source
p = sys.argv[2]
try:
    load_source(Path(p), 2 * 1024 ** 3)
    print("read")
except SourceError as exc:
    print(exc)
print(read_limited(p, 2 * 1024 ** 3)[0] is None)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def test_sparse_gigabyte_let_in_by_the_limit_is_not_read_whole(tmp_path):
    """A 1 GB sparse file under a raised --max-file-size took 2.1 GB of memory to be refused as binary: the
    refusal now comes from its first 64 KiB, in the scan and in the result cache's read."""
    big = tmp_path / "big.cu"
    with open(big, "wb") as fh:
        fh.truncate(1024 ** 3)
    p = subprocess.run([sys.executable, "-c", SPARSE, str(Path(__file__).resolve().parent.parent), str(big)],
                       capture_output=True, text=True, timeout=300)
    why, cache_none, rss_kb = p.stdout.split("\n")[:3]
    assert why == "binary file (contains NUL bytes)" and cache_none == "True", p.stdout + p.stderr
    assert int(rss_kb) < 300 * 1024  # kilobytes: far below the file's 1 GB
