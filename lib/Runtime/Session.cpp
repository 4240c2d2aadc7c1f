//===- Session.cpp - memory of a plan and the CPU executor ----------------===//
//
// create() does all the work that could allocate or fail on the plan's
// structure: regions, buffer addresses, each launch's operand list and the
// poison schedule. run() then only walks prepared arrays.
//
//===----------------------------------------------------------------------===//

#include "zcc/Runtime/Session.h"

#include "Device/DeviceExecutor.h"
#include "Device/HostRun.h"
#include "Initializers.h"
#include "Memory.h"
#include "zcc/Runtime/HostTensor.h"
#include "zcc/Runtime/Kernels.h"
#include "zcc/Runtime/SafeTensors.h"

#include <cstring>
#include <limits>
#include <thread>

using namespace zcc::runtime;

const char *zcc::runtime::deviceKindName(DeviceKind kind) {
  switch (kind) {
  case DeviceKind::Cpu:
    return "cpu";
  case DeviceKind::Cuda:
    return "cuda";
  case DeviceKind::Emulator:
    return "emulator";
  }
  return "?";
}

const char *zcc::runtime::launchModeName(LaunchMode mode) {
  return mode == LaunchMode::Graph ? "graph" : "eager";
}

const char *zcc::runtime::executionModeName(ExecutionMode mode) {
  switch (mode) {
  case ExecutionMode::Planned:
    return "planned";
  case ExecutionMode::NoReuse:
    return "no-reuse";
  case ExecutionMode::Poison:
    return "poison";
  }
  return "?";
}

namespace {

/// f32 elements (possibly unaligned plan or file bytes) into doubles.
void widenF32(const uint8_t *from, double *to, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float v;
    std::memcpy(&v, from + 4 * i, 4);
    to[i] = v;
  }
}

struct Span {
  uint8_t *data;
  size_t bytes;
};

/// One launch of the CPU executor: its steps (the kernels every executor
/// runs, DeviceProgram.h) and the buffers whose last use it is.
struct PreparedLaunch {
  size_t endStep;
  size_t firstPoison, endPoison; // into PreparedEntry::poison
};

struct PreparedEntry {
  std::vector<uint8_t *> bufferAddress;
  // The CPU executor's program, in the session's precision.
  std::vector<device::StepOf<float>> steps32;
  std::vector<device::StepOf<double>> steps64;
  std::vector<PreparedLaunch> launches;
  std::vector<Span> poison;
  int stepTensor = -1;
  int64_t steps = 0;
};

} // namespace

struct Session::Impl {
  std::shared_ptr<const Plan> plan;
  SessionOptions options;
  /// Bytes per byte of the plan: 2 in f64 precision (float elements double).
  uint64_t scale = 1;
  CountedAllocator allocator;
  uint8_t *arena = nullptr, *persistent = nullptr, *input = nullptr,
          *output = nullptr, *constants = nullptr;
  uint64_t arenaCapacity = 0, inputCapacity = 0, outputCapacity = 0;
  /// The CPU executor's record of a step's first data error.
  device::DeviceError *error = nullptr;
  /// The CPU executor's kernel threads.
  std::unique_ptr<device::HostThreads> threads;
  std::vector<PreparedEntry> entries;
  uint64_t allocationsAtLoad = 0;
  uint64_t stepsRun = 0, launchesRun = 0;
  /// The CUDA executor or the emulator; null on the CPU. Then the input,
  /// output and persistent regions above are its host staging, and the
  /// persistent tensors live on the device with a host mirror: which side
  /// is newer is tracked, and copies happen only when the other side looks.
  std::unique_ptr<device::DeviceExecutor> device;
  mutable bool mirrorStale = false; // the device has newer values
  mutable bool deviceStale = false; // the mirror has newer values
  mutable Status mirrorError;       // a failed download, reported by run()

  bool wide() const { return options.precision == Precision::F64; }
  uint64_t allocations() const {
    return allocator.count() + (device ? device->allocations() : 0);
  }
  /// Brings the mirror up to date before the host reads persistent bytes.
  void syncMirror() const {
    if (!device || !mirrorStale)
      return;
    Status status = device->downloadPersistent();
    if (!status.isOk() && mirrorError.isOk())
      mirrorError = status;
    mirrorStale = false;
  }
  /// Before the host may write persistent bytes.
  void writingMirror() const {
    syncMirror();
    if (device)
      deviceStale = true;
  }
  Status runOnDevice(int index);

