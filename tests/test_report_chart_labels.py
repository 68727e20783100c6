"""The HTML report's "By rule" chart shows whole rule names (they were cut at 26 characters)."""

from __future__ import annotations

import re

from .helpers import run_cli


def test_by_rule_chart_shows_the_whole_rule_name(tmp_path):
    (tmp_path / "t.cu").write_text("#include <cuda.h>\nint f(CUresult e) { return e == CUDA_ERROR_PROFILER_NOT_INITIALIZED; }\n")
    run_cli("scan", "t.cu", "--select", "CM1085", "--format", "html", "-o", tmp_path / "r.html", cwd=tmp_path)
    html = (tmp_path / "r.html").read_text()
    chart = html[html.index('aria-label="By rule"'):]
    labels = re.findall(r'class="lbl"[^>]*>([^<]*)<', chart[: chart.index("</svg>")])
    assert labels == ["CM1085 catalog-driver-manual-constants-deprecated-5-0"]
    width = int(re.search(r'<rect x="(\d+)"', chart).group(1))
    assert width >= 7 * len(labels[0])  # the bars start after the label
