//===- CpuExecutor.cpp - the kernels on the host --------------------------===//
//
// create() does all the work that could allocate or fail on the plan's
// structure: regions, buffer addresses, each launch's steps and the poison
// schedule. run() then only walks prepared arrays.
//
//===----------------------------------------------------------------------===//

#include "Executors/Executor.h"

#include "Kernels/HostRun.h"
#include "Executors/Memory.h"

#include "zcc/Runtime/Plan/KernelRules.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

using namespace zcc::runtime;

namespace {

/// Quiet NaN in every float element, whichever of f32/f64/bf16 the bytes
/// hold (0x7fc07fc0 is NaN as one f32 and as two bf16); integer elements
/// get a pattern that is out of range as an index.
void poisonBytes(uint8_t *data, size_t bytes, bool wide) {
  if (wide) {
    const uint64_t nan = 0x7ff8000000000000ull;
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8)
      std::memcpy(data + i, &nan, 8);
    std::memset(data + i, 0xff, bytes - i);
    return;
  }
  const uint32_t nan = 0x7fc07fc0u;
  size_t i = 0;
  for (; i + 4 <= bytes; i += 4)
    std::memcpy(data + i, &nan, 4);
  std::memset(data + i, 0xff, bytes - i);
}

struct Span {
  uint8_t *data;
  size_t bytes;
};

bool overlaps(const std::vector<Span> &a, const std::vector<Span> &b) {
  for (const Span &x : a)
    for (const Span &y : b)
      if (x.data < y.data + y.bytes && y.data < x.data + x.bytes)
        return true;
  return false;
}

/// One launch: its steps (the kernels every executor runs, DeviceProgram.h),
/// the collectives to finish before it and the buffers whose last use it is.
struct PreparedLaunch {
  size_t endStep;
  /// Into PreparedEntry::waits: [firstWait, endWait) before the launch,
  /// [endWait, endPoisonWait) after it, before its buffers are poisoned.
  size_t firstWait, endWait, endPoisonWait;
  size_t firstPoison, endPoison; // into PreparedEntry::poison
  bool communicates = false;     // its Collective steps start, not block
};

/// A data-parallel step overlaps its collectives with the kernels: a
/// Collective step starts (Communicator::start) and the executor finishes
/// it before the first later launch that reads what it writes or writes
/// what it reads or writes, so a bucket's reduction runs during the rest of
/// the backward. Each Collective step of the entry has a slot for its
/// ticket, in program order.
struct PreparedEntry {
  // The entry's program, in the session's precision.
  std::vector<device::StepOf<float>> steps32;
  std::vector<device::StepOf<double>> steps64;
  std::vector<PreparedLaunch> launches;
  std::vector<uint32_t> waits;      // collective slots
  std::vector<uint32_t> finalWaits; // finished when the entry ends
  std::vector<uint64_t> tickets;    // per slot, while it runs
  std::vector<uint8_t> started;     // per slot: started, not yet finished
  std::vector<Span> poison;
  std::vector<uint8_t *> buffers; // each buffer's address (checked runs)
};

/// ZCC_PROFILE=1: the time of every launch, summed per kernel and phase,
/// printed to stderr when the session ends (where a step's time goes;
/// docs/runtime.md). Off, it costs one branch per launch.
struct KernelProfile {
  struct Row {
    uint64_t calls = 0;
    double seconds = 0;
  };
  std::map<std::pair<std::string, std::string>, Row> rows;

  void add(const Launch &launch, double seconds) {
    Row &row = rows[{launch.name(), phaseName(launch.phase)}];
    ++row.calls;
    row.seconds += seconds;
  }
  void print() const {
    double total = 0;
    for (const auto &[key, row] : rows)
      total += row.seconds;
    std::vector<std::pair<double, std::string>> lines;
    for (const auto &[key, row] : rows) {
      char line[160];
      std::snprintf(line, sizeof line, "  %-24s %-10s %8" PRIu64
                    " %12.1f %6.1f%%\n",
                    key.first.c_str(), key.second.c_str(), row.calls,
                    1000 * row.seconds, 100 * row.seconds / std::max(total, 1e-12));
      lines.emplace_back(-row.seconds, line);
    }
    std::sort(lines.begin(), lines.end());
    std::fprintf(stderr,
                 "zcc profile (CPU executor, ZCC_PROFILE): %.1f ms in "
                 "kernels\n  %-24s %-10s %8s %12s %7s\n",
                 1000 * total, "kernel", "phase", "calls", "ms", "share");
    for (const auto &[key, line] : lines)
      std::fputs(line.c_str(), stderr);
  }
};

