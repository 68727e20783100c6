"""The one runner (cudamigrate/pipeline/runner.py): `fix` computes edits in worker processes for large inputs, and the
result (files written, messages, their order) is the same as in one process."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from cudamigrate.scan.engine import Engine, Options
from cudamigrate.knowledge.load import builtin_rules_dir, load_rules
from cudamigrate.pipeline.runner import PARALLEL_MIN_FILES, EngineSpec, FileJob, run

from .helpers import ROOT, run_cli

SOURCES = sorted(p for p in (ROOT / "fixtures" / "removals").glob("*/before.cu"))[:6]


def _tree(root: Path, n: int) -> Path:
    for i in range(n):
        d = root / f"d{i % 3}"
        d.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SOURCES[i % len(SOURCES)], d / f"f{i:03d}.cu")
    return root


def test_fix_in_worker_processes_equals_fix_in_one(tmp_path):
    n = PARALLEL_MIN_FILES + 6
    one, many = _tree(tmp_path / "one", n), _tree(tmp_path / "many", n)
    r1 = run_cli("fix", "--no-semantic", "-j", "1", "one", cwd=tmp_path)
    r2 = run_cli("fix", "--no-semantic", "-j", "2", "many", cwd=tmp_path)
    assert r1.exit_code == r2.exit_code
    assert r1.stderr.replace("one/", "X/") == r2.stderr.replace("many/", "X/")
    assert r1.stdout.replace("one/", "X/") == r2.stdout.replace("many/", "X/")
    assert "Fixed 0 finding" not in r1.stdout
    for p in sorted(one.rglob("*.cu")):
        assert p.read_bytes() == (many / p.relative_to(one)).read_bytes(), p


@dataclass(frozen=True)
class _Pid:
    """A work item that tells which process ran it."""

    ships_facts = True

    def __call__(self, engine: Engine, job: FileJob) -> tuple[str, int]:
        return job.display, os.getpid()

    def failed(self, job: FileJob, exc: BaseException) -> tuple[str, int]:
        raise AssertionError(f"{job.display}: {exc}")


def test_large_inputs_run_in_workers_small_ones_here_in_order(tmp_path):
    opts = Options(select=["CM501"])
    engine = Engine(load_rules([builtin_rules_dir()]).rules, opts)
    spec = EngineSpec([builtin_rules_dir()], opts)
    files = [tmp_path / f"f{i:03d}.cu" for i in range(PARALLEL_MIN_FILES)]
    for p in files:
        p.write_text("void f() {}\n")
    big = list(run(engine, spec, files, _Pid(), jobs=2))
    assert [Path(d).name for d, _ in big] == [p.name for p in files]  # input order
    assert os.getpid() not in {pid for _, pid in big}
    small = list(run(engine, spec, files[:3], _Pid(), jobs=2))
    assert {pid for _, pid in small} == {os.getpid()}
