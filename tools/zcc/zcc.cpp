//===- zcc.cpp - the ahead-of-time compiler: .mlir in, .zplan out ---------===//
//
//   zcc MODEL.mlir -o MODEL.zplan [--optimizer sgd|adamw|none ...] [--report]
//
// Runs the zcc-train-step pipeline, exports the plan, checks it with the
// runtime's own loader checks (a plan the runtime would reject is never
// written), and writes it atomically.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "zcc/Compiler/Compile.h"
#include "zcc/Runtime/Plan/MemoryTimeline.h"
#include "zcc/Runtime/Plan/PlanFile.h"
#include "zcc/Runtime/Plan/PlanReport.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("zcc options");
cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.mlir>"),
                               cl::Required, cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Output .zplan file"),
                                cl::value_desc("file"), cl::cat(category));
cl::opt<std::string> optimizer("optimizer",
                               cl::desc("sgd, adamw, or none (gradients "
                                        "become step outputs)"),
                               cl::init("sgd"), cl::cat(category));
cl::opt<double> lr("lr", cl::desc("Learning rate"), cl::init(0.01),
                   cl::cat(category));
cl::opt<double> momentum("momentum", cl::desc("SGD momentum"), cl::init(0.0),
                         cl::cat(category));
cl::opt<bool> nesterov("nesterov", cl::desc("SGD Nesterov momentum"),
                       cl::cat(category));
cl::opt<double> weightDecay("weight-decay", cl::desc("Weight decay"),
                            cl::init(0.0), cl::cat(category));
cl::opt<int64_t> weightDecayMinRank(
    "weight-decay-min-rank",
    cl::desc("Parameters of fewer dimensions take no weight decay (2: "
             "nanoGPT's groups, no decay on biases and normalization "
             "scales)"),
    cl::init(0), cl::cat(category));
cl::list<std::string> noWeightDecay(
    "no-weight-decay",
    cl::desc("Parameters that take no weight decay, by name or pattern with "
             "* and ? (comma-separated or repeated; each must match one)"),
    cl::CommaSeparated, cl::value_desc("names"), cl::cat(category));
cl::opt<double> beta1("beta1", cl::desc("AdamW beta1"), cl::init(0.9),
                      cl::cat(category));
cl::opt<double> beta2("beta2", cl::desc("AdamW beta2"), cl::init(0.999),
                      cl::cat(category));
cl::opt<double> eps("eps", cl::desc("AdamW epsilon"), cl::init(1e-8),
                    cl::cat(category));
cl::opt<bool> accumulate("accumulate",
                         cl::desc("Accumulate gradients over microbatches "
                                  "(microbatch and apply entries)"),
                         cl::cat(category));
cl::opt<bool> recompute("recompute",
                        cl::desc("Compute cheap forward values (elementwise, "
                                 "views, normalizations) again in the "
                                 "backward instead of keeping them (default "
                                 "on; --recompute=false keeps them)"),
                        cl::init(true), cl::cat(category));
cl::opt<std::string> precision(
    "precision",
    cl::desc("f32 (default), or bf16: matrix products on bf16 operands "
             "summed in f32, their saved operands stored in bf16, f32 "
             "parameters, optimizer, loss and normalizations"),
    cl::init("f32"), cl::cat(category));
cl::opt<int64_t> memoryBudget(
    "memory-budget",
    cl::desc("Largest arena in bytes (workspace included): forward values "
             "are recomputed in the backward until the plan fits; an error "
             "names the smallest arena reachable when it cannot (0: none)"),
    cl::init(0), cl::cat(category));
cl::opt<std::string> rematProblem(
    "remat-problem",
    cl::desc("With --memory-budget: also write the recompute problem and "
             "the choice made here (JSON, zcc.remat-problem/v1; "
             "bench/memory/remat_bound.py solves it for a lower bound)"),
    cl::value_desc("file"), cl::init(""), cl::cat(category));
cl::opt<double> gradScale("grad-scale",
                          cl::desc("Scale of the accumulated gradient in "
                                   "the apply entry"),
                          cl::init(1.0), cl::cat(category));
cl::opt<double> clipGradNorm(
    "clip-grad-norm",
    cl::desc("Clip the gradients by their global norm to at most this "
             "before the updates, as torch.nn.utils.clip_grad_norm_ (with "
             "--data-parallel: of the averaged gradients; 0: no clipping)"),
    cl::init(0.0), cl::cat(category));