class CpuExecutor final : public Executor {
public:
  ~CpuExecutor() override {
    if (profile)
      profile->print();
  }
  Status create(std::shared_ptr<const Plan> plan,
                const SessionOptions &options);

  const RegionBases &hostRegions() const override { return regions; }
  Status run(int entry, int64_t step) override {
    return wide() ? runEntry<double>(entry, step) : runEntry<float>(entry, step);
  }
  Status runChecked(int entry, int64_t step,
                    NonFiniteFinding &finding) override {
    return wide() ? runEntry<double>(entry, step, &finding)
                  : runEntry<float>(entry, step, &finding);
  }
  uint64_t arenaCapacity() const override { return arenaBytes; }
  uint64_t allocations() const override { return allocator.count(); }
  uint64_t bytesAllocated() const override { return allocator.bytes(); }
  std::string deviceName() const override { return "cpu"; }

private:
  bool wide() const { return scale == 2; }
  Status allocateRegions();
  void fillConstants();
  Status prepareEntry(size_t index);
  template <typename T>
  Status runEntry(int index, int64_t step, NonFiniteFinding *check = nullptr);
  TensorRange rangeOfTensor(const Entry &e, const PreparedEntry &prepared,
                            uint32_t tensor) const;

  std::shared_ptr<const Plan> plan;
  ExecutionMode mode = ExecutionMode::Planned;
  /// Bytes per byte of the plan: 2 in f64 precision (float elements double).
  uint64_t scale = 1;
  double hostMemoryFraction = kDefaultHostMemoryFraction;
  CountedAllocator allocator;
  RegionBases regions;
  uint64_t arenaBytes = 0;
  /// The record of a step's first data error.
  device::DeviceError *error = nullptr;
  std::unique_ptr<device::HostThreads> threads;
  std::vector<PreparedEntry> entries;
  std::shared_ptr<Communicator> communicator;
  std::unique_ptr<KernelProfile> profile;
};

Status CpuExecutor::create(std::shared_ptr<const Plan> p,
                           const SessionOptions &options) {
  plan = std::move(p);
  mode = options.mode;
  if (const char *flag = std::getenv("ZCC_PROFILE"); flag && *flag &&
                                                      std::string(flag) != "0")
    profile = std::make_unique<KernelProfile>();
  hostMemoryFraction = options.hostMemoryFraction;
  communicator = options.communicator;
  scale = options.precision == Precision::F64 ? 2 : 1;
  if (wide())
    for (const Entry &e : plan->entries)
      for (const Tensor &t : e.tensors)
        if (t.type.dtype == DType::BF16)
          return makeError(
              StatusCode::InvalidArgument,
              "precision f64 runs an f32 plan in f64, and this plan stores "
              "bf16 (entry '",
              e.name, "', tensor ", typeString(t.type),
              "; compiled with --precision bf16): run it in f32, or compile "
              "the model without --precision bf16 for an f64 reference");
  device::HostIsa isa;
  ZRT_RETURN_IF_ERROR(device::hostIsaFromEnvironment(isa));
  threads = std::make_unique<device::HostThreads>(
      options.threads > 0
          ? options.threads
          : std::max(1, static_cast<int>(std::thread::hardware_concurrency())),
      isa);
  ZRT_RETURN_IF_ERROR(allocateRegions());
  entries.resize(plan->entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    ZRT_RETURN_IF_ERROR(prepareEntry(i));
    if (device::hasBf16Product(entries[i].steps32))
      threads->reserveScratch(device::bf16GemmScratchFloats());
  }
  fillConstants();
  return Status::ok();
}

