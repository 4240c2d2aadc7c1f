//===- MemoryTimeline.cpp - a plan's memory as zcc.memory/v1 JSON ---------===//

#include "zcc/Runtime/Plan/MemoryTimeline.h"

#include <nlohmann/json.hpp>

#include <algorithm>

using namespace zcc::runtime;
using json = nlohmann::ordered_json;

namespace {

const char *phaseName(Phase phase) {
  switch (phase) {
  case Phase::Forward:
    return "forward";
  case Phase::Backward:
    return "backward";
  case Phase::Update:
    return "update";
  }
  return "forward";
}

/// One buffer's life in launch indices and who writes and reads it.
struct Use {
  int64_t first = -1, last = -1; // first write (or read), last use
  int64_t writer = -1;           // the first launch writing it
  uint32_t tensor = 0;           // the tensor that launch writes
  bool readInBackward = false;
};

/// What an arena buffer holds, from the phase of the launch that writes it
/// and of those that read it.
const char *arenaKind(const Entry &entry, size_t buffer, const Use &use) {
  if (static_cast<int64_t>(buffer) == entry.workspace)
    return "workspace";
  if (use.writer < 0)
    return "activation";
  switch (entry.launches[use.writer].phase) {
  case Phase::Update:
    return "optimizer_temporary";
  case Phase::Backward:
    return "gradient";
  case Phase::Forward:
    return use.readInBackward ? "saved_for_backward" : "activation";
  }
  return "activation";
}

json entryTimeline(const Entry &e) {
  std::vector<Use> uses(e.buffers.size());
  for (size_t i = 0; i < e.launches.size(); ++i) {
    const Launch &launch = e.launches[i];
    int64_t at = static_cast<int64_t>(i);
    for (int side = 0; side < 2; ++side)
      for (uint32_t t : side ? launch.outputs : launch.inputs) {
        Use &use = uses[e.tensors[t].buffer];
        if (use.first < 0)
          use.first = at;
        use.last = at;
        if (side && use.writer < 0) {
          use.writer = at;
          use.tensor = t;
        }
        if (!side && launch.phase == Phase::Backward)
          use.readInBackward = true;
      }
  }
  if (e.workspace >= 0 && !e.launches.empty()) {
    uses[e.workspace].first = 0;
    uses[e.workspace].last = static_cast<int64_t>(e.launches.size()) - 1;
  }

  json launches = json::array();
  for (size_t i = 0; i < e.launches.size(); ++i)
    launches.push_back({{"index", i},
                        {"kernel", e.launches[i].name()},
                        {"phase", phaseName(e.launches[i].phase)},
                        {"location", e.launches[i].location}});

  std::vector<int64_t> firstTensor(e.buffers.size(), -1);
  for (size_t t = e.tensors.size(); t-- > 0;)
    firstTensor[e.tensors[t].buffer] = static_cast<int64_t>(t);

  json buffers = json::array();
  std::vector<int64_t> live(e.launches.size(), 0);
  for (size_t b = 0; b < e.buffers.size(); ++b) {
    const Buffer &buffer = e.buffers[b];
    const Use &use = uses[b];
    bool arena = buffer.region == Region::Arena;
    json row = {{"id", b},
                {"region", regionName(buffer.region)},
                {"offset", buffer.offset},
                {"bytes", buffer.size},
                {"first_launch", use.first},
                {"last_launch", use.last}};
    row["kind"] = arena ? arenaKind(e, b, use) : regionName(buffer.region);
    // The tensor the buffer holds: the one its first writer writes, else the
    // first tensor over it (inputs, persistent state).
    const Tensor *tensor = use.writer >= 0       ? &e.tensors[use.tensor]
                           : firstTensor[b] >= 0 ? &e.tensors[firstTensor[b]]
                                                 : nullptr;
    row["name"] = tensor ? tensor->name : "";
    row["type"] = tensor ? typeString(tensor->type) : "";
    row["op"] = use.writer >= 0 ? e.launches[use.writer].name() : "";
    row["location"] =
        use.writer >= 0 ? e.launches[use.writer].location : std::string();
    buffers.push_back(std::move(row));
    if (arena && use.first >= 0)
      for (int64_t i = use.first; i <= use.last; ++i)
        live[i] += static_cast<int64_t>(buffer.size);
  }
  int64_t peak = 0, peakLaunch = -1;
  for (size_t i = 0; i < live.size(); ++i)
    if (live[i] > peak) {
      peak = live[i];
      peakLaunch = static_cast<int64_t>(i);
    }
  return {{"name", e.name},
          {"kind", entryKindName(e.kind)},
          {"arena_bytes", e.arenaSize},
          {"lower_bound_bytes", e.lowerBound},
          {"no_reuse_bytes", e.noReuseSize},
          {"input_bytes", e.inputSize},
          {"output_bytes", e.outputSize},
          {"peak_live_bytes", peak},
          {"peak_launch", peakLaunch},
          {"live_bytes", live},
          {"launches", std::move(launches)},
          {"buffers", std::move(buffers)}};
}

} // namespace

std::string zcc::runtime::memoryTimelineJson(const Plan &plan) {
  json entries = json::array();
  for (const Entry &e : plan.entries)
    entries.push_back(entryTimeline(e));
  json out = {{"schema", kMemoryTimelineSchema},
              {"producer", plan.producer},
              {"alignment", plan.alignment},
              {"arena_bytes", plan.arenaSize},
              {"persistent_bytes", plan.persistentSize},
              {"constant_bytes", plan.constantSize},
              {"entries", std::move(entries)}};
  return out.dump(2) + "\n";
}
