//===- NonFinite.h - where a step's first NaN or infinity came from -*- C++ -*-===//
//
// What a checked run (Session::runChecked) reports: the first launch of an
// entry that wrote a NaN or an infinity, with its inputs' and outputs'
// ranges, so that a diverged run names the op, its phase and its source
// line (zrun --on-nonfinite, docs/runtime.md).
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_EXECUTORS_NONFINITE_H
#define ZCC_RUNTIME_EXECUTORS_NONFINITE_H

#include "zcc/Runtime/Plan/Plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zcc::runtime {

/// The values of one tensor of an entry: their range and how many are NaN,
/// infinite or zero (a checked run's report).
struct TensorRange {
  uint32_t tensor = 0; // in its entry
  uint64_t count = 0, nans = 0, infs = 0, zeros = 0;
  double min = 0, max = 0; // of the finite values
  bool finite() const { return nans == 0 && infs == 0; }
};

/// What a checked run of an entry found (Session::runChecked): the first
/// launch that wrote a NaN or an infinity, its inputs' ranges before it
/// ran and its outputs' after, and the non-finite values the entry's
/// persistent tensors and inputs already held when it began.
struct NonFiniteFinding {
  bool found = false;
  /// Whether the launch wrote a NaN; else an infinity only (which a mask
  /// may write on purpose): a later launch writing a NaN replaces it.
  bool nan = false;
  int entry = -1;
  size_t launch = 0;
  std::vector<TensorRange> inputs, outputs;
  /// An earlier launch that wrote an infinity (and no NaN), or -1.
  int64_t firstInfinite = -1;
  std::vector<TensorRange> before;
};

/// A finding in words: the op (the launch's kernel), its phase (forward,
/// backward, update), its source location, its outputs' NaN and infinity
/// counts and its inputs' ranges; or the non-finite tensors an entry began
/// with.
std::string describeNonFinite(const Plan &plan, const NonFiniteFinding &f);

/// The range of `count` elements of `dtype` at `data` (f32 elements held
/// as doubles when `wide`): what a checked run records.
TensorRange rangeOf(uint32_t tensor, const uint8_t *data, DType dtype,
                    uint64_t count, bool wide);

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_EXECUTORS_NONFINITE_H
