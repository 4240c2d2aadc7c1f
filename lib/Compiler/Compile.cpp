//===- Compile.cpp - a zt module into a checked plan, in process ----------===//

#include "zcc/Compiler/Compile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "zcc/Dialect/ZPlan/ZPlanOps.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Runtime/Plan/PlanFile.h"
#include "zcc/Target/PlanExport.h"
#include "zcc/Transforms/Passes.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <sstream>

using namespace mlir;
using zcc::runtime::makeError;
using zcc::runtime::Status;
using zcc::runtime::StatusCode;

void zcc::loadCompilerDialects(MLIRContext &context) {
  context.loadDialect<zt::ZTDialect, zplan::ZPlanDialect, func::FuncDialect>();
}

namespace {

const char *severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

void appendDiagnostic(std::string &text, Diagnostic &diag,
                      const char *indent) {
  std::string where = zcc::formatLocation(diag.getLocation());
  text += indent;
  if (!where.empty())
    text += where + ": ";
  text += severityName(diag.getSeverity());
  text += ": " + diag.str() + "\n";
}

/// The learning-rate schedule's options: a decay this pass knows, steps in
/// order, min lr within [0, lr], and only with an optimizer in the plan.
Status checkSchedule(const zcc::CompileOptions &o) {
  bool decays = o.lrDecay != "none";
  if (decays && o.lrDecay != "cosine" && o.lrDecay != "linear")
    return makeError(StatusCode::InvalidArgument,
                     "lr decay must be 'none', 'cosine' or 'linear', got '",
                     o.lrDecay, "'");
  if (o.lrWarmupSteps < 0)
    return makeError(StatusCode::InvalidArgument,
                     "lr warmup steps must be >= 0, got ", o.lrWarmupSteps);
  if ((decays || o.lrWarmupSteps > 0) && o.optimizer == "none")
    return makeError(StatusCode::InvalidArgument,
                     "a learning-rate schedule needs an optimizer in the plan "
                     "(sgd or adamw)");
  if (!decays && (o.lrDecaySteps != 0 || o.minLr != 0))
    return makeError(StatusCode::InvalidArgument,
                     "lr decay steps and min lr need a decay (lr decay "
                     "'cosine' or 'linear')");
  if (decays && o.lrDecaySteps <= o.lrWarmupSteps)
    return makeError(StatusCode::InvalidArgument,
                     "lr decay steps (the optimizer step where the decay "
                     "reaches min lr, counted from 0, warmup included) must "
                     "be > lr warmup steps (",
                     o.lrWarmupSteps, "), got ", o.lrDecaySteps);
  if (!(o.minLr >= 0 && o.minLr <= o.lr))
    return makeError(StatusCode::InvalidArgument,
                     "min lr must be >= 0 and <= lr (", o.lr, "), got ",
                     o.minLr);
  return Status::ok();
}

} // namespace

zcc::DiagnosticCollector::DiagnosticCollector(MLIRContext &context)
    : context_(context), printedOp_(context.shouldPrintOpOnDiagnostic()) {
  // The note "see current operation" dumps a whole function in generic
  // form: noise in a message that already names the op and its location.
  context.printOpOnDiagnostic(false);
  handler_ = context.getDiagEngine().registerHandler([this](Diagnostic &diag) {
    appendDiagnostic(text_, diag, "");
    for (Diagnostic &note : diag.getNotes())
      appendDiagnostic(text_, note, "  ");
    return success();
  });
}

zcc::DiagnosticCollector::~DiagnosticCollector() {
  context_.getDiagEngine().eraseHandler(handler_);
  context_.printOpOnDiagnostic(printedOp_);
}

