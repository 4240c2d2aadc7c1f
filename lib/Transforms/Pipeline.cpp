//===- Pipeline.cpp - the zcc-train-step pass pipeline --------------------===//

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "zcc/Transforms/Passes.h"

using namespace mlir;

void zcc::buildTrainStepPipeline(OpPassManager &pm,
                                 const TrainStepPipelineOptions &options) {
  if (options.precision != "f32") {
    ZTMixedPrecisionOptions mixed;
    mixed.precision = options.precision;
    pm.addPass(createZTMixedPrecision(mixed));
  }
  ZTAutodiffOptions autodiff;
  autodiff.accumulate = options.accumulate;
  autodiff.recompute = options.recompute;
  pm.addPass(createZTAutodiff(autodiff));
  // "none" keeps the gradients as step outputs (gradient checks, custom
  // optimizers outside the plan).
  if (options.optimizer != "none") {
    ZTOptimizerOptions optimizer;
    optimizer.optimizer = options.optimizer;
    optimizer.lr = options.lr;
    optimizer.momentum = options.momentum;
    optimizer.nesterov = options.nesterov;
    optimizer.weightDecay = options.weightDecay;
    optimizer.weightDecayMinRank = options.weightDecayMinRank;
    optimizer.noWeightDecay = options.noWeightDecay;
    optimizer.beta1 = options.beta1;
    optimizer.beta2 = options.beta2;
    optimizer.eps = options.eps;
    optimizer.gradScale = options.gradScale;
    optimizer.clipGradNorm = options.clipGradNorm;
    optimizer.lrWarmupSteps = options.lrWarmupSteps;
    optimizer.lrDecay = options.lrDecay;
    optimizer.lrDecaySteps = options.lrDecaySteps;
    optimizer.minLr = options.minLr;
    optimizer.dataParallel = options.dataParallel;
    optimizer.bucketBytes = options.bucketBytes;
    optimizer.shardOptimizerState = options.shardOptimizerState;
    optimizer.ranks = options.ranks;
    pm.addPass(createZTOptimizer(optimizer));
  }
  if (options.memoryBudget > 0) {
    ZTRematOptions remat;
    remat.budget = options.memoryBudget;
    remat.alignment = options.alignment;
    remat.problemFile = options.rematProblem;
    pm.addPass(createZTRemat(remat));
  }
  ZTPlanMemoryOptions plan;
  plan.alignment = options.alignment;
  plan.algorithm = options.algorithm;
  plan.timeLimit = options.plannerTimeLimit;
  plan.nodeLimit = options.plannerNodeLimit;
  plan.plantInPlaceBug = options.plantInPlaceBug;
  pm.addPass(createZTPlanMemory(plan));
}

void zcc::registerTrainStepPipeline() {
  PassPipelineRegistration<TrainStepPipelineOptions>(
      "zcc-train-step",
      "The whole training step: zt-mixed-precision (with bf16), "
      "zt-autodiff, zt-optimizer, zt-remat (with a memory budget), "
      "zt-plan-memory",
      buildTrainStepPipeline);
}
