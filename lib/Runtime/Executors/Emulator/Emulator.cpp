//===- Emulator.cpp - the CUDA executor's kernels, run on the host --------===//
//
// Host memory stands in for the device; the steps run on the host as the CPU
// executor runs them (HostRun.h), with one lane per group, or with the GPU's
// lanes per group replayed in its reduction order. Products go through BLAS
// with the column-major arguments the CUDA executor hands cuBLAS.
//
//===----------------------------------------------------------------------===//

#include "Executors/Device/DeviceExecutor.h"
#include "Kernels/HostRun.h"

#include "Executors/Memory.h"

#include <cstring>
#include <vector>

using namespace zcc::runtime;
using namespace zcc::runtime::device;

namespace {

class EmulatorBackend final : public Backend {
public:
  explicit EmulatorBackend(bool gpuGroups) : gpuGroups(gpuGroups) {}
  std::string name() const override {
    return "the emulator (CUDA kernels on the host)";
  }
  Status memoryInfo(uint64_t &freeBytes, uint64_t &totalBytes) override {
    // Host memory: the allocation itself is the check.
    freeBytes = totalBytes = ~uint64_t(0);
    return Status::ok();
  }
  Status allocateDevice(uint64_t bytes, const char *what,
                        uint8_t *&out) override {
    ZRT_RETURN_IF_ERROR(allocator.allocate(bytes, 256, what, out));
    device += bytes;
    return Status::ok();
  }
  Status allocateHost(uint64_t bytes, const char *what,
                      uint8_t *&out) override {
    return allocator.allocate(bytes, 256, what, out);
  }
  Status copyToDevice(void *to, const void *from, uint64_t bytes) override {
    std::memcpy(to, from, bytes);
    return Status::ok();
  }
  Status copyToHost(void *to, const void *from, uint64_t bytes) override {
    std::memcpy(to, from, bytes);
    return Status::ok();
  }
  bool forGpu() const override { return gpuGroups; }
  // In list order, which respects every edge.
  Status prepare(size_t entry, std::vector<Step> steps,
                 const StepOrder &) override {
    if (programs.size() <= entry)
      programs.resize(entry + 1);
    if (hasBf16Product(steps))
      scratch.reserveScratch(bf16GemmScratchFloats());
    programs[entry] = std::move(steps);
    return Status::ok();
  }
  Status run(size_t entry) override {
    const std::vector<Step> &steps = programs[entry];
    return runOnHost(steps.data(), steps.data() + steps.size(), gpuGroups,
                     &scratch);
  }
  uint64_t allocations() const override { return allocator.count(); }
  uint64_t bytesAllocated() const override { return allocator.bytes(); }
  uint64_t deviceBytes() const override { return device; }

private:
  bool gpuGroups;
  /// One thread: the scratch of bf16 products.
  HostThreads scratch{1};
  CountedAllocator allocator;
  std::vector<std::vector<Step>> programs;
  uint64_t device = 0;
};

} // namespace

std::unique_ptr<Backend>
zcc::runtime::device::createEmulatorBackend(bool gpuGroups) {
  return std::make_unique<EmulatorBackend>(gpuGroups);
}
