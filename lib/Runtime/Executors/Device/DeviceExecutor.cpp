//===- DeviceExecutor.cpp - device memory layout and entry programs -------===//

#include "Executors/Device/DeviceExecutor.h"
#include "Kernels/HostRun.h"

#include "zcc/Runtime/Plan/KernelRules.h"
#include "zcc/Runtime/Communicator.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

using namespace zcc::runtime;
using namespace zcc::runtime::device;

namespace {

uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

std::string mib(uint64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof(text), "%llu bytes (%.1f MiB)",
                static_cast<unsigned long long>(bytes), bytes / 1048576.0);
  return text;
}

} // namespace

Status zcc::runtime::device::chooseCudaDevice(int requested,
                                              const Communicator *comm,
                                              int count, int &ordinal) {
  if (requested >= count)
    return makeError(StatusCode::InvalidArgument, "no CUDA device ", requested,
                     "; this machine has ", count);
  // A launcher that gives each rank its own devices (CUDA_VISIBLE_DEVICES)
  // leaves each fewer than the host's ranks: the rank's place among them.
  // Ranks that meet on one GPU are caught by checkOneRankPerDevice.
  ordinal = requested >= 0 ? requested : comm ? comm->localRank() % count : 0;
  return Status::ok();
}

Status zcc::runtime::device::checkOneRankPerDevice(Communicator &comm,
                                                   uint64_t device, int count,
                                                   const std::string &name) {
  std::vector<uint64_t> devices = comm.gather(device);
  std::string shared;
  bool mine = false;
  for (size_t r = 0; r < devices.size(); ++r) {
    // Each group once, named from its first rank.
    if (std::find(devices.begin(), devices.begin() + r, devices[r]) !=
        devices.begin() + r)
      continue;
    std::vector<size_t> group;
    for (size_t q = r; q < devices.size(); ++q)
      if (devices[q] == devices[r])
        group.push_back(q);
    if (group.size() < 2)
      continue;
    std::string ranks;
    for (size_t i = 0; i < group.size(); ++i)
      ranks += (i == 0                  ? ""
                : i + 1 == group.size() ? " and "
                                        : ", ") +
               std::to_string(group[i]);
    shared += (shared.empty() ? "ranks " : "; ranks ") + ranks;
    mine |= devices[r] == device;
  }
  if (shared.empty())
    return Status::ok();
  return makeError(
      StatusCode::InvalidArgument, shared, " run on one GPU",
      mine ? " (this rank's: " + name + ")" : std::string(),
      ", and NCCL needs a GPU per rank: rank ", comm.rank(), "'s host runs ",
      comm.localSize(), " of the job's ", comm.size(), " ranks and shows it ",
      count, " CUDA device", count == 1 ? "" : "s",
      "; start at most as many ranks per host as it has GPUs (mpirun "
      "--map-by ppr:GPUS:node), or give each rank its own "
      "(--device-ordinal, CUDA_VISIBLE_DEVICES)");
}

Status DeviceExecutor::create(std::shared_ptr<const Plan> plan,
                              const SessionOptions &options,
                              std::unique_ptr<DeviceExecutor> &out) {
  if (options.precision != Precision::F32)
    return makeError(StatusCode::Unsupported, deviceKindName(options.device),
                     " runs f32 only; the f64 reference precision is the "
                     "CPU executor's");
  std::unique_ptr<Backend> backend;
  if (options.device == DeviceKind::Cuda) {
    ZRT_RETURN_IF_ERROR(createCudaBackend(
        options.deviceOrdinal, options.launch, plan->communicates(),
        options.communicator.get(), backend));
  } else {
    backend = createEmulatorBackend(options.emulateGpuGroups);
  }
  return create(std::move(plan), options, std::move(backend), out);
}

Status DeviceExecutor::create(std::shared_ptr<const Plan> plan,
                              const SessionOptions &options,
                              std::unique_ptr<Backend> backend,
                              std::unique_ptr<DeviceExecutor> &out) {
  if (options.precision != Precision::F32)
    return makeError(StatusCode::Unsupported, deviceKindName(options.device),
                     " runs f32 only; the f64 reference precision is the "
                     "CPU executor's");
  std::unique_ptr<DeviceExecutor> executor(new DeviceExecutor());
  executor->plan = std::move(plan);
  executor->communicator = options.communicator;
  executor->backend = std::move(backend);
  ZRT_RETURN_IF_ERROR(executor->allocate(options));
  for (size_t i = 0; i < executor->plan->entries.size(); ++i)
    ZRT_RETURN_IF_ERROR(executor->buildProgram(i, options.mode));
  out = std::move(executor);
  return Status::ok();
}

