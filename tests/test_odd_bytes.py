"""Invalid UTF-8 inside names, aliases, strings and comments never loses a finding (issue 24, item 3).

Every place that reads node text or a regex group of the file must read it the way the file is read (invalid
bytes replaced, never raised): a UnicodeDecodeError in one matcher made the whole rule's findings for the file
vanish, build breaks included, with exit 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamigrate.toolcheck.fixtures import load_cases

from .conftest import FIXTURES
from .helpers import engine_for

# appended after the fixture's own code, so the original findings keep their lines
ODD = [
    b"\ntypedef Clocks C\x8fockAlias;\n",  # a typedef alias name
    b"\nusing V\xff = thrust::device_vector<float>;\n",  # a using alias name
    b"\ntypedef thrust::device_vector<\xc3> W;\n",  # inside the aliased type
    b"\nnamespace n\xe2\x82 = thrust;\nusing namespace thr\xffust;\nusing thrust::red\xfeuce;\n",
    b'\nstatic const char *s_ = "\xff\xfe\xed\xa0\x80";\n',  # a string literal
    b"\n// comment \xc3\x28 /* \x8f */\n",  # comments
    b"\nint x\x8f = 0; void g\xff() { cudaThreadSynchronize\xff(); }\n",  # identifiers
    b"\n#define M\xff 1\n#include \"h\xff.h\"\n",  # preprocessor names
]


def _cases():
    seen = set()
    for case in load_cases(FIXTURES):
        if case.before is None or case.semantic or case.dir.name in seen:
            continue
        seen.add(case.dir.name)
        yield case


CASES = list(_cases())


@pytest.mark.parametrize("case", CASES, ids=[c.dir.name for c in CASES])
def test_every_rule_keeps_its_findings_next_to_invalid_utf8(case):
    eng = engine_for(select=["ALL"])
    path = Path("t" + case.before.suffix)
    data = case.before.read_bytes()
    base = eng.scan_bytes(path, data)
    want = {(f.rule_id, f.line, f.column) for f in base.findings}
    for odd in ODD:
        res = eng.scan_bytes(path, data + odd)
        assert not [e for e in res.errors if "internal error" in e or "Error" in e], (odd, res.errors)
        got = {(f.rule_id, f.line, f.column) for f in res.findings}
        assert want <= got, (odd, sorted(want - got))


def test_clockrate_read_next_to_an_odd_alias_is_reported():
    """The issue's example: before, `typedef Clocks C\\x8fockAlias;` made CM503 raise and report nothing."""
    code = b"typedef Clocks C\x8fockAlias;\nint f(cudaDeviceProp p) { return p.clockRate; }\n"
    res = engine_for(select=["CM503"]).scan_bytes(Path("t.cu"), code)
    assert not res.errors, res.errors
    assert [(f.rule_id, f.line) for f in res.findings] == [("CM503", 2)]


def test_thrust_rules_next_to_an_odd_alias():
    code = (b"#include <thrust/device_vector.h>\ntypedef thrust::device_vector<float> D\x8fV;\n"
            b"float f(thrust::device_vector<float> &v) { float s = 0; for (int i = 0; i < 9; ++i) s += v[i]; return s; }\n")
    res = engine_for(select=["CM301", "CM302", "CM304", "CM305"]).scan_bytes(Path("t.cu"), code)
    assert not res.errors, res.errors
    assert res.findings