  Status allocateRegions();
  Status prepareEntry(size_t index);
  void fillConstants();
  uint8_t *persistentData(const PersistentTensor &t) const {
    return persistent + t.offset * scale;
  }
  template <typename T> Status runEntry(int index);
};

Status Session::Impl::allocateRegions() {
  const Plan &p = *plan;
  uint64_t inputSize = 0, outputSize = 0;
  for (const Entry &e : p.entries) {
    inputSize = std::max(inputSize, e.inputSize);
    outputSize = std::max(outputSize, e.outputSize);
  }
  inputCapacity = inputSize * scale;
  outputCapacity = outputSize * scale;
  if (device) {
    input = device->hostInput();
    output = device->hostOutput();
    persistent = device->hostPersistent();
    arenaCapacity = device->arenaCapacity();
    return Status::ok();
  }
  size_t align = p.alignment;
  if (options.mode != ExecutionMode::NoReuse) {
    arenaCapacity = p.arenaSize * scale;
    ZRT_RETURN_IF_ERROR(
        allocator.allocate(arenaCapacity, align, "arena", arena));
  }
  ZRT_RETURN_IF_ERROR(allocator.allocate(p.persistentSize * scale, align,
                                         "persistent region", persistent));
  ZRT_RETURN_IF_ERROR(
      allocator.allocate(inputCapacity, align, "input region", input));
  ZRT_RETURN_IF_ERROR(
      allocator.allocate(outputCapacity, align, "output region", output));
  ZRT_RETURN_IF_ERROR(allocator.allocate(p.constantSize * scale, align,
                                         "constant region", constants));
  uint8_t *record = nullptr;
  ZRT_RETURN_IF_ERROR(allocator.allocate(sizeof(device::DeviceError), align,
                                         "error record", record));
  error = reinterpret_cast<device::DeviceError *>(record);
  return Status::ok();
}

/// Constant data is f32 in the plan; in f64 precision float tensors widen.
void Session::Impl::fillConstants() {
  const Plan &p = *plan;
  if (device) // the executor put them on the device
    return;
  if (!wide()) {
    if (!p.constants.empty())
      std::memcpy(constants, p.constants.data(), p.constants.size());
    return;
  }
  for (const Entry &e : p.entries)
    for (const Tensor &t : e.tensors) {
      const Buffer &b = e.buffers[t.buffer];
      if (b.region != Region::Constant)
        continue;
      const uint8_t *from = p.constants.data() + b.offset;
      uint8_t *to = constants + b.offset * scale;
      int64_t n = t.type.numElements();
      if (t.type.dtype == DType::F32) {
        widenF32(from, reinterpret_cast<double *>(to), n);
      } else {
        std::memcpy(to, from, static_cast<size_t>(t.type.bytes()));
      }
    }
}

Status Session::Impl::prepareEntry(size_t index) {
  const Entry &e = plan->entries[index];
  PreparedEntry &prepared = entries[index];
  prepared.bufferAddress.resize(e.buffers.size());
  for (size_t b = 0; b < e.buffers.size(); ++b) {
    const Buffer &buffer = e.buffers[b];
    uint64_t offset = buffer.offset * scale;
    uint8_t *address = nullptr;
    if (device &&
        (buffer.region == Region::Arena || buffer.region == Region::Constant)) {
      prepared.bufferAddress[b] = nullptr; // device memory only
      continue;
    }
    switch (buffer.region) {
    case Region::Arena:
      if (options.mode == ExecutionMode::NoReuse) {
        ZRT_RETURN_IF_ERROR(allocator.allocate(
            buffer.size * scale, plan->alignment, "arena buffer", address));
        arenaCapacity += buffer.size * scale;
      } else {
        address = arena + offset;
      }
      break;
    case Region::Persistent:
      address = persistent + offset;
      break;
    case Region::Input:
      address = input + offset;
      break;
    case Region::Output:
      address = output + offset;
      break;
    case Region::Constant:
      address = constants + offset;
      break;
    }
    prepared.bufferAddress[b] = address;
  }
  for (size_t t = 0; t < e.tensors.size(); ++t)
    if (e.tensors[t].role == TensorRole::Step)
      prepared.stepTensor = static_cast<int>(t);
  if (device) // the device executor has the launches
    return Status::ok();

  std::vector<std::vector<uint32_t>> dyingAfter = e.arenaBuffersDyingAfter();
  device::EntryMemory memory;
  memory.buffers = prepared.bufferAddress;
  memory.error = error;
  if (e.workspace >= 0) {
    memory.workspace = prepared.bufferAddress[e.workspace];
    memory.workspaceBytes = e.buffers[e.workspace].size * scale;
  }
  for (size_t i = 0; i < e.launches.size(); ++i) {
    PreparedLaunch p;
    auto append = [&](auto &steps) {
      Status status = device::appendLaunch(e, i, memory, steps);
      p.endStep = steps.size();
      return status;
    };
    ZRT_RETURN_IF_ERROR(wide() ? append(prepared.steps64)
                               : append(prepared.steps32));
    p.firstPoison = prepared.poison.size();
    if (options.mode == ExecutionMode::Poison)
      for (uint32_t b : dyingAfter[i])
        prepared.poison.push_back(
            {prepared.bufferAddress[b], e.buffers[b].size * scale});
    p.endPoison = prepared.poison.size();
    prepared.launches.push_back(p);
  }
  return Status::ok();
}

