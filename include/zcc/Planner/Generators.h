//===- Generators.h - seeded planning instances for tests and benchmarks -===//

#ifndef ZCC_PLANNER_GENERATORS_H
#define ZCC_PLANNER_GENERATORS_H

#include "zcc/Planner/Problem.h"

#include <cstdint>

namespace zcc::planner {

/// `count` buffers with random lifetimes in [0, horizon), sizes in
/// [0, maxSize] and power-of-two alignments up to 64; about one instance in
/// eight has one pre-placed buffer. Same seed, same instance.
Problem generateRandomProblem(uint64_t seed, int count, int64_t horizon,
                              int64_t maxSize);

/// Cuts a capacity x horizon rectangle into `count` pieces by random
/// guillotine cuts; each piece is a buffer (lifetime = its time span, size =
/// its height). The pieces tile the rectangle, so the peak live size is
/// `capacity` and a plan of exactly `capacity` bytes exists: the optimum
/// equals the lower bound. Same seed, same instance.
Problem generateRectangleProblem(uint64_t seed, int count, int64_t capacity,
                                 int64_t horizon);

} // namespace zcc::planner

#endif // ZCC_PLANNER_GENERATORS_H
