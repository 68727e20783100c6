"""The HTML report in headless Chromium: it renders, sorts by ROI, filters from the URL, opens details,
logs nothing to the console, and hostile source text stays text.

Needs a Chromium binary (`apt-get install -y chromium`); skipped with a reason otherwise.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from .browser import chromium_binary, load, screenshot
from .reportutil import EXAMPLE, haystack, parse_rows, scan
from .test_report_html import EVIL_NAME, evil_report

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(chromium_binary() is None,
                       reason="no chromium binary on PATH (apt-get install -y chromium): browser tests skipped"),
]


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    d = tmp_path_factory.mktemp("example")
    _, html = scan([EXAMPLE, "--report", "html"], d / "report.html")
    _, js = scan([EXAMPLE, "--format", "json"], d / "report.json")
    return d, d / "report.html", json.loads(js)


def _clean(page):
    assert page.body_attr("data-ready") == "1", page.stderr[-2000:]
    assert page.body_attr("data-errors") is None
    assert page.console == [], page.console


def test_renders_all_findings_in_plan_order(example, tmp_path):
    d, report, doc = example
    page = load(report.as_uri(), tmp_path / "profile")
    _clean(page)
    total = doc["summary"]["findings"]
    assert page.body_attr("data-total") == str(total)
    assert page.body_attr("data-shown") == str(total)
    rows = parse_rows(page.dom).rows
    assert len(rows) == min(100, total)
    from cudamigrate.report.plan import IMPACT_ORDER

    impacts = [IMPACT_ORDER.index(r["data-impact"]) for r in rows]
    assert impacts == sorted(impacts) and impacts[0] == 0  # build breaks first
    by_impact = {}
    for r in rows:
        by_impact.setdefault(r["data-impact"], []).append(r)
    for imp, group in by_impact.items():
        rois = [float(r["data-roi"]) for r in group]
        if imp != "build-break":  # build breaks: safe, unsafe, manual first; then ROI
            assert rois == sorted(rois, reverse=True)
    if total <= 100:
        assert sorted(r["data-rule"] for r in rows) == sorted(f["rule"] for f in doc["findings"])


def test_impact_filter(example, tmp_path):
    d, report, doc = example
    want = sum(1 for f in doc["findings"] if f["cost"]["impact"] == "build-break")
    page = load(report.as_uri() + "#impact=build-break", tmp_path / "profile")
    _clean(page)
    rows = parse_rows(page.dom).rows
    assert page.body_attr("data-shown") == str(want) and want > 0
    assert {r["data-impact"] for r in rows} == {"build-break"}


def test_filter_from_url_hash(example, tmp_path):
    from collections import Counter
    from urllib.parse import quote

    d, report, doc = example
    counts = Counter(f["rule"] for f in doc["findings"])
    rule, want = min(counts.items(), key=lambda kv: (kv[1], kv[0]))
    page = load(report.as_uri() + "#rule=" + rule, tmp_path / "profile")
    _clean(page)
    rows = parse_rows(page.dom).rows
    assert page.body_attr("data-shown") == str(want)
    assert len(rows) == min(100, want) and {r["data-rule"] for r in rows} == {rule}
    # the search box and the file filter, through the hash too
    last = doc["findings"][-1]
    q = last["name"]
    n = sum(1 for f in doc["findings"] if q.lower() in haystack(f))
    page = load(report.as_uri() + "#q=" + quote(q), tmp_path / "profile2")
    _clean(page)
    assert page.body_attr("data-shown") == str(n) and n > 0
    base = last["path"].rsplit("/", 1)[-1]
    n = sum(1 for f in doc["findings"] if base.lower() in f["path"].lower())
    page = load(report.as_uri() + "#file=" + quote(base) + "&severity=" + last["severity"], tmp_path / "profile3")
    _clean(page)
    n = sum(1 for f in doc["findings"] if base.lower() in f["path"].lower() and f["severity"] == last["severity"])
    assert page.body_attr("data-shown") == str(n) and n > 0
    page = load(report.as_uri() + "#rule=NOPE", tmp_path / "profile4")
    _clean(page)
    assert page.body_attr("data-shown") == "0" and parse_rows(page.dom).rows == []


def test_details_show_source_fix_explanation_and_suppression(example, tmp_path):
    d, report, doc = example
    first = doc["findings"][0]
    page = load(report.as_uri() + "#open=1", tmp_path / "profile")
    _clean(page)
    p = parse_rows(page.dom)
    text = "".join(p.detail_text)
    assert f"// cudamigrate: ignore[{first['rule']}]" in text
    assert first["message"] in text
    assert any("ln hit" in c for c in p.classes)  # the finding's lines, highlighted in the source excerpt
    if first["applicability"] != "manual":
        assert "Proposed fix" in text and first["fix"]["edits"][0]["text"].strip() in text
        assert any("ln del" in c for c in p.classes) and any("ln add" in c for c in p.classes)
    assert "References" in text
    png = screenshot(report.as_uri() + "#open=1", tmp_path / "report.png", tmp_path / "profile-shot")
    assert png.exists() and png.stat().st_size > 10_000
    keep = os.environ.get("CUDAMIGRATE_SCREENSHOT")
    if keep:  # let a human look at it
        shutil.copy(png, keep)


def test_details_list_related_locations(example, tmp_path):
    """A texture reference's finding (at its declaration) lists each use, with its line, in its details."""
    d, report, doc = example
    f = next(x for x in doc["findings"] if x["rule"] == "CM601" and x["related"])
    page = load(report.as_uri() + "#rule=CM601&open=1", tmp_path / "profile")
    _clean(page)
    text = "".join(parse_rows(page.dom).detail_text)
    assert f"Related locations ({len(f['related'])})" in text
    r = f["related"][0]
    assert f"{r['path']}:{r['line']}:{r['column']}" in text
    assert r["message"].replace("`", "") in text  # inline code: the backticks become <code>


