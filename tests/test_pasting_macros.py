"""Calls spelled through a token-pasting macro (`cuda(ThreadSynchronize())` with `#define cuda(fn) ... cuda##fn`,
the CUDA Handbook's error check): found as the compiler sees them, fixed by rewriting the macro's argument only
when that is what the expansion needs (parse/pasting.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cudamigrate.core.options import Options
from cudamigrate.parse.pasting import PasteMacro, paste_macros, unpaste
from cudamigrate.parse.treesitter import Paste
from cudamigrate.read.project_index import ProjectIndex
from cudamigrate.scan.engine import Engine
from cudamigrate.toolcheck.build import compile_file
from cudamigrate.toolcheck.fixtures import expected_findings

from .conftest import FIXTURES
from .helpers import all_rules, engine_for, fix_text

CHECK = ("#include <cstdio>\n#include <cuda_runtime.h>\n"
         "#define cuda( fn ) do { \\\n    cudaError_t st = (cuda##fn); \\\n"
         "    if (st != cudaSuccess) printf(\"%s\\n\", #fn); \\\n  } while (0)\n")


def _project(tmp: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = tmp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _scan(path: Path, rules: list[str]):
    res = engine_for(select=rules, extend_select=rules).scan_path(path)
    assert not res.errors, res.errors
    return res.findings


def _fix(path: Path, rules: list[str]) -> str:
    return fix_text(engine_for(select=rules, extend_select=rules), path, path.read_bytes()).decode()


@pytest.mark.parametrize("define, prefix, blocked", [
    ("#define cuda(fn) check(cuda##fn)", b"cuda", None),
    ("#define cu( x ) do { CUresult r = cu ## x; if (r) fail(#x); } while (0)", b"cu", None),
    ("#define TWICE(fn) (cuda##fn, cuda##fn)", b"cuda", None),  # the same identifier both times
    ("#define LOG(fn) (note(fn), cuda##fn)", b"cuda", "also uses its argument unpasted"),
    ("#define ASYNC(fn) cuda##fn##Async", b"cuda", "more tokens"),
    ("#define BOTH(fn) (cuda##fn, hip##fn)", b"cuda", "different prefixes"),
], ids=["prefix", "driver-stringized", "twice", "unpasted-too", "suffix", "two-prefixes"])
def test_paste_macro_definitions(define, prefix, blocked):
    (got,) = paste_macros(define.encode() + b"\n").values()
    assert got.prefix == prefix and got.index == 0
    assert (got.blocked is None) if blocked is None else (blocked in (got.blocked or ""))


@pytest.mark.parametrize("define", [
    "#define CHECK(fn) check(fn)",  # no paste
    "#define CAT(a, b) a##b",  # both sides are parameters: no fixed prefix
    "#define cudaSync cuda##Sync",  # object-like
], ids=["no-paste", "param-prefix", "object-like"])
def test_not_paste_macros(define):
    assert paste_macros(define.encode() + b"\n") == {}


def test_definitions_that_disagree_are_blocked():
    text = b"#ifdef HIP\n#define api(fn) hip##fn\n#else\n#define api(fn) cuda##fn\n#endif\n"
    (got,) = paste_macros(text).values()
    assert "several definitions" in (got.blocked or "")
    same = b"#ifdef DEBUG\n#define api(fn) log(cuda##fn, #fn)\n#else\n#define api(fn) (cuda##fn)\n#endif\n"
    assert paste_macros(same) == {"api": PasteMacro("api", 0, 1, b"cuda")}


def test_unpaste_keeps_the_prefix_and_the_argument():
    p = Paste("cuda", b"cuda", (10, 29), (5, 30))  # `cuda(ThreadSynchronize())`: argument at 10
    assert unpaste(6, 27, "cudaDeviceSynchronize", p) == (10, 27, "DeviceSynchronize")
    assert unpaste(20, 22, "x", p) == (20, 22, "x")  # inside the argument
    assert "does not start with it" in str(unpaste(6, 27, "hipDeviceSynchronize", p))
    assert "more than the argument" in str(unpaste(0, 0, "#include <x>\n", p))
    assert "more than the argument" in str(unpaste(6, 31, "cudaX()", p))  # past the argument


def test_call_through_a_pasting_macro_of_a_project_header_is_fixed_in_the_argument(tmp_path):
    _project(tmp_path, {"chk.h": CHECK, "main.cu": (
        '#include "chk.h"\nint main() {\n  cuda(ThreadSynchronize());\n'
        "  cuda( ThreadSetLimit(cudaLimitStackSize, 4096) );\n  return 0;\n}\n")})
    found = _scan(tmp_path / "main.cu", ["CM501"])
    assert [(f.rule_id, f.line, f.column, f.fix.applicability if f.fix else None) for f in found] == [
        ("CM501", 3, 8, "safe"), ("CM501", 4, 9, "safe")]
    assert found[0].context.get("macro") == "cuda"
    assert _fix(tmp_path / "main.cu", ["CM501"]) == (
        '#include "chk.h"\nint main() {\n  cuda(DeviceSynchronize());\n'
        "  cuda( DeviceSetLimit(cudaLimitStackSize, 4096) );\n  return 0;\n}\n")


def test_lookalikes_are_not_flagged(tmp_path):
    _project(tmp_path, {"chk.h": CHECK + "#define plain(fn) (fn)\n", "main.cu": (
        '#include "chk.h"\n'
        "static cudaError_t ThreadSynchronize() { return cudaSuccess; }\n"
        "int main() {\n"
        "  plain(ThreadSynchronize());  // a macro that pastes nothing\n"
        "  ThreadSynchronize();  // the user's function\n"
        "  // cuda(ThreadSynchronize());\n"
        '  const char *s = "cuda(ThreadSynchronize())";\n'
        "#if 0\n  cuda(ThreadSynchronize());\n#endif\n"
        "#if CUDART_VERSION < 13000\n  cuda(ThreadExit());\n#endif\n"
        "  return s[0];\n}\n")})
    assert _scan(tmp_path / "main.cu", ["CM501"]) == []


def test_blocked_macro_reports_manual_with_the_reason(tmp_path):
    _project(tmp_path, {"main.cu": (
        "#include <cuda_runtime.h>\nint note(int);\n#define LOG(fn) (note(fn), cuda##fn)\n"
        "int main() {\n  LOG(ThreadSynchronize());\n  return 0;\n}\n")})
    (f,) = _scan(tmp_path / "main.cu", ["CM501"])
    assert f.fix is None and "also uses its argument unpasted" in f.context["fix_blocked"]
    assert f.context["macro"] == "LOG" and (f.line, f.column) == (5, 7)


GRAPH_UPDATE = ("#include <cuda_runtime.h>\n#define {m}(fn) (cuda##fn)\n"
                "int f(cudaGraphExec_t e, cudaGraph_t g) {{\n  cudaGraphNode_t n;\n  enum cudaGraphExecUpdateResult r;\n"
                "  {m}(GraphExecUpdate(e, g, &n, &r));\n  return (int)r;\n}}\n")


def test_statements_around_the_use_are_the_files(tmp_path):
    # CM1050 (C) declares the result struct before the statement and copies it out after: edits of the file
    # around the macro's use, and of its argument inside it
    _project(tmp_path, {"main.c": GRAPH_UPDATE.format(m="cuda")})
    assert _fix(tmp_path / "main.c", ["CM1050"]) == (
        "#include <cuda_runtime.h>\n#define cuda(fn) (cuda##fn)\n"
        "int f(cudaGraphExec_t e, cudaGraph_t g) {\n  cudaGraphNode_t n;\n  enum cudaGraphExecUpdateResult r;\n"
        "  cudaGraphExecUpdateResultInfo updateResultInfo = {0};\n"
        "  cuda(GraphExecUpdate(e, g, &updateResultInfo));\n"
        "  n = updateResultInfo.errorNode;\n  r = updateResultInfo.result;\n  return (int)r;\n}\n")


def test_rewrite_beyond_the_argument_of_a_short_macro_name_is_manual(tmp_path):
    # `C(...)` is too short to be read as `(cuda...)` in the file: its call is seen in a unit of its own, where
    # the statement around it is the macro's, not the file's
    src = GRAPH_UPDATE.format(m="C")
    _project(tmp_path, {"main.c": src})
    (f,) = _scan(tmp_path / "main.c", ["CM1050"])
    assert f.fix is None and (f.line, f.column) == (6, 5)
    assert f.context["fix_blocked"] == ("no automatic fix: the call is spelled through macro `C`, which pastes `cuda` "
                                        "onto its argument; the rewrite changes more than the argument")
    assert _fix(tmp_path / "main.c", ["CM1050"]) == src


def test_short_macro_name_rename_is_fixed_in_the_argument(tmp_path):
    _project(tmp_path, {"main.cu": "#include <cuda_runtime.h>\n#define C(fn) (cuda##fn)\nint main() { return C(ThreadExit()); }\n"})
    assert _fix(tmp_path / "main.cu", ["CM501"]).endswith("return C(DeviceReset()); }\n")


def test_wrapper_that_stringizes_its_argument_is_a_plain_call(tmp_path):
    # no paste: the API is spelled in the file, and the string the macro prints names the new call after the fix
    _project(tmp_path, {"main.cu": (
        '#include <cstdio>\n#include <cuda_runtime.h>\n#define CHECK(fn) check(fn, #fn)\n'
        "int check(cudaError_t, const char *);\nint main() { return CHECK(cudaThreadSynchronize()); }\n")})
    assert _fix(tmp_path / "main.cu", ["CM501"]).endswith("return CHECK(cudaDeviceSynchronize()); }\n")


# ----------------------------------------------------------------------------- definitions in live branches only
# A header that supports two toolkits defines the same pasting macro twice (`cuda##fn` and `hip##fn`) and picks
# one with the preprocessor: only the definitions and includes nvcc's preprocessor takes count
# (match/ppenv.py's `live_directives`; read/project_index.py's `paste_macros`).
BRANCHES = FIXTURES / "projects" / "pasting-branches"
CUDA_DEF = "#define api(fn) (cuda##fn)\n"
HIP_DEF = "#define api(fn) (hip##fn)\n"
USE = "int main() {\n  api(ThreadSynchronize());\n  return 0;\n}\n"


def _project_scan(root: Path, main: str, rules: list[str]):
    files = sorted(p for p in root.rglob("*") if p.is_file())
    eng = Engine(all_rules(), Options(select=rules, extend_select=rules), project=ProjectIndex(files=files))
    res = eng.scan_path(root / main)
    assert not res.errors, res.errors
    return res.findings


def test_fixture_header_pair_is_found_and_fixed_through_the_branch_nvcc_takes(tmp_path):
    proj = tmp_path / "p"
    shutil.copytree(BRANCHES, proj)
    found = _project_scan(proj, "main.cu", ["CM501"])
    expected = expected_findings((proj / "main.cu").read_text())
    assert sorted((f.line, f.rule_id) for f in found) == sorted(expected.elements()) and len(found) == 2
    assert all(f.fix is not None and f.fix.applicability == "safe" for f in found)
    files = sorted(p for p in proj.rglob("*") if p.is_file())
    eng = Engine(all_rules(), Options(select=["CM501"], extend_select=["CM501"]), project=ProjectIndex(files=files))
    assert fix_text(eng, proj / "main.cu", (proj / "main.cu").read_bytes()) == (BRANCHES / "expected" / "main.cu").read_bytes()


@pytest.mark.parametrize("header", [
    "#ifdef __HIPCC__\n{hip}#else\n{cuda}#endif\n",
    "#if defined(__HIPCC__)\n{hip}#else\n{cuda}#endif\n",
    "#ifndef __HIPCC__\n{cuda}#else\n{hip}#endif\n",
    "#if defined(__HIPCC__) && __HIPCC__ + 0 > 1\n{hip}#elif defined(__CUDACC__)\n{cuda}#endif\n",
    "#if 0\n{hip}#elif !defined(__HIPCC__)\n{cuda}#endif\n",
    "#ifdef __CUDACC__\n#ifdef __HIPCC__\n{hip}#else\n{cuda}#endif\n#endif\n",
], ids=["ifdef", "if-defined", "ifndef", "elif", "else-of-live-if", "nested"])
def test_definition_in_a_dead_branch_does_not_block(tmp_path, header):
    _project(tmp_path, {"chk.h": header.format(hip=HIP_DEF, cuda=CUDA_DEF), "main.cu": '#include "chk.h"\n' + USE})
    (f,) = _project_scan(tmp_path, "main.cu", ["CM501"])
    assert f.fix is not None and f.context.get("macro") == "api"


@pytest.mark.parametrize("include", ['"{0}"', "<{0}>"], ids=["quoted", "angle"])
def test_include_in_a_dead_branch_is_not_followed(tmp_path, include):
    _project(tmp_path, {
        "inc/chk.h": ("#ifdef __HIPCC__\n#include " + include.format("chk_hip.h") + "\n#else\n#include "
                      + include.format("chk_cuda.h") + "\n#endif\n"),
        "inc/chk_hip.h": HIP_DEF, "inc/chk_cuda.h": CUDA_DEF,
        "src/main.cu": "#include " + include.format("../inc/chk.h" if include[0] == '"' else "chk.h") + "\n" + USE})
    (f,) = _project_scan(tmp_path, "src/main.cu", ["CM501"])
    assert f.fix is not None
    assert _fix_in(tmp_path, "src/main.cu", ["CM501"]).endswith("api(DeviceSynchronize());\n  return 0;\n}\n")


def _fix_in(root: Path, main: str, rules: list[str]) -> str:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    eng = Engine(all_rules(), Options(select=rules, extend_select=rules), project=ProjectIndex(files=files))
    return fix_text(eng, root / main, (root / main).read_bytes()).decode()


def test_macros_of_the_file_itself_in_a_dead_branch(tmp_path):
    _project(tmp_path, {"main.cu": "#ifdef __HIPCC__\n" + HIP_DEF + "#else\n" + CUDA_DEF + "#endif\n" + USE})
    assert _fix_in(tmp_path, "main.cu", ["CM501"]).endswith("api(DeviceSynchronize());\n  return 0;\n}\n")


def test_header_reached_through_a_dead_and_a_live_includer(tmp_path):
    # `a.h` includes the header only for HIP, `b.h` always: it is live
    _project(tmp_path, {"a.h": '#ifdef __HIPCC__\n#include "chk.h"\n#endif\n', "b.h": '#include "chk.h"\n',
                        "chk.h": CUDA_DEF, "main.cu": '#include "a.h"\n#include "b.h"\n' + USE})
    (f,) = _project_scan(tmp_path, "main.cu", ["CM501"])
    assert f.fix is not None
    # and only through the dead one: the definition is not seen at all
    _project(tmp_path, {"main.cu": '#include "a.h"\n' + USE})
    assert _project_scan(tmp_path, "main.cu", ["CM501"]) == []


@pytest.mark.parametrize("first", ["#define __HIPCC__ 1\n", "#define USE_HIP\n#ifdef USE_HIP\n#define __HIPCC__\n#endif\n"],
                         ids=["define", "define-under-live-if"])
def test_lookalike_where_the_hip_branch_is_live_is_not_rewritten_as_cuda(tmp_path, first):
    _project(tmp_path, {"chk.h": "#ifdef __HIPCC__\n" + HIP_DEF + "#else\n" + CUDA_DEF + "#endif\n",
                        "main.cu": first + '#include "chk.h"\n' + USE})
    assert _project_scan(tmp_path, "main.cu", ["CM501"]) == []
    assert "DeviceSynchronize" not in _fix_in(tmp_path, "main.cu", ["CM501"])


@pytest.mark.parametrize("header, condition", [
    ("#ifndef USE_HIP\n{cuda}#else\n{hip}#endif\n", "`#ifndef USE_HIP` (chk.h:1)"),
    ("#ifdef USE_HIP\n{hip}#else\n{cuda}#endif\n", "`#ifdef USE_HIP` (chk.h:1)"),  # the HIP definition first
    ("#ifndef CHK_H\n#define CHK_H\n#if defined(USE_HIP) /* hip */\n#include \"chk_hip.h\"\n#else\n#include \"chk_cuda.h\"\n"
     "#endif\n#endif\n", "`#if defined(USE_HIP)` (chk.h:3)"),  # in the included headers, under a header guard
], ids=["cuda-first", "hip-first", "through-includes"])
def test_undecidable_branch_stays_manual_with_its_reason(tmp_path, header, condition):
    # `USE_HIP` comes from the build (a -D this scan is not told of): either definition may be the compiler's. The
    # use is matched as each definition's call, so the CUDA call is found whichever definition comes first.
    _project(tmp_path, {"chk.h": header.format(cuda=CUDA_DEF, hip=HIP_DEF), "chk_hip.h": HIP_DEF,
                        "chk_cuda.h": CUDA_DEF, "main.cu": '#include "chk.h"\n' + USE})
    (f,) = _project_scan(tmp_path, "main.cu", ["CM501"])
    assert f.fix is None and (f.line, f.column) == (3, 7)
    first, second = ("hip", "cuda") if header.index("hip") < header.index("cuda") else ("cuda", "hip")
    assert f.context["fix_blocked"] == (
        "no automatic fix: the call is spelled through macro `api`, which pastes `cuda` onto its argument, and macro "
        f"`api` pastes `{first}` or `{second}` as {condition} decides, a condition this tool cannot decide")
    assert _fix_in(tmp_path, "main.cu", ["CM501"]) == '#include "chk.h"\n' + USE


def test_two_undecided_conditions_are_both_named(tmp_path):
    _project(tmp_path, {"chk.h": "#ifdef WITH_HIP\n" + HIP_DEF + "#endif\n#if WITH_CUDA > 1\n" + CUDA_DEF + "#endif\n",
                        "main.cu": '#include "chk.h"\n' + USE})
    (f,) = _project_scan(tmp_path, "main.cu", ["CM501"])
    assert f.fix is None and f.context["fix_blocked"].endswith(
        "macro `api` pastes `hip` or `cuda` as `#ifdef WITH_HIP` (chk.h:1) and `#if WITH_CUDA > 1` (chk.h:4) decide, "
        "conditions this tool cannot decide")


def test_every_prefix_of_an_undecided_macro_is_matched_once():
    # parse/pasting.py's `view`: the use is seen with the first definition's prefix and, in a pasted unit, with
    # each other one; the prefilter's words include them all
    from cudamigrate.parse.pasting import merge, pasted_words, view
    from cudamigrate.parse.treesitter import parse

    hip, cuda = PasteMacro("api", 0, 1, b"hip"), PasteMacro("api", 0, 1, b"cuda")
    both = merge(hip, cuda)
    assert both is not None and both.prefix == b"hip" and both.others == (b"cuda",) and both.blocked
    assert merge(both, cuda) == both and merge(cuda, hip).others == (b"hip",)  # type: ignore[union-attr]
    data = b"int main() { return api(ThreadSynchronize()); }\n"
    assert pasted_words(data, {"api": both}) == {b"hipThreadSynchronize", b"cudaThreadSynchronize"}
    seen = view(data, parse(data), {"api": both})
    assert [p.prefix for p in seen.pastes] == [b"hip"]
    assert [(u.paste.prefix, u.paste.blocked) for u in seen.units if u.paste] == [(b"cuda", both.blocked)]


def test_enclosing_condition_names_the_group_a_header_guard_aside():
    from cudamigrate.read.project_index import enclosing_condition

    data = b"#ifndef G\n#define G\n#ifdef USE_HIP // hip\n#define a\n#else\n#define b\n#endif\n#define c\n#endif\n"
    assert enclosing_condition(data, data.index(b"#define a")) == (3, "#ifdef USE_HIP")
    assert enclosing_condition(data, data.index(b"#define b")) == (3, "#ifdef USE_HIP")
    assert enclosing_condition(data, data.index(b"#define c")) is None


def test_hip_header_of_the_system_makes_hipcc_unknown(tmp_path):
    # HIP's own headers define `__HIPCC__` when nvcc compiles them: after `#include <hip/...>` it is not known
    _project(tmp_path, {"chk.h": "#include <hip/hip_runtime.h>\n#ifndef __HIPCC__\n" + CUDA_DEF + "#else\n" + HIP_DEF + "#endif\n",
                        "main.cu": '#include "chk.h"\n' + USE})
    (f,) = _project_scan(tmp_path, "main.cu", ["CM501"])
    assert f.fix is None and "cannot decide" in f.context["fix_blocked"]


def test_undecidable_definition_and_a_dead_one(tmp_path):
    # the dead HIP definition drops out; the one under an undecided condition is the only one left
    _project(tmp_path, {"chk.h": "#ifdef __HIPCC__\n" + HIP_DEF + "#elif defined(CHECKS)\n" + CUDA_DEF + "#endif\n",
                        "main.cu": '#include "chk.h"\n' + USE})
    (f,) = _project_scan(tmp_path, "main.cu", ["CM501"])
    assert f.fix is not None


def test_host_file_leaves_cudacc_undecided(tmp_path):
    # a .cpp may be compiled by nvcc or by the host compiler: `__CUDACC__` decides nothing there
    _project(tmp_path, {"chk.h": "#ifdef __CUDACC__\n" + CUDA_DEF + "#else\n" + HIP_DEF + "#endif\n",
                        "main.cpp": '#include <cuda_runtime.h>\n#include "chk.h"\n' + USE})
    (f,) = _project_scan(tmp_path, "main.cpp", ["CM501"])
    assert f.fix is None and "cannot decide" in f.context["fix_blocked"]


@pytest.mark.nvcc
def test_fixture_header_pair_builds_before_and_after_the_fix(tmp_path):
    # nvcc 13.0 reports the removed calls (a `hip##fn` spelling would not build either: hip/ is not installed)
    before = compile_file(BRANCHES / "main.cu", tmp_path / "before.o", include_dirs=[BRANCHES / "include"])
    assert not before.ok and "cudaThreadSynchronize" in before.output
    after = compile_file(BRANCHES / "expected" / "main.cu", tmp_path / "after.o", include_dirs=[BRANCHES / "include"])
    assert after.ok, after.output


def test_live_directives_reads_the_command_lines_defines(tmp_path):
    # match/ppenv.py's walk: `-DUSE_HIP` (or `-D__HIPCC__`) makes the HIP branch the live one; `-UUSE_HIP` the other
    from cudamigrate.match.ppenv import live_directives, toolkits_from

    (tmp_path / "chk_hip.h").write_text(HIP_DEF)
    (tmp_path / "chk_cuda.h").write_text(CUDA_DEF)
    main = b'#ifdef USE_HIP\n#include "chk_hip.h"\n#else\n#include "chk_cuda.h"\n#endif\n'
    path = str(tmp_path / "main.cu")

    def beside(includer: str, name: str, quoted: bool) -> str | None:
        cand = tmp_path / name
        return str(cand) if quoted and cand.is_file() else None

    def includes(defines):
        got = live_directives(main, path, True, toolkits_from((13, 0)), beside, defines)[path]
        return [got[main.index(b"#include", i)] for i in (0, main.index(b"#else"))]

    assert includes(()) == [None, None]
    assert includes((("USE_HIP", ""),)) == [True, False]
    assert includes((("USE_HIP", None),)) == [False, True]
    assert live_directives(main, path, True, toolkits_from((13, 0)), beside, (("USE_HIP", "0"),))[
        str(tmp_path / "chk_hip.h")] == {0: True}  # `#ifdef`: defined, whatever its value


def test_one_pass_answers_as_a_pass_per_macro_and_per_offset_did():
    """pasted_words and enclosing_condition read a file once (bench/bounds.py paste-defs times the file that was
    quadratic); what they answer is what the pass per macro and the pass per offset answered."""
    import random
    import re

    from cudamigrate.parse.pasting import PasteMacro, pasted_words
    from cudamigrate.read.project_index import condition_index, enclosing_condition

    rnd = random.Random(3)
    names = ["api", "GPU", "chk", "x"]
    macros = {n: PasteMacro(n, 0 if n != "chk" else 1, 2, b"cuda", None, (b"hip",) if n == "GPU" else ())
              for n in names}
    pieces = ["api(", "GPU (", "chk(", "x(", "(", ")", "Free", "Malloc(", " ", "\n", ".api(", "->GPU(", "_api(",
              "#if A\n", "#ifdef B // b\n", "#ifndef G\n#define G\n", "#else\n", "#elif C\n", "#endif\n", "#define d\n"]
    for _ in range(300):
        data = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 40))).encode()
        per_macro: set[bytes] = set()  # as the pass per macro read it, and with each use's argument a lookahead
        overlapping: set[bytes] = set()  # (`GPU(GPU(Malloc` is two uses; the pass per macro saw the first alone)
        for name, pm in macros.items():
            if pm.index == 0 and name.encode() in data:
                for m in re.finditer(rb"(?<![\w.>])" + re.escape(name.encode()) + rb"\s*\(\s*([A-Za-z_]\w*)", data):
                    per_macro.update(p + m.group(1) for p in (pm.prefix, *pm.others))
                for m in re.finditer(rb"(?<![\w.>])" + re.escape(name.encode()) + rb"(?=\s*\(\s*([A-Za-z_]\w*))", data):
                    overlapping.update(p + m.group(1) for p in (pm.prefix, *pm.others))
        got = pasted_words(data, macros)
        assert got == overlapping and per_macro <= got, data
        index = condition_index(data)
        for at in [i + 1 for i, c in enumerate(data) if c == ord("\n")] + [0]:
            # the pass per offset: the text before `at` alone
            assert enclosing_condition(data, at, index) == enclosing_condition(data[:at], at), (data, at)
