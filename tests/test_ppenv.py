"""ppenv: the preprocessor state a translation unit sees, through the project's own headers."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cudamigrate.toolcheck.build import cuda_home
from cudamigrate.scan.engine import Engine, Options
from cudamigrate.match.migrations.builtins import toolkits_from
from cudamigrate.match.ppenv import build_env, directives, toolkit_groups

from .helpers import all_rules

W13 = toolkits_from((13, 0))


def _env(path: Path, cuda: bool = False, roots=()):
    return build_env(path.read_bytes(), path, cuda, tuple(str(r) for r in roots), W13)


def _at(path: Path, marker: str) -> int:
    return path.read_bytes().index(marker.encode())


def test_cuda_h_through_a_project_header(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "common.h").write_text("#ifndef COMMON_H\n#define COMMON_H\n#include <cuda.h>\n#endif\n")
    f = tmp_path / "a.cpp"
    f.write_text('#if CUDA_VERSION >= 13000\n#endif\n#include "inc/common.h"\n#if CUDA_VERSION >= 13000\n#endif\n')
    env = _env(f)
    first, second = _at(f, "#if"), f.read_bytes().rindex(b"#if")
    assert env.decide("CUDA_VERSION >= 13000", first, W13) is None  # not included yet: maybe undefined
    assert env.decide("CUDA_VERSION >= 13000", second, W13) is True


def test_angle_include_found_under_the_scan_root(tmp_path):
    (tmp_path / "Common").mkdir()
    (tmp_path / "Common" / "helper.h").write_text("#pragma once\n#include <cuda_runtime.h>\n#define API_LEVEL 5000\n")
    (tmp_path / "s" / "x").mkdir(parents=True)
    f = tmp_path / "s" / "x" / "a.cpp"
    f.write_text("#include <helper.h>\n#if CUDART_VERSION < 13000\n#endif\n")
    pos = _at(f, "#if")
    assert _env(f).decide("CUDART_VERSION < 13000", pos, W13) is None  # helper.h unknown without the root
    env = _env(f, roots=[tmp_path])
    assert env.decide("CUDART_VERSION < 13000", pos, W13) is False
    assert env.decide("API_LEVEL >= 4000", pos, W13) is True
    assert env.decide("API_LEVEL >= 4000", pos, W13, user_macros=False) is None  # CM410: configuration


def test_defined_and_version_is_decided_both_ways(tmp_path):
    f = tmp_path / "a.cpp"  # host file: __CUDACC_VER_MAJOR__ may or may not be defined
    f.write_text("#if X\n#endif\n")
    env = _env(f)
    assert env.decide("defined(__CUDACC_VER_MAJOR__) && __CUDACC_VER_MAJOR__ < 11", 0, W13) is False
    assert env.decide("!defined(__CUDACC_VER_MAJOR__) || __CUDACC_VER_MAJOR__ >= 12", 0, W13) is True
    assert env.decide("__CUDACC_VER_MAJOR__ >= 12", 0, W13) is None  # 0 when undefined
    assert env.decide("defined(__CUDACC_VER_MAJOR__)", 0, W13) is None


def test_defines_under_undecided_conditions_are_unknown(tmp_path):
    f = tmp_path / "a.cpp"
    f.write_text("#define A 1\n#ifdef FROM_COMMAND_LINE\n#define A 2\n#define B 3\n#endif\n#if A\n#endif\n"
                 "#undef A\n#if defined(A)\n#endif\n")
    env = _env(f)
    pos = _at(f, "#if A")
    assert env.decide("A == 1", pos, W13) is None
    assert env.decide("defined(B)", pos, W13) is None
    assert env.decide("defined(A)", _at(f, "#if defined(A)"), W13) is False


def test_dead_branches_of_header_and_file_are_skipped(tmp_path):
    (tmp_path / "cfg.h").write_text("#ifndef CFG_H\n#define CFG_H\n#if 0\n#define OLD_API 1\n#endif\n#define LEVEL (2 * 1000)\n#endif\n")
    f = tmp_path / "a.cpp"
    f.write_text('#include "cfg.h"\n#include "cfg.h"\n#if LEVEL\n#endif\n')
    env = _env(f)
    pos = _at(f, "#if LEVEL")
    assert env.decide("LEVEL == 2000", pos, W13) is True
    assert env.decide("defined(OLD_API)", pos, W13) is None  # never defined by the project: still a possible -D


def test_include_cycles_terminate(tmp_path):
    (tmp_path / "a.h").write_text('#include "b.h"\n#define FROM_A 1\n')
    (tmp_path / "b.h").write_text('#include "a.h"\n#define FROM_B 1\n')
    f = tmp_path / "m.cpp"
    f.write_text('#include "a.h"\n#if FROM_A && FROM_B\n#endif\n')
    assert _env(f).decide("FROM_A && FROM_B", _at(f, "#if F"), W13) is True


def test_matrixmul_dynlink_like_macro_dead_branch(tmp_path):
    """A driver-API wrapper header defines its own API level; the file's `#else` for older levels is dead, so the
    removed calls in it are not reported, while the live branch and undecided branches are."""
    (tmp_path / "dynlink_api.h").write_text(
        "#ifndef DYNLINK_API_H\n#define DYNLINK_API_H\n#include <cuda.h>\n#define MY_DRV_API_VERSION 5000\n#endif\n")
    f = tmp_path / "jit.cpp"
    f.write_text('#include "dynlink_api.h"\n'
                 "void f(CUcontext *c, CUdevice d) {\n"
                 "#if MY_DRV_API_VERSION >= 4000\n  cuCtxCreate(c, nullptr, 0, d);\n"
                 "#else  // MY_DRV_API_VERSION < 4000\n  cuCtxCreate(c, 0, d);\n  cuCtxCreate_v2(c, 0, d);\n#endif\n"
                 "#if MY_DRV_API_VERSION >= 6000\n  cuCtxCreate(c, 0, d);\n#endif\n"
                 "#ifdef EXTERNAL_OPTION\n  cuCtxCreate(c, 0, d);\n#endif\n}\n")
    eng = Engine(all_rules(), Options(select=["CM509", "CM410"]))
    res = eng.scan_bytes(f, f.read_bytes())
    assert [(x.rule_id, x.line) for x in res.findings] == [("CM509", 13)]


def test_toolkit_table():
    assert toolkit_groups("cuda.h") == {"CUDA_VERSION"}
    assert toolkit_groups("cuda_runtime.h") == {"CUDART_VERSION"}
    assert toolkit_groups("cublas_v2.h") == {"CUDART_VERSION"}
    assert toolkit_groups("cufft.h") == set()
    assert toolkit_groups("nvrtc.h") == set()


@pytest.mark.skipif(shutil.which("g++") is None or cuda_home() is None, reason="needs g++ and the CUDA headers")
@pytest.mark.parametrize("header", ["cuda.h", "cuda_runtime.h", "cuda_fp16.h", "cudaGL.h", "driver_types.h", "vector_types.h"])
def test_toolkit_table_matches_the_headers(header):
    """The table says what the host compiler sees: check a sample of headers against g++ -E -dM."""
    inc = Path(cuda_home()) / "include"
    p = subprocess.run(["g++", "-x", "c++", "-E", "-dM", f"-I{inc}", f"-I{inc / 'cccl'}", "-"],
                       input=f"#include <{header}>\n", capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    got = {m for m in ("CUDA_VERSION", "CUDART_VERSION") if f"#define {m} " in p.stdout}
    assert got == toolkit_groups(header)


@pytest.mark.parametrize("header", [
    "#ifndef G_H\n#define G_H\n#define LEVEL 7\n#endif\n",
    "#pragma once\n#ifndef G_H\n#define G_H\n#define LEVEL 7\n#endif\n",
    "#if !defined(G_H)\n#define G_H\n#define LEVEL 7\n#endif\n",
    "#pragma once\n#define LEVEL 7\n",
])
def test_include_guard_spellings(tmp_path, header):
    (tmp_path / "g.h").write_text(header)
    f = tmp_path / "a.cpp"
    f.write_text('#include "g.h"\n#include "g.h"\n#if LEVEL\n#endif\n')
    assert _env(f).decide("LEVEL == 7", _at(f, "#if LEVEL"), W13) is True


def test_a_guard_with_code_after_its_endif_is_not_a_guard(tmp_path):
    (tmp_path / "g.h").write_text("#ifndef G_H\n#define G_H\n#endif\n#define LEVEL 7\n#if X\n#endif\n")
    f = tmp_path / "a.cpp"
    f.write_text('#include "g.h"\n#if LEVEL\n#endif\n')
    # the #ifndef is an ordinary condition on an unknown macro, LEVEL is known after it; G_H is defined after it
    # whatever it was before (`#ifndef G_H` / `#define G_H`: test_define_if_not_defined_...), its value unknown
    assert _env(f).decide("LEVEL == 7", _at(f, "#if LEVEL"), W13) is True
    assert _env(f).decide("defined(G_H)", _at(f, "#if LEVEL"), W13) is True
    assert _env(f).decide("G_H == 1", _at(f, "#if LEVEL"), W13) is None


# --------------------------------------------------------------------------- header walks: bounded and exact
def _walk_env(path: Path, roots=(), memoise: bool = True):
    from cudamigrate.match import ppenv

    old = ppenv._Walker.memoise
    ppenv._Walker.memoise = memoise
    made: list = []
    init = ppenv._Walker.__init__

    def spy(self, *a):
        init(self, *a)
        made.append(self)

    ppenv._Walker.__init__ = spy
    try:
        env = build_env(path.read_bytes(), path, False, tuple(str(r) for r in roots), W13)
        assert env.positions is not None  # the walk is lazy: finish it under this setting
    finally:
        ppenv._Walker.memoise = old
        ppenv._Walker.__init__ = init
    return env, made[0].walks


def test_headers_included_under_an_undecided_condition_are_walked_a_bounded_number_of_times(tmp_path):
    """Each header includes the next two; the first include sits under an undecided `#if`, so every guard macro
    is UNKNOWN and each `#include` walks the header again: 2^N walks without a memo (the CCCL headers of CUDA
    13.0 never finished: `cuda/std/detail/__config` reached 90,000 walks for one thrust header)."""
    n = 40
    for i in range(n):
        inc = "".join(f'#include "h{j}.h"\n' for j in (i + 1, i + 2) if j < n)
        (tmp_path / f"h{i}.h").write_text(f"#ifndef H{i}\n#define H{i}\n#define V{i} {i}\n{inc}#endif\n")
    f = tmp_path / "a.cpp"
    f.write_text('#if SOME_FLAG\n#include "h0.h"\n#endif\n#include "h0.h"\n#if V39 == 39\n#endif\n')
    env, walks = _walk_env(f)
    assert walks <= 4 * n, walks  # each header: once per (certain, state) it is met in
    assert env.decide("V39 == 39", _at(f, "#if V39"), W13) is True  # the certain include still decides


def _random_tree(root: Path, rng) -> Path:
    """A small project whose headers define, undefine and test macros, include one another (quoted, from a
    subdirectory, by angle brackets through the root, in cycles), with and without guards and `#pragma once`."""
    names = [f"h{i}.h" for i in range(6)]
    where = {n: (root / "sub" / n if i % 3 == 2 else root / n) for i, n in enumerate(names)}
    macros = ["A", "B", "C", "CUDA_VERSION"]

    def include(owner: Path) -> str:
        n = rng.choice(names)
        target = where[n]
        if rng.random() < 0.3:
            return f"#include <{target.relative_to(root).as_posix()}>\n"
        rel = os.path.relpath(target, owner.parent).replace(os.sep, "/")
        return f'#include "{rel if rng.random() < 0.8 else n}"\n'

    def body(owner: Path, depth: int) -> str:
        out = []
        for _ in range(rng.randint(1, 5)):
            r = rng.random()
            if r < 0.25:
                out.append(f"#define {rng.choice(macros[:3])} {rng.randint(0, 2)}\n")
            elif r < 0.32:
                out.append(f"#undef {rng.choice(macros[:3])}\n")
            elif r < 0.4:
                out.append("#include <cuda.h>\n")
            elif r < 0.7:
                out.append(include(owner))
            elif depth < 2:
                m = rng.choice(macros)
                cond = rng.choice([f"#if {m} > 1", f"#ifdef {m}", f"#ifndef {m}", f"#if {m} >= 13000 || UNSET"])
                els = f"#else\n{body(owner, depth + 1)}" if rng.random() < 0.5 else ""
                out.append(f"{cond}\n{body(owner, depth + 1)}{els}#endif\n")
        return "".join(out)

    for i, n in enumerate(names):
        p = where[n]
        p.parent.mkdir(parents=True, exist_ok=True)
        b = body(p, 0)
        kind = rng.random()
        if kind < 0.4:
            b = f"#ifndef G{i}\n#define G{i}\n{b}#endif\n"
        elif kind < 0.6:
            b = "#pragma once\n" + b
        p.write_text(b)
    main = root / "main.cpp"
    text = body(main, 0) + "".join(f"{include(main)}#if A > 1\n#endif\n" for _ in range(4)) + "#if B\n#endif\n"
    main.write_text(text)
    return main


@pytest.mark.parametrize("seed", range(40))
def test_the_memoised_walk_gives_the_states_of_the_full_walk(tmp_path, seed):
    import random

    main = _random_tree(tmp_path, random.Random(seed))
    from cudamigrate.match.ppenv import MAX_WALKS

    fast, _ = _walk_env(main, roots=[tmp_path])
    slow, walks = _walk_env(main, roots=[tmp_path], memoise=False)
    assert walks < MAX_WALKS  # the reference walked everything
    assert fast.positions == slow.positions
    assert [(s.toolkit, s.macros) for s in fast.states] == [(s.toolkit, s.macros) for s in slow.states]


@pytest.mark.parametrize("seed", range(20))
def test_header_walks_shared_by_the_files_of_a_run_give_the_states_of_the_full_walk(tmp_path, seed):
    """One run keeps the header walks for all its files (`shared`): every file of a random project, walked in
    turn with the walks of the files before it, gets the states of its own full walk."""
    import random

    main = _random_tree(tmp_path, random.Random(seed))
    shared: dict = {}
    files = [main] + sorted(p for p in tmp_path.rglob("*.h")) + [main]
    for f in files:
        env = build_env(f.read_bytes(), f, False, (str(tmp_path),), W13, shared=shared)
        slow, _ = _walk_env(f, roots=[tmp_path], memoise=False)
        assert env.positions == slow.positions, f
        assert [(s.toolkit, s.macros) for s in env.states] == [(s.toolkit, s.macros) for s in slow.states], f
    assert shared  # the walks were kept


def test_unguarded_headers_that_include_one_another_stop_at_the_walk_budget(tmp_path, monkeypatch):
    """Without guards every include path is a different walk (the memo cannot replay a walk whose headers are on
    the stack): 8 headers that include all the others have 8! paths. The budget stops the walk; what the headers
    not walked could do makes every macro known before them unknown, and the file's own later #defines stay known."""
    from cudamigrate.match import ppenv

    monkeypatch.setattr(ppenv, "MAX_WALKS", 300)
    n = 8
    for i in range(n):
        (tmp_path / f"u{i}.h").write_text("".join(f'#include "u{j}.h"\n' for j in range(n) if j != i)
                                          + f"#define U{i} {i}\n")
    f = tmp_path / "a.cpp"
    f.write_text('#define MINE 1\n#include "u0.h"\n#define AFTER 2\n#if MINE\n#endif\n')
    env, walks = _walk_env(f)
    assert walks == 300
    pos = _at(f, "#if MINE")
    assert env.decide("MINE == 1", pos, W13) is None  # a header not walked may have redefined it
    assert env.decide("AFTER == 2", pos, W13) is True
    assert env.decide("MINE == 1", _at(f, '#include "u0.h"'), W13) is True  # before the include: known


