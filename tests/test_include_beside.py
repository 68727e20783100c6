"""A quoted `#include` of a CUDA header's name that finds the project's own file next to the includer is the
project's (match/matchers.py project_file_beside): ISPASS-2009's WP/ ships an empty `cublas.h`, and CM201 rewrote
`#include "cublas.h"` there to `cublas_v2.h`, a wrong edit found by reading every hunk (issue 31)."""

from __future__ import annotations

import json
from pathlib import Path

from .helpers import run_cli

SOURCE = '#include "cublas.h"\n#include <cstdio>\nint main() { std::printf("%d\\n", 1); return 0; }\n'


def _rules(path: Path, cwd: Path) -> list[str]:
    r = run_cli("scan", "--no-semantic", "--format", "json", "--exit-zero", path, cwd=cwd)
    return [f["rule"] for f in json.loads(r.stdout)["findings"]]


def test_the_project_header_beside_the_includer_is_not_cublas(tmp_path):
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "app.cu").write_text(SOURCE)
    (tmp_path / "own" / "cublas.h").write_text("// the project's own header of that name\n")
    (tmp_path / "angle").mkdir()
    (tmp_path / "angle" / "app.cu").write_text(SOURCE.replace('"cublas.h"', "<cublas.h>"))
    (tmp_path / "angle" / "cublas.h").write_text("// not searched for <cublas.h> without -I.\n")
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "app.cu").write_text(SOURCE)
    assert "CM201" not in _rules(Path("own/app.cu"), tmp_path)
    assert "CM201" in _rules(Path("angle/app.cu"), tmp_path)
    assert "CM201" in _rules(Path("none/app.cu"), tmp_path)
    r = run_cli("fix", "--unsafe-fixes", "--no-verify", "own", "none", cwd=tmp_path)
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "own" / "app.cu").read_text() == SOURCE
    assert (tmp_path / "none" / "app.cu").read_text() == SOURCE.replace('"cublas.h"', '"cublas_v2.h"')


def test_a_header_created_beside_later_is_seen_through_the_result_cache(tmp_path):
    (tmp_path / "app.cu").write_text(SOURCE)
    assert "CM201" in _rules(Path("app.cu"), tmp_path)  # the file alone: the directory is outside the run
    (tmp_path / "cublas.h").write_text("// added after the first scan\n")
    assert "CM201" not in _rules(Path("app.cu"), tmp_path)