Status CpuExecutor::allocateRegions() {
  const Plan &p = *plan;
  size_t align = p.alignment;
  SessionRegions sizes = sessionRegions(p, mode, align, scale);
  // Everything the session will hold, checked against what the OS reports
  // available before anything is allocated: a plan that cannot fit fails
  // here, naming the bytes, instead of paging the machine to a halt or
  // being killed mid-step. The session takes at most a fraction of it: the
  // process needs the rest (the interpreter, data, BLAS, checkpoints).
  auto aligned = [&](uint64_t bytes) {
    return (bytes + align - 1) / align * align;
  };
  bool noReuse = mode == ExecutionMode::NoReuse;
  uint64_t arena = noReuse ? sizes.separate : aligned(sizes.arena);
  uint64_t persistent = aligned(p.persistentSize * scale);
  uint64_t constants = aligned(p.constantSize * scale);
  uint64_t needed = arena + persistent + aligned(sizes.inputs) +
                    aligned(sizes.outputs) + constants;
  uint64_t available = 0;
  const char *source = "";
  if (availableHostMemory(available, source)) {
    auto limit = static_cast<uint64_t>(static_cast<double>(available) *
                                       hostMemoryFraction);
    if (needed > limit)
      return makeError(
          StatusCode::OutOfMemory, "the plan needs ", needed,
          " bytes of host memory (arena ", arena,
          noReuse ? " without reuse" : "", ", persistent ", persistent,
          ", inputs ", aligned(sizes.inputs), ", outputs ",
          aligned(sizes.outputs), ", constants ", constants,
          scale == 2 ? "; f64 doubles the floats" : "",
          ") and the machine has ", available, " bytes available (", source,
          "), of which a session may hold ",
          static_cast<int>(hostMemoryFraction * 100 + 0.5), "% (", limit,
          " bytes; zrun --host-memory-fraction); nothing was allocated and "
          "no step ran");
  }
  if (!noReuse) {
    arenaBytes = sizes.arena;
    ZRT_RETURN_IF_ERROR(
        allocator.allocate(arenaBytes, align, "arena", regions.arena));
  }
  ZRT_RETURN_IF_ERROR(allocator.allocate(
      p.persistentSize * scale, align, "persistent region", regions.persistent));
  ZRT_RETURN_IF_ERROR(
      allocator.allocate(sizes.inputs, align, "input region", regions.input));
  ZRT_RETURN_IF_ERROR(allocator.allocate(sizes.outputs, align, "output region",
                                         regions.output));
  ZRT_RETURN_IF_ERROR(allocator.allocate(p.constantSize * scale, align,
                                         "constant region", regions.constants));
  uint8_t *record = nullptr;
  ZRT_RETURN_IF_ERROR(allocator.allocate(sizeof(device::DeviceError), align,
                                         "error record", record));
  error = reinterpret_cast<device::DeviceError *>(record);
  return Status::ok();
}

/// Constant data is f32 in the plan; in f64 precision float tensors widen.
void CpuExecutor::fillConstants() {
  const Plan &p = *plan;
  if (!wide()) {
    if (!p.constants.empty())
      std::memcpy(regions.constants, p.constants.data(), p.constants.size());
    return;
  }
  for (const Entry &e : p.entries)
    for (const Tensor &t : e.tensors) {
      const Buffer &b = e.buffers[t.buffer];
      if (b.region != Region::Constant || t.isStrided())
        continue; // a broadcast view's bytes are its source's
      const uint8_t *from = p.constants.data() + b.offset;
      uint8_t *to = regions.constants + b.offset * scale;
      if (t.type.dtype == DType::F32)
        widenF32(from, reinterpret_cast<double *>(to), t.type.numElements());
      else
        std::memcpy(to, from, static_cast<size_t>(t.type.bytes()));
    }
}

