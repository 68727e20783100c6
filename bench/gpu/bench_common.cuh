// Shared helpers for the calibration micro-benchmarks (bench/gpu/*.cu).
//
// Every benchmark measures a "bad" pattern (what a performance rule flags) and the "good" pattern (what the
// fix writes, or the documented alternative) under the same workload: one warm-up round of each, then
// `repeats` rounds alternating bad/good, each round timing `iters` units of work from the first call until the
// GPU is idle again (host wall clock around the round plus a final synchronization, or cudaEvents where the
// round runs on one stream). The per-unit cost of each pattern is the median over the rounds.
// Each program prints exactly one JSON line on stdout; diagnostics go to stderr.
//
// CUDAMIGRATE_BENCH_SCALE (float, default 1) scales the iteration counts, e.g. 0.1 for a quick check.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#define CK(call)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)

namespace bench {

inline double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline int scaled(int n) {
  const char *s = std::getenv("CUDAMIGRATE_BENCH_SCALE");
  double f = s ? std::atof(s) : 1.0;
  if (!(f > 0)) f = 1.0;
  int v = static_cast<int>(n * f);
  return v < 1 ? 1 : v;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Busy-waits about `cycles` SM clock cycles: a kernel with a known, small duration.
__global__ void spin(float *x, long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
  if (threadIdx.x == 0) x[blockIdx.x] += 1.0f;
}

// Cycles for about `us` microseconds on device 0.
inline long long cycles_for_us(double us) {
  int khz = 0;
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  if (khz <= 0) khz = 1500000;
  return static_cast<long long>(us * khz / 1000.0);
}

// Runs `body(t)` on `threads` host threads that start together; returns wall µs until all are done and the
// device is idle.
inline double run_threads(int threads, const std::function<void(int)> &body) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      CK(cudaSetDevice(0));
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      body(t);
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  double t0 = now_us();
  go.store(true);
  for (auto &th : pool) th.join();
  CK(cudaDeviceSynchronize());
  return now_us() - t0;
}

struct Result {
  double bad_us = 0, good_us = 0;             // median per-unit cost
  double bad_min = 0, bad_max = 0, good_min = 0, good_max = 0;
};

// bad()/good() each run one round of `units` units and return its wall µs (GPU idle at the end).
inline Result compare(const std::function<double()> &bad, const std::function<double()> &good, int units,
                      int repeats) {
  bad();
  good();  // warm-up: allocations, module loading, library initialization
  std::vector<double> b, g;
  for (int r = 0; r < repeats; ++r) {
    b.push_back(bad() / units);
    g.push_back(good() / units);
  }
  Result res;
  res.bad_us = median(b);
  res.good_us = median(g);
  res.bad_min = *std::min_element(b.begin(), b.end());
  res.bad_max = *std::max_element(b.begin(), b.end());
  res.good_min = *std::min_element(g.begin(), g.end());
  res.good_max = *std::max_element(g.begin(), g.end());
  return res;
}

// One JSON line: the figures calibrate.py reads. `extra` is a JSON object body ("\"k\": v, ...") or "".
inline void emit(const char *bench, const char *key, const char *rules, const char *unit, const Result &r,
                 const char *bad_desc, const char *good_desc, int units, int repeats, const std::string &extra = "") {
  cudaDeviceProp p{};
  CK(cudaGetDeviceProperties(&p, 0));
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  double ratio = r.good_us > 0 ? r.bad_us / r.good_us : 0.0;
  std::printf(
      "{\"bench\": \"%s\", \"key\": \"%s\", \"rules\": [%s], \"unit\": \"%s\", \"bad_us\": %.3f, \"good_us\": %.3f, "
      "\"ratio\": %.3f, \"bad_range_us\": [%.3f, %.3f], \"good_range_us\": [%.3f, %.3f], \"bad\": \"%s\", "
      "\"good\": \"%s\", \"units_per_round\": %d, \"repeats\": %d, \"device\": \"%s\", \"runtime\": %d, "
      "\"driver\": %d%s%s}\n",
      bench, key, rules, unit, r.bad_us, r.good_us, ratio, r.bad_min, r.bad_max, r.good_min, r.good_max, bad_desc,
      good_desc, units, repeats, p.name, rt, drv, extra.empty() ? "" : ", ", extra.c_str());
  std::fflush(stdout);
}

}  // namespace bench
