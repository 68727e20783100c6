"""One run's state (the project index, semantic mode's facts) is handed to the engine, never set on a shared
one: `Engine(..., project=, semantic_provider=)` or `engine.with_run(...)`, a copy that shares the compiled
rules. Assigning it on an engine raises, so no caller can leak its run into another's."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamigrate.read.project_index import ProjectIndex
from cudamigrate.scan.engine import Engine

from .helpers import all_rules

CODE = b"#include <cuda_runtime.h>\nvoid f() { cudaThreadSynchronize(); }\n"


def test_run_state_cannot_be_poked_into_an_engine():
    engine = Engine(all_rules())
    with pytest.raises(AttributeError, match="one run's state"):
        engine.project = ProjectIndex()
    with pytest.raises(AttributeError, match="one run's state"):
        engine.semantic_provider = lambda path, data: None


def test_with_run_gives_a_copy_sharing_the_rules():
    engine = Engine(all_rules())
    project = ProjectIndex(files=[Path("a.cu")])
    calls: list[Path] = []

    def provider(path: Path, data: bytes):
        calls.append(path)
        return None

    run = engine.with_run(project=project, semantic_provider=provider)
    assert run.project is project and run.semantic_provider is provider and run.rules is engine.rules
    assert engine.semantic_provider is None and engine.project is not project  # the shared engine: untouched
    assert engine.with_run().semantic_provider is None and run.with_run().semantic_provider is provider
    assert run.with_run(semantic_provider=None).semantic_provider is None
    got = run.scan_bytes(Path("a.cu"), CODE)
    assert calls == [Path("a.cu")] and "CM501" in {f.rule_id for f in got.findings}
    assert [f.rule_id for f in engine.scan_bytes(Path("a.cu"), CODE).findings] == [f.rule_id for f in got.findings]
