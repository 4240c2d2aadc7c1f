//===- Sections.h - lifetimes as ranges of time sections -------*- C++ -*-===//
//
// The skyline and exact planners work on sections: the intervals between
// consecutive distinct lifetime endpoints. Buffer i covers the sections
// [first[i], last[i]); two buffers overlap in time exactly when their section
// ranges intersect. Pre-placed buffers are obstacles that movable buffers jump
// over.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_PLANNER_SECTIONS_H
#define ZCC_LIB_PLANNER_SECTIONS_H

#include "zcc/Planner/Algorithms.h"

#include <cstdint>
#include <vector>

namespace zcc::planner::detail {

class Sections {
public:
  explicit Sections(const Problem &problem);

  int32_t count() const { return sectionCount; }
  int32_t first(uint32_t i) const { return firstSection[i]; }
  int32_t last(uint32_t i) const { return lastSection[i]; }
  bool overlap(uint32_t i, uint32_t j) const {
    return firstSection[i] < lastSection[j] && firstSection[j] < lastSection[i];
  }

  /// Buffers a planner places: movable and non-empty, in index order.
  const std::vector<uint32_t> &movable() const { return movableBuffers; }
  /// Offsets with every pre-placed buffer at its fixed offset, the rest 0.
  std::vector<int64_t> initialOffsets() const;
  /// The lowest aligned offset >= `from` where movable buffer i clears every
  /// pre-placed buffer that overlaps it in time.
  int64_t lowestFeasible(uint32_t i, int64_t from) const;
  /// Bytes of `indices` live in each section, one entry per section.
  std::vector<int64_t> liveBytes(const std::vector<uint32_t> &indices) const;
  /// The largest end of a pre-placed buffer, empty ones included (0 when
  /// there are none).
  int64_t fixedTop() const { return fixedEnd; }

private:
  const Problem &problem;
  int32_t sectionCount = 0;
  std::vector<int32_t> firstSection, lastSection;
  std::vector<uint32_t> movableBuffers;
  std::vector<uint32_t> fixedBuffers; // non-empty pre-placed, by offset
  int64_t fixedEnd = 0;
};

/// `indices` sorted best first for the skyline and exact planners: by
/// lifetime, size or area (descending), ties broken deterministically. A
/// non-zero `seed` scales each primary key by a pseudo-random factor in
/// [0.5, 1.5), the same on every platform, for restarts.
std::vector<uint32_t> rankBuffers(const std::vector<BufferRequest> &buffers,
                                  std::vector<uint32_t> indices,
                                  SkylineRank rank, uint64_t seed = 0);

} // namespace zcc::planner::detail

#endif // ZCC_LIB_PLANNER_SECTIONS_H
