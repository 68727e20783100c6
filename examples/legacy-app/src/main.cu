#include "common.h"

void run_kernels(float *d, float *sum, int n, cudaStream_t side);

int main() {
  const int n = 1 << 20;
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s at %d kHz\n", prop.name, prop.clockRate);

  float *h, *d, *sum;
  cudaStream_t side;
  CUDA_CHECK(cudaStreamCreate(&side));
  CUDA_CHECK(cudaMallocHost(&h, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d, n * sizeof(float)));
  CUDA_CHECK(cudaMallocManaged(&sum, sizeof(float)));
  for (int i = 0; i < n; ++i) h[i] = 1.0f;
  CUDA_CHECK(cudaMemcpyAsync(d, h, n * sizeof(float), cudaMemcpyHostToDevice, 0));
  CUDA_CHECK(cudaMemPrefetchAsync(sum, sizeof(float), 0, side));
  run_kernels(d, sum, n, side);
  std::printf("sum=%f\n", *sum);
  CUDA_CHECK(cudaThreadExit());
  return 0;
}