namespace {

/// Quiet NaN in every float element, whichever of f32/f64 the bytes hold;
/// integer elements get a pattern that is out of range as an index.
void poisonBytes(uint8_t *data, size_t bytes, bool wide) {
  if (wide) {
    const uint64_t nan = 0x7ff8000000000000ull;
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8)
      std::memcpy(data + i, &nan, 8);
    std::memset(data + i, 0xff, bytes - i);
    return;
  }
  const uint32_t nan = 0x7fc00000u;
  size_t i = 0;
  for (; i + 4 <= bytes; i += 4)
    std::memcpy(data + i, &nan, 4);
  std::memset(data + i, 0xff, bytes - i);
}

} // namespace

template <typename T> Status Session::Impl::runEntry(int index) {
  const Entry &e = plan->entries[index];
  PreparedEntry &prepared = entries[index];
  if (prepared.stepTensor >= 0) {
    const Tensor &t = e.tensors[prepared.stepTensor];
    std::memcpy(prepared.bufferAddress[t.buffer], &prepared.steps,
                sizeof(int64_t));
  }
  if (options.mode == ExecutionMode::Poison)
    poisonBytes(arena, arenaCapacity, wide());
  const std::vector<device::StepOf<T>> *steps;
  if constexpr (sizeof(T) == 8)
    steps = &prepared.steps64;
  else
    steps = &prepared.steps32;
  std::memset(error, 0, sizeof(*error));
  size_t begin = 0;
  for (size_t i = 0; i < prepared.launches.size(); ++i) {
    const PreparedLaunch &p = prepared.launches[i];
    device::runOnHost<T>(steps->data() + begin, steps->data() + p.endStep,
                         false, threads.get());
    begin = p.endStep;
    // Stop at the first bad index or label: nothing after it runs, so no
    // persistent tensor changes.
    if (error->flag)
      return device::stepDataError(e, prepared.steps, *error);
    for (size_t k = p.firstPoison; k < p.endPoison; ++k)
      poisonBytes(prepared.poison[k].data, prepared.poison[k].bytes, wide());
    ++launchesRun;
  }
  ++prepared.steps;
  ++stepsRun;
  return Status::ok();
}