def _both(f: Path, marker: str, cond: str, roots=()):
    """decide(cond) at marker with the memo and with the full walk."""
    pos = _at(f, marker)
    return tuple(_walk_env(f, roots, memoise=m)[0].decide(cond, pos, W13) for m in (True, False))


def test_a_header_walk_is_not_replayed_where_one_of_its_headers_is_on_the_stack(tmp_path):
    # first h.h -> p.h -> (h.h cut) ; then p.h -> h.h -> (p.h cut): h.h then sees Z undefined
    (tmp_path / "h.h").write_text('#include "p.h"\n#ifdef Z\n#define W 1\n#else\n#define W 2\n#endif\n')
    (tmp_path / "p.h").write_text('#include "h.h"\n#define Z 1\n')
    f = tmp_path / "a.cpp"
    f.write_text('#include "h.h"\n#undef Z\n#undef W\n#include "p.h"\n#if W\n#endif\n')
    assert _both(f, "#if W", "W == 2") == (True, True)


def test_a_header_walk_is_not_replayed_under_includers_in_another_directory(tmp_path):
    # sub/h.h says #include "cfg.h": found beside its includer (gcc's quote chain), A/ one time and B/ the next
    for d, v in (("A", 1), ("B", 2)):
        (tmp_path / d).mkdir()
        (tmp_path / d / "cfg.h").write_text(f"#define CFG {v}\n")
        (tmp_path / d / "x.h").write_text('#include "../sub/h.h"\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "h.h").write_text('#include "cfg.h"\n')
    f = tmp_path / "a.cpp"
    f.write_text('#include "A/x.h"\n#include "B/x.h"\n#if CFG\n#endif\n')
    assert _both(f, "#if CFG", "CFG == 2") == (True, True)


def test_a_header_walk_is_not_replayed_deeper_than_the_depth_limit(tmp_path, monkeypatch):
    from cudamigrate.match import ppenv

    monkeypatch.setattr(ppenv, "MAX_DEPTH", 4)
    (tmp_path / "k.h").write_text('#include "c1.h"\n')
    (tmp_path / "c1.h").write_text('#include "c2.h"\n')
    (tmp_path / "c2.h").write_text('#include "c3.h"\n')
    (tmp_path / "c3.h").write_text("#define D3 1\n")
    f = tmp_path / "a.cpp"
    f.write_text('#include "c1.h"\n#undef D3\n#include "k.h"\n#if D3\n#endif\n')
    assert _both(f, "#if D3", "defined(D3)") == (False, False)  # a.cpp > k.h > c1.h > c2.h: c3.h is too deep


def test_the_main_file_is_walked_only_as_far_as_asked(tmp_path):
    """A finding inside the file's include guard needs the state at the guard, before any #include."""
    (tmp_path / "h.h").write_text("#define H 1\n")
    f = tmp_path / "a.h"
    f.write_text('#ifndef A_H\n#define A_H\n#include "h.h"\n#if H\n#endif\n#endif\n')
    env = _env(f)
    assert env.decide("!defined(A_H)", 0, W13) is None  # nothing known about A_H before the guard
    assert env._walker.walks == 0
    assert env.decide("H == 1", _at(f, "#if H"), W13) is True
    assert env._walker.walks == 1
    assert env.positions == [d.pos for d in directives(f.read_bytes())]


def test_a_scan_through_headers_included_under_an_undecided_condition_stays_bounded(tmp_path, monkeypatch):
    """End to end (engine -> dead_for_target -> ppenv): the CCCL shape, a chain of guarded headers first
    included under an undecided `#if`. Bounded walks, and the later certain include still decides the `#if`
    around the call (its `#else` is dead: one finding)."""
    from cudamigrate.match import ppenv

    made: list = []
    init = ppenv._Walker.__init__

    def spy(self, *a):
        init(self, *a)
        made.append(self)

    monkeypatch.setattr(ppenv._Walker, "__init__", spy)
    n = 40
    for i in range(n):
        inc = "".join(f'#include "h{j}.h"\n' for j in (i + 1, i + 2) if j < n)
        (tmp_path / f"h{i}.h").write_text(f"#ifndef H{i}\n#define H{i}\n#define V{i} {i}\n{inc}#endif\n")
    f = tmp_path / "jit.cpp"
    f.write_text('#if SOME_FLAG\n#include "h0.h"\n#endif\n#include "h0.h"\n'
                 "void f(CUcontext *c, CUdevice d) {\n#if V39 == 39\n  cuCtxCreate(c, 0, d);\n#else\n"
                 "  cuCtxCreate(c, 0, d);\n#endif\n}\n")
    res = Engine(all_rules(), Options(select=["CM509"])).scan_bytes(f, f.read_bytes())
    assert [(x.rule_id, x.line) for x in res.findings] == [("CM509", 7)]
    assert made and all(w.walks <= 4 * n for w in made), [w.walks for w in made]


def test_define_if_not_defined_leaves_the_macro_defined_whatever_the_condition_was(tmp_path):
    """`#if V >= 9 && !defined(X)` / `#define X`: X was defined before (then it still is) or the branch is taken
    (once X is undefined, `V >= 9` decides), so X is certainly defined after, its value unknown. Where another
    undecided part decides the branch (a -D of nobody's), or the #else of such a branch defines it, it is not."""
    f = tmp_path / "a.cu"
    f.write_text("#if (__CUDACC_VER_MAJOR__ >= 9) && !defined(X)\n#define X\n#endif\n"
                 "#if defined(FLAG) && !defined(Y)\n#define Y\n#endif\n"
                 "#ifdef Z\n#else\n#define Z 1\n#endif\n"
                 "#if !defined(W) && __CUDACC_VER_MAJOR__ >= 9\n#elif 1\n#define W\n#endif\n"
                 "#if X\n#endif\n#ifdef END\n#endif\n")
    env = _env(f, cuda=True)
    end = _at(f, "#ifdef END")
    assert env.decide("defined(X)", end, W13) is True
    assert env.decide("X > 0", end, W13) is None  # defined, value unknown (a -DX=0 may have come first)
    assert env.decide("defined(Y)", end, W13) is None
    assert env.decide("defined(Z)", end, W13) is True  # `#ifdef Z` / `#else` / `#define Z`: the same idiom
    assert env.decide("defined(W)", end, W13) is None  # an `#elif` branch: not reasoned about


def test_define_if_not_defined_in_a_header_included_under_an_undecided_condition_stays_unknown(tmp_path):
    (tmp_path / "h.h").write_text("#if (__CUDACC_VER_MAJOR__ >= 9) && !defined(X)\n#define X\n#endif\n")
    f = tmp_path / "a.cu"
    f.write_text('#ifdef FLAG\n#include "h.h"\n#endif\n#ifdef END\n#endif\n')
    env = _env(f, cuda=True, roots=[tmp_path])
    assert env.decide("defined(X)", _at(f, "#ifdef END"), W13) is None
