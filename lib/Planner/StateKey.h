//===- StateKey.h - 128-bit keys of refuted search states -------*- C++ -*-===//
//
// The exact and time-order searches remember refuted states by a 128-bit
// hash of what the rest of the search depends on; two independent 64-bit
// halves make a false match (which would wrongly prune) negligible.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_PLANNER_STATEKEY_H
#define ZCC_LIB_PLANNER_STATEKEY_H

#include <cstddef>
#include <cstdint>

namespace zcc::planner::detail {

/// The splitmix64 finaliser.
inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct StateKey {
  uint64_t a, b;
  bool operator==(const StateKey &other) const {
    return a == other.a && b == other.b;
  }
};

struct StateKeyHash {
  size_t operator()(const StateKey &key) const { return key.a ^ key.b; }
};

} // namespace zcc::planner::detail

#endif // ZCC_LIB_PLANNER_STATEKEY_H
