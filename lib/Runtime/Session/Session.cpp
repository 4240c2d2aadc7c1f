//===- Session.cpp - a plan, its step counters and the host's view -------===//
//
// The session owns the plan and what the host sees of it (tensors by name,
// f32/f64 conversion, initializers, step counters); its executor
// (Executors/Executor.h) owns the memory and runs the entries. Checkpoints
// (Checkpoint.cpp) and statistics (SessionStats.cpp) are beside it.
//
//===----------------------------------------------------------------------===//

#include "zcc/Runtime/Session/Session.h"

#include "Executors/Executor.h"
#include "Session/Initializers.h"
#include "Session/SessionImpl.h"
#include "zcc/Runtime/Plan/KernelRules.h"
#include "zcc/Runtime/Plan/PlanFile.h"
#include "zcc/Runtime/IO/HostTensor.h"

#include <algorithm>
#include <cstring>
#include <limits>

using namespace zcc::runtime;

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
  if (!(options.hostMemoryFraction > 0 && options.hostMemoryFraction <= 1))
    return makeError(StatusCode::InvalidArgument,
                     "the host memory fraction must be in (0, 1], got ",
                     options.hostMemoryFraction);
  if (Communicator *comm = options.communicator.get())
    ZRT_RETURN_IF_ERROR(checkDataParallel(*plan, *comm));
  int ranks = options.communicator ? options.communicator->size() : 1;
  if (uint32_t world = plan->worldSize();
      world != 0 && world != static_cast<uint32_t>(ranks))
    return makeError(StatusCode::InvalidArgument,
                     "the plan shards its optimizer state over ", world,
                     " ranks (zcc --shard-optimizer-state --world-size ", world,
                     ") and this job has ", ranks,
                     ranks == 1 ? " (start it with mpirun -np " +
                                      std::to_string(world) + ")"
                                : "");
  auto impl = std::make_unique<Impl>();
  impl->plan = plan;
  impl->options = options;
  impl->scale = options.precision == Precision::F64 ? 2 : 1;
  ZRT_RETURN_IF_ERROR(createExecutor(plan, options, impl->executor));
  const RegionBases &host = impl->executor->hostRegions();
  impl->entries.resize(plan->entries.size());
  for (size_t i = 0; i < plan->entries.size(); ++i) {
    const Entry &e = plan->entries[i];
    EntryState &state = impl->entries[i];
    state.bufferAddress.resize(e.buffers.size());
    for (size_t b = 0; b < e.buffers.size(); ++b)
      state.bufferAddress[b] = host.address(e.buffers[b], impl->scale);
    for (size_t t = 0; t < e.tensors.size(); ++t)
      if (e.tensors[t].role == TensorRole::Step)
        state.stepTensor = static_cast<int>(t);
  }
  impl->allocationsAtLoad = impl->executor->allocations();
  out.reset(new Session(std::move(impl)));
  out->initialize(options.seed);
  // Every rank starts from rank 0's parameters, as PyTorch DDP does: the
  // same seed gives the same values today, and this keeps it so for any
  // initializer.
  if (Communicator *comm = options.communicator.get()) {
    Impl &i = *out->impl;
    i.executor->beforeHostWrite();
    comm->broadcast(i.executor->hostRegions().persistent,
                    plan->persistentSize * i.scale);
  }
  return Status::ok();
}

Status zcc::runtime::checkDataParallel(const Plan &plan, Communicator &comm) {
  std::vector<uint8_t> bytes = serializePlan(plan);
  ZRT_RETURN_IF_ERROR(
      comm.checkSame(fnv1a64(bytes.data(), bytes.size()),
                     "plan (a hash of its bytes; every rank must load the "
                     "same .zplan)"));
  if (comm.size() > 1 && !plan.communicates())
    return makeError(StatusCode::InvalidArgument,
                     "the plan was compiled "
                     "without --data-parallel, so its ",
                     comm.size(),
                     " ranks would each train a model of their own; compile "
                     "it with zcc --data-parallel");
  return Status::ok();
}

const Plan &Session::plan() const { return *impl->plan; }
const SessionOptions &Session::options() const { return impl->options; }

