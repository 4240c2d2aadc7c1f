//===- Fit.h - microbatch sizes tried for a device, and the choice -*- C++ -*-===//
//
// What zcc --microbatch and Python's compile(fit=...) record of each size
// they try, the rule that chooses among them and the table they print.
// MLIR-free: the capture API's Graph and the Python module use it.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_COMPILER_FIT_H
#define ZCC_COMPILER_FIT_H

#include "zcc/Runtime/Plan/Plan.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zcc {

/// One microbatch size tried (compileFitted, fitCandidate).
struct FitRow {
  enum Result { No, AsIs, Recomputing };
  int64_t microbatch = 0, microbatches = 0;
  Result result = No;
  uint64_t arena = 0; // the plain plan's; the recomputing one's when kept
  uint64_t other = 0; // fixedDeviceBytes with the reserve
  double extraFlops = 0, extraShare = 0; // recomputation's, per step
  std::string why;                       // of a size that does not fit
};
struct FitChoice {
  int64_t fit = 0, reserve = 0, batch = 0;
  std::vector<FitRow> rows;
  int chosen = -1;
};

/// (all, recomputed) FLOPs of one optimizer step: the training entry, or
/// `microbatches` runs of the microbatch entry and one apply.
std::pair<double, double> stepFlops(const runtime::Plan &plan,
                                    int64_t microbatches);
/// The choice among the sizes tried (largest first): the first that fits
/// as it is, else the one recomputing the fewest FLOPs (a tie: the larger);
/// -1 when none fits. compile(fit=...) in Python chooses by it too.
int pickFitRow(const std::vector<FitRow> &rows);
/// The table of sizes tried, `*` at the choice (Python's fit_report too).
std::string formatFitChoice(const FitChoice &choice);

} // namespace zcc

#endif // ZCC_COMPILER_FIT_H
