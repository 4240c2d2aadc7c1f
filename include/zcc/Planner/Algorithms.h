//===- Algorithms.h - memory planning algorithms by name --------*- C++ -*-===//
//
// Planning is a pipeline (TVM USMP / XLA heap simulator): pick an algorithm
// from this registry, run it, verify the plan with the independent checker.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_PLANNER_ALGORITHMS_H
#define ZCC_PLANNER_ALGORITHMS_H

#include "zcc/Planner/Problem.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zcc::planner {

struct PlanOptions {
  /// When set, a plan is only "found" if its arena fits in this many bytes.
  std::optional<int64_t> capacity;
  /// Wall-clock budget for searching algorithms; heuristics ignore it.
  double timeLimitSeconds = 10.0;
};

struct PlanOutcome {
  /// The best plan produced; meaningful whenever the problem is valid.
  Plan plan;
  /// False when a capacity was given and no plan within it was found.
  bool found = false;
  /// The problem's lower bound, and whether the arena equals it (nothing can
  /// do better).
  int64_t lowerBound = 0;
  bool reachedLowerBound = false;
  /// The algorithm that produced `plan` (for composite algorithms, the inner
  /// one, e.g. "greedy-best/size/best-fit").
  std::string producedBy;
};

using PlannerFunction = PlanOutcome (*)(const Problem &, const PlanOptions &);

struct PlannerAlgorithm {
  const char *name;
  const char *summary;
  PlannerFunction run;
};

/// Every algorithm, in a fixed order (the first is the default).
const std::vector<PlannerAlgorithm> &plannerAlgorithms();

/// The algorithm called `name`, or nullptr.
const PlannerAlgorithm *findPlannerAlgorithm(std::string_view name);

/// A plan as tools get it: the algorithm's outcome, how long it took, and the
/// independent checker's verdict ("" when valid). Callers must not use a plan
/// whose `violation` is non-empty.
struct CheckedRun {
  PlanOutcome outcome;
  double seconds = 0;
  std::string violation;
};

/// Runs `algorithm` on `problem`, times it, and checks the plan.
CheckedRun runChecked(const PlannerAlgorithm &algorithm, const Problem &problem,
                      const PlanOptions &options);

/// Orders tried by the greedy algorithms.
enum class GreedyOrder { Size, Lifetime, Area, Start };
/// Where a buffer goes among the gaps left by time-overlapping buffers.
enum class GreedyFit { BestFit, FirstFit };

/// One greedy placement: buffers in `order` (pre-placed buffers first), each
/// at the chosen gap among already placed buffers that overlap it in time,
/// else on top. Deterministic: ties break on the buffer index.
Plan planGreedy(const Problem &problem, GreedyOrder order, GreedyFit fit);

/// planGreedy in every order x fit, sharing one overlap index; the smallest
/// arena, stopping as soon as one reaches `stopAtBytes`. `producedBy` names
/// the winning run, e.g. "greedy-best/size/best-fit".
Plan planGreedyBest(const Problem &problem, int64_t stopAtBytes,
                    std::string &producedBy);

} // namespace zcc::planner

#endif // ZCC_PLANNER_ALGORITHMS_H