Status zcc::checkCompileOptions(const CompileOptions &options) {
  if (options.optimizer != "sgd" && options.optimizer != "adamw" &&
      options.optimizer != "none")
    return makeError(StatusCode::InvalidArgument,
                     "optimizer must be sgd, adamw or none, got '",
                     options.optimizer, "'");
  if (!(options.plannerTimeLimit > 0))
    return makeError(StatusCode::InvalidArgument,
                     "planner time limit must be a positive number of "
                     "seconds, got ",
                     options.plannerTimeLimit);
  if (options.plannerNodeLimit < 0)
    return makeError(StatusCode::InvalidArgument,
                     "planner node limit must be a node count (0: none), got ",
                     options.plannerNodeLimit);
  if (options.matmulWorkspace < runtime::kAutoMatmulWorkspace)
    return makeError(StatusCode::InvalidArgument,
                     "matmul workspace must be a byte count (0 or more)");
  if (options.precision != "f32" && options.precision != "bf16")
    return makeError(StatusCode::InvalidArgument,
                     "precision must be f32 or bf16, got '", options.precision,
                     "'");
  if (options.memoryBudget < 0)
    return makeError(StatusCode::InvalidArgument,
                     "memory budget must be a byte count (0: none), got ",
                     options.memoryBudget);
  if (!options.rematProblem.empty() && options.memoryBudget == 0)
    return makeError(StatusCode::InvalidArgument,
                     "the recompute problem (remat-problem '",
                     options.rematProblem,
                     "') needs a memory budget: without one nothing is "
                     "recomputed");
  if (options.dataParallel && options.optimizer == "none")
    return makeError(StatusCode::InvalidArgument,
                     "data parallel needs an optimizer in the plan (sgd or "
                     "adamw): the gradients are averaged over the ranks "
                     "before the update");
  if (options.clipGradNorm < 0)
    return makeError(StatusCode::InvalidArgument,
                     "clip grad norm must be >= 0 (0: no clipping), got ",
                     options.clipGradNorm);
  if (options.clipGradNorm > 0 && options.optimizer == "none")
    return makeError(StatusCode::InvalidArgument,
                     "clipping the gradients needs an optimizer in the plan "
                     "(sgd or adamw): the clipped gradients are never "
                     "materialized, the updates read them");
  ZRT_RETURN_IF_ERROR(checkSchedule(options));
  if (options.weightDecayMinRank < 0)
    return makeError(StatusCode::InvalidArgument,
                     "weight decay min rank must be >= 0, got ",
                     options.weightDecayMinRank);
  for (const std::string &name : options.noWeightDecay)
    if (name.empty())
      return makeError(StatusCode::InvalidArgument,
                       "no-weight-decay names a parameter or a pattern; got "
                       "an empty one");
  if (options.shardOptimizerState && !options.dataParallel)
    return makeError(StatusCode::InvalidArgument,
                     "sharding the optimizer state (ZeRO-1) is for "
                     "data-parallel jobs: add --data-parallel");
  if (options.shardOptimizerState && options.ranks < 1)
    return makeError(StatusCode::InvalidArgument,
                     "sharding the optimizer state needs the world size "
                     "(--world-size N): the shards are planned buffers");
  if (!options.shardOptimizerState && options.ranks != 0)
    return makeError(StatusCode::InvalidArgument,
                     "a world size is fixed at compile time only with "
                     "--shard-optimizer-state; a data-parallel plan runs on "
                     "any number of ranks");
  if (options.bucketBytes < 0)
    return makeError(StatusCode::InvalidArgument,
                     "bucket size must be at least 1 byte (or 0: sized from "
                     "the gradients), got ",
                     options.bucketBytes);
  if (options.alignment <= 0 ||
      (options.alignment & (options.alignment - 1)) != 0)
    return makeError(StatusCode::InvalidArgument,
                     "alignment must be a power of two, got ",
                     options.alignment);
  for (auto [name, value] : {std::pair<const char *, double>{"lr", options.lr},
                             {"momentum", options.momentum},
                             {"weight decay", options.weightDecay},
                             {"beta1", options.beta1},
                             {"beta2", options.beta2},
                             {"eps", options.eps},
                             {"grad scale", options.gradScale},
                             {"clip grad norm", options.clipGradNorm},
                             {"min lr", options.minLr}})
    if (!std::isfinite(value))
      return makeError(StatusCode::InvalidArgument, name,
                       " must be a finite number, got ", value);
  return Status::ok();
}

