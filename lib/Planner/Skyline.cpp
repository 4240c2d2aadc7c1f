//===- Skyline.cpp - bottom-up placement at the lowest level --------------===//
//
// Buffers are placed in non-decreasing offset order: each step takes the
// lowest level any unplaced buffer can sit at (above everything placed that
// overlaps it in time) and puts there the buffer that ranks first. This is
// one descent of the exact search's canonical order (see Exact.cpp), made
// O(n log n) with a segment tree over sections and lazily re-keyed heaps.
//
//===----------------------------------------------------------------------===//

#include "zcc/Planner/Algorithms.h"

#include "Sections.h"

#include <algorithm>
#include <queue>
#include <utility>

namespace zcc::planner {

namespace {

/// Per-section skyline: range max query, range assign.
class SkylineTree {
public:
  explicit SkylineTree(int32_t n) : size(std::max(n, 1)) {
    maxima.assign(4 * size, 0);
    pending.assign(4 * size, -1);
  }
  int64_t max(int32_t lo, int32_t hi) const {
    return query(1, 0, size, lo, hi);
  }
  void assign(int32_t lo, int32_t hi, int64_t value) {
    update(1, 0, size, lo, hi, value);
  }

private:
  int64_t query(int32_t node, int32_t l, int32_t r, int32_t lo,
                int32_t hi) const {
    if (hi <= l || r <= lo)
      return 0;
    if (pending[node] >= 0 || (lo <= l && r <= hi))
      return maxima[node]; // a pending assign makes the whole node uniform
    int32_t mid = (l + r) / 2;
    return std::max(query(2 * node, l, mid, lo, hi),
                    query(2 * node + 1, mid, r, lo, hi));
  }
  void update(int32_t node, int32_t l, int32_t r, int32_t lo, int32_t hi,
              int64_t value) {
    if (hi <= l || r <= lo)
      return;
    if (lo <= l && r <= hi) {
      maxima[node] = value;
      pending[node] = value;
      return;
    }
    int32_t mid = (l + r) / 2;
    if (pending[node] >= 0) {
      for (int32_t child : {2 * node, 2 * node + 1})
        maxima[child] = pending[child] = pending[node];
      pending[node] = -1;
    }
    update(2 * node, l, mid, lo, hi, value);
    update(2 * node + 1, mid, r, lo, hi, value);
    maxima[node] = std::max(maxima[2 * node], maxima[2 * node + 1]);
  }

  int32_t size;
  std::vector<int64_t> maxima, pending;
};

} // namespace

Plan planSkyline(const Problem &problem, SkylineRank rank) {
  const std::vector<BufferRequest> &bs = problem.buffers;
  detail::Sections sections(problem);
  Plan plan;
  plan.offsets = sections.initialOffsets();

  // Heaps hold positions in the rank order: smaller is better.
  std::vector<uint32_t> byRank =
      detail::rankBuffers(bs, sections.movable(), rank);
  using Keyed = std::pair<int64_t, uint32_t>; // (candidate offset, rank)
  std::priority_queue<Keyed, std::vector<Keyed>, std::greater<Keyed>> waiting;
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<uint32_t>>
      ready; // candidate offset == level
  SkylineTree skyline(sections.count());
  int64_t level = 0;
  auto candidate = [&](uint32_t i) {
    return sections.lowestFeasible(
        i, std::max(level, skyline.max(sections.first(i), sections.last(i))));
  };
  for (uint32_t r = 0; r < byRank.size(); ++r)
    waiting.emplace(sections.lowestFeasible(byRank[r], 0), r);

  size_t remaining = byRank.size();
  while (remaining > 0) {
    // Candidates only ever rise, so a stale key is a lower bound: re-key
    // lazily and move buffers whose true candidate is the level to `ready`.
    while (!waiting.empty() &&
           (waiting.top().first <= level || ready.empty())) {
      auto [stale, r] = waiting.top();
      waiting.pop();
      int64_t fresh = candidate(byRank[r]);
      if (fresh > stale) {
        waiting.emplace(fresh, r);
        continue;
      }
      level = std::max(level, fresh);
      ready.push(r);
    }
    uint32_t r = ready.top();
    ready.pop();
    uint32_t i = byRank[r];
    int64_t fresh = candidate(i);
    if (fresh > level) {
      waiting.emplace(fresh, r);
      continue;
    }
    plan.offsets[i] = level;
    skyline.assign(sections.first(i), sections.last(i), level + bs[i].size);
    --remaining;
  }
  plan.arenaSize = computeArenaSize(problem, plan.offsets);
  return plan;
}

} // namespace zcc::planner
