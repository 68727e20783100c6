"""The result cache (cudamigrate/pipeline/result_cache.py): stored results come back only while nothing they depend on
changed, a broken or busy database is ignored, and the runner scans only what the cache cannot answer."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cudamigrate.pipeline import result_cache as cache
from cudamigrate.pipeline.result_cache import CachedRun, DepSet, ResultCache, content_hash, tree_state
from cudamigrate.scan.engine import Engine

from .conftest import ROOT
from .helpers import run_cli

CM503_HEADER = "#include <cuda_runtime.h>\nstruct Gpu { cudaDeviceProp prop; };\n"
CM503_USE = '#include "%s"\nint clock_of(Gpu &g) { return g.prop.clockRate; }\n'
LEGACY = "#include <cuda_runtime.h>\nvoid sync_all() { cudaThreadSynchronize(); }\n"
CLEAN = "#include <cuda_runtime.h>\nvoid sync_all() { cudaDeviceSynchronize(); }\n"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("CUDAMIGRATE_CACHE_DIR", str(d))
    return d


# ----------------------------------------------------------------------------- the store
def test_lookup_needs_the_same_content_hash(tmp_path):
    db = ResultCache(tmp_path / "r.sqlite")
    db.store("k", "h1", {"findings": [1, 2]})
    db.flush()
    assert db.lookup("k", "h1").value == {"findings": [1, 2]}
    assert db.lookup("k", "h2") is None
    assert db.lookup("other", "h1") is None
    db.close()
    again = ResultCache(tmp_path / "r.sqlite")
    assert again.lookup("k", "h1").value == {"findings": [1, 2]}
    again.close()


def test_corrupt_database_is_moved_aside_silently(tmp_path):
    p = tmp_path / "r.sqlite"
    p.write_bytes(b"this is not a database" * 100)
    db = ResultCache(p)
    assert db.enabled
    assert db.lookup("k", "h") is None
    db.store("k", "h", 1)
    db.close()
    assert ResultCache(p).lookup("k", "h").value == 1
    assert (tmp_path / "r.sqlite.corrupt").exists()


def test_entry_that_does_not_unpickle_is_a_miss(tmp_path):
    p = tmp_path / "r.sqlite"
    db = ResultCache(p)
    db.store("k", "h", [1])
    db.close()
    con = sqlite3.connect(p)
    con.execute("UPDATE entries SET value=?", (b"garbage",))
    con.commit()
    con.close()
    assert ResultCache(p).lookup("k", "h") is None


def test_unwritable_cache_directory_disables_the_cache(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    db = ResultCache(f / "sub" / "r.sqlite")  # a parent that is a file: cannot be created
    assert not db.enabled
    db.store("k", "h", 1)
    db.close()
    assert db.lookup("k", "h") is None


def test_size_is_bounded_least_recently_used_first(tmp_path):
    p = tmp_path / "r.sqlite"
    db = ResultCache(p, max_bytes=20_000)
    for i in range(40):
        db.store(f"k{i}", "h", os.urandom(2000))  # incompressible: ~2 kB each
        db.flush()
    total = sqlite3.connect(p).execute("SELECT SUM(size), COUNT(*) FROM entries").fetchone()
    assert total[0] <= 20_000 and 0 < total[1] < 40
    assert db.lookup("k39", "h") is not None  # the newest stays
    assert db.lookup("k0", "h") is None
    db.close()


_WRITER = """
import sys
from cudamigrate.pipeline.result_cache import ResultCache
db = ResultCache(__import__("pathlib").Path(sys.argv[1]))
for i in range(200):
    db.store(f"{sys.argv[2]}{i}", "h", list(range(50)))
    if i % 20 == 0:
        db.flush()
    db.lookup(f"{sys.argv[2]}{i // 2}", "h")
