// Compatibility shim for building legacy CUDA code with CUDA 13.0 (the "original" side of
// scripts/device_programs.sh, SHIM=scripts/legacy_shim.h): the removed runtime names mapped to their one-for-one
// replacements, the removed warp shuffles to their _sync forms with a full mask (right only where whole warps
// execute them: the original legacy semantics on pre-Volta GPUs).
#pragma once
#include <cuda_runtime.h>
#define cudaThreadSynchronize cudaDeviceSynchronize
#define cudaThreadExit cudaDeviceReset
#define cudaThreadSetCacheConfig cudaDeviceSetCacheConfig
#define cudaThreadGetLimit cudaDeviceGetLimit
#define cudaThreadSetLimit cudaDeviceSetLimit
#define __shfl(v, l, ...) __shfl_sync(0xffffffffu, v, l, ##__VA_ARGS__)
#define __shfl_up(v, d, ...) __shfl_up_sync(0xffffffffu, v, d, ##__VA_ARGS__)
#define __shfl_down(v, d, ...) __shfl_down_sync(0xffffffffu, v, d, ##__VA_ARGS__)
#define __shfl_xor(v, m, ...) __shfl_xor_sync(0xffffffffu, v, m, ##__VA_ARGS__)
