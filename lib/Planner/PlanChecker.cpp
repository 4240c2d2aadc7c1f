//===- PlanChecker.cpp - independent check of a memory plan ---------------===//
//
// A sweep over lifetime events keeps the live buffers ordered by offset; a
// new buffer can only collide with its neighbours in that order, since the
// live set is disjoint by induction. Deliberately written without any helper
// from the planning algorithms.
//
//===----------------------------------------------------------------------===//

#include "zcc/Planner/PlanChecker.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <tuple>

namespace zcc::planner {

namespace {

std::string describe(const BufferRequest &buffer, int64_t offset) {
  return "buffer " + std::to_string(buffer.id) + " (bytes [" +
         std::to_string(offset) + ", " + std::to_string(offset + buffer.size) +
         "), steps [" + std::to_string(buffer.lower) + ", " +
         std::to_string(buffer.upper) + "))";
}

} // namespace

std::string checkPlan(const Problem &problem,
                      const std::vector<int64_t> &offsets, int64_t arenaSize) {
  const std::vector<BufferRequest> &buffers = problem.buffers;
  if (offsets.size() != buffers.size())
    return "plan has " + std::to_string(offsets.size()) + " offsets for " +
           std::to_string(buffers.size()) + " buffers";

  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferRequest &buffer = buffers[i];
    int64_t offset = offsets[i];
    if (offset < 0)
      return describe(buffer, offset) + ": negative offset";
    if (buffer.alignment > 0 && offset % buffer.alignment != 0)
      return describe(buffer, offset) +
             ": offset not a multiple of alignment " +
             std::to_string(buffer.alignment);
    if (buffer.fixedOffset && *buffer.fixedOffset != offset)
      return describe(buffer, offset) + ": pre-placed at " +
             std::to_string(*buffer.fixedOffset) + " but moved";
    if (offset > arenaSize - buffer.size)
      return describe(buffer, offset) + ": ends past the arena of " +
             std::to_string(arenaSize) + " bytes";
  }

  // Events: (time, kind, index) with kind 0 = end before kind 1 = start at the
  // same step (half-open lifetimes).
  std::vector<std::tuple<int64_t, int, size_t>> events;
  events.reserve(buffers.size() * 2);
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].size == 0)
      continue;
    events.emplace_back(buffers[i].lower, 1, i);
    events.emplace_back(buffers[i].upper, 0, i);
  }
  std::sort(events.begin(), events.end());

  std::set<std::pair<int64_t, size_t>> live; // (offset, index)
  for (const auto &[time, kind, index] : events) {
    std::pair<int64_t, size_t> key{offsets[index], index};
    if (kind == 0) {
      live.erase(key);
      continue;
    }
    auto next = live.lower_bound(key);
    int64_t end = offsets[index] + buffers[index].size;
    if (next != live.end() && next->first < end)
      return describe(buffers[index], offsets[index]) + " overlaps " +
             describe(buffers[next->second], next->first);
    if (next != live.begin()) {
      auto prev = std::prev(next);
      if (prev->first + buffers[prev->second].size > offsets[index])
        return describe(buffers[index], offsets[index]) + " overlaps " +
               describe(buffers[prev->second], prev->first);
    }
    live.insert(next, key);
  }
  return "";
}

} // namespace zcc::planner