db.close()
"""


def test_concurrent_runs_do_not_break_each_other(tmp_path):
    p = tmp_path / "r.sqlite"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(p), tag], env=env, stderr=subprocess.PIPE)
             for tag in ("a", "b", "c")]
    for pr in procs:
        _, err = pr.communicate(timeout=120)
        assert pr.returncode == 0, err.decode()
    db = ResultCache(p)
    got = db.lookup_many([(f"{t}{i}", "h") for t in "abc" for i in range(200)])
    assert len(got) == 600 and all(e.value == list(range(50)) for e in got.values())
    db.close()


# ----------------------------------------------------------------------------- what results depend on
def test_tree_state_header_and_include_lines_are_shared_bodies_are_not():
    base = [("/p/a.cu", b'#include "x.h"\nint a;\n'), ("/p/b.cu", b"int b;\n"), ("/p/x.h", b"int x;\n")]
    s0 = tree_state(base)
    body = tree_state([("/p/a.cu", b'#include "x.h"\nint a2;\n')] + base[1:])
    assert body.fine == s0.fine and body.coarse != s0.coarse  # a body edit stays the file's own business
    header = tree_state(base[:2] + [("/p/x.h", b"int y;\n")])
    assert header.fine != s0.fine
    inc = tree_state([("/p/a.cu", b'#include "y.h"\nint a;\n')] + base[1:])
    assert inc.fine != s0.fine
    listing = tree_state(base + [("/p/c.cu", b"int c;\n")])
    assert listing.fine != s0.fine
    included_cu = [("/p/a.cu", b'#include "k.cu"\n'), ("/p/k.cu", b"int k;\n")]
    assert tree_state(included_cu).fine != tree_state([included_cu[0], ("/p/k.cu", b"int k2;\n")]).fine
    assert not s0.texture and s0.shared(False) == s0.fine
    tex = tree_state(base + [("/p/t.cu", b"texture<float, 1> tex;\n")])
    assert tex.texture and tex.shared(False) == tex.coarse


def test_tree_state_defines_before_an_include_are_shared_later_ones_are_not():
    # the file a source includes sees the macros defined before the include (`#define ulong4 uint4`, then
    # `#include "kernel.cu"`: match/shadows.py), so its cached result depends on them; a macro after the
    # last include is the source's own business
    def state(main: bytes):
        return tree_state([("/p/main.cu", main), ("/p/kernel.cu", b"__global__ void k(ulong4 *p) {}\n")])

    s0 = state(b'#define ulong4 uint4\n#include "kernel.cu"\n#define N 4\n')
    assert state(b'#define ulong4 uint2\n#include "kernel.cu"\n#define N 4\n').fine != s0.fine
    assert state(b'#include "kernel.cu"\n#define N 4\n').fine != s0.fine
    assert state(b'#define ulong4 uint4\n#include "kernel.cu"\n#define N 8\n').fine == s0.fine


def test_a_header_calling_a_maskless_warp_intrinsic_makes_the_run_coarse():
    """CM502 picks a header helper's mask from its callers in the including files (match/warp_flow.py): an edit
    of an includer's body must re-scan the header."""
    base = [("/p/a.cu", b'#include "w.cuh"\nint a;\n'), ("/p/w.cuh", b"__device__ int f(int v) { return __shfl_down(v, 1); }\n")]
    s = tree_state(base)
    assert s.texture and s.shared(False) == s.coarse
    assert not tree_state([base[0], ("/p/w.cuh", b"__device__ int f(int v) { return __shfl_down_sync(~0u, v, 1); }\n")]).texture
    assert not tree_state([("/p/a.cu", b"__global__ void k(int *p) { p[0] = __shfl_down(p[0], 1); }\n")]).texture


def test_depset_sees_edits_and_new_headers(tmp_path):
    h = tmp_path / "h.h"
    h.write_text("int a;\n")
    ds = DepSet.capture([str(h)], [], set())
    assert ds.valid()
    (tmp_path / "notes.o").write_bytes(b"\0")  # a build product next to it does not count
    assert ds.valid()
    (tmp_path / "other.h").write_text("int b;\n")  # a header that an include may now find does
    assert not ds.valid()
    ds = DepSet.capture([str(h)], [], set())
    h.write_text("int c;\n")
    assert not ds.valid()


