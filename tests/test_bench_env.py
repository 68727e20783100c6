"""The bench scripts' subprocesses see what their caller's environment provides (the GPU machine's run of
bench/lsp_latency.py --lsp: the server subprocess lost the carried wheels on PYTHONPATH and could not import re2)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench(name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_lsp_server_subprocess_keeps_the_callers_python_path() -> None:
    env = _bench("lsp_latency").server_env({"PYTHONPATH": "/carried/.pydeps", "HOME": "/h"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(ROOT), "/carried/.pydeps"]
    assert env["HOME"] == "/h"


def test_lsp_server_subprocess_without_a_python_path() -> None:
    assert _bench("lsp_latency").server_env({})["PYTHONPATH"] == str(ROOT)
