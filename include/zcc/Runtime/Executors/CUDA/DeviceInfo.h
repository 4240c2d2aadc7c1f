//===- DeviceInfo.h - which CUDA devices can run plans ----------*- C++ -*-===//
//
// Part of the runtime: no MLIR or LLVM. Answers "is there a GPU this build can
// run on?" with a reason when the answer is no, so GPU tests skip with a
// message instead of failing, and a plan too large for the device is caught
// at load (the free-memory figure is what the loader checks against).
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_CUDA_DEVICEINFO_H
#define ZCC_RUNTIME_CUDA_DEVICEINFO_H

#include <cstddef>
#include <string>
#include <vector>

namespace zcc::runtime::cuda {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int computeMajor = 0;
  int computeMinor = 0;
  int multiprocessors = 0;
  std::size_t totalBytes = 0;
  std::size_t freeBytes = 0;
};

struct DeviceQuery {
  std::vector<DeviceInfo> devices;
  /// Why no device is usable ("" when `devices` is non-empty): the CUDA error
  /// name and message, e.g. cudaErrorInsufficientDriver on a machine without
  /// a driver.
  std::string error;
};

/// Lists the CUDA devices. Never throws or aborts, whatever the driver state.
DeviceQuery queryDevices();

/// Runs a small kernel on device `ordinal` and checks every element it wrote.
/// Catches a binary built for the wrong architecture or a broken driver before
/// a plan runs. Returns "" on success, else what went wrong.
std::string runSmokeKernel(int ordinal);

} // namespace zcc::runtime::cuda

#endif // ZCC_RUNTIME_CUDA_DEVICEINFO_H
