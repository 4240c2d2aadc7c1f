//===- TimeOrder.cpp - buffers placed in time order, with backtracking
//--------===//
//
// The exact search builds plans bottom-up, in offset order. Some steps are
// hard that way and easy in time order: ZeRO-1 on two ranks has, per bucket,
// the packed gradients, this rank's reduced shard, the updated shard and the
// gathered parameters, staggered so that each overlaps the next bucket's.
// A plan at the lower bound exists (the gathered buckets drift up and down
// the arena from one bucket to the next), but bottom-up it takes deciding
// the whole of time at once: `exact` stayed 3-16% above the bound after 2M
// nodes on such steps.
//
// In time order the future only sees the present. Buffers are taken by
// their first step; every buffer placed earlier that is still live when
// this one starts overlaps it, and no later buffer sees one that has ended.
// So a state is the set of buffers live at the next start, with their
// offsets, however it was reached. The search tries each buffer at the
// edges of the free gaps that fit it, backtracks at a buffer that fits
// nowhere, and remembers refuted states under a 128-bit hash. An edge whose
// neighbour dies nearest to when the buffer does comes first: the two leave
// one gap, not two, and a 6-layer GPT's plain search got from its forward's
// end to the middle of its backward with that rule, against the forward's
// end without it.
//
// Given a hint (a plan over the capacity, from the other searches), each
// buffer tries its hinted offset first: the hinted plan is kept up to where
// it breaks the capacity and repaired from there. The 6-layer GPT's ZeRO-1
// step, 3.6% above the bound after the exact search's 2M nodes, reached the
// bound in 634 nodes of a repair of the exact search's best plan.
//
// Only gap edges are tried, so running out of choices proves nothing: the
// answer is a plan or no plan, never infeasibility.
//
//===----------------------------------------------------------------------===//

#include "zcc/Planner/Algorithms.h"

#include "Sections.h"
#include "StateKey.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <tuple>
#include <unordered_set>

namespace zcc::planner {

namespace {

using Clock = std::chrono::steady_clock;

using detail::mix;
using detail::StateKey;
using detail::StateKeyHash;

/// At most this many refuted states are kept (forgetting is always sound).
constexpr size_t kMaxRefuted = 1 << 21;

/// One buffer's turn: where it may go, and who is live when it starts.
struct Frame {
  uint32_t position = 0; // in `order`
  std::vector<int64_t> candidates;
  size_t next = 0;
  /// Placed buffers live at this buffer's start, in placement order.
  std::vector<uint32_t> live;
  StateKey key;
};

class TimeOrderSearch {
public:
  TimeOrderSearch(const Problem &problem, int64_t capacity,
                  const std::vector<int64_t> *hint)
      : problem(problem), buffers(problem.buffers), capacity(capacity),
        hint(hint), sections(problem), offsets(sections.initialOffsets()) {
    for (uint32_t i = 0; i < buffers.size(); ++i)
      if (buffers[i].fixedOffset && buffers[i].size > 0)
        pinned.push_back(i);
    order = sections.movable();
    for (const BufferRequest &r : buffers)
      horizon = std::max(horizon, r.upper + 1);
    // By first step; at one step the largest first (the hardest to fit),
    // then the longest, then by index.
    std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
      const BufferRequest &a = buffers[x], &b = buffers[y];
      if (a.lower != b.lower)
        return a.lower < b.lower;
      if (a.size != b.size)
        return a.size > b.size;
      return a.upper > b.upper;
    });
  }

  ExactStatus run(double timeLimitSeconds, uint64_t nodeLimit, Plan &plan,
                  uint64_t &nodes) {
    const auto start = Clock::now();
    for (uint32_t p : pinned)
      if (*buffers[p].fixedOffset + buffers[p].size > capacity)
        return ExactStatus::Infeasible;
    std::vector<Frame> stack;
    auto push = [&](uint32_t position, std::vector<uint32_t> live) {
      ++nodes;
      Frame frame;
      frame.position = position;
      frame.live = std::move(live);
      frame.key = keyOf(position, frame.live);
      if (!refuted.count(frame.key))
        frame.candidates = candidatesFor(position, frame.live);
      stack.push_back(std::move(frame));
    };
    if (order.empty()) {
      finishPlan(plan);
      return ExactStatus::Found;
    }
    push(0, {});
    while (!stack.empty()) {
      if (nodes >= nodeLimit ||
          ((nodes & 255) == 0 &&
           std::chrono::duration<double>(Clock::now() - start).count() >
               timeLimitSeconds))
        return ExactStatus::OutOfTime;
      Frame &frame = stack.back();
      if (frame.next == frame.candidates.size()) {
        if (refuted.size() < kMaxRefuted)
          refuted.insert(frame.key);
        stack.pop_back();
        continue;
      }
      const uint32_t buffer = order[frame.position];
      offsets[buffer] = frame.candidates[frame.next++];
      const uint32_t nextPosition = frame.position + 1;
      if (nextPosition == order.size()) {
        finishPlan(plan);
        return ExactStatus::Found;
      }
      // Who is still live when the next buffer starts.
      const int64_t nextStart = buffers[order[nextPosition]].lower;
      std::vector<uint32_t> live;
      live.reserve(frame.live.size() + 1);
      for (uint32_t j : frame.live)
        if (buffers[j].upper > nextStart)
          live.push_back(j);
      if (buffers[buffer].upper > nextStart)
        live.push_back(buffer);
      push(nextPosition, std::move(live));
    }
    return ExactStatus::OutOfTime;
  }

private:
  StateKey keyOf(uint32_t position, const std::vector<uint32_t> &live) const {
    StateKey key{mix(position), mix(~uint64_t(position))};
    for (uint32_t j : live) {
      uint64_t h = mix((uint64_t(j) << 40) ^ uint64_t(offsets[j]));
      key.a = mix(key.a ^ h);
      key.b = mix(key.b + (h | 1) * 0x9e3779b97f4a7c15ULL);
    }
    return key;
  }

