#include "shfl.cuh"
__global__ void both(double *a, int *b) {
  a[threadIdx.x] = shfl_up_pair(a[threadIdx.x], 1);
  b[threadIdx.x] = scan_add(b[threadIdx.x], 1);
}
