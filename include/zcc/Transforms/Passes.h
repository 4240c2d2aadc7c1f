//===- Passes.h - zcc compiler passes ---------------------------*- C++ -*-===//

#ifndef ZCC_TRANSFORMS_PASSES_H
#define ZCC_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"
#include "zcc/Compiler/CompileOptions.h"
#include "zcc/Dialect/ZPlan/ZPlanOps.h"

namespace zcc {

#define GEN_PASS_DECL
#include "zcc/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "zcc/Transforms/Passes.h.inc"

/// zt-autodiff, zt-optimizer, zt-remat (with a memory budget),
/// zt-fuse-elementwise (when asked), zt-plan-memory: a forward + loss module in, a
/// zplan module out. The zcc tool runs it; `zt-opt -zcc-train-step` too.
/// Each pass takes its rows of `options` (zcc/Compiler/OptionList.h).
void buildTrainStepPipeline(mlir::OpPassManager &pm,
                            const CompileOptions &options);

/// Registers the zcc-train-step pipeline with the pass registry; its option
/// string is every compile option by its flag name
/// (`-zcc-train-step="optimizer=adamw lr=0.001"`).
void registerTrainStepPipeline();

/// The data-parallel bucket size zt-optimizer takes when `bucket-bytes` is 0:
/// a sixteenth of an entry's `gradientBytes`, at least 1 MiB (PyTorch DDP's
/// first bucket) and at most 25 MiB (DDP's bucket_cap_mb). Sixteen buckets
/// leave about a sixteenth of the communication after the backward, and
/// keep a bucket's extra arena bytes to about a sixteenth of the gradients;
/// the floor keeps each collective long against its latency
/// (docs/distributed.md).
int64_t autoBucketBytes(int64_t gradientBytes);

} // namespace zcc

#endif // ZCC_TRANSFORMS_PASSES_H
