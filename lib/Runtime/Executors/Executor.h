//===- Executor.h - where a session's plan runs -------------------*- C++ -*-===//
//
// A Session owns the plan, the step counters and the host's view of tensors
// (f32/f64 conversion, checkpoints, initializers); an Executor owns the
// memory the plan runs in and runs its entries. The CPU executor runs the
// kernels on the host over its own regions; the device executor (CUDA, or
// the emulator) keeps the arena on the device and gives the session host
// staging for inputs and outputs and a mirror of the persistent region.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_RUNTIME_EXECUTORS_EXECUTOR_H
#define ZCC_LIB_RUNTIME_EXECUTORS_EXECUTOR_H

#include "zcc/Runtime/Plan/Plan.h"
#include "zcc/Runtime/Executors/Options.h"
#include "zcc/Runtime/Executors/NonFinite.h"

#include <cstring>
#include <memory>
#include <string>

namespace zcc::runtime {

/// The base address of each region; a buffer's address is its region's base
/// plus its offset (times `scale`: 2 when f32 elements are held as f64).
struct RegionBases {
  uint8_t *arena = nullptr, *persistent = nullptr, *input = nullptr,
          *output = nullptr, *constants = nullptr;

  uint8_t *base(Region region) const;
  /// Null when the region has no base here (device-only memory).
  uint8_t *address(const Buffer &buffer, uint64_t scale = 1) const {
    uint8_t *at = base(buffer.region);
    return at ? at + buffer.offset * scale : nullptr;
  }
};

/// What a session for `plan` holds besides the persistent and constant
/// regions, element bytes times `scale`: the planned arena (0 without
/// reuse), every arena buffer on its own aligned to `align` (without reuse,
/// else 0), and the largest entry's inputs and outputs. Both executors size
/// their memory, and check it fits, from these.
struct SessionRegions {
  uint64_t arena = 0, separate = 0, inputs = 0, outputs = 0;
};
SessionRegions sessionRegions(const Plan &plan, ExecutionMode mode,
                              uint64_t align, uint64_t scale);

/// f32 elements (possibly unaligned plan or file bytes) into doubles: the
/// f64 reference precision's copy of f32 data.
inline void widenF32(const uint8_t *from, double *to, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float v;
    std::memcpy(&v, from + 4 * i, 4);
    to[i] = v;
  }
}

class Executor {
public:
  virtual ~Executor() = default;

  /// Where the host reads and writes inputs, outputs and persistent
  /// tensors. A device executor has no host arena or constants (null); the
  /// session only uses the other three.
  virtual const RegionBases &hostRegions() const = 0;

  /// Before the host reads persistent bytes: a device executor brings its
  /// mirror up to date (a failed copy is reported by the next run()).
  virtual void beforeHostRead() {}
  /// Before the host may write persistent bytes: the device copy is then
  /// refreshed before the next step.
  virtual void beforeHostWrite() {}

  /// One step of `entry` (`step` names it in messages; the session has put
  /// the step counter in its input). A data error (an index or label out of
  /// range) fails the step and changes no persistent tensor.
  virtual Status run(int entry, int64_t step) = 0;
  /// The same, checking each launch's outputs for NaN and infinity
  /// (Session::runChecked); Unimplemented where the executor cannot.
  virtual Status runChecked(int entry, int64_t step,
                            NonFiniteFinding &finding);

  /// Bytes holding arena buffers, allocations and their bytes, device bytes,
  /// host seconds spent issuing steps, the device in words.
  virtual uint64_t arenaCapacity() const = 0;
  virtual uint64_t allocations() const = 0;
  virtual uint64_t bytesAllocated() const = 0;
  virtual uint64_t deviceBytes() const { return 0; }
  virtual double issueSeconds() const { return 0; }
  virtual std::string deviceName() const = 0;
};

/// The executor `options.device` names.
Status createExecutor(std::shared_ptr<const Plan> plan,
                      const SessionOptions &options,
                      std::unique_ptr<Executor> &out);

/// The CPU executor: the kernels on the host, on `options.threads` threads,
/// in f32 or the f64 reference precision.
Status createCpuExecutor(std::shared_ptr<const Plan> plan,
                         const SessionOptions &options,
                         std::unique_ptr<Executor> &out);

/// The CUDA executor, or the emulator (`options.device`).
Status createDeviceExecutor(std::shared_ptr<const Plan> plan,
                            const SessionOptions &options,
                            std::unique_ptr<Executor> &out);

} // namespace zcc::runtime

#endif // ZCC_LIB_RUNTIME_EXECUTORS_EXECUTOR_H
