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

#include "DeviceProgram.h"

#include <string>

namespace zcc::runtime::device {

/// Runs steps [first, last) in order.
template <typename T>
void runOnHost(const StepOf<T> *first, const StepOf<T> *last,
               bool gpuGroups = false);

extern template void runOnHost<float>(const StepOf<float> *,
                                      const StepOf<float> *, bool);
extern template void runOnHost<double>(const StepOf<double> *,
                                       const StepOf<double> *, bool);

/// A recorded data error in the kernel's words, for example
/// "embedding: index 130 at position [1, 4] is out of range [0, 128)".
std::string describeDataError(const Entry &entry, const DeviceError &record);

} // namespace zcc::runtime::device

#endif // ZCC_LIB_RUNTIME_DEVICE_HOSTRUN_H
