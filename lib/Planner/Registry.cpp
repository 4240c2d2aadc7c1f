//===- Registry.cpp - planning algorithms by name -------------------------===//

#include "zcc/Planner/Algorithms.h"
#include "zcc/Planner/PlanChecker.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>
#include <type_traits>
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

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// What a run may spend. Nodes count the same on every machine; the clock
/// is a guard. With a node limit every stage may run until the time limit,
/// so nodes alone decide the plan unless the clock runs out first, which
/// the outcome reports (`timeLimited`). Without one, time is the budget and
/// the stages get shares of it.
class Budget {
public:
  explicit Budget(const PlanOptions &options)
      : limit(options.nodeLimit ? options.nodeLimit : UINT64_MAX),
        seconds(options.timeLimitSeconds), byNodes(options.nodeLimit != 0) {}

  uint64_t left() const { return limit - used; }
  uint64_t spent() const { return used; }
  void spend(uint64_t nodes) { used += std::min(nodes, left()); }
  double secondsLeft() const { return seconds - secondsSince(start); }
  /// The time left, or `fraction` of it when time is the budget.
  double share(double fraction) const {
    return byNodes ? secondsLeft() : secondsLeft() * fraction;
  }
  /// Runs `stage(seconds)` with share(fraction), noting whether its time ran
  /// out (then it may have ended on the clock rather than on its nodes).
  template <typename Stage> auto timed(double fraction, Stage &&stage) {
    const double given = share(fraction);
    const auto since = Clock::now();
    auto noteClock = [&] {
      if (secondsSince(since) >= given)
        clockStopped = true;
    };
    if constexpr (std::is_void_v<decltype(stage(given))>) {
      stage(given);
      noteClock();
    } else {
      auto result = stage(given);
      noteClock();
      return result;
    }
  }
  /// One search, `run(seconds, nodeLimit, &nodesUsed)`, timed as above with
  /// at most `nodes` of what is left; its nodes are spent (and, with `used`,
  /// returned).
  template <typename Run>
  ExactStatus search(double fraction, uint64_t nodes, Run &&run,
                     uint64_t *used = nullptr) {
    uint64_t spentHere = 0;
    ExactStatus status = timed(fraction, [&](double seconds) {
      return run(seconds, std::min(nodes, left()), &spentHere);
    });
    spend(spentHere);
    if (used)
      *used = spentHere;
    return status;
  }
  /// Whether the clock may have ended a stage before its nodes did.
  bool clockStopped = false;

private:
  const Clock::time_point start = Clock::now();
  const uint64_t limit;
  const double seconds;
  const bool byNodes;
  uint64_t used = 0;
};

