//===- DataError.cpp - a bad index or label in a step's data, in words ----===//
//
// Kernels that read indices (embedding) and labels (cross-entropy) record
// the first one out of range (DeviceError) instead of reading out of
// bounds; these name it: the launch, the kernel, the value and where it is.
//
//===----------------------------------------------------------------------===//

#include "Kernels/HostRun.h"

#include "zcc/Runtime/Plan/KernelRules.h"

using namespace zcc::runtime;
using namespace zcc::runtime::device;

std::string zcc::runtime::device::describeDataError(const Entry &entry,
                                                    const DeviceError &record) {
  std::string kernel = "?";
  std::string position = std::to_string(record.position);
  if (record.launch >= 0 &&
      static_cast<size_t>(record.launch) < entry.launches.size()) {
    const Launch &launch = entry.launches[record.launch];
    kernel = launch.name();
    if (record.operand >= 0 &&
        static_cast<size_t>(record.operand) < launch.inputs.size())
      position = formatIndexPosition(
          entry.tensors[launch.inputs[record.operand]].type.shape,
          record.position);
  }
  return kernel + ": " + (record.what ? "label" : "index") + " " +
         std::to_string(record.value) + " at position " + position +
         " is out of range [0, " + std::to_string(record.limit) + ")";
}

Status zcc::runtime::device::stepDataError(const Entry &entry, int64_t step,
                                           const DeviceError &record) {
  const char *kernel =
      record.launch >= 0 &&
              static_cast<size_t>(record.launch) < entry.launches.size()
          ? entry.launches[record.launch].name()
          : "?";
  return makeError(StatusCode::ExecutionError, "entry '", entry.name, "' step ",
                   step, ", launch ", record.launch, " (", kernel,
                   "): ", describeDataError(entry, record));
}
