// CM303: thrust::reduce inside a host loop. It returns its value to the host, so every iteration launches,
// waits and copies back; the alternative computes all results into device memory with cub::DeviceReduce on a
// stream (temporary storage allocated once) and copies them back once. Unit: one reduction.
#include "bench_common.cuh"

#include <cub/device/device_reduce.cuh>
#include <thrust/device_vector.h>
#include <thrust/reduce.h>

int main() {
  const int n = 1 << 18;
  const int iters = bench::scaled(1000);
  const int repeats = 7;
  thrust::device_vector<float> v(n, 1.0f);
  thrust::device_vector<float> out(iters);
  std::vector<float> host(iters);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const float *in = thrust::raw_pointer_cast(v.data());
  float *d_out = thrust::raw_pointer_cast(out.data());
  size_t temp_bytes = 0;
  CK(cub::DeviceReduce::Sum(nullptr, temp_bytes, in, d_out, n, s));
  void *temp = nullptr;
  CK(cudaMalloc(&temp, temp_bytes));
  double sink = 0;

  auto bad = [&] {
    double t0 = bench::now_us();
    for (int i = 0; i < iters; ++i) host[i] = thrust::reduce(v.begin(), v.end(), 0.0f);
    return bench::now_us() - t0;
  };
  auto good = [&] {
    double t0 = bench::now_us();
    for (int i = 0; i < iters; ++i) CK(cub::DeviceReduce::Sum(temp, temp_bytes, in, d_out + i, n, s));
    CK(cudaMemcpyAsync(host.data(), d_out, iters * sizeof(float), cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    return bench::now_us() - t0;
  };
  auto r = bench::compare(bad, good, iters, repeats);
  for (float h : host) sink += h;
  char extra[96];
  std::snprintf(extra, sizeof extra, "\"elements\": %d, \"checksum\": %.1f", n, sink);
  bench::emit("thrust_reduce_loop", "thrust-blocking-in-loop", "\"CM303\"", "per reduction", r,
              "x = thrust::reduce(...) in a host loop (launch, sync, copy back per iteration)",
              "cub::DeviceReduce::Sum into device memory on a stream, one copy back", iters, repeats, extra);
  cudaFree(temp);
  cudaStreamDestroy(s);
  return 0;
}
