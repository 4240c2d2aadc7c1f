//===- zcc.cpp - the ahead-of-time compiler: .mlir in, .zplan out ---------===//
//
//   zcc MODEL.mlir -o MODEL.zplan [--optimizer sgd|adamw|none ...] [--report]
//
// Runs the zcc-train-step pipeline, exports the plan, checks it with the
// runtime's own loader checks (a plan the runtime would reject is never
// written), and writes it atomically.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "zcc/Dialect/ZPlan/ZPlanOps.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Runtime/Kernels/Kernels.h"
#include "zcc/Runtime/Plan/PlanFile.h"
#include "zcc/Runtime/Plan/PlanReport.h"
#include "zcc/Target/PlanExport.h"
#include "zcc/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <sstream>

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
cl::opt<double> gradScale("grad-scale",
                          cl::desc("Scale of the accumulated gradient in "
                                   "the apply entry"),
                          cl::init(1.0), cl::cat(category));
cl::opt<int64_t> alignment("alignment", cl::desc("Slot alignment in bytes"),
                           cl::init(256), cl::cat(category));
cl::opt<std::string> algorithm("algorithm", cl::desc("Planner algorithm"),
                               cl::init("auto"), cl::cat(category));
cl::opt<int64_t> matmulWorkspace(
    "matmul-workspace",
    cl::desc("Bytes of each entry's workspace given to cuBLAS (default: "
             "twice the largest matmul output, at most 32 MiB)"),
    cl::init(zcc::runtime::kAutoMatmulWorkspace), cl::cat(category));
cl::opt<bool> report("report",
                     cl::desc("Print the arena size, lower bound, ratio and "
                              "the largest buffers"),
                     cl::cat(category));
cl::opt<std::string> emitIR("emit-ir",
                            cl::desc("Also write the planned zplan IR here"),
                            cl::value_desc("file"), cl::cat(category));

std::string producerLine() {
  std::ostringstream os;
  os << "zcc optimizer=" << optimizer;
  if (optimizer != "none")
    os << " lr=" << lr;
  if (optimizer == "sgd")
    os << " momentum=" << momentum << (nesterov ? " nesterov" : "");
  if (optimizer == "adamw")
    os << " beta1=" << beta1 << " beta2=" << beta2 << " eps=" << eps;
  if (optimizer != "none")
    os << " weight-decay=" << weightDecay;
  if (accumulate)
    os << " accumulate grad-scale=" << gradScale;
  if (matmulWorkspace >= 0)
    os << " matmul-workspace=" << matmulWorkspace;
  return os.str();
}

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
  if (outputFile.empty() && !report)
    return fail("no output: give -o FILE.zplan (or --report alone)");
  if (matmulWorkspace < zcc::runtime::kAutoMatmulWorkspace)
    return fail("--matmul-workspace must be a byte count (0 or more)");
  if (optimizer != "sgd" && optimizer != "adamw" && optimizer != "none")
    return fail("--optimizer must be sgd, adamw or none, got '" + optimizer +
                "'");

  DialectRegistry registry;
  registry.insert<zcc::zt::ZTDialect, zcc::zplan::ZPlanDialect,
                  func::FuncDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::string error;
  auto file = openInputFile(inputFile, &error);
  if (!file)
    return fail(error);
  llvm::SourceMgr sources;
  sources.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sources, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sources, &context);
  if (!module)
    return fail("'" + inputFile + "' is not a valid zt program (see above)");

  zcc::TrainStepPipelineOptions options;
  options.optimizer = optimizer.getValue();
  options.lr = lr.getValue();
  options.momentum = momentum.getValue();
  options.nesterov = nesterov.getValue();
  options.weightDecay = weightDecay.getValue();
  options.beta1 = beta1.getValue();
  options.beta2 = beta2.getValue();
  options.eps = eps.getValue();
  options.accumulate = accumulate.getValue();
  options.gradScale = gradScale.getValue();
  options.alignment = alignment.getValue();
  options.algorithm = algorithm.getValue();
  PassManager pm(&context);
  zcc::buildTrainStepPipeline(pm, options);
  if (failed(pm.run(*module)))
    return fail("compiling '" + inputFile + "' failed (see above)");

  if (!emitIR.empty()) {
    auto out = openOutputFile(emitIR, &error);
    if (!out)
      return fail(error);
    module->print(out->os());
    out->keep();
  }

  FailureOr<zcc::runtime::Plan> plan = zcc::exportPlan(*module);
  if (failed(plan))
    return fail("the planned module cannot be exported (see above)");
  plan->producer = producerLine();
  zcc::runtime::Status workspaces =
      zcc::runtime::addWorkspaces(*plan, matmulWorkspace);
  if (!workspaces.isOk())
    return fail(workspaces.toString());
  zcc::runtime::Status valid = zcc::runtime::validatePlan(*plan);
  if (!valid.isOk())
    return fail("the runtime would reject this plan (a compiler bug; "
                "nothing was written): " +
                valid.toString());
  if (report)
    llvm::outs() << zcc::runtime::formatPlanReport(*plan);
  if (!outputFile.empty()) {
    zcc::runtime::Status saved = zcc::runtime::savePlanFile(outputFile, *plan);
    if (!saved.isOk())
      return fail(saved.toString());
  }
  return 0;
}
