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
#include "zcc/Runtime/Plan/KernelRules.h"
#include "zcc/Runtime/Plan/Plan.h"
#include "zcc/Runtime/Status.h"

#include <string>
#include <string_view>
#include <vector>

namespace zcc {

/// The options of `zcc` (docs/runtime.md), with its defaults.
struct CompileOptions {
  std::string optimizer = "sgd"; // sgd, adamw, or none (gradients out)
  double lr = 0.01;
  double momentum = 0.0;
  bool nesterov = false;
  double weightDecay = 0.0;
  /// Parameter groups: parameters of fewer dimensions than this, or whose
  /// names match one of `noWeightDecay` (names, or patterns with * and ?),
  /// take no weight decay (nanoGPT: rank 2, so no biases or norm scales).
  int64_t weightDecayMinRank = 0;
  std::vector<std::string> noWeightDecay;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  bool accumulate = false; // microbatch and apply entries
  /// Cheap forward values computed again in the backward (zt-autodiff).
  bool recompute = true;
  /// Largest arena in bytes, workspace included: forward values are
  /// recomputed in the backward until the plan fits (zt-remat); 0: none.
  int64_t memoryBudget = 0;
  /// With a memory budget: zt-remat's problem and choice are written here
  /// (JSON, zcc.remat-problem/v1: a lower bound on the recompute FLOPs,
  /// docs/passes.md#how-close-to-optimal); empty: not written.
  std::string rematProblem;
  /// "f32", or "bf16": matrix products on bf16 operands, summed in f32, with
  /// f32 master weights (zt-mixed-precision).
  std::string precision = "f32";
  double gradScale = 1.0;
  /// Gradients clipped by their global norm to at most this before the
  /// updates (torch.nn.utils.clip_grad_norm_); 0: no clipping.
  double clipGradNorm = 0.0;
  /// Learning-rate schedule (nanoGPT's): lr raised linearly over
  /// `lrWarmupSteps` optimizer steps, then constant ("none"), or decaying
  /// ("cosine", "linear") to `minLr` at step `lrDecaySteps` (counted from 0,
  /// warmup included). The plan computes it from its step counter.
  int64_t lrWarmupSteps = 0;
  std::string lrDecay = "none";
  int64_t lrDecaySteps = 0;
  double minLr = 0.0;
  /// Gradients averaged over the ranks of a data-parallel job before the
  /// updates, in buckets of about `bucketBytes` (docs/distributed.md); 0:
  /// sized from the gradients (zcc::autoBucketBytes).
  bool dataParallel = false;
  int64_t bucketBytes = 0;
  /// ZeRO-1 over `ranks` ranks (needs dataParallel): each rank holds one
  /// shard of the optimizer state.
  bool shardOptimizerState = false;
  int64_t ranks = 0;
  int64_t alignment = 256;
  std::string algorithm = "auto";
  /// The planner's budget per entry: nodes (the same plan on every machine)
  /// and seconds, a guard; when the clock ends a search first, the compile
  /// warns that the plan may differ elsewhere (docs/planner.md). A node
  /// limit of 0 leaves the time limit alone to bound the search.
  double plannerTimeLimit = 60.0;
  int64_t plannerNodeLimit = 2000000;
  int64_t matmulWorkspace = runtime::kAutoMatmulWorkspace;
  /// Tests of the random-program driver only: a wrong plan every plan check
  /// accepts (results written over operands read again later).
  bool plantInPlaceBug = false;
};

/// InvalidArgument naming the first bad option, else ok.
runtime::Status checkCompileOptions(const CompileOptions &options);

/// "zcc optimizer=adamw lr=0.001 ...": the plan's producer line.
std::string producerLine(const CompileOptions &options);

/// Compiles a verified forward + loss module in place (it ends in the planned
/// zplan form) into a plan the runtime accepts. Every diagnostic the passes
/// emit is collected, with its location, into the returned status; none is
/// printed. `plannedIR`, when given, receives the planned module's text;
/// `warnings`, the warnings of a successful compile ("file:line:col:
/// warning: ..." lines, empty when none), which the caller shows.
/// With a memory budget, a plan whose arena stays above it is an error
/// naming the smallest arena recomputation reaches.
runtime::Status compileModule(mlir::ModuleOp module,
                              const CompileOptions &options, runtime::Plan &out,
                              std::string *plannedIR = nullptr,
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
