"""Semantic mode (libclang with real compile flags) against tree-sitter.

* precision fixtures (fixtures/semantic/*, `semantic: true`): semantic mode reports exactly the
  `// expect:` annotations; tree-sitter reports them adjusted by `// treesitter: +ID` (a false
  positive only tree-sitter has) and `// treesitter: -ID` (a finding only semantic mode has).
  Every case has at least one such difference: semantic mode is strictly better there.
* agreement: on every other fixture both front ends give the same findings and fixes.
* compile_commands.json is written by the tests themselves, with nvcc command lines.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from cudamigrate.scan.engine import Engine, Options
from cudamigrate.fix.apply import fix_bytes
from cudamigrate.toolcheck.fixtures import expected_findings, load_cases
from cudamigrate.parse import clang as cl
from cudamigrate.knowledge.load import load_rules
from cudamigrate.rules.schema import parse_version
from cudamigrate.match.semantic import SemanticContext
from cudamigrate.parse.clang_db import SemanticDB

from .conftest import FIXTURES, RULES

pytestmark = pytest.mark.libclang

OK, WHY = cl.available()
if OK and not Path(cl.DEFAULT_CUDA, "include", "cuda_runtime.h").is_file():
    OK, WHY = False, f"no CUDA toolkit headers at {cl.DEFAULT_CUDA}"
if not OK:
    pytestmark = [pytest.mark.libclang, pytest.mark.skip(reason=f"libclang semantic mode unavailable: {WHY}")]

CASES = load_cases(FIXTURES)
SEM_CASES = [c for c in CASES if c.settings.get("semantic")]
PLAIN_CASES = [c for c in CASES if not c.settings.get("semantic")]
TS_NOTE = re.compile(r"//\s*treesitter:\s*([+-])\s*([A-Z0-9]+)")


def write_db(tmp: Path, files: list[Path], flags: dict[Path, list[str]] | None = None) -> Path:
    """compile_commands.json with the very nvcc command lines the nvcc tests compile with."""
    from cudamigrate.toolcheck.build import nvcc_command

    entries = []
    for f in files:
        args = nvcc_command(f, tmp / f"{f.stem}.o", link=False, flags=(flags or {}).get(f), include_dirs=[f.parent])
        entries.append({"directory": str(f.parent), "arguments": args, "file": str(f)})
    p = tmp / "compile_commands.json"
    p.write_text(json.dumps(entries, indent=1))
    return p


def _sources(case) -> list[Path]:
    return [p for p in (case.before, case.after, case.ok) if p is not None]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """One database over every fixture TU; each TU is parsed when a test first needs it (so xdist
    workers share the work), all with one precompiled CUDA runtime wrapper."""
    tmp = tmp_path_factory.mktemp("semdb")
    files = [p for c in CASES for p in _sources(c)]
    flags = {p: list(c.compile.get("flags", []) or []) for c in CASES for p in _sources(c)}
    return SemanticDB(cl.load_compile_db(write_db(tmp, files, flags)))


def ensure(db: SemanticDB, path: Path, must: bool = True) -> bool:
    rp = str(path.resolve())
    if rp not in db.facts and rp not in db.failed:
        db.build(jobs=1, only={rp}, min_group=1)
    if must:
        assert rp not in db.failed, db.failed[rp]
    return rp not in db.failed


_RULES: dict = {}


def engine_for(case) -> Engine:
    key = case.dir
    if key not in _RULES:
        dirs = [RULES]
        if case.settings.get("rules_dir"):
            dirs.append(case.dir / case.settings["rules_dir"])
        rs = load_rules(dirs)
        assert not rs.errors, rs.errors
        _RULES[key] = rs.rules
    opts = Options(target=parse_version(case.target), select=case.rules, extend_select=case.rules or [],
                   options=case.options,
                       keep_compat=parse_version(case.keep_compat) if case.keep_compat else None)
    return Engine(_RULES[key], opts)


def scan(case, path: Path, db: SemanticDB | None):
    eng = engine_for(case)
    data = path.read_bytes()
    if db is not None:
        ensure(db, path)
        facts = db.facts_for(path, data)
        assert facts is not None, f"no semantic facts for {path}"
        from cudamigrate.read.source import check_bytes

        res = eng.scan_source(check_bytes(path, data), str(path), semantic=SemanticContext(facts))
    else:
        res = eng.scan_bytes(path, data)
    assert not res.errors, res.errors
    return res.findings


def ts_expected(text: str, base: Counter) -> Counter:
    want = Counter(base)
    for i, line in enumerate(text.splitlines(), start=1):
        for sign, rid in TS_NOTE.findall(line):
            if sign == "+":
                want[(i, rid)] += 1
            else:
                want[(i, rid)] -= 1
    return +want


def _ids(cases):
    return [c.name for c in cases]


# ----------------------------------------------------------------------------- precision fixtures


def test_there_are_semantic_fixtures():
    names = {c.dir.name for c in SEM_CASES}
    assert {"null-stream-values", "macros", "user-functions", "templates", "thrust-using-namespace",
            "device-prop-types"} <= names


@pytest.mark.parametrize("case", SEM_CASES, ids=_ids(SEM_CASES))
def test_semantic_findings(case, db):
    for path in (case.before, case.ok):
        if path is None:
            continue
        text = path.read_text()
        want = expected_findings(text) if path == case.before else Counter()
        got = Counter((f.line, f.rule_id) for f in scan(case, path, db))
        assert got == want, f"{path.name}: unexpected {dict(got - want)}; missing {dict(want - got)}"


@pytest.mark.parametrize("case", SEM_CASES, ids=_ids(SEM_CASES))
def test_treesitter_differs_only_where_documented(case):
    differences = 0
    for path in (case.before, case.ok):
        if path is None:
            continue
        text = path.read_text()
        base = expected_findings(text) if path == case.before else Counter()
        want = ts_expected(text, base)
        differences += len(TS_NOTE.findall(text))
        got = Counter((f.line, f.rule_id) for f in scan(case, path, None))
        assert got == want, f"{path.name} (tree-sitter): unexpected {dict(got - want)}; missing {dict(want - got)}"
    assert differences, f"{case.name}: a semantic fixture must show where tree-sitter alone is wrong"


@pytest.mark.parametrize("case", [c for c in SEM_CASES if c.after], ids=_ids([c for c in SEM_CASES if c.after]))
def test_semantic_fix_matches_golden(case, db):
    eng = engine_for(case)
    ensure(db, case.before)
    ensure(db, case.after)
    eng = eng.with_run(semantic_provider=db.facts_for)
    res = fix_bytes(eng, case.before, case.before.read_bytes(), str(case.before), unsafe=case.unsafe,
                    display_only=case.display_only)
    assert not res.errors, res.errors
    assert res.fixed.decode() == case.after.read_text()
    again = fix_bytes(eng, case.after, case.after.read_bytes(), str(case.after), unsafe=case.unsafe,
                      display_only=case.display_only)
    assert again.fixed == case.after.read_bytes()


def test_macro_findings_point_at_uses_and_shared_definitions_are_manual(db):
    case = next(c for c in SEM_CASES if c.dir.name == "macros")
    fs = scan(case, case.before, db)
    text = case.before.read_text().splitlines()
    for f in fs:
        assert not text[f.line - 1].startswith("#define"), f
        assert f.context.get("macro") == "CHECK"
    manual = [f for f in fs if f.fix is None]
    assert len(manual) == 2 and all("DOWNLOAD" in text[f.line - 1] for f in manual)
    assert all("expanded 2 times" in f.context["fix_blocked"] for f in manual)


# ----------------------------------------------------------------------------- agreement


def _key(f):
    return (f.line, f.column, f.rule_id, f.message, None if f.fix is None else [(e.start, e.end, e.text) for e in f.fix.edits])


def _in_define(path: Path, line: int) -> bool:
    lines = path.read_text(errors="replace").splitlines()  # a Latin-1 fixture too
    i = line - 1
    while i > 0 and lines[i - 1].rstrip().endswith("\\"):
        i -= 1
    return lines[i].lstrip().startswith("#")


@pytest.mark.parametrize("case", PLAIN_CASES, ids=_ids(PLAIN_CASES))
def test_front_ends_agree(case, db):
    """Same findings and fixes, except the documented macro difference: tree-sitter reports a call written
    in a `#define` body once at the definition, semantic mode once per use (with that use's arguments)."""
    for path in _sources(case):
        if not ensure(db, path, must=False):
            continue  # libclang cannot parse it here (e.g. a library's headers are not installed): tree-sitter only
        sem_all, ts_all = scan(case, path, db), scan(case, path, None)
        sem_uses = {f.rule_id for f in sem_all if f.context.get("expanded_at_use")}
        ts_bodies = {f.rule_id for f in ts_all if _in_define(path, f.line)}
        assert sem_uses <= ts_bodies | {f.rule_id for f in ts_all}, (path, sem_uses, ts_bodies)
        sem = sorted((_key(f) for f in sem_all if not f.context.get("expanded_at_use")), key=repr)
        ts = sorted((_key(f) for f in ts_all if not (_in_define(path, f.line) and f.rule_id in sem_uses)), key=repr)
        assert sem == ts, f"{path}: semantic {sem} != tree-sitter {ts}"


# ----------------------------------------------------------------------------- plumbing


def test_flag_mapping():
    cmd = cl.Command(Path("/p/src/a.cu"), Path("/p/build"), [
        "/usr/local/cuda-13.0/bin/nvcc", "-gencode", "arch=compute_90,code=sm_90", "-Xcompiler", "-fPIC,-DHOST=1", "--expt-relaxed-constexpr",
        "-I../inc", "-isystem", "/opt/x", "-DX=1", "-std=c++20", "-O3", "-lineinfo", "--use_fast_math",
        "-rdc=true", "-ccbin", "g++", "-c", "../src/a.cu", "-o", "a.o"])
    args = cl.clang_args(cmd)
    assert args[:3] == ["-x", "cuda", "--cuda-host-only"]
    assert "--cuda-gpu-arch=sm_90" in args and "-std=c++20" in args and "-DX=1" in args and "-DHOST=1" in args
    assert ["-I", "/p/inc"] == args[args.index("-I"):args.index("-I") + 2]
    assert ["-isystem", "/opt/x"] == args[args.index("/opt/x") - 1:args.index("/opt/x") + 1]
    assert "-resource-dir" in args and "-Wno-unknown-cuda-version" in args
    for dropped in ("-O3", "-lineinfo", "--use_fast_math", "-rdc=true", "g++", "-fPIC", "--expt-relaxed-constexpr", "a.o"):
        assert dropped not in args


def test_compile_db_discovery(tmp_path):
    proj = tmp_path / "proj"
    (proj / "build").mkdir(parents=True)
    (proj / "src").mkdir()
    (proj / "build" / "compile_commands.json").write_text("[]")
    assert cl.find_compile_db([proj / "src"]) == proj / "build" / "compile_commands.json"


def test_cli_semantic_scan_headers_once_and_fallback(tmp_path):
    from click.testing import CliRunner

    from cudamigrate.cli.main import main

    proj = tmp_path / "my-cuda-proj"  # "cuda" in a project path must not make it look like the toolkit
    proj.mkdir()
    # the file-scope stream in the header makes every file that includes it one where the legacy stream meets another
    (proj / "copy.h").write_text("#pragma once\n#include <cuda_runtime.h>\nextern cudaStream_t g_side;\n"
                                 "inline void up(float *d, float *h) { cudaMemcpyAsync(d, h, 4, cudaMemcpyHostToDevice, 0); }\n")
    for name in ("a.cu", "b.cu"):
        (proj / name).write_text('#include "copy.h"\nvoid f_%s(float *d) { cudaStream_t s = 0; cudaMemsetAsync(d, 0, 4, s); }\n' % name[0])
    (proj / "broken.cu").write_text('#include "does_not_exist.h"\ncudaStream_t g_other;\n'
                                    'void g(float *d) { cudaMemsetAsync(d, 0, 4, 0); }\n')
    write_db(tmp_path, [proj / "a.cu", proj / "b.cu", proj / "broken.cu"])
    shutil.move(str(tmp_path / "compile_commands.json"), proj / "compile_commands.json")
    r = CliRunner().invoke(main, ["scan", str(proj), "--format", "json", "--timings", "--select", "CM101"])
    out = json.loads(r.stdout)
    paths = Counter(Path(f["path"]).name for f in out["findings"])
    # the header's call is reported once, each TU's variable stream once, the broken TU by tree-sitter
    assert paths == Counter({"copy.h": 1, "a.cu": 1, "b.cu": 1, "broken.cu": 1}), (paths, r.stderr)
    assert r.stderr.count("broken.cu") == 1 and "does_not_exist.h" in r.stderr
    assert "timings:" in r.stderr


def test_unavailable_libclang_warns_once_and_falls_back(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from cudamigrate.cli.main import main

    monkeypatch.setattr(cl, "available", lambda: (False, "no clang resource directory (test)"))
    (tmp_path / "a.cu").write_text("void f(float *d, cudaStream_t other) { cudaMemsetAsync(d, 0, 4, 0); }\n")
    write_db(tmp_path, [tmp_path / "a.cu"])
    r = CliRunner().invoke(main, ["scan", str(tmp_path), "--format", "json"])
    assert r.stderr.count("semantic mode unavailable") == 1
    assert len(json.loads(r.stdout)["findings"]) == 1


def test_rule_declared_semantic_conditions(tmp_path):
    """`where: {semantic: ...}` uses libclang's facts, and tree-sitter's documented defaults without them."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "CM903-test-semantic-conditions.yaml").write_text("""
id: CM903
name: test-semantic-conditions
family: test
summary: Test-only rule for `semantic:` conditions.
severity: info
message: "`{{ name }}` on a null stream"
match:
  call:
    names:
      cudaMemsetAsync: [devPtr, value, count, stream]
where:
  semantic: {arg_evaluates_null_stream: stream, callee_is_api: true}
references: ["test-only rule"]
""")
    src = tmp_path / "a.cu"
    src.write_text("#include <cuda_runtime.h>\n"
                   "void f(float *d, cudaStream_t user) {\n"
                   "  cudaStream_t s = 0;\n"
                   "  cudaMemsetAsync(d, 0, 4, s);\n"
                   "  cudaMemsetAsync(d, 0, 4, 0);\n"
                   "  cudaMemsetAsync(d, 0, 4, user);\n"
                   "}\n")
    d = SemanticDB(cl.load_compile_db(write_db(tmp_path, [src])))
    d.build(jobs=1)
    rs = load_rules([rules])
    assert not rs.errors, rs.errors
    eng = Engine(rs.rules, Options(select=["CM903"]))
    from cudamigrate.read.source import check_bytes

    data = src.read_bytes()
    sem = eng.scan_source(check_bytes(src, data), str(src), semantic=SemanticContext(d.facts_for(src, data)))
    ts = eng.scan_bytes(src, data)
    assert not sem.errors and not ts.errors, (sem.errors, ts.errors)
    assert [f.line for f in sem.findings] == [4, 5]
    assert [f.line for f in ts.findings] == [5]  # tree-sitter: the spelling decides


def test_compile_db_discovery_stops_at_git_root(tmp_path):
    (tmp_path / "compile_commands.json").write_text("[]")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    assert cl.find_compile_db([repo / "src"]) is None


def test_cli_fix_in_semantic_mode(tmp_path):
    from click.testing import CliRunner

    from cudamigrate.cli.main import main

    case = next(c for c in SEM_CASES if c.dir.name == "null-stream-values")
    src = tmp_path / "before.cu"
    shutil.copy(case.before, src)
    write_db(tmp_path, [src])
    r = CliRunner().invoke(main, ["fix", str(src), "--unsafe-fixes", "--select", "CM101,CM102", "--apply-display-only",
                                  "--timings"])
    assert src.read_text() == case.after.read_text(), r.stderr
    assert "libclang-reparse" in r.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_semantic_scan_keeps_max_file_size_in_worker_processes(tmp_path, jobs):
    """Semantic mode runs through the same runner as tree-sitter mode: `--max-file-size` holds also with 64+
    files in worker processes (its own copy of the runner used to pass no limit there)."""
    from click.testing import CliRunner

    from cudamigrate.cli.main import main

    proj = tmp_path / "proj"
    proj.mkdir()
    for i in range(70):
        (proj / f"g{i:03d}.cu").write_text("void f() { cudaThreadSynchronize(); }\n")
    (proj / "big.cu").write_text("void g() { cudaThreadSynchronize(); }\n" + "// padding\n" * 100)
    write_db(tmp_path, [proj / "g000.cu"])  # one TU: semantic mode is on, the other files fall back
    shutil.move(str(tmp_path / "compile_commands.json"), proj / "compile_commands.json")
    r = CliRunner().invoke(main, ["scan", str(proj), "--format", "json", "--select", "CM501", "-j", jobs,
                                  "--max-file-size", "500"])
    out = json.loads(r.stdout)
    assert "big.cu: file too large" in r.stderr, r.stderr
    assert sorted({Path(f["path"]).name for f in out["findings"]}) == [f"g{i:03d}.cu" for i in range(70)]


@pytest.mark.parametrize(("name", "flags", "lang"), [
    ("a.cu", [], "cuda"), ("a.cuh", [], "cuda"), ("a.cpp", [], "c++"), ("a.cc", [], "c++"), ("a.cxx", [], "c++"),
    ("a.c", [], "c"), ("a.cpp", ["-x", "cu"], "cuda"), ("a.cpp", ["--x=cu"], "cuda"), ("a.cpp", ["-xcu"], "cuda"),
    ("a.cu", ["-x", "c++"], "c++"), ("a.h", [], "cuda"),
])
def test_language_is_the_one_nvcc_compiles(name, flags, lang):
    """nvcc hands `.cpp/.cc/.cxx` to the host compiler as C++ (and `.c` as C) unless `-x cu` says otherwise."""
    cmd = cl.Command(Path("/p") / name, Path("/p"), ["/usr/local/cuda-13.0/bin/nvcc", *flags, "-c", name])
    assert cl.source_language(cmd) == lang
    args = cl.clang_args(cmd)
    assert args[:2] == ["-x", {"cuda": "cuda", "c++": "c++", "c": "c"}[lang]]
    assert ("--cuda-host-only" in args) == (lang == "cuda")
    assert any(a.startswith("-std=") for a in args) == (lang != "c")


def test_cpp_tu_is_parsed_as_host_cpp(tmp_path):
    """A `.cpp` file in an nvcc database sees no `__CUDACC__`: the host-only branch has facts, the CUDA one none
    (parsed as CUDA, as before, it was the other way round)."""
    src = tmp_path / "host.cpp"
    src.write_text("#include <cuda_runtime.h>\n"
                   "#ifdef __CUDACC__\n"
                   "void cuda_only(float *d) { cudaMemsetAsync(d, 0, 4, 0); }\n"
                   "#else\n"
                   "void host_only(float *d) { cudaMemsetAsync(d, 0, 4, 0); }\n"
                   "#endif\n")
    d = SemanticDB(cl.load_compile_db(write_db(tmp_path, [src])))
    d.build(jobs=1)
    assert not d.failed, d.failed
    data = src.read_bytes()
    ff = d.facts[str(src.resolve())]
    lines = sorted(data[:off].count(b"\n") + 1 for off, c in ff.calls.items() if c.callee == "cudaMemsetAsync")
    assert lines == [5]


def test_fatal_error_of_a_tu_is_not_parsed_twice(tmp_path):
    """A TU that fails on its own (a missing header) keeps the parse with the shared PCH: parsing it again
    without the PCH met the same error at twice the cost. The warning names the TU's own error."""
    srcs = []
    for name in ("a.cu", "b.cu"):
        p = tmp_path / name
        p.write_text('#include "does_not_exist.h"\nvoid f(float *d) { cudaMemsetAsync(d, 0, 4, 0); }\n'
                     if name == "a.cu" else "void g(float *d) { cudaMemsetAsync(d, 0, 4, 0); }\n")
        srcs.append(p)
    d = SemanticDB(cl.load_compile_db(write_db(tmp_path, srcs)))
    d.build(jobs=1)
    a, b = str(srcs[0].resolve()), str(srcs[1].resolve())
    assert "does_not_exist.h" in d.failed[a] and b not in d.failed
    assert d.tu_timings[a].pch_used and d.tu_timings[b].pch_used
