//===- Registry.cpp - planning algorithms by name -------------------------===//

#include "zcc/Planner/Algorithms.h"
#include "zcc/Planner/PlanChecker.h"

#include <chrono>
#include <utility>

namespace zcc::planner {

namespace {

PlanOutcome finish(const PlanOptions &options, int64_t lowerBound, Plan plan,
                   std::string producedBy) {
  PlanOutcome outcome;
  outcome.lowerBound = lowerBound;
  outcome.reachedLowerBound = plan.arenaSize == lowerBound;
  outcome.found = !options.capacity || plan.arenaSize <= *options.capacity;
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

} // namespace

const std::vector<PlannerAlgorithm> &plannerAlgorithms() {
  static const std::vector<PlannerAlgorithm> algorithms = {
      {"greedy-best",
       "greedy in 4 orders (size, lifetime, area, start) x (best fit, first "
       "fit); the smallest arena, stopping early at the lower bound",
       runGreedyBest},
      {"greedy-size",
       "largest first, each in the smallest gap that fits, else on top",
       runGreedySize},
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