def test_read_recorder_sees_reads_of_any_helper(tmp_path):
    from cudamigrate.read.project_index import ProjectIndex
    from cudamigrate.read.source import read_regular

    cache.install_read_recorder()
    f = tmp_path / "seen.cuh"
    f.write_text("x")
    read_regular(f)
    g = tmp_path / "seen2.h"
    g.write_text("y")
    ProjectIndex().read(g)  # Path.read_bytes inside
    h = tmp_path / "not_ours.h"
    h.write_text("z")
    h.read_bytes()  # read by the host program (here: the test), not by cudamigrate
    opened, _ = cache.recorded_reads()
    assert str(f) in opened and str(g) in opened
    assert str(h) not in opened


def test_run_digest_follows_rules_options_and_code(tmp_path):
    from cudamigrate.scan.engine import Options

    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules" / "removals", rules)
    d0 = cache.run_digest([rules], Options())
    assert cache.run_digest([rules], Options()) == d0
    assert cache.run_digest([rules], Options(target=(12, 0))) != d0
    assert cache.run_digest([rules], Options(select=["CM501"])) != d0
    assert cache.run_digest([rules], Options(keep_compat=(11, 8))) != d0
    assert cache.run_digest([rules], Options(options={"stream": "s"})) != d0
    assert cache.run_digest([rules], Options(), max_bytes=10) != d0
    one = next(rules.rglob("*.yaml"))
    one.write_text(one.read_text() + "\n# edited\n")
    assert cache.run_digest([rules], Options()) != d0


def test_cached_run_stores_only_what_was_scanned_from_the_hashed_bytes(tmp_path):
    a = tmp_path / "a.cu"
    a.write_text("int a;\n")
    db = ResultCache(tmp_path / "r.sqlite")
    run = CachedRun(db, "run", [(str(a), "a.cu")])
    hits, todo = run.partition()
    assert hits == {} and todo == [0]
    run.record(0, "stale result", content_hash(b"other bytes"))
    assert run.finish([], []) == 0
    run = CachedRun(db, "run", [(str(a), "a.cu")])
    run.partition()
    run.record(0, "result", content_hash(a.read_bytes()))
    assert run.finish([], []) == 1
    run = CachedRun(db, "run", [(str(a), "a.cu")])
    assert run.partition() == ({0: "result"}, [])
    run = CachedRun(db, "another run digest", [(str(a), "a.cu")])
    assert run.partition() == ({}, [0])
    db.close()


# ----------------------------------------------------------------------------- the CLI and the runner
def _scan_json(*args) -> dict:
    r = run_cli("scan", "--format", "json", *args)
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.stdout)


def _ids(report: dict) -> list[tuple[str, str, int]]:
    return sorted((f["rule"], Path(f["path"]).name, f["line"]) for f in report["findings"])


class _Counter:
    """Counts the files the engine really scans (the cache answers the others)."""

    def __init__(self, monkeypatch):
        self.paths: list[str] = []
        orig = Engine.scan_guarded

        def counted(engine, src, display):
            self.paths.append(Path(display).name)
            return orig(engine, src, display)

        monkeypatch.setattr(Engine, "scan_guarded", counted)

    def take(self) -> list[str]:
        got, self.paths = sorted(self.paths), []
        return got


def _tree(root: Path, n: int = 4) -> None:
    (root / "inc").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "inc" / "gpu.h").write_text(CM503_HEADER)
    (root / "src" / "a.cu").write_text(CM503_USE % "../inc/gpu.h")
    for i in range(n):
        (root / "src" / f"f{i}.cu").write_text(LEGACY)


def test_unchanged_tree_is_answered_from_the_cache_and_edits_cost_one_file(tmp_path, cache_dir, monkeypatch):
    _tree(tmp_path)
    count = _Counter(monkeypatch)
    first = _scan_json(tmp_path, "-j", "1")
    assert len(count.take()) == 6
    assert _scan_json(tmp_path, "-j", "1") == first
    assert count.take() == []
    (tmp_path / "src" / "f1.cu").write_text(CLEAN)
    edited = _scan_json(tmp_path, "-j", "1")
    assert count.take() == ["f1.cu"]
    assert "f1.cu" not in {i[1] for i in _ids(edited)}
    assert len(_ids(edited)) == len(_ids(first)) - 1
    assert _scan_json(tmp_path, "-j", "1", "--no-cache") == edited
    assert len(count.take()) == 6  # --no-cache scans everything


