"""nvcc 13.0 compiles every fixed fixture and every lookalike; removal fixtures fail before the fix.

One test per compilation, so `pytest -n auto` (the README's command) spreads
nvcc processes over all cores. Only `-c` is used here; linking happens in the
GPU stage, which needs executables anyway.
"""

from __future__ import annotations

import re

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


def _ids(jobs):
    return [f"{c.name}:{w}" for c, w, *_ in jobs]


@pytest.mark.parametrize("job", JOBS, ids=_ids(JOBS))
def test_nvcc(job, tmp_path):
    c, which, src, flags, inc = job
    res = compile_file(src, tmp_path / f"{which}.o", link=False, flags=flags, include_dirs=inc)
    if which == "before" and c.compile.get("before") == "fail":
        assert not res.ok, f"{src} compiles with nvcc 13.0, so the rule does not target a real break"
        pattern = c.compile.get("before_error")
        assert pattern, f"{c.dir}/fixture.yaml: compile.before_error must say which error proves the removal"
        assert re.search(pattern, res.output), f"expected error /{pattern}/ not in nvcc output:\n{res.output[-3000:]}"
    else:
        assert res.ok, f"nvcc failed on {src}:\n{' '.join(res.cmd)}\n{res.output[-4000:]}"
