//===- Problem.cpp - problem validation and the lower bound ---------------===//

#include "zcc/Planner/Problem.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

namespace zcc::planner {

static std::string bufferName(const BufferRequest &buffer) {
  return "buffer " + std::to_string(buffer.id);
}

std::string validateProblem(const Problem &problem) {
  std::unordered_set<int64_t> ids;
  ids.reserve(problem.buffers.size());
  for (const BufferRequest &buffer : problem.buffers) {
    if (!ids.insert(buffer.id).second)
      return "duplicate id " + std::to_string(buffer.id);
    if (buffer.size < 0)
      return bufferName(buffer) + ": negative size " +
             std::to_string(buffer.size);
    if (buffer.upper <= buffer.lower)
      return bufferName(buffer) + ": empty lifetime [" +
             std::to_string(buffer.lower) + ", " +
             std::to_string(buffer.upper) + "): upper must exceed lower";
    if (buffer.alignment < 1 ||
        (buffer.alignment & (buffer.alignment - 1)) != 0)
      return bufferName(buffer) + ": alignment " +
             std::to_string(buffer.alignment) + " is not a power of two";
    if (buffer.fixedOffset &&
        (*buffer.fixedOffset < 0 || *buffer.fixedOffset % buffer.alignment))
      return bufferName(buffer) + ": fixed offset " +
             std::to_string(*buffer.fixedOffset) +
             " is negative or not a multiple of its alignment";
  }
  // Pre-placed buffers cannot move, so two that collide make every plan
  // invalid: that is an input error, not a planning failure.
  std::vector<const BufferRequest *> fixed;
  for (const BufferRequest &buffer : problem.buffers)
    if (buffer.fixedOffset && buffer.size > 0)
      fixed.push_back(&buffer);
  std::sort(fixed.begin(), fixed.end(),
            [](const BufferRequest *a, const BufferRequest *b) {
              return a->lower < b->lower;
            });
  for (size_t i = 0; i < fixed.size(); ++i)
    for (size_t j = i + 1;
         j < fixed.size() && fixed[j]->lower < fixed[i]->upper; ++j) {
      const BufferRequest &a = *fixed[i], &b = *fixed[j];
      if (*a.fixedOffset < *b.fixedOffset + b.size &&
          *b.fixedOffset < *a.fixedOffset + a.size)
        return bufferName(a) + " and " + bufferName(b) +
               ": pre-placed at overlapping bytes while both are live";
    }
  return "";
}

int64_t computeLowerBound(const Problem &problem) {
  // (time, delta) with frees sorted before allocations at the same step,
  // because lifetimes are half-open.
  std::vector<std::pair<int64_t, int64_t>> events;
  events.reserve(problem.buffers.size() * 2);
  for (const BufferRequest &buffer : problem.buffers) {
    if (buffer.size == 0)
      continue;
    events.emplace_back(buffer.lower, buffer.size);
    events.emplace_back(buffer.upper, -buffer.size);
  }
  std::sort(events.begin(), events.end());
  int64_t live = 0, peak = 0;
  for (const auto &[time, delta] : events) {
    live += delta;
    peak = std::max(peak, live);
  }
  return peak;
}

int64_t computeArenaSize(const Problem &problem,
                         const std::vector<int64_t> &offsets) {
  int64_t arena = 0;
  for (size_t i = 0; i < problem.buffers.size(); ++i)
    arena = std::max(arena, offsets[i] + problem.buffers[i].size);
  return arena;
}

} // namespace zcc::planner
