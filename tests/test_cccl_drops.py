"""scripts/build_cccl_drops.py: the names a public CCCL header stopped reaching between two releases, on a pair of
header trees written here (always), and the shipped data file against the wheels' headers where they are cached
(`python scripts/build_cccl_drops.py --fetch` puts them in ~/.cache/cudamigrate/cccl-headers)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("build_cccl_drops", ROOT / "scripts" / "build_cccl_drops.py")
gen = importlib.util.module_from_spec(_spec)
sys.modules["build_cccl_drops"] = gen
_spec.loader.exec_module(gen)

TUPLE = """#pragma once
#include <thrust/detail/config.h>
#include <cuda/std/tuple>
THRUST_NAMESPACE_BEGIN
/* using ::cuda::std::commented; */
template <class T = int>
using ::cuda::std::tuple;
using ::cuda::std::get;
using ::cuda::std::make_tuple;
namespace detail { using ::cuda::std::hidden; }
THRUST_NAMESPACE_END
"""


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _pair(tmp_path: Path) -> dict[str, Path]:
    common = {"thrust/detail/config.h": "#pragma once\n", "cuda/std/tuple": "namespace cuda { namespace std {\n"
              "template <class...> class tuple {}; } }\n", "thrust/tuple.h": TUPLE,
              "thrust/pair.h": '#include "tuple.h"\nTHRUST_NAMESPACE_BEGIN\nstruct pair {};\nTHRUST_NAMESPACE_END\n'}
    old = _tree(tmp_path / "old", {**common,
                                   "thrust/zip.h": "#include <thrust/tuple.h>\n#include <cuda/std/tuple>\n",
                                   "thrust/sort.h": "#if 0\n#include <thrust/tuple.h>\n#endif\n",
                                   "thrust/own.h": "#include <thrust/tuple.h>\n",
                                   "thrust/ns.h": "#include <thrust/tuple.h>\n"})
    new = _tree(tmp_path / "new", {**common,
                                   "thrust/zip.h": "#include <cuda/std/tuple>\n// #include <thrust/tuple.h>\n",
                                   "thrust/sort.h": "\n",
                                   # declares `get` itself: only make_tuple/tuple are gone from it
                                   "thrust/own.h": "THRUST_NAMESPACE_BEGIN\nusing ::cuda::std::get;\n"
                                                   "THRUST_NAMESPACE_END\n",
                                   # `using namespace` at thrust scope: anything may still be there
                                   "thrust/ns.h": "THRUST_NAMESPACE_BEGIN\nusing namespace ::cuda::std;\n"
                                                  "THRUST_NAMESPACE_END\n"})
    return {"1.0": old, "1.1": new}


def test_names_a_header_no_longer_reaches_are_drops_with_the_declaring_header_and_line(tmp_path):
    doc = gen.build(_pair(tmp_path), (("1.0", "a"), ("1.1", "b")))
    heads = doc["headers"]
    got = {(d["name"], tuple(heads[i] for i in d["headers"])) for d in doc["drops"]}
    # zip.h dropped all three; sort.h's include was under `#if 0`, never reached;
    # own.h still declares get; ns.h has a `using namespace`; pair.h still includes tuple.h; the detail:: name and
    # the commented one are not thrust's names
    assert got == {("thrust::get", ("thrust/zip.h",)), ("thrust::make_tuple", ("thrust/own.h", "thrust/zip.h")),
                   ("thrust::tuple", ("thrust/own.h", "thrust/zip.h"))}
    assert {d["name"]: d["declared_in"] for d in doc["drops"]}["thrust::get"] == ["thrust/tuple.h:8"]
    reach = {n: [heads[i] for i in g["headers"]] for g in doc["reached_by"]["1.1"] for n in g["names"]}
    assert reach["thrust::get"] == ["thrust/ns.h", "thrust/own.h", "thrust/pair.h", "thrust/tuple.h"]
    assert "1.0" not in doc["reached_by"]
    assert gen.render(doc) == gen.render(gen.build(_pair(tmp_path), (("1.0", "a"), ("1.1", "b"))))  # deterministic


def test_check_mode_says_whether_the_file_is_what_the_headers_give(tmp_path, monkeypatch, capsys):
    trees = _pair(tmp_path)
    cache = tmp_path / "cache"
    for (_, cccl), path in zip((("1.0", "a"), ("1.1", "b")), trees.values(), strict=True):
        (cache / cccl / "thrust").mkdir(parents=True)
        for f in path.rglob("*"):
            if f.is_file():
                (cache / cccl / f.relative_to(path)).parent.mkdir(parents=True, exist_ok=True)
                (cache / cccl / f.relative_to(path)).write_bytes(f.read_bytes())
        (cache / cccl / "thrust" / "version.h").write_text("\n")
    monkeypatch.setattr(gen, "RELEASES", (("1.0", "a"), ("1.1", "b")))
    out = tmp_path / "drops.json.gz"
    args = ["--cache", str(cache), "--out", str(out)]
    assert gen.main([*args, "--check"]) == 1
    assert gen.main(args) == 0
    assert gen.main([*args, "--check"]) == 0
    assert gen.main(["--cache", str(tmp_path / "none"), "--out", str(out)]) == 2


def test_the_shipped_file_holds_what_the_wheels_headers_give_for_the_13_3_pair():
    """The 13.2 -> 13.3 drops of thrust/iterator/'s headers rebuilt from the cached wheels' headers (the whole
    file: `build_cccl_drops.py --check`, ~13 s here)."""
    trees = gen.cached_trees()
    if trees is None:
        pytest.skip(f"the nvidia-cuda-cccl headers are not cached under {gen.CACHE} (build_cccl_drops.py --fetch)")
    doc = json.loads(gzip.decompress(gen.DATA.read_bytes()))
    old, new = (gen.Release(c, gen.Tree(trees[c])) for c in ("13.2", "13.3"))
    got = {n: (sorted(e["headers"]), [f"{d}:{ln}" for d, ln in sorted(e["declared_in"].items())])
           for n, e in gen.drops(old, new, only="thrust/iterator/").items()}
    shipped = {}
    for d in doc["drops"]:
        hs = [doc["headers"][i] for i in d["headers"] if doc["headers"][i].startswith("thrust/iterator/")]
        if d["from"] == "13.2" and hs:
            shipped[d["name"]] = (hs, d["declared_in"])
    assert got == shipped
    assert "thrust/iterator/zip_iterator.h" in got["thrust::make_tuple"][0]


# ----------------------------------------------------------------------------------------------- CM585 in a project
def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "kernels.cuh").write_text(  # no CCCL include of its own: its includer's count
        '#pragma once\n#include <cstdio>\n\ntemplate <typename T>\n__host__ __device__ float first(T t) '
        '{ return thrust::get<0>(t); }\n')
    (proj / "app.cu").write_text(
        '#include <thrust/device_vector.h>\n#include "thrust/iterator/zip_iterator.h"\n#include "kernels.cuh"\n\n'
        'int main() {\n  auto t = thrust::make_tuple(1.0f, 2);\n  return (int)first(t) + thrust::get<1>(t);\n}\n')
    (proj / "tuples.h").write_text("#pragma once\n#include <thrust/tuple.h>\n")
    (proj / "fine.cu").write_text(  # reaches the declaring header through a project header
        '#include <thrust/iterator/zip_iterator.h>\n#include "tuples.h"\n\n'
        'int g() { return thrust::get<0>(thrust::make_tuple(1)); }\n')
    return proj


def _findings(proj: Path, target: str) -> list[tuple[str, int]]:
    from .helpers import run_cli

    out = run_cli("scan", "--no-cache", "--format", "json", "--select", "CM585", "--target-cuda", target, proj)
    doc = json.loads(out.output)
    return sorted((Path(f["path"]).name, f["line"]) for f in doc["findings"])


def test_cm585_follows_project_headers_both_ways_and_the_target(tmp_path):
    proj = _project(tmp_path)
    # app.cu: two uses; kernels.cuh: judged by app.cu, its includer; fine.cu: tuples.h includes thrust/tuple.h
    assert _findings(proj, "13.5") == [("app.cu", 6), ("app.cu", 7), ("kernels.cuh", 5)]
    assert _findings(proj, "13.2") == []


def test_cm585_fix_includes_the_declaring_header_once_per_file_and_converges(tmp_path):
    from .helpers import run_cli

    proj = _project(tmp_path)
    res = run_cli("fix", "--no-cache", "--no-verify", "--select", "CM585", "--target-cuda", "13.5", proj)
    assert res.exit_code in (0, 1), res.output
    assert (proj / "app.cu").read_text().splitlines()[:4] == [
        "#include <thrust/device_vector.h>", '#include "thrust/iterator/zip_iterator.h"', "#include <thrust/tuple.h>",
        '#include "kernels.cuh"']
    assert (proj / "kernels.cuh").read_text().splitlines()[:3] == [
        "#pragma once", "#include <cstdio>", "#include <thrust/tuple.h>"]
    assert _findings(proj, "13.5") == []


@pytest.mark.nvcc
def test_cm585_case_fails_with_nvcc_13_5_from_the_wheels_before_the_fix_and_compiles_after(tmp_path):
    """What the rule claims, asked of the compiler it is about (installed by `cudamigrate.core.pip_toolkit`)."""
    import subprocess

    from cudamigrate.core import pip_toolkit

    nvcc = pip_toolkit.installed("13.5")
    if nvcc is None:
        pytest.skip("nvcc 13.5 from the wheels is not installed (pip_toolkit.install('13.5'))")
    case = ROOT / "fixtures" / "removals" / "CM585-thrust-include-dropped"
    run = [str(nvcc), "-std=c++17", "-arch=sm_90", "-Xcompiler", "-fsyntax-only", "-c", "-o", str(tmp_path / "x.o")]
    before = subprocess.run([*run, str(case / "before.cu")], capture_output=True, text=True)
    assert before.returncode != 0 and 'namespace "thrust" has no member "get"' in before.stdout + before.stderr
    after = subprocess.run([*run, str(case / "after.cu")], capture_output=True, text=True)
    assert after.returncode == 0, after.stdout + after.stderr


ZIP = "#include <thrust/iterator/zip_iterator.h>\n"
USE = "int f(thrust::tuple<int, int> t) { return thrust::get<0>(t); }\n"


@pytest.mark.parametrize("middle, after", [
    ("#if 0\n#include <thrust/sort.h>\n#endif\n", ""),  # a dead branch: the include there would be dead too
    ("/*\n#include <thrust/sort.h>\n*/\n", ""),  # a comment: it would be commented out
    ("", "#include <thrust/sort.h>\nvoid g() {}\n"),  # after the use: the name is used before it is declared
    ("/* #include <thrust/tuple.h> */\n#if 0\n#include <thrust/tuple.h>\n#endif\n", ""),  # they declare nothing
], ids=["dead-branch", "comment", "after-the-use", "declaring-include-commented-or-dead"])
def test_cm585_includes_the_header_where_the_preprocessor_takes_it_before_the_use(tmp_path, middle, after):
    """The include went after the last `#include <thrust/...>` line found by a regex: inside `#if 0` or a
    comment, or after the use; and a commented-out or dead `#include <thrust/tuple.h>` counted as including it.
    Each fixed file still failed with CCCL 13.3+."""
    from .helpers import run_cli

    src = tmp_path / "a.cu"
    src.write_text(ZIP + middle + USE + after)
    res = run_cli("fix", "--no-cache", "--no-verify", "--no-semantic", "--select", "CM585", "--target-cuda", "13.5",
                  src)
    assert res.exit_code in (0, 1), res.output
    assert src.read_text() == ZIP + "#include <thrust/tuple.h>\n" + middle + USE + after