Status Session::Impl::runOnDevice(int index) {
  const Entry &e = plan->entries[index];
  PreparedEntry &prepared = entries[index];
  if (!mirrorError.isOk()) {
    Status failed = mirrorError;
    mirrorError = Status::ok();
    return failed;
  }
  if (deviceStale) {
    ZRT_RETURN_IF_ERROR(device->uploadPersistent());
    deviceStale = false;
  }
  if (prepared.stepTensor >= 0) {
    const Tensor &t = e.tensors[prepared.stepTensor];
    std::memcpy(prepared.bufferAddress[t.buffer], &prepared.steps,
                sizeof(int64_t));
  }
  mirrorStale = true;
  ZRT_RETURN_IF_ERROR(device->run(index, prepared.steps));
  launchesRun += e.launches.size();
  ++prepared.steps;
  ++stepsRun;
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Session
//===----------------------------------------------------------------------===//

Session::Session(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Session::~Session() = default;

Status Session::create(std::shared_ptr<const Plan> plan,
                       const SessionOptions &options,
                       std::unique_ptr<Session> &out) {
  if (!plan)
    return makeError(StatusCode::InvalidArgument, "no plan");
  auto impl = std::make_unique<Impl>();
  impl->plan = std::move(plan);
  impl->options = options;
  impl->scale = options.precision == Precision::F64 ? 2 : 1;
  if (options.device != DeviceKind::Cpu)
    ZRT_RETURN_IF_ERROR(
        device::DeviceExecutor::create(impl->plan, options, impl->device));
  else
    impl->threads = std::make_unique<device::HostThreads>(
        options.threads > 0
            ? options.threads
            : std::max(1,
                       static_cast<int>(std::thread::hardware_concurrency())));
  ZRT_RETURN_IF_ERROR(impl->allocateRegions());
  impl->entries.resize(impl->plan->entries.size());
  for (size_t i = 0; i < impl->entries.size(); ++i)
    ZRT_RETURN_IF_ERROR(impl->prepareEntry(i));
  impl->fillConstants();
  impl->allocationsAtLoad = impl->allocations();
  out.reset(new Session(std::move(impl)));
  out->initialize(options.seed);
  return Status::ok();
}

const Plan &Session::plan() const { return *impl->plan; }
const SessionOptions &Session::options() const { return impl->options; }

void Session::initialize(uint64_t seed) {
  impl->writingMirror();
  for (const PersistentTensor &t : impl->plan->persistent)
    fillInitializer(t, seed, impl->wide(), impl->persistentData(t));
  for (PreparedEntry &e : impl->entries)
    e.steps = 0;
}

Status Session::findEntry(std::string_view name, int &out) const {
  const Plan &p = *impl->plan;
  if (name.empty()) {
    for (EntryKind kind : {EntryKind::TrainStep, EntryKind::Microbatch})
      for (size_t i = 0; i < p.entries.size(); ++i)
        if (p.entries[i].kind == kind) {
          out = static_cast<int>(i);
          return Status::ok();
        }
    return makeError(StatusCode::InvalidArgument,
                     "the plan has no train_step or microbatch entry");
  }
  int index = p.findEntry(name);
  if (index < 0) {
    std::string names;
    for (const Entry &e : p.entries)
      names += (names.empty() ? "" : ", ") + e.name;
    return makeError(StatusCode::InvalidArgument, "no entry '", name,
                     "'; the plan has ", names);
  }
  out = index;
  return Status::ok();
}

Status Session::findTensor(int entry, std::string_view name,
                           TensorInfo &out) const {
  const Plan &p = *impl->plan;
  if (entry < 0 || entry >= static_cast<int>(p.entries.size()))
    return makeError(StatusCode::InvalidArgument, "no entry ", entry);
  const Entry &e = p.entries[entry];
  for (Region region : {Region::Input, Region::Output, Region::Persistent}) {
    int t = e.findTensor(name, region);
    if (t < 0)
      continue;
    out = {entry, t, &e.tensors[t], region};
    return Status::ok();
  }
  return makeError(StatusCode::InvalidArgument, "entry '", e.name,
                   "' has no input, output or persistent tensor '", name, "'");
}

Status Session::findLoss(int entry, TensorInfo &out) const {
  const Plan &p = *impl->plan;
  if (entry < 0 || entry >= static_cast<int>(p.entries.size()))
    return makeError(StatusCode::InvalidArgument, "no entry ", entry);
  const Entry &e = p.entries[entry];
  for (size_t t = 0; t < e.tensors.size(); ++t)
    if (e.tensors[t].role == TensorRole::Loss &&
        e.buffers[e.tensors[t].buffer].region == Region::Output &&
        e.tensors[t].type.numElements() == 1) {
      out = {entry, static_cast<int>(t), &e.tensors[t], Region::Output};
      return Status::ok();
    }
  return makeError(StatusCode::InvalidArgument, "entry '", e.name,
                   "' has no scalar loss output");
}

const void *Session::persistentData(size_t index) const {
  impl->syncMirror();
  return impl->persistentData(impl->plan->persistent[index]);
}

void *Session::data(const TensorInfo &tensor) const {
  if (tensor.region == Region::Persistent)
    impl->writingMirror(); // the caller may write through the pointer
  return impl->entries[tensor.entry].bufferAddress[tensor.desc->buffer];
}

Status Session::setInput(int entry, std::string_view name, const void *data,
                         size_t bytes) {
  TensorInfo info;
  ZRT_RETURN_IF_ERROR(findTensor(entry, name, info));
  if (info.region != Region::Input)
    return makeError(StatusCode::InvalidArgument, "'", name,
                     "' is not an input of entry '",
                     impl->plan->entries[entry].name, "'");
  const TensorType &type = info.desc->type;
  if (bytes != static_cast<size_t>(type.bytes()))
    return makeError(StatusCode::InvalidArgument, "input '", name, "' is ",
                     typeString(type), " (", type.bytes(), " bytes); got ",
                     bytes, " bytes");
  uint8_t *to = static_cast<uint8_t *>(this->data(info));
  if (type.dtype == DType::F32 && impl->wide()) {
    widenF32(static_cast<const uint8_t *>(data), reinterpret_cast<double *>(to),
             type.numElements());
  } else {
    std::memcpy(to, data, bytes);
  }
  return Status::ok();
}

Status Session::run(int entry) {
  if (entry < 0 || entry >= static_cast<int>(impl->entries.size()))
    return makeError(StatusCode::InvalidArgument, "no entry ", entry);
  if (impl->device)
    return impl->runOnDevice(entry);
  if (impl->wide())
    return impl->runEntry<double>(entry);
  return impl->runEntry<float>(entry);
}

int64_t Session::stepCount(int entry) const {
  return impl->entries[entry].steps;
}

void Session::setStepCount(int entry, int64_t steps) {
  impl->entries[entry].steps = steps;
}

Status Session::readValues(const TensorInfo &tensor, double *out,
                           size_t count) const {
  const TensorType &type = tensor.desc->type;
  if (count != static_cast<size_t>(type.numElements()))
    return makeError(StatusCode::InvalidArgument, "tensor '", tensor.desc->name,
                     "' has ", type.numElements(), " elements; asked for ",
                     count);
  if (tensor.region == Region::Persistent)
    impl->syncMirror();
  const uint8_t *from = static_cast<const uint8_t *>(
      impl->entries[tensor.entry].bufferAddress[tensor.desc->buffer]);
  for (size_t i = 0; i < count; ++i) {
    switch (type.dtype) {
    case DType::F32:
      out[i] = impl->wide() ? reinterpret_cast<const double *>(from)[i]
                            : reinterpret_cast<const float *>(from)[i];
      break;
    case DType::I32:
      out[i] = reinterpret_cast<const int32_t *>(from)[i];
      break;
    case DType::I64:
      out[i] = static_cast<double>(reinterpret_cast<const int64_t *>(from)[i]);
      break;
    }
  }
  return Status::ok();
}

Status Session::writeValues(const TensorInfo &tensor, const double *in,
                            size_t count) {
  const TensorType &type = tensor.desc->type;
  if (count != static_cast<size_t>(type.numElements()))
    return makeError(StatusCode::InvalidArgument, "tensor '", tensor.desc->name,
                     "' has ", type.numElements(), " elements; got ", count);
  uint8_t *to = static_cast<uint8_t *>(data(tensor));
  for (size_t i = 0; i < count; ++i) {
    switch (type.dtype) {
    case DType::F32:
      if (impl->wide())
        reinterpret_cast<double *>(to)[i] = in[i];
      else
        reinterpret_cast<float *>(to)[i] = static_cast<float>(in[i]);
      break;
    case DType::I32:
      reinterpret_cast<int32_t *>(to)[i] = static_cast<int32_t>(in[i]);
      break;
    case DType::I64:
      reinterpret_cast<int64_t *>(to)[i] = static_cast<int64_t>(in[i]);
      break;
    }
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

namespace {
constexpr const char *kStepsKey = "zcc.steps";
} // namespace

Status Session::saveCheckpoint(const std::string &path) const {
  const Plan &p = *impl->plan;
  impl->syncMirror();
  std::vector<HostTensorView> views;
  std::vector<std::vector<float>> narrowed; // f64 precision only
  narrowed.reserve(p.persistent.size());
  for (const PersistentTensor &t : p.persistent) {
    const void *data = impl->persistentData(t);
    if (impl->wide() && t.type.dtype == DType::F32) {
      const double *wide = static_cast<const double *>(data);
      narrowed.emplace_back(wide, wide + t.type.numElements());
      data = narrowed.back().data();
    }
    views.push_back({t.name, t.type.dtype, t.type.shape, data,
                     static_cast<size_t>(t.type.bytes())});
  }
  std::string steps;
  for (size_t i = 0; i < p.entries.size(); ++i)
    steps += (i ? "," : "") + p.entries[i].name + "=" +
             std::to_string(impl->entries[i].steps);
  return writeSafeTensors(
      path, views,
      {{"format", "pt"}, {"zcc.producer", p.producer}, {kStepsKey, steps}});
}

Status Session::loadCheckpoint(const std::string &path) {
  const Plan &p = *impl->plan;
  std::vector<HostTensor> tensors;
  std::vector<std::pair<std::string, std::string>> metadata;
  ZRT_RETURN_IF_ERROR(readSafeTensors(path, tensors, &metadata));
  std::vector<const HostTensor *> byPersistent(p.persistent.size(), nullptr);
  for (const HostTensor &t : tensors) {
    int index = p.findPersistent(t.name);
    if (index < 0)
      return makeError(StatusCode::InvalidArgument, path, ": tensor '", t.name,
                       "' is not a persistent tensor of this plan");
    const PersistentTensor &want = p.persistent[index];
    if (t.dtype != want.type.dtype || t.shape != want.type.shape)
      return makeError(StatusCode::InvalidArgument, path, ": tensor '", t.name,
                       "' is ", typeString(TensorType{t.dtype, t.shape}),
                       ", the plan has ", typeString(want.type));
    byPersistent[index] = &t;
  }
  for (size_t i = 0; i < p.persistent.size(); ++i)
    if (!byPersistent[i])
      return makeError(StatusCode::InvalidArgument, path, ": no tensor '",
                       p.persistent[i].name, "'");
  // Everything matched: now write.
  impl->writingMirror();
  for (size_t i = 0; i < p.persistent.size(); ++i) {
    const PersistentTensor &t = p.persistent[i];
    uint8_t *to = impl->persistentData(t);
    const uint8_t *from = byPersistent[i]->bytes.data();
    if (impl->wide() && t.type.dtype == DType::F32) {
      widenF32(from, reinterpret_cast<double *>(to), t.type.numElements());
    } else {
      std::memcpy(to, from, static_cast<size_t>(t.type.bytes()));
    }
  }
  // Step counters resume (AdamW's bias correction depends on them).
  for (const auto &[key, value] : metadata) {
    if (key != kStepsKey)
      continue;
    size_t pos = 0;
    while (pos < value.size()) {
      size_t comma = value.find(',', pos);
      std::string item = value.substr(pos, comma - pos);
      size_t eq = item.rfind('=');
      if (eq != std::string::npos) {
        int index = p.findEntry(item.substr(0, eq));
        if (index >= 0)
          impl->entries[index].steps =
              std::strtoll(item.c_str() + eq + 1, nullptr, 10);
      }
      if (comma == std::string::npos)
        break;
      pos = comma + 1;
    }
  }
  return Status::ok();
}

SessionStats Session::stats() const {
  const Plan &p = *impl->plan;
  SessionStats s;
  s.arenaCapacity = impl->arenaCapacity;
  s.arenaSize = p.arenaSize;
  for (const Entry &e : p.entries) {
    s.lowerBound = std::max(s.lowerBound, e.lowerBound);
    s.noReuseSize = std::max(s.noReuseSize, e.noReuseSize);
  }
  s.persistentSize = p.persistentSize;
  s.inputSize = impl->inputCapacity / impl->scale;
  s.outputSize = impl->outputCapacity / impl->scale;
  s.constantSize = p.constantSize;
  s.stepsRun = impl->stepsRun;
  s.launchesRun = impl->launchesRun;
  s.allocationsAtLoad = impl->allocationsAtLoad;
  s.allocationsAfterLoad = impl->allocations() - impl->allocationsAtLoad;
  s.bytesAllocated = impl->allocator.bytes() +
                     (impl->device ? impl->device->bytesAllocated() : 0);
  s.deviceBytes = impl->device ? impl->device->deviceBytes() : 0;
  s.hostIssueSeconds = impl->device ? impl->device->issueSeconds() : 0;
  s.deviceName = impl->device ? impl->device->deviceName() : "cpu";
  return s;
}
