// CM305: a thrust::device_vector constructed inside a host loop: every iteration allocates (cudaMalloc),
// fills (a kernel + synchronization) and frees (cudaFree, which synchronizes the device). The alternative
// allocates once before the loop and refills the buffer (same algorithms, same default policy, so only the
// allocation differs). Unit: one iteration.
#include "bench_common.cuh"

#include <thrust/device_vector.h>
#include <thrust/fill.h>
#include <thrust/transform.h>

struct twice {
  __host__ __device__ float operator()(float x) const { return 2.0f * x; }
};

int main() {
  const int n = 1 << 18;
  const int iters = bench::scaled(500);
  const int repeats = 7;
  thrust::device_vector<float> src(n, 1.0f), dst(n);

  auto bad = [&] {
    double t0 = bench::now_us();
    for (int i = 0; i < iters; ++i) {
      thrust::device_vector<float> tmp(n, 0.0f);
      thrust::transform(src.begin(), src.end(), tmp.begin(), twice());
      thrust::transform(tmp.begin(), tmp.end(), dst.begin(), twice());
    }
    CK(cudaDeviceSynchronize());
    return bench::now_us() - t0;
  };
  thrust::device_vector<float> tmp(n);
  auto good = [&] {
    double t0 = bench::now_us();
    for (int i = 0; i < iters; ++i) {
      thrust::fill(tmp.begin(), tmp.end(), 0.0f);
      thrust::transform(src.begin(), src.end(), tmp.begin(), twice());
      thrust::transform(tmp.begin(), tmp.end(), dst.begin(), twice());
    }
    CK(cudaDeviceSynchronize());
    return bench::now_us() - t0;
  };
  auto r = bench::compare(bad, good, iters, repeats);
  char extra[64];
  std::snprintf(extra, sizeof extra, "\"elements\": %d", n);
  bench::emit("device_vector_alloc", "device-vector-alloc-in-loop", "\"CM305\"", "per loop iteration", r,
              "thrust::device_vector<float> tmp(n) constructed in the loop body",
              "one buffer allocated before the loop and refilled", iters, repeats, extra);
  return 0;
}
