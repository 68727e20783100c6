#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                   \
  do {                                                                     \
    cudaError_t e_ = (call);                                               \
    if (e_ != cudaSuccess) {                                               \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,              \
                   cudaGetErrorString(e_));                                \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)

#if CUDA_VERSION >= 9000
#define WARP_SUM(v) warp_sum_sync(v)
#else
#define WARP_SUM(v) warp_sum_legacy(v)
#endif

void gemm(int n, const float *a, const float *b, float *c);
double thrust_stats(const float *d, int n, int rounds);
int jit_compile(const char *src);
