//===- PlanReport.h - what a plan costs, in words ---------------*- C++ -*-===//

#ifndef ZCC_RUNTIME_PLANREPORT_H
#define ZCC_RUNTIME_PLANREPORT_H

#include "zcc/Runtime/Plan/Plan.h"

#include <string>

namespace zcc::runtime {

/// Per entry: arena size, lower bound, their ratio, the no-reuse size, the
/// input/output bytes; then the persistent and constant regions, and the
/// `largest` biggest arena buffers with the launch that writes each, its
/// shape and its lifetime in launch indices.
/// Then the launches that recompute forward values in the backward
/// (Phase::Recompute), by kernel and source line, with their FLOPs.
std::string formatPlanReport(const Plan &plan, int largest = 8);

/// Floating-point operations of one launch of `entry` (kernelFlops,
/// KernelRules.h).
double launchFlops(const Entry &entry, const Launch &launch);

/// An entry's FLOPs: every launch's, and those of the launches recomputing
/// forward values (Phase::Recompute).
struct EntryFlops {
  double total = 0, recomputed = 0;
};
EntryFlops entryFlops(const Entry &entry);

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_PLANREPORT_H
