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

#include "Kernels/DeviceProgram.h"

#include "Executors/Executor.h"
#include "zcc/Runtime/Executors/Options.h"

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
  /// The steps of launch `index` of `entry` (already validated), with
  /// `memory`'s addresses: the lowering hook. The default is the reference
  /// kernels (appendLaunch), which the emulator keeps; a backend with a
  /// library call for the launch appends a BackendCall it owns instead (and
  /// may fall back to the default where the library declines).
  virtual Status lower(const Entry &entry, size_t index,
                       const EntryMemory &memory, std::vector<Step> &out) {
    return appendLaunch(entry, index, memory, out);
  }
  /// Whether launches are lowered for a GPU's threads (EntryMemory::forGpu):
  /// CUDA, and the emulator in its GPU mode.
  virtual bool forGpu() const = 0;
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

/// CUDA device `ordinal` (-1: chooseCudaDevice's choice); fails with the
/// reason when there is no usable device or driver, or when the runtime was
/// built without CUDA. With `collectives` (a plan with all_reduce launches)
/// it also joins the NCCL communicator of `comm`'s ranks (of this process
/// alone when null), after checkOneRankPerDevice.
Status createCudaBackend(int ordinal, LaunchMode launch, bool collectives,
                         Communicator *comm, std::unique_ptr<Backend> &out);

/// The CUDA device a rank takes among the `count` it sees: `requested` when
/// it names one (>= 0), else the rank's place among the job's ranks on its
/// host (torchrun's LOCAL_RANK) modulo `count` (a launcher may show each
/// rank only its own GPU), device 0 for a process alone. Fails when
/// `requested` is not there.
Status chooseCudaDevice(int requested, const Communicator *comm, int count,
                        int &ordinal);

/// NCCL runs one rank per GPU: when `device` (an id of this rank's GPU,
/// unique across hosts: a hash of its UUID) is another rank's too, fails on
/// every rank alike, naming the ranks that share one and saying what to do
/// (`count`: the devices this rank sees, `name`: its own). Every rank calls
/// it.
Status checkOneRankPerDevice(Communicator &comm, uint64_t device, int count,
                             const std::string &name);

/// The persistent tensors live on the device with a host mirror: which side
/// is newer is tracked, and copies happen only when the other side looks.
class DeviceExecutor final : public Executor {
public:
  static Status create(std::shared_ptr<const Plan> plan,
                       const SessionOptions &options,
                       std::unique_ptr<DeviceExecutor> &out);
  /// The same on `backend` (tests of the lowering hook).
  static Status create(std::shared_ptr<const Plan> plan,
                       const SessionOptions &options,
                       std::unique_ptr<Backend> backend,
                       std::unique_ptr<DeviceExecutor> &out);

  /// Host staging: the session writes inputs and reads outputs here, and
  /// keeps its view of the persistent tensors in the mirror.
  const RegionBases &hostRegions() const override { return host; }
  void beforeHostRead() override;
  void beforeHostWrite() override;

  /// One step of `entry`: copies the inputs in, runs every launch, copies
  /// the outputs out. A data error (an index or label out of range) is
  /// reported like the CPU executor's, and no persistent tensor is changed
  /// by that step.
  Status run(int entry, int64_t step) override;

  std::string deviceName() const override { return backend->name(); }
  uint64_t allocations() const override { return backend->allocations(); }
  uint64_t bytesAllocated() const override {
    return backend->bytesAllocated();
  }
  uint64_t deviceBytes() const override { return backend->deviceBytes(); }
  uint64_t arenaCapacity() const override { return arenaBytes; }
  double issueSeconds() const override { return backend->issueSeconds(); }

private:
  DeviceExecutor() = default;
  Status allocate(const SessionOptions &options);
  Status buildProgram(size_t entry, ExecutionMode mode);

  std::shared_ptr<const Plan> plan;
  std::unique_ptr<Backend> backend;
  RegionBases device; // arena, persistent, inputs, outputs, constants
  DeviceError *error = nullptr;
  std::vector<std::vector<uint8_t *>> noReuseBuffers; // per entry
  uint64_t arenaBytes = 0;
  RegionBases host; // staging for inputs and outputs, the persistent mirror
  DeviceError *hostError = nullptr;
  bool mirrorStale = false; // the device has newer persistent values
  bool deviceStale = false; // the mirror has newer persistent values
  Status mirrorError;       // a failed download, reported by run()
  std::shared_ptr<Communicator> communicator;
};

} // namespace zcc::runtime::device

#endif // ZCC_LIB_RUNTIME_DEVICE_DEVICEEXECUTOR_H
