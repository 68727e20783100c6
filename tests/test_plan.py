"""`cudamigrate plan` and the plan order of the text output: build breaks first, optional work apart."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path



from .helpers import run_cli
from cudamigrate.findings.model import Cost, Finding
from cudamigrate.report.plan import IMPACT_ORDER, fmt_roi, plan_order

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "legacy-app"


def run(*args, cwd=None):
    return run_cli(*args, cwd=cwd)


def _f(rule, impact, app, roi, line=1):
    from cudamigrate.findings.model import Edit, Fix

    fix = None if app == "manual" else Fix(app, "t", [Edit(0, 1, "x")])
    return Finding(rule, "n", "fam", "warning", "a.cu", line, 1, line, 2, 0, 1, "m", "s", fix,
                   Cost(impact, 1, app, 1, 1, roi))


def test_plan_order_puts_build_breaks_first_safe_unsafe_manual():
    perf = _f("CM300", "performance", "unsafe", 12.0)  # a thrust::sort in a loop: high ROI, optional
    fs = [perf, _f("CM1", "build-break", "manual", 2.0), _f("CM2", "build-break", "unsafe", 5.0),
          _f("CM3", "build-break", "safe", 10.0), _f("CM4", "deprecated", "safe", 5.0), _f("CM5", "hygiene", "safe", 1.0)]
    assert [f.rule_id for f in plan_order(fs)] == ["CM3", "CM2", "CM1", "CM4", "CM300", "CM5"]


def test_fmt_roi_rounds():
    assert (fmt_roi(4.648), fmt_roi(12.0), fmt_roi(0.5)) == ("4.6", "12", "0.5")


def test_scan_text_follows_plan_order_and_rounds(tmp_path):
    shutil.copytree(EXAMPLE, tmp_path / "app")
    data = json.loads(run("scan", "--format", "json", "app", cwd=tmp_path).stdout)
    impact = {(f["path"], f["line"], f["column"], f["rule"]): (f["cost"]["impact"], f["applicability"])
              for f in data["findings"]}
    text = run("scan", "app", cwd=tmp_path).stdout
    order = []
    for m in re.finditer(r"^(\S+):(\d+):(\d+): (CM\d+) \S+ .*\(roi ([0-9.]+)\)$", text, re.M):
        order.append(impact[(m[1], int(m[2]), int(m[3]), m[4])])
        assert len(m[5].partition(".")[2]) <= 1, m[0]  # one decimal at most
    assert len(order) == len(impact) and len(order) > 5
    ranks = [(IMPACT_ORDER.index(i), ("safe", "unsafe", "display-only", "manual").index(a) if i == "build-break" else 0)
             for i, a in order]
    assert ranks == sorted(ranks)
    assert {i for i, _ in order} >= {"build-break", "performance"}


def _build_breaks(cwd):
    data = json.loads(run("scan", "--format", "json", "app", cwd=cwd).stdout)
    return [f for f in data["findings"] if f["cost"]["impact"] == "build-break"]


def test_plan_steps_do_what_they_say(tmp_path):
    """Run the plan's commands on a copy: each clears the build breaks it promises, no more, no fewer."""
    shutil.copytree(EXAMPLE, tmp_path / "app")
    r = run("plan", "--format", "json", "app", cwd=tmp_path)
    assert r.exit_code == 1, r.stderr  # build breaks remain
    plan = json.loads(r.stdout)
    must = plan["must"]["steps"]
    assert [s["applicability"] for s in must] == ["safe", "unsafe"]  # the example has no manual build break
    assert plan["must"]["findings"] == len(_build_breaks(tmp_path)) == sum(s["findings"] for s in must)
    assert plan["optional"]["findings"] > 0
    assert all(s["impact"] != "build-break" for s in plan["optional"]["steps"])
    assert must[1]["review_files"] and all(p.startswith("app/") for p in must[1]["review_files"])
    before = len(_build_breaks(tmp_path))
    for step in must:
        args = shlex.split(step["command"])
        assert args[0] == "cudamigrate"
        run(*args[1:], cwd=tmp_path)
        after = len(_build_breaks(tmp_path))
        assert before - after == step["findings"], step
        before = after
    assert before == 0
    r = run("plan", "app", cwd=tmp_path)
    assert r.exit_code == 0 and "no build breaks" in r.stdout


def test_plan_text_on_example():
    r = run("plan", str(EXAMPLE))
    out = r.stdout
    assert re.search(r"^1\. `cudamigrate fix --select \S+ \S+` clears \d+ build break\(s\) in \d+ file\(s\) \(safe", out, re.M)
    assert re.search(r"^2\. `cudamigrate fix --unsafe-fixes --select \S+ \S+` clears \d+ more in \d+ file\(s\).*review these",
                     out, re.M)
    must, optional = out.split("\nOptional:")
    assert "Must do:" in must and "est." in must and "performance" not in must
    assert "ROI = impact / effort" in out


