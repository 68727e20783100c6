"""Generated catalog rules (rules/catalog/): up to date, loadable, covering the catalog, version window."""

from __future__ import annotations

import csv
import re
import json
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from cudamigrate.cli.main import main
from cudamigrate.knowledge import releases
from cudamigrate.knowledge.catalog import compute, coverage_report
from cudamigrate.scan.engine import Engine, Options, select_rules
from cudamigrate.knowledge.load import load_rules

from .helpers import ROOT, all_rules

sys.path.insert(0, str(ROOT / "scripts"))
import gen_catalog_rules as gen  # noqa: E402

CATALOG_DIR = ROOT / "rules" / "catalog"
CSV_PATH = ROOT / "cudamigrate" / "data" / "cuda_api_changes.csv"


# rows deliberately not reported: neither deprecated nor removed, and the change compiles (gen.not_a_migration)
NOT_MIGRATIONS = {f"{r['library']}:{r['api']}" for r in csv.DictReader(CSV_PATH.open(encoding="utf-8", newline=""))
                  if gen.not_a_migration(r)}
# ... that a later release deprecated (cuSPARSE 12.7.10.12, CUDA 13.2: cusparseSpGEMMreuse_*): the per-release
# inventory's generated rule reports them with that release, so their CSV row has a finding after all
LATER_DEPRECATED = {f"{e['library']}:{e['name']}" for e in releases.load()["entries"] if e["status"] == "deprecated"
                    and e["library"] not in releases.load()["libraries"]} & NOT_MIGRATIONS


def catalog_rules():
    return [r for r in all_rules() if CATALOG_DIR in r.path.parents]


def rows():
    """The generator's input: the CSV's rows and the inventory entries they and hand-written rules miss."""
    return gen.load_rows()


def rule_for(key: str):
    """The one rule (generated or hand-written) that covers a catalog row."""
    got = [r for r in all_rules() if key in r.catalog]
    assert len(got) == 1, (key, [r.id for r in got])
    return got[0]


def scan(code: str, name: str = "t.cu", **opts):
    eng = Engine(all_rules(), Options(select=["catalog", "removals", "nvrtc"], **opts))
    res = eng.scan_bytes(Path(name), code.encode())
    assert not res.errors, res.errors
    return res.findings


# ------------------------------------------------------------------ generator


def test_generated_rules_are_what_the_generator_writes(tmp_path):
    out = tmp_path / "catalog"
    gen.generate(out, ids_path=CATALOG_DIR / gen.IDS_NAME)
    diffs = gen.compare_dirs(out, CATALOG_DIR)
    assert not diffs, "rules/catalog is stale; run `python scripts/gen_catalog_rules.py`:\n" + "\n".join(diffs[:5])


def test_ids_are_stable_when_hand_written_rules_take_rows_over(tmp_path):
    """A hand-written rule claiming rows removes the generated group but renumbers nothing."""
    victim = rule_for("cudart:cudaGetDeviceProperties_v2")
    import shutil

    fake_rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", fake_rules, ignore=shutil.ignore_patterns("catalog"))
    (fake_rules / "hand").mkdir(parents=True)
    (fake_rules / "hand" / "CM999-x.yaml").write_text(yaml.safe_dump({"catalog": list(victim.catalog)}))
    ids = tmp_path / "ids.yaml"
    ids.write_bytes((CATALOG_DIR / gen.IDS_NAME).read_bytes())
    out = tmp_path / "catalog"
    gen.generate(out, rules_dir=fake_rules, ids_path=ids)
    new = {p.name for p in out.rglob("CM*.yaml")}
    old = {p.name for p in CATALOG_DIR.rglob("CM*.yaml")}
    assert new == old - {victim.path.name}
    skipped = yaml.safe_load((out / "skipped.yaml").read_text())
    assert {"key": "cudart:cudaGetDeviceProperties_v2", "why": "hand-written rule lists it in `catalog:`"} in skipped


