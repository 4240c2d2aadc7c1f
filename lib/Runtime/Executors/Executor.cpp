//===- Executor.cpp - region addresses, the executor for a session --------===//

#include "Executors/Executor.h"

using namespace zcc::runtime;

uint8_t *RegionBases::base(Region region) const {
  switch (region) {
  case Region::Arena:
    return arena;
  case Region::Persistent:
    return persistent;
  case Region::Input:
    return input;
  case Region::Output:
    return output;
  case Region::Constant:
    return constants;
  }
  return nullptr;
}

Status zcc::runtime::createExecutor(std::shared_ptr<const Plan> plan,
                                    const SessionOptions &options,
                                    std::unique_ptr<Executor> &out) {
  if (options.device == DeviceKind::Cpu)
    return createCpuExecutor(std::move(plan), options, out);
  return createDeviceExecutor(std::move(plan), options, out);
}
