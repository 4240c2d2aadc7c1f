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
std::string formatPlanReport(const Plan &plan, int largest = 8);

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_PLANREPORT_H