def test_generated_rules_are_valid_and_distinct():
    rs = load_rules([ROOT / "rules"])
    assert not rs.errors, rs.errors
    cat = catalog_rules()
    assert len(cat) >= 100
    assert len({r.name for r in cat}) == len(cat)
    keys = {f"{r['library']}:{r['api']}" for r in rows()}
    for r in cat:
        assert 1000 <= int(r.id[2:]) <= 1999
        assert r.family == "catalog" and "generated" in r.tags
        assert r.catalog and set(r.catalog) <= keys, r.id
        assert r.path.parent.name == r.library


def test_every_row_is_generated_or_left_to_a_hand_written_rule():
    generated = [k for r in catalog_rules() for k in r.catalog]
    assert len(generated) == len(set(generated)), "a catalog row is in two generated rules"
    skipped = [e["key"] for e in yaml.safe_load((CATALOG_DIR / "skipped.yaml").read_text())]
    keys = [f"{r['library']}:{r['api']}" for r in rows()]
    assert sorted(generated + skipped) == sorted(keys)


def test_c_names_are_exact_and_cpp_names_qualified():
    for r in catalog_rules():
        if "identifier" not in r.match:
            continue
        for n in r.match["identifier"]["names"]:
            if r.library in ("cub", "thrust", "libcudacxx") and not n.isupper() and not n.startswith(("CUB_", "THRUST_", "__thrust")):
                assert n.startswith(("cub::", "thrust::")), (r.id, n)
            assert n not in ("identity", "max", "min", "Sum", "plus"), (r.id, n)


# ------------------------------------------------------------------ coverage


def test_coverage_counts_findings_and_fixes():
    cov = compute(all_rules())
    by_kind = cov.totals("fix_kind")
    assert sum(c["rows"] for c in by_kind.values()) == 1081
    assert not cov.unknown_keys
    generated = {k: r for r in catalog_rules() for k in r.catalog}
    kinds = {f"{r['library']}:{r['api']}": r["fix_kind"] for r in rows()}
    no_auto = set()
    for key, r in generated.items():
        if kinds[key] in ("rename", "include"):
            assert r.fix_applicability in ("safe", "unsafe"), key
        elif kinds[key] == "signature" and r.fix_applicability == "manual":
            no_auto.add(key)
    # parameter changes the generator can only report: a constructor flag inside a declaration, and the
    # bool overloads ballot/any/all, whose `_sync` replacements need a lane mask only the author knows, and the
    # legacy array copies, whose 2-D form needs the array's row size (known only at run time)
    assert no_auto == {"cub:cub::CachingAllocator(..., bool debug)", "device:ballot / any / all (bool overloads)",
                       "cudart:cudaMemcpyToArray", "cudart:cudaMemcpyToArrayAsync", "cudart:cudaMemcpyFromArray",
                       "cudart:cudaMemcpyFromArrayAsync", "cudart:cudaMemcpyArrayToArray"}
    # every row is found by some rule, except rows left to hand-written rules not merged yet
    skipped = {e["key"] for e in yaml.safe_load((CATALOG_DIR / "skipped.yaml").read_text())
               if e["why"].startswith("explicit")}
    assert set(cov.uncovered) <= skipped | NOT_MIGRATIONS
    t = cov.totals()["total"]
    assert t["finding"] == 1081 - len(NOT_MIGRATIONS - LATER_DEPRECATED) and t["auto"] >= 175  # the 5 array copies became manual


def test_coverage_of_a_small_catalog(tmp_path):
    csv_path = tmp_path / "c.csv"
    csv_path.write_text(
        "api,kind,library,deprecated_in,removed_in,replacement,fix_kind,notes,source\n"
        "a1,function,cudart,,13.0,b1,rename,,s\n"
        "a2,function,cudart,,13.0,b2,rename,,s\n"
        "m1,function,cudart,10.0,,,manual,,s\n"
        "m2,function,driver,10.0,,,manual,,s\n", encoding="utf-8")
    mk = lambda rid, cat, app: type("R", (), {"id": rid, "catalog": cat, "fix_applicability": app})()  # noqa: E731
    rules = [mk("CM1", ["cudart:a1", "cudart:m1"], "safe"), mk("CM2", ["cudart:a1", "cudart:nope"], "manual")]
    cov = compute(rules, csv_path)
    assert dict(cov.table[("cudart", "rename")]) == {"rows": 2, "finding": 1, "auto": 1}
    assert dict(cov.table[("cudart", "manual")]) == {"rows": 1, "finding": 1, "auto": 1}
    assert dict(cov.table[("driver", "manual")]) == {"rows": 1}
    assert cov.unknown_keys == {"CM2": ["cudart:nope"]}
    assert cov.duplicates == {"cudart:a1": ["CM1", "CM2"]}
    assert sorted(cov.uncovered) == ["cudart:a2", "driver:m2"]
    text = coverage_report(rules, "text", csv_path)
    assert "total" in text and "50.0%" in text and "cudart:nope" in text
    data = json.loads(coverage_report(rules, "json", csv_path))
    assert data["total"] == {"rows": 4, "finding": 2, "auto": 2}


