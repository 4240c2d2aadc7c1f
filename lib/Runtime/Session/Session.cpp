//===- Session.cpp - a plan, its step counters and the host's view -------===//
//
// The session owns the plan and what the host sees of it (tensors by name,
// f32/f64 conversion, initializers, checkpoints, step counters); its
// executor (Executors/Executor.h) owns the memory and runs the entries.
//
//===----------------------------------------------------------------------===//

#include "zcc/Runtime/Session/Session.h"

#include "Executors/Executor.h"
#include "Session/Initializers.h"
#include "zcc/Runtime/IO/SafeTensors.h"
#include "zcc/Runtime/Plan/KernelRules.h"
#include "zcc/Runtime/Plan/PlanFile.h"
#include "zcc/Runtime/IO/HostTensor.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>

using namespace zcc::runtime;

namespace {

struct EntryState {
  /// Host addresses of the entry's input, output and persistent buffers.
  std::vector<uint8_t *> bufferAddress;
  int stepTensor = -1;
  int64_t steps = 0;
  uint64_t runs = 0; // not reset: what ran in this session
};

} // namespace

struct Session::Impl {
  std::shared_ptr<const Plan> plan;
  SessionOptions options;
  /// Bytes per byte of the plan: 2 in f64 precision (float elements double).
  uint64_t scale = 1;
  std::unique_ptr<Executor> executor;
  std::vector<EntryState> entries;
  uint64_t allocationsAtLoad = 0;
  uint64_t stepsRun = 0, launchesRun = 0, microbatchesSinceApply = 0;
  /// Per persistent tensor: initialized `given` and not written since.
  std::vector<char> awaitingValue;
  size_t awaiting = 0;

  void markWritten(size_t persistent) {
    if (awaitingValue[persistent]) {
      awaitingValue[persistent] = 0;
      --awaiting;
    }
  }

  bool wide() const { return options.precision == Precision::F64; }
  uint8_t *persistentData(const PersistentTensor &t) const {
    return executor->hostRegions().persistent + t.offset * scale;
  }
};

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

