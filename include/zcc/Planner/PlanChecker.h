//===- PlanChecker.h - independent check of a memory plan -------*- C++ -*-===//
//
// Shares no code with the planning algorithms, so a bug in one cannot hide a
// bug in the other. The runtime runs the same check when it loads a plan.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_PLANNER_PLANCHECKER_H
#define ZCC_PLANNER_PLANCHECKER_H

#include "zcc/Planner/Problem.h"

#include <string>
#include <vector>

namespace zcc::planner {

/// Verifies that every offset is non-negative and aligned, fixed offsets are
/// kept, every buffer ends within `arenaSize`, and buffers whose lifetimes
/// overlap are disjoint in memory. O(n log n). Returns "" when the plan is
/// valid, else a message naming the buffers involved.
std::string checkPlan(const Problem &problem,
                      const std::vector<int64_t> &offsets, int64_t arenaSize);

} // namespace zcc::planner

#endif // ZCC_PLANNER_PLANCHECKER_H