def test_rules_stats_cli():
    res = CliRunner().invoke(main, ["rules", "--stats"])
    assert res.exit_code == 0, res.output
    assert "rename" in res.output and "total" in res.output and "%" in res.output
    res = CliRunner().invoke(main, ["rules", "--stats", "--format", "json"])
    assert json.loads(res.output)["total"]["rows"] == 1081


# ------------------------------------------------------------------ version window


def selected(rule, lo, hi):
    return rule in select_rules([rule], Options(from_version=lo, target=hi))


def test_window_selection():
    removed_13 = rule_for("cudart:cudaGetDeviceProperties_v2")  # removed 13.0
    dep_10 = rule_for("cudart:cudaGLSetGLDevice")  # deprecated 10.0, still declared
    removed_8 = rule_for("driver:CU_COMPUTEMODE_EXCLUSIVE")  # removed 8.0
    removed_118 = rule_for("driver:CUkernelNodeAttrID_enum")  # removed 11.8
    dep_122 = rule_for("cusparse:cusparseScsrcolor")  # deprecated 12.2
    dep_12_rem_13 = rule_for("cudart:cudaDevAttrMaxTimelineSemaphoreInteropSupported")  # deprecated 11.5, removed 13.0
    lo, hi = (11, 8), (13, 0)
    assert selected(removed_13, lo, hi) and selected(dep_122, lo, hi) and selected(dep_12_rem_13, lo, hi)
    assert not selected(dep_10, lo, hi)  # deprecated long before the window: nothing new
    assert not selected(removed_8, lo, hi) and not selected(removed_118, lo, hi)  # already gone at 11.8
    # without --from every catalogued change up to the target is reported
    assert all(selected(r, None, hi) for r in (removed_13, dep_10, removed_8, removed_118, dep_122))
    # a target before the deprecation: nothing to say yet
    assert not selected(dep_12_rem_13, None, (11, 4)) and not selected(dep_122, None, (12, 0))
    assert selected(dep_12_rem_13, (11, 0), (12, 0))


def test_window_cli(tmp_path):
    src = tmp_path / "w.cu"
    src.write_text("#include <cuda_runtime.h>\nvoid f(cudaDeviceProp* p) {\n  cudaGetDeviceProperties_v2(p, 0);\n"
                   "  cudaGLSetGLDevice(0);\n}\n")
    out = CliRunner().invoke(main, ["scan", str(src), "--select", "catalog,removals", "--from", "11.8", "--to", "13.0", "--format", "json"])
    ids = {f["rule"] for f in json.loads(out.output)["findings"]}
    assert ids == {rule_for("cudart:cudaGetDeviceProperties_v2").id}
    out = CliRunner().invoke(main, ["scan", str(src), "--select", "catalog,removals", "--format", "json"])
    ids = {f["rule"] for f in json.loads(out.output)["findings"]}
    assert ids == {rule_for("cudart:cudaGetDeviceProperties_v2").id, rule_for("cudart:cudaGLSetGLDevice").id}


