"""The HTML report in headless Chromium, as a reader first sees it: the plan on the first screen (DOM position
and a non-blank screenshot), charts whose bars filter the table when clicked and whose labels never overlap,
messages with Markdown inline code rendered as <code> (never as markup), and each ROI explained in words.

Skipped, with one line, only when no Chromium binary is installed (CI installs it from .ci/apt-packages).
"""

from __future__ import annotations

import re
import struct
import subprocess
import zlib
from html import unescape
from pathlib import Path

import pytest

from cudamigrate.findings.model import Cost, Edit, Finding, Fix
from cudamigrate.report.html import render
from cudamigrate.report.model import Run
from cudamigrate.knowledge.load import load_rules

from .browser import _base, chromium_binary, load
from .reportutil import EXAMPLE, scan

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(chromium_binary() is None,
                       reason="no chromium binary on PATH (apt-get install -y chromium): browser tests skipped"),
]

WIDTH, HEIGHT = 1280, 800


def _png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and rows of RGB(A) pixels of an 8-bit PNG (what Chromium writes), without PIL."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w, h, bpp = 8, b"", 0, 0, 3
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), (depth, ctype)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        ft, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ft == 1:
                line[i] = (line[i] + a) & 255
            elif ft == 2:
                line[i] = (line[i] + b) & 255
            elif ft == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows


def _first_view(url: str, tmp_path: Path):
    page = load(url, tmp_path / "profile-dom", budget_ms=5000)
    assert page.body_attr("data-ready") == "1" and page.body_attr("data-errors") is None, page.stderr[-1500:]
    return page


def test_first_screen_shows_the_plan(tmp_path):
    out = tmp_path / "report.html"
    scan([EXAMPLE, "--format", "html"], out)
    p = subprocess.run(_base(tmp_path / "profile") + ["--virtual-time-budget=5000", f"--window-size={WIDTH},{HEIGHT}",
                                                        "--dump-dom", out.as_uri()],
                       capture_output=True, text=True, timeout=180)
    dom = p.stdout
    body = re.search(r"<body\b[^>]*>", dom).group(0)
    attr = dict(re.findall(r'([\w-]+)="([^"]*)"', body))
    assert attr.get("data-ready") == "1", p.stderr[-1500:]
    main = dom[dom.index("<main>"):]
    assert main[len("<main>"):].lstrip().startswith('<section id="plan">')  # the plan is the first section
    vw, vh = map(int, attr["data-viewport"].split("x"))
    assert 0 <= int(attr["data-plan-top"]) < vh // 4, attr  # the plan starts near the top...
    assert int(attr["data-plan-first-bottom"]) <= vh, attr  # ...and its first step is on the first screen
    assert re.search(r'<section id="plan">.*?Must do:.*?<ol id="plan-steps">\s*<li', dom, re.S)

    shot = tmp_path / "first-screen.png"
    subprocess.run(_base(tmp_path / "profile2") + ["--virtual-time-budget=5000", f"--window-size={WIDTH},{HEIGHT}",
                                                     f"--screenshot={shot}", out.as_uri()],
                   capture_output=True, text=True, timeout=180)
    assert shot.is_file() and shot.stat().st_size > 0, "chromium wrote no screenshot"
    w, h, rows = _png_pixels(shot)
    assert (w, h) == (WIDTH, HEIGHT)
    bpp = len(rows[0]) // w
    dark = sum(1 for r in rows[::4] for i in range(0, len(r), bpp * 4) if sum(r[i : i + 3]) < 3 * 128)
    colours = {r[i : i + 3] for r in rows[::8] for i in range(0, len(r), bpp * 8)}
    assert dark > 200 and len(colours) > 20, (dark, len(colours))  # text was drawn: not a blank page


def _synthetic_run(n_rules: int) -> Run:
    """One finding per real rule, with the rules' real (long) names, and messages that quote hostile code."""
    rules = [r for r in load_rules().rules][:n_rules]
    findings, src = [], b"int x;\n" * 10
    for i, r in enumerate(rules):
        app = ("safe", "unsafe", None)[i % 3]
        fix = Fix(app, "replace `int` by `long`", [Edit(0, 3, "long")]) if app else None
        imp, score = (("build-break", 10.0), ("deprecated", 5.0), ("performance", 3.0))[i % 3]
        effort = {"safe": 1.0, "unsafe": 2.0}.get(app or "", 5.0)
        cost = Cost(impact=imp, impact_score=score, effort=app or "manual", effort_score=effort, effort_minutes=5.0,
                    roi=score / effort, factors=["x4 inside a loop"] if i == 0 else [])
        msg = f"`{r.id}Call` is gone; use `<img src=x onerror=document.body.setAttribute('data-pwned',1)>` & a `tick"
        findings.append(Finding(r.id, r.name, r.family, r.severity, f"src/f{i}.cu", 1, 1, 1, 4, 0, 3, msg, "int",
                                fix=fix, cost=cost))
    return Run(findings, [], n_rules, rules, (13, 0), {f"src/f{i}.cu": src for i in range(n_rules)})


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    d = tmp_path_factory.mktemp("many")
    out = d / "many.html"
    run = _synthetic_run(60)
    out.write_text(render(run), encoding="utf-8")
    return out, run


def test_chart_labels_never_overlap_with_many_rules(many, tmp_path):
    out, run = many
    page = _first_view(out.as_uri(), tmp_path)
    assert page.body_attr("data-chart-overlaps") == "0"
    assert len(re.findall(r'<a href="#rule=', page.dom)) >= 15  # the by-rule chart really has many bars


def test_clicking_a_chart_bar_filters_the_table(many, tmp_path):
    out, run = many
    html = out.read_text(encoding="utf-8")
    bars = re.findall(r'<a href="#(\w+=[^"]+)" class="bar" data-filter="(\w+)" data-value="([^"]+)">.*?'
                      r'<title>([^<]*?): (\d+)', html, re.S)
    kinds = {b[1] for b in bars}
    assert {"rule", "family", "impact", "severity", "applicability"} <= kinds, kinds
    seen = set()
    for href, key, value, _, count in bars:
        if key in seen:  # one bar of each chart: each load is a Chromium start
            continue
        seen.add(key)
        page = _first_view(out.as_uri() + "#" + unescape(href), tmp_path)
        assert page.body_attr("data-shown") == count, (href, count)
        assert re.search(r'<a href="#' + re.escape(href) + r'" class="bar active"', page.dom), href  # shown as active
    expected = sum(1 for f in run.findings if f.applicability == "unsafe")
    page = _first_view(out.as_uri() + "#applicability=unsafe", tmp_path)
    assert page.body_attr("data-shown") == str(expected)


def test_messages_render_inline_code_and_stay_inert(many, tmp_path):
    out, _ = many
    page = _first_view(out.as_uri() + "#open=1", tmp_path)
    assert page.body_attr("data-pwned") is None and "<img" not in page.dom.split("<main>")[1]
    cells = re.findall(r'<td class="message">(.*?)</td>', page.dom, re.S)
    assert cells
    for c in cells:
        assert re.match(r"<code>CM\w+Call</code> is gone; use <code>&lt;img src=x onerror=", c), c
        assert c.count("`") == 1  # the unpaired backtick stays as written; no other raw Markdown
    detail = re.search(r'<tr class="detail">(.*?)</tr>', page.dom, re.S).group(1)
    assert "<code>" in detail and re.search(r'class="muted small roi-why">ROI [\d.]+ = impact [\d.]+ \(', detail)
    assert "effort" in detail and "x4 inside a loop" in detail
