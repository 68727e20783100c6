#include "common.h"

__device__ float warp_sum_legacy(float v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_down(v, off);
  return v;
}

__global__ void reduce_rows(const float *x, float *out, int n) {
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  v = warp_sum_legacy(v);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}

__global__ void scale(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = __saturatef(x[i] * a);
}

void run_kernels(float *d, float *sum, int n, cudaStream_t side) {
  reduce_rows<<<n / 256, 256>>>(d, sum, n);
  scale<<<n / 256, 256, 0, side>>>(d, 0.5f, n);
  CUDA_CHECK(cudaThreadSynchronize());
}