def test_messages_name_api_version_replacement_and_source():
    fs = scan("void f(cudaDeviceProp* p) { cudaGetDeviceProperties_v2(p, 0); cudaGLSetGLDevice(0); }\n"
              "int g(cudaError_t e) { return e == cudaErrorTextureNotBound; }\n")
    msgs = {f.message.split("`")[1]: f.message for f in fs}
    m = msgs["cudaGetDeviceProperties_v2"]
    assert "removed in CUDA 13.0" in m and "`cudaGetDeviceProperties`" in m
    assert "deprecated since CUDA 10.0" in msgs["cudaGLSetGLDevice"]
    assert "deprecated since CUDA 3.1" in msgs["cudaErrorTextureNotBound"]
    code = "int f() { return cudaDevAttrMaxTimelineSemaphoreInteropSupported; }\n"
    (f,) = scan(code, target=(12, 4))
    assert "deprecated since CUDA 11.5, removed in 13.0" in f.message and "cudaDevAttrTimelineSemaphoreInteropSupported" in f.message
    (f,) = scan(code)
    assert "removed in CUDA 13.0" in f.message and f.severity == "error"
    (f,) = scan("#include <thrust/optional.h>\nthrust::optional<int> o;\n")
    assert "removed in CUDA 13.0; catalog: removed in CCCL 3.0 (CUDA 13.0)" in f.message


# ------------------------------------------------------------------ matching precision (engine features the rules rely on)


@pytest.mark.parametrize("code, api", [
    ("cub::AgentReduce<int> a;", "cub:cub::Agent*"),
    ("using namespace cub;\nAgentScan<int, int> a;", "cub:cub::Agent*"),
    ("cub::DeviceReduceKernel<int><<<1, 1>>>();", "cub:cub::*Kernel"),
    ("cub::DeviceRadixSortPolicy<int, int> p;", "cub:cub::Device*Policy"),
    ("void f() { thrust::async::reduce(thrust::device, 0, 0); }", "thrust:thrust::async::*"),
    ("thrust::cuda_cub::core::AgentPlan p;", "thrust:thrust::cuda_cub::core::*"),
    ("typedef thrust::plus<int>::result_type R;", "thrust:thrust::<functor>::first_argument_type / second_argument_type / result_type"),
    ("template <class It> using V = typename thrust::iterator_traits<It>::value_type;", "thrust:thrust::iterator_traits<T>"),
    ("#if THRUST_HOST_COMPILER == THRUST_HOST_COMPILER_MSVC\n#endif", "thrust:THRUST_HOST_COMPILER*"),
    ("void f() { cub::DeviceSpmv::CsrMV(0, n, a); }", "cub:cub::DeviceSpmv"),
    ("int x = cub::BinaryOpHasIdxParam<int, Op>::HAS_PARAM;", "cub:cub::BinaryOpHasIdxParam::HAS_PARAM"),
])
def test_qualified_and_glob_names_are_found(code, api):
    fs = scan(code)
    assert rule_for(api).id in {f.rule_id for f in fs}, [f.message for f in fs]


@pytest.mark.parametrize("code", [
    "mine::AgentReduce<int> a; AgentReduce<int> b;",
    "__global__ void myKernel() {} void f() { myKernel<<<1, 1>>>(); }",
    "void f() { std::async(g); async::reduce(1); }",
    "template <class T> struct identity {}; identity<int> i; int x = std::numeric_limits<int>::max();",
    "struct P { int first_argument_type; }; typedef std::plus<int>::result_type R;",
    "int _ReadWriteBarrier(); void f() { _ReadWriteBarrier(); }",
    "namespace thrust2 { struct optional {}; } thrust2::optional o;",
    "__host__ void h() { cudaDeviceSynchronize(); }",
    "void f() { mine::DeviceSpmv::CsrMV(0); int pruneInfo = 1; pruneInfo += 2; }",
])
def test_lookalikes_are_not_found(code):
    assert [f.message for f in scan(code)] == []


def test_without_explicit_exclusions_every_row_gets_a_valid_rule(tmp_path):
    """What the lead runs once the hand-written rules declare their `catalog:` keys."""
    out = tmp_path / "catalog"
    stats = gen.generate(out, ids_path=tmp_path / "ids.yaml", explicit=False)
    rs = load_rules([out])
    assert not rs.errors, rs.errors[:3]
    hand = [r for r in all_rules() if CATALOG_DIR not in r.path.parents]
    cov = compute(rs.rules + hand)
    assert set(cov.uncovered) == NOT_MIGRATIONS - LATER_DEPRECATED and stats["rows"] <= 1081
    by_kind = cov.totals("fix_kind")
    assert by_kind["rename"]["auto"] == by_kind["rename"]["rows"]
    assert by_kind["include"]["auto"] == by_kind["include"]["rows"]