Status DeviceExecutor::allocate(const SessionOptions &options) {
  const Plan &p = *plan;
  uint64_t align = std::max<uint64_t>(p.alignment, 256);
  bool noReuse = options.mode == ExecutionMode::NoReuse;
  SessionRegions regions = sessionRegions(p, options.mode, align, 1);
  uint64_t inputSize = regions.inputs, outputSize = regions.outputs;
  arenaBytes = regions.arena;
  // One allocation: arena | persistent | inputs | outputs | constants | error.
  uint64_t persistentAt = alignUp(arenaBytes, align);
  uint64_t inputAt = alignUp(persistentAt + p.persistentSize, align);
  uint64_t outputAt = alignUp(inputAt + inputSize, align);
  uint64_t constantsAt = alignUp(outputAt + outputSize, align);
  uint64_t errorAt = alignUp(constantsAt + p.constantSize, align);
  uint64_t total = alignUp(errorAt + sizeof(DeviceError), align);
  uint64_t separate = regions.separate; // no-reuse: each buffer its own

  uint64_t freeBytes = 0, totalBytes = 0;
  ZRT_RETURN_IF_ERROR(backend->memoryInfo(freeBytes, totalBytes));
  if (total + separate > freeBytes)
    return makeError(StatusCode::OutOfMemory, "the plan needs ",
                     mib(total + separate), " of device memory (arena ",
                     p.arenaSize, noReuse ? " without reuse: " : "",
                     noReuse ? std::to_string(separate) : std::string(),
                     ", persistent ", p.persistentSize, ", inputs ", inputSize,
                     ", outputs ", outputSize, ", constants ", p.constantSize,
                     " bytes) and ", backend->name(), " has ", mib(freeBytes),
                     " free of ", mib(totalBytes),
                     "; nothing was allocated and no step ran");

  uint8_t *base = nullptr;
  ZRT_RETURN_IF_ERROR(backend->allocateDevice(total, "device memory", base));
  device.arena = base;
  device.persistent = base + persistentAt;
  device.input = base + inputAt;
  device.output = base + outputAt;
  device.constants = base + constantsAt;
  error = reinterpret_cast<DeviceError *>(base + errorAt);
  noReuseBuffers.resize(p.entries.size());
  if (noReuse)
    for (size_t i = 0; i < p.entries.size(); ++i) {
      const Entry &e = p.entries[i];
      noReuseBuffers[i].assign(e.buffers.size(), nullptr);
      for (size_t b = 0; b < e.buffers.size(); ++b)
        if (e.buffers[b].region == Region::Arena)
          ZRT_RETURN_IF_ERROR(backend->allocateDevice(
              e.buffers[b].size, "arena buffer", noReuseBuffers[i][b]));
    }

  ZRT_RETURN_IF_ERROR(
      backend->allocateHost(inputSize, "input staging", host.input));
  ZRT_RETURN_IF_ERROR(
      backend->allocateHost(outputSize, "output staging", host.output));
  ZRT_RETURN_IF_ERROR(backend->allocateHost(
      p.persistentSize, "persistent mirror", host.persistent));
  uint8_t *errorBytes = nullptr;
  ZRT_RETURN_IF_ERROR(
      backend->allocateHost(sizeof(DeviceError), "error record", errorBytes));
  hostError = reinterpret_cast<DeviceError *>(errorBytes);
  if (!p.constants.empty())
    ZRT_RETURN_IF_ERROR(backend->copyToDevice(
        device.constants, p.constants.data(), p.constants.size()));
  return Status::ok();
}

