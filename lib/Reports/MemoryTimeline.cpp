//===- MemoryTimeline.cpp - a plan's memory as zcc.memory/v1 JSON ---------===//

#include "zcc/Reports/MemoryTimeline.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string_view>

using namespace zcc::runtime;
using json = nlohmann::ordered_json;

namespace {

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
  case Phase::Recompute:
    return "recomputed";
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
        if (!side && (launch.phase == Phase::Backward ||
                      launch.phase == Phase::Recompute))
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

json timelineOf(const Plan &plan) {
  json entries = json::array();
  for (const Entry &e : plan.entries)
    entries.push_back(entryTimeline(e));
  return {{"schema", kMemoryTimelineSchema},
          {"producer", plan.producer},
          {"alignment", plan.alignment},
          {"arena_bytes", plan.arenaSize},
          {"persistent_bytes", plan.persistentSize},
          {"constant_bytes", plan.constantSize},
          {"entries", std::move(entries)}};
}

//===----------------------------------------------------------------------===//
// The page
//===----------------------------------------------------------------------===//

constexpr std::string_view kPage =
#include "MemoryPage.inc"
    ;
constexpr std::string_view kPageSlot = "/*ZCC_MEMORY_TIMELINE*/";
static_assert(kPage.find(kPageSlot) != std::string_view::npos,
              "MemoryPage.html has no slot for the timeline");

//===----------------------------------------------------------------------===//
// PyTorch's snapshot
//===----------------------------------------------------------------------===//

/// Writes a JSON value as a pickle (protocol 2) of dicts, lists, strings,
/// numbers, bools and None: no class references, so `pickle.load` of it
/// runs no code.
class Pickler {
public:
  std::string take(const json &value) {
    out = "\x80\x02";
    write(value);
    out += '.';
    return std::move(out);
  }

private:
  void write(const json &v) {
    switch (v.type()) {
    case json::value_t::null:
      out += 'N';
      return;
    case json::value_t::boolean:
      out += v.get<bool>() ? '\x88' : '\x89';
      return;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      integer(v.get<int64_t>());
      return;
    case json::value_t::string: {
      const std::string &s = v.get_ref<const std::string &>();
      out += 'X';
      little(s.size(), 4);
      out += s;
      return;
    }
    case json::value_t::array:
      out += ']';
      if (!v.empty()) {
        out += '(';
        for (const json &item : v)
          write(item);
        out += 'e';
      }
      return;
    case json::value_t::object:
      out += '}';
      if (!v.empty()) {
        out += '(';
        for (const auto &[key, item] : v.items()) {
          write(json(key));
          write(item);
        }
        out += 'u';
      }
      return;
    case json::value_t::number_float: {
      double d = v.get<double>();
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof bits);
      out += 'G'; // BINFLOAT: big-endian
      for (int i = 7; i >= 0; --i)
        out += static_cast<char>((bits >> (8 * i)) & 0xff);
      return;
    }
    default: // binary and discarded values do not occur
      out += 'N';
      return;
    }
  }
  void integer(int64_t n) {
    if (n >= INT32_MIN && n <= INT32_MAX) {
      out += 'J';
      little(static_cast<uint32_t>(n), 4);
      return;
    }
    // LONG1: little-endian two's complement, as few bytes as hold the sign.
    std::string digits;
    uint64_t u = static_cast<uint64_t>(n);
    do {
      digits += static_cast<char>(u & 0xff);
      u = static_cast<uint64_t>(static_cast<int64_t>(u) >> 8);
    } while (!((static_cast<int64_t>(u) == 0 && !(digits.back() & 0x80)) ||
               (static_cast<int64_t>(u) == -1 && (digits.back() & 0x80))));
    out += '\x8a';
    out += static_cast<char>(digits.size());
    out += digits;
  }
  void little(uint64_t n, int width) {
    for (int i = 0; i < width; ++i)
      out += static_cast<char>((n >> (8 * i)) & 0xff);
  }
  std::string out;
};

/// Where the snapshot puts the arena and the persistent region: made-up
/// device addresses, far apart, so that offsets read as they do in a real
/// snapshot.
constexpr int64_t kArenaAddress = int64_t{1} << 40;
constexpr int64_t kSegmentAlign = int64_t{1} << 21;

/// A buffer's stack as PyTorch records it, innermost first: the op that
/// writes it at its source line, then the entry.
json framesOf(const json &buffer, const std::string &entry) {
  json frames = json::array();
  std::string where = buffer["location"];
  std::string file = "<zcc plan>";
  int64_t line = 0;
  // "file:line:col" or "file:line" (a file name may itself hold colons).
  auto number = [&](size_t from, size_t to) {
    return to > from && where.find_first_not_of("0123456789", from) >= to;
  };
  size_t last = where.rfind(':');
  if (last != std::string::npos && last > 0 && number(last + 1, where.size())) {
    size_t before = where.rfind(':', last - 1);
    size_t cut =
        before != std::string::npos && number(before + 1, last) ? before : last;
    file = where.substr(0, cut);
    line = std::strtoll(where.c_str() + cut + 1, nullptr, 10);
  }
  std::string what = buffer["op"].get<std::string>();
  if (what.empty())
    what = buffer["name"].get<std::string>();
  frames.push_back(
      {{"filename", file},
       {"line", line},
       {"name", what + " [" + buffer["kind"].get<std::string>() + " " +
                    buffer["type"].get<std::string>() + "]"}});
  frames.push_back({{"filename", "<zcc plan>"}, {"line", 0}, {"name", entry}});
  return frames;
}

