"""The header-generated API inventory (cudamigrate/data/api_inventory.json): every deprecated, removed or
re-prototyped CUDA 13.0 declaration it lists is reported by a rule or excluded with a reviewed reason, and
the file is what scripts/build_api_inventory.py writes from the headers (where those headers are installed:
scripts/dev-setup-and-test.sh installs the 13.0 wheels and fetches the 12.x headers, so CI runs it)."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

from cudamigrate.knowledge import inventory
from cudamigrate.scan.engine import Engine, Options

from .helpers import ROOT, all_rules

sys.path.insert(0, str(ROOT / "scripts"))
import build_api_inventory as build  # noqa: E402

DOC = inventory.load_inventory()
EXCLUSIONS = inventory.load_exclusions()


def reported_names() -> set[str]:
    return inventory.rule_names(ROOT / "rules")


def test_every_entry_has_a_rule_or_a_reviewed_exclusion():
    missing = inventory.uncovered(DOC, reported_names(), EXCLUSIONS)
    assert not missing, f"{len(missing)} inventory entries without a rule or exclusion: {missing[:20]}"


def test_an_entry_without_rule_or_exclusion_fails_the_coverage_check():
    doc = copy.deepcopy(DOC)
    doc["entries"].append({"library": "curand", "name": "curandMadeUpRemovedCall", "kind": "function",
                           "status": "removed", "old_header": "curand.h:1"})
    assert inventory.uncovered(doc, reported_names(), EXCLUSIONS) == ["curand:curandMadeUpRemovedCall (removed, curand.h:1)"]
    doc["entries"][-1]["aliases"] = ["curandMadeUpAlias"]  # `#define curandMadeUpAlias curandMadeUpRemovedCall`
    assert len(inventory.uncovered(doc, reported_names(), EXCLUSIONS)) == 2
    excl = dict(EXCLUSIONS, **{"curand:curandMadeUpRemovedCall": inventory.Exclusion("curand:curandMadeUpRemovedCall", "test")})
    assert inventory.uncovered(doc, reported_names(), excl) == []


def test_exclusions_name_inventory_entries_that_no_rule_reports():
    keys = {inventory.entry_key(e) for e in DOC["entries"]}
    stale = sorted(set(EXCLUSIONS) - keys)
    assert not stale, f"exclusions for entries the inventory no longer has: {stale}"
    names = reported_names()
    both = sorted(k for k in EXCLUSIONS if k.split(":", 1)[1] in names)
    assert not both, f"excluded but reported by a rule: {both}"


def test_exclusion_file_needs_a_reason(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("- key: cufft:foo\n  reason: ''\n")
    with pytest.raises(ValueError, match="reason"):
        inventory.load_exclusions(p)


def test_inventory_records_what_it_read_and_is_sorted():
    src = DOC["sources"]
    assert src["wheels_13"]["cusolver"] == "nvidia-cusolver==12.0.4.66"
    assert src["wheels_13"]["curand"] == "nvidia-curand==10.4.0.35"
    assert src["wheels_12"]["cusolver"] == "nvidia-cusolver-cu12==11.7.5.82"
    assert any("CUDA_VERSION 13000" in v for v in src["toolkit_13"]["versions"])
    keys = [(e["library"], e["name"], e["kind"], e["status"]) for e in DOC["entries"]]
    assert keys == sorted(keys) and len(keys) == len(set(keys))
    assert set(src["wheels_13"]) == set(build.WHEELS_13)
    assert src["wheels_13"] == {k: f"{d}=={v}" for k, (d, v) in build.WHEELS_13.items()}


def test_cusolver_sparse_and_refactorization_are_deprecated_with_their_header_line():
    by = {(e["library"], e["name"]): e for e in DOC["entries"]}
    e = by[("cusolver", "cusolverSpDcsrlsvchol")]
    assert e["status"] == "deprecated" and e["replacement"] == "cuDSS" and e["header"].startswith("cusolverSp.h:")
    e = by[("cusolver", "cusolverRfCreate")]
    assert e["status"] == "deprecated" and e["header"].startswith("cusolverRf.h:")
    sp_rf = [e for e in DOC["entries"] if e["library"] == "cusolver" and e["status"] == "deprecated"
             and e["header"].split(":")[0] in ("cusolverSp.h", "cusolverRf.h", "cusolverSp_LOWLEVEL_PREVIEW.h")]
    assert len(sp_rf) == 150  # 62 + 26 + 62 declarations marked CUSOLVER_DEPRECATED* in those headers


def _finding(code: str, name: str = "t.cpp"):
    eng = Engine(all_rules(), Options(select=["catalog"]))
    res = eng.scan_bytes(Path(name), code.encode())
    assert not res.errors, res.errors
    return res.findings


def test_cusolver_sp_finding_is_a_deprecation_citing_the_header_and_cudss():
    code = ("#include <cusolverSp.h>\n"
            "int f(cusolverSpHandle_t h) { return cusolverSpCreate(&h); }\n")
    (f,) = _finding(code)
    assert (f.severity, f.deprecated_in, f.removed_in) == ("warning", "13.0", None)
    assert f.cost is not None and f.cost.impact == "deprecated"  # deprecated is not a build break
    assert "cusolverSp.h:" in f.message and "cuDSS" in f.message and "nvidia-cusolver==12.0.4.66" in f.message


@pytest.mark.skipif(bool(build.have_sources()), reason=str(build.have_sources()))
def test_inventory_is_what_the_script_generates():
    """Reads /usr/local/cuda-13.0/include, the venv's 13.0 wheels and the fetched 12.x headers (about 25 s)."""
    assert build.render(build.build()) == build.OUT.read_text(encoding="utf-8"), (
        "cudamigrate/data/api_inventory.json is stale: run python scripts/build_api_inventory.py")
