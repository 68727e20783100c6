// CM304: reading a thrust::device_vector element by element from a host loop (`sum += v[i]`): each access is
// a cudaMemcpy of one element plus a synchronization. The alternative copies the vector to the host once
// (thrust::copy into a host_vector) and loops over the copy. Unit: one element.
#include "bench_common.cuh"

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/host_vector.h>

int main() {
  const int n = bench::scaled(4096);
  const int repeats = 7;
  thrust::device_vector<float> v(n, 1.0f);
  thrust::host_vector<float> h(n);
  double sink = 0;

  auto bad = [&] {
    double t0 = bench::now_us();
    float sum = 0;
    for (int i = 0; i < n; ++i) sum += v[i];
    sink += sum;
    return bench::now_us() - t0;
  };
  auto good = [&] {
    double t0 = bench::now_us();
    thrust::copy(v.begin(), v.end(), h.begin());
    float sum = 0;
    for (int i = 0; i < n; ++i) sum += h[i];
    sink += sum;
    return bench::now_us() - t0;
  };
  auto r = bench::compare(bad, good, n, repeats);
  char extra[96];
  std::snprintf(extra, sizeof extra, "\"elements\": %d, \"checksum\": %.1f", n, sink);
  bench::emit("device_vector_access", "device-vector-element-access", "\"CM304\"", "per element", r,
              "sum += v[i] over a thrust::device_vector in a host loop",
              "thrust::copy to a host_vector once, then the loop", n, repeats, extra);
  return 0;
}