def test_reads_of_an_earlier_run_in_a_churning_directory(tmp_path, cache_dir, monkeypatch):
    # an earlier run in this process read a file in a directory where other programs' temporaries come and go
    # (/tmp and nvcc's `tmpxft_*.cpp`): the record ties the next runs' results to that directory's listing, so
    # they are re-scanned (never stale); forgotten (as conftest does before each test), the cache answers
    churn = tmp_path / "tmpdir"
    churn.mkdir()
    (churn / "one.cu").write_text(LEGACY)
    _scan_json(churn / "one.cu", "-j", "1")
    _tree(tmp_path / "tree")
    count = _Counter(monkeypatch)
    _scan_json(tmp_path / "tree", "-j", "1")
    assert len(count.take()) == 6
    (churn / "tmpxft_1.cpp").write_text("int x;\n")
    _scan_json(tmp_path / "tree", "-j", "1")
    assert len(count.take()) == 6  # the earlier run's directory changed: a wasted re-scan, not a stale answer
    cache.forget_reads()  # what conftest does before each test, whose tree is its own
    _tree(tmp_path / "next")
    _scan_json(tmp_path / "next", "-j", "1")
    assert len(count.take()) == 6
    (churn / "tmpxft_2.cpp").write_text("int y;\n")
    _scan_json(tmp_path / "next", "-j", "1")
    assert count.take() == []


def test_header_edit_in_the_run_changes_its_includers(tmp_path, cache_dir, monkeypatch):
    _tree(tmp_path)
    count = _Counter(monkeypatch)
    assert ("CM503", "a.cu", 2) in _ids(_scan_json(tmp_path, "-j", "1"))
    count.take()
    (tmp_path / "inc" / "gpu.h").write_text(CM503_HEADER.replace("cudaDeviceProp prop", "int prop"))
    after = _scan_json(tmp_path, "-j", "1")
    assert ("CM503", "a.cu", 2) not in _ids(after)
    assert "a.cu" in count.take()
    assert _scan_json(tmp_path, "-j", "1", "--no-cache") == after


def test_header_outside_the_scanned_paths_is_a_dependency(tmp_path, cache_dir):
    _tree(tmp_path)
    src = tmp_path / "src"
    assert ("CM503", "a.cu", 2) in _ids(_scan_json(src / "a.cu"))
    assert ("CM503", "a.cu", 2) in _ids(_scan_json(src / "a.cu"))
    (tmp_path / "inc" / "gpu.h").write_text(CM503_HEADER.replace("cudaDeviceProp prop", "int prop"))
    assert ("CM503", "a.cu", 2) not in _ids(_scan_json(src / "a.cu"))


def test_rule_file_and_option_changes_are_seen(tmp_path, cache_dir):
    _tree(tmp_path, n=1)
    rules = tmp_path / "rules"
    rules.mkdir()
    rule = next((ROOT / "rules").rglob("CM501-*.yaml"))
    shutil.copy(rule, rules / rule.name)
    args = [tmp_path / "src", "--no-builtin-rules", "--rules-dir", rules]
    first = _scan_json(*args)
    assert [f["rule"] for f in first["findings"]] == ["CM501"]
    text = (rules / rule.name).read_text()
    assert "\nmessage: >-\n" in text
    (rules / rule.name).write_text(text.replace("\nmessage: >-\n", "\nmessage: >-\n  EDITED-RULE-MESSAGE\n", 1))
    edited = _scan_json(*args)
    assert "EDITED-RULE-MESSAGE" in edited["findings"][0]["message"]
    assert _scan_json(*args, "--ignore", "CM501")["findings"] == []
    older = _scan_json(*args, "--target-cuda", "12.0")["findings"]
    assert [f["message"] for f in older] != [f["message"] for f in edited["findings"]]  # "deprecated", not "removed"
    assert _scan_json(*args, "--target-cuda", "12.0")["findings"] == older


