"""Effort a lead believes (cudamigrate/jobs.py): a rule's manual findings in one construct are one job."""

from __future__ import annotations

from pathlib import Path

from cudamigrate.findings.jobs import job_minutes, jobs
from cudamigrate.report.plan import build_plan, render_text

from .helpers import engine_for, run_cli

LABELS = ["CUDA_ERROR_PROFILER_NOT_INITIALIZED", "CUDA_ERROR_PROFILER_ALREADY_STARTED",
          "CUDA_ERROR_PROFILER_ALREADY_STOPPED"]
SWITCH = ("#include <cuda.h>\nconst char *name(CUresult e) {\n    switch (e) {\n"
          + "".join(f"    case {n}: return \"{i}\";\n" for i, n in enumerate(LABELS * 8))
          + "    default: return \"?\";\n    }\n}\n")


def _findings(code: str, rules=("CM1085",)):
    res = engine_for(select=list(rules), extend_select=list(rules)).scan_bytes(Path("t.cu"), code.encode())
    assert not res.errors, res.errors
    return res.findings


def test_the_labels_of_one_switch_are_one_job():
    fs = _findings(SWITCH)
    assert len(fs) == 24 and {(f.context.get("job"), f.context.get("job_at")) for f in fs} == {("switch at line 3", SWITCH.index("switch"))}
    assert len(jobs(fs)) == 1
    each = fs[0].cost.effort_minutes
    assert job_minutes(fs) == each  # not 24 x each
    plan = build_plan(fs, [], 1, "13.0", {}, ["t.cu"])
    text = render_text(plan)
    assert "24 as 1 job(s)" in text and plan.optional_minutes == each


def test_one_function_and_one_macro_are_one_job_each_and_two_switches_two():
    code = ("#include <cuda.h>\n"
            f"int f(CUresult e) {{ if (e == {LABELS[0]}) return 1; if (e == {LABELS[1]}) return 2; return 0; }}\n"
            f"#define IS_PROF(e) ((e) == {LABELS[0]} || (e) == {LABELS[2]})\n"
            f"int g(CUresult e) {{ switch (e) {{ case {LABELS[0]}: return 1; }} switch (e) {{ case {LABELS[1]}: return 2; }} return 0; }}\n"
            f"int top = {LABELS[2]}, other = {LABELS[1]};\n")
    fs = _findings(code)
    by_job = sorted((k[-1], len(v)) for k, v in jobs(fs).items() if k[0] == "job")
    assert by_job == [("function f at line 2", 2), ("macro IS_PROF at line 3", 2), ("switch at line 4", 1),
                      ("switch at line 4", 1)], by_job
    assert len(jobs(fs)) == 1 + 1 + 2 + 2  # function, macro, the two switches of g apart, the two file-scope uses


def test_findings_of_two_rules_in_one_switch_are_two_jobs():
    code = SWITCH.replace("    default:", "    case CUDA_ERROR_CONTEXT_ALREADY_CURRENT: return \"c\";\n    default:")
    fs = _findings(code, ("CM1085", "CM1084"))
    assert {f.rule_id for f in fs} == {"CM1085", "CM1084"} and len(jobs(fs)) == 2


def test_automatic_fixes_are_counted_one_by_one():
    code = "void f() {\n  cudaThreadSynchronize();\n  cudaThreadSynchronize();\n}\n"
    fs = _findings(code, ("CM501",))
    assert len(fs) == 2 and all(f.applicability == "safe" and "job" not in f.context for f in fs)
    assert len(jobs(fs)) == 2


def test_plan_html_and_explain_show_the_grouping(tmp_path):
    (tmp_path / "t.cu").write_text(SWITCH)
    r = run_cli("plan", "t.cu", "--select", "CM1085", cwd=tmp_path)
    assert "24 as 1 job(s)" in r.output and "one switch, function or macro are one job" in r.output
    run_cli("scan", "t.cu", "--select", "CM1085", "--format", "html", "-o", tmp_path / "r.html", cwd=tmp_path)
    html = (tmp_path / "r.html").read_text()
    assert "deprecated: manual changes 24 as 1 job(s)" in html
    assert "One job with 23 other CM1085 finding(s) in the switch at line 3" in html
    r = run_cli("explain", "CM1085")
    assert "Estimate:" in r.output and "are one job" in r.output


