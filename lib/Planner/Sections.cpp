//===- Sections.cpp - lifetimes as ranges of time sections ----------------===//

#include "Sections.h"

#include <algorithm>
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

std::vector<int64_t>
Sections::liveBytes(const std::vector<uint32_t> &indices) const {
  std::vector<int64_t> live(sectionCount + 1, 0);
  for (uint32_t i : indices) {
    live[firstSection[i]] += problem.buffers[i].size;
    live[lastSection[i]] -= problem.buffers[i].size;
  }
  for (size_t t = 1; t < live.size(); ++t)
    live[t] += live[t - 1];
  live.pop_back();
  return live;
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

namespace {

uint64_t splitmix(uint64_t &state) {
  uint64_t x = (state += 0x9e3779b97f4a7c15ULL);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

} // namespace

std::vector<uint32_t> rankBuffers(const std::vector<BufferRequest> &buffers,
                                  std::vector<uint32_t> indices,
                                  SkylineRank rank, uint64_t seed) {
  struct Key {
    double primary; // descending
    int64_t secondary, lower;
    uint32_t index;
  };
  uint64_t state = seed;
  std::vector<Key> keys(buffers.size());
  for (uint32_t i : indices) {
    const BufferRequest &b = buffers[i];
    const double length = static_cast<double>(b.upper - b.lower);
    const double bytes = static_cast<double>(b.size);
    Key &key = keys[i];
    switch (rank) {
    case SkylineRank::Lifetime:
      key = {length, b.size, b.lower, i};
      break;
    case SkylineRank::Size:
      key = {bytes, b.upper - b.lower, b.lower, i};
      break;
    case SkylineRank::Area:
      key = {bytes * length, b.upper - b.lower, b.lower, i};
      break;
    }
    if (seed != 0) {
      // A factor in [0.5, 1.5): only + and * on doubles, so every platform
      // draws the same order.
      double unit = static_cast<double>(splitmix(state) >> 11) * 0x1p-53;
      key.primary *= 0.5 + unit;
    }
  }
  std::sort(indices.begin(), indices.end(), [&](uint32_t a, uint32_t b) {
    const Key &x = keys[a], &y = keys[b];
    if (x.primary != y.primary)
      return x.primary > y.primary;
    return std::make_tuple(-x.secondary, x.lower, x.index) <
           std::make_tuple(-y.secondary, y.lower, y.index);
  });
  return indices;
}

} // namespace zcc::planner::detail
