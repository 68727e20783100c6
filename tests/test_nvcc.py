"""nvcc 13.0 compiles every fixed fixture and every lookalike; removal fixtures fail before the fix.

All compilations are started together in a thread pool (nvcc is a separate
process) the first time any of these tests runs, so the stage takes about
(total nvcc time / cores). Only `-c` is used here; linking happens in the GPU stage.
"""

from __future__ import annotations

import os
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cudamigrate.build import compile_file
from cudamigrate.fixtures import load_cases

from .conftest import FIXTURES

pytestmark = pytest.mark.nvcc

CASES = load_cases(FIXTURES)


def _jobs():
    jobs = []
    for c in CASES:
        comp = c.compile
        flags = comp.get("flags", []) or []
        inc = [c.dir]
        if c.after and comp.get("after", "compile") != "none":
            jobs.append((c, "after", c.after, flags, inc))
        if c.ok and comp.get("ok", "compile") != "none":
            jobs.append((c, "ok", c.ok, flags, inc))
        if c.before and comp.get("before", "compile") != "none":
            jobs.append((c, "before", c.before, flags, inc))
    return jobs


JOBS = _jobs()
_RESULTS: dict = {}


@pytest.fixture(scope="module")
def results():
    if not _RESULTS:
        tmp = Path(tempfile.mkdtemp(prefix="cudamigrate-nvcc-"))
        workers = max(2, (os.cpu_count() or 2))

        def work(job):
            c, which, src, flags, inc = job
            out = tmp / f"{c.name.replace('/', '_')}-{which}.o"
            return (c.name, which), compile_file(src, out, link=False, flags=flags, include_dirs=inc)

        with ThreadPoolExecutor(workers) as pool:
            for key, res in pool.map(work, JOBS):
                _RESULTS[key] = res
    return _RESULTS


def _ids(jobs):
    return [f"{c.name}:{w}" for c, w, *_ in jobs]


@pytest.mark.parametrize("job", JOBS, ids=_ids(JOBS))
def test_nvcc(job, results):
    c, which, src, *_ = job
    res = results[(c.name, which)]
    if which == "before" and c.compile.get("before") == "fail":
        assert not res.ok, f"{src} compiles with nvcc 13.0, so the rule does not target a real break"
        pattern = c.compile.get("before_error")
        assert pattern, f"{c.dir}/fixture.yaml: compile.before_error must say which error proves the removal"
        assert re.search(pattern, res.output), f"expected error /{pattern}/ not in nvcc output:\n{res.output[-3000:]}"
    else:
        assert res.ok, f"nvcc failed on {src}:\n{' '.join(res.cmd)}\n{res.output[-4000:]}"