def test_hostile_source_does_not_execute(tmp_path):
    report, _ = evil_report(tmp_path)
    page = load(report.as_uri() + "#open=1", tmp_path / "profile")
    _clean(page)
    assert page.body_attr("data-pwned") is None
    assert not __import__("re").search(r"<[a-z][^<>]*\sdata-pwned=", page.dom)
    p = parse_rows(page.dom)
    assert p.imgs == 0 and p.scripts == 2
    assert len(p.rows) == 2
    text = "".join(p.detail_text)
    assert "</script><img src=x onerror=alert(1)> {{ 7*7 }}" in text
    assert "{% if 1 %}x{% endif %}" in text
    assert EVIL_NAME in "".join(parse_rows(page.dom).detail_text) or EVIL_NAME.replace("<", "&lt;") in page.dom


def test_50000_findings_stay_usable(tmp_path, record_property):
    """The report at 50,000 findings: size, and time to the first rendered page of the table."""
    import importlib.util
    import time

    from .reportutil import ROOT

    spec = importlib.util.spec_from_file_location("report_bench", ROOT / "scripts" / "report_bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.synthesize(tmp_path / "src", 50_000)
    out = tmp_path / "big.html"
    t = time.perf_counter()
    scan([tmp_path / "src", "--report", "html", "--jobs", "2"], out)
    scan_s = time.perf_counter() - t
    size = out.stat().st_size
    t = time.perf_counter()
    page = load(out.as_uri(), tmp_path / "profile", budget_ms=60000, timeout=600)
    wall = time.perf_counter() - t
    _clean(page)
    assert page.body_attr("data-total") == "50000" and page.body_attr("data-rows") == "100"
    render_ms = float(page.body_attr("data-render-ms"))
    page2 = load(out.as_uri() + "#rule=CM102&open=1", tmp_path / "profile2", budget_ms=60000, timeout=600)
    _clean(page2)
    assert page2.body_attr("data-shown") == "12500"
    figures = {"size_mb": round(size / 1e6, 1), "scan_and_write_s": round(scan_s, 1), "chromium_wall_s": round(wall, 1),
               "render_ms": render_ms, "filtered_table_ms": float(page2.body_attr("data-table-ms"))}
    for k, v in figures.items():
        record_property(k, v)
    print("50k report:", figures)
    assert size < 25e6, figures
    assert render_ms < 10_000, figures


def test_clean_run_report(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "ok.cu").write_text("int main() { return 0; }\n")
    out = tmp_path / "clean.html"
    scan([src, "--report", "html"], out)
    page = load(out.as_uri(), tmp_path / "profile")
    _clean(page)
    assert page.body_attr("data-total") == "0" and page.body_attr("data-shown") == "0"
    assert "no findings match" in page.dom
