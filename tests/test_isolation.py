"""One bad file or one broken rule never sinks a run (issue 15, isolation).

An internal error (simulated by poisoning a matcher in-process, and the real texture inputs that used to
raise `AttributeError: 'NoneType' object has no attribute 'start_byte'`) becomes one line naming the
file, the rule and the position; that file's other rules and every other file are still reported, in
process and in worker processes, for `scan` and `fix`; the exit code is 2.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudamigrate.scan import engine as engine_mod
from cudamigrate.cli.main import main
from cudamigrate.match import kinds

GOOD = b"int main() { cudaThreadSynchronize(); return 0; }\n"
# CM501 (an `identifier` matcher, poisoned below) and CM601 (the texture builtin) in one file
POISONED = (b"// POISON\ntexture<float, 2> tex;\n"
            b"int main() { cudaThreadSynchronize(); return 0; }\n")
TEXTURE_CRASHERS = [
    b"texture<>&n;",
    b"texture<>e<d;",
    b"texture<unsigned short, 2, cudaReadModeElementType> &get_ref(void);\n",
]


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _tree(root: Path, n: int, poisoned: bytes | None = POISONED) -> Path:
    root.mkdir(exist_ok=True)
    for i in range(n):
        (root / f"g{i:03d}.cu").write_bytes(GOOD)
    if poisoned is not None:
        (root / "poisoned.cu").write_bytes(poisoned)
    return root


def _patch_hit(monkeypatch, kind: str, fn) -> None:
    """Replace one matcher kind's per-identifier function in the registry the engine dispatches through."""
    entry = kinds.MATCHER_KINDS.get(kind)
    monkeypatch.setitem(kinds.MATCHER_KINDS.entries, kind, replace(entry, impl=replace(entry.impl, hit=fn)))


@pytest.fixture
def poisoned_call_matcher(monkeypatch):
    """The `identifier` matcher raises on any file holding POISON (fork-started workers inherit it)."""
    real = kinds.MATCHER_KINDS.get("identifier").impl.hit

    def broken(rule, ctx, unit, node):
        if b"POISON" in ctx.source.data:
            raise RuntimeError("simulated matcher bug")
        return real(rule, ctx, unit, node)

    _patch_hit(monkeypatch, "identifier", broken)
    return broken


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_poisoned_matcher_scan_reports_good_files_and_exits_2(tmp_path, poisoned_call_matcher, jobs):
    n = 70 if jobs == "2" else 5  # 64+ files take the process pool
    src = _tree(tmp_path / "src", n)
    r = run("scan", "-j", jobs, "--select", "CM501,CM601", "--sort", "file", str(src))
    assert r.exit_code == 2, r.output
    for i in range(n):
        assert f"g{i:03d}.cu:1:" in r.output
    # the poisoned file's other rule (CM601) still ran
    assert "poisoned.cu:2:" in r.output and "CM601" in r.output
    errs = [ln for ln in r.output.splitlines() if ln.startswith("cudamigrate:") and "poisoned.cu" in ln]
    assert len(errs) == 1, errs
    assert "poisoned.cu:3:" in errs[0] and "CM501" in errs[0] and "RuntimeError: simulated matcher bug" in errs[0]
    assert "Traceback" not in r.output


def test_debug_prints_the_traceback(tmp_path, poisoned_call_matcher):
    src = _tree(tmp_path / "src", 2)
    r = run("scan", "--debug", "--select", "CM501", str(src))
    assert r.exit_code == 2
    assert "Traceback (most recent call last)" in r.output and "simulated matcher bug" in r.output


def test_whole_file_failure_is_one_line_and_others_still_scanned(tmp_path, monkeypatch):
    real = engine_mod.parse

    def broken(data):
        if b"POISON" in data:
            raise MemoryError("simulated parser failure")
        return real(data)

    monkeypatch.setattr(engine_mod, "parse", broken)
    src = _tree(tmp_path / "src", 3)
    r = run("scan", "--select", "CM501", str(src))
    assert r.exit_code == 2, r.output
    assert all(f"g{i:03d}.cu:1:" in r.output for i in range(3))
    line = [ln for ln in r.output.splitlines() if "poisoned.cu" in ln]
    assert len(line) == 1 and "internal error while scanning" in line[0] and "MemoryError" in line[0]


@pytest.mark.parametrize("data", TEXTURE_CRASHERS, ids=["ref-n", "e-lt-d", "get_ref"])
def test_texture_declarators_that_crashed_are_manual_findings(tmp_path, data):
    """Root cause: a texture<> type with a reference/function/odd declarator became a Match without a node."""
    src = _tree(tmp_path / "src", 3, poisoned=None)
    (src / "tex.cuh").write_bytes(data)
    r = run("scan", "--sort", "file", str(src))
    assert r.exit_code == 1, r.output  # findings, no internal error
    assert "tex.cuh:1:1: CM601 [ ]" in r.output
    assert "internal error" not in r.output and "rule error" not in r.output
    assert all(f"g{i:03d}.cu:1:" in r.output for i in range(3))


