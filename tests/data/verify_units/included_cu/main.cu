// A .cu included by another (Parboil's, Rodinia's layout): kernel.cu uses Node, which main.cu declares first.
#include <cuda_runtime.h>
typedef int2 Node;
#include "kernel.cu"
int main() {
  Node *d = 0;
  cudaBindTexture(0, ref, d, sizeof(Node) * 4);
  k<<<1, 1>>>(0);
  return 0;
}
