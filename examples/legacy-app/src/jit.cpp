#include <nvrtc.h>
#include <vector>
#include "common.h"

int jit_compile(const char *src) {
  nvrtcProgram prog;
  nvrtcCreateProgram(&prog, src, "jit.cu", 0, nullptr, nullptr);
  const char *opts[] = {"--gpu-architecture=compute_60", "-D__CUDACC_VER_MAJOR__=10"};
  nvrtcCompileProgram(prog, 2, opts);
  size_t size = 0;
  nvrtcGetNVVMSize(prog, &size);
  std::vector<char> ir(size);
  nvrtcGetNVVM(prog, ir.data());
  nvrtcDestroyProgram(&prog);
  return (int)size;
}