void Session::initialize(uint64_t seed) {
  impl->executor->beforeHostWrite();
  const std::vector<PersistentTensor> &persistent = impl->plan->persistent;
  impl->awaitingValue.assign(persistent.size(), 0);
  impl->awaiting = 0;
  for (size_t i = 0; i < persistent.size(); ++i) {
    fillInitializer(persistent[i], seed, impl->wide(),
                    impl->persistentData(persistent[i]));
    if (persistent[i].init.kind == InitKind::Given) {
      impl->awaitingValue[i] = 1;
      ++impl->awaiting;
    }
  }
  for (EntryState &e : impl->entries)
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
  // A kind's name ("eval", "predict") stands for the plan's one entry of
  // that kind.
  if (std::optional<EntryKind> kind = parseEntryKind(name); index < 0 && kind) {
    for (size_t i = 0; i < p.entries.size(); ++i)
      if (p.entries[i].kind == *kind) {
        if (index >= 0)
          return makeError(StatusCode::InvalidArgument, "the plan has several ",
                           name, " entries ('", p.entries[index].name,
                           "', '", p.entries[i].name, "'); name one");
        index = static_cast<int>(i);
      }
    if (index < 0)
      return makeError(StatusCode::InvalidArgument, "the plan has no ", name,
                       " entry",
                       *kind == EntryKind::Eval || *kind == EntryKind::Predict
                           ? " (compile the step with one: docs/python.md, "
                             "docs/zt-dialect.md)"
                           : "");
  }
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
  impl->executor->beforeHostRead();
  return impl->persistentData(impl->plan->persistent[index]);
}

void *Session::data(const TensorInfo &tensor) const {
  if (tensor.region == Region::Persistent)
    impl->executor->beforeHostWrite(); // the caller may write through it
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

Status Session::run(int entry) { return runEntry(entry, nullptr); }

Status Session::runChecked(int entry, NonFiniteFinding &finding) {
  finding = NonFiniteFinding();
  finding.entry = entry;
  return runEntry(entry, &finding);
}

Status Session::runEntry(int entry, NonFiniteFinding *check) {
  if (entry < 0 || entry >= static_cast<int>(impl->entries.size()))
    return makeError(StatusCode::InvalidArgument, "no entry ", entry);
  const Entry &e = impl->plan->entries[entry];
  EntryState &state = impl->entries[entry];
  if (impl->awaiting > 0) {
    const std::vector<PersistentTensor> &persistent = impl->plan->persistent;
    size_t first = 0;
    while (!impl->awaitingValue[first])
      ++first;
    return makeError(StatusCode::InvalidArgument, "parameter '",
                     persistent[first].name,
                     "' (and ", impl->awaiting - 1,
                     " more) is initialized 'given' (its value comes at load) "
                     "and has not been given one: load a checkpoint "
                     "(zrun --load-checkpoint) or write it before the first "
                     "step; nothing ran");
  }
  if (state.stepTensor >= 0) {
    const Tensor &t = e.tensors[state.stepTensor];
    std::memcpy(state.bufferAddress[t.buffer], &state.steps, sizeof(int64_t));
  }
  if (check)
    ZRT_RETURN_IF_ERROR(impl->executor->runChecked(entry, state.steps, *check));
  else
    ZRT_RETURN_IF_ERROR(impl->executor->run(entry, state.steps));
  impl->launchesRun += e.launches.size();
  ++state.steps;
  ++state.runs;
  ++impl->stepsRun;
  if (e.kind == EntryKind::Microbatch)
    ++impl->microbatchesSinceApply;
  else if (e.kind == EntryKind::Apply)
    impl->microbatchesSinceApply = 0;
  return Status::ok();
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
    impl->executor->beforeHostRead();
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

namespace {
/// Writes `count` values of `in` over a tensor whose bytes are `to`, each
/// converted to the tensor's dtype (float elements: f64 in wide sessions).
template <typename From>
void convertInto(uint8_t *to, DType dtype, bool wide, const From *in,
                 size_t count) {
  for (size_t i = 0; i < count; ++i) {
    switch (dtype) {
    case DType::F32:
      if (wide)
        reinterpret_cast<double *>(to)[i] = static_cast<double>(in[i]);
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
}
} // namespace

template <typename From>
Status Session::writeAs(const TensorInfo &tensor, const From *in,
                        size_t count) {
  const TensorType &type = tensor.desc->type;
  if (count != static_cast<size_t>(type.numElements()))
    return makeError(StatusCode::InvalidArgument, "tensor '", tensor.desc->name,
                     "' has ", type.numElements(), " elements; got ", count);
  if (tensor.region == Region::Persistent) {
    int index = impl->plan->findPersistent(tensor.desc->name);
    if (index >= 0)
      impl->markWritten(static_cast<size_t>(index));
  }
  convertInto(static_cast<uint8_t *>(data(tensor)), type.dtype, impl->wide(),
              in, count);
  return Status::ok();
}

Status Session::writeValues(const TensorInfo &tensor, const double *in,
                            size_t count) {
  return writeAs(tensor, in, count);
}

Status Session::writeValues(const TensorInfo &tensor, const float *in,
                            size_t count) {
  return writeAs(tensor, in, count);
}
