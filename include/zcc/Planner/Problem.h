//===- Problem.h - buffers to place in one arena ----------------*- C++ -*-===//
//
// The static memory planning problem: each buffer has a size, an alignment
// and a half-open lifetime [lower, upper) in schedule steps; a plan gives each
// an offset so that buffers alive at the same step are disjoint in memory.
// Pure C++: no MLIR, usable from the compiler, the runtime and zcc-plan.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_PLANNER_PROBLEM_H
#define ZCC_PLANNER_PROBLEM_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zcc::planner {

struct BufferRequest {
  int64_t id = 0;
  /// Live over the steps [lower, upper); lower < upper.
  int64_t lower = 0;
  int64_t upper = 0;
  /// Bytes; 0 is allowed and conflicts with nothing.
  int64_t size = 0;
  /// A power of two; the offset must be a multiple of it.
  int64_t alignment = 1;
  /// Pre-placed buffers keep this offset (e.g. a slot fixed by an ABI).
  std::optional<int64_t> fixedOffset;
};

struct Problem {
  std::vector<BufferRequest> buffers;
};

/// Offsets in the order of Problem::buffers, and the arena size: the largest
/// offset + size (0 for no buffers).
struct Plan {
  std::vector<int64_t> offsets;
  int64_t arenaSize = 0;
};

/// Checks the problem's own invariants (sizes >= 0, lower < upper, alignment a
/// power of two, fixed offsets aligned and non-negative, unique ids). Returns
/// "" or a message naming the first offending buffer.
std::string validateProblem(const Problem &problem);

/// The peak over time of the live bytes, every live buffer but the topmost
/// rounded up to the smallest alignment: no plan can use less.
int64_t computeLowerBound(const Problem &problem);

/// Smallest multiple of `alignment` (a power of two) that is >= value.
inline int64_t alignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}

/// Largest offset + size over the plan's buffers.
int64_t computeArenaSize(const Problem &problem,
                         const std::vector<int64_t> &offsets);

} // namespace zcc::planner

#endif // ZCC_PLANNER_PROBLEM_H
