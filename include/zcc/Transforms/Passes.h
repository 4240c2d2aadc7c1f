//===- Passes.h - zcc compiler passes ---------------------------*- C++ -*-===//

#ifndef ZCC_TRANSFORMS_PASSES_H
#define ZCC_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"
#include "zcc/Dialect/ZPlan/ZPlanOps.h"

namespace zcc {

#define GEN_PASS_DECL
#include "zcc/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "zcc/Transforms/Passes.h.inc"

/// Options of the whole training-step pipeline (zcc-train-step): those of
/// zt-autodiff, zt-optimizer and zt-plan-memory, under the same names.
struct TrainStepPipelineOptions
    : public mlir::PassPipelineOptions<TrainStepPipelineOptions> {
  Option<bool> accumulate{*this, "accumulate",
                          llvm::cl::desc("Accumulate gradients (microbatch and "
                                         "apply entries)"),
                          llvm::cl::init(false)};
  Option<bool> recompute{*this, "recompute",
                         llvm::cl::desc("Recompute cheap forward values in "
                                        "the backward (zt-autodiff)"),
                         llvm::cl::init(true)};
  Option<std::string> optimizer{
      *this, "optimizer",
      llvm::cl::desc("sgd, adamw, or none (gradients are outputs)"),
      llvm::cl::init("sgd")};
  Option<double> lr{*this, "lr", llvm::cl::desc("Learning rate"),
                    llvm::cl::init(0.01)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                          llvm::cl::init(0.0)};
  Option<bool> nesterov{*this, "nesterov", llvm::cl::desc("Nesterov momentum"),
                        llvm::cl::init(false)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("Weight decay"),
                             llvm::cl::init(0.0)};
  Option<int64_t> weightDecayMinRank{
      *this, "weight-decay-min-rank",
      llvm::cl::desc("Parameters of fewer dimensions take no weight decay"),
      llvm::cl::init(0)};
  ListOption<std::string> noWeightDecay{
      *this, "no-weight-decay",
      llvm::cl::desc("Parameters (names or patterns) without weight decay")};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("AdamW beta1"),
                       llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("AdamW beta2"),
                       llvm::cl::init(0.999)};
  Option<double> eps{*this, "eps", llvm::cl::desc("AdamW eps"),
                     llvm::cl::init(1.0e-8)};
  Option<double> gradScale{*this, "grad-scale",
                           llvm::cl::desc("Gradient scale before the update"),
                           llvm::cl::init(1.0)};
  Option<double> clipGradNorm{
      *this, "clip-grad-norm",
      llvm::cl::desc("Clip the gradients by their global norm (0: off)"),
      llvm::cl::init(0.0)};
  Option<int64_t> lrWarmupSteps{
      *this, "lr-warmup-steps",
      llvm::cl::desc("Learning-rate warmup: optimizer steps"),
      llvm::cl::init(0)};
  Option<std::string> lrDecay{
      *this, "lr-decay",
      llvm::cl::desc("Learning-rate decay: none, cosine or linear"),
      llvm::cl::init("none")};
  Option<int64_t> lrDecaySteps{
      *this, "lr-decay-steps",
      llvm::cl::desc("The step where the decay reaches min-lr"),
      llvm::cl::init(0)};
  Option<double> minLr{*this, "min-lr",
                       llvm::cl::desc("The learning rate the decay ends at"),
                       llvm::cl::init(0.0)};
  Option<bool> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("Average the gradients over the ranks of a "
                     "data-parallel job, in buckets (zt.all_reduce)"),
      llvm::cl::init(false)};
  Option<int64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("Data-parallel: bytes of gradients per bucket (0: "
                     "sized from the gradients, autoBucketBytes)"),
      llvm::cl::init(0)};
  Option<bool> shardOptimizerState{
      *this, "shard-optimizer-state",
      llvm::cl::desc("ZeRO-1: optimizer state sharded over `ranks` ranks"),
      llvm::cl::init(false)};
  Option<int64_t> ranks{*this, "ranks",
                        llvm::cl::desc("ZeRO-1: the job's world size"),
                        llvm::cl::init(0)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("f32, or bf16: matrix products on bf16 operands with f32 "
                     "sums and master weights (zt-mixed-precision)"),
      llvm::cl::init("f32")};
  Option<int64_t> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("Recompute forward values until the peak of live arena "
                     "bytes fits (zt-remat; 0: no budget)"),
      llvm::cl::init(0)};
  Option<std::string> rematProblem{
      *this, "remat-problem",
      llvm::cl::desc("With a memory budget: also write the recompute problem "
                     "and zt-remat's choice here (zcc.remat-problem/v1)"),
      llvm::cl::init("")};
  Option<int64_t> alignment{*this, "alignment",
                            llvm::cl::desc("Slot offset alignment in bytes"),
                            llvm::cl::init(256)};
  Option<std::string> algorithm{*this, "algorithm",
                                llvm::cl::desc("Planner algorithm"),
                                llvm::cl::init("auto")};
  Option<double> plannerTimeLimit{
      *this, "planner-time-limit",
      llvm::cl::desc("Seconds the planner may search per entry"),
      llvm::cl::init(60.0)};
  Option<uint64_t> plannerNodeLimit{
      *this, "planner-node-limit",
      llvm::cl::desc("Search nodes the planner may expand per entry (0: "
                     "none)"),
      llvm::cl::init(2000000)};
  Option<bool> plantInPlaceBug{
      *this, "test-plant-in-place-bug",
      llvm::cl::desc("Tests of the random-program driver only: a wrong "
                     "in-place plan the checks accept"),
      llvm::cl::init(false)};
};

/// zt-autodiff, zt-optimizer, zt-remat (with a memory budget),
/// zt-plan-memory: a forward + loss module in, a
/// zplan module out. The zcc tool runs it; `zt-opt -zcc-train-step` too.
void buildTrainStepPipeline(mlir::OpPassManager &pm,
                            const TrainStepPipelineOptions &options);

/// Registers the zcc-train-step pipeline with the pass registry.
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
