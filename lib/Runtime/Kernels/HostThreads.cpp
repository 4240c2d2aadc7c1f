//===- HostThreads.cpp - the host kernels' thread pool -------------------===//
//
// A fixed pool that splits one kernel's range between its threads: the
// caller takes the first part, workers watch briefly for the next call
// before they sleep (a step's kernels follow each other within
// microseconds).
//
//===----------------------------------------------------------------------===//

#include "Kernels/HostRun.h"

using namespace zcc::runtime::device;

HostThreads::HostThreads(int threads, HostIsa isa) : loops(isa) {
  for (int i = 1; i < threads; ++i)
    workers.emplace_back([this, i] { work(i); });
}

HostThreads::~HostThreads() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
    generation.fetch_add(1, std::memory_order_release);
  }
  wake.notify_all();
  for (std::thread &worker : workers)
    worker.join();
}

namespace {
/// How long a thread watches for work before it sleeps: about 20 us.
constexpr int kWatchSpins = 4096;
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
} // namespace

void HostThreads::run(int64_t n, int64_t count, Call fn, const void *arg) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    call = fn;
    context = arg;
    total = n;
    parts = count;
    pending.store(static_cast<int>(count) - 1, std::memory_order_relaxed);
    generation.fetch_add(1, std::memory_order_release);
  }
  wake.notify_all();
  fn(arg, 0, n / count);
  for (int spin = 0; spin < kWatchSpins; ++spin) {
    if (pending.load(std::memory_order_acquire) == 0)
      return;
    relax();
  }
  std::unique_lock<std::mutex> lock(mutex);
  done.wait(lock,
            [this] { return pending.load(std::memory_order_acquire) == 0; });
}

void HostThreads::work(int index) {
  uint64_t seen = 0;
  while (true) {
    for (int spin = 0; spin < kWatchSpins &&
                       generation.load(std::memory_order_acquire) == seen;
         ++spin)
      relax();
    Call fn;
    const void *arg;
    int64_t n, count;
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] {
        return stopping || generation.load(std::memory_order_relaxed) != seen;
      });
      if (stopping)
        return;
      seen = generation.load(std::memory_order_relaxed);
      fn = call;
      arg = context;
      n = total;
      count = parts;
    }
    if (index >= count)
      continue;
    fn(arg, n * index / count, n * (index + 1) / count);
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Under the mutex, so a caller between its check and its wait
      // cannot miss it.
      std::lock_guard<std::mutex> lock(mutex);
      done.notify_one();
    }
  }
}
