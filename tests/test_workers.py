"""Pool workers inherit the parent's compiled engine (fork) instead of loading the rule set again, and the
order of results does not depend on the number of workers."""

from __future__ import annotations

import json
import multiprocessing as mp
import sys

import pytest

from cudamigrate.pipeline import runner

from .helpers import run_cli

LEGACY = "#include <cuda_runtime.h>\nvoid sync_all() { cudaThreadSynchronize(); }\n"
CLEAN = "#include <cuda_runtime.h>\nvoid sync_all() { cudaDeviceSynchronize(); }\n"


def _tree(root, n=70):
    for i in range(n):  # above the in-process threshold: a pool scans them
        (root / f"d{i % 3}").mkdir(exist_ok=True)
        (root / f"d{i % 3}" / f"f{i:02}.cu").write_text(LEGACY if i % 2 else CLEAN)


@pytest.mark.skipif(not sys.platform.startswith("linux") or "fork" not in mp.get_all_start_methods(),
                    reason="workers inherit the engine only where processes fork")
def test_workers_do_not_rebuild_the_engine(tmp_path, monkeypatch):
    _tree(tmp_path)

    def no_rebuild(self):
        raise AssertionError("a worker loaded the rule set again")

    monkeypatch.setattr(runner.EngineSpec, "build", no_rebuild)
    r = run_cli("scan", "--format", "json", "--no-cache", "-j", "2", tmp_path)
    report = json.loads(r.stdout)
    assert report["errors"] == [] and report["summary"]["files_scanned"] == 70
    assert report["summary"]["findings"] == 35


def test_output_order_is_the_same_for_any_number_of_workers(tmp_path):
    _tree(tmp_path)
    one = run_cli("scan", "--format", "json", "--no-cache", "-j", "1", tmp_path).stdout
    two = run_cli("scan", "--format", "json", "--no-cache", "-j", "2", tmp_path).stdout
    assert one == two


def test_the_warm_up_before_forking_reads_no_file_and_scans_cleanly():
    """The in-memory scan done before workers fork must not add a dependency to the result cache (it reads
    no file) and must itself scan without errors (a failure there would only hide a cost, not a bug)."""
    from pathlib import Path

    from cudamigrate.pipeline import result_cache as cache
    from cudamigrate.scan.engine import WARM_UP_NAME, WARM_UP_SOURCE, Engine
    from cudamigrate.knowledge.load import load_rules

    engine = Engine(load_rules().rules)
    project = engine.project
    before = tuple(set(x) for x in cache.recorded_reads())
    engine.warm_up()
    assert cache.recorded_reads() == before
    assert engine.project is project and not project._includes and not project._macros  # the run's index untouched
    res = engine.scan_bytes(Path(WARM_UP_NAME), WARM_UP_SOURCE)
    assert not res.errors and not res.internal and len(res.findings) >= 5



TEX_HEADER = "#pragma once\ntexture<float, 1, cudaReadModeElementType> texRef;\n"
TEX_READS = "#pragma once\n__device__ float sample(int i) { return tex1Dfetch(texRef, i); }\n"
TEX_USER = '#include "tex.cuh"\n#include "reads.cuh"\n__global__ void k(float *o) { o[0] = sample(0); }\n'


def _texture_tree(root, n=70):
    """A header that reads a texture reference its includers declare (`reads.cuh`): its precheck asks for the
    run's include graph (texture_includers.includers_may_declare)."""
    root.mkdir(exist_ok=True)
    (root / "tex.cuh").write_text(TEX_HEADER)
    (root / "reads.cuh").write_text(TEX_READS)
    for i in range(n):
        (root / f"f{i:02}.cu").write_text(TEX_USER if i % 7 == 0 else CLEAN)