std::string zcc::producerLine(const CompileOptions &options) {
  std::ostringstream os;
  const std::string &optimizer = options.optimizer;
  os << "zcc optimizer=" << optimizer;
  if (optimizer != "none")
    os << " lr=" << options.lr;
  if (optimizer == "sgd")
    os << " momentum=" << options.momentum
       << (options.nesterov ? " nesterov" : "");
  if (optimizer == "adamw")
    os << " beta1=" << options.beta1 << " beta2=" << options.beta2
       << " eps=" << options.eps;
  if (optimizer != "none")
    os << " weight-decay=" << options.weightDecay;
  if (optimizer != "none" && options.weightDecayMinRank > 0)
    os << " weight-decay-min-rank=" << options.weightDecayMinRank;
  for (const std::string &name : options.noWeightDecay)
    os << " no-weight-decay=" << name;
  if (options.accumulate)
    os << " accumulate grad-scale=" << options.gradScale;
  if (options.clipGradNorm > 0)
    os << " clip-grad-norm=" << options.clipGradNorm;
  if (options.lrWarmupSteps > 0)
    os << " lr-warmup-steps=" << options.lrWarmupSteps;
  if (options.lrDecay != "none")
    os << " lr-decay=" << options.lrDecay
       << " lr-decay-steps=" << options.lrDecaySteps
       << " min-lr=" << options.minLr;
  if (options.matmulWorkspace >= 0)
    os << " matmul-workspace=" << options.matmulWorkspace;
  if (!options.recompute)
    os << " no-recompute";
  if (options.memoryBudget > 0)
    os << " memory-budget=" << options.memoryBudget;
  if (options.precision != "f32")
    os << " precision=" << options.precision;
  if (options.dataParallel)
    os << " data-parallel bucket-bytes="
       << (options.bucketBytes ? std::to_string(options.bucketBytes)
                               : std::string("auto"));
  if (options.shardOptimizerState)
    os << " shard-optimizer-state ranks=" << options.ranks;
  return os.str();
}

namespace zcc {
namespace {

/// One run of the pipeline (zt-remat fitting the live bytes to
/// `rematBudget`, 0: off), the export and the workspaces, into `out`.
Status compileOnce(ModuleOp module, const CompileOptions &options,
                   int64_t rematBudget, runtime::Plan &out,
                   std::string *plannedIR, std::string *warnings) {
  MLIRContext &context = *module.getContext();
  DiagnosticCollector diagnostics(context);
  auto failedWith = [&](const char *what) {
    return makeError(StatusCode::InvalidArgument, what, ":\n",
                     diagnostics.text());
  };
  if (failed(verify(module)))
    return failedWith("the program is not valid zt");

  TrainStepPipelineOptions pipeline;
  pipeline.optimizer = options.optimizer;
  pipeline.lr = options.lr;
  pipeline.momentum = options.momentum;
  pipeline.nesterov = options.nesterov;
  pipeline.weightDecay = options.weightDecay;
  pipeline.weightDecayMinRank = options.weightDecayMinRank;
  pipeline.noWeightDecay = options.noWeightDecay;
  pipeline.beta1 = options.beta1;
  pipeline.beta2 = options.beta2;
  pipeline.eps = options.eps;
  pipeline.accumulate = options.accumulate;
  pipeline.recompute = options.recompute;
  pipeline.memoryBudget = rematBudget;
  pipeline.rematProblem = options.rematProblem;
  pipeline.precision = options.precision;
  pipeline.gradScale = options.gradScale;
  pipeline.clipGradNorm = options.clipGradNorm;
  pipeline.lrWarmupSteps = options.lrWarmupSteps;
  pipeline.lrDecay = options.lrDecay;
  pipeline.lrDecaySteps = options.lrDecaySteps;
  pipeline.minLr = options.minLr;
  pipeline.dataParallel = options.dataParallel;
  pipeline.bucketBytes = options.bucketBytes;
  pipeline.shardOptimizerState = options.shardOptimizerState;
  pipeline.ranks = options.ranks;
  pipeline.alignment = options.alignment;
  pipeline.algorithm = options.algorithm;
  pipeline.plannerTimeLimit = options.plannerTimeLimit;
  pipeline.plannerNodeLimit = static_cast<uint64_t>(options.plannerNodeLimit);
  pipeline.plantInPlaceBug = options.plantInPlaceBug;
  PassManager pm(&context);
  buildTrainStepPipeline(pm, pipeline);
  if (failed(pm.run(module)))
    return failedWith("compiling the training step failed");
  // A successful run's diagnostics are warnings (and remarks).
  if (warnings)
    *warnings = diagnostics.text();
  if (plannedIR) {
    plannedIR->clear();
    llvm::raw_string_ostream os(*plannedIR);
    module.print(os);
  }

  FailureOr<runtime::Plan> plan = exportPlan(module);
  if (failed(plan))
    return failedWith("the planned module cannot be exported");
  plan->producer = producerLine(options);
  ZRT_RETURN_IF_ERROR(runtime::addWorkspaces(*plan, options.matmulWorkspace));
  Status valid = runtime::validatePlan(*plan);
  if (!valid.isOk())
    return makeError(StatusCode::InvalidPlan,
                     "the runtime would reject this plan (a compiler bug): ",
                     valid.message());
  out = std::move(*plan);
  return Status::ok();
}

} // namespace
} // namespace zcc

