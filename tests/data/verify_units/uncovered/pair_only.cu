#include "shfl.cuh"
__global__ void pair(double *a) {
  a[threadIdx.x] = shfl_up_pair(a[threadIdx.x], 1);
}
