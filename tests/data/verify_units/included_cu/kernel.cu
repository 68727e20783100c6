texture<Node, 1, cudaReadModeElementType> ref;
__global__ void k(int *out) {
  Node n = tex1Dfetch(ref, 0);
  if (out) *out = n.x;
}
