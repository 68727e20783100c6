// CM102: kernel launches on the legacy default stream (`k<<<g, b>>>`) from several host threads, versus the
// same launches on each thread's own stream (`k<<<g, b, 0, cudaStreamPerThread>>>`, what `cudamigrate fix`
// writes). The legacy stream is one stream for the whole process, so the threads' small kernels run one at a
// time; per-thread streams let them run side by side. Unit: one launch (wall time / total launches).
#include "bench_common.cuh"

int main() {
  const int threads = 4;
  const int iters = bench::scaled(2000);  // launches per thread per round
  const int repeats = 7;
  const int blocks = 4;                   // a small kernel: it leaves most SMs idle, as such kernels do
  const double kernel_us = 8.0;
  const long long cycles = bench::cycles_for_us(kernel_us);
  std::vector<float *> buf(threads);
  for (auto &b : buf) CK(cudaMalloc(&b, blocks * sizeof(float)));

  auto round = [&](bool legacy) {
    return bench::run_threads(threads, [&](int t) {
      for (int i = 0; i < iters; ++i) {
        if (legacy)
          bench::spin<<<blocks, 128>>>(buf[t], cycles);
        else
          bench::spin<<<blocks, 128, 0, cudaStreamPerThread>>>(buf[t], cycles);
      }
      CK(cudaGetLastError());
    });
  };
  auto r = bench::compare([&] { return round(true); }, [&] { return round(false); }, threads * iters, repeats);
  char extra[160];
  std::snprintf(extra, sizeof extra, "\"threads\": %d, \"kernel_us\": %.1f, \"blocks\": %d", threads, kernel_us, blocks);
  bench::emit("legacy_stream_launch", "legacy-stream-launch", "\"CM102\"", "per launch", r,
              "k<<<g,b>>> on the legacy default stream from 4 host threads",
              "k<<<g,b,0,cudaStreamPerThread>>> from the same threads", threads * iters, repeats, extra);
  for (auto b : buf) cudaFree(b);
  return 0;
}
