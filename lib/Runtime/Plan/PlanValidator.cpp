//===- PlanValidator.cpp - the checks a plan passes before it runs --------===//
//
// Nothing from the file is trusted: every index, offset and size is bounded
// here, every launch is held to its kernel's rules (KernelRules.h), and the arena
// is checked again by the planner's independent checker over lifetimes the
// runtime derives from the launch list itself (not the lifetimes the
// compiler planned with), so a liveness bug in the compiler is caught at
// load instead of corrupting a saved activation mid-step.
//
//===----------------------------------------------------------------------===//

#include "zcc/Planner/PlanChecker.h"
#include "zcc/Runtime/Plan/KernelRules.h"
#include "zcc/Runtime/Plan/PlanFile.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

using namespace zcc::runtime;
namespace planner = zcc::planner;

namespace {

/// Regions larger than this are certainly corrupt (and would overflow
/// offset arithmetic); the real limit is what the allocation gets.
constexpr uint64_t kMaxRegionBytes = uint64_t(1) << 46;

Status invalid(const std::string &message) {
  return Status(StatusCode::InvalidPlan, message);
}

Status checkType(const TensorType &type, const std::string &what) {
  if (dtypeBytes(type.dtype) == 0)
    return invalid(what + ": unknown element type " +
                   std::to_string(static_cast<int>(type.dtype)));
  if (type.rank() > kMaxKernelRank)
    return invalid(what + ": rank " + std::to_string(type.rank()) +
                   " is above the limit of " + std::to_string(kMaxKernelRank));
  uint64_t elements = 1;
  for (int64_t d : type.shape) {
    if (d < 0)
      return invalid(what + ": negative dimension " + std::to_string(d));
    // Bounded before multiplying, so the product can never wrap.
    uint64_t dim = static_cast<uint64_t>(d);
    if (dim > kMaxRegionBytes || (dim && elements > kMaxRegionBytes / dim))
      return invalid(what + ": more elements than any region can hold");
    elements *= dim;
  }
  return Status::ok();
}

uint64_t alignTo(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

bool within(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

/// The byte extent of a tensor within its region.
/// Whether two views of one buffer share no element, by a sufficient rule.
/// A view's steps, smallest first, form a dense block of L elements while
/// each step is the block so far; the other steps are multiples of P, the
/// gcd of both views' other steps. Every element then lies at its offset's
/// residue mod P plus [0, L): two such ranges that do not wrap past P and
/// do not meet share nothing. (Attention's q, k and v gradients written
/// side by side into the fused projection's gradient.)
bool disjointViews(const Tensor &a, const Tensor &b) {
  if (a.buffer != b.buffer || !a.isStrided() || !b.isStrided() ||
      a.offset < 0 || b.offset < 0)
    return false;
  struct Form {
    int64_t block = 1;
    std::vector<int64_t> outer;
  };
  auto formOf = [](const Tensor &t, Form &form) {
    std::vector<std::pair<int64_t, int64_t>> dims; // (step, size > 1)
    for (size_t d = 0; d < t.strides.size() && d < t.type.shape.size(); ++d)
      if (t.type.shape[d] > 1) {
        if (t.strides[d] <= 0)
          return false;
        dims.emplace_back(t.strides[d], t.type.shape[d]);
      }
    std::sort(dims.begin(), dims.end());
    size_t i = 0;
    for (; i < dims.size() && dims[i].first == form.block; ++i)
      form.block *= dims[i].second; // shapes are checked: no overflow
    for (; i < dims.size(); ++i)
      form.outer.push_back(dims[i].first);
    return true;
  };
  Form fa, fb;
  if (!formOf(a, fa) || !formOf(b, fb))
    return false;
  int64_t period = 0;
  for (const Form *f : {&fa, &fb})
    for (int64_t step : f->outer)
      period = std::gcd(period, step);
  if (period == 0) // two dense runs
    return a.offset + fa.block <= b.offset || b.offset + fb.block <= a.offset;
  int64_t ra = a.offset % period, rb = b.offset % period;
  if (ra + fa.block > period || rb + fb.block > period)
    return false;
  return ra + fa.block <= rb || rb + fb.block <= ra;
}

struct Extent {
  Region region;
  uint64_t begin, end;
  bool overlaps(const Extent &o) const {
    return region == o.region && begin < o.end && o.begin < end;
  }
  bool operator==(const Extent &o) const {
    return region == o.region && begin == o.begin && end == o.end;
  }
};

Status checkInitializer(const PersistentTensor &t) {
  const Initializer &init = t.init;
  std::string what = "persistent tensor '" + t.name + "'";
  if (!std::isfinite(init.first) || !std::isfinite(init.second))
    return invalid(what + ": initializer values must be finite");
  if (init.kind == InitKind::Normal && !(init.second > 0))
    return invalid(what + ": normal initializer needs std > 0");
  if (init.kind == InitKind::Uniform && !(init.first < init.second))
    return invalid(what + ": uniform initializer needs low < high");
  if (init.kind != InitKind::Zeros && !isFloat(t.type.dtype))
    return invalid(what + ": only zeros can initialise an integer tensor");
  return Status::ok();
}

/// ZeRO-1's sharded state: a persistent rank-1 f32 shard for one world
/// size, covering persistent f32 parameters whose flat ranges lie in order
/// within the `ranks` shards.
Status checkSharded(const Plan &plan) {
  uint32_t world = plan.worldSize();
  for (const Entry &e : plan.entries)
    for (size_t i = 0; i < e.launches.size(); ++i) {
      const Launch &l = e.launches[i];
      if (kernelIsSharded(l.kernel) &&
          l.params.ranks != static_cast<int64_t>(world))
        return invalid(
            "entry '" + e.name + "': launch " + std::to_string(i) + " (" +
            l.name() + ") is for " + std::to_string(l.params.ranks) +
            " ranks; the plan's shards are for " + std::to_string(world));
    }
  for (const ShardedState &state : plan.sharded) {
    std::string what = "sharded state '" + state.name + "'";
    int index = plan.findPersistent(state.name);
    if (index < 0)
      return invalid(what + " is not a persistent tensor of the plan");
    const TensorType &shard = plan.persistent[index].type;
    if (shard.dtype != DType::F32 || shard.rank() != 1)
      return invalid(what + " is " + typeString(shard) +
                     ", not a flat f32 shard");
    if (state.ranks < 1 || state.ranks != plan.sharded[0].ranks)
      return invalid(what + " is for " + std::to_string(state.ranks) +
                     " ranks; the plan's shards are for " +
                     std::to_string(plan.sharded[0].ranks));
    if (state.suffix.empty() || state.params.empty() ||
        state.params.size() != state.offsets.size())
      return invalid(what + " needs a suffix and one offset per parameter");
    uint64_t whole = static_cast<uint64_t>(shard.shape[0]) * state.ranks;
    uint64_t end = 0;
    for (size_t i = 0; i < state.params.size(); ++i) {
      int param = plan.findPersistent(state.params[i]);
      if (param < 0)
        return invalid(what + " covers '" + state.params[i] +
                       "', which is not a persistent tensor of the plan");
      const TensorType &type = plan.persistent[param].type;
      uint64_t count = static_cast<uint64_t>(type.numElements());
      if (type.dtype != DType::F32 || state.offsets[i] < end ||
          state.offsets[i] > whole || count > whole - state.offsets[i])
        return invalid(what + ": parameter '" + state.params[i] +
                       "' at element " + std::to_string(state.offsets[i]) +
                       " does not fit after the previous one in its " +
                       std::to_string(whole) + " elements");
      end = state.offsets[i] + count;
    }
  }
  return Status::ok();
}

Status checkPersistent(const Plan &plan) {
  std::set<std::string> names;
  planner::Problem problem;
  std::vector<int64_t> offsets;
  for (size_t i = 0; i < plan.persistent.size(); ++i) {
    const PersistentTensor &t = plan.persistent[i];
    std::string what = "persistent tensor '" + t.name + "'";
    if (t.name.empty())
      return invalid("persistent tensor " + std::to_string(i) + " has no name");
    if (!names.insert(t.name).second)
      return invalid(what + " appears twice");
    ZRT_RETURN_IF_ERROR(checkType(t.type, what));
    if (!isFloat(t.type.dtype) && t.type.dtype != DType::I32 &&
        t.type.dtype != DType::I64)
      return invalid(what + " is " + dtypeName(t.type.dtype) +
                     ": persistent state is f32, i32 or i64 (mixed "
                     "precision keeps f32 master weights)");
    uint64_t bytes = static_cast<uint64_t>(t.type.bytes());
    if (!within(t.offset, bytes, plan.persistentSize))
      return invalid(what + " at offset " + std::to_string(t.offset) + ", " +
                     std::to_string(bytes) + " bytes, ends past the " +
                     std::to_string(plan.persistentSize) +
                     "-byte persistent region");
    ZRT_RETURN_IF_ERROR(checkInitializer(t));
    planner::BufferRequest request;
    request.id = static_cast<int64_t>(i);
    request.lower = 0;
    request.upper = 1;
    request.size = static_cast<int64_t>(bytes);
    problem.buffers.push_back(request);
    offsets.push_back(static_cast<int64_t>(t.offset));
  }
  std::string violation = planner::checkPlan(
      problem, offsets, static_cast<int64_t>(plan.persistentSize));
  if (!violation.empty())
    return invalid("persistent region: " + violation);
  // Region sizes are exactly what their contents need (aligned), so a
  // corrupt size can neither hide a tensor nor ask for absurd memory.
  uint64_t end = 0;
  for (const PersistentTensor &t : plan.persistent)
    end = std::max(end, t.offset + static_cast<uint64_t>(t.type.bytes()));
  if (alignTo(end, plan.alignment) != plan.persistentSize)
    return invalid("persistent region is " +
                   std::to_string(plan.persistentSize) +
                   " bytes; its tensors need " +
                   std::to_string(alignTo(end, plan.alignment)));
  return Status::ok();
}

class EntryValidator {
public:
  EntryValidator(const Plan &plan, const Entry &entry, size_t index)
      : plan(plan), entry(entry),
        where("entry '" + entry.name + "' (" + std::to_string(index) + ")") {}

  Status run() {
    ZRT_RETURN_IF_ERROR(checkHeader());
    ZRT_RETURN_IF_ERROR(checkBuffers());
    ZRT_RETURN_IF_ERROR(checkTensors());
    ZRT_RETURN_IF_ERROR(checkLaunches());
    ZRT_RETURN_IF_ERROR(checkWorkspace());
    ZRT_RETURN_IF_ERROR(checkLifetimes());
    return Status::ok();
  }

private:
  Status checkHeader() {
    if (entry.name.empty())
      return invalid(where + " has no name");
    if (entry.arenaSize > plan.arenaSize)
      return invalid(where + ": arena of " + std::to_string(entry.arenaSize) +
                     " bytes exceeds the plan's " +
                     std::to_string(plan.arenaSize));
    if (entry.lowerBound > entry.arenaSize)
      return invalid(
          where + ": lower bound " + std::to_string(entry.lowerBound) +
          " exceeds the arena size " + std::to_string(entry.arenaSize));
    if (entry.inputSize > kMaxRegionBytes || entry.outputSize > kMaxRegionBytes)
      return invalid(where + ": input or output region is implausibly large");
    return Status::ok();
  }

  uint64_t regionLimit(Region region) const {
    switch (region) {
    case Region::Arena:
      return entry.arenaSize;
    case Region::Persistent:
      return plan.persistentSize;
    case Region::Input:
      return entry.inputSize;
    case Region::Output:
      return entry.outputSize;
    case Region::Constant:
      return plan.constantSize;
    }
    return 0;
  }

  /// Arena buffers only zt.pack writes and only a reduce_scatter of its
  /// parts reads: a packed bucket's parts lie end to end, so one may start
  /// anywhere an element can (copies and the collective need no more).
  std::vector<bool> packedOnly() const {
    std::vector<bool> packed(entry.buffers.size(), false), other(packed);
    for (const Launch &launch : entry.launches) {
      bool packs = launch.kernel == KernelId::Pack ||
                   (launch.kernel == KernelId::ReduceScatter &&
                    launch.inputs.size() > 1);
      for (const std::vector<uint32_t> *list :
           {&launch.inputs, &launch.outputs})
        for (uint32_t t : *list) {
          if (t >= entry.tensors.size() ||
              entry.tensors[t].buffer >= entry.buffers.size())
            continue; // refused by the launch checks
          uint32_t b = entry.tensors[t].buffer;
          (packs ? packed : other)[b] = true;
        }
    }
    for (size_t b = 0; b < packed.size(); ++b)
      packed[b] =
          packed[b] && !other[b] && entry.buffers[b].region == Region::Arena;
    return packed;
  }

  Status checkBuffers() {
    std::vector<bool> packed = packedOnly();
    uint64_t arenaEnd = 0, inputEnd = 0, outputEnd = 0;
    for (const Buffer &b : entry.buffers) {
      uint64_t end = b.offset + b.size; // bounded below before use
      if (b.region == Region::Arena)
        arenaEnd = std::max(arenaEnd, end);
      if (b.region == Region::Input)
        inputEnd = std::max(inputEnd, end);
      if (b.region == Region::Output)
        outputEnd = std::max(outputEnd, end);
    }
    if (arenaEnd != entry.arenaSize)
      return invalid(where + ": arena of " + std::to_string(entry.arenaSize) +
                     " bytes, but its buffers end at " +
                     std::to_string(arenaEnd));
    if (alignTo(inputEnd, plan.alignment) != entry.inputSize ||
        alignTo(outputEnd, plan.alignment) != entry.outputSize)
      return invalid(where + ": input/output region sizes " +
                     std::to_string(entry.inputSize) + "/" +
                     std::to_string(entry.outputSize) +
                     " differ from what their buffers need");
    for (size_t i = 0; i < entry.buffers.size(); ++i) {
      const Buffer &b = entry.buffers[i];
      uint64_t limit = regionLimit(b.region);
      if (!within(b.offset, b.size, limit))
        return invalid(where + ": buffer " + std::to_string(i) + " (" +
                       regionName(b.region) + ", offset " +
                       std::to_string(b.offset) + ", " +
                       std::to_string(b.size) + " bytes) ends past the " +
                       std::to_string(limit) + "-byte " + regionName(b.region) +
                       " region");
      if (b.region != Region::Persistent && b.offset % plan.alignment != 0 &&
          !(packed[i] && b.offset % 4 == 0))
        return invalid(where + ": buffer " + std::to_string(i) + " offset " +
                       std::to_string(b.offset) + " is not aligned to " +
                       std::to_string(plan.alignment));
      if (b.region == Region::Persistent) {
        bool found = false;
        for (const PersistentTensor &t : plan.persistent)
          found |= t.offset == b.offset &&
                   static_cast<uint64_t>(t.type.bytes()) == b.size;
        if (!found)
          return invalid(where + ": persistent buffer " + std::to_string(i) +
                         " at offset " + std::to_string(b.offset) +
                         " is not one of the plan's persistent tensors");
      }
    }
    return Status::ok();
  }

  Status checkTensors() {
    std::set<std::pair<Region, std::string>> names;
    for (size_t i = 0; i < entry.tensors.size(); ++i) {
      const Tensor &t = entry.tensors[i];
      std::string what = where + ": tensor " + std::to_string(i) +
                         (t.name.empty() ? "" : " ('" + t.name + "')");
      if (t.buffer >= entry.buffers.size())
        return invalid(what + " refers to buffer " + std::to_string(t.buffer) +
                       " of " + std::to_string(entry.buffers.size()));
      ZRT_RETURN_IF_ERROR(checkType(t.type, what));
      const Buffer &b = entry.buffers[t.buffer];
      if (t.type.dtype == DType::Bool && b.region != Region::Arena)
        return invalid(what + ": a bool tensor in the " +
                       std::string(regionName(b.region)) +
                       " region; bool tensors (masks) live in the arena only");
      if (t.type.dtype == DType::BF16 && b.region != Region::Arena)
        return invalid(what + ": a bf16 tensor in the " +
                       std::string(regionName(b.region)) +
                       " region; bf16 tensors live in the arena only (mixed "
                       "precision keeps inputs, outputs, parameters and "
                       "optimizer state in f32)");
      if (t.isStrided()) {
        // A broadcast read through strides: an unnamed view whose steps
        // stay within its buffer.
        if (t.strides.size() != t.type.shape.size())
          return invalid(what + ": " + std::to_string(t.strides.size()) +
                         " strides for rank " + std::to_string(t.type.rank()));
        for (int64_t stride : t.strides)
          if (stride < 0 || static_cast<uint64_t>(stride) > kMaxRegionBytes)
            return invalid(what + ": stride " + std::to_string(stride) +
                           " out of range");
        if (!t.name.empty() || t.role != TensorRole::None)
          return invalid(what + ": a strided view has no name or role");
      } else if (t.offset != 0) {
        return invalid(what + ": an offset without strides");
      }
      if (tensorReachBytes(t) > b.size)
        return invalid(what + ": " + typeString(t.type) + " needs " +
                       std::to_string(tensorReachBytes(t)) +
                       " bytes, its buffer has " + std::to_string(b.size));
      // Unnamed input/output tensors are views of a named one.
      bool io = b.region == Region::Input || b.region == Region::Output;
      if (io && !t.name.empty() && !names.insert({b.region, t.name}).second)
        return invalid(what + ": two " + std::string(regionName(b.region)) +
                       " tensors are called '" + t.name + "'");
      if (b.region == Region::Persistent && !t.isStrided() &&
          plan.findPersistent(t.name) < 0)
        return invalid(what + ": not a persistent tensor of the plan");
      if (b.region == Region::Persistent && !t.isStrided()) {
        const PersistentTensor &p =
            plan.persistent[plan.findPersistent(t.name)];
        if (p.offset != b.offset || p.type.dtype != t.type.dtype ||
            p.type.numElements() != t.type.numElements())
          return invalid(what + ": differs from the persistent tensor of "
                                "that name");
      }
      if (t.role == TensorRole::Step &&
          (t.type.dtype != DType::I64 || t.type.rank() != 0 ||
           b.region != Region::Input))
        return invalid(what + ": the step must be an i64 scalar input");
      if (std::optional<Region> home = regionOfRole(t.role);
          home && b.region != *home)
        return invalid(what + ": role '" + tensorRoleName(t.role) +
                       "' outside the " + regionName(*home) + " region");
    }
    return Status::ok();
  }

  Extent extentOf(uint32_t tensor) const {
    const Tensor &t = entry.tensors[tensor];
    const Buffer &b = entry.buffers[t.buffer];
    return {b.region, b.offset, b.offset + tensorReachBytes(t)};
  }

  Status checkLaunches() {
    for (size_t i = 0; i < entry.launches.size(); ++i) {
      const Launch &launch = entry.launches[i];
      if (launch.kernel >= KernelId::NumKernels)
        return invalid(where + ": launch " + std::to_string(i) +
                       ": unknown kernel " +
                       std::to_string(static_cast<int>(launch.kernel)));
      std::string what =
          where + ": launch " + std::to_string(i) + " (" + launch.name() + ")";
      for (const std::vector<uint32_t> *list :
           {&launch.inputs, &launch.outputs})
        for (uint32_t tensor : *list)
          if (tensor >= entry.tensors.size())
            return invalid(what + ": operand tensor " + std::to_string(tensor) +
                           " of " + std::to_string(entry.tensors.size()));
      ZRT_RETURN_IF_ERROR(checkLaunch(entry, i));
      for (size_t o = 0; o < launch.outputs.size(); ++o) {
        Extent out = extentOf(launch.outputs[o]);
        if (out.region == Region::Input || out.region == Region::Constant)
          return invalid(what + ": writes the read-only " +
                         std::string(regionName(out.region)) + " region");
        // Evaluating must leave training exactly where it was.
        if (out.region == Region::Persistent &&
            (entry.kind == EntryKind::Eval || entry.kind == EntryKind::Predict))
          return invalid(what + ": an " +
                         std::string(entryKindName(entry.kind)) +
                         " entry writes the persistent region (parameters "
                         "and state are the training entries' to write)");
        for (size_t p = 0; p < o; ++p)
          if (out.overlaps(extentOf(launch.outputs[p])) &&
              !disjointViews(entry.tensors[launch.outputs[o]],
                             entry.tensors[launch.outputs[p]]))
            return invalid(what + ": outputs " + std::to_string(p) + " and " +
                           std::to_string(o) + " overlap");
        for (size_t k = 0; k < launch.inputs.size(); ++k) {
          Extent in = extentOf(launch.inputs[k]);
          if (!out.overlaps(in))
            continue;
          // Read through strides, an element is read after others are
          // written: never in place. A bucket's input is reduced (or
          // packed) in place of its own output only: copying another input
          // in first would overwrite it.
          bool bucket = launch.kernel == KernelId::AllReduce ||
                        launch.kernel == KernelId::Pack;
          if (out == in && kernelAllowsInPlace(launch.kernel) &&
              !entry.tensors[launch.inputs[k]].isStrided() &&
              (!bucket || k == o))
            continue;
          return invalid(what + ": output " + std::to_string(o) +
                         " overlaps input " + std::to_string(k) +
                         (kernelAllowsInPlace(launch.kernel)
                              ? " without being exactly the same bytes"
                              : " and this kernel cannot run in place"));
        }
      }
    }
    return Status::ok();
  }

  /// The workspace is an arena buffer of its own, big enough for every
  /// launch's scratch.
  Status checkWorkspace() {
    if (entry.workspace < 0)
      return entry.workspace == -1
                 ? Status::ok()
                 : invalid(where + ": workspace index " +
                           std::to_string(entry.workspace));
    size_t w = static_cast<size_t>(entry.workspace);
    if (w >= entry.buffers.size() ||
        entry.buffers[w].region != Region::Arena)
      return invalid(where + ": workspace " + std::to_string(w) +
                     " is not an arena buffer of the entry");
    for (const Tensor &t : entry.tensors)
      if (t.buffer == w)
        return invalid(where + ": workspace buffer " + std::to_string(w) +
                       " is also a tensor's buffer");
    uint64_t need = entryScratchBytes(entry);
    if (entry.buffers[w].size < need)
      return invalid(where + ": workspace of " +
                     std::to_string(entry.buffers[w].size) +
                     " bytes; the launches need " + std::to_string(need));
    return Status::ok();
  }

  /// Each arena and output buffer must be written before it is read within
  /// the step; arena buffers live from their first write to their last use,
  /// and no two live at once may share a byte.
  Status checkLifetimes() {
    size_t n = entry.buffers.size();
    std::vector<int64_t> first(n, -1), last(n, -1);
    for (size_t i = 0; i < entry.launches.size(); ++i) {
      const Launch &launch = entry.launches[i];
      for (uint32_t tensor : launch.inputs) {
        uint32_t b = entry.tensors[tensor].buffer;
        Region region = entry.buffers[b].region;
        if ((region == Region::Arena || region == Region::Output) &&
            first[b] < 0)
          return invalid(where + ": launch " + std::to_string(i) + " (" +
                         launch.name() + ") reads " + regionName(region) +
                         " buffer " + std::to_string(b) +
                         " before any launch of the step writes it");
        last[b] = static_cast<int64_t>(i);
      }
      for (uint32_t tensor : launch.outputs) {
        uint32_t b = entry.tensors[tensor].buffer;
        if (first[b] < 0)
          first[b] = static_cast<int64_t>(i);
        last[b] = static_cast<int64_t>(i);
      }
    }
    // The workspace lives for the whole entry.
    if (entry.workspace >= 0 && !entry.launches.empty()) {
      first[entry.workspace] = 0;
      last[entry.workspace] = static_cast<int64_t>(entry.launches.size()) - 1;
    }
    std::vector<bool> packed = packedOnly();
    planner::Problem problem;
    std::vector<int64_t> offsets;
    for (size_t b = 0; b < n; ++b) {
      const Buffer &buffer = entry.buffers[b];
      if (buffer.region == Region::Output && first[b] < 0)
        for (const Tensor &t : entry.tensors)
          if (t.buffer == b)
            return invalid(where + ": output '" + t.name +
                           "' is never written by the step");
      if (buffer.region != Region::Arena || first[b] < 0)
        continue;
      planner::BufferRequest request;
      request.id = static_cast<int64_t>(b);
      request.lower = first[b];
      request.upper = last[b] + 1;
      request.size = static_cast<int64_t>(buffer.size);
      request.alignment = packed[b] ? 4 : static_cast<int64_t>(plan.alignment);
      problem.buffers.push_back(request);
      offsets.push_back(static_cast<int64_t>(buffer.offset));
    }
    std::string violation = planner::checkPlan(
        problem, offsets, static_cast<int64_t>(entry.arenaSize));
    if (!violation.empty())
      return invalid(where +
                     ": arena plan rejected by the overlap checker "
                     "(lifetimes in launch indices): " +
                     violation);
    return Status::ok();
  }

  const Plan &plan;
  const Entry &entry;
  std::string where;
};

} // namespace

Status zcc::runtime::validatePlan(const Plan &plan) {
  if (plan.alignment == 0 || (plan.alignment & (plan.alignment - 1)) != 0 ||
      plan.alignment > 4096)
    return invalid("alignment " + std::to_string(plan.alignment) +
                   " is not a power of two up to 4096");
  for (uint64_t size : {plan.arenaSize, plan.persistentSize, plan.constantSize})
    if (size > kMaxRegionBytes)
      return invalid("a region of " + std::to_string(size) +
                     " bytes is implausibly large (corrupt size?)");
  if (plan.constants.size() != plan.constantSize)
    return invalid("constant region is " + std::to_string(plan.constantSize) +
                   " bytes but the file carries " +
                   std::to_string(plan.constants.size()));
  if (plan.entries.empty())
    return invalid("the plan has no entry point");
  uint64_t arena = 0;
  for (const Entry &e : plan.entries)
    arena = std::max(arena, e.arenaSize);
  if (arena != plan.arenaSize)
    return invalid("the plan's arena is " + std::to_string(plan.arenaSize) +
                   " bytes; its largest entry needs " + std::to_string(arena));
  ZRT_RETURN_IF_ERROR(checkPersistent(plan));
  ZRT_RETURN_IF_ERROR(checkSharded(plan));
  std::set<std::string> names;
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    if (!names.insert(plan.entries[i].name).second)
      return invalid("two entries are called '" + plan.entries[i].name + "'");
    ZRT_RETURN_IF_ERROR(EntryValidator(plan, plan.entries[i], i).run());
  }
  return Status::ok();
}