def test_real_texture_header_in_worker_processes(tmp_path):
    src = _tree(tmp_path / "src", 70, poisoned=None)
    (src / "bench.cuh").write_bytes(TEXTURE_CRASHERS[2])
    r = run("scan", "-j", "2", str(src))
    assert r.exit_code == 1, r.output
    assert "bench.cuh:1:1: CM601" in r.output and "Found 71 finding(s) in 71 file(s)" in r.output


def test_fix_does_not_stop_half_way(tmp_path, monkeypatch):
    import cudamigrate.fix.apply as apply_mod

    real = apply_mod.fix_bytes

    def broken(engine, path, data, display, **kw):
        if b"POISON" in data:
            raise RuntimeError("simulated fix bug")
        return real(engine, path, data, display, **kw)

    monkeypatch.setattr(apply_mod, "fix_bytes", broken)
    src = _tree(tmp_path / "src", 6)
    (src / "tex.cuh").write_bytes(TEXTURE_CRASHERS[2])
    r = run("fix", "--select", "CM501,CM601", str(src))
    assert r.exit_code == 2, r.output
    for i in range(6):
        assert b"cudaDeviceSynchronize" in (src / f"g{i:03d}.cu").read_bytes()
    assert (src / "poisoned.cu").read_bytes() == POISONED
    line = [ln for ln in r.output.splitlines() if "poisoned.cu" in ln]
    assert len(line) == 1 and "internal error while fixing" in line[0]
    assert "Fixed 6 finding(s) in 6 file(s)" in r.output


def test_fix_with_a_poisoned_matcher_fixes_the_rest(tmp_path, poisoned_call_matcher):
    src = _tree(tmp_path / "src", 4)
    r = run("fix", "--select", "CM501", str(src))
    assert r.exit_code == 2, r.output
    assert all(b"cudaDeviceSynchronize" in (src / f"g{i:03d}.cu").read_bytes() for i in range(4))
    assert (src / "poisoned.cu").read_bytes() == POISONED


def test_worker_death_is_an_error_per_file_not_a_lost_run(tmp_path, monkeypatch):
    """A worker that dies (here: os._exit in the matcher) breaks the pool; every file still gets a line."""
    real = kinds.MATCHER_KINDS.get("identifier").impl.hit

    def dies(rule, ctx, unit, node):
        if b"POISON" in ctx.source.data:
            os._exit(3)
        return real(rule, ctx, unit, node)

    _patch_hit(monkeypatch, "identifier", dies)
    src = _tree(tmp_path / "src", 70)
    r = run("scan", "-j", "2", "--select", "CM501", str(src))
    assert r.exit_code == 2
    assert "Traceback" not in r.output
    assert "internal error while scanning in a worker process" in r.output


@pytest.mark.parametrize("jobs", [1, 2])
def test_semantic_runner_isolates_files_too(tmp_path, poisoned_call_matcher, jobs):
    """Semantic mode goes through the one runner (facts shipped to workers); the same guards hold there."""
    from types import SimpleNamespace

    from cudamigrate.scan.engine import Engine, Options
    from cudamigrate.knowledge.load import builtin_rules_dir, load_rules
    from cudamigrate.pipeline.runner import EngineSpec, scan_files

    n = 70 if jobs == 2 else 4
    src = _tree(tmp_path / "src", n)
    opts = Options(select=["CM501", "CM601"])
    engine = Engine(load_rules([builtin_rules_dir()]).rules, opts)
    spec = EngineSpec([builtin_rules_dir()], opts)
    db = SimpleNamespace(facts={})  # no libclang facts: every file falls back to tree-sitter
    files = sorted(src.iterdir())
    results = list(scan_files(engine, spec, files, jobs, facts=db))
    assert len(results) == n + 1
    by_name = {Path(r.path).name: r for r in results}
    assert all(len(by_name[f"g{i:03d}.cu"].findings) == 1 for i in range(n))
    bad = by_name["poisoned.cu"]
    assert bad.internal == 1 and [f.rule_id for f in bad.findings] == ["CM601"]
    assert "CM501" in bad.errors[0] and "simulated matcher bug" in bad.errors[0]


def test_a_bug_hit_at_every_call_is_a_few_lines_not_thousands(tmp_path, poisoned_call_matcher):
    body = "".join("  cudaThreadSynchronize();\n" for i in range(200))
    (tmp_path / "many.cu").write_text(f"// POISON\nvoid f(float *d) {{\n{body}}}\n")
    r = run("scan", "--select", "CM501", str(tmp_path / "many.cu"))
    lines = [ln for ln in r.output.splitlines() if ln.startswith("cudamigrate:")]
    assert r.exit_code == 2
    assert len(lines) == 21 and lines[-1].endswith("... and 180 more internal error(s) in this file")


def test_semantic_setup_failure_falls_back_to_tree_sitter(tmp_path, monkeypatch):
    import cudamigrate.cli.semantic as sem

    def broken(*a, **k):
        raise KeyError("directory")  # e.g. a compile_commands.json entry without the keys we expect

    monkeypatch.setattr(sem, "setup_for_cli", broken)
    src = _tree(tmp_path / "src", 2, poisoned=None)
    r = run("scan", str(src))
    assert "warning: semantic mode failed (KeyError: 'directory'); scanning with tree-sitter only" in r.output
    assert "g000.cu:1:" in r.output and r.exit_code == 1