/// The best plan so far, what made it, and when each improvement came (in
/// seconds, and in the run's nodes spent before it).
struct Incumbent {
  Clock::time_point start = Clock::now();
  Plan plan;
  std::string producedBy;
  std::vector<PlanOutcome::Improvement> improvements;
  bool have = false;
  void offer(Plan candidate, std::string name, uint64_t nodes = 0) {
    if (have && candidate.arenaSize >= plan.arenaSize)
      return;
    improvements.push_back(
        {secondsSince(start), candidate.arenaSize, name, nodes});
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
                   Incumbent best, int64_t proven,
                   const Budget *budget = nullptr) {
  PlanOutcome outcome;
  outcome.timeLimited = budget && budget->clockStopped;
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

/// Capacities a time-order descent tries, at most.
constexpr int kTimeOrderProbes = 12;

/// Nodes for one time-order search (TimeOrder.cpp), about what its successes
/// take: from scratch, the ZeRO-1 chain of 144 buffers needs 17,000; a repair
/// of the 6-layer GPT's 285, under 2,000.
uint64_t timeOrderBudget(const Problem &problem, bool repair) {
  const uint64_t n = problem.buffers.size();
  return repair ? 4096 + 32 * n : 16384 + 128 * n;
}

/// The time-order search at `goal` with at most `nodes` of the budget,
/// repairing `best` (over the goal) when `repair`. Offers what it finds to
/// `best`.
void runTimeOrderAt(const Problem &problem, int64_t goal, bool repair,
                    double fraction, uint64_t nodes, Budget &budget,
                    Incumbent &best) {
  Plan plan;
  std::vector<int64_t> hint;
  if (repair)
    hint = best.plan.offsets;
  ExactStatus status = budget.search(
      fraction, nodes, [&](double seconds, uint64_t limit, uint64_t *used) {
        return planTimeOrder(problem, goal, seconds, plan, used, limit,
                             repair ? &hint : nullptr);
      });
  if (status == ExactStatus::Found)
    best.offer(std::move(plan), repair ? "time-order-repair" : "time-order",
               budget.spent());
}

/// Time order at capacities between `low` (where it found nothing) and the
/// best plan, bisecting, each plan compacted, with at most `nodes` of the
/// budget. Its plans fill the capacity they are given, and where no plan at
/// the bound is found in time order, one a little above it often is: the
/// apply entry of a ZeRO-1 step with accumulation (24 layers of width 1024,
/// 185 buffers) stopped 8.9% above the bound after the exact search's 2M
/// nodes; the descent finds one 0.3% above it in 0.3 s.
void runTimeOrderDescent(const Problem &problem, int64_t low, int64_t granule,
                         uint64_t nodes, Budget &budget, const Incumbent &best,
                         Incumbent &found) {
  const uint64_t probeBudget = timeOrderBudget(problem, /*repair=*/true);
  const uint64_t stopAt = budget.spent() + std::min(nodes, budget.left());
  budget.timed(0.25, [&](double seconds) {
    const auto start = Clock::now();
    for (int probe = 0; probe < kTimeOrderProbes; ++probe) {
      const int64_t high =
          (found.have ? found.plan : best.plan).arenaSize - granule;
      const double left = seconds - secondsSince(start);
      if (high <= low || budget.spent() >= stopAt || left <= 0)
        break;
      const int64_t capacity = std::min(
          high, low + std::max(granule, roundDown((high - low) / 2, granule)));
      Plan plan;
      uint64_t probeNodes = 0;
      ExactStatus status =
          planTimeOrder(problem, capacity, left, plan, &probeNodes,
                        std::min(probeBudget, stopAt - budget.spent()));
      budget.spend(probeNodes);
      if (status == ExactStatus::Found) {
        compactPlan(problem, plan);
        found.offer(std::move(plan), "time-order-descent", budget.spent());
      } else {
        low = capacity;
      }
    }
  });
}

/// Improves `best` with the exact search until the budget runs out (with
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
                        const Bounds &bounds, Incumbent best, Budget &budget,
                        int64_t proven, bool repairInTimeOrder,
                        Incumbent held = {}) {
  const int64_t granule = bounds.granule;
  uint64_t exactNodes = 0, repairNodes = 0;
  // `proven`: every arena below it is infeasible.
  auto probe = [&](int64_t capacity, uint64_t nodeBudget) {
    Plan plan;
    uint64_t nodes = 0;
    ExactStatus status = budget.search(
        1.0, nodeBudget,
        [&](double seconds, uint64_t limit, uint64_t *used) {
          return planExact(problem, capacity, seconds, plan, used, limit);
        },
        &nodes);
    exactNodes += nodes;
    if (status == ExactStatus::Found) {
      best.offer(std::move(plan), "exact", budget.spent());
      // Repairs take at most an eighth of the exact search's effort (after
      // the first): an anytime minimisation finds dozens of plans.
      const uint64_t repairBudget = timeOrderBudget(problem, /*repair=*/true);
      if (repairInTimeOrder && !options.capacity &&
          best.plan.arenaSize > proven && budget.secondsLeft() > 0 &&
          budget.left() > 0 && repairNodes <= exactNodes / 8 + repairBudget) {
        const uint64_t before = budget.spent();
        runTimeOrderAt(problem, proven, /*repair=*/true, 0.125, repairBudget,
                       budget, best);
        repairNodes += budget.spent() - before;
      }
    } else if (status == ExactStatus::Infeasible) {
      proven = std::max(proven, roundDown(capacity, granule) + granule);
    }
    return status;
  };
  if (options.capacity) {
    if (best.plan.arenaSize > *options.capacity)
      probe(*options.capacity, UINT64_MAX);
    return finish(options, bounds, std::move(best), proven, &budget);
  }
  uint64_t nodeBudget = 4096 + 16 * problem.buffers.size();
  int64_t from = proven; // the lowest capacity worth a probe at this budget
  bool atBound = true;   // this budget's first probe goes to the bound
  while (proven < best.plan.arenaSize && budget.left() > 0) {
    if (budget.secondsLeft() <= 0) {
      budget.clockStopped = true;
      break;
    }
    const int64_t high = best.plan.arenaSize - granule; // to beat
    if (from > high) {
      nodeBudget = nodeBudget > UINT64_MAX / 4 ? UINT64_MAX : nodeBudget * 4;
      from = proven;
      atBound = true;
      continue;
    }
    // The bound itself first: where the optimum sits on it, the tight
    // sections prune so much that it is often solved faster than any
    // capacity a little above it.
    int64_t target =
        atBound ? from : from + roundDown((high - from) / 2, granule);
    uint64_t share =
        atBound && nodeBudget <= UINT64_MAX / 2 ? 2 * nodeBudget : nodeBudget;
    atBound = false;
    if (probe(target, share) == ExactStatus::OutOfTime)
      from = target + granule;
    else
      from = std::max(from, proven);
  }
  if (held.have)
    best.offer(std::move(held.plan), std::move(held.producedBy),
               budget.spent());
  return finish(options, bounds, std::move(best), proven, &budget);
}

PlanOutcome runTimeOrder(const Problem &problem, const PlanOptions &options) {
  Bounds bounds(problem);
  const int64_t goal = goalOf(options, bounds);
  Budget budget(options);
  Incumbent best;
  best.offer(planSkyline(problem, SkylineRank::Area), "skyline/area");
  if (best.plan.arenaSize > goal)
    runTimeOrderAt(problem, goal, /*repair=*/false, 1.0, UINT64_MAX, budget,
                   best);
  return finish(options, bounds, std::move(best), bounds.proven, &budget);
}

PlanOutcome runExact(const Problem &problem, const PlanOptions &options) {
  Bounds bounds(problem);
  Budget budget(options);
  Incumbent best;
  // A skyline descent, as a starting plan.
  best.offer(planSkyline(problem, SkylineRank::Area), "skyline/area");
  return searchExact(problem, options, bounds, std::move(best), budget,
                     bounds.proven, /*repairInTimeOrder=*/false);
}

/// Skyline descents kept under `goal` (planSkylineWithin): each ranking
/// plainly, then area rankings perturbed by seeds 1, 2, ... Descents that
/// fail end at different dead ends, so restarts are cheap tries at the goal.
/// Stops when one fits, when the time share runs out, or when `nodes` of
/// the budget (a descent costs one node per buffer) are spent.
void runRestarts(const Problem &problem, int64_t goal, uint64_t nodes,
                 Budget &budget, Incumbent &best) {
  if (best.plan.arenaSize <= goal)
    return;
  const uint64_t cost = std::max<uint64_t>(problem.buffers.size(), 1);
  const uint64_t stopAt = budget.spent() + std::min(nodes, budget.left());
  const SkylineRank plain[] = {SkylineRank::Area, SkylineRank::Lifetime,
                               SkylineRank::Size};
  budget.timed(0.5, [&](double seconds) {
    const auto start = Clock::now();
    for (uint64_t attempt = 0; attempt < kMaxRestarts; ++attempt) {
      if (best.plan.arenaSize <= goal || stopAt - budget.spent() < cost)
        return;
      if (attempt > 0 && secondsSince(start) >= seconds)
        return; // noted by timed()
      budget.spend(cost);
      SkylineRank rank = attempt < 3 ? plain[attempt] : SkylineRank::Area;
      uint64_t seed = attempt < 3 ? 0 : attempt - 2;
      Plan plan;
      if (planSkylineWithin(problem, rank, goal, plan, seed))
        best.offer(std::move(plan), "skyline-within/" + std::to_string(attempt),
                   budget.spent());
    }
  });
}

PlanOutcome runAuto(const Problem &problem, const PlanOptions &options) {
  Bounds bounds(problem);
  const int64_t goal = goalOf(options, bounds);
  Budget budget(options);
  Incumbent best;
  runSkylines(problem, goal, best);
  // Restarts get at most half the nodes; the exact search the rest.
  runRestarts(problem, goal, budget.left() / 2, budget, best);
  if (best.plan.arenaSize > goal) {
    std::string name;
    Plan plan = budget.timed(1.0, [&](double seconds) {
      return planGreedyBest(problem, goal, name, seconds);
    });
    best.offer(std::move(plan), std::move(name), budget.spent());
  }
  // In time order, from scratch and as a repair of the best plan so far:
  // staggered lifetimes that the offset-order searches miss.
  for (bool repair : {false, true}) {
    if (best.plan.arenaSize <= goal || budget.left() == 0)
      break;
    runTimeOrderAt(
        problem, goal, repair, 0.25,
        std::min(timeOrderBudget(problem, repair), budget.left() / 8), budget,
        best);
  }
  if (best.plan.arenaSize <= goal)
    return finish(options, bounds, std::move(best), bounds.proven, &budget);
  // The busiest buffers first, at the goal, with at most a quarter of the
  // nodes left: cheap when it works, and a core with no plan under the goal
  // proves that nothing below the next granule fits.
  int64_t proven = bounds.proven;
  {
    Plan plan;
    ExactStatus status = budget.search(
        1.0, budget.left() / 4,
        [&](double seconds, uint64_t limit, uint64_t *used) {
          return planCoreFirst(problem, goal, seconds, plan, used, limit);
        });
    if (status == ExactStatus::Found)
      best.offer(std::move(plan), "core-first", budget.spent());
    else if (status == ExactStatus::Infeasible)
      proven =
          std::max(proven, roundDown(goal, bounds.granule) + bounds.granule);
  }
  // At the goal, or the goal refuted (a capacity proven infeasible; without
  // one, the search goes on above the bound).
  if (best.plan.arenaSize <= goal || (options.capacity && proven > goal))
    return finish(options, bounds, std::move(best), proven, &budget);
  // Without a capacity, time order above the goal. Its plan is held until
  // the exact search ends, which starts from the plan it started from
  // before: its first plans, repaired, reach the bound on the 6-layer GPT's
  // ZeRO-1 step, and from the descent's plan its probes find none to
  // repair.
  Incumbent held;
  if (!options.capacity)
    runTimeOrderDescent(problem, goal, bounds.granule, budget.left() / 8,
                        budget, best, held);
  return searchExact(problem, options, bounds, std::move(best), budget, proven,
                     /*repairInTimeOrder=*/true, std::move(held));
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
