"""nvcc 13.0 compiles every fixed fixture and every lookalike; removal fixtures fail before the fix.

One test per compilation, so `pytest -n auto` (the README's command) spreads
nvcc processes over all cores. Only `-c` is used here; linking happens in the
GPU stage, which needs executables anyway.

The fixed program of a GPU case is not compiled here: tests/test_gpu_stage.py's
`test_every_gpu_case_builds_and_links_for_sm90` compiles and links that same text
(fix(before), checked equal to after.*) with the same flags and include directory,
so compiling it here too cost the suite one nvcc run per GPU case (~2 min of CI).
A case the GPU stage would not build (a library missing here, a header) stays here.
"""

from __future__ import annotations

import re

import pytest

from cudamigrate.toolcheck.build import compile_file
from cudamigrate.toolcheck.fixtures import load_cases

from .conftest import FIXTURES
from .helpers import engine_for

pytestmark = pytest.mark.nvcc

CASES = load_cases(FIXTURES)


def _built_by_gpu_stage():
    """Names of the GPU cases whose fixed program the GPU stage's build test compiles and links."""
    from cudamigrate.toolcheck import build
    from cudamigrate.toolcheck import selftest as st

    out = set()
    for c in st.gpu_cases(CASES):
        if c.before is None or c.before.suffix in (".cuh", ".h", ".hpp"):
            continue
        if "after" in st.programs(st.compare_mode(c)) and all(build.lib_available(lib) for lib in st.case_libs(c)):
            out.add(c.name)
    return out


def _jobs():
    jobs = []
    linked = _built_by_gpu_stage()
    for c in CASES:
        comp = c.compile
        flags = comp.get("flags", []) or []
        inc = [c.dir]
        if c.after and comp.get("after", "compile") != "none" and c.name not in linked:
            jobs.append((c, "after", c.after, flags, inc))
        if c.ok and comp.get("ok", "compile") != "none":
            jobs.append((c, "ok", c.ok, flags, inc))
        if c.before and comp.get("before", "compile") != "none":
            jobs.append((c, "before", c.before, flags, inc))
    return jobs


JOBS = _jobs()


def _ids(jobs):
    return [f"{c.name}:{w}" for c, w, *_ in jobs]


@pytest.mark.parametrize("job", JOBS, ids=_ids(JOBS))
def test_nvcc(job, tmp_path):
    c, which, src, flags, inc = job
    res = compile_file(src, tmp_path / f"{which}.o", link=False, flags=flags, include_dirs=inc)
    if which == "before" and c.compile.get("before") == "fail":
        assert not res.ok, f"{src} compiles with nvcc 13.0, so the rule does not target a real break"
        pattern = c.compile.get("before_error")
        assert pattern, f"{c.dir}/fixture.yaml: compile.before_error must say which error proves the removal"
        assert re.search(pattern, res.output), f"expected error /{pattern}/ not in nvcc output:\n{res.output[-3000:]}"
    else:
        assert res.ok, f"nvcc failed on {src}:\n{' '.join(res.cmd)}\n{res.output[-4000:]}"
    if which == "before":
        _build_breaks_are_errors(c, src, res.output)


def _error_lines(output: str, src) -> set[int]:
    """Lines nvcc (EDG: `f.cu(12): error`) or the host compiler (`f.c:12:5: error`) reports errors on. gcc reports
    an error in a macro's expansion (`cuCtxCreate` is a macro of cuda.h) at the header, with a note `f.c:12:3:
    note: in expansion of macro` at the use (warnings are off: -w), so such notes count too."""
    name = re.escape(src.name)
    rx = re.compile(r"(?:^|[/\\])" + name + r"(?:\((\d+)\):|:(\d+):\d+:) (?:(?:catastrophic )?error|note: in expansion of macro)", re.M)
    return {int(m.group(1) or m.group(2)) for m in rx.finditer(output)}


# Findings the compile of their fixture cannot show, with the reason; each rule is proven elsewhere.
UNPROVABLE = {
    ("texture/CM603-texture-reference-api--manual-cases", 16): "a dependent call in a template that the fixture never instantiates",
    ("removals/CM509-cuctxcreate-params--c", 23): "C: gcc 12 only warns about the implicit declaration of the undeclared "
                                         "cuCtxCreate_v3, so `-c` succeeds; whether the link fails is not checked here",
    ("removals/CM506-driver-prefetch-advise", 5): "a call in a macro body (`WARM`): EDG reports the error where the "
                                                  "macro is used (line 34, `WARM(p, bytes, dev, s)`)",
    ("catalog/manual-findings", 9): "device code: nvcc stops at the host-side errors before the device pass "
                                    "(CM532 is proven by test_build_break_proof.py)",
}
_GONE = re.compile(r'error: (?:identifier "([^"]+)" is undefined|(?:namespace|class) "[^"]*" has no member "([^"]+)")')


def _build_breaks_are_errors(case, src, output: str) -> None:
    """Every finding of a rule whose break is a signature or a use (BY_FIXTURE in test_build_break_proof.py) that
    is classed `build-break` in a fixture's `before` file sits on lines the compiler rejects (issue 11: build
    breaks proven by the compiler). Rules about names that are gone are proven name by name there. EDG reports an
    undefined name once per file, so a line whose name was reported undefined elsewhere counts as rejected."""
    from .test_build_break_proof import BY_FIXTURE

    res = engine_for(case).scan_bytes(src, src.read_bytes())
    lines = _error_lines(output, src)
    gone = {g for m in _GONE.finditer(output) for g in m.groups() if g}
    bad = []
    for f in res.findings:
        if f.cost.impact != "build-break" or f.rule_id not in BY_FIXTURE or (case.name, f.line) in UNPROVABLE:
            continue
        if any(ln in lines for ln in range(f.line, f.end_line + 1)):
            continue
        if any(re.search(r"\b" + re.escape(n) + r"\b", f.snippet or "") for n in gone):
            continue
        bad.append(f"{f.rule_id} line {f.line}: {f.message[:120]}")
    assert not bad, f"{src}: build-break findings on lines nvcc 13.0 accepts:\n" + "\n".join(bad) + "\n" + output[-3000:]
