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
