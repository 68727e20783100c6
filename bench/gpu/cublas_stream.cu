// cuBLAS handle left on the legacy default stream (no cublasSetStream) in a program whose other work runs on
// created streams. One host thread issues, per iteration, a small kernel on each of 3 worker streams
// (cudaStreamCreate: blocking streams) and a 256x256 SGEMM. Bad: the SGEMM runs on the legacy stream, which
// waits for all worker streams and blocks them until it finishes, so nothing overlaps. Good: the handle is bound
// to its own stream with cublasSetStream. Unit: one iteration (3 kernels + 1 SGEMM).
#include "bench_common.cuh"

#include <cublas_v2.h>

#define CB(call)                                                                  \
  do {                                                                            \
    cublasStatus_t st_ = (call);                                                  \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                           \
      std::fprintf(stderr, "cuBLAS error %d at %s:%d\n", (int)st_, __FILE__, __LINE__); \
      std::exit(2);                                                               \
    }                                                                             \
  } while (0)

int main() {
  const int n = 256;
  const int workers = 3;
  const int iters = bench::scaled(1000);
  const int repeats = 7;
  const int blocks = 8;
  const double kernel_us = 15.0;
  const long long cycles = bench::cycles_for_us(kernel_us);
  float *a, *b, *c, *k;
  CK(cudaMalloc(&a, n * n * sizeof(float)));
  CK(cudaMalloc(&b, n * n * sizeof(float)));
  CK(cudaMalloc(&c, n * n * sizeof(float)));
  CK(cudaMalloc(&k, workers * blocks * sizeof(float)));
  CK(cudaMemset(a, 0, n * n * sizeof(float)));
  CK(cudaMemset(b, 0, n * n * sizeof(float)));
  const float one = 1.0f, zero = 0.0f;
  std::vector<cudaStream_t> ws(workers);
  for (auto &w : ws) CK(cudaStreamCreate(&w));
  cudaStream_t mine;
  CK(cudaStreamCreate(&mine));
  cublasHandle_t legacy_h, bound_h;
  CB(cublasCreate(&legacy_h));  // never bound: cuBLAS runs on the NULL (legacy default) stream
  CB(cublasCreate(&bound_h));
  CB(cublasSetStream(bound_h, mine));

  auto round = [&](cublasHandle_t h) {
    double t0 = bench::now_us();
    for (int i = 0; i < iters; ++i) {
      for (int w = 0; w < workers; ++w) bench::spin<<<blocks, 128, 0, ws[w]>>>(k + w * blocks, cycles);
      CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
    }
    CK(cudaDeviceSynchronize());
    return bench::now_us() - t0;
  };
  auto r = bench::compare([&] { return round(legacy_h); }, [&] { return round(bound_h); }, iters, repeats);
  char extra[128];
  std::snprintf(extra, sizeof extra, "\"gemm_n\": %d, \"worker_streams\": %d, \"kernel_us\": %.1f", n, workers, kernel_us);
  bench::emit("cublas_stream", "cublas-unbound-stream", "", "per iteration (3 kernels + 1 SGEMM)", r,
              "cuBLAS handle without cublasSetStream (legacy stream) next to 3 busy streams",
              "cublasSetStream(handle, own stream)", iters, repeats, extra);
  CB(cublasDestroy(legacy_h));
  CB(cublasDestroy(bound_h));
  for (auto w : ws) cudaStreamDestroy(w);
  cudaStreamDestroy(mine);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaFree(k);
  return 0;
}
