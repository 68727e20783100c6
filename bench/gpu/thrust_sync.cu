// CM301/CM302: Thrust algorithms with the default policy (or thrust::device / thrust::cuda::par) end with a
// stream synchronization; thrust::cuda::par_nosync.on(s) queues them and the host synchronizes once.
// Workload: a pipeline of thrust::transform (saxpy-like) and thrust::sort calls on 64 Ki-element vectors, as in
// an iterative solver step. Unit: one Thrust call (wall time of the round / calls).
#include "bench_common.cuh"

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform.h>

struct axpy {
  float a;
  __host__ __device__ float operator()(float x, float y) const { return a * x + y; }
};

int main() {
  const int n = 1 << 16;
  const int iters = bench::scaled(400);  // transform+transform+sort triples per round
  const int repeats = 7;
  thrust::device_vector<float> x(n, 1.0f), y(n, 2.0f);
  thrust::device_vector<unsigned> keys(n);
  thrust::sequence(keys.begin(), keys.end(), 0u);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  auto bad = [&] {
    double t0 = bench::now_us();
    for (int i = 0; i < iters; ++i) {
      thrust::transform(x.begin(), x.end(), y.begin(), y.begin(), axpy{0.5f});  // default policy: synchronizes
      thrust::transform(y.begin(), y.end(), x.begin(), x.begin(), axpy{0.25f});
      thrust::sort(keys.begin(), keys.end());
    }
    CK(cudaDeviceSynchronize());
    return bench::now_us() - t0;
  };
  auto good = [&] {
    double t0 = bench::now_us();
    auto pol = thrust::cuda::par_nosync.on(s);
    for (int i = 0; i < iters; ++i) {
      thrust::transform(pol, x.begin(), x.end(), y.begin(), y.begin(), axpy{0.5f});
      thrust::transform(pol, y.begin(), y.end(), x.begin(), x.begin(), axpy{0.25f});
      thrust::sort(pol, keys.begin(), keys.end());
    }
    CK(cudaStreamSynchronize(s));
    return bench::now_us() - t0;
  };
  auto r = bench::compare(bad, good, 3 * iters, repeats);
  char extra[80];
  std::snprintf(extra, sizeof extra, "\"elements\": %d", n);
  bench::emit("thrust_sync", "thrust-implicit-sync", "\"CM301\", \"CM302\"", "per Thrust call", r,
              "thrust::transform/sort with the default policy (synchronizes after each call)",
              "the same calls with thrust::cuda::par_nosync.on(s), one sync at the end", 3 * iters, repeats, extra);
  cudaStreamDestroy(s);
  return 0;
}
