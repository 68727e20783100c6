"""Rule references a user can follow: no rule (hand-written or generated), `explain` or HTML report cites the
project's private notes (`shared/...`); header citations name a CUDA 13.0 header line that exists."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudamigrate.cli.main import main
from cudamigrate.knowledge.load import load_rules

ROOT = Path(__file__).resolve().parent.parent
PRIVATE = re.compile(r"shared/|/work/|read_file id")
HEADER = re.compile(r"CUDA 13\.0 toolkit header include/(\S+?\.(?:h|hpp|cuh)):(\d+)")
WHEEL = re.compile(r"(nvidia-[\w-]+) [\d.]+ wheel \(matched to CUDA 13\.0\) header include/(\S+?\.h):(\d+)")


def _rules():
    rs = load_rules()
    assert not rs.errors, rs.errors
    return rs.rules


def test_no_reference_names_private_notes():
    bad = [(r.id, ref) for r in _rules() for ref in r.references if PRIVATE.search(ref)]
    assert not bad, bad[:10]
    files = [p for p in (ROOT / "rules").rglob("*.yaml") if PRIVATE.search(p.read_text(encoding="utf-8"))]
    assert not files, files[:10]


def test_every_rule_cites_documentation_a_user_can_open():
    """Each CUDA rule links NVIDIA's (or the project's public) documentation; the meta rules cite the tool."""
    url = re.compile(r"https://|\b[\w.-]+\.(?:com|org|io)/")
    missing = [r.id for r in _rules() if r.family != "meta" and not any(url.search(x) for x in r.references)]
    assert not missing, missing


def test_generator_writes_shipped_references():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_catalog_rules as gen
    finally:
        sys.path.pop(0)
    row = {"library": "cudart", "api": "cudaFoo", "removed_in": "13.0", "deprecated_in": "",
           "source": "HIPIFY docs/tables/T.md (ROCm/HIPIFY@014177b, CUDA<=12.6 data):43; cuda-13.0 include/cuda_runtime_api.h:1055"
                     "; CUDA 12.x struct text (public copy, read_file id 123)"}
    refs = gen.references([row])
    assert "CUDA 13.0 toolkit header include/cuda_runtime_api.h:1055" in refs
    assert any(x.startswith("HIPIFY https://github.com/ROCm/HIPIFY/blob/014177b/docs/tables/T.md") for x in refs)
    assert any("https://docs.nvidia.com/cuda/cuda-runtime-api/" in x for x in refs)
    assert refs[-1].startswith("cudamigrate/data/cuda_api_changes.csv (ships with cudamigrate), rows cudart:cudaFoo")
    assert not any(PRIVATE.search(x) for x in refs)


def _include_dirs() -> dict[str, Path]:
    from cudamigrate.toolcheck.build import cuda_home

    home = cuda_home() if shutil.which("nvcc") else None
    out = {}
    if home is not None:
        out["toolkit"] = home / "include"
    for sp in map(Path, sys.path):
        if (sp / "nvidia" / "cu13" / "include").is_dir():
            out["wheels"] = sp / "nvidia" / "cu13" / "include"
    return out


def test_header_citations_point_at_existing_lines():
    dirs = _include_dirs()
    if "toolkit" not in dirs:
        pytest.skip("nvcc not on PATH: CUDA 13.0 header citations not checked")
    checked, bad = 0, []
    for r in _rules():
        for ref in r.references:
            hits = [(dirs["toolkit"] / m.group(1), int(m.group(2))) for m in HEADER.finditer(ref)]
            if "wheels" in dirs:
                hits += [(dirs["wheels"] / m.group(2), int(m.group(3))) for m in WHEEL.finditer(ref)]
            for path, line in hits:
                checked += 1
                if not path.is_file() or line > path.read_text(errors="replace").count("\n") + 1:
                    bad.append((r.id, str(path), line))
    assert checked > 50 and not bad, (checked, bad[:10])


def test_explain_and_html_cite_no_private_notes(tmp_path):
    r = CliRunner().invoke(main, ["explain", "CM504"])
    assert r.exit_code == 0 and "https://docs.nvidia.com/cuda/cuda-runtime-api/" in r.output
    assert "cuda_runtime_api.h:7152" in r.output and not PRIVATE.search(r.output)
    out = tmp_path / "r.html"
    CliRunner().invoke(main, ["scan", str(ROOT / "examples"), "--format", "html", "-o", str(out), "--jobs", "1"])
    assert not PRIVATE.search(out.read_text(encoding="utf-8"))
