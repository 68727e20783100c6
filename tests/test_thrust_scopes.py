"""Thrust rules' scopes (CM301, CM304, CM305): which containers are device ones (aliases, parameters, pointers,
inner scopes), which loop parts repeat, and universal_vector's plain memory."""

from __future__ import annotations

from .helpers import assert_findings, fix_code, scan_code


THRUST = """
#include <thrust/device_vector.h>
using dv = thrust::device_vector<int>;
typedef dv dv2;
static void host(std::vector<int> &v) { for (int i = 0; i < 2; ++i) thrust::sort(v.begin(), v.end()); }
static void dev(dv2 &v, thrust::device_vector<int> *p) {
  for (int i = 0; i < 2; ++i) thrust::sort(v.begin(), v.end());
  for (int i = 0; i < 2; ++i) thrust::sort(p->begin(), p->end());
}
int main() {
  dv v(8);
  for (int i = 0; i < 2; ++i) thrust::sort(v.begin() + 1, v.end());
  for (int i = 0; i < 2; ++i) thrust::sort(thrust::raw_pointer_cast(v.data()), thrust::raw_pointer_cast(v.data()) + 8);
  {
    std::vector<int> v(8);
    for (int i = 0; i < 2; ++i) thrust::sort(v.begin(), v.end());
  }
  return 0;
}
"""


def test_arg_type_follows_aliases_parameters_and_scopes():
    got = sorted(f.line for f in scan_code(THRUST, ["CM301"], "t.cu"))
    # dev(): alias-of-alias parameter and pointer parameter; main(): `dv v(8)` (parsed like a function declaration)
    # and raw_pointer_cast(v.data()); not host()'s std::vector, and not the inner block's std::vector `v`
    assert got == [7, 8, 12, 13], got


def test_thrust_loop_scopes():
    src = """
#include <thrust/device_vector.h>
int main() {
  thrust::device_vector<int> d(4);
  int s = 0;
  for (int i = d[0]; i < 4; ++i) s += i;
  for (int x : d) s += x;
  for (int i = 0; i < 4; ++i) { s += d[i]; thrust::device_vector<int> *p = &d; static thrust::device_vector<int> k(2); }
  return s;
}
"""
    assert_findings(src, ["CM304", "CM305"], [(8, "CM304")], "l.cu")


def test_universal_vector_elements_are_plain_memory():
    src = """
#include <thrust/universal_vector.h>
int main() {
  thrust::universal_vector<int> u(4);
  int s = 0;
  for (int i = 0; i < 4; ++i) { s += u[i]; thrust::universal_vector<int> t(2); }
  return s;
}
"""
    assert_findings(src, ["CM304", "CM305"], [(6, "CM305")], "u.cu")


def test_device_pointers_count_as_device_iterators():
    src = """
#include <thrust/device_ptr.h>
#include <thrust/sort.h>
void f(int *raw, int n) {
  thrust::device_ptr<int> dp = thrust::device_pointer_cast(raw);
  for (int i = 0; i < 2; ++i) thrust::sort(dp, dp + n);
  for (int i = 0; i < 2; ++i) thrust::sort(thrust::device_pointer_cast(raw), thrust::device_pointer_cast(raw) + n);
  for (int i = 0; i < 2; ++i) thrust::sort(raw, raw + n);
}
"""
    assert_findings(src, ["CM301"], [6, 7], "p.cu")
    fixed = fix_code(src, ["CM301"], "p.cu")
    assert "thrust::sort(thrust::cuda::par_nosync, dp, dp + n);" in fixed
    assert "thrust::sort(thrust::cuda::par_nosync, thrust::device_pointer_cast(raw)," in fixed
    assert "thrust::sort(raw, raw + n);" in fixed