Status CpuExecutor::prepareEntry(size_t index) {
  const Entry &e = plan->entries[index];
  PreparedEntry &prepared = entries[index];
  device::EntryMemory memory;
  memory.error = error;
  memory.communicator = communicator.get();
  memory.buffers.resize(e.buffers.size());
  for (size_t b = 0; b < e.buffers.size(); ++b) {
    const Buffer &buffer = e.buffers[b];
    if (buffer.region == Region::Arena && mode == ExecutionMode::NoReuse) {
      ZRT_RETURN_IF_ERROR(allocator.allocate(buffer.size * scale,
                                             plan->alignment, "arena buffer",
                                             memory.buffers[b]));
      arenaBytes += buffer.size * scale;
    } else {
      memory.buffers[b] = regions.address(buffer, scale);
    }
  }
  prepared.buffers = memory.buffers;
  if (e.workspace >= 0) {
    memory.workspace = memory.buffers[e.workspace];
    memory.workspaceBytes = e.buffers[e.workspace].size * scale;
    memory.pinnedBytes =
        std::min(pinnedScratchBytes(e) * scale, memory.workspaceBytes);
  }

  std::vector<std::vector<uint32_t>> dyingAfter = e.arenaBuffersDyingAfter();
  // Collectives started and not yet finished: their slots and bytes.
  struct Pending {
    uint32_t firstSlot, endSlot;
    std::vector<Span> reads, writes;
  };
  std::vector<Pending> pending;
  uint32_t slots = 0;
  auto bytesOf = [&](const std::vector<uint32_t> &tensors) {
    std::vector<Span> spans;
    for (uint32_t t : tensors) {
      uint32_t b = e.tensors[t].buffer;
      spans.push_back({memory.buffers[b], e.buffers[b].size * scale});
    }
    return spans;
  };
  // Moves the pending collectives that `conflict` to the waits.
  auto finishIf = [&](auto conflict) {
    for (size_t k = 0; k < pending.size();) {
      if (!conflict(pending[k])) {
        ++k;
        continue;
      }
      for (uint32_t slot = pending[k].firstSlot; slot < pending[k].endSlot;
           ++slot)
        prepared.waits.push_back(slot);
      pending.erase(pending.begin() + static_cast<ptrdiff_t>(k));
    }
  };
  for (size_t i = 0; i < e.launches.size(); ++i) {
    const Launch &launch = e.launches[i];
    PreparedLaunch p;
    std::vector<Span> reads = bytesOf(launch.inputs);
    std::vector<Span> writes = bytesOf(launch.outputs);
    p.firstWait = prepared.waits.size();
    finishIf([&](const Pending &c) {
      return overlaps(reads, c.writes) || overlaps(writes, c.writes) ||
             overlaps(writes, c.reads);
    });
    p.endWait = prepared.waits.size();
    size_t firstStep = 0;
    auto append = [&](auto &steps) {
      firstStep = steps.size();
      Status status = device::appendLaunch(e, i, memory, steps);
      p.endStep = steps.size();
      return status;
    };
    ZRT_RETURN_IF_ERROR(wide() ? append(prepared.steps64)
                               : append(prepared.steps32));
    p.communicates = communicator && kernelCommunicates(launch.kernel);
    if (p.communicates) {
      uint32_t collectives = 0;
      auto count = [&](const auto &steps) {
        for (size_t k = firstStep; k < steps.size(); ++k)
          collectives += std::holds_alternative<device::Collective>(steps[k]);
      };
      wide() ? count(prepared.steps64) : count(prepared.steps32);
      pending.push_back(
          {slots, slots + collectives, std::move(reads), std::move(writes)});
      slots += collectives;
    }
    p.firstPoison = prepared.poison.size();
    if (mode == ExecutionMode::Poison)
      for (uint32_t b : dyingAfter[i])
        prepared.poison.push_back(
            {memory.buffers[b], e.buffers[b].size * scale});
    p.endPoison = prepared.poison.size();
    // Poisoning writes: what it overwrites must not be in flight.
    std::vector<Span> poisoned(prepared.poison.begin() +
                                   static_cast<ptrdiff_t>(p.firstPoison),
                               prepared.poison.end());
    finishIf([&](const Pending &c) {
      return overlaps(poisoned, c.reads) || overlaps(poisoned, c.writes);
    });
    p.endPoisonWait = prepared.waits.size();
    prepared.launches.push_back(p);
  }
  for (const Pending &c : pending)
    for (uint32_t slot = c.firstSlot; slot < c.endSlot; ++slot)
      prepared.finalWaits.push_back(slot);
  prepared.tickets.assign(slots, 0);
  prepared.started.assign(slots, 0);
  return Status::ok();
}

TensorRange CpuExecutor::rangeOfTensor(const Entry &e,
                                       const PreparedEntry &prepared,
                                       uint32_t tensor) const {
  const Tensor &t = e.tensors[tensor];
  // A broadcast view's every stored element.
  uint64_t count = t.isStrided() ? e.buffers[t.buffer].size /
                                       dtypeBytes(t.type.dtype)
                                 : static_cast<uint64_t>(t.type.numElements());
  return rangeOf(tensor, prepared.buffers[t.buffer], t.type.dtype, count,
                 wide());
}