Status DeviceExecutor::buildProgram(size_t index, ExecutionMode mode) {
  const Entry &e = plan->entries[index];
  EntryMemory memory;
  memory.error = error;
  memory.communicator = communicator.get();
  memory.forGpu = backend->forGpu();
  memory.buffers.resize(e.buffers.size());
  for (size_t b = 0; b < e.buffers.size(); ++b) {
    const Buffer &buffer = e.buffers[b];
    memory.buffers[b] =
        buffer.region == Region::Arena && mode == ExecutionMode::NoReuse
            ? noReuseBuffers[index][b]
            : device.address(buffer);
  }
  if (e.workspace >= 0) {
    memory.workspace = memory.buffers[e.workspace];
    memory.workspaceBytes = e.buffers[e.workspace].size;
    memory.pinnedBytes = std::min(pinnedScratchBytes(e), memory.workspaceBytes);
  }

  std::vector<Step> steps;
  std::vector<StepAccess> access;
  auto span = [](const void *at, uint64_t bytes) {
    auto begin = reinterpret_cast<uintptr_t>(at);
    return AddressRange{begin, begin + bytes};
  };
  const AddressRange errorRecord = span(error, sizeof(DeviceError));
  auto add = [&](Step step, StepAccess a) {
    steps.push_back(std::move(step));
    access.push_back(std::move(a));
  };
  if (e.inputSize > 0)
    add(CopyIn{device.input, host.input, e.inputSize},
        {{}, {span(device.input, e.inputSize)}});
  add(Memset{error, sizeof(DeviceError), 0}, {{}, {errorRecord}});
  // Poison: all ones is a NaN in every f32 and -1 in every index.
  if (mode == ExecutionMode::Poison && arenaBytes > 0)
    add(Memset{device.arena, arenaBytes, 0xff},
        {{}, {span(device.arena, arenaBytes)}});
  std::vector<std::vector<uint32_t>> dying;
  if (mode == ExecutionMode::Poison)
    dying = e.arenaBuffersDyingAfter();
  for (size_t i = 0; i < e.launches.size(); ++i) {
    const Launch &launch = e.launches[i];
    size_t first = steps.size();
    ZRT_RETURN_IF_ERROR(backend->lower(e, i, memory, steps));
    StepAccess a;
    bool readsIndices = false, writesPersistent = false;
    for (uint32_t t : launch.inputs) {
      const Tensor &tensor = e.tensors[t];
      a.reads.push_back(
          span(memory.buffers[tensor.buffer], e.buffers[tensor.buffer].size));
      readsIndices |=
          tensor.type.dtype == DType::I32 || tensor.type.dtype == DType::I64;
    }
    for (uint32_t t : launch.outputs) {
      const Tensor &tensor = e.tensors[t];
      a.writes.push_back(
          span(memory.buffers[tensor.buffer], e.buffers[tensor.buffer].size));
      writesPersistent |= e.buffers[tensor.buffer].region == Region::Persistent;
    }
    // Kernels that read indices or labels may record a data error; updates
    // of persistent state read the record to skip after one.
    if (readsIndices)
      a.writes.push_back(errorRecord);
    if (writesPersistent)
      a.reads.push_back(errorRecord);
    // cuBLAS and the kernels' scratch share the entry's workspace. A plain
    // product uses only cuBLAS's share and a GPU's column sum only the
    // pinned end, so a bias gradient may run beside its weight gradient.
    bool products = false, calls = false;
    for (size_t k = first; k < steps.size(); ++k) {
      products |= productOf(steps[k]) != nullptr;
      if (const auto *call = std::get_if<BackendCall>(&steps[k]))
        calls |= call->usesWorkspace;
    }
    uint64_t shared = memory.workspaceBytes - memory.pinnedBytes;
    bool whole = calls || kernelScratchBytes(e, launch) > 0 ||
                 (products && launch.kernel != KernelId::Matmul);
    if (memory.workspace && whole)
      a.writes.push_back(span(memory.workspace, memory.workspaceBytes));
    else if (memory.workspace && products)
      a.writes.push_back(span(memory.workspace, shared));
    else if (memory.workspace && memory.forGpu &&
             columnSumPartialBytes(e, launch) > 0)
      a.writes.push_back(span(memory.workspace + shared, memory.pinnedBytes));
    access.resize(steps.size(), a);
    if (mode == ExecutionMode::Poison)
      for (uint32_t b : dying[i])
        add(Memset{memory.buffers[b], e.buffers[b].size, 0xff},
            {{}, {span(memory.buffers[b], e.buffers[b].size)}});
  }
  if (e.outputSize > 0)
    add(CopyOut{host.output, device.output, e.outputSize},
        {{span(device.output, e.outputSize)}, {}});
  add(CopyOut{hostError, error, sizeof(DeviceError)}, {{errorRecord}, {}});
  return backend->prepare(index, std::move(steps), stepDependencies(access));
}

void DeviceExecutor::beforeHostRead() {
  if (!mirrorStale)
    return;
  Status status = backend->copyToHost(host.persistent, device.persistent,
                                      plan->persistentSize);
  if (!status.isOk() && mirrorError.isOk())
    mirrorError = status;
  mirrorStale = false;
}

void DeviceExecutor::beforeHostWrite() {
  beforeHostRead();
  deviceStale = true;
}

Status DeviceExecutor::run(int index, int64_t step) {
  const Entry &e = plan->entries[index];
  if (!mirrorError.isOk()) {
    Status failed = mirrorError;
    mirrorError = Status::ok();
    return failed;
  }
  if (deviceStale) {
    ZRT_RETURN_IF_ERROR(backend->copyToDevice(
        device.persistent, host.persistent, plan->persistentSize));
    deviceStale = false;
  }
  mirrorStale = true;
  ZRT_RETURN_IF_ERROR(backend->run(static_cast<size_t>(index)));
  const DeviceError &record = *hostError;
  if (record.flag == 0)
    return Status::ok();
  return stepDataError(e, step, record);
}

Status zcc::runtime::createDeviceExecutor(std::shared_ptr<const Plan> plan,
                                          const SessionOptions &options,
                                          std::unique_ptr<Executor> &out) {
  std::unique_ptr<DeviceExecutor> executor;
  ZRT_RETURN_IF_ERROR(DeviceExecutor::create(std::move(plan), options, executor));
  out = std::move(executor);
  return Status::ok();
}
