"""The HTML report without a browser: structure, escaping, data, fix diffs, packaging of the template."""

from __future__ import annotations

import json
import re

from cudamigrate.findings.model import Edit, Finding, Fix
from cudamigrate.report.html import fix_diff, json_for_script

from .reportutil import EXAMPLE, scan

EVIL_NAME = "evil<img src=x onerror=document.body.setAttribute('data-pwned','name')>.cu"
EVIL = (
    "#include <cuda_runtime.h>\n"
    "// </script><script>document.body.setAttribute('data-pwned','script')</script>\n"
    "// <img src=x onerror=\"document.body.setAttribute('data-pwned','img')\"> {{ 7*7 }} {% if 1 %}x{% endif %} & &amp; \u2028 \u2029 end\n"
    "void f(float *d, float *h, int n, cudaStream_t other) {  /* meets another stream */\n"
    "  cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, 0 /* </script><img src=x onerror=alert(1)> {{ 7*7 }} */);\n"
    "  cudaMemsetAsync(d, 0, n);  // <!-- <script>alert(2)</script>\n"
    "}\n"
)


def data_block(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="cm-data">(.*?)</script>', html, re.S)
    assert m, "no data block"
    return json.loads(m.group(1))


def evil_report(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / EVIL_NAME).write_text(EVIL, encoding="utf-8")
    out = tmp_path / "evil.html"
    code, html = scan([src, "--format", "html"], out)
    assert code == 1
    return out, html


def test_example_report_summary_and_data(tmp_path):
    code, html = scan([EXAMPLE, "--report", "html"], tmp_path / "r.html")
    _, js = scan([EXAMPLE, "--format", "json"], tmp_path / "r.json")
    doc = json.loads(js)
    data = data_block(html)
    assert len(data["findings"]) == doc["summary"]["findings"] > 0
    assert 'id="total-findings">%d<' % doc["summary"]["findings"] in html
    assert "<svg" in html and "By directory" in html
    # plan order: build breaks first (safe, unsafe, manual), then deprecated, performance, hygiene; each by ROI
    fi = data["fields"]
    ranks = [(("build-break", "deprecated", "performance", "hygiene").index(r[fi.index("impact")]),
              ("safe", "unsafe", "manual").index(r[fi.index("applicability")]) if r[fi.index("impact")] == "build-break"
              else 0, -r[fi.index("roi")]) for r in data["findings"]]
    assert ranks == sorted(ranks)
    # self-contained: no external fetches of any kind
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "Content-Security-Policy" in html and "default-src &#39;none&#39;" in html


def test_every_fixable_finding_has_a_diff(tmp_path):
    _, html = scan([EXAMPLE, "--report", "html"], tmp_path / "r.html")
    data = data_block(html)
    i = {k: n for n, k in enumerate(data["fields"])}
    for row in data["findings"]:
        if row[i["applicability"]] != "manual":
            first, n, new = row[i["fix"]]
            segs = data["src"][str(row[i["file"]])]
            old = [ls[k - s] for k in range(first, first + n) for s, ls in segs if s <= k < s + len(ls)]
            assert len(old) == n and old != new  # the old lines travel in the source excerpt
        # the source lines around the finding are there
        segs = data["src"][str(row[i["file"]])]
        assert any(s <= row[i["line"]] < s + len(lines) for s, lines in segs)


def test_fix_diff_applies_byte_edits():
    data = "int a;\nfoo(x, 0);  // é\nint b;\n".encode()
    start = data.index(b"0")
    f = Finding("CM101", "n", "streams", "warning", "p.cu", 2, 8, 2, 9, start, start + 1, "m", "",
                fix=Fix("safe", "t", [Edit(start, start + 1, "s")]))
    assert fix_diff(data, f) == [2, [["-", "foo(x, 0);  // é"], ["+", "foo(x, s);  // é"]]]
    ins = data.index(b"\nint b")
    f.fix = Fix("safe", "t", [Edit(ins + 1, ins + 1, "int c;\n")])
    assert fix_diff(data, f) == [3, [["+", "int c;"], [" ", "int b;"]]]


def test_json_for_script_cannot_close_the_block():
    s = json_for_script({"x": "</script><!-- <img> & \u2028\u2029"})
    assert "<" not in s and ">" not in s and "&" not in s and "\u2028" not in s and "\u2029" not in s
    assert json.loads(s) == {"x": "</script><!-- <img> & \u2028\u2029"}


def test_hostile_source_is_inert_in_the_html(tmp_path):
    _, html = evil_report(tmp_path)
    assert html.count("</script") == 2  # the data block's and the script's own
    assert "<img" not in html and "<!--" not in html
    data = data_block(html)
    text = json.dumps(data, ensure_ascii=False)
    assert "{{ 7*7 }}" in text and "</script><img src=x onerror=alert(1)>" in text
    assert data["files"][0].endswith(EVIL_NAME)
    # server-rendered parts (directory table, charts) escape what they show
    head = html.split('<script type="application/json"')[0]
    assert "onerror=" not in head or "&lt;img" in head


def test_template_ships_in_the_wheel(tmp_path):
    import subprocess
    import sys
    import zipfile

    from .reportutil import ROOT

    import importlib.util

    isolation = [] if importlib.util.find_spec("hatchling") is None else ["--no-build-isolation"]
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", str(tmp_path), str(ROOT)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        import pytest

        pytest.skip(f"cannot build a wheel here (needs hatchling or PyPI): {r.stderr[-300:]}")
    wheel = next(tmp_path.glob("cudamigrate-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "cudamigrate/report/templates/report.html.j2" in names
    assert "cudamigrate/report/templates/report.js" in names


def test_report_leads_with_the_plan(tmp_path):
    """The first section is the plan; must-do and optional effort apart; auto-fixable counts safe fixes only."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "bad.cu").write_bytes(b"\x00\x01binary")
    for f in (EXAMPLE / "legacy-app" / "src").iterdir() if (EXAMPLE / "legacy-app").is_dir() else []:
        (src / f.name).write_bytes(f.read_bytes())
    _, html = scan([src, "--format", "html"], tmp_path / "r.html")
    _, js = scan([src, "--format", "json"], tmp_path / "r.json")
    doc = json.loads(js)
    main = html[html.index("<main>"):]
    assert main.index('<section id="plan">') < main.index('<section id="summary">') < main.index('id="findings"')
    breaks = sum(1 for f in doc["findings"] if f["cost"]["impact"] == "build-break")
    assert '<span id="plan-must">%d</span>' % breaks in html
    assert '<span id="plan-optional">%d</span>' % (len(doc["findings"]) - breaks) in html
    assert "cudamigrate fix --select " in html and "review needed" in html
    safe = sum(1 for f in doc["findings"] if f["applicability"] == "safe")
    assert 'id="fixable-pct">%s%%<' % round(100 * safe / len(doc["findings"]), 1) in html
    assert "Total ROI" not in html and "ROI = impact / effort" in html
    must_min = sum(f["cost"]["effort_minutes"] for f in doc["findings"] if f["cost"]["impact"] == "build-break")
    from cudamigrate.report.plan import effort_str

    assert 'id="must-effort">%s<' % effort_str(must_min) in html
    # the unreadable file is listed with its reason
    assert re.search(r'<details id="unreadable".*bad\.cu: binary file', html, re.S)
    # the impact filter with counts
    assert '<select id="f-impact"' in html and 'value="build-break">build-break (%d)<' % breaks in html
