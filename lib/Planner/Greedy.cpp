//===- Greedy.cpp - greedy placement in a chosen order --------------------===//
//
// The TFLite/TVM "greedy by size" family: buffers are placed one at a time,
// each in a gap left by the already placed buffers that overlap it in time.
//
//===----------------------------------------------------------------------===//

#include "zcc/Planner/Algorithms.h"

#include "OverlapIndex.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <numeric>
#include <tuple>
#include <utility>

namespace zcc::planner {

namespace {

std::vector<uint32_t> placementOrder(const Problem &problem,
                                     GreedyOrder order) {
  const std::vector<BufferRequest> &buffers = problem.buffers;
  std::vector<uint32_t> indices(buffers.size());
  std::iota(indices.begin(), indices.end(), 0u);
  auto length = [&](uint32_t i) { return buffers[i].upper - buffers[i].lower; };
  // Keys are compared as tuples; the index last makes the order total.
  auto key = [&](uint32_t i) {
    const BufferRequest &b = buffers[i];
    bool movable = !b.fixedOffset;
    switch (order) {
    case GreedyOrder::Size:
      return std::make_tuple(movable, -b.size, -length(i), b.lower, i);
    case GreedyOrder::Lifetime:
      return std::make_tuple(movable, -length(i), -b.size, b.lower, i);
    case GreedyOrder::Area: {
      // Saturate rather than overflow on huge sizes x lifetimes.
      __int128 area = static_cast<__int128>(b.size) * length(i);
      int64_t clamped =
          area > INT64_MAX ? INT64_MAX : static_cast<int64_t>(area);
      return std::make_tuple(movable, -clamped, -b.size, b.lower, i);
    }
    case GreedyOrder::Start:
      return std::make_tuple(movable, b.lower, -b.size, -length(i), i);
    }
    return std::make_tuple(movable, int64_t{0}, int64_t{0}, int64_t{0}, i);
  };
  std::sort(indices.begin(), indices.end(),
            [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  return indices;
}

const char *orderName(GreedyOrder order) {
  switch (order) {
  case GreedyOrder::Size:
    return "size";
  case GreedyOrder::Lifetime:
    return "lifetime";
  case GreedyOrder::Area:
    return "area";
  case GreedyOrder::Start:
    return "start";
  }
  return "?";
}

/// Places the buffers in `order` (pre-placed ones first), each in a gap left
/// by those placed before it that overlap it in time.
Plan placeGreedy(const Problem &problem, const detail::OverlapIndex &index,
                 const std::vector<uint32_t> &order, GreedyFit fit) {
  const std::vector<BufferRequest> &buffers = problem.buffers;
  Plan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<char> placed(buffers.size(), 0);
  std::vector<std::pair<int64_t, int64_t>> neighbours; // (offset, end)

  for (uint32_t i : order) {
    const BufferRequest &buffer = buffers[i];
    placed[i] = 1;
    if (buffer.fixedOffset) {
      plan.offsets[i] = *buffer.fixedOffset;
      continue;
    }
    if (buffer.size == 0)
      continue; // conflicts with nothing: offset 0
    neighbours.clear();
    index.forEachOverlapping(i, [&](uint32_t j) {
      if (placed[j] && buffers[j].size > 0)
        neighbours.emplace_back(plan.offsets[j],
                                plan.offsets[j] + buffers[j].size);
    });
    std::sort(neighbours.begin(), neighbours.end());

    int64_t best = -1, bestGap = INT64_MAX;
    int64_t cursor = 0; // end of the occupied prefix scanned so far
    for (const auto &[start, end] : neighbours) {
      int64_t candidate = alignUp(cursor, buffer.alignment);
      if (start > cursor && candidate + buffer.size <= start) {
        int64_t gap = start - cursor;
        if (fit == GreedyFit::FirstFit) {
          best = candidate;
          break;
        }
        if (gap < bestGap) {
          bestGap = gap;
          best = candidate;
        }
      }
      cursor = std::max(cursor, end);
    }
    plan.offsets[i] = best >= 0 ? best : alignUp(cursor, buffer.alignment);
  }
  plan.arenaSize = computeArenaSize(problem, plan.offsets);
  return plan;
}

} // namespace

Plan planGreedy(const Problem &problem, GreedyOrder order, GreedyFit fit) {
  return placeGreedy(problem, detail::OverlapIndex(problem.buffers),
                     placementOrder(problem, order), fit);
}

void compactPlan(const Problem &problem, Plan &plan) {
  // First fit in offset order never moves a buffer up: its slot is free of
  // every buffer placed before it, as those only moved down from below it.
  std::vector<uint32_t> order(problem.buffers.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    bool movableX = !problem.buffers[x].fixedOffset;
    bool movableY = !problem.buffers[y].fixedOffset;
    return std::make_pair(movableX, plan.offsets[x]) <
           std::make_pair(movableY, plan.offsets[y]);
  });
  plan = placeGreedy(problem, detail::OverlapIndex(problem.buffers), order,
                     GreedyFit::FirstFit);
}

Plan planGreedyBest(const Problem &problem, int64_t stopAtBytes,
                    std::string &producedBy, double timeLimitSeconds) {
  auto start = std::chrono::steady_clock::now();
  detail::OverlapIndex index(problem.buffers);
  Plan best;
  bool haveBest = false;
  for (GreedyOrder order : {GreedyOrder::Size, GreedyOrder::Lifetime,
                            GreedyOrder::Area, GreedyOrder::Start}) {
    for (GreedyFit fit : {GreedyFit::BestFit, GreedyFit::FirstFit}) {
      Plan plan =
          placeGreedy(problem, index, placementOrder(problem, order), fit);
      if (!haveBest || plan.arenaSize < best.arenaSize) {
        best = std::move(plan);
        producedBy = std::string("greedy-best/") + orderName(order) +
                     (fit == GreedyFit::BestFit ? "/best-fit" : "/first-fit");
        haveBest = true;
      }
      if (best.arenaSize <= stopAtBytes ||
          std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                        start)
                  .count() > timeLimitSeconds)
        return best;
    }
  }
  return best;
}

} // namespace zcc::planner
