"""Project-wide facts: statement-like macros without `;` and class members typed in project headers.

fixtures/projects/statement-macros is a small program of our own: `CUERR`/`CUDA_ERRCK` (defined in
include/check.h as statements) are written without `;` before removed calls, and `cudaDeviceProp`
fields are read through a class member declared in include/gpu_info.h. Every `// expect:` line must be
reported, `fix --unsafe-fixes` must leave nothing, a second fix must change nothing, and nvcc 13.0 must
build the result (the GPU test runs it).
"""

from __future__ import annotations

import re

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from cudamigrate.toolcheck.build import compile_file
from cudamigrate.toolcheck.fixtures import expected_findings
from cudamigrate.read.project_index import ProjectIndex, statement_body
from cudamigrate.read.source import blank_statement_macros

from .conftest import FIXTURES

PROJECT = FIXTURES / "projects" / "statement-macros"
RULES = "CM501,CM503"
SOURCES = ["main.cu", "gpu_info.cu"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudamigrate", *args], capture_output=True, text=True)


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "project"
    shutil.copytree(PROJECT, dst, ignore=shutil.ignore_patterns("expected.txt", "README.md"))
    return dst


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_statement_body():
    assert statement_body(b" { cudaError_t e = cudaGetLastError(); if (e) return 1; } ")
    assert statement_body(b"if (cudaGetLastError()) { return 1; }")
    assert statement_body(b"check(__FILE__, __LINE__);")
    assert not statement_body(b"do { x(); } while (0)")  # needs its `;`: code that builds has it
    assert not statement_body(b"(a + b)")
    assert not statement_body(b"struct { int a; }")
    assert not statement_body(b"{")


def test_macro_defined_as_an_expression_elsewhere_is_not_blanked(tmp_path):
    (tmp_path / "chk.h").write_text("#ifdef DEBUG\n#define LASTERR { cudaGetLastError(); }\n#else\n#define LASTERR cudaGetLastError()\n#endif\n")
    src = b'#include "chk.h"\nint f() { return LASTERR; }\n'
    assert ProjectIndex().statement_macros(tmp_path / "a.cu", src) == frozenset()


def test_blanking_keeps_offsets_and_spares_define_strings_comments():
    src = (b'#define CUERR { if (cudaGetLastError()) return 1; }\n'
           b'int f() { k(); CUERR\n  cudaThreadSynchronize();\n  puts("CUERR"); // CUERR\n  return 0; }\n')
    out = blank_statement_macros(src, {"CUERR"})
    assert len(out) == len(src)
    assert out.startswith(b"#define CUERR {")
    assert b"k(); ;    \n" in out
    assert b'puts("CUERR"); // CUERR' in out


def test_index_reads_members_and_macros_through_project_headers():
    files = sorted(PROJECT.rglob("*.cu")) + sorted(PROJECT.rglob("*.h"))
    ix = ProjectIndex(files=files)
    main = PROJECT / "main.cu"
    assert ix.statement_macros(main, main.read_bytes()) == {"CUERR", "CUDA_ERRCK"}
    info = PROJECT / "gpu_info.cu"
    assert ix.member_types(info, info.read_bytes(), "m_props", "GpuInfo") == {"cudaDeviceProp"}
    assert ix.member_types(info, info.read_bytes(), "clockRate", "Holder") == {"int"}
    assert ix.includers(PROJECT / "include" / "gpu_info.h") == sorted(
        [main.resolve(), info.resolve()], key=lambda p: [str(f.resolve()) for f in files].index(str(p)))


def test_scan_reports_every_expected_site(tmp_path):
    proj = _copy(tmp_path)
    res = _cli("scan", "--select", RULES, "--format", "json", str(proj))
    import json

    got = Counter((Path(f["path"]).name, f["line"], f["rule"]) for f in json.loads(res.stdout)["findings"])
    want: Counter = Counter()
    for src in SOURCES:
        for (line, rid), n in expected_findings((proj / src).read_text()).items():
            want[(src, line, rid)] += n
    assert got == want


def test_member_read_in_another_method_is_reported_manual(tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "dev.h").write_text("#include <cuda_runtime.h>\nstruct Dev { cudaDeviceProp prop; int clockRate; int get(); };\n")
    (tmp_path / "dev.cu").write_text('#include "dev.h"\nint Dev::get() { return this->prop.clockRate + clockRate; }\n')
    res = _cli("scan", "--select", "CM503", str(tmp_path))
    assert res.stdout.count("CM503") == 1 and "dev.cu:2:" in res.stdout and "[ ]" in res.stdout, res.stdout


def test_fix_leaves_nothing_and_converges(tmp_path):
    proj = _copy(tmp_path)
    res = _cli("fix", "--unsafe-fixes", "--select", RULES, str(proj))
    assert res.returncode == 0, res.stdout + res.stderr
    main = (proj / "main.cu").read_text()
    assert "cudaThread" not in main and main.count("cudaDeviceSynchronize();") == 2
    assert not re.search(r"(\.|->)\s*computeMode", (proj / "gpu_info.cu").read_text())  # no removed-field read left
    once = _snapshot(proj)
    again = _cli("fix", "--unsafe-fixes", "--select", RULES, str(proj))
    assert again.returncode == 0 and _snapshot(proj) == once


@pytest.mark.nvcc
def test_project_builds_only_after_fix(tmp_path):
    proj = _copy(tmp_path)
    out = tmp_path / "obj"
    out.mkdir()
    res = compile_file(proj / "main.cu", out / "before.o", link=False, include_dirs=[proj / "include"])
    assert not res.ok and "cudaThreadSynchronize" in res.output
    assert _cli("fix", "--unsafe-fixes", "--select", RULES, str(proj)).returncode == 0
    for src in SOURCES:
        res = compile_file(proj / src, out / (src + ".o"), link=False, include_dirs=[proj / "include"])
        assert res.ok, f"{' '.join(res.cmd)}\n{res.output[-4000:]}"


@pytest.mark.gpu
def test_project_runs_after_fix(tmp_path):
    """Links the migrated program and compares its output with expected.txt (skips without a GPU)."""
    from .conftest import gpu_available

    if shutil.which("nvcc") is None or not gpu_available():
        pytest.skip("needs nvcc and a GPU")
    proj = _copy(tmp_path)
    assert _cli("fix", "--unsafe-fixes", "--select", RULES, str(proj)).returncode == 0
    exe = tmp_path / "project.bin"
    res = compile_file(proj / "main.cu", exe, link=True, include_dirs=[proj / "include"], flags=[str(proj / "gpu_info.cu")])
    assert res.ok, res.output[-4000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == (PROJECT / "expected.txt").read_text().strip()
