"""Semantic mode from `pip install` alone (issue 25): the libclang-ng wheel's libclang and resource headers, the
compile database found as clangd finds it, `doctor`, and what semantic mode adds or must not add.

* the libclang loaded is the wheel's, with the wheel's resource directory: no system path is involved;
* `scan --compile-commands build/compile_commands.json` runs in semantic mode with no fallback warning;
* single-stream code (streams only through 0, a macro, a variable, a default argument; Thrust) gets no
  legacy-stream finding in either mode, and a wrapper that does receive another stream still counts;
* declarations the headers mark deprecated/unavailable are findings with the attribute's message and header:line;
* a removed `cudaDeviceProp` field read through a typedef'd alias and a reference is rewritten in semantic mode
  exactly as the fixture's after.cu (which the nvcc fixture tests compile).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudamigrate.cli.main import main
from cudamigrate.parse import clang as cl

from .conftest import FIXTURES

pytestmark = pytest.mark.libclang

OK, WHY = cl.available()
if OK and not Path(cl.DEFAULT_CUDA, "include", "cuda_runtime.h").is_file():
    OK, WHY = False, f"no CUDA toolkit headers at {cl.DEFAULT_CUDA}"
if not OK:
    pytestmark = [pytest.mark.libclang, pytest.mark.skip(reason=f"libclang semantic mode unavailable: {WHY}")]

SINGLE = FIXTURES / "streams" / "CM101-legacy-stream-async-api--single-stream-values" / "ok.cu"
SINGLE_NULL = FIXTURES / "streams" / "CM101-legacy-stream-async-api--single-stream-null" / "ok.cu"
LEGACY_STREAM_RULES = "CM101,CM102,CM103,CM104"
ALIAS = FIXTURES / "removals" / "CM503-deviceprop-removed-fields--alias-reference"


def write_db(root: Path, files: list[Path], sub: str = "build", extra: list[str] | None = None) -> Path:
    """build/compile_commands.json with plain nvcc command lines (as CMake writes them)."""
    d = root / sub
    d.mkdir(parents=True, exist_ok=True)
    entries = [{"directory": str(root), "file": str(f),
                "arguments": ["nvcc", "-std=c++17", "-arch=sm_90", *(extra or []), "-c", str(f), "-o", f"{f.stem}.o"]}
               for f in files]
    p = d / "compile_commands.json"
    p.write_text(json.dumps(entries, indent=1))
    return p


def scan_json(args: list[str]) -> tuple[dict, str]:
    r = CliRunner().invoke(main, ["scan", "--format", "json", *args])
    assert r.exit_code in (0, 1), (r.exit_code, r.stderr)
    return json.loads(r.stdout), r.stderr


# ----------------------------------------------------------------------------- the wheel, no system paths
def test_the_wheels_libclang_and_resource_dir_are_used():
    setup, why = cl.find_setup()
    assert setup is not None, why
    if os.environ.get("CUDAMIGRATE_LIBCLANG") or os.environ.get("CUDAMIGRATE_CLANG_RESOURCE_DIR"):
        pytest.skip("$CUDAMIGRATE_LIBCLANG / $CUDAMIGRATE_CLANG_RESOURCE_DIR choose another libclang on purpose")
    spec = importlib.util.find_spec("clang")
    assert spec is not None and spec.submodule_search_locations
    pkg = Path(list(spec.submodule_search_locations)[0]).resolve()
    assert setup.origin == "wheel" and cl.wheel_version() is not None
    assert Path(setup.library).resolve().parent == pkg / "native"
    assert Path(setup.resource_dir).resolve() == pkg / "native" / "resource"
    assert (Path(setup.resource_dir) / "include" / "__clang_cuda_runtime_wrapper.h").is_file()
    args = cl.clang_args(cl.default_command(SINGLE))
    assert args[args.index("-resource-dir") + 1] == setup.resource_dir
    assert not any(a.startswith("/usr/lib/llvm") for a in args)
    ci = cl.cindex()
    assert ci.conf.lib is not None  # loaded
    assert (cl.clang_version() or "").startswith("clang version " + str(setup.major))
    if sys.platform.startswith("linux"):
        maps = Path("/proc/self/maps").read_text()
        loaded = {line.split()[-1] for line in maps.splitlines() if "libclang" in line and "/" in line}
        assert loaded == {str(Path(setup.library).resolve())} or loaded == {setup.library}, loaded


def test_the_wheels_libcxx_is_kept_out_where_the_host_has_a_cxx_library():
    setup, _ = cl.find_setup()
    assert setup is not None
    args = cl.clang_args(cl.default_command(SINGLE))
    if cl.host_cxx_library() is not None:
        assert "-nostdinc++" not in args and (setup.libcxx is None or setup.libcxx not in args)
    else:
        assert "-nostdinc++" in args and setup.libcxx in args


# ----------------------------------------------------------------------------- compile database, as clangd
def test_compile_db_found_as_clangd_finds_it(tmp_path):
    proj = tmp_path / "proj"
    (proj / "src" / "deep").mkdir(parents=True)
    (proj / ".git").mkdir()
    (proj / "build-release").mkdir()
    (proj / "build-release" / "compile_commands.json").write_text("[]")
    assert cl.find_compile_db([proj / "src" / "deep"]) == proj / "build-release" / "compile_commands.json"
    (proj / "build").mkdir()
    (proj / "build" / "compile_commands.json").write_text("[]")
    assert cl.find_compile_db([proj / "src" / "deep"]) == proj / "build" / "compile_commands.json"
    (proj / "compile_commands.json").write_text("[]")  # the directory's own database comes first
    assert cl.find_compile_db([proj / "src"]) == proj / "compile_commands.json"
    (proj / "src" / "build-x").mkdir()
    (proj / "src" / "build-x" / "compile_commands.json").write_text("[]")  # nearest first
    assert cl.find_compile_db([proj / "src" / "deep"]) == proj / "src" / "build-x" / "compile_commands.json"


def test_scan_with_compile_commands_runs_in_semantic_mode_without_fallback(tmp_path):
    """The done-when check: `scan --compile-commands build/compile_commands.json`, no fallback warning, and a
    finding only semantic mode can give (CM590 reads the headers' deprecation attributes)."""
    src = tmp_path / "a.cu"
    src.write_text("#include <cuda_runtime.h>\n"
                   "int main() { cudaSharedMemConfig c; return (int)cudaDeviceGetSharedMemConfig(&c); }\n")
    db = write_db(tmp_path, [src])
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        out, err = scan_json([str(src), "--compile-commands", "build/compile_commands.json", "--select", "CM590"])
        plain, _ = scan_json([str(src), "--no-semantic", "--select", "CM590"])
        found, _ = scan_json([str(src), "--select", "CM590"])  # the database found without the option
    finally:
        os.chdir(cwd)
    assert "semantic mode" not in err and "tree-sitter only" not in err and "warning" not in err, err
    assert [f["rule"] for f in out["findings"]] == ["CM590"], out["findings"]
    assert plain["findings"] == []
    assert [f["rule"] for f in found["findings"]] == ["CM590"]
    assert db.is_file()


def test_doctor_reports_libclang_resource_dir_and_database(tmp_path):
    src = tmp_path / "a.cu"
    src.write_text("int main() { return 0; }\n")
    db = write_db(tmp_path, [src])
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        r = CliRunner().invoke(main, ["doctor", "--format", "json"])
    finally:
        os.chdir(cwd)
    checks = {c["name"]: c for c in json.loads(r.stdout)["checks"]}
    setup, _ = cl.find_setup()
    lib = checks["libclang"]
    assert lib["status"] == "ok" and "semantic mode ready" in lib["note"], lib
    assert setup is not None and setup.resource_dir in lib["found"] and "clang version" in lib["found"]
    assert checks["compile database"]["status"] == "ok" and str(db.resolve()) in checks["compile database"]["found"]


# ----------------------------------------------------------------------------- precision: single-stream code
def test_single_stream_code_gets_no_legacy_stream_finding_in_either_mode(tmp_path):
    src = tmp_path / "ok.cu"
    shutil.copy(SINGLE, src)
    write_db(tmp_path, [src])
    sem, err = scan_json([str(src), "--select", "CM101,CM102,CM104"])
    ts, _ = scan_json([str(src), "--no-semantic", "--select", "CM101,CM102,CM104"])
    assert "unavailable" not in err
    assert sem["findings"] == [] and ts["findings"] == []


def test_a_wrapper_that_receives_another_stream_still_meets_the_legacy_one(tmp_path):
    """The lookalike: the same code, but one call passes the wrapper a real (non-blocking) stream. The parameter
    is then no proof of single-stream code, and semantic mode reports the legacy-stream uses it can evaluate."""
    text = SINGLE.read_text().replace(
        "  upload(d, h, n);\n",
        "  upload(d, h, n);\n  cudaStream_t other;\n  cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);\n"
        "  upload(d, h, n, other);\n")
    assert "upload(d, h, n, other)" in text
    src = tmp_path / "mixed.cu"
    src.write_text(text)
    write_db(tmp_path, [src])
    sem, _ = scan_json([str(src), "--select", "CM101"])
    lines = sorted(f["line"] for f in sem["findings"])
    # the memset through `s = 0`; the copy back through WORK_STREAM reads what `upload(..., other)` wrote, so the
    # legacy stream's barrier is its synchronization there (consumes_other_stream_work) and it stays unreported
    want = [i for i, line in enumerate(text.splitlines(), 1) if "cudaMemsetAsync(d, 0, n * sizeof(float), s)" in line]
    assert lines == want, sem["findings"]
    ts, _ = scan_json([str(src), "--select", "CM101", "--no-semantic"])
    assert ts["findings"] == []  # tree-sitter cannot tell that `s` is 0


def _wheel_include() -> list[str]:
    from cudamigrate.toolcheck.build import wheel_root

    root = wheel_root()
    return [f"-I{root / 'include'}"] if root is not None else []


def test_legacy_only_stream_parameters_and_globals_get_no_finding_in_either_mode(tmp_path):
    """Issue 25's done-when: stream parameters whose callers pass only 0/NULL/nullptr/macros of 0/variables set to
    them, or leave a default (also a prototype's), and file-scope streams never written, are no other stream: no
    CM101-CM104 finding in semantic mode (compile database) nor in tree-sitter mode. Before, tree-sitter mode
    counted every such parameter as another stream, and semantic mode those without a default of their own."""
    src = tmp_path / "ok.cu"
    shutil.copy(SINGLE_NULL, src)
    write_db(tmp_path, [src], extra=_wheel_include())
    sem, err = scan_json([str(src), "--select", LEGACY_STREAM_RULES])
    ts, _ = scan_json([str(src), "--no-semantic", "--select", LEGACY_STREAM_RULES])
    assert "warning" not in err, err  # parsed by libclang: no fallback
    assert sem["findings"] == [] and ts["findings"] == [], (sem["findings"], ts["findings"])


LOOKALIKES = {
    # a stream parameter that one caller passes another stream (a parameter of an uncalled entry point)
    "entry.cu": "static void up(float *d, cudaStream_t st = 0) { cudaMemsetAsync(d, 0, 4, st); }\n"
                "void entry(float *d, cudaStream_t s) { up(d); up(d, s); }\n",
    # the wrapper's address is taken: a call through the pointer may pass any stream
    "address.cu": "void up(float *d, cudaStream_t st = 0) { cudaMemsetAsync(d, 0, 4, st); }\n"
                  "void (*fp)(float *, cudaStream_t) = &up;\nvoid g(float *d) { up(d); }\n",
    # the parameter is assigned in the body
    "written.cu": "cudaStream_t pick();\nvoid up(float *d, cudaStream_t st = 0) { if (!st) st = pick(); }\n"
                  "void g(float *d) { up(d); }\n",
    # a macro calls the wrapper with another stream
    "macro.cu": "cudaStream_t pick();\nvoid up(float *d, cudaStream_t st = 0) {}\n#define UP(d, s) up(d, s)\n"
                "void g(float *d) { up(d); UP(d, pick()); }\n",
    # a static global that is assigned, a global declared elsewhere
    "assigned.cu": "static cudaStream_t g_s = 0;\nvoid init(cudaStream_t x) { g_s = x; }\n",
    "extern.cu": "extern cudaStream_t g_s;\n",
}


def test_lookalikes_of_legacy_only_streams_are_reported_in_both_modes(tmp_path):
    """The same shapes where a stream may be another one: the launch on the legacy stream is reported in both modes."""
    head = "#include <cuda_runtime.h>\n__global__ void k(float *x) {}\nvoid f(float *d) { k<<<1, 1>>>(d); }\n"
    files = []
    for name, body in LOOKALIKES.items():
        files.append(tmp_path / name)
        files[-1].write_text(head + body)
    write_db(tmp_path, files)
    for mode in ([], ["--no-semantic"]):
        out, err = scan_json([*map(str, files), "--select", LEGACY_STREAM_RULES, *mode])
        assert "warning" not in err, err
        got = sorted((Path(f["path"]).name, f["rule"], f["line"]) for f in out["findings"])
        assert got == sorted((name, "CM102", 3) for name in LOOKALIKES), (mode, got)


# ----------------------------------------------------------------------------- deprecated/unavailable in headers
def test_header_deprecations_are_findings_with_the_attribute_message(tmp_path):
    inc = tmp_path / "vendor"
    inc.mkdir()
    (inc / "vendorlib.h").write_text(
        "#pragma once\n"
        "[[deprecated(\"use fresh() instead\")]] int stale(int);\n"
        "int fresh(int);\n"
        "struct [[deprecated(\"use Config2\")]] Config { int x; };\n"
        "__attribute__((unavailable(\"removed in 2.0\"))) int gone(void);\n")
    src = tmp_path / "a.cu"
    src.write_text('#include <vendorlib.h>\n'
                   'namespace mine { int stale(int v) { return v; } }\n'
                   'int use() {\n'
                   '  Config c{1};\n'
                   '  int a = stale(c.x) + fresh(2) + mine::stale(3);\n'
                   '  return a + gone();  // an error where it is used; still reported\n'
                   '}\n')
    write_db(tmp_path, [src], extra=["-isystem", str(inc)])
    out, _ = scan_json([str(src), "--select", "CM590"])
    got = sorted((f["line"], f["message"]) for f in out["findings"])
    assert [line for line, _ in got] == [4, 5, 6], got
    assert '"use Config2"' in got[0][1] and "vendorlib.h:4" in got[0][1] and "deprecated" in got[0][1]
    assert '"use fresh() instead"' in got[1][1] and "vendorlib.h:2" in got[1][1]
    assert '"removed in 2.0"' in got[2][1] and "unavailable" in got[2][1] and "vendorlib.h:5" in got[2][1]


def test_a_rule_that_knows_the_name_reports_it_alone(tmp_path):
    src = tmp_path / "a.cu"
    src.write_text("#include <cuda_runtime.h>\n"
                   "int main() { cudaSharedMemConfig c; return (int)cudaDeviceGetSharedMemConfig(&c); }\n")
    write_db(tmp_path, [src])
    alone, _ = scan_json([str(src), "--select", "CM590"])
    both, _ = scan_json([str(src), "--select", "CM590,CM1040"])  # the catalog rule of cudaDeviceGetSharedMemConfig
    assert [f["rule"] for f in alone["findings"]] == ["CM590"]
    assert [f["rule"] for f in both["findings"]] == ["CM1040"]


# ----------------------------------------------------------------------------- removed field through alias + reference
def test_alias_and_reference_reads_are_fixed_in_semantic_mode(tmp_path):
    src = tmp_path / "before.cu"
    shutil.copy(ALIAS / "before.cu", src)
    write_db(tmp_path, [src])
    r = CliRunner().invoke(main, ["fix", str(src), "--unsafe-fixes", "--select", "CM503", "--timings"])
    assert "libclang-reparse" in r.stderr or "libclang" in r.stderr, r.stderr
    assert "tree-sitter only" not in r.stderr, r.stderr
    assert src.read_text() == (ALIAS / "after.cu").read_text(), r.stderr


def test_a_repointed_pointer_is_not_followed(tmp_path):
    src = tmp_path / "a.cu"
    src.write_text("#include <cuda_runtime.h>\n"
                   "int f(int dev) {\n"
                   "  cudaDeviceProp a, b;\n"
                   "  cudaGetDeviceProperties(&a, dev);\n"
                   "  cudaDeviceProp *q = &a;\n"
                   "  q = &b;\n"
                   "  return q->clockRate;\n"
                   "}\n")
    write_db(tmp_path, [src])
    for mode in ([], ["--no-semantic"]):
        out, _ = scan_json([str(src), "--select", "CM503", *mode])
        assert len(out["findings"]) == 1 and "not known here" in out["findings"][0]["message"], out


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.nvcc
def test_alias_fixture_builds_after_fix_and_not_before(tmp_path):
    for name, ok in (("after.cu", True), ("before.cu", False)):
        p = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90", "-w", "-c", str(ALIAS / name), "-o",
                            str(tmp_path / "x.o")], capture_output=True, text=True)
        assert (p.returncode == 0) == ok, p.stderr


def test_an_openmp_tu_parses_as_nvcc_compiles_it(tmp_path):
    """nvcc's host GCC finds omp.h in its own include directory; clang's resource headers have none."""
    if cl.gcc_omp_dir() is None:
        pytest.skip("no GCC include directory with omp.h on this host")
    src = tmp_path / "omp.cu"
    src.write_text("#include <omp.h>\n#include <cuda_runtime.h>\n"
                   "int main() { float *d = nullptr; cudaMemsetAsync(d, 0, 4, 0); return omp_get_max_threads(); }\n")
    write_db(tmp_path, [src])
    r = CliRunner().invoke(main, ["scan", str(src), "--select", "CM101"])
    assert "omp.h" not in r.stderr and "tree-sitter only" not in r.stderr, r.stderr
