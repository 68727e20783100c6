"""Replays of a whole scan (cudamigrate/pipeline/replay.py): an unchanged run prints its stored report without loading
the rules, byte for byte what `--no-cache` prints, and any change a file's cached result depends on (a file, a
header inside or outside the run, the file list, a rule, an option, the configuration) makes the scan run."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from cudamigrate.core import stamps
from cudamigrate.pipeline import result_cache as cache

from .conftest import ROOT
from .helpers import run_cli
from .test_cache import CLEAN, CM503_HEADER, LEGACY, _tree

FORMATS = ["text", "json", "sarif", "github", "junit", "json-lines", "html"]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("CUDAMIGRATE_CACHE_DIR", str(d))
    return d


class _Loads:
    """Counts rule loads by the CLI: a replay loads no rule."""

    def __init__(self, monkeypatch):
        import cudamigrate.workspace.preparation as cli  # where scan, fix and plan load their rules

        self.n = 0
        orig = cli.load_rules

        def counted(*a, **k):
            self.n += 1
            return orig(*a, **k)

        monkeypatch.setattr(cli, "load_rules", counted)

    def take(self) -> int:
        n, self.n = self.n, 0
        return n


def _scan(*args, cwd=None) -> tuple[int, str, str]:
    r = run_cli("scan", *args, cwd=cwd)
    return r.exit_code, r.stdout, r.stderr


def _replays(cache_dir: Path) -> int:
    with sqlite3.connect(cache_dir / "results.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM replays").fetchone()[0]


@pytest.mark.parametrize("fmt", FORMATS + ["statistics"])
def test_replay_prints_what_no_cache_prints(tmp_path, cache_dir, monkeypatch, fmt):
    _tree(tmp_path / "t")
    args = ["--statistics"] if fmt == "statistics" else ["--format", fmt]
    report = tmp_path / "report.html"
    if fmt == "html":  # HTML goes to a file (without -o: cudamigrate-report.html), never to the terminal
        args += ["-o", str(report)]

    def scan_(*more):
        code, out, err = _scan(tmp_path / "t", *args, *more)
        return code, out + (report.read_text() if fmt == "html" else ""), err

    loads = _Loads(monkeypatch)
    first = scan_()
    assert loads.take() == 1 and _replays(cache_dir) == 1
    again = scan_()
    assert loads.take() == 0, "an unchanged run is replayed"
    assert again == first == scan_("--no-cache")
    assert fmt != "html" or "<!DOCTYPE html>" in first[1]
    assert first[0] == 1
    assert _scan(tmp_path / "t", *args, "--exit-zero")[0] == 0


def test_every_change_a_result_depends_on_is_seen(tmp_path, cache_dir, monkeypatch):
    root = tmp_path / "t"
    _tree(root)
    loads = _Loads(monkeypatch)

    def check(*args, replayed: bool) -> str:
        cached = _scan(root, *args)
        assert loads.take() == (0 if replayed else 1)
        assert cached == _scan(root, *args, "--no-cache")
        loads.take()
        return cached[1]

    base = check(replayed=False)
    assert check(replayed=True) == base
    (root / "src" / "f1.cu").write_text(CLEAN)  # a file's bytes
    body = check(replayed=False)
    assert body != base and "f1.cu" not in body
    (root / "inc" / "gpu.h").write_text(CM503_HEADER.replace("cudaDeviceProp prop", "int prop"))  # a header
    header = check(replayed=False)
    assert "CM503" in body and "CM503" not in header
    os.utime(root / "src" / "f2.cu")  # a new stat, the same bytes: the same report, replayed
    assert check(replayed=True) == header
    (root / "src" / "new.cu").write_text(LEGACY)  # the file list
    added = check(replayed=False)
    assert "new.cu" in added
    (root / "src" / "new.cu").unlink()
    assert check(replayed=True) == header  # the very run before the file was added
    assert check("--target-cuda", "12.0", replayed=False) != header  # an option
    assert check("--ignore", "CM501", replayed=False) != header
    assert check(replayed=True) == header
    (root / ".cudamigrate.toml").write_text('exclude = ["src/f0.cu"]\n')  # the configuration
    assert "f0.cu" not in check(replayed=False)


def test_source_files_appearing_above_the_tree_do_not_invalidate_it(tmp_path, cache_dir, monkeypatch):
    """Looking for a compile database lists every ancestor directory (`/`, `/tmp`); those listings are asked
    again at each run and are no result's dependency. Recorded, any `.cu`/`.cpp` created or removed in `/tmp`
    (nvcc's temporaries of a parallel build) threw away every cached result and every replay."""
    root = tmp_path / "up" / "t"
    _tree(root)
    loads = _Loads(monkeypatch)
    first = _scan(root)
    assert loads.take() == 1
    (tmp_path / "up" / "scratch.cu").write_text(LEGACY)  # a source file next to the tree, not in it
    (tmp_path / "other.cpp").write_text("int x;\n")
    assert _scan(root) == first
    assert loads.take() == 0


def test_rule_edit_is_seen(tmp_path, cache_dir):
    _tree(tmp_path, n=1)
    rules = tmp_path / "rules"
    rules.mkdir()
    rule = next((ROOT / "rules").rglob("CM501-*.yaml"))
    shutil.copy(rule, rules / rule.name)
    args = [tmp_path / "src", "--no-builtin-rules", "--rules-dir", rules]
    first = _scan(*args)
    assert _scan(*args) == first
    text = (rules / rule.name).read_text()
    (rules / rule.name).write_text(text.replace("\nmessage: >-\n", "\nmessage: >-\n  EDITED-RULE-MESSAGE\n", 1))
    edited = _scan(*args)
    assert "EDITED-RULE-MESSAGE" in edited[1]
    assert edited == _scan(*args, "--no-cache")


def test_header_outside_the_run_invalidates_the_replay(tmp_path, cache_dir, monkeypatch):
    _tree(tmp_path)
    a = tmp_path / "src" / "a.cu"
    loads = _Loads(monkeypatch)
    assert "CM503" in _scan(a)[1]
    assert "CM503" in _scan(a)[1] and loads.take() == 1
    (tmp_path / "inc" / "gpu.h").write_text(CM503_HEADER.replace("cudaDeviceProp prop", "int prop"))
    assert "CM503" not in _scan(a)[1]


def _same_size_edit_keeping_mtime(p: Path, old: str, new: str) -> None:
    """Rewrite `p` with bytes of the same size and put its mtime back: only the ctime tells."""
    st = os.stat(p)
    text = p.read_text()
    assert len(old) == len(new) and old in text
    for _ in range(200):  # until the coarse clock ticks (a few ms), so the ctime moves
        time.sleep(0.01)
        p.write_text(text.replace(old, new))
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
        if os.stat(p).st_ctime_ns != st.st_ctime_ns:
            return
    pytest.skip("the file system's ctime did not move")


def test_trusted_stat_signature_still_sees_a_same_size_edit(tmp_path, cache_dir, monkeypatch):
    monkeypatch.setattr(stamps, "RACY_NS", 0)  # files written by the test count as settled
    _tree(tmp_path)
    f = tmp_path / "src" / "f1.cu"
    first = _scan(tmp_path)
    from cudamigrate.pipeline.replay import Replay

    with sqlite3.connect(cache_dir / "results.sqlite") as db:
        (body,) = db.execute("SELECT body FROM replays").fetchone()
    assert all(sig is not None for _, sig, _ in Replay.decode(body).files)
    assert _scan(tmp_path) == first
    _same_size_edit_keeping_mtime(f, "cudaThreadSynchronize", "cudaDeviceSynchronize")
    after = _scan(tmp_path)
    assert after != first and "f1.cu" not in after[1]
    assert after == _scan(tmp_path, "--no-cache")


def test_recent_files_are_hashed_not_trusted(tmp_path, cache_dir, monkeypatch):
    # the window is set by the test (every file counts as just written), not left to how soon the scan starts
    # after the files are written: a loaded machine took longer than the real 2 s and turned this red
    monkeypatch.setattr(stamps, "RACY_NS", 10**18)
    _tree(tmp_path)
    _scan(tmp_path)
    from cudamigrate.pipeline.replay import Replay

    with sqlite3.connect(cache_dir / "results.sqlite") as db:
        (body,) = db.execute("SELECT body FROM replays").fetchone()
    assert all(sig is None for _, sig, _ in Replay.decode(body).files)  # written less than RACY_NS ago


def test_runs_with_errors_are_not_replayed(tmp_path, cache_dir):
    _tree(tmp_path)
    (tmp_path / "src" / "big.cu").write_text(LEGACY * 50)
    code, out, err = _scan(tmp_path, "--max-file-size", "1000")
    assert "big.cu" in err
    assert _replays(cache_dir) == 0
    assert _scan(tmp_path, "--max-file-size", "1000") == (code, out, err)


def test_a_replay_imports_neither_the_engine_nor_its_libraries(tmp_path):
    """What a replay needs is the configuration, the file list and the database: tree-sitter, Jinja, PyYAML,
    the engine and the matchers stay unloaded (they are most of a start-up)."""
    import json
    import subprocess
    import sys

    _tree(tmp_path / "t")
    env = dict(os.environ, CUDAMIGRATE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    script = ("import json, sys\nfrom cudamigrate.cli.main import console\nsys.argv = ['cudamigrate', 'scan', sys.argv[1]]\n"
              "try:\n    console()\nexcept SystemExit:\n    pass\n"
              "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
              "('tree_sitter', 'tree_sitter_cuda', 'jinja2', 'yaml') or m in ('cudamigrate.scan.engine', 'cudamigrate.pipeline.runner') "
              "or m.startswith('cudamigrate.match'))))\n")
    runs = [subprocess.run([sys.executable, "-c", script, str(tmp_path / "t")], env=env, capture_output=True, text=True)
            for _ in range(2)]
    first, again = (json.loads(r.stdout.splitlines()[-1]) for r in runs)
    assert "tree_sitter" in first and "cudamigrate.scan.engine" in first  # the scan that stored the replay
    assert again == [], again
    assert runs[0].stdout.splitlines()[:-1] == runs[1].stdout.splitlines()[:-1]
