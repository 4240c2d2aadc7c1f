//===- CoreFirst.cpp - the busiest buffers searched first, then pinned ----===//
//
// The exact search branches over every buffer whose candidate is low enough,
// so buffers in quiet stretches of time, which fit almost anywhere, multiply
// the orders it tries at each level without ever being what makes a capacity
// hard. On a ZeRO-1 step with 0.02 MiB buckets (116 buffers) it found a plan
// at the lower bound neither in 2M nodes nor in 60 s; its 58 buffers live
// where at least 85% of the peak is live were planned at the bound in 70
// nodes, and the other 58 around them in 43.
//
// So: for falling fractions of the peak, the core (the buffers live in some
// section at or above that fraction) is searched under the capacity, then
// pinned while the rest is searched around it. A pinned core that leaves the
// rest no room proves nothing; the next, larger core is tried. A core with no
// plan under the capacity proves that the whole problem has none.
//
// The rest is searched bottom-up, then in time order (TimeOrder.cpp). On a
// 12-layer GPT's ZeRO-1 step the core (the backward's peak, with the saved
// activations live through it) was planned at the bound in 1,572 nodes; the
// forward's buffers around it, which a bottom-up search must fit under
// activations placed for the backward, ran the exact search out of budget,
// and time order placed them in 418 nodes. Before, the step stayed 3.9%
// above the bound after 2M nodes.
//
//===----------------------------------------------------------------------===//

#include "zcc/Planner/Algorithms.h"

#include "Sections.h"

#include <algorithm>
#include <chrono>
#include <numeric>

namespace zcc::planner {

namespace {

/// Peak fractions in percent, each core a superset of the one before.
constexpr int kCorePercents[] = {95, 90, 85, 80, 75, 70, 60, 50};

} // namespace

ExactStatus planCoreFirst(const Problem &problem, int64_t capacity,
                          double timeLimitSeconds, Plan &plan,
                          uint64_t *nodeCount, uint64_t nodeLimit) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto secondsLeft = [&] {
    return timeLimitSeconds -
           std::chrono::duration<double>(Clock::now() - start).count();
  };
  uint64_t used = 0;
  auto finish = [&](ExactStatus status) {
    if (nodeCount)
      *nodeCount = used;
    return status;
  };

  detail::Sections sections(problem);
  const std::vector<BufferRequest> &buffers = problem.buffers;
  std::vector<uint32_t> all(buffers.size());
  std::iota(all.begin(), all.end(), 0);
  const std::vector<int64_t> live = sections.liveBytes(all);
  const int64_t peak =
      live.empty() ? 0 : *std::max_element(live.begin(), live.end());
  if (peak == 0)
    return finish(ExactStatus::OutOfTime);

  // A budget for each of a stage's two searches: a few descents' worth.
  const uint64_t stageBudget = 1024 + 4 * buffers.size();
  size_t lastCoreSize = 0;
  std::vector<int32_t> hotBefore(sections.count() + 1);
  for (int percent : kCorePercents) {
    if (used >= nodeLimit || secondsLeft() <= 0)
      break;
    // hotBefore[s]: sections before s at or above the fraction.
    for (int32_t s = 0; s < sections.count(); ++s)
      hotBefore[s + 1] = hotBefore[s] + (live[s] * 100 >= peak * percent);
    Problem core;
    std::vector<uint32_t> coreIndex;
    for (uint32_t i = 0; i < buffers.size(); ++i) {
      bool hot = hotBefore[sections.last(i)] > hotBefore[sections.first(i)];
      if (buffers[i].fixedOffset || (hot && buffers[i].size > 0)) {
        core.buffers.push_back(buffers[i]);
        coreIndex.push_back(i);
      }
    }
    if (core.buffers.size() == lastCoreSize)
      continue; // the same core as the last fraction's
    if (core.buffers.size() == buffers.size())
      break; // no quiet buffers left to put aside: the plain exact search
    lastCoreSize = core.buffers.size();

    Plan corePlan;
    uint64_t nodes = 0;
    ExactStatus status =
        planExact(core, capacity, secondsLeft(), corePlan, &nodes,
                  std::min(stageBudget, nodeLimit - used));
    used += nodes;
    if (status == ExactStatus::Infeasible)
      return finish(ExactStatus::Infeasible);
    if (status != ExactStatus::Found || used >= nodeLimit)
      continue;

    Problem pinned = problem;
    for (size_t k = 0; k < coreIndex.size(); ++k)
      pinned.buffers[coreIndex[k]].fixedOffset = corePlan.offsets[k];
    Plan whole;
    status = planExact(pinned, capacity, secondsLeft(), whole, &nodes,
                       std::min(stageBudget, nodeLimit - used));
    used += nodes;
    // A core holding a step's saved activations leaves the forward's
    // short-lived buffers around them: easy in time order, not bottom-up
    // (unless the exact search proved that they do not fit).
    if (status == ExactStatus::OutOfTime && used < nodeLimit) {
      status = planTimeOrder(pinned, capacity, secondsLeft(), whole, &nodes,
                             std::min(stageBudget, nodeLimit - used));
      used += nodes;
    }
    if (status == ExactStatus::Found) {
      plan = std::move(whole);
      return finish(ExactStatus::Found);
    }
  }
  return finish(ExactStatus::OutOfTime);
}

} // namespace zcc::planner