def test_the_warm_up_builds_the_include_graph_only_when_a_file_to_scan_reads_references(tmp_path):
    from cudamigrate.knowledge.load import load_rules
    from cudamigrate.read.project_index import ProjectIndex
    from cudamigrate.scan.engine import Engine

    _texture_tree(tmp_path, 8)
    files = sorted(tmp_path.iterdir())
    engine = Engine(load_rules().rules, project=ProjectIndex(files=list(files)))
    engine.warm_up([tmp_path / "f01.cu", tmp_path / "tex.cuh"])  # none of them reads a reference: nothing built
    assert engine.project._includers is None
    engine.warm_up([tmp_path / "f01.cu", tmp_path / "reads.cuh"])
    assert engine.project._includers is not None
    assert engine.project.includers(tmp_path / "reads.cuh") == [(tmp_path / "f00.cu").resolve(), (tmp_path / "f07.cu").resolve()]


@pytest.mark.skipif(not sys.platform.startswith("linux") or "fork" not in mp.get_all_start_methods(),
                    reason="workers inherit the parent's index only where processes fork")
def test_workers_inherit_the_include_graph_instead_of_each_building_it(tmp_path, monkeypatch):
    """The run's include graph reads every file of the run: built in each worker that met a file reading a
    reference, it cost 0.13 s a worker on cuda-samples; now the parent builds it once before forking."""
    import os

    from cudamigrate.read.project_index import ProjectIndex

    _texture_tree(tmp_path / "tree")
    log = tmp_path / "built.log"
    original = ProjectIndex.includer_map

    def logged(self):
        if self._includers is None:
            with open(log, "a") as fh:
                fh.write(f"{os.getpid()}\n")
        return original(self)

    monkeypatch.setattr(ProjectIndex, "includer_map", logged)
    two = run_cli("scan", "--format", "json", "--no-cache", "-j", "2", tmp_path / "tree").stdout
    assert log.read_text().split() == [str(os.getpid())]  # built once, here, none in the workers
    assert json.loads(two)["summary"]["files_scanned"] == 72
    assert two == run_cli("scan", "--format", "json", "--no-cache", "-j", "1", tmp_path / "tree").stdout


@pytest.mark.skipif(not sys.platform.startswith("linux") or "fork" not in mp.get_all_start_methods(),
                    reason="workers inherit the parent's index only where processes fork")
def test_workers_inherit_the_shared_headers_macros_instead_of_each_working_them_out(tmp_path, monkeypatch):
    """A header many files of the run reach (a project's helper header): its own macros were worked out again by
    every worker that met one of those files; with the include graph built before forking, the parent works
    them out once. A header one file reaches is left to its worker."""
    import os

    from cudamigrate.read.project_index import ProjectIndex

    tree = tmp_path / "tree"
    _texture_tree(tree)
    (tree / "helper.cuh").write_text("#pragma once\n#define CHECK { cudaDeviceSynchronize(); }\n")
    (tree / "alone.cuh").write_text("#pragma once\n#define ALONE { cudaDeviceSynchronize(); }\n")
    for i in range(0, 70, 5):
        f = tree / f"f{i:02}.cu"
        f.write_text('#include "helper.cuh"\n' + ('#include "alone.cuh"\n' if i == 5 else "") + f.read_text())
    log = tmp_path / "macros.log"
    original = ProjectIndex._own_macros

    def logged(self, path, data):
        if data is None and self._key(path) not in self._macros:
            with open(log, "a") as fh:
                fh.write(f"{os.getpid()} {path.name}\n")
        return original(self, path, data)

    monkeypatch.setattr(ProjectIndex, "_own_macros", logged)
    two = run_cli("scan", "--format", "json", "--no-cache", "-j", "2", tree).stdout
    worked = [line.split() for line in log.read_text().splitlines()]
    assert [pid for pid, name in worked if name == "helper.cuh"] == [str(os.getpid())]  # once, here
    assert [pid for pid, name in worked if name == "alone.cuh"] != [str(os.getpid())]  # its worker's own
    assert two == run_cli("scan", "--format", "json", "--no-cache", "-j", "1", tree).stdout