json traceEvent(const char *action, int64_t address, int64_t bytes,
                int64_t time, json frames) {
  return {{"action", action}, {"addr", address}, {"size", bytes},
          {"stream", 0},      {"time_us", time}, {"frames", std::move(frames)}};
}

json segment(int64_t address, int64_t size, json blocks) {
  int64_t active = 0;
  for (const json &b : blocks)
    if (b["state"] == "active_allocated")
      active += b["size"].get<int64_t>();
  return {{"device", 0},
          {"address", address},
          {"total_size", size},
          {"allocated_size", active},
          {"active_size", active},
          {"requested_size", active},
          {"stream", 0},
          {"segment_type", "large"},
          {"is_expandable", false},
          {"frames", json::array()},
          {"blocks", std::move(blocks)}};
}

json inactiveBlock(int64_t address, int64_t size) {
  return {{"address", address},
          {"size", size},
          {"requested_size", 0},
          {"state", "inactive"},
          {"frames", json::array()}};
}

json torchSnapshotOf(const json &timeline) {
  int64_t arena = timeline["arena_bytes"];
  json trace = json::array();
  int64_t time = 0;
  if (arena > 0)
    trace.push_back(
        traceEvent("segment_alloc", kArenaAddress, arena, time, json::array()));
  // Every entry in plan order, as one run of each: at each launch the
  // buffers it starts (by offset), then those whose last use it is.
  std::map<int64_t, json> persistent; // by offset, from every entry
  for (const json &entry : timeline["entries"]) {
    const std::string name = entry["name"];
    size_t launches = entry["launches"].size();
    std::vector<std::vector<const json *>> born(launches), dying(launches);
    for (const json &b : entry["buffers"]) {
      if (b["region"] == "persistent")
        persistent.emplace(b["offset"].get<int64_t>(), b);
      int64_t first = b["first_launch"], last = b["last_launch"];
      if (b["region"] != "arena" || first < 0)
        continue;
      born[first].push_back(&b);
      dying[last].push_back(&b);
    }
    for (size_t i = 0; i < launches; ++i, ++time) {
      std::stable_sort(born[i].begin(), born[i].end(),
                       [](const json *a, const json *b) {
                         return (*a)["offset"] < (*b)["offset"];
                       });
      for (const json *b : born[i])
        trace.push_back(
            traceEvent("alloc", kArenaAddress + (*b)["offset"].get<int64_t>(),
                       (*b)["bytes"], time, framesOf(*b, name)));
      for (const json *b : dying[i])
        for (const char *action : {"free_requested", "free_completed"})
          trace.push_back(
              traceEvent(action, kArenaAddress + (*b)["offset"].get<int64_t>(),
                         (*b)["bytes"], time, framesOf(*b, name)));
    }
  }

  // The state after the step: the arena empty, the persistent tensors held
  // (allocated before the trace, as parameters are in PyTorch).
  json segments = json::array();
  if (arena > 0)
    segments.push_back(
        segment(kArenaAddress, arena,
                json::array({inactiveBlock(kArenaAddress, arena)})));
  int64_t persistentBytes = timeline["persistent_bytes"];
  if (persistentBytes > 0) {
    int64_t base = kArenaAddress + (arena + 2 * kSegmentAlign - 1) /
                                       kSegmentAlign * kSegmentAlign;
    json blocks = json::array();
    int64_t at = 0;
    for (const auto &[offset, b] : persistent) {
      if (offset < at)
        continue; // one tensor seen under two views
      if (offset > at)
        blocks.push_back(inactiveBlock(base + at, offset - at));
      int64_t size = b["bytes"];
      blocks.push_back({{"address", base + offset},
                        {"size", size},
                        {"requested_size", size},
                        {"state", "active_allocated"},
                        {"frames", json::array({{{"filename", "<zcc plan>"},
                                                 {"line", 0},
                                                 {"name", b["name"]}}})}});
      at = offset + size;
    }
    if (at < persistentBytes)
      blocks.push_back(inactiveBlock(base + at, persistentBytes - at));
    segments.push_back(
        segment(base, std::max(at, persistentBytes), std::move(blocks)));
  }
  return {{"segments", std::move(segments)},
          {"device_traces", json::array({std::move(trace)})}};
}

} // namespace

std::string zcc::runtime::memoryTimelineJson(const Plan &plan) {
  return timelineOf(plan).dump(2) + "\n";
}

std::string zcc::runtime::memoryTimelineHtml(const Plan &plan) {
  // Inside <script>, "</" could close the element: JSON lets "/" be escaped.
  std::string data = timelineOf(plan).dump();
  std::string escaped;
  escaped.reserve(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    escaped += data[i];
    if (data[i] == '<' && i + 1 < data.size() && data[i + 1] == '/')
      escaped += '\\';
  }
  size_t slot = kPage.find(kPageSlot);
  std::string page(kPage.substr(0, slot));
  page += escaped;
  page += kPage.substr(slot + kPageSlot.size());
  return page;
}

std::string zcc::runtime::memoryTorchSnapshot(const Plan &plan) {
  return Pickler().take(torchSnapshotOf(timelineOf(plan)));
}
