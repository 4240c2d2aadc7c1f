//===- Registry.cpp - planning algorithms by name -------------------------===//

#include "zcc/Planner/Algorithms.h"
#include "zcc/Planner/PlanChecker.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

namespace zcc::planner {

namespace {

using Clock = std::chrono::steady_clock;

/// Far more tries than the real sets need (at most 12); beyond that the
/// exact search is the better use of the time.
constexpr uint64_t kMaxRestarts = 1024;

PlanOutcome finish(const PlanOptions &options, int64_t lowerBound, Plan plan,
                   std::string producedBy) {
  PlanOutcome outcome;
  outcome.lowerBound = lowerBound;
  outcome.reachedLowerBound = plan.arenaSize == lowerBound;
  outcome.optimal = outcome.reachedLowerBound;
  outcome.found = !options.capacity || plan.arenaSize <= *options.capacity;
  outcome.provenInfeasible = options.capacity && *options.capacity < lowerBound;
  outcome.plan = std::move(plan);
  outcome.producedBy = std::move(producedBy);
  return outcome;
}

PlanOutcome runGreedySize(const Problem &problem, const PlanOptions &options) {
  return finish(options, computeLowerBound(problem),
                planGreedy(problem, GreedyOrder::Size, GreedyFit::BestFit),
                "greedy-size");
}

PlanOutcome runGreedyBest(const Problem &problem, const PlanOptions &options) {
  const int64_t lowerBound = computeLowerBound(problem);
  std::string producedBy;
  Plan best = planGreedyBest(problem, lowerBound, producedBy);
  return finish(options, lowerBound, std::move(best), std::move(producedBy));
}

/// The best heuristic plan so far and what made it.
struct Incumbent {
  Plan plan;
  std::string producedBy;
  bool have = false;
  void offer(Plan candidate, std::string name) {
    if (have && candidate.arenaSize >= plan.arenaSize)
      return;
    plan = std::move(candidate);
    producedBy = std::move(name);
    have = true;
  }
};

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
  const int64_t lowerBound = computeLowerBound(problem);
  Incumbent best;
  runSkylines(problem, lowerBound, best);
  return finish(options, lowerBound, std::move(best.plan),
                std::move(best.producedBy));
}

uint64_t nodeBudget(const PlanOptions &options) {
  return options.nodeLimit ? options.nodeLimit : UINT64_MAX;
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Improves `best` with the exact search until the time limit. With a
/// capacity, one feasibility search for it (unless `best` already fits).
/// Otherwise the capacity goes down from the incumbent: first straight to the
/// lower bound, then by bisection between what was proven infeasible and the
/// best plan found. Each search gets half the time and nodes left, the last
/// all of them.
PlanOutcome searchExact(const Problem &problem, const PlanOptions &options,
                        Clock::time_point start, int64_t lowerBound,
                        Incumbent best, uint64_t nodesLeft) {
  auto remaining = [&] {
    return options.timeLimitSeconds - secondsSince(start);
  };
  auto improve = [&](int64_t capacity, bool last) {
    Plan plan;
    uint64_t nodes = 0;
    double seconds = last ? remaining() : remaining() / 2;
    ExactStatus status = planExact(problem, capacity, seconds, plan, &nodes,
                                   last ? nodesLeft : nodesLeft / 2 + 1);
    nodesLeft -= std::min(nodes, nodesLeft);
    if (status == ExactStatus::Found)
      best.offer(std::move(plan), "exact");
    return status;
  };
  if (options.capacity) {
    bool infeasible =
        best.plan.arenaSize > *options.capacity &&
        improve(*options.capacity, /*last=*/true) == ExactStatus::Infeasible;
    PlanOutcome outcome = finish(options, lowerBound, std::move(best.plan),
                                 std::move(best.producedBy));
    outcome.provenInfeasible = outcome.provenInfeasible || infeasible;
    return outcome;
  }
  int64_t low = lowerBound, high = best.plan.arenaSize;
  bool first = true, skipped = false;
  while (low < high && remaining() > 0 && nodesLeft > 0) {
    int64_t target = first ? low : low + (high - 1 - low) / 2;
    first = false;
    ExactStatus status = improve(target, /*last=*/target == high - 1);
    if (status == ExactStatus::Found)
      high = best.plan.arenaSize;
    else if (status == ExactStatus::Infeasible)
      low = target + 1;
    else if (remaining() <= 0 || nodesLeft == 0)
      break;
    else {
      // This attempt's share ran out: look above it, but prove nothing.
      skipped = true;
      low = target + 1;
    }
  }
  PlanOutcome outcome = finish(options, lowerBound, std::move(best.plan),
                               std::move(best.producedBy));
  outcome.optimal = outcome.optimal || (low >= high && !skipped);
  return outcome;
}

PlanOutcome runExact(const Problem &problem, const PlanOptions &options) {
  auto start = Clock::now();
  const int64_t lowerBound = computeLowerBound(problem);
  Incumbent best;
  // A skyline descent, as a starting plan.
  best.offer(planSkyline(problem, SkylineRank::Area), "skyline/area");
  return searchExact(problem, options, start, lowerBound, std::move(best),
                     nodeBudget(options));
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
  auto start = Clock::now();
  const int64_t lowerBound = computeLowerBound(problem);
  const int64_t goal =
      options.capacity ? std::max(*options.capacity, lowerBound) : lowerBound;
  uint64_t nodesLeft = nodeBudget(options);
  Incumbent best;
  runSkylines(problem, goal, best);
  // Restarts get at most half the time and nodes; the exact search the rest.
  nodesLeft -= runRestarts(problem, goal, options.timeLimitSeconds / 2,
                           nodesLeft / 2, best);
  if (best.plan.arenaSize > goal) {
    std::string name;
    Plan plan = planGreedyBest(problem, goal, name,
                               options.timeLimitSeconds - secondsSince(start));
    best.offer(std::move(plan), std::move(name));
  }
  if (best.plan.arenaSize <= goal)
    return finish(options, lowerBound, std::move(best.plan),
                  std::move(best.producedBy));
  return searchExact(problem, options, start, lowerBound, std::move(best),
                     nodesLeft);
}

} // namespace

const std::vector<PlannerAlgorithm> &plannerAlgorithms() {
  static const std::vector<PlannerAlgorithm> algorithms = {
      {"auto",
       "skyline and greedy-best, stopping at the lower bound; else the exact "
       "search from the best of them, within the time limit",
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
