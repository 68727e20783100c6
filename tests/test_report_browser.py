"""The HTML report in headless Chromium: it renders, sorts by ROI, filters from the URL, opens details,
logs nothing to the console, and hostile source text stays text.

Needs a Chromium binary (`apt-get install -y chromium`); skipped with a reason otherwise.
"""

from __future__ import annotations

import json
import shutil

import pytest

from .browser import chromium_binary, load, screenshot
from .reportutil import EXAMPLE, parse_rows, scan
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


def test_renders_all_findings_ordered_by_roi(example, tmp_path):
    d, report, doc = example
    page = load(report.as_uri(), tmp_path / "profile")
    _clean(page)
    total = doc["summary"]["findings"]
    assert page.body_attr("data-total") == str(total)
    assert page.body_attr("data-shown") == str(total)
    rows = parse_rows(page.dom).rows
    assert len(rows) == min(100, total)
    rois = [float(r["data-roi"]) for r in rows]
    assert rois == sorted(rois, reverse=True)
    assert [r["data-rule"] for r in rows] == [f["rule"] for f in doc["findings"]][: len(rows)]


def test_filter_from_url_hash(example, tmp_path):
    d, report, doc = example
    want = sum(1 for f in doc["findings"] if f["rule"] == "CM101")
    assert 0 < want < doc["summary"]["findings"]
    page = load(report.as_uri() + "#rule=CM101", tmp_path / "profile")
    _clean(page)
    rows = parse_rows(page.dom).rows
    assert page.body_attr("data-shown") == str(want)
    assert len(rows) == want and {r["data-rule"] for r in rows} == {"CM101"}
    # search box and severity filter through the hash too
    page = load(report.as_uri() + "#q=cudaEventRecord&severity=warning", tmp_path / "profile2")
    _clean(page)
    n = sum(1 for f in doc["findings"] if "cudaEventRecord" in f["message"] or "cudaEventRecord" in f["path"])
    assert page.body_attr("data-shown") == str(n) and n > 0
    page = load(report.as_uri() + "#rule=NOPE", tmp_path / "profile3")
    _clean(page)
    assert page.body_attr("data-shown") == "0" and parse_rows(page.dom).rows == []


def test_details_show_source_fix_explanation_and_suppression(example, tmp_path):
    d, report, doc = example
    page = load(report.as_uri() + "#rule=CM102&open=1", tmp_path / "profile")
    _clean(page)
    p = parse_rows(page.dom)
    text = "".join(p.detail_text)
    assert "// cudamigrate: ignore[CM102]" in text
    assert "Proposed fix" in text and "cudaStreamPerThread" in text
    assert "References" in text and "Why: " in text
    assert any("ln del" in c for c in p.classes) and any("ln add" in c for c in p.classes)
    assert any("ln hit" in c for c in p.classes)
    png = screenshot(report.as_uri() + "#rule=CM102&open=1", tmp_path / "report.png", tmp_path / "profile-shot")
    assert png.exists() and png.stat().st_size > 10_000
    keep = __import__("os").environ.get("CUDAMIGRATE_SCREENSHOT")
    if keep:  # let a human look at it
        shutil.copy(png, keep)


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
