//===- Algorithms.h - memory planning algorithms by name --------*- C++ -*-===//
//
// Planning is a pipeline (TVM USMP / XLA heap simulator): pick an algorithm
// from this registry, run it, verify the plan with the independent checker.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_PLANNER_ALGORITHMS_H
#define ZCC_PLANNER_ALGORITHMS_H

#include "zcc/Planner/Problem.h"

#include <cstdint>
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
  /// Effort budget in search nodes (0: unlimited). Unlike the time limit it
  /// gives the same plan on every machine, so tests and reproducible builds
  /// use it. With it, the time limit is only a guard: every stage may run
  /// until it, and PlanOutcome::timeLimited says when it ended one. Without
  /// it, the stages get shares of the time.
  uint64_t nodeLimit = 0;
};

struct PlanOutcome {
  /// The best plan produced; meaningful whenever the problem is valid.
  Plan plan;
  /// False when a capacity was given and no plan within it was found.
  bool found = false;
  /// With a capacity: proven that no plan fits (below the lower bound, or
  /// the exact search exhausted every canonical plan).
  bool provenInfeasible = false;
  /// The problem's lower bound, and whether the arena equals it (nothing can
  /// do better).
  int64_t lowerBound = 0;
  bool reachedLowerBound = false;
  /// Proven minimal: the arena is at most `provenBound` (it equals the lower
  /// bound, or the exact search refuted every smaller arena).
  bool optimal = false;
  /// The algorithm that produced `plan` (for composite algorithms, the inner
  /// one, e.g. "greedy-best/size/best-fit").
  std::string producedBy;
  /// Every arena below this many bytes is proven infeasible: the lower bound
  /// (rounded up to the granule every plan's arena is a multiple of), or more
  /// where the exact search refuted a capacity. `optimal` means the arena
  /// equals it.
  int64_t provenBound = 0;
  /// Each time the best plan improved: seconds since the start, its arena,
  /// what produced it (the last is `plan`) and the search nodes spent before
  /// it (the same on every machine, unlike the seconds).
  struct Improvement {
    double seconds = 0;
    int64_t arenaSize = 0;
    std::string producedBy;
    uint64_t nodes = 0;
  };
  std::vector<Improvement> improvements;
  /// The time limit, not the node limit, may have ended a search: the plan
  /// can then differ on a faster or slower (or busier) machine. Never set
  /// when the search ended on nodes, or on the bound.
  bool timeLimited = false;
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
/// arena, stopping as soon as one reaches `stopAtBytes` or, after a run, when
/// `timeLimitSeconds` have passed. `producedBy` names the winning run, e.g.
/// "greedy-best/size/best-fit".
Plan planGreedyBest(const Problem &problem, int64_t stopAtBytes,
                    std::string &producedBy, double timeLimitSeconds = 1e300);

/// Which buffer the skyline planner puts at the current level when several
/// can sit there.
enum class SkylineRank { Lifetime, Size, Area };

/// Bottom-up placement in non-decreasing offset order: at each step, the
/// lowest level any unplaced buffer can take, filled by the best-ranked buffer
/// that fits there. O(n log n).
Plan planSkyline(const Problem &problem, SkylineRank rank);

/// The skyline descent kept under `capacity`: it checks at every level that
/// each section's unplaced demand still fits above its floor, and first
/// covers the sections that would overflow when the level next rises. True,
/// with `plan` set, when every buffer fits; false at the first dead end (it
/// never backtracks, so false proves nothing). A non-zero `seed` perturbs the
/// ranking (each key scaled by a factor in [0.5, 1.5), the same on every
/// platform): restarts with other seeds try other orders.
bool planSkylineWithin(const Problem &problem, SkylineRank rank,
                       int64_t capacity, Plan &plan, uint64_t seed = 0);

enum class ExactStatus { Found, Infeasible, OutOfTime };

/// Depth-first search over canonical plans (see Exact.cpp) for a plan whose
/// arena fits in `capacity`. Found: `plan` holds it. Infeasible: no plan
/// fits, proven. OutOfTime: the time or node limit passed first. `nodeCount`,
/// when given, receives the number of search nodes expanded.
ExactStatus planExact(const Problem &problem, int64_t capacity,
                      double timeLimitSeconds, Plan &plan,
                      uint64_t *nodeCount = nullptr,
                      uint64_t nodeLimit = UINT64_MAX);

/// The exact search on the busiest buffers first (see CoreFirst.cpp): for
/// falling fractions of the peak, the buffers live where at least that much
/// is live are planned under `capacity` and pinned, then the rest around
/// them. Found: `plan` holds a plan of the whole problem. Infeasible: a core
/// alone has no plan, so neither has the whole. OutOfTime: no core led to a
/// plan within the limits (which proves nothing).
ExactStatus planCoreFirst(const Problem &problem, int64_t capacity,
                          double timeLimitSeconds, Plan &plan,
                          uint64_t *nodeCount = nullptr,
                          uint64_t nodeLimit = UINT64_MAX);

/// Placements in time order with backtracking (see TimeOrder.cpp): each buffer,
/// by first step, at an edge of a free gap among the buffers live when it
/// starts, under `capacity`. With `hint` (an offset per buffer, e.g. a plan
/// over the capacity), a buffer first tries its hinted offset where that is
/// free: a repair of the hinted plan. Found: `plan` holds a plan.
/// Infeasible: a pre-placed buffer ends above the capacity. OutOfTime: the
/// limits ran out, or every choice was tried (only gap edges are, so that
/// proves nothing).
ExactStatus planTimeOrder(const Problem &problem, int64_t capacity,
                          double timeLimitSeconds, Plan &plan,
                          uint64_t *nodeCount = nullptr,
                          uint64_t nodeLimit = UINT64_MAX,
                          const std::vector<int64_t> *hint = nullptr);

/// Moves each buffer of a valid plan, in offset order, down to the lowest
/// aligned offset free of the buffers already moved (first fit, Greedy.cpp;
/// pre-placed ones stay). No buffer moves up, so the plan stays valid and its
/// arena never grows: time order's plans reach the capacity's top edge where
/// they need not.
void compactPlan(const Problem &problem, Plan &plan);

} // namespace zcc::planner

#endif // ZCC_PLANNER_ALGORITHMS_H
