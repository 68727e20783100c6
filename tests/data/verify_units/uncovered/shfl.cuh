// Two programs share this header; only uses_both.cu reaches the inline PTX without .sync (CM530, manual).
__device__ __forceinline__ double shfl_up_pair(double v, unsigned d) {
  int2 p = make_int2(__double2loint(v), __double2hiint(v));
  p.x = __shfl_up(p.x, d);
  p.y = __shfl_up(p.y, d);
  return __hiloint2double(p.y, p.x);
}
__device__ __forceinline__ int scan_add(int x, int off) {
  int r; asm("{ .reg .s32 t; .reg .pred p; shfl.up.b32 t|p, %1, %2, 0; @p add.s32 t, t, %1; mov.s32 %0, t; }" : "=r"(r) : "r"(x), "r"(off));
  return r; }