  /// The edges of the free gaps that fit the buffer at `position`: first
  /// those whose neighbour there (the buffer below a bottom edge, above a
  /// top edge; the arena's ends count as never freed) dies nearest to when
  /// this one does, so that they leave one gap when they go; then the
  /// tightest gap, its bottom before its top.
  std::vector<int64_t> candidatesFor(uint32_t position,
                                     const std::vector<uint32_t> &live) const {
    const uint32_t i = order[position];
    const BufferRequest &b = buffers[i];
    // [begin, end) and when it is freed.
    std::vector<std::tuple<int64_t, int64_t, int64_t>> taken;
    taken.reserve(live.size() + pinned.size());
    for (uint32_t j : live)
      taken.emplace_back(offsets[j], offsets[j] + buffers[j].size,
                         buffers[j].upper);
    for (uint32_t p : pinned)
      if (sections.overlap(i, p))
        taken.emplace_back(offsets[p], offsets[p] + buffers[p].size, horizon);
    std::sort(taken.begin(), taken.end());
    // Twins (same lifetime, size and alignment, placed one after the other)
    // are interchangeable: each goes above the one before.
    int64_t floor = 0;
    if (position > 0) {
      const BufferRequest &before = buffers[order[position - 1]];
      if (before.lower == b.lower && before.upper == b.upper &&
          before.size == b.size && before.alignment == b.alignment)
        floor = offsets[order[position - 1]] + 1;
    }
    struct Choice {
      int64_t gap, offset;
      bool top;
      int64_t affinity;
    };
    std::vector<Choice> choices;
    int64_t belowUpper = horizon, aboveUpper = horizon;
    auto gap = [&](int64_t from, int64_t to) {
      to = std::min(to, capacity);
      if (to - from < b.size)
        return;
      int64_t low = alignUp(std::max(from, floor), b.alignment);
      if (low + b.size > to)
        return;
      choices.push_back(
          {to - from, low, false, std::abs(belowUpper - b.upper)});
      int64_t high = (to - b.size) & ~(b.alignment - 1);
      if (high > low)
        choices.push_back(
            {to - from, high, true, std::abs(aboveUpper - b.upper)});
    };
    int64_t reached = 0;
    for (auto [begin, end, upper] : taken) {
      if (begin > reached) {
        aboveUpper = upper;
        gap(reached, begin);
      }
      if (end >= reached) {
        reached = end;
        belowUpper = upper;
      }
    }
    aboveUpper = horizon;
    gap(reached, capacity);
    std::stable_sort(choices.begin(), choices.end(),
                     [](const Choice &x, const Choice &y) {
                       if (x.affinity != y.affinity)
                         return x.affinity < y.affinity;
                       if (x.gap != y.gap)
                         return x.gap < y.gap;
                       return !x.top && y.top;
                     });
    std::vector<int64_t> result;
    result.reserve(choices.size() + 1);
    // The hinted offset first, where it is free (twins or not: a hint that
    // fits is kept as it is).
    if (hint) {
      int64_t at = (*hint)[i];
      bool free = at >= 0 && at % b.alignment == 0 && at + b.size <= capacity;
      for (auto [begin, end, upper] : taken)
        free = free && (end <= at || at + b.size <= begin);
      if (free)
        result.push_back(at);
    }
    for (const Choice &c : choices)
      if (result.empty() || c.offset != result.front())
        result.push_back(c.offset);
    return result;
  }

  void finishPlan(Plan &plan) const {
    plan.offsets = offsets;
    plan.arenaSize = computeArenaSize(problem, offsets);
  }

  const Problem &problem;
  const std::vector<BufferRequest> &buffers;
  const int64_t capacity;
  const std::vector<int64_t> *hint;
  detail::Sections sections;
  std::vector<int64_t> offsets;
  std::vector<uint32_t> pinned;
  std::vector<uint32_t> order;
  int64_t horizon = 0;
  std::unordered_set<StateKey, StateKeyHash> refuted;
};

} // namespace

ExactStatus planTimeOrder(const Problem &problem, int64_t capacity,
                          double timeLimitSeconds, Plan &plan,
                          uint64_t *nodeCount, uint64_t nodeLimit,
                          const std::vector<int64_t> *hint) {
  uint64_t nodes = 0;
  TimeOrderSearch search(problem, capacity, hint);
  ExactStatus status = search.run(timeLimitSeconds, nodeLimit, plan, nodes);
  if (nodeCount)
    *nodeCount = nodes;
  return status;
}

} // namespace zcc::planner
