//===- Executor.cpp - region addresses, the executor for a session --------===//

#include "Executors/Executor.h"

#include <algorithm>

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

Status Executor::runChecked(int, int64_t, NonFiniteFinding &) {
  return makeError(StatusCode::Unsupported, "the ", deviceName(),
                   " executor has no checked run (its steps are whole "
                   "programs); the CPU executor's has");
}

SessionRegions zcc::runtime::sessionRegions(const Plan &plan,
                                            ExecutionMode mode, uint64_t align,
                                            uint64_t scale) {
  SessionRegions out;
  for (const Entry &e : plan.entries) {
    out.inputs = std::max(out.inputs, e.inputSize * scale);
    out.outputs = std::max(out.outputs, e.outputSize * scale);
    if (mode == ExecutionMode::NoReuse)
      for (const Buffer &b : e.buffers)
        if (b.region == Region::Arena)
          out.separate += (b.size * scale + align - 1) / align * align;
  }
  if (mode != ExecutionMode::NoReuse)
    out.arena = plan.arenaSize * scale;
  return out;
}

Status zcc::runtime::createExecutor(std::shared_ptr<const Plan> plan,
                                    const SessionOptions &options,
                                    std::unique_ptr<Executor> &out) {
  if (options.device == DeviceKind::Cpu)
    return createCpuExecutor(std::move(plan), options, out);
  return createDeviceExecutor(std::move(plan), options, out);
}
