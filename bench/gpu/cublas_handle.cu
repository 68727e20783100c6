// cuBLAS handle created and destroyed around every call (cublasCreate / call / cublasDestroy in a function
// that is called repeatedly) versus one handle created once and reused. cublasCreate allocates workspace and
// device resources and cublasDestroy synchronizes. Workload: a 128x128 SGEMM per call. Unit: one call.
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
  const int n = 128;
  const int iters = bench::scaled(100);
  const int repeats = 7;
  float *a, *b, *c;
  CK(cudaMalloc(&a, n * n * sizeof(float)));
  CK(cudaMalloc(&b, n * n * sizeof(float)));
  CK(cudaMalloc(&c, n * n * sizeof(float)));
  CK(cudaMemset(a, 0, n * n * sizeof(float)));
  CK(cudaMemset(b, 0, n * n * sizeof(float)));
  const float one = 1.0f, zero = 0.0f;
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  auto gemm = [&](cublasHandle_t h) {
    CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
  };
  auto bad = [&] {
    double t0 = bench::now_us();
    for (int i = 0; i < iters; ++i) {
      cublasHandle_t h;
      CB(cublasCreate(&h));
      CB(cublasSetStream(h, s));
      gemm(h);
      CB(cublasDestroy(h));
    }
    CK(cudaStreamSynchronize(s));
    return bench::now_us() - t0;
  };
  cublasHandle_t shared;
  CB(cublasCreate(&shared));
  CB(cublasSetStream(shared, s));
  auto good = [&] {
    double t0 = bench::now_us();
    for (int i = 0; i < iters; ++i) gemm(shared);
    CK(cudaStreamSynchronize(s));
    return bench::now_us() - t0;
  };
  auto r = bench::compare(bad, good, iters, repeats);
  char extra[64];
  std::snprintf(extra, sizeof extra, "\"gemm_n\": %d", n);
  bench::emit("cublas_handle", "cublas-handle-per-call", "", "per call", r,
              "cublasCreate + cublasSgemm + cublasDestroy per call",
              "one cublasHandle_t created once and reused", iters, repeats, extra);
  CB(cublasDestroy(shared));
  cudaStreamDestroy(s);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return 0;
}
