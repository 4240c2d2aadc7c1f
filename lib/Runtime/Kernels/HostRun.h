//===- HostRun.h - the kernels' steps run on the host ------------*- C++
//-*-===//
//
// The CPU executor and the emulator run the same steps as the CUDA
// executor (DeviceProgram.h), here on the host: element kernels index by
// index, group kernels with one lane that visits its row in order (the CPU
// executor), or with the GPU's lanes per group replayed in the GPU's
// reduction order (the emulator's `gpuGroups`). Products go to BLAS.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_RUNTIME_DEVICE_HOSTRUN_H
#define ZCC_LIB_RUNTIME_DEVICE_HOSTRUN_H

#include "Kernels/DeviceProgram.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

namespace zcc::runtime::device {

/// The instruction sets the host's element and row loops are compiled for
/// (x86-64 with GCC; elsewhere only Baseline). Each gives the same bits (a
/// NaN's sign aside): the loops vectorize across elements, never reorder a
/// sum, and are compiled without contracting multiply-adds
/// (-ffp-contract=off).
enum class HostIsa { Baseline, X86_64_V3, X86_64_V4 };
/// Whether the loops have their x86-64-v3 and v4 copies: GCC 12 or later on
/// x86-64 (target attributes with `flatten`), unless ZRT_NO_HOST_ISAS (the
/// sanitized tests' build: the copies are the same source, and over half of
/// HostRun.cpp's code).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    __GNUC__ >= 12 && !defined(ZRT_NO_HOST_ISAS)
#define ZRT_HOST_ISAS 1
#endif
const char *hostIsaName(HostIsa isa); // "baseline", "x86-64-v3", ...
/// The best this CPU runs.
HostIsa bestHostIsa();
/// `name` (hostIsaName's words) when this CPU runs it; otherwise an error
/// naming what it asked for and what the CPU has.
Status parseHostIsa(std::string_view name, HostIsa &out);
/// The ZCC_HOST_ISA environment variable's choice (a lower one, to compare
/// or to measure), or bestHostIsa() when it is unset.
Status hostIsaFromEnvironment(HostIsa &out);

/// A fixed set of host threads for the CPU executor's kernels, made once at
/// load. `parallelFor` splits [0, n) into one contiguous range per thread
/// (the caller takes the first) and returns when all are done. A thread
/// that runs out of work watches for the next for a few microseconds (a
/// step's launches come back to back; waking a sleeping thread costs more
/// than many of them take), then sleeps. Each element or group is computed
/// by exactly one thread, in the same order as alone, so results do not
/// depend on the number of threads. Nothing is allocated per call.
class HostThreads {
public:
  /// `threads` including the caller; 1 runs everything on the caller. The
  /// kernels run on them use `isa`'s loops.
  explicit HostThreads(int threads, HostIsa isa = bestHostIsa());
  ~HostThreads();
  HostThreads(const HostThreads &) = delete;
  HostThreads &operator=(const HostThreads &) = delete;

  int size() const { return static_cast<int>(workers.size()) + 1; }
  HostIsa isa() const { return loops; }

  /// f32 scratch of `floats` per thread (bf16 products widen blocks of
  /// their operands into it), made at load.
  void reserveScratch(size_t floats) {
    if (floats > scratchPerThread) {
      scratchPerThread = floats;
      scratchFloats.assign(floats * static_cast<size_t>(size()), 0.0f);
    }
  }
  size_t scratchSize() const { return scratchPerThread; }
  float *scratch(int thread) {
    return scratchFloats.data() +
           static_cast<size_t>(thread) * scratchPerThread;
  }

  /// fn(begin, end) over [0, n); ranges shorter than `grain` are not worth a
  /// thread's wake-up, so small n runs on the caller alone.
  template <typename Fn> void parallelFor(int64_t n, int64_t grain, Fn &&fn) {
    int64_t parts = std::min<int64_t>(size(), grain > 0 ? n / grain : n);
    if (parts <= 1) {
      fn(int64_t{0}, n);
      return;
    }
    run(
        n, parts,
        [](const void *context, int64_t begin, int64_t end) {
          (*static_cast<const std::remove_reference_t<Fn> *>(context))(begin,
                                                                       end);
        },
        &fn);
  }

private:
  using Call = void (*)(const void *, int64_t, int64_t);
  void run(int64_t n, int64_t parts, Call call, const void *context);
  void work(int index);

  std::vector<std::thread> workers;
  std::mutex mutex;
  std::condition_variable wake, done;
  // Watched without the mutex: a new job's number (bumped under it), and
  // the parts not yet done (counted down by the workers that did them).
  std::atomic<uint64_t> generation{0};
  std::atomic<int> pending{0};
  bool stopping = false;
  // The current job.
  Call call = nullptr;
  const void *context = nullptr;
  int64_t total = 0, parts = 0;
  std::vector<float> scratchFloats;
  size_t scratchPerThread = 0;
  HostIsa loops = HostIsa::Baseline;
};

/// The scratch per thread a bf16 product needs on the host (HostThreads::
/// reserveScratch): blocks of A, B and C in f32.
size_t bf16GemmScratchFloats();

/// Runs steps [first, last) in order; each kernel's elements or groups over
/// `threads` when given (with gpuGroups, on the caller alone, but bf16
/// products still take the threads' scratch). Fails only when a backend's
/// own call (BackendCall) does; the kernels report data errors in the
/// entry's error record.
template <typename T>
Status runOnHost(const StepOf<T> *first, const StepOf<T> *last,
                 bool gpuGroups = false, HostThreads *threads = nullptr);

extern template Status runOnHost<float>(const StepOf<float> *,
                                        const StepOf<float> *, bool,
                                        HostThreads *);
extern template Status runOnHost<double>(const StepOf<double> *,
                                         const StepOf<double> *, bool,
                                         HostThreads *);

/// Whether `steps` hold a bf16 product (whose host run needs scratch).
template <typename S> bool hasBf16Product(const std::vector<S> &steps) {
  for (const S &step : steps)
    if (std::holds_alternative<GemmBf16>(step))
      return true;
  return false;
}

/// A recorded data error in the kernel's words, for example
/// "embedding: index 130 at position [1, 4] is out of range [0, 128)".
std::string describeDataError(const Entry &entry, const DeviceError &record);

/// The executors' error for a step that recorded one: "entry 'E' step S,
/// launch L (kernel): " and describeDataError's words.
Status stepDataError(const Entry &entry, int64_t step,
                     const DeviceError &record);

} // namespace zcc::runtime::device

#endif // ZCC_LIB_RUNTIME_DEVICE_HOSTRUN_H