template <typename T>
Status CpuExecutor::runEntry(int index, int64_t step, NonFiniteFinding *check) {
  const Entry &e = plan->entries[index];
  PreparedEntry &prepared = entries[index];
  if (mode == ExecutionMode::Poison)
    poisonBytes(regions.arena, arenaBytes, wide());
  const std::vector<device::StepOf<T>> *steps;
  if constexpr (sizeof(T) == 8)
    steps = &prepared.steps64;
  else
    steps = &prepared.steps32;
  std::memset(error, 0, sizeof(*error));
  auto finish = [&](uint32_t slot) {
    if (!prepared.started[slot])
      return; // a checked run finishes every collective at once
    communicator->finish(prepared.tickets[slot]);
    prepared.started[slot] = 0;
  };
  // A checked run: what the entry begins with that is not finite.
  auto isFloatTensor = [&](const Tensor &t) {
    return t.type.dtype == DType::F32 || t.type.dtype == DType::BF16;
  };
  if (check)
    for (uint32_t t = 0; t < e.tensors.size(); ++t) {
      const Tensor &tensor = e.tensors[t];
      Region region = e.buffers[tensor.buffer].region;
      if ((region == Region::Persistent || region == Region::Input) &&
          isFloatTensor(tensor))
        if (TensorRange r = rangeOfTensor(e, prepared, t); !r.finite())
          check->before.push_back(r);
    }
  size_t begin = 0;
  uint32_t slot = 0;
  for (const PreparedLaunch &p : prepared.launches) {
    for (size_t k = p.firstWait; k < p.endWait; ++k)
      finish(prepared.waits[k]);
    // A checked run records the inputs' ranges until it finds a launch
    // writing a NaN or an infinity; a launch may write over its inputs.
    size_t launchIndex = static_cast<size_t>(&p - prepared.launches.data());
    const Launch &launch = e.launches[launchIndex];
    std::vector<TensorRange> inputRanges;
    if (check && !check->nan)
      for (uint32_t t : launch.inputs)
        if (isFloatTensor(e.tensors[t]))
          inputRanges.push_back(rangeOfTensor(e, prepared, t));
    auto started = profile ? std::chrono::steady_clock::now()
                           : std::chrono::steady_clock::time_point();
    const device::StepOf<T> *first = steps->data() + begin;
    const device::StepOf<T> *last = steps->data() + p.endStep;
    // The CPU's own lowering has no backend calls, the one way these fail.
    if (!p.communicates) {
      ZRT_RETURN_IF_ERROR(device::runOnHost<T>(first, last, false, threads.get()));
    } else {
      for (const device::StepOf<T> *s = first; s != last; ++s)
        if (const auto *c = std::get_if<device::Collective>(s)) {
          prepared.tickets[slot] = communicator->start(c->call);
          prepared.started[slot++] = 1;
        } else {
          ZRT_RETURN_IF_ERROR(device::runOnHost<T>(s, s + 1, false, threads.get()));
        }
    }
    if (profile)
      profile->add(e.launches[&p - prepared.launches.data()],
                   std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - started)
                       .count());
    begin = p.endStep;
    if (communicator)
      communicator->progress();
    // Stop at the first bad index or label: nothing after it runs, so no
    // persistent tensor changes. The collectives in flight finish first
    // (every rank runs them).
    if (error->flag) {
      for (uint32_t k = 0; k < prepared.started.size(); ++k)
        if (prepared.started[k])
          finish(k);
      return device::stepDataError(e, step, *error);
    }
    for (size_t k = p.endWait; k < p.endPoisonWait; ++k)
      finish(prepared.waits[k]);
    if (check && !check->nan) {
      for (uint32_t k = 0; k < prepared.started.size(); ++k)
        finish(k); // the outputs are final
      std::vector<TensorRange> outputs;
      bool bad = false, nan = false;
      for (uint32_t t : launch.outputs)
        if (isFloatTensor(e.tensors[t])) {
          outputs.push_back(rangeOfTensor(e, prepared, t));
          bad |= !outputs.back().finite();
          nan |= outputs.back().nans > 0;
        }
      // The first launch writing a NaN; until one does, the first writing
      // an infinity.
      if (nan || (bad && !check->found)) {
        if (check->found && check->firstInfinite < 0)
          check->firstInfinite = static_cast<int64_t>(check->launch);
        check->found = true;
        check->nan = nan;
        check->launch = launchIndex;
        check->inputs = std::move(inputRanges);
        check->outputs = std::move(outputs);
      }
    }
    for (size_t k = p.firstPoison; k < p.endPoison; ++k)
      poisonBytes(prepared.poison[k].data, prepared.poison[k].bytes, wide());
  }
  for (uint32_t k : prepared.finalWaits)
    finish(k);
  return Status::ok();
}

} // namespace

Status zcc::runtime::createCpuExecutor(std::shared_ptr<const Plan> plan,
                                       const SessionOptions &options,
                                       std::unique_ptr<Executor> &out) {
  auto executor = std::make_unique<CpuExecutor>();
  ZRT_RETURN_IF_ERROR(executor->create(std::move(plan), options));
  out = std::move(executor);
  return Status::ok();
}
