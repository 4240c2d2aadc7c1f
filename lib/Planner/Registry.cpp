//===- Registry.cpp - planning algorithms by name -------------------------===//

#include "zcc/Planner/Algorithms.h"
#include "zcc/Planner/PlanChecker.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>
#include <utility>

namespace zcc::planner {

namespace {

using Clock = std::chrono::steady_clock;

/// Far more tries than the real sets need (at most 12); beyond that the
/// exact search is the better use of the time.
constexpr uint64_t kMaxRestarts = 1024;

/// Every canonical plan's offsets, and so its arena, are multiples of this:
/// sums of sizes and pre-placed ends, rounded up to alignments that either
/// divide it or are multiples of it. A capacity is only worth trying at a
/// multiple of it.
int64_t planGranule(const Problem &problem) {
  int64_t granule = 0;
  for (const BufferRequest &b : problem.buffers) {
    if (b.size == 0)
      continue;
    granule = std::gcd(granule, b.size);
    if (b.fixedOffset)
      granule = std::gcd(granule, *b.fixedOffset);
  }
  for (const BufferRequest &b : problem.buffers)
    if (b.size != 0 && granule % b.alignment != 0)
      granule = std::gcd(granule, b.alignment);
  return std::max<int64_t>(granule, 1);
}

int64_t roundDown(int64_t value, int64_t granule) {
  return value / granule * granule;
}

/// The best plan so far, what made it, and when each improvement came.
struct Incumbent {
  Clock::time_point start = Clock::now();
  Plan plan;
  std::string producedBy;
  std::vector<PlanOutcome::Improvement> improvements;
  bool have = false;
  void offer(Plan candidate, std::string name) {
    if (have && candidate.arenaSize >= plan.arenaSize)
      return;
    improvements.push_back(
        {std::chrono::duration<double>(Clock::now() - start).count(),
         candidate.arenaSize, name});
    plan = std::move(candidate);
    producedBy = std::move(name);
    have = true;
  }
};

/// The lower bound and the smallest arena it allows (a granule multiple).
struct Bounds {
  int64_t lower, granule, proven;
  explicit Bounds(const Problem &problem)
      : lower(computeLowerBound(problem)), granule(planGranule(problem)),
        proven(roundDown(lower + granule - 1, granule)) {}
};

/// What a search aims at: the capacity, or the smallest arena the lower
/// bound allows (below it nothing fits anyway).
int64_t goalOf(const PlanOptions &options, const Bounds &bounds) {
  return options.capacity ? std::max(*options.capacity, bounds.proven)
                          : bounds.proven;
}

/// `proven`: every arena below it is proven infeasible (at least
/// bounds.proven).
PlanOutcome finish(const PlanOptions &options, const Bounds &bounds,
                   Incumbent best, int64_t proven) {
  PlanOutcome outcome;
  outcome.lowerBound = bounds.lower;
  outcome.provenBound = proven;
  outcome.reachedLowerBound = best.plan.arenaSize == bounds.lower;
  outcome.optimal = best.plan.arenaSize <= proven;
  outcome.found = !options.capacity || best.plan.arenaSize <= *options.capacity;
  outcome.provenInfeasible = options.capacity && *options.capacity < proven;
  outcome.plan = std::move(best.plan);
  outcome.producedBy = std::move(best.producedBy);
  outcome.improvements = std::move(best.improvements);
  return outcome;
}

PlanOutcome runGreedySize(const Problem &problem, const PlanOptions &options) {
  Bounds bounds(problem);
  Incumbent best;
  best.offer(planGreedy(problem, GreedyOrder::Size, GreedyFit::BestFit),
             "greedy-size");
  return finish(options, bounds, std::move(best), bounds.proven);
}

PlanOutcome runGreedyBest(const Problem &problem, const PlanOptions &options) {
  Bounds bounds(problem);
  Incumbent best;
  std::string producedBy;
  Plan plan = planGreedyBest(problem, bounds.proven, producedBy);
  best.offer(std::move(plan), std::move(producedBy));
  return finish(options, bounds, std::move(best), bounds.proven);
}

/// Area first: on the real sets it is the best single rank (G_1 and Y_1 at
/// the bound, S_1 at 1.0018).
void runSkylines(const Problem &problem, int64_t stopAt, Incumbent &best) {
  const std::pair<SkylineRank, const char *> ranks[] = {
      {SkylineRank::Area, "skyline/area"},
      {SkylineRank::Lifetime, "skyline/lifetime"},
      {SkylineRank::Size, "skyline/size"}};
  for (const auto &[rank, name] : ranks) {
    best.offer(planSkyline(problem, rank), name);
    if (best.plan.arenaSize <= stopAt)
      return;
  }
}

PlanOutcome runSkyline(const Problem &problem, const PlanOptions &options) {
  Bounds bounds(problem);
  Incumbent best;
  runSkylines(problem, bounds.proven, best);
  return finish(options, bounds, std::move(best), bounds.proven);
}

uint64_t nodeBudget(const PlanOptions &options) {
  return options.nodeLimit ? options.nodeLimit : UINT64_MAX;
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Capacities a time-order descent tries, at most.
constexpr int kTimeOrderProbes = 12;

/// Nodes for one time-order search (TimeOrder.cpp), about what its successes
/// take: from scratch, the ZeRO-1 chain of 144 buffers needs 17,000; a repair
/// of the 6-layer GPT's 285, under 2,000.
uint64_t timeOrderBudget(const Problem &problem, bool repair) {
  const uint64_t n = problem.buffers.size();
  return repair ? 4096 + 32 * n : 16384 + 128 * n;
}

/// The time-order search at `goal`, repairing `best` (over the goal) when
/// `repair`. Offers what it finds to `best`; returns the nodes used.
uint64_t runTimeOrderAt(const Problem &problem, int64_t goal, bool repair,
                        double seconds, uint64_t nodes, Incumbent &best) {
  Plan plan;
  uint64_t used = 0;
  std::vector<int64_t> hint;
  if (repair)
    hint = best.plan.offsets;
  if (planTimeOrder(problem, goal, seconds, plan, &used, nodes,
                    repair ? &hint : nullptr) == ExactStatus::Found)
    best.offer(std::move(plan), repair ? "time-order-repair" : "time-order");
  return used;
}

/// Time order at capacities between `low` (where it found nothing) and the
/// best plan, bisecting, each plan compacted. Its plans fill the capacity
/// they are given, and where no plan at the bound is found in time order,
/// one a little above it often is: the apply entry of a ZeRO-1 step with
/// accumulation (24 layers of width 1024, 185 buffers) stopped 8.9% above
/// the bound after the exact search's 2M nodes; the descent finds one 0.3%
/// above it in 0.3 s. Returns the nodes used.
uint64_t runTimeOrderDescent(const Problem &problem, int64_t low,
                             int64_t granule, double seconds, uint64_t nodes,
                             const Incumbent &best, Incumbent &found) {
  const auto start = Clock::now();
  const uint64_t probeBudget = timeOrderBudget(problem, /*repair=*/true);
  uint64_t used = 0;
  for (int probe = 0; probe < kTimeOrderProbes; ++probe) {
    const int64_t high =
        (found.have ? found.plan : best.plan).arenaSize - granule;
    const double left = seconds - secondsSince(start);
    if (high <= low || used >= nodes || left <= 0)
      break;
    const int64_t capacity = std::min(
        high, low + std::max(granule, roundDown((high - low) / 2, granule)));
    Plan plan;
    uint64_t probeNodes = 0;
    if (planTimeOrder(problem, capacity, left, plan, &probeNodes,
                      std::min(probeBudget, nodes - used)) ==
        ExactStatus::Found) {
      compactPlan(problem, plan);
      found.offer(std::move(plan), "time-order-descent");
    } else {
      low = capacity;
    }
    used += probeNodes;
  }
  return used;
}

/// Improves `best` with the exact search until the time limit (with
/// `repairInTimeOrder`, each plan it finds is also repaired in time order at
/// the proven bound: a plan good but for a stretch where the offset order
/// fails). With a capacity, one feasibility search for it (unless `best`
/// already fits).
/// Otherwise the capacity goes down from the incumbent, anytime: probes of
/// a node budget each, first at the proven bound, then bisecting between it
/// and the best plan. A probe that runs out of budget sends the next one
/// above it; once no capacity is left to try under this budget, the budget
/// grows fourfold and the bisection starts again from the proven bound. So
/// plans improve early, and proofs come with the larger budgets.
PlanOutcome searchExact(const Problem &problem, const PlanOptions &options,
                        const Bounds &bounds, Incumbent best,
                        uint64_t nodesLeft, int64_t proven,
                        bool repairInTimeOrder, Incumbent held = {}) {
  auto remaining = [&] {
    return options.timeLimitSeconds - secondsSince(best.start);
  };
  const int64_t granule = bounds.granule;
  uint64_t exactNodes = 0, repairNodes = 0;
  // `proven`: every arena below it is infeasible.
  auto probe = [&](int64_t capacity, uint64_t budget) {
    Plan plan;
    uint64_t nodes = 0;
    ExactStatus status = planExact(problem, capacity, remaining(), plan, &nodes,
                                   std::min(budget, nodesLeft));
    nodesLeft -= std::min(nodes, nodesLeft);
    exactNodes += nodes;
    if (status == ExactStatus::Found) {
      best.offer(std::move(plan), "exact");
      // Repairs take at most an eighth of the exact search's effort (after
      // the first): an anytime minimisation finds dozens of plans.
      const uint64_t budget = timeOrderBudget(problem, /*repair=*/true);
      if (repairInTimeOrder && !options.capacity &&
          best.plan.arenaSize > proven && remaining() > 0 && nodesLeft > 0 &&
          repairNodes <= exactNodes / 8 + budget) {
        uint64_t used =
            runTimeOrderAt(problem, proven, /*repair=*/true, remaining() / 8,
                           std::min(budget, nodesLeft), best);
        repairNodes += used;
        nodesLeft -= std::min(used, nodesLeft);
      }
    } else if (status == ExactStatus::Infeasible) {
      proven = std::max(proven, roundDown(capacity, granule) + granule);
    }
    return status;
  };
  if (options.capacity) {
    if (best.plan.arenaSize > *options.capacity)
      probe(*options.capacity, UINT64_MAX);
    return finish(options, bounds, std::move(best), proven);
  }
  uint64_t budget = 4096 + 16 * problem.buffers.size();
  int64_t from = proven; // the lowest capacity worth a probe at this budget
  bool atBound = true;   // this budget's first probe goes to the bound
  while (proven < best.plan.arenaSize && remaining() > 0 && nodesLeft > 0) {
    const int64_t high = best.plan.arenaSize - granule; // to beat
    if (from > high) {
      budget = budget > UINT64_MAX / 4 ? UINT64_MAX : budget * 4;
      from = proven;
      atBound = true;
      continue;
    }
    // The bound itself first: where the optimum sits on it, the tight
    // sections prune so much that it is often solved faster than any
    // capacity a little above it.
    int64_t target =
        atBound ? from : from + roundDown((high - from) / 2, granule);
    uint64_t share = atBound && budget <= UINT64_MAX / 2 ? 2 * budget : budget;
    atBound = false;
    if (probe(target, share) == ExactStatus::OutOfTime)
      from = target + granule;
    else
      from = std::max(from, proven);
  }
  if (held.have)
    best.offer(std::move(held.plan), std::move(held.producedBy));
  return finish(options, bounds, std::move(best), proven);
}

PlanOutcome runTimeOrder(const Problem &problem, const PlanOptions &options) {
  Bounds bounds(problem);
  const int64_t goal = goalOf(options, bounds);
  Incumbent best;
  best.offer(planSkyline(problem, SkylineRank::Area), "skyline/area");
  if (best.plan.arenaSize > goal)
    runTimeOrderAt(problem, goal, /*repair=*/false, options.timeLimitSeconds,
                   nodeBudget(options), best);
  return finish(options, bounds, std::move(best), bounds.proven);
}

PlanOutcome runExact(const Problem &problem, const PlanOptions &options) {
  Bounds bounds(problem);
  Incumbent best;
  // A skyline descent, as a starting plan.
  best.offer(planSkyline(problem, SkylineRank::Area), "skyline/area");
  return searchExact(problem, options, bounds, std::move(best),
                     nodeBudget(options), bounds.proven,
                     /*repairInTimeOrder=*/false);
}

/// Skyline descents kept under `goal` (planSkylineWithin): each ranking
/// plainly, then area rankings perturbed by seeds 1, 2, ... Descents that
/// fail end at different dead ends, so restarts are cheap tries at the goal.
/// Stops when one fits, after `seconds`, or when `nodes` (a descent costs one
/// node per buffer) run out. Returns the nodes used.
uint64_t runRestarts(const Problem &problem, int64_t goal, double seconds,
                     uint64_t nodes, Incumbent &best) {
  auto start = Clock::now();
  uint64_t used = 0;
  const uint64_t cost = std::max<uint64_t>(problem.buffers.size(), 1);
  const SkylineRank plain[] = {SkylineRank::Area, SkylineRank::Lifetime,
                               SkylineRank::Size};
  for (uint64_t attempt = 0; attempt < kMaxRestarts; ++attempt) {
    if (best.plan.arenaSize <= goal || nodes - used < cost ||
        (attempt > 0 && secondsSince(start) >= seconds))
      break;
    used += cost;
    SkylineRank rank = attempt < 3 ? plain[attempt] : SkylineRank::Area;
    uint64_t seed = attempt < 3 ? 0 : attempt - 2;
    Plan plan;
    if (planSkylineWithin(problem, rank, goal, plan, seed))
      best.offer(std::move(plan), "skyline-within/" + std::to_string(attempt));
  }
  return used;
}

PlanOutcome runAuto(const Problem &problem, const PlanOptions &options) {
  Bounds bounds(problem);
  const int64_t goal = goalOf(options, bounds);
  uint64_t nodesLeft = nodeBudget(options);
  Incumbent best;
  runSkylines(problem, goal, best);
  // Restarts get at most half the time and nodes; the exact search the rest.
  nodesLeft -= runRestarts(problem, goal, options.timeLimitSeconds / 2,
                           nodesLeft / 2, best);
  if (best.plan.arenaSize > goal) {
    std::string name;
    Plan plan =
        planGreedyBest(problem, goal, name,
                       options.timeLimitSeconds - secondsSince(best.start));
    best.offer(std::move(plan), std::move(name));
  }
  // In time order, from scratch and as a repair of the best plan so far:
  // staggered lifetimes that the offset-order searches miss.
  for (bool repair : {false, true}) {
    if (best.plan.arenaSize <= goal || nodesLeft == 0)
      break;
    nodesLeft -= std::min(
        nodesLeft,
        runTimeOrderAt(
            problem, goal, repair,
            (options.timeLimitSeconds - secondsSince(best.start)) / 4,
            std::min(timeOrderBudget(problem, repair), nodesLeft / 8), best));
  }
  if (best.plan.arenaSize <= goal)
    return finish(options, bounds, std::move(best), bounds.proven);
  // The busiest buffers first, at the goal, with at most a quarter of the
  // nodes left: cheap when it works, and a core with no plan under the goal
  // proves that nothing below the next granule fits.
  int64_t proven = bounds.proven;
  {
    Plan plan;
    uint64_t nodes = 0;
    ExactStatus status = planCoreFirst(
        problem, goal, options.timeLimitSeconds - secondsSince(best.start),
        plan, &nodes, nodesLeft / 4);
    nodesLeft -= std::min(nodes, nodesLeft);
    if (status == ExactStatus::Found)
      best.offer(std::move(plan), "core-first");
    else if (status == ExactStatus::Infeasible)
      proven =
          std::max(proven, roundDown(goal, bounds.granule) + bounds.granule);
  }
  // At the goal, or the goal refuted (a capacity proven infeasible; without
  // one, the search goes on above the bound).
  if (best.plan.arenaSize <= goal || (options.capacity && proven > goal))
    return finish(options, bounds, std::move(best), proven);
  // Without a capacity, time order above the goal. Its plan is held until
  // the exact search ends, which starts from the plan it started from
  // before: its first plans, repaired, reach the bound on the 6-layer GPT's
  // ZeRO-1 step, and from the descent's plan its probes find none to
  // repair.
  Incumbent held;
  if (!options.capacity)
    nodesLeft -=
        std::min(nodesLeft,
                 runTimeOrderDescent(
                     problem, goal, bounds.granule,
                     (options.timeLimitSeconds - secondsSince(best.start)) / 4,
                     nodesLeft / 8, best, held));
  return searchExact(problem, options, bounds, std::move(best), nodesLeft,
                     proven, /*repairInTimeOrder=*/true, std::move(held));
}

} // namespace

const std::vector<PlannerAlgorithm> &plannerAlgorithms() {
  static const std::vector<PlannerAlgorithm> algorithms = {
      {"auto",
       "skyline, greedy-best and time-order, then the exact search on the "
       "busiest buffers first, stopping at the lower bound; else time order "
       "above the bound, and the exact search from the best plan before it, "
       "each plan it finds repaired in time order, within the time limit",
       runAuto},
      {"exact",
       "depth-first search over canonical plans with cross-section "
       "inference, dominance and temporal decomposition; tightens the "
       "capacity from a skyline plan toward the lower bound",
       runExact},
      {"greedy-best",
       "greedy in 4 orders (size, lifetime, area, start) x (best fit, first "
       "fit); the smallest arena, stopping early at the lower bound",
       runGreedyBest},
      {"greedy-size",
       "largest first, each in the smallest gap that fits, else on top",
       runGreedySize},
      {"skyline",
       "bottom-up in offset order: the lowest level any buffer can take, "
       "filled by the best-ranked buffer that fits; ranked by area, then "
       "lifetime, then size, stopping at the lower bound",
       runSkyline},
      {"time-order",
       "in time order, each buffer at an edge of a free gap among those live "
       "when it starts, backtracking; stops at the lower bound (or the "
       "capacity), else gives the skyline plan",
       runTimeOrder},
  };
  return algorithms;
}

const PlannerAlgorithm *findPlannerAlgorithm(std::string_view name) {
  for (const PlannerAlgorithm &algorithm : plannerAlgorithms())
    if (name == algorithm.name)
      return &algorithm;
  return nullptr;
}

CheckedRun runChecked(const PlannerAlgorithm &algorithm, const Problem &problem,
                      const PlanOptions &options) {
  CheckedRun run;
  auto start = std::chrono::steady_clock::now();
  run.outcome = algorithm.run(problem, options);
  run.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  run.violation =
      checkPlan(problem, run.outcome.plan.offsets, run.outcome.plan.arenaSize);
  return run;
}

} // namespace zcc::planner