cl::opt<int64_t> lrWarmupSteps(
    "lr-warmup-steps",
    cl::desc("Learning-rate schedule: raise lr linearly over this many "
             "optimizer steps ((k+1)/(N+1) of lr at step k, counted from 0)"),
    cl::init(0), cl::cat(category));
cl::opt<std::string> lrDecay(
    "lr-decay",
    cl::desc("After the warmup: none (constant lr, the default), cosine or "
             "linear, to --min-lr at step --lr-decay-steps (nanoGPT's "
             "schedule; the learning rate of each step is the output 'lr')"),
    cl::init("none"), cl::cat(category));
cl::opt<int64_t> lrDecaySteps(
    "lr-decay-steps",
    cl::desc("With --lr-decay: the optimizer step (counted from 0, warmup "
             "included) where lr reaches --min-lr"),
    cl::init(0), cl::cat(category));
cl::opt<double> minLr("min-lr",
                      cl::desc("With --lr-decay: the learning rate the decay "
                               "ends at (default 0)"),
                      cl::init(0.0), cl::cat(category));
cl::opt<bool> dataParallel(
    "data-parallel",
    cl::desc("Average the gradients over the ranks of a data-parallel job "
             "(mpirun -np N zrun ...; the world size is chosen at run time) "
             "before the updates, in buckets"),
    cl::cat(category));
cl::opt<double> bucketMb(
    "bucket-mb",
    cl::desc("With --data-parallel: MiB of gradients per bucket (default: a "
             "sixteenth of the gradients, from 1 to 25 MiB)"),
    cl::cat(category));
cl::opt<bool> shardOptimizerState(
    "shard-optimizer-state",
    cl::desc("With --data-parallel: ZeRO-1, each rank holds and updates one "
             "shard of the optimizer state (needs --world-size)"),
    cl::cat(category));
cl::opt<int64_t> worldSize("world-size",
                           cl::desc("With --shard-optimizer-state: the ranks "
                                    "the plan runs on"),
                           cl::init(0), cl::cat(category));
cl::opt<int64_t> alignment("alignment", cl::desc("Slot alignment in bytes"),
                           cl::init(256), cl::cat(category));
cl::opt<std::string> algorithm("algorithm", cl::desc("Planner algorithm"),
                               cl::init("auto"), cl::cat(category));
cl::opt<double> plannerTimeLimit(
    "planner-time-limit",
    cl::desc("Seconds the planner may search per entry (default 60): a "
             "guard; a warning says when it ends a search before the node "
             "limit, as the plan may then differ between machines"),
    cl::init(zcc::CompileOptions().plannerTimeLimit), cl::cat(category));
cl::opt<int64_t> plannerNodeLimit(
    "planner-node-limit",
    cl::desc("Search nodes the planner may expand per entry (default "
             "2000000; 0: none): the same plan on every machine"),
    cl::init(zcc::CompileOptions().plannerNodeLimit), cl::cat(category));
cl::opt<int64_t> matmulWorkspace(
    "matmul-workspace",
    cl::desc("Bytes of each entry's workspace given to cuBLAS (default: "
             "twice the largest matmul output, at most 32 MiB)"),
    cl::init(zcc::runtime::kAutoMatmulWorkspace), cl::cat(category));
cl::opt<bool> report("report",
                     cl::desc("Print the arena size, lower bound, ratio and "
                              "the largest buffers"),
                     cl::cat(category));
cl::opt<std::string> memoryJson(
    "memory-json",
    cl::desc("Write the plan's memory timeline here (JSON, zcc.memory/v1: "
             "docs/memory.md)"),
    cl::value_desc("file"), cl::cat(category));
cl::opt<std::string> memoryHtml(
    "memory-html",
    cl::desc("Write the memory timeline drawn as one self-contained HTML "
             "page here"),
    cl::value_desc("file"), cl::cat(category));
cl::opt<std::string> memoryTorchSnapshot(
    "memory-torch-snapshot",
    cl::desc("Write the plan as PyTorch's memory snapshot (a pickle for "
             "pytorch.org/memory_viz and torch.cuda._memory_viz) here"),
    cl::value_desc("file"), cl::cat(category));
cl::opt<std::string> emitIR("emit-ir",
                            cl::desc("Also write the planned zplan IR here"),
                            cl::value_desc("file"), cl::cat(category));

