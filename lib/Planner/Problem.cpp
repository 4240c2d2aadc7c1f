//===- Problem.cpp - problem validation and the lower bound ---------------===//

#include "zcc/Planner/Problem.h"

#include <algorithm>
#include <set>
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
  // Offsets are multiples of the alignment, so below any buffer but the
  // topmost, the bytes up to the next aligned offset are lost: live buffers
  // need the sum of their sizes rounded up to the smallest alignment, less
  // the largest such rounding (the topmost one's). Sizes of 197 x 4 bytes
  // (a ViT's rows) left the peak of live bytes 1,408 bytes under a plan
  // that no plan beats, and `auto` searched 12 s for a better one.
  int64_t alignment = 0;
  for (const BufferRequest &buffer : problem.buffers)
    if (buffer.size != 0)
      alignment =
          alignment ? std::min(alignment, buffer.alignment) : buffer.alignment;
  // (time, buffer) with frees sorted before allocations at the same step,
  // because lifetimes are half-open; every prefix of the sweep is a subset
  // of some step's live set, and the bound only grows as buffers are added.
  std::vector<std::pair<int64_t, int64_t>> events;
  events.reserve(problem.buffers.size() * 2);
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const BufferRequest &buffer = problem.buffers[i];
    if (buffer.size == 0)
      continue;
    events.emplace_back(buffer.lower, int64_t(i));
    events.emplace_back(buffer.upper, ~int64_t(i));
  }
  std::sort(events.begin(), events.end());
  std::multiset<int64_t> rounding;
  int64_t live = 0, peak = 0;
  for (const auto &[time, event] : events) {
    const bool freed = event < 0;
    const int64_t size = problem.buffers[freed ? ~event : event].size;
    const int64_t rounded = alignUp(size, alignment);
    if (freed) {
      live -= rounded;
      rounding.erase(rounding.find(rounded - size));
      continue;
    }
    live += rounded;
    rounding.insert(rounded - size);
    peak = std::max(peak, live - *rounding.rbegin());
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
