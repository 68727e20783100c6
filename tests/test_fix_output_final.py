"""Generated code is final (issue 31): nothing `fix` writes is reported by the next scan, so the findings a fix
made plus those it left equal the first scan's."""

from __future__ import annotations

from .conftest import FIXTURES
from .helpers import fix_code, scan_code

RULES = ["CM503", "CM410"]
CASE = FIXTURES / "removals" / "CM503-deviceprop-removed-fields--one-query" / "before.cpp"


def test_compat_guard_the_fix_writes_is_not_a_decided_version_guard():
    code = CASE.read_text()
    first = scan_code(code, RULES, "dq.cpp")
    fixed = fix_code(code, RULES, "dq.cpp")
    assert "#if CUDART_VERSION < 13000  /* cudamigrate: compat guard */" in fixed
    assert scan_code(fixed, RULES, "dq.cpp") == [] and len(first) == 4


def test_compat_guard_goes_once_a_minimum_toolkit_is_declared():
    fixed = fix_code(CASE.read_text(), RULES, "dq.cpp")
    later = fix_code(fixed, RULES, "dq.cpp", keep_compat=(13, 0))
    assert "cooperativeMultiDeviceLaunch" not in later and "#if" not in later


def test_a_hand_written_guard_is_still_reported():
    code = "#include <cuda_runtime.h>\nint f() {\n#if CUDART_VERSION < 13000\n  return 1;\n#endif\n  return 0;\n}\n"
    assert [f.rule_id for f in scan_code(code, RULES, "g.cpp")] == ["CM410"]


def test_one_attribute_query_per_field_per_block():
    fixed = fix_code(CASE.read_text(), RULES, "dq.cpp")
    # two reads in one block share a query; a read after the struct is filled again (device 0) gets its own
    assert fixed.count("cudaDevAttrMemoryClockRate, dev)") == 1 and fixed.count("cudaDevAttrMemoryClockRate, 0)") == 1


def test_a_write_between_the_reads_keeps_two_queries():
    code = ("#include <cuda_runtime.h>\nint f(int dev) {\n  cudaDeviceProp p;\n  cudaGetDeviceProperties(&p, dev);\n"
            "  int a = p.clockRate;\n  dev = dev + 1;\n  int b = p.clockRate;\n  return a + b;\n}\n")
    fixed = fix_code(code, ["CM503"], "w.cpp")
    assert fixed.count("cudaDeviceGetAttribute(") == 2, fixed
