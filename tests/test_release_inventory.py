"""The per-release inventory (cudamigrate/data/api_releases.json.gz): every release with wheels from 11.7 to 13.5
is compared with the one before it, every change it lists has a rule or a reviewed exclusion, and the
announced deprecations (CUDA 13.5's per-node-type graph calls) are a family of their own, off by default.

CI does not download the 201 wheels the file is built from: the regeneration check runs only where
`python scripts/build_release_inventory.py --fetch` filled the header cache."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

from cudamigrate.knowledge import inventory, releases
from cudamigrate.scan.engine import Engine, Options

from .helpers import ROOT, all_rules

sys.path.insert(0, str(ROOT / "scripts"))
import build_release_inventory as build  # noqa: E402

DOC = releases.load()
EXCLUSIONS = releases.exclusions()


def test_every_release_with_wheels_is_covered_in_order():
    assert [r["version"] for r in DOC["releases"]] == [
        "11.7", "11.8", "12.0", "12.1", "12.2", "12.3", "12.4", "12.5", "12.6", "12.8", "12.9",
        "13.0", "13.1", "13.2", "13.3", "13.4", "13.5"]
    assert list(DOC["counts"]) == [f"{a['version']}->{b['version']}" for a, b in zip(DOC["releases"], DOC["releases"][1:], strict=False)]
    assert [r.version for r in build.RELEASES] == [r["version"] for r in DOC["releases"]]
    for e in DOC["entries"]:
        assert e["previous"] == next(a["version"] for a, b in zip(DOC["releases"], DOC["releases"][1:], strict=False)
                                     if b["version"] == e["release"])


def test_every_entry_of_every_release_has_a_rule_or_a_reviewed_exclusion():
    missing = releases.uncovered(DOC, inventory.rule_names(ROOT / "rules"), EXCLUSIONS)
    assert not missing, f"{len(missing)} release-inventory entries without a rule or exclusion: {missing[:20]}"


def test_an_uncovered_entry_fails_and_a_field_follows_its_removed_type():
    names = inventory.rule_names(ROOT / "rules")
    doc = copy.deepcopy(DOC)
    doc["entries"].append({"release": "12.4", "previous": "12.3", "library": "cudart", "name": "cudaMadeUpType",
                           "kind": "type", "status": "removed", "old_header": "driver_types.h:1"})
    doc["entries"].append({"release": "12.4", "previous": "12.3", "library": "cudart", "name": "cudaMadeUpType::x",
                           "kind": "field", "status": "removed", "old_header": "driver_types.h:2"})
    assert [m.split(" ")[0] for m in releases.uncovered(doc, names, EXCLUSIONS)] == [
        "12.4:cudart:cudaMadeUpType", "12.4:cudart:cudaMadeUpType::x"]
    excl = dict(EXCLUSIONS, **{"12.4:cudart:cudaMadeUpType": inventory.Exclusion("12.4:cudart:cudaMadeUpType", "test")})
    assert releases.uncovered(doc, names, excl) == []  # the field follows its type's reviewed exclusion


def test_library_entries_of_every_release_pair_are_read_and_covered():
    """The math libraries were read for 11.8 -> 12.0 only; now for every release with a cuda-toolkit metapackage
    (11.8 on), each wheel as that metapackage pins it, and each of their entries has a rule or an exclusion."""
    libs = [e for e in DOC["entries"] if e["library"] not in DOC["libraries"]]
    pairs = {f"{e['previous']}->{e['release']}" for e in libs}
    assert {"12.0->12.1", "12.3->12.4", "12.9->13.0", "13.0->13.1", "13.3->13.4"} <= pairs
    assert set(DOC["library_wheels"]) == {r["version"] for r in DOC["releases"]} - {"11.7"}  # 11.7: no metapackage
    assert DOC["library_wheels"]["13.5"]["pinned_by"] == "cuda-toolkit==13.5.0"
    assert DOC["library_wheels"]["13.5"]["cublas"] == "nvidia-cublas==13.10.0.20"  # no -cu13 suffix
    assert DOC["library_wheels"]["11.8"]["cublas"] == "nvidia-cublas-cu11==11.11.3.6"
    assert [r.version for r in build.RELEASES if r.version in build.LIBRARY_WHEELS] == list(DOC["library_wheels"])
    others = dict(DOC, entries=[e for e in libs if (e["previous"], e["release"]) != ("11.8", "12.0")])
    assert len(others["entries"]) > 1000
    missing = releases.uncovered(others, inventory.rule_names(ROOT / "rules"), EXCLUSIONS)
    assert not missing, f"{len(missing)} library entries without a rule or exclusion: {missing[:20]}"


def test_library_changes_of_later_pairs_carry_their_release_and_header_line():
    by = {(e["release"], e["name"], e["status"]): e for e in DOC["entries"]}
    e = by[("12.1", "cusparseSetColorAlgs", "removed")]
    assert e["previous"] == "12.0" and e["old_header"] == "cusparse.h:429"
    assert e["source"] == "nvidia-cusparse-cu12==12.0.1.140"
    assert by[("13.1", "cusparseSbsrmv", "deprecated")]["message"] == "The routine will be removed in the next major release"
    e = by[("12.4", "nppsAbs_16s_Ctx", "signature")]  # int nLength -> size_t nLength: old calls still compile
    assert e["compatible"].startswith("by-value integer parameters changed type (int -> size_t)")
    assert "compatible" not in by[("12.4", "nppiAverageErrorGetBufferHostSize_16s_C1R", "signature")]  # int * -> size_t *
    # nvJitLink's versioned implementation names (__nvJitLinkCreate_12_0 -> _12_1) behind its inline wrappers
    assert not [e for e in DOC["entries"] if e["name"].startswith("__nvJitLink")]


COLOR = ("#include <cusparse.h>\n"
         "cusparseStatus_t pick(cusparseColorInfo_t info) { return cusparseSetColorAlgs(info, CUSPARSE_COLOR_ALG0); }\n")


def _color(target: tuple[int, int], since: tuple[int, int] | None = None) -> list[str]:
    res = Engine(all_rules(), Options(target=target, from_version=since)).scan_bytes(Path("c.cu"), COLOR.encode())
    assert not res.errors, res.errors
    return [f.message for f in res.findings if "cusparseSetColorAlgs" in f.message]


def test_a_library_removal_of_a_pair_not_read_before_is_reported_with_its_release_and_header_line():
    """cuSPARSE 12.1 (CUDA 12.1) removed cusparseSetColorAlgs, declared at cusparse.h:429 of the 12.0 wheel: a scan
    for any later target reports it as removed in 12.1, with that line; code already on 12.1 cannot use it."""
    (msg,) = _color((13, 0))
    assert "removed in CUDA 12.1" in msg
    assert "cusparse.h:429 of nvidia-cusparse-cu12==12.0.1.140" in msg
    assert "not declared by the CUDA 12.1 headers of nvidia-cusparse-cu12==12.1.0.106" in msg
    assert _color((12, 4)) == [msg]
    assert _color((13, 0), since=(12, 1)) == []  # removed before the code's toolkit: it cannot be in code that builds


def test_exclusions_name_entries_the_file_has():
    keys = {releases.entry_key(e) for e in DOC["entries"]}
    assert not sorted(set(EXCLUSIONS) - keys)


def test_changes_older_than_12_and_after_13_0_are_recorded_with_their_release_and_header_line():
    by = {(e["release"], e["name"], e["status"]): e for e in DOC["entries"]}
    e = by[("12.0", "cudaBindTexture", "removed")]
    assert e["previous"] == "11.8" and e["old_header"].startswith("cuda_runtime_api.h:")
    assert by[("12.4", "cudaDeviceSetSharedMemConfig", "deprecated")]["header"].startswith("cuda_runtime_api.h:")
    assert by[("13.0", "nvrtcGetNVVM", "removed")]["replacement"] == "nvrtcGetLTOIR"
    e = by[("13.5", "cudaGraphAddKernelNode", "announced")]
    assert e["message"] == "This function will be deprecated in a future CUDA release. Please migrate to ::cudaGraphAddNode."
    assert e["replacement"] == "cudaGraphAddNode" and e["header"].startswith("cuda_runtime_api.h:")
    assert by[("13.5", "cuGraphAddKernelNode_v2", "announced")]["aliases"] == ["cuGraphAddKernelNode"]
    # 13.2 moved CUmemLocation::id into an anonymous union: still a field, not a removal
    assert not [e for e in DOC["entries"] if e["name"] in ("CUmemLocation_st::id", "cudaMemLocation::id")]
    # the math libraries of the 11 -> 12 step (LIBRARY_PAIRS): cuSPARSE's legacy algorithm enumerators, cuBLASLt's 3M mode
    e = by[("12.0", "CUSPARSE_CSRMV_ALG1", "removed")]
    assert e["library"] == "cusparse" and e["source"] == "nvidia-cusparse-cu11==11.7.5.86"
    assert by[("12.0", "cublasLt3mMode_t", "removed")]["old_header"] == "cublasLt.h:1066"
    assert set(DOC["library_wheels"]["12.0"]) == {"pinned_by", "cublas", "cufft", "curand", "cusolver", "cusparse", "npp",
                                                  "nvjpeg", "nvjitlink"}
    # 11.8 moved cudaTextureDesc::seamlessCubemap to cudaTextureDesc_v2; 12.0 declares it again
    assert by[("11.8", "cudaTextureDesc::seamlessCubemap", "removed")]["restored"] == "12.0"


def test_announcement_sentence_is_the_headers_own_words():
    comment = ("/**\n * \\brief Creates a kernel execution node\n *\n * \\warning This function will be deprecated in a "
               "future CUDA release. Please migrate to\n * ::cudaGraphAddNode.\n *\n * \\param pGraphNode - out\n */")
    assert build.inv.announcement_of(comment) == (
        "This function will be deprecated in a future CUDA release. Please migrate to ::cudaGraphAddNode.")
    assert build.inv.announcement_of("/** \\param flags - Reserved for future use, must be 0 */") == ""


CALL = ("#include <cuda_runtime.h>\n"
        "void f(cudaGraph_t g, cudaKernelNodeParams *p) { cudaGraphNode_t n; cudaGraphAddKernelNode(&n, g, 0, 0, p); }\n")


def _ids(target: tuple[int, int], select: list[str] | None) -> list[str]:
    eng = Engine(all_rules(), Options(target=target, select=select))
    res = eng.scan_bytes(Path("t.cu"), CALL.encode())
    assert not res.errors, res.errors
    return [f.rule_id for f in res.findings]


def test_announced_family_is_off_by_default_and_applies_from_the_announcing_release():
    assert "CM1900" not in _ids((13, 5), None)  # default rules: silent
    assert _ids((13, 5), ["announced"]) == ["CM1900"]  # the family by name turns it on
    assert _ids((13, 5), ["CM1900"]) == ["CM1900"]
    assert _ids((13, 4), ["announced"]) == []  # 13.4's header announces nothing
    assert _ids((13, 5), ["catalog"]) == []  # selecting another family does not bring it


def test_announced_rule_is_what_the_generator_writes_from_the_shipped_data():
    assert build.announced_rule(DOC) == build.ANNOUNCED_RULE.read_text(encoding="utf-8")


@pytest.mark.skipif(bool(build.missing()), reason="release headers not fetched (scripts/build_release_inventory.py --fetch)")
def test_data_file_is_what_the_script_generates():
    """Reads the headers of 17 releases and their library wheels (about 1 min alone on this 2-core machine; runs only
    where the 201 wheels' headers were fetched)."""
    assert build.render(build.build()) == build.OUT.read_bytes(), (
        "cudamigrate/data/api_releases.json.gz is stale: run python scripts/build_release_inventory.py")
    from cudamigrate.match.migrations import unknown_names

    releases, names = unknown_names.release_names()
    assert build.release_names()["names"] == names, "cudamigrate/data/cuda_names.json.gz is stale"


def test_target_inside_the_inventory_must_be_a_release():
    from cudamigrate.knowledge import versions

    rules = all_rules()
    assert versions.check((13, 5), (10, 2), None, rules) == []  # newest release; --from older than any wheel
    assert versions.check((11, 5), None, None, rules) == []  # a real release older than the oldest wheel
    assert versions.check((12, 7), None, None, rules) == [
        "--target-cuda 12.7 is not a CUDA release (the 12.x releases: 12.0, 12.1, 12.2, 12.3, 12.4, 12.5, 12.6, 12.8, 12.9)"]
    assert versions.check((13, 6), None, None, rules) == [
        "--target-cuda 13.6 is newer than the newest CUDA release whose headers cudamigrate has read (13.5)"]
    (outside,) = versions.check((14, 0), None, None, rules)  # the catalog's range, as before: one message
    assert outside.startswith("--target-cuda 14.0 is outside the CUDA versions the rule catalog knows")


def test_names_file_records_each_release_that_spells_a_name():
    from cudamigrate.match.migrations import unknown_names

    releases, names = unknown_names.release_names()
    assert [f"{a}.{b}" for a, b in releases] == [r["version"] for r in DOC["releases"]]
    spelled = lambda n: [f"{a}.{b}" for i, (a, b) in enumerate(releases) if names.get(n, 0) >> i & 1]  # noqa: E731
    assert spelled("cudaThreadSynchronize")[-1] == "12.9"  # removed in 13.0
    assert spelled("cudaBindTexture") == ["11.7", "11.8"]  # removed in 12.0
    assert spelled("cudaStreamBeginCaptureToGraph")[0] == "12.3"
    assert "cudaInComment" not in names  # comments are not read
    assert unknown_names.target_index((11, 5), releases) is None
    assert unknown_names.target_index((12, 7), releases) == [f"{a}.{b}" for a, b in releases].index("12.6")


UNKNOWN = ("#include <cuda_runtime.h>\n"
           "int f() { cudaStreamBeginCaptureToGraph(0, 0, 0, 0, 0, cudaStreamCaptureModeGlobal);\n"
           "  cudaThreadSynchronize(); return 0; }\n")


def _unknown(target: tuple[int, int], select: list[str] | None = None, extend: list[str] | None = None) -> list[str]:
    eng = Engine(all_rules(), Options(target=target, select=select, extend_select=extend or []))
    res = eng.scan_bytes(Path("u.cu"), UNKNOWN.encode())
    assert not res.errors, res.errors
    return [f"{f.rule_id}:{f.message.split('`')[1]}" for f in res.findings if f.rule_id in ("CM583", "CM501")]


def test_unknown_cuda_name_is_opt_in_target_aware_and_leaves_known_names_to_their_rules():
    assert _unknown((13, 0)) == ["CM501:cudaThreadSynchronize"]  # default: CM583 off
    assert _unknown((12, 2), ["CM583"]) == ["CM583:cudaStreamBeginCaptureToGraph"]  # 12.3's API under a 12.2 target
    assert _unknown((13, 0), ["CM583"]) == ["CM583:cudaThreadSynchronize"]  # alone, it reports the removal too
    assert _unknown((13, 0), extend=["CM583"]) == ["CM501:cudaThreadSynchronize"]  # with CM501 in the run: CM501's
    assert _unknown((11, 0), ["CM583"]) == []  # older than the oldest headers read


def test_unknown_cuda_name_asks_for_a_suggestion_once_per_name_not_per_use(monkeypatch):
    """A repeated statement (bench/fuzz.py --mode structure, seed 20261207 input 1585) used one unknown name 55
    times: each use searched ~10,000 names with difflib."""
    from cudamigrate.match.migrations import unknown_names

    asked: list[str] = []
    real = unknown_names.difflib.get_close_matches

    def counting(word, *a, **k):
        asked.append(word)
        return real(word, *a, **k)

    monkeypatch.setattr(unknown_names.difflib, "get_close_matches", counting)
    src = b"int f() {\n" + b"  cudaStreamSynchronizeQ3(0);\n" * 3 + b"}\n"
    res = Engine(all_rules(), Options(target=(13, 0), select=["CM583"])).scan_bytes(Path("u.cu"), src)
    found = [f for f in res.findings if f.rule_id == "CM583"]
    assert len(found) == 3 and len({f.message for f in found}) == 1
    assert "cudaStreamSynchronize" in found[0].message  # the suggestion
    assert asked.count("cudaStreamSynchronizeQ3") == 1


def test_the_release_list_is_read_without_parsing_the_entries(monkeypatch, tmp_path):
    """Every run asks for the default target: the release list comes from the start of the stream, not from the
    3.6 MB document of every release's library entries (about 60 ms to parse)."""
    expected = releases.versions(DOC)
    assert expected[0] == (11, 7) and expected[-1] == (13, 5)
    path = tmp_path / "copy.json.gz"
    path.write_bytes(releases.RELEASES.read_bytes())
    monkeypatch.setattr(releases, "load", lambda *a, **k: pytest.fail("parsed the whole document"))
    assert releases._release_list(path) == DOC["releases"]
    assert releases.versions() == expected


def test_library_pins_are_read_from_the_metapackage_metadata():
    """scripts/build_release_inventory.py --check-pins compares LIBRARY_WHEELS with what each release's
    cuda-toolkit wheel requires; the parsing, on METADATA lines as the 12.x and 13.x metapackages write them."""
    meta = "\n".join([
        "Name: cuda-toolkit", "Version: 13.0.3",
        "Requires-Dist: nvidia-cublas==13.1.1.3.*; (sys_platform == 'linux' and platform_machine == 'x86_64') and extra == 'all'",
        "Requires-Dist: nvidia-nvjitlink<14,>=13.0.88; (sys_platform == 'linux' and platform_machine == 'x86_64') and extra == 'all'",
        "Requires-Dist: nvidia-cusparselt-cu12==0.6.3; sys_platform == 'linux' and extra == 'all'",  # not cuSPARSE
        "Requires-Dist: nvidia-npp-cu12==12.0.1.104.*; (sys_platform == 'linux' or sys_platform == 'win32') and extra == 'npp'",
        "Requires-Dist: nvidia-cufft==11.0.0.0; sys_platform == 'win32' and extra == 'cufft'",  # Windows only
        "Requires-Dist: nvidia-cuda-runtime==13.0.96.*; sys_platform == 'linux' and extra == 'cudart'",  # read per release
    ])
    assert build.parse_pins(meta) == {"cublas": "nvidia-cublas==13.1.1.3", "nvjitlink": "nvidia-nvjitlink==13.0.88",
                                      "npp": "nvidia-npp-cu12==12.0.1.104"}


def test_a_header_the_next_wheel_no_longer_ships_is_an_entry(tmp_path, monkeypatch):
    """A whole header dropped between two releases' wheels is a `header` entry of the later release; the
    packaging's __init__.py is not a header (12.9's wheels dropped it)."""
    for spec, files in (("nvidia-x==1", ["old.h", "kept.h", "__init__.py"]), ("nvidia-x==2", ["kept.h", "new.h"])):
        inc = build.wheel_dir(tmp_path, spec) / "nvidia" / "x" / "include"
        inc.mkdir(parents=True)
        for f in files:
            (inc / f).write_text("")
    prev, rel = build.RELEASES[9], build.RELEASES[10]
    (e,) = build.removed_headers("x", prev, rel, "nvidia-x==1", "nvidia-x==2", tmp_path)
    assert (e.name, e.kind, e.status, e.release, e.previous, e.source) == (
        "old.h", "header", "removed", "12.9", "12.8", "nvidia-x==1")


def test_a_catalog_row_dated_later_than_the_headers_is_reported_with_the_headers_release():
    """The hand catalog says CUDA 13.0 removed cufftXtSetDistribution and cufftBox3d; cuFFT's own wheels show
    12.4 (absent from 11.2.1.3, declared at cufftXt.h:258 of 11.0.12.1) and 12.1 (cufftXt.h:259 of 11.0.1.95)."""
    src = ("#include <cufftXt.h>\n"
           "void f(cufftHandle p, cufftBox3d *box) { cufftXtSetDistribution(p, 3, 0, 0, 0, 0, 0, 0); }\n")
    res = Engine(all_rules(), Options(target=(13, 0))).scan_bytes(Path("x.cu"), src.encode())
    got = {f.message.split("`")[1]: f.message for f in res.findings}
    assert "removed in CUDA 12.4" in got["cufftXtSetDistribution"]
    assert "cufftXt.h:258 of nvidia-cufft-cu12==11.0.12.1 (CUDA 12.3)" in got["cufftXtSetDistribution"]
    assert "removed in CUDA 12.1" in got["cufftBox3d"] and "cufftXt.h:259" in got["cufftBox3d"]
    rows = [{"library": "cufft", "api": "cufftBox3d", "removed_in": "13.0", "notes": ""},
            {"library": "cufft", "api": "cufftResult", "removed_in": "13.0", "notes": ""}]
    assert releases.earlier_removals(DOC, rows) == ["cufft:cufftBox3d"]
    assert rows[0]["removed_in"] == "12.1" and rows[1]["removed_in"] == "13.0"
