//===- Sections.cpp - lifetimes as ranges of time sections ----------------===//

#include "Sections.h"

#include <algorithm>
#include <climits>
#include <tuple>

namespace zcc::planner::detail {

Sections::Sections(const Problem &problem) : problem(problem) {
  const std::vector<BufferRequest> &buffers = problem.buffers;
  std::vector<int64_t> times;
  times.reserve(buffers.size() * 2);
  for (const BufferRequest &b : buffers) {
    times.push_back(b.lower);
    times.push_back(b.upper);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  sectionCount = times.empty() ? 0 : static_cast<int32_t>(times.size()) - 1;
  auto indexOf = [&](int64_t t) {
    return static_cast<int32_t>(
        std::lower_bound(times.begin(), times.end(), t) - times.begin());
  };
  firstSection.resize(buffers.size());
  lastSection.resize(buffers.size());
  for (uint32_t i = 0; i < buffers.size(); ++i) {
    firstSection[i] = indexOf(buffers[i].lower);
    lastSection[i] = indexOf(buffers[i].upper);
    // A pinned buffer counts toward the arena even when empty, as it does in
    // computeArenaSize and the checker.
    if (buffers[i].fixedOffset)
      fixedEnd = std::max(fixedEnd, *buffers[i].fixedOffset + buffers[i].size);
    if (buffers[i].size == 0)
      continue;
    if (buffers[i].fixedOffset) {
      fixedBuffers.push_back(i);
    } else {
      movableBuffers.push_back(i);
    }
  }
  std::sort(
      fixedBuffers.begin(), fixedBuffers.end(), [&](uint32_t a, uint32_t b) {
        return *buffers[a].fixedOffset < *buffers[b].fixedOffset ||
               (*buffers[a].fixedOffset == *buffers[b].fixedOffset && a < b);
      });
}

std::vector<int64_t> Sections::initialOffsets() const {
  std::vector<int64_t> offsets(problem.buffers.size(), 0);
  for (uint32_t i = 0; i < problem.buffers.size(); ++i)
    if (problem.buffers[i].fixedOffset)
      offsets[i] = *problem.buffers[i].fixedOffset;
  return offsets;
}

int64_t Sections::lowestFeasible(uint32_t i, int64_t from) const {
  const BufferRequest &b = problem.buffers[i];
  int64_t offset = alignUp(from, b.alignment);
  // Fixed buffers are sorted by offset, so one pass moves past every one in
  // the way: a jump only ever lands above the obstacles already passed.
  for (uint32_t f : fixedBuffers) {
    const BufferRequest &obstacle = problem.buffers[f];
    if (*obstacle.fixedOffset >= offset + b.size)
      break;
    if (!overlap(i, f))
      continue;
    int64_t end = *obstacle.fixedOffset + obstacle.size;
    if (end > offset)
      offset = alignUp(end, b.alignment);
  }
  return offset;
}

std::vector<uint32_t> rankBuffers(const std::vector<BufferRequest> &buffers,
                                  std::vector<uint32_t> indices,
                                  SkylineRank rank) {
  auto key = [&](uint32_t i) {
    const BufferRequest &b = buffers[i];
    int64_t length = b.upper - b.lower;
    // Saturate rather than overflow on huge sizes x lifetimes.
    __int128 area = static_cast<__int128>(b.size) * length;
    int64_t clampedArea =
        area > INT64_MAX ? INT64_MAX : static_cast<int64_t>(area);
    switch (rank) {
    case SkylineRank::Lifetime:
      return std::make_tuple(-length, -b.size, b.lower, i);
    case SkylineRank::Size:
      return std::make_tuple(-b.size, -length, b.lower, i);
    case SkylineRank::Area:
      return std::make_tuple(-clampedArea, -length, b.lower, i);
    }
    return std::make_tuple(int64_t{0}, int64_t{0}, int64_t{0}, i);
  };
  std::sort(indices.begin(), indices.end(),
            [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  return indices;
}

} // namespace zcc::planner::detail
