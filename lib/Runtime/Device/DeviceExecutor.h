//===- DeviceExecutor.h - a plan on a device: memory and programs -*- C++ -*-===//
//
// The executor behind `--device cuda` (and `--device emulator`, which runs
// the same kernels on the host). At load it makes every allocation the plan
// will ever need: one device allocation holding the arena, the persistent
// region, the input, output and constant regions and the error record, and
// host staging for inputs, outputs and a mirror of the persistent region.
// It checks the device has the memory first and fails, naming the bytes
// required and available, before anything is allocated. Each entry becomes
// one program (DeviceProgram.h) that the backend prepares once; a step is one
// run of it.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_RUNTIME_DEVICE_DEVICEEXECUTOR_H
#define ZCC_LIB_RUNTIME_DEVICE_DEVICEEXECUTOR_H

#include "DeviceProgram.h"

#include "zcc/Runtime/Session.h"

#include <memory>
#include <string>

namespace zcc::runtime::device {

/// What differs between the CUDA executor and the emulator.
class Backend {
public:
  virtual ~Backend() = default;
  /// The device in words, for messages and reports.
  virtual std::string name() const = 0;
  /// Free and total device bytes, for the load-time check.
  virtual Status memoryInfo(uint64_t &freeBytes, uint64_t &totalBytes) = 0;
  /// Zero-filled device memory, and host staging memory (pinned on CUDA);
  /// counted, owned by the backend.
  virtual Status allocateDevice(uint64_t bytes, const char *what,
                                uint8_t *&out) = 0;
  virtual Status allocateHost(uint64_t bytes, const char *what,
                              uint8_t *&out) = 0;
  /// Copies outside steps (load, checkpoints, host access); they wait.
  virtual Status copyToDevice(void *device, const void *host,
                              uint64_t bytes) = 0;
  virtual Status copyToHost(void *host, const void *device,
                            uint64_t bytes) = 0;
  /// Makes `steps` the program of entry `entry`, in `order`
  /// (stepDependencies). The CUDA graph executor captures and instantiates
  /// it here, with the order's edges.
  virtual Status prepare(size_t entry, std::vector<Step> steps,
                         const StepOrder &order) = 0;
  /// Runs entry `entry`'s program once and waits for it to finish.
  virtual Status run(size_t entry) = 0;
  virtual uint64_t allocations() const = 0;
  virtual uint64_t bytesAllocated() const = 0;
  /// Bytes of device memory allocated (the emulator's stand-in included).
  virtual uint64_t deviceBytes() const = 0;
  /// Seconds the host spent issuing steps (before waiting for them).
  virtual double issueSeconds() const { return 0; }
};

/// The CUDA kernels run on the host: one lane per group, or with
/// `gpuGroups` as many lanes as the GPU would use, combined in its order
/// (slow: for tests of the group kernels' lane arithmetic).
std::unique_ptr<Backend> createEmulatorBackend(bool gpuGroups = false);

/// CUDA device `ordinal`; fails with the reason when there is no usable
/// device or driver, or when the runtime was built without CUDA.
Status createCudaBackend(int ordinal, LaunchMode launch,
                         std::unique_ptr<Backend> &out);

class DeviceExecutor {
public:
  static Status create(std::shared_ptr<const Plan> plan,
                       const SessionOptions &options,
                       std::unique_ptr<DeviceExecutor> &out);

  /// Host staging: the session writes inputs and reads outputs here, and
  /// keeps its view of the persistent tensors in the mirror.
  uint8_t *hostInput() const { return input; }
  uint8_t *hostOutput() const { return output; }
  uint8_t *hostPersistent() const { return persistentMirror; }

  Status uploadPersistent();
  Status downloadPersistent();

  /// One step of `entry` (`step` names it in messages): copies the inputs
  /// in, runs every launch, copies the outputs out. A data error (an index
  /// or label out of range) is reported like the CPU executor's, and no
  /// persistent tensor is changed by that step.
  Status run(int entry, int64_t step);

  std::string deviceName() const { return backend->name(); }
  uint64_t allocations() const { return backend->allocations(); }
  uint64_t bytesAllocated() const { return backend->bytesAllocated(); }
  uint64_t deviceBytes() const { return backend->deviceBytes(); }
  uint64_t arenaCapacity() const { return arenaBytes; }
  double issueSeconds() const { return backend->issueSeconds(); }

private:
  DeviceExecutor() = default;
  Status allocate(const SessionOptions &options);
  Status buildProgram(size_t entry, ExecutionMode mode);

  std::shared_ptr<const Plan> plan;
  std::unique_ptr<Backend> backend;
  // Device.
  uint8_t *arena = nullptr, *persistent = nullptr, *deviceInput = nullptr,
          *deviceOutput = nullptr, *constants = nullptr;
  DeviceError *error = nullptr;
  std::vector<std::vector<uint8_t *>> noReuseBuffers; // per entry
  uint64_t arenaBytes = 0;
  // Host.
  uint8_t *input = nullptr, *output = nullptr, *persistentMirror = nullptr;
  DeviceError *hostError = nullptr;
};

} // namespace zcc::runtime::device

#endif // ZCC_LIB_RUNTIME_DEVICE_DEVICEEXECUTOR_H