# ------------------------------------------------------------------ hygiene: never "migrate to what you flag"

_RECOMMEND = re.compile(r"(?:Replace it with|Replacement:|New form:|successor[^.]*? is|[Mm]igrate to|[Uu]se instead)\s+(.*?)(?:\.\s|\.$|$)")
_CALL = re.compile(r"[A-Za-z_][\w:]*\([^()]*\)")
_NAME = re.compile(r"[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*")


def _recommended(info: dict) -> list[str]:
    """Code the rule tells the user to write: `rename`, `replacement`, and the recommending sentences of `advice`."""
    texts = [str(info[k]) for k in ("rename", "replacement") if info.get(k)]
    texts += [m.group(1) for m in _RECOMMEND.finditer(str(info.get("advice", "")))]
    out: list[str] = []
    for t in texts:
        t = re.sub(r"`", "", t)
        calls = _CALL.findall(t)
        out += calls
        out += [n + "()" for n in _NAME.findall(_CALL.sub(" ", t)) if len(n) > 3]  # names in lists: `API (a, b, c)`
    return out


def test_no_catalog_rule_recommends_an_api_it_flags():
    """CM1060 used to flag the cuSPARSE Generic API (cusparseSpMV, ...) and advise migrating to the Generic API.

    For every generated rule and API entry, the code its replacement/advice recommends is scanned with
    that rule alone: the rule must not flag its own recommendation (signature rules may keep the name
    with the new argument list, which they must not match).
    """
    bad = []
    for r in catalog_rules():
        eng = Engine(all_rules(), Options(select=[r.id], extend_select=[r.id]))
        for api, info in ((r.data or {}).get("apis") or {}).items():
            for code in _recommended(info):
                src = f"void cudamigrate_probe() {{ {code}; }}\n".encode()
                res = eng.scan_bytes(Path("probe.cu"), src)
                if any(f.rule_id == r.id for f in res.findings):
                    bad.append(f"{r.id} {api}: recommends `{code}`, which it flags")
    assert not bad, "\n".join(bad[:20])


def test_generic_cusparse_api_is_not_a_finding():
    """Not deprecated or removed in the 13.0 cusparse.h: the cuSPARSE 12.0 const-descriptor change compiles."""
    code = ("void f(cusparseHandle_t h, cusparseSpMatDescr_t A, cusparseDnVecDescr_t x, cusparseDnVecDescr_t y, void *buf) {\n"
            "  size_t n; float one = 1.f, zero = 0.f;\n"
            "  cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, x, &zero, y, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, &n);\n"
            "  cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, x, &zero, y, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, buf);\n"
            "  cusparseDestroySpMat(A); cusparseDestroyDnVec(x); cusparseSparseToDense(h, A, 0, CUSPARSE_SPARSETODENSE_ALG_DEFAULT, buf);\n"
            "}\n")
    assert [(f.rule_id, f.line) for f in scan(code)] == []
    skipped = {e["key"]: e["why"] for e in yaml.safe_load((CATALOG_DIR / "skipped.yaml").read_text())}
    assert skipped["cusparse:cusparseSpMV"].startswith("not a migration")


@pytest.mark.parametrize("name, replacement", [
    ("CU_DEVICE_ATTRIBUTE_SHARED_MEMORY_PER_BLOCK", "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK"),
    ("CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED", "CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED"),
    ("CUDA_ARRAY3D_2DARRAY", "CUDA_ARRAY3D_LAYERED"),
])
def test_deprecated_driver_constants_name_the_replacement_cuda_h_gives(name, replacement):
    """cuda.h 13.0 names the successor in the enumerator's comment; the message must not say none is recorded."""
    [f] = scan(f"#include <cuda.h>\nint x = {name};\n")
    assert replacement in f.message and "No replacement is recorded" not in f.message

