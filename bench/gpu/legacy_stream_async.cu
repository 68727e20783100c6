// CM101: async runtime calls (cudaMemcpyAsync) left on the legacy default stream in code whose kernels run
// on created streams. Each of 4 host threads repeatedly copies 64 KiB host->device and launches a small
// kernel on its own stream (cudaStreamCreate: a blocking stream). Bad: the copy is on stream 0, which waits
// for all work on every blocking stream and makes them all wait for it, so copies and kernels of all threads
// serialize. Good: the copy goes to the thread's stream (the kernel's stream), or to cudaStreamPerThread
// (what `cudamigrate fix` writes; reported as per_thread_us). Unit: one copy+kernel iteration.
#include "bench_common.cuh"

int main() {
  const int threads = 4;
  const int iters = bench::scaled(1000);
  const int repeats = 7;
  const size_t bytes = 64 << 10;
  const int blocks = 4;
  const double kernel_us = 8.0;
  const long long cycles = bench::cycles_for_us(kernel_us);
  std::vector<float *> hbuf(threads), dbuf(threads), kbuf(threads);
  std::vector<cudaStream_t> streams(threads);
  for (int t = 0; t < threads; ++t) {
    CK(cudaMallocHost(&hbuf[t], bytes));
    CK(cudaMalloc(&dbuf[t], bytes));
    CK(cudaMalloc(&kbuf[t], blocks * sizeof(float)));
    CK(cudaStreamCreate(&streams[t]));
  }
  enum Mode { LEGACY, OWN, PER_THREAD };
  auto round = [&](Mode m) {
    return bench::run_threads(threads, [&](int t) {
      cudaStream_t s = streams[t];
      cudaStream_t cs = m == LEGACY ? (cudaStream_t)0 : (m == OWN ? s : cudaStreamPerThread);
      for (int i = 0; i < iters; ++i) {
        CK(cudaMemcpyAsync(dbuf[t], hbuf[t], bytes, cudaMemcpyHostToDevice, cs));
        bench::spin<<<blocks, 128, 0, s>>>(kbuf[t], cycles);
      }
      CK(cudaGetLastError());
    });
  };
  auto r = bench::compare([&] { return round(LEGACY); }, [&] { return round(OWN); }, threads * iters, repeats);
  std::vector<double> pt;
  for (int i = 0; i < repeats; ++i) pt.push_back(round(PER_THREAD) / (threads * iters));
  char extra[200];
  std::snprintf(extra, sizeof extra, "\"threads\": %d, \"copy_bytes\": %zu, \"kernel_us\": %.1f, \"per_thread_us\": %.3f",
                threads, bytes, kernel_us, bench::median(pt));
  bench::emit("legacy_stream_async", "legacy-stream-async", "\"CM101\"", "per copy+kernel iteration", r,
              "cudaMemcpyAsync(..., 0) next to kernels on created streams, 4 host threads",
              "cudaMemcpyAsync on the kernel's stream", threads * iters, repeats, extra);
  for (int t = 0; t < threads; ++t) {
    cudaFreeHost(hbuf[t]);
    cudaFree(dbuf[t]);
    cudaFree(kbuf[t]);
    cudaStreamDestroy(streams[t]);
  }
  return 0;
}