def test_fix_works_on_current_bytes_after_a_cached_scan(tmp_path, cache_dir):
    _tree(tmp_path, n=1)
    f = tmp_path / "src" / "f0.cu"
    _scan_json(tmp_path)
    _scan_json(tmp_path)  # answered from the cache
    # the same calls at other offsets, same length: a fix applied from the stored result would cut wrong bytes
    moved = "#include <cuda_runtime.h>\nvoid s() { cudaThreadSynchronize(); cudaThreadExit(); }\n"
    f.write_text(moved)
    twin = tmp_path / "twin"
    twin.mkdir()
    (twin / "f0.cu").write_text(moved)
    assert run_cli("fix", f).exit_code in (0, 1)
    assert run_cli("fix", "--no-cache", twin / "f0.cu").exit_code in (0, 1)
    assert f.read_text() == (twin / "f0.cu").read_text()
    assert "cudaDeviceSynchronize(); cudaDeviceReset();" in f.read_text()
    assert not any(x["rule"] == "CM501" for x in _scan_json(tmp_path)["findings"])


def test_corrupt_cache_file_changes_nothing(tmp_path, cache_dir):
    _tree(tmp_path, n=2)
    first = _scan_json(tmp_path)
    for p in cache_dir.iterdir():
        if p.is_file():
            p.write_bytes(b"\xff" * 4096)
    assert _scan_json(tmp_path) == first
    assert _scan_json(tmp_path) == first


def test_parallel_cached_scan_matches_serial(tmp_path, cache_dir):
    (tmp_path / "src").mkdir()
    for i in range(70):  # above the in-process threshold: workers scan the misses
        (tmp_path / "src" / f"f{i:02}.cu").write_text(LEGACY if i % 2 else CLEAN)
    serial = _scan_json(tmp_path, "-j", "1", "--no-cache")
    assert _scan_json(tmp_path, "-j", "2") == serial
    (tmp_path / "src" / "f03.cu").write_text(CLEAN)
    (tmp_path / "src" / "f04.cu").write_text(LEGACY)
    assert _scan_json(tmp_path, "-j", "2") == _scan_json(tmp_path, "-j", "1", "--no-cache")


def test_texture_files_read_by_an_earlier_run_do_not_make_later_runs_coarse(tmp_path, cache_dir, monkeypatch):
    other = tmp_path / "other"
    (other / "inc").mkdir(parents=True)
    (other / "inc" / "tex.h").write_text("texture<float, 1> texRef;\n")
    (other / "k.cu").write_text('#include "inc/tex.h"\nfloat f(int i) { return tex1Dfetch(texRef, i); }\n')
    _scan_json(other / "k.cu")  # reads tex.h (outside that run) in this process
    tree = tmp_path / "tree"
    _tree(tree)
    count = _Counter(monkeypatch)
    _scan_json(tree, "-j", "1")
    count.take()
    (tree / "src" / "f1.cu").write_text(CLEAN)
    _scan_json(tree, "-j", "1")
    assert count.take() == ["f1.cu"]


def test_tree_state_conditions_before_an_include_are_shared():
    # whether an includer's `#define ulong4 uint4` counts for the kernel it includes depends on the branch it sits
    # in (match/shadows.py follows only the branches the preprocessor takes): the condition is shared too
    def state(main: bytes):
        return tree_state([("/p/main.cu", main), ("/p/kernel.cu", b"__global__ void k(ulong4 *p) {}\n")])

    s0 = state(b'#ifdef __HIPCC__\n#define ulong4 uint4\n#endif\n#include "kernel.cu"\n')
    assert state(b'#ifdef __CUDACC__\n#define ulong4 uint4\n#endif\n#include "kernel.cu"\n').fine != s0.fine
    assert state(b'#ifdef __HIPCC__\n#endif\n#define ulong4 uint4\n#include "kernel.cu"\n').fine != s0.fine
    assert state(b'#ifdef __HIPCC__\n#define ulong4 uint4\n#endif\n#include "kernel.cu"\n#if 1\n#endif\n').fine == s0.fine