int fail(const std::string &message) {
  llvm::errs() << "zcc: error: " << message << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "zcc: compiles a zt training step (forward + loss) into a .zplan: "
      "autodiff, optimizer, liveness, memory plan\n");
  if (outputFile.empty() && !report && memoryJson.empty() &&
      memoryHtml.empty() && memoryTorchSnapshot.empty())
    return fail("no output: give -o FILE.zplan (or --report or a --memory-* "
                "file alone)");
  if (matmulWorkspace < zcc::runtime::kAutoMatmulWorkspace)
    return fail("--matmul-workspace must be a byte count (0 or more)");
  if (optimizer != "sgd" && optimizer != "adamw" && optimizer != "none")
    return fail("--optimizer must be sgd, adamw or none, got '" + optimizer +
                "'");
  zcc::CompileOptions options;
  options.optimizer = optimizer.getValue();
  options.lr = lr.getValue();
  options.momentum = momentum.getValue();
  options.nesterov = nesterov.getValue();
  options.weightDecay = weightDecay.getValue();
  options.weightDecayMinRank = weightDecayMinRank.getValue();
  options.noWeightDecay.assign(noWeightDecay.begin(), noWeightDecay.end());
  options.beta1 = beta1.getValue();
  options.beta2 = beta2.getValue();
  options.eps = eps.getValue();
  options.accumulate = accumulate.getValue();
  options.recompute = recompute.getValue();
  options.memoryBudget = memoryBudget.getValue();
  options.rematProblem = rematProblem.getValue();
  options.precision = precision.getValue();
  options.gradScale = gradScale.getValue();
  options.clipGradNorm = clipGradNorm.getValue();
  options.lrWarmupSteps = lrWarmupSteps.getValue();
  options.lrDecay = lrDecay.getValue();
  options.lrDecaySteps = lrDecaySteps.getValue();
  options.minLr = minLr.getValue();
  options.dataParallel = dataParallel.getValue();
  options.shardOptimizerState = shardOptimizerState.getValue();
  options.ranks = worldSize.getValue();
  if (bucketMb.getNumOccurrences()) {
    if (!(bucketMb > 0 && bucketMb <= 1 << 20))
      return fail("--bucket-mb must be a positive number of MiB, got " +
                  std::to_string(bucketMb.getValue()));
    options.bucketBytes =
        std::max<int64_t>(1, static_cast<int64_t>(bucketMb * (1 << 20)));
  }
  options.alignment = alignment.getValue();
  options.algorithm = algorithm.getValue();
  options.plannerTimeLimit = plannerTimeLimit.getValue();
  options.plannerNodeLimit = plannerNodeLimit.getValue();
  options.matmulWorkspace = matmulWorkspace.getValue();
  if (zcc::runtime::Status bad = zcc::checkCompileOptions(options); !bad)
    return fail(bad.message());

  DialectRegistry registry;
  MLIRContext context(registry);
  zcc::loadCompilerDialects(context);

  std::string error;
  auto file = openInputFile(inputFile, &error);
  if (!file)
    return fail(error);
  llvm::SourceMgr sources;
  sources.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  OwningOpRef<ModuleOp> module;
  {
    // Parse errors with the source line and a caret; the pipeline's own
    // diagnostics come back in the compile status.
    SourceMgrDiagnosticHandler diagnostics(sources, &context);
    module = parseSourceFile<ModuleOp>(sources, &context);
  }
  if (!module)
    return fail("'" + inputFile + "' is not a valid zt program (see above)");

  zcc::runtime::Plan plan;
  std::string plannedIR, warnings;
  zcc::runtime::Status compiled = zcc::compileModule(
      *module, options, plan, emitIR.empty() ? nullptr : &plannedIR, &warnings);
  if (!compiled)
    return fail("'" + inputFile + "': " + compiled.message());
  llvm::errs() << warnings;
  if (!emitIR.empty()) {
    auto out = openOutputFile(emitIR, &error);
    if (!out)
      return fail(error);
    out->os() << plannedIR;
    out->keep();
  }
  if (report)
    llvm::outs() << zcc::runtime::formatPlanReport(plan);
  using Writer = std::string (*)(const zcc::runtime::Plan &);
  for (auto [path, write] :
       {std::pair<std::string, Writer>{memoryJson,
                                       zcc::runtime::memoryTimelineJson},
        {memoryHtml, zcc::runtime::memoryTimelineHtml},
        {memoryTorchSnapshot, zcc::runtime::memoryTorchSnapshot}}) {
    if (path.empty())
      continue;
    auto out = openOutputFile(path, &error);
    if (!out)
      return fail(error);
    out->os() << write(plan);
    out->keep();
  }
  if (!outputFile.empty()) {
    zcc::runtime::Status saved = zcc::runtime::savePlanFile(outputFile, plan);
    if (!saved.isOk())
      return fail(saved.toString());
  }
  return 0;
}
