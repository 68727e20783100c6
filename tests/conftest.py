from __future__ import annotations

import shutil
from pathlib import Path

import pytest

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
    """One GPU check for the whole suite (CUDAMIGRATE_NO_GPU=1 hides the GPU): cudamigrate.gpu's."""
    from cudamigrate.gpu import gpu_available as available

    return available()
