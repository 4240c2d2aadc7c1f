//===- PlanExport.h - zplan IR to the runtime's plan ------------*- C++ -*-===//
//
// The last step of the compiler: a module in the planned `zplan` form
// becomes the runtime's in-memory Plan (include/zcc/Runtime/Plan/Plan.h), which
// the runtime's own writer serializes. The compiler never writes file bytes
// itself, so the format has exactly one writer and one reader.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_TARGET_PLANEXPORT_H
#define ZCC_TARGET_PLANEXPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "zcc/Runtime/Plan/Plan.h"

namespace zcc {

/// Emits a diagnostic and fails on anything the plan format cannot hold
/// (an element type other than f32/i32/i64, a parameter of an unknown
/// attribute kind, a module that is not in the zplan form).
mlir::FailureOr<runtime::Plan> exportPlan(mlir::ModuleOp module);

/// "file:line:col" (or "file:line" when the column is 0) of the first file
/// location inside `loc`; "" when there is none.
std::string formatLocation(mlir::Location loc);

} // namespace zcc

#endif // ZCC_TARGET_PLANEXPORT_H
