//===- OverlapIndex.h - which buffers overlap a buffer in time --*- C++ -*-===//
//
// A static centred interval tree over all lifetimes. Enumerating the buffers
// that overlap one buffer costs O(log n + k) for k results, instead of a scan
// of every buffer; the largest real graphs have 180M overlapping pairs, too
// many to store as explicit conflict lists.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_PLANNER_OVERLAPINDEX_H
#define ZCC_LIB_PLANNER_OVERLAPINDEX_H

#include "zcc/Planner/Problem.h"

#include <cstdint>
#include <vector>

namespace zcc::planner::detail {

class OverlapIndex {
public:
  explicit OverlapIndex(const std::vector<BufferRequest> &buffers);

  /// Calls fn(j) for every buffer j != i whose lifetime overlaps buffer i's,
  /// each exactly once, in no particular order.
  template <typename Fn> void forEachOverlapping(uint32_t i, Fn &&fn) const {
    int64_t lower = buffers[i].lower, upper = buffers[i].upper;
    // Buffers alive at `lower` ...
    stab(lower, [&](uint32_t j) {
      if (j != i)
        fn(j);
    });
    // ... and buffers starting strictly inside (lower, upper).
    for (auto it = firstStartAfter(lower);
         it != byLower.end() && buffers[*it].lower < upper; ++it)
      if (*it != i)
        fn(*it);
  }

private:
  struct Node {
    int64_t center = 0;
    int32_t left = -1, right = -1;
    std::vector<uint32_t> byLower;     // ascending lower
    std::vector<uint32_t> byUpperDesc; // descending upper
  };

  int32_t build(std::vector<uint32_t> &items);
  std::vector<uint32_t>::const_iterator firstStartAfter(int64_t time) const;

  /// Calls fn(j) for every buffer with lower <= x < upper.
  template <typename Fn> void stab(int64_t x, Fn &&fn) const {
    for (int32_t n = root; n >= 0;) {
      const Node &node = nodes[n];
      if (x < node.center) {
        for (uint32_t j : node.byLower) {
          if (buffers[j].lower > x)
            break;
          fn(j);
        }
        n = node.left;
      } else {
        for (uint32_t j : node.byUpperDesc) {
          if (buffers[j].upper <= x)
            break;
          fn(j);
        }
        n = node.right;
      }
    }
  }

  const std::vector<BufferRequest> &buffers;
  std::vector<Node> nodes;
  int32_t root = -1;
  std::vector<uint32_t> byLower; // every buffer, ascending lower
};

} // namespace zcc::planner::detail

#endif // ZCC_LIB_PLANNER_OVERLAPINDEX_H
