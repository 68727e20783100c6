from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# Never read or write the user's real caches (result cache, compiled rules): a fresh directory per test
# session, so the suite cannot see results stored by an older checkout. Set before anything imports
# cudamigrate; subprocesses inherit it.
import tempfile as _tempfile

os.environ["CUDAMIGRATE_CACHE_DIR"] = _tempfile.mkdtemp(prefix="cudamigrate-test-cache-")
os.environ["XDG_CACHE_HOME"] = os.environ["CUDAMIGRATE_CACHE_DIR"]
# `fix` compiles what it changes when nvcc is on PATH (cudamigrate/fixproof/rollback.py): two nvcc runs per
# changed unit would multiply the suite's time, and most fix tests are about the fixer's edits, not the
# compiler. tests/test_verify_compile.py turns it back on (and tests the default) explicitly.
os.environ.setdefault("CUDAMIGRATE_VERIFY", "off")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
RULES = ROOT / "rules"


@pytest.fixture(autouse=True)
def _fresh_read_record():
    """Each test starts with no reads recorded by the tests before it in this process: the result cache makes
    every run depend on what the process read, so an earlier test's file in /tmp tied a later test's cache to
    the listing of /tmp, where the other worker's nvcc temporaries come and go (the cache and replay tests
    failed on a loaded machine, in the order load gave: tests/test_cache.py
    `test_reads_of_an_earlier_run_in_a_churning_directory`)."""
    from cudamigrate.pipeline.result_cache import forget_reads

    forget_reads()
    yield


def pytest_collection_modifyitems(config, items):
    if shutil.which("nvcc") is None:
        skip = pytest.mark.skip(reason="nvcc not on PATH: nvcc compile tests skipped")
        for item in items:
            if "nvcc" in item.keywords:
                item.add_marker(skip)


def gpu_available() -> bool:
    """One GPU check for the whole suite (CUDAMIGRATE_NO_GPU=1 hides the GPU): cudamigrate.toolcheck.gpu's."""
    from cudamigrate.toolcheck.gpu import gpu_available as available

    return available()