Status Session::run(int entry) {
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

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

namespace {
constexpr const char *kStepsKey = "zcc.steps";
} // namespace

Status Session::saveCheckpoint(const std::string &path) const {
  const Plan &p = *impl->plan;
  impl->executor->beforeHostRead();
  std::vector<HostTensorView> views;
  std::vector<std::vector<float>> narrowed; // f64 precision only
  narrowed.reserve(p.persistent.size() + p.sharded.size());
  // ZeRO-1: each sharded state whole, from every rank's shard, written per
  // parameter as unsharded training names it.
  Communicator *comm = impl->options.communicator.get();
  for (const ShardedState &state : p.sharded) {
    const PersistentTensor &shard = p.persistent[p.findPersistent(state.name)];
    uint64_t count = static_cast<uint64_t>(shard.type.numElements());
    std::vector<double> whole(count * state.ranks);
    const uint8_t *mine = impl->persistentData(shard);
    std::vector<double> local(count);
    // f64 on the wire either way: a checkpoint happens once, not per step.
    if (impl->wide())
      std::memcpy(local.data(), mine, count * 8);
    else
      widenF32(mine, local.data(), static_cast<int64_t>(count));
    if (comm)
      comm->allGather(local.data(), whole.data(), count, CollectiveType::F64);
    else
      whole = local;
    narrowed.emplace_back(whole.begin(), whole.end());
    for (size_t i = 0; i < state.params.size(); ++i) {
      const PersistentTensor &param =
          p.persistent[p.findPersistent(state.params[i])];
      views.push_back({state.params[i] + state.suffix, DType::F32,
                       param.type.shape,
                       narrowed.back().data() + state.offsets[i],
                       static_cast<size_t>(param.type.bytes())});
    }
  }
  // With several ranks every rank gathers; rank 0 writes.
  if (comm && comm->rank() != 0)
    return Status::ok();
  for (const PersistentTensor &t : p.persistent) {
    if (std::any_of(p.sharded.begin(), p.sharded.end(),
                    [&](const ShardedState &s) { return s.name == t.name; }))
      continue; // written per parameter above
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
  // ZeRO-1: per sharded state, the file's tensor of each parameter.
  std::vector<std::vector<const HostTensor *>> byShard(p.sharded.size());
  for (size_t s = 0; s < p.sharded.size(); ++s)
    byShard[s].assign(p.sharded[s].params.size(), nullptr);
  for (const HostTensor &t : tensors) {
    int index = p.findPersistent(t.name);
    size_t param = 0;
    if (const ShardedState *state = p.findShardedState(t.name, param);
        index < 0 && state) {
      const TensorType &want =
          p.persistent[p.findPersistent(state->params[param])].type;
      if (t.dtype != DType::F32 || t.shape != want.shape)
        return makeError(StatusCode::InvalidArgument, path, ": tensor '",
                         t.name, "' is ",
                         typeString(TensorType{t.dtype, t.shape}),
                         ", the plan's parameter has ", typeString(want));
      byShard[state - p.sharded.data()][param] = &t;
      continue;
    }
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
  std::vector<int> shardOf(p.persistent.size(), -1);
  for (size_t s = 0; s < p.sharded.size(); ++s) {
    shardOf[p.findPersistent(p.sharded[s].name)] = static_cast<int>(s);
    for (size_t i = 0; i < byShard[s].size(); ++i)
      if (!byShard[s][i])
        return makeError(StatusCode::InvalidArgument, path, ": no tensor '",
                         p.sharded[s].params[i] + p.sharded[s].suffix, "'");
  }
  for (size_t i = 0; i < p.persistent.size(); ++i)
    if (!byPersistent[i] && shardOf[i] < 0)
      return makeError(StatusCode::InvalidArgument, path, ": no tensor '",
                       p.persistent[i].name, "'");
  // Everything matched: now write.
  impl->executor->beforeHostWrite();
  int rank =
      impl->options.communicator ? impl->options.communicator->rank() : 0;
  for (size_t i = 0; i < p.persistent.size(); ++i) {
    const PersistentTensor &t = p.persistent[i];
    if (shardOf[i] >= 0) {
      // This rank's elements [rank S, rank S + S) of the flat state, from
      // the parameters' tensors that overlap them; padding is zero.
      const ShardedState &state = p.sharded[shardOf[i]];
      const std::vector<const HostTensor *> &files = byShard[shardOf[i]];
      uint64_t count = static_cast<uint64_t>(t.type.numElements());
      uint64_t begin = static_cast<uint64_t>(rank) * count;
      std::vector<float> shard(count, 0.0f);
      for (size_t k = 0; k < state.params.size(); ++k) {
        uint64_t n = files[k]->bytes.size() / 4;
        uint64_t from = std::max(begin, state.offsets[k]);
        uint64_t to = std::min(begin + count, state.offsets[k] + n);
        if (from < to)
          std::memcpy(shard.data() + (from - begin),
                      files[k]->bytes.data() + 4 * (from - state.offsets[k]),
                      4 * (to - from));
      }
      uint8_t *at = impl->persistentData(t);
      if (impl->wide())
        widenF32(reinterpret_cast<const uint8_t *>(shard.data()),
                 reinterpret_cast<double *>(at), static_cast<int64_t>(count));
      else
        std::memcpy(at, shard.data(), count * 4);
      impl->markWritten(i);
      continue;
    }
    uint8_t *to = impl->persistentData(t);
    const uint8_t *from = byPersistent[i]->bytes.data();
    if (impl->wide() && t.type.dtype == DType::F32) {
      widenF32(from, reinterpret_cast<double *>(to), t.type.numElements());
    } else {
      std::memcpy(to, from, static_cast<size_t>(t.type.bytes()));
    }
    impl->markWritten(i);
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
  const Executor &executor = *impl->executor;
  SessionStats s;
  s.arenaCapacity = executor.arenaCapacity();
  s.arenaSize = p.arenaSize;
  for (const Entry &e : p.entries) {
    s.lowerBound = std::max(s.lowerBound, e.lowerBound);
    s.noReuseSize = std::max(s.noReuseSize, e.noReuseSize);
    s.inputSize = std::max(s.inputSize, e.inputSize);
    s.outputSize = std::max(s.outputSize, e.outputSize);
  }
  s.persistentSize = p.persistentSize;
  s.constantSize = p.constantSize;
  s.stepsRun = impl->stepsRun;
  s.launchesRun = impl->launchesRun;
  for (size_t i = 0; i < p.entries.size(); ++i)
    s.entryRuns.push_back(
        {p.entries[i].name, p.entries[i].kind, impl->entries[i].runs});
  s.microbatchesSinceApply = impl->microbatchesSinceApply;
  s.allocationsAtLoad = impl->allocationsAtLoad;
  s.allocationsAfterLoad = executor.allocations() - impl->allocationsAtLoad;
  s.bytesAllocated = executor.bytesAllocated();
  s.deviceBytes = executor.deviceBytes();
  s.hostIssueSeconds = executor.issueSeconds();
  s.deviceName = executor.deviceName();
  return s;
}

uint64_t zcc::runtime::runsOf(const SessionStats &stats, EntryKind kind) {
  uint64_t runs = 0;
  for (const EntryRuns &e : stats.entryRuns)
    if (e.kind == kind)
      runs += e.runs;
  return runs;
}

std::string zcc::runtime::sessionStatsJson(const SessionStats &s) {
  using json = nlohmann::ordered_json;
  json entries = json::array();
  for (const EntryRuns &e : s.entryRuns)
    entries.push_back(
        {{"name", e.name}, {"kind", entryKindName(e.kind)}, {"runs", e.runs}});
  json runsByKind = json::object();
  for (EntryKind kind :
       {EntryKind::TrainStep, EntryKind::Microbatch, EntryKind::Apply})
    runsByKind[entryKindName(kind)] = runsOf(s, kind);
  json out = {{"schema", "zcc.stats/v1"},
              {"device", s.deviceName},
              {"arena_capacity_bytes", s.arenaCapacity},
              {"planned_peak_bytes", s.arenaSize},
              {"lower_bound_bytes", s.lowerBound},
              {"no_reuse_bytes", s.noReuseSize},
              {"region_bytes",
               {{"arena", s.arenaCapacity},
                {"persistent", s.persistentSize},
                {"input", s.inputSize},
                {"output", s.outputSize},
                {"constant", s.constantSize}}},
              {"allocations_at_load", s.allocationsAtLoad},
              {"allocations_after_load", s.allocationsAfterLoad},
              {"bytes_allocated", s.bytesAllocated},
              {"device_bytes", s.deviceBytes},
              {"entries_run", s.stepsRun},
              {"launches_run", s.launchesRun},
              {"runs_by_kind", std::move(runsByKind)},
              {"runs_by_entry", std::move(entries)},
              {"microbatches_since_apply", s.microbatchesSinceApply},
              {"host_issue_seconds", s.hostIssueSeconds}};
  return out.dump(2) + "\n";
}