Status zcc::compileModule(ModuleOp module, const CompileOptions &options,
                          runtime::Plan &out, std::string *plannedIR,
                          std::string *warnings) {
  ZRT_RETURN_IF_ERROR(checkCompileOptions(options));
  const int64_t budget = options.memoryBudget;
  if (budget == 0)
    return compileOnce(module, options, 0, out, plannedIR, warnings);
  // zt-remat fits the peak of live bytes; the planned arena adds the
  // workspace (and any gap the planner leaves), so a plan above the budget
  // is compiled again with the live bytes allowed that much less. Last,
  // everything that can be recomputed is: that arena fits, or it is the
  // smallest recomputation reaches.
  auto attempt = [&](int64_t target, runtime::Plan &plan,
                     bool &exhausted) -> Status {
    OwningOpRef<ModuleOp> copy = module.clone();
    // The plan returned is the last attempt's, and so are its warnings.
    ZRT_RETURN_IF_ERROR(
        compileOnce(*copy, options, target, plan, plannedIR, warnings));
    exhausted = (*copy)->hasAttr(zt::ZTDialect::kRematExhaustedAttrName);
    if (static_cast<int64_t>(plan.arenaSize) <= budget) {
      module.getBodyRegion().takeBody(copy->getBodyRegion());
      module->setAttrs(copy.get()->getAttrDictionary());
    }
    return Status::ok();
  };
  int64_t target = budget;
  runtime::Plan plan;
  bool exhausted = false;
  for (int tries = 0; tries < 3 && target > 0 && !exhausted; ++tries) {
    ZRT_RETURN_IF_ERROR(attempt(target, plan, exhausted));
    int64_t arena = static_cast<int64_t>(plan.arenaSize);
    if (arena <= budget) {
      out = std::move(plan);
      return Status::ok();
    }
    // The live bytes the pass reached are the largest entry's lower bound
    // without its workspace: ask for them less the overshoot.
    const runtime::Entry *largest = &plan.entries.front();
    for (const runtime::Entry &e : plan.entries)
      if (e.arenaSize > largest->arenaSize)
        largest = &e;
    int64_t workspace =
        largest->workspace >= 0
            ? static_cast<int64_t>(largest->buffers[largest->workspace].size)
            : 0;
    target = std::min(target,
                      static_cast<int64_t>(largest->lowerBound) - workspace) -
             (arena - budget);
  }
  if (!exhausted)
    ZRT_RETURN_IF_ERROR(attempt(1, plan, exhausted));
  if (static_cast<int64_t>(plan.arenaSize) <= budget) {
    out = std::move(plan);
    return Status::ok();
  }
  return makeError(StatusCode::OutOfMemory, "memory budget ", budget,
                   " bytes is below the smallest arena recomputation "
                   "reaches: ",
                   plan.arenaSize,
                   " bytes (everything the backward reads that can be "
                   "computed again is; the rest is live at once)");
}

Status zcc::compileSource(std::string_view text, std::string_view bufferName,
                          const CompileOptions &options, runtime::Plan &out,
                          std::string *warnings) {
  MLIRContext context;
  loadCompilerDialects(context);
  OwningOpRef<ModuleOp> module;
  {
    DiagnosticCollector diagnostics(context);
    llvm::SourceMgr sources;
    sources.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(
            llvm::StringRef(text.data(), text.size()),
            llvm::StringRef(bufferName.data(), bufferName.size())),
        llvm::SMLoc());
    ParserConfig config(&context);
    module = parseSourceFile<ModuleOp>(sources, config);
    if (!module)
      return makeError(StatusCode::InvalidArgument, "'", bufferName,
                       "' is not a valid zt program:\n", diagnostics.text());
  }
  return compileModule(*module, options, out, nullptr, warnings);
}
