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
  std::string broken = options::check(options);
  if (!broken.empty())
    return makeError(StatusCode::InvalidArgument, broken);
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
    os << " shard-optimizer-state ranks=" << options.worldSize;
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

  CompileOptions pipeline = options;
  pipeline.memoryBudget = rematBudget;
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

uint64_t zcc::fixedDeviceBytes(const runtime::Plan &plan, int64_t reserve) {
  uint64_t io = 0;
  for (const runtime::Entry &e : plan.entries)
    io = std::max<uint64_t>(io, e.inputSize + e.outputSize);
  return plan.persistentSize + plan.constantSize + io +
         static_cast<uint64_t>(reserve);
}

Status zcc::compileModule(ModuleOp module, const CompileOptions &options,
                          runtime::Plan &out, std::string *plannedIR,
                          std::string *warnings) {
  ZRT_RETURN_IF_ERROR(checkCompileOptions(options));
  if (options.fit > 0) {
    // The plan as it is, first: when it fits nothing is recomputed; else
    // the arena's budget is what the other regions and the reserve leave.
    CompileOptions plain = options;
    plain.fit = 0;
    OwningOpRef<ModuleOp> copy = module.clone();
    runtime::Plan plan;
    ZRT_RETURN_IF_ERROR(
        compileOnce(*copy, plain, 0, plan, plannedIR, warnings));
    const uint64_t fixed = fixedDeviceBytes(plan, options.fitReserve);
    const uint64_t fit = static_cast<uint64_t>(options.fit);
    if (fixed + plan.arenaSize <= fit) {
      module.getBodyRegion().takeBody(copy->getBodyRegion());
      module->setAttrs(copy.get()->getAttrDictionary());
      out = std::move(plan);
      return Status::ok();
    }
    if (fixed >= fit)
      return makeError(StatusCode::OutOfMemory, "fit ", fit,
                       " bytes: the parameters, optimizer state and other "
                       "persistent tensors, the inputs, outputs and "
                       "constants take ",
                       fixed - options.fitReserve, " bytes and fit-reserve ",
                       options.fitReserve, ": no arena fits beside them");
    plain.memoryBudget = static_cast<int64_t>(fit - fixed);
    Status fitted = compileModule(module, plain, out, plannedIR, warnings);
    if (!fitted.isOk())
      return makeError(fitted.code(), "fit ", fit, " bytes (an arena of at most ",
                       fit - fixed, " beside ", fixed,
                       " bytes of other regions and reserve): ",
                       fitted.message());
    return Status::ok();
  }
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
