//===- Registry.cpp - planning algorithms by name -------------------------===//

#include "zcc/Planner/Algorithms.h"

#include <utility>

namespace zcc::planner {

namespace {

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

PlanOutcome finish(const Problem &problem, const PlanOptions &options,
                   Plan plan, std::string producedBy) {
  PlanOutcome outcome;
  outcome.reachedLowerBound = plan.arenaSize == computeLowerBound(problem);
  outcome.found = !options.capacity || plan.arenaSize <= *options.capacity;
  outcome.plan = std::move(plan);
  outcome.producedBy = std::move(producedBy);
  return outcome;
}

PlanOutcome runGreedySize(const Problem &problem, const PlanOptions &options) {
  return finish(problem, options,
                planGreedy(problem, GreedyOrder::Size, GreedyFit::BestFit),
                "greedy-size");
}

PlanOutcome runGreedyBest(const Problem &problem, const PlanOptions &options) {
  const int64_t lowerBound = computeLowerBound(problem);
  Plan best;
  std::string bestName;
  bool haveBest = false;
  for (GreedyOrder order : {GreedyOrder::Size, GreedyOrder::Lifetime,
                            GreedyOrder::Area, GreedyOrder::Start}) {
    for (GreedyFit fit : {GreedyFit::BestFit, GreedyFit::FirstFit}) {
      Plan plan = planGreedy(problem, order, fit);
      if (!haveBest || plan.arenaSize < best.arenaSize) {
        best = std::move(plan);
        bestName = std::string("greedy-best/") + orderName(order) +
                   (fit == GreedyFit::BestFit ? "/best-fit" : "/first-fit");
        haveBest = true;
      }
      if (best.arenaSize == lowerBound)
        return finish(problem, options, std::move(best), bestName);
    }
  }
  return finish(problem, options, std::move(best), bestName);
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

} // namespace zcc::planner