def test_nested_constructs_give_the_innermost_whatever_the_order_of_findings():
    """One sweep over the constructs (findings/jobs.innermost) gives what an upward walk from each finding gave:
    the innermost switch, function or macro holding it, for findings listed in any order."""
    code = ("#include <cuda.h>\n"
            f"int top = {LABELS[0]};\n"
            "int f(CUresult e) {\n"
            f"  if (e == {LABELS[1]}) return 1;\n"
            "  switch (e) {\n"
            f"  case {LABELS[2]}: switch (e) {{ case {LABELS[0]}: return 2; }} return 3;\n"
            "  }\n"
            f"  return e == {LABELS[2]};\n"
            "}\n"
            f"#define M(e) ((e) == {LABELS[1]})\n"
            f"int g(CUresult e) {{ return e == {LABELS[0]}; }}\n")
    fs = _findings(code)
    want = {2: None, 4: "function f at line 3", 6: "switch at line 5", 8: "function f at line 3",
            10: "macro M at line 10", 11: "function g at line 11"}
    got = {f.line: f.context.get("job") for f in fs}
    assert {k: v for k, v in got.items() if k != 6} == {k: v for k, v in want.items() if k != 6}
    inner = sorted((f.column, f.context.get("job"), f.context.get("job_at")) for f in fs if f.line == 6)
    assert [j for _, j, _ in inner] == ["switch at line 5", "switch at line 6"], inner
    assert inner[1][2] == code.index("switch (e) { case")  # the inner switch, told apart by its start byte
    again = _findings(code)
    for f in again:
        f.context.pop("job", None), f.context.pop("job_at", None)
    from cudamigrate.findings.jobs import CONSTRUCTS, mark_jobs
    from cudamigrate.parse.treesitter import parse
    from cudamigrate.parse.walk import typed_nodes
    root = parse(code.encode()).root_node
    mark_jobs(list(reversed(again)), lambda: typed_nodes(root, frozenset(CONSTRUCTS)),
              lambda b: code.encode()[:b].count(b"\n") + 1)
    assert sorted((f.line, f.column, f.context.get("job")) for f in again) == sorted(
        (f.line, f.column, f.context.get("job")) for f in fs)


def test_the_path_down_to_a_range_finds_the_construct_the_whole_walk_finds():
    """mark_jobs places a file's few hand-work findings by descending the tree to each (innermost_below), not
    by walking every construct of the file (innermost): both give the same node for every non-empty range of
    nested, adjacent and broken code (the ranges of every node, and of one byte at each node's start)."""
    from cudamigrate.findings.jobs import CONSTRUCTS, innermost, innermost_below
    from cudamigrate.parse.treesitter import parse
    from cudamigrate.parse.walk import typed_nodes

    code = (SWITCH + "#define A(x) switch (x) { case 1: break; }\n#define B 2\n"
            "int f(int e) { switch (e) { case 1: { switch (e) { default: return 1; } } } return [](int k) {\n"
            "  switch (k) { case 2: return 2; } return 0; }(e); }\nstruct S { void m() { switch (1) {} } };\n"
            "int broken( { switch (e) { case 1: ; int g() { return 0; }\n")
    root = parse(code.encode()).root_node
    spans = sorted(((n.start_byte, n.end_byte, n) for n in typed_nodes(root, frozenset(CONSTRUCTS))),
                   key=lambda s: (s[0], -s[1]))
    nodes, cur = [], root.walk()
    while True:
        nodes.append(cur.node)
        if cur.goto_first_child():
            continue
        while not cur.goto_next_sibling():
            if not cur.goto_parent():
                break
        else:
            continue
        break
    ranges = sorted({r for n in nodes for r in ((n.start_byte, n.end_byte), (n.start_byte, n.start_byte + 1))
                     if r[0] < r[1] <= len(code)})
    want = innermost(spans, ranges)
    got = [innermost_below(root, s, e) for s, e in ranges]
    assert [(n.type, n.start_byte) if n else None for n in got] == [(n.type, n.start_byte) if n else None for n in want]
    assert sum(n is not None for n in want) > 100 and len({n.start_byte for n in want if n}) > 8  # not vacuous