def test_plan_manual_step_and_unreadable_file(tmp_path):
    """A manual build break gets its own step with an estimate; an unreadable file is listed with the reason."""
    (tmp_path / "m.cu").write_bytes(b"texture<float, 1> tex;\nvoid f(float *p) { cudaBindTexture(0, tex, p, 4); }\n"
                                    b"int g(){ cudaDeviceProp p; return p.clockRate; }\n")
    (tmp_path / "bad.cu").write_bytes(b"\xff\xfe\x00\x00" + b"\x00" * 64)
    r = run("plan", "--format", "json", ".", cwd=tmp_path)
    plan = json.loads(r.stdout)
    assert [s["applicability"] for s in plan["must"]["steps"]] == ["unsafe", "manual"]
    assert plan["must"]["steps"][1]["rules"][0]["rule_id"] == "CM503"
    assert plan["unreadable"] == ["bad.cu: binary file (contains NUL bytes)"]
    text = run("plan", ".", cwd=tmp_path).stdout
    assert re.search(r"^1\. `cudamigrate fix --unsafe-fixes --select CM601 \.` clears 1 build break\(s\)", text, re.M)
    assert re.search(r"^2\. 1 manual item\(s\) in 1 file\(s\) \(est\. \d+ min\), by rule:\n   - CM503 ", text, re.M)
    assert "Not scanned (1 file(s) unreadable):\n- bad.cu: binary file" in text


def test_plan_on_generated_200_file_tree(tmp_path):
    legacy = (EXAMPLE / "src" / "kernels.cu").read_bytes()
    for i in range(200):
        d = tmp_path / f"m{i % 10}"
        d.mkdir(exist_ok=True)
        (d / f"k{i}.cu").write_bytes(legacy if i % 3 == 0 else b"int f(int x) { return x + 1; }\n")
    r = run("plan", "-j", "1", ".", cwd=tmp_path)
    assert "200 file(s) scanned" in r.stdout
    assert re.search(r"^1\. `cudamigrate fix --select \S+ \.` clears \d+ build break\(s\) in 67 file\(s\)", r.stdout, re.M)


def test_plan_commands_repeat_the_options(tmp_path):
    shutil.copytree(EXAMPLE, tmp_path / "app")
    plan = json.loads(run("plan", "--format", "json", "--target-cuda", "12.0", "--option", "stream=s", "app",
                          cwd=tmp_path).stdout)
    cmds = [s["command"] for s in plan["must"]["steps"] + plan["optional"]["steps"] if s["command"]]
    assert cmds and all("--target-cuda 12.0 --option stream=s app" in c for c in cmds)
    assert plan["target"] == "12.0"


CDP1 = ("#include <cuda_runtime.h>\nint main() {\n  cudaThreadSynchronize();\n"
        "  return (int)cudaDeviceSetLimit(cudaLimitDevRuntimeSyncDepth, 4);\n}\n")


def test_runtime_break_is_must_do_after_build_breaks(tmp_path):
    """CM531 compiles and fails at run time on cc 9.0+: impact `runtime-break`, must-do in plan, text, JSON,
    SARIF and HTML, listed after the build breaks."""
    src = tmp_path / "cdp.cu"
    src.write_text(CDP1)
    js = json.loads(run("scan", "--format", "json", "--exit-zero", str(src)).stdout)
    impacts = {f["rule"]: f["cost"]["impact"] for f in js["findings"]}
    assert impacts == {"CM501": "build-break", "CM531": "runtime-break"}, impacts
    text = run("scan", "--exit-zero", "--target-cuda", "13.0", str(src)).stdout  # named: no "from nvcc ..." either
    assert "(1 build-breaking, 1 failing at run time for CUDA 13.0)" in text
    assert text.index("CM501") < text.index("CM531")
    plan = run("plan", str(src)).stdout
    assert "Must do: 1 build break(s) and 1 run-time break(s) (builds, then fails) for CUDA 13.0" in plan
    assert "manual item(s) that fail at run time" in plan and "CM531" in plan.split("Optional")[0]
    sarif = json.loads(run("scan", "--format", "sarif", "--exit-zero", str(src)).stdout)
    props = [r["properties"]["impact"] for r in sarif["runs"][0]["results"]]
    assert sorted(props) == ["build-break", "runtime-break"]
    html = tmp_path / "r.html"
    run("scan", "--format", "html", "-o", str(html), "--exit-zero", str(src))
    page = html.read_text()
    assert 'id="plan-must-runtime">1</span> run-time break(s)' in page
    assert '<option value="runtime-break">runtime-break (1)</option>' in page
    assert impact_order_ok()


def impact_order_ok() -> bool:
    return IMPACT_ORDER.index("build-break") < IMPACT_ORDER.index("runtime-break") < IMPACT_ORDER.index("deprecated")


def test_plan_and_html_report_name_the_minimum(tmp_path):
    """Which oldest toolkit decided the version guards (CM410) is part of the plan and of the HTML report."""
    (tmp_path / "g.cu").write_text("#if CUDART_VERSION >= 12000\nint a;\n#else\nint b;\n#endif\n")
    plan = json.loads(run("plan", "--format", "json", ".", cwd=tmp_path).stdout)
    assert plan["minimum"] is None
    assert "not declared; version guards are reported, not removed" in run("plan", ".", cwd=tmp_path).stdout
    plan = json.loads(run("plan", "--format", "json", "--keep-compat", "12.0", ".", cwd=tmp_path).stdout)
    assert plan["minimum"] == "12.0"
    run("scan", "--format", "html", "--output", "r.html", "--keep-compat", "12.0", ".", cwd=tmp_path)
    assert "Oldest CUDA the code must still build with: 12.0 (keep-compat)" in (tmp_path / "r.html").read_text()
