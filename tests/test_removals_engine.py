"""Engine pieces added for the removal rules: dead version branches, `identifier`, `case` and
`base_specifier` edit targets, `type_matches` conditions, the `filled_struct_field` and `namespace_use` builtins."""

from __future__ import annotations

from cudamigrate.scan.engine import Options

from .helpers import assert_findings, fix_code


def test_dead_version_branches_are_not_flagged():
    code = """#include <cuda_runtime.h>
void f() {
#if CUDART_VERSION >= 13000
  cudaDeviceSynchronize();
#else
  cudaThreadSynchronize();
#endif
#if CUDART_VERSION < 12000
  cudaThreadExit();
#elif defined(FOO)
  cudaThreadExit();
#endif
#ifdef LEGACY
  cudaThreadSynchronize();
#endif
}
"""
    assert_findings(code, ["CM501"], [11, 14])


def test_identifier_target_keeps_qualification():
    assert fix_code("void f() { ::cudaThreadSynchronize(); }\n", ["CM501"]) == "void f() { ::cudaDeviceSynchronize(); }\n"


def test_case_label_removal_keeps_fallthrough_body():
    code = """#include <cufft.h>
const char *s(cufftResult r) {
  switch (r) {
    case CUFFT_SUCCESS: return "ok";
    case CUFFT_PARSE_ERROR:
      return "parse";
    case CUFFT_INVALID_PLAN:
    case CUFFT_LICENSE_ERROR:
      return "plan";
    case CUFFT_INCOMPLETE_PARAMETER_LIST:
    case CUFFT_EXEC_FAILED:
      return "exec";
    default: return "?";
  }
}
"""
    out = fix_code(code, ["CM512"])
    assert "parse" not in out  # its own body goes with it
    assert 'case CUFFT_INVALID_PLAN:\n      return "plan";' in out  # fall-through body stays with the previous label
    # an empty case falls into the next label: removing it alone keeps that label's body
    assert 'case CUFFT_EXEC_FAILED:\n      return "exec";' in out
    assert "LICENSE" not in out and "INCOMPLETE" not in out


def test_cufft_uses_outside_case_take_the_old_value():
    """`if (res == CUFFT_PARSE_ERROR)` keeps comparing against 0xC, the value the enumerator had (safe fix)."""
    code = ("#include <cufft.h>\nbool f(cufftResult r) { if (r == CUFFT_PARSE_ERROR || ::CUFFT_LICENSE_ERROR != r)"
            " return true; return r == CUFFT_INCOMPLETE_PARAMETER_LIST; }\n")
    found = assert_findings(code, ["CM512"], [2, 2, 2])
    assert all(f.fix is not None and f.fix.applicability == "safe" for f in found)
    out = fix_code(code, ["CM512"])
    assert "r == ((cufftResult)0xC /* CUFFT_PARSE_ERROR, removed in cuFFT 12 */)" in out
    assert "((cufftResult)0xF /* CUFFT_LICENSE_ERROR, removed in cuFFT 12 */) != r" in out
    assert "r == ((cufftResult)0xA /* CUFFT_INCOMPLETE_PARAMETER_LIST, removed in cuFFT 12 */)" in out
    assert fix_code(out, ["CM512"]) == out


def test_base_specifier_removal():
    code = ("#include <thrust/functional.h>\n"
            "struct A : public thrust::unary_function<int, int> {};\n"
            "struct B : Base, thrust::binary_function<int, int, int> {};\n"
            "struct C : thrust::binary_function<int, int, int>, private Base {};\n")
    out = fix_code(code, ["CM517"])
    assert "struct A {};" in out
    assert "struct B : Base {};" in out
    assert "struct C : private Base {};" in out


def test_prefetch_location_argument_is_not_flagged():
    code = """#include <cuda_runtime.h>
void f(char *p, cudaMemLocation where, int dev, cudaStream_t s) {
  cudaMemPrefetchAsync(p, 16, where, 0);
  cudaMemPrefetchAsync(p, 16, dev, s);
}
"""
    assert_findings(code, ["CM504"], [(4, "CM504")])


def test_device_prop_needs_known_device_for_a_fix():
    code = """#include <cuda_runtime.h>
int f(int d) {
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, d);
  return p.clockRate;
}
int g(const cudaDeviceProp &p) { return p.clockRate; }
"""
    fixes = {f.line: f.fix for f in assert_findings(code, ["CM503"], [5, 7])}
    assert fixes[5] is not None and "cudaDevAttrClockRate, d)" in fixes[5].edits[0].text
    assert fixes[7] is None


def test_namespace_use_through_alias():
    code = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void k() { __shared__ cg::experimental::block_tile_memory<4, 256> m; }
namespace other { namespace experimental { int x; } }
int y = other::experimental::x;
"""
    assert_findings(code, ["CM520"], [(3, "CM520")])


def test_keep_compat_option_is_read_from_options():
    assert Options(keep_compat=(12, 0)).keep_compat == (12, 0)