def test_array_copies_are_manual_with_the_2d_form():
    """cudaMemcpyToArray & co. copy `count` bytes row-major, wrapping into the next rows; the 1-row
    cudaMemcpy2D*Array* rewrite fails with cudaErrorInvalidValue on a 2-D array (issue 11), and the old calls are
    deprecated, not removed: report them with the whole-row form, never rewrite them."""
    from pathlib import Path

    from cudamigrate.scan.engine import Engine, Options
    from cudamigrate.fix.apply import fix_bytes

    from .helpers import all_rules

    code = (b"#include <cuda_runtime.h>\n"
            b"void f(cudaArray_t a, cudaArray_t b, float *h, size_t n, cudaStream_t s) {\n"
            b"  cudaMemcpyToArray(a, 0, 0, h, n, cudaMemcpyHostToDevice);\n"
            b"  cudaMemcpyToArrayAsync(a, 0, 0, h, n, cudaMemcpyHostToDevice, s);\n"
            b"  cudaMemcpyFromArray(h, a, 0, 0, n, cudaMemcpyDeviceToHost);\n"
            b"  cudaMemcpyFromArrayAsync(h, a, 0, 0, n, cudaMemcpyDeviceToHost, s);\n"
            b"  cudaMemcpyArrayToArray(b, 0, 0, a, 0, 0, n, cudaMemcpyDeviceToDevice);\n}\n")
    eng = Engine(all_rules(), Options(select=["CM1052", "CM1054", "CM1055", "CM1056", "CM1057"]))
    res = eng.scan_bytes(Path("a.cu"), code)
    assert sorted(f.rule_id for f in res.findings) == ["CM1052", "CM1054", "CM1055", "CM1056", "CM1057"]
    for f in res.findings:
        assert f.fix is None, f.rule_id
        assert "count / rowBytes" in f.message and "cudaArrayGetInfo" in f.message, f.message
    assert fix_bytes(eng, Path("a.cu"), code, "a.cu", unsafe=True).fixed == code


@pytest.mark.parametrize("name, code, rule", [
    ("t.c", "#include <cuda_runtime.h>\nint f(cudaGraphExec_t e, cudaGraph_t g, enum cudaGraphExecUpdateResult *r) {\n"
            "  return (int)cudaGraphExecUpdate(e, g, NULL, r);\n}\n", "CM1050"),
    ("t.c", "#include <cuda.h>\nint f(CUgraphExec e, CUgraph g, CUgraphExecUpdateResult *r) {\n"
            "  return (int)cuGraphExecUpdate(e, g, NULL, r);\n}\n", "CM1094"),
    ("t.cu", "#include <cuda.h>\nint f(CUgraphExec e, CUgraph g, CUgraphExecUpdateResult *r) {\n"
             "  return (int)cuGraphExecUpdate(e, g, nullptr, r);\n}\n", "CM1094"),
])
def test_graph_exec_update_four_argument_form_is_a_build_break_where_13_0_rejects_it(name, code, rule):
    """No version is recorded for these signature rows, but the 4-argument call does not compile with 13.0
    (C: cudaGraphExecUpdate has only the 3-argument prototype; cuGraphExecUpdate is cuGraphExecUpdate_v2 in
    C and C++): build break, not hygiene (gen_catalog_rules.VERSIONLESS_BREAKS; the fixtures' nvcc runs prove it)."""
    from .helpers import scan_code

    fs = scan_code(code, [rule], name=name)
    assert [(f.rule_id, f.cost.impact) for f in fs] == [(rule, "build-break")]


def test_bool_vote_wrappers_are_a_build_break():
    """ballot/any/all call the non-.sync vote intrinsics that ptxas rejects for sm_70+ (nvcc 13.0: sm_75+); the
    fixture catalog/device-ballot-bool-overloads proves it with nvcc."""
    from .helpers import scan_code

    fs = scan_code("__global__ void k(unsigned *o) { o[0] = ballot(threadIdx.x > 3); }\n", ["CM1123"])
    assert [(f.rule_id, f.cost.impact) for f in fs] == [("CM1123", "build-break")]
