//===- Compile.h - a zt forward + loss module into a checked plan -*- C++ -*-===//
//
// The whole compiler in process: the zcc-train-step pipeline, the plan export,
// the workspaces and the runtime's own loader checks. The zcc tool, the
// capture API (zcc/Capture) and the C API (zcc/zcc.h) all compile through
// here, so a plan made in memory is exactly the plan zcc would write.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_COMPILER_COMPILE_H
#define ZCC_COMPILER_COMPILE_H

#include "mlir/IR/BuiltinOps.h"
#include "zcc/Compiler/CompileOptions.h"
#include "zcc/Compiler/Fit.h"
#include "zcc/Runtime/Plan/KernelRules.h"
#include "zcc/Runtime/Plan/Plan.h"
#include "zcc/Runtime/Status.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zcc {

/// InvalidArgument naming the first bad option (options::check), else ok.
runtime::Status checkCompileOptions(const CompileOptions &options);

/// "zcc optimizer=adamw lr=0.001 ...": the plan's producer line.
std::string producerLine(const CompileOptions &options);

/// The device bytes a plan takes beside its arena: the persistent and
/// constant regions, the largest entry's inputs and outputs, and `reserve`
/// (what the CUDA context, graphs and libraries take).
uint64_t fixedDeviceBytes(const runtime::Plan &plan, int64_t reserve);

/// Compiles a verified forward + loss module in place (it ends in the planned
/// zplan form) into a plan the runtime accepts. Every diagnostic the passes
/// emit is collected, with its location, into the returned status; none is
/// printed. `plannedIR`, when given, receives the planned module's text;
/// `warnings`, the warnings of a successful compile ("file:line:col:
/// warning: ..." lines, empty when none), which the caller shows.
/// With a memory budget, a plan whose arena stays above it is an error
/// naming the smallest arena recomputation reaches. With `fit`, the budget
/// is what fit leaves beside fixedDeviceBytes, and only where the plan
/// without one does not fit.
runtime::Status compileModule(mlir::ModuleOp module,
                              const CompileOptions &options, runtime::Plan &out,
                              std::string *plannedIR = nullptr,
                              std::string *warnings = nullptr);

/// The program's batch: its first input's leading size.
runtime::Status programBatch(mlir::ModuleOp module, int64_t &batch);

/// Rewrites a forward + loss module (before compiling) at `microbatch` rows
/// of its batch: every value the inputs and labels flow into, batch-major
/// (its leading size a multiple of the batch), gets that share of its
/// leading size; broadcasts and splat constants beside them follow. An op
/// that moves, splits or joins along the batch is an error naming it.
runtime::Status rebatchModule(mlir::ModuleOp module, int64_t microbatch);

/// zcc --fit --microbatch: each size dividing the program's batch (largest
/// first; only `microbatch` when > 0) at options.fit bytes: the first that
/// fits as it is, else the one recomputing the fewest FLOPs per step,
/// accumulating the batch's microbatches (grad_scale divided by their
/// number). OutOfMemory with the table when none fits.
runtime::Status compileFitted(mlir::ModuleOp module,
                              const CompileOptions &options, int64_t microbatch,
                              FitChoice &choice, runtime::Plan &out,
                              std::string *warnings = nullptr);
/// One microbatch size's program (`program`, already at that size) at
/// options.fit bytes, as compileFitted and Python's compile(fit=...) judge
/// it: `microbatches` of them accumulating (grad_scale divided by their
/// number), compiled as it is, and with the budget the device leaves its
/// arena when that does not fit. `row` says how it went (its microbatch
/// fields are the caller's); `out` gets the plan it would keep (none for
/// a size that does not fit).
runtime::Status fitCandidate(mlir::ModuleOp program,
                             const CompileOptions &options,
                             int64_t microbatches, FitRow &row,
                             runtime::Plan &out,
                             std::string *warnings = nullptr);

/// Parses zt text (`bufferName` names it in messages) and compiles it.
runtime::Status compileSource(std::string_view text,
                              std::string_view bufferName,
                              const CompileOptions &options, runtime::Plan &out,
                              std::string *warnings = nullptr);

/// A context with the zt, zplan and func dialects loaded.
void loadCompilerDialects(mlir::MLIRContext &context);

/// "file:line:col: error: message" lines (notes indented under their error)
/// for every diagnostic emitted while it is alive: errors as values.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(mlir::MLIRContext &context);
  ~DiagnosticCollector();
  /// What was collected; empty when nothing was emitted.
  const std::string &text() const { return text_; }
  bool empty() const { return text_.empty(); }
  void clear() { text_.clear(); }

private:
  mlir::MLIRContext &context_;
  bool printedOp_;
  uint64_t handler_;
  std::string text_;
};

/// formatLocation (a location as "file:line:col") is in
/// zcc/Target/PlanExport.h.

} // namespace zcc

#endif // ZCC_COMPILER_COMPILE_H
