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
#include "zcc/Reports/MemoryTimeline.h"
#include "zcc/Runtime/Plan/PlanFile.h"
#include "zcc/Reports/PlanReport.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <deque>
#include <memory>

using namespace mlir;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("zcc options");
cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.mlir>"),
                               cl::Required, cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Output .zplan file"),
                                cl::value_desc("file"), cl::cat(category));
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
cl::opt<bool> fitReport(
    "fit-report",
    cl::desc("Print, for devices of 16, 24, 40, 80 and 141 GB, whether the "
             "step fits as it is, with recomputation (and its share of the "
             "step's FLOPs), or not at all (fit-reserve counted)"),
    cl::cat(category));
cl::opt<std::string> microbatchFlag(
    "microbatch",
    cl::desc("Divide the program's batch (its first input's leading size) "
             "into microbatches that accumulate: 'auto' compiles each size "
             "dividing it and keeps the largest that fits --fit as it is, "
             "else the one recomputing the fewest FLOPs, and prints the "
             "sizes tried; N takes that size. Run the plan with zrun "
             "--microbatches (the number printed)"),
    cl::value_desc("auto|n"), cl::cat(category));
cl::opt<std::string> emitIR("emit-ir",
                            cl::desc("Also write the planned zplan IR here"),
                            cl::value_desc("file"), cl::cat(category));

int fail(const std::string &message) {
  llvm::errs() << "zcc: error: " << message << "\n";
  return 1;
}

/// One flag per compile option (zcc/Compiler/OptionList.h), made before the
/// command line is parsed; each sets its option from its text.
class OptionFlags {
public:
  OptionFlags() {
    const zcc::CompileOptions defaults;
    for (const zcc::options::Info &option : zcc::options::table()) {
      std::string value = zcc::options::textOf(defaults, option);
      help_.push_back(std::string(option.help) +
                      (value.empty() ? "" : " (default " + value + ")"));
      const std::string &help = help_.back();
      if (option.kind == zcc::options::Kind::Flag)
        flags_.push_back(std::make_unique<cl::opt<bool>>(
            llvm::StringRef(option.flag), cl::desc(help), cl::cat(category)));
      else if (option.kind == zcc::options::Kind::Names)
        flags_.push_back(std::make_unique<cl::list<std::string>>(
            llvm::StringRef(option.flag), cl::desc(help), cl::CommaSeparated,
            cl::value_desc("names"), cl::cat(category)));
      else
        flags_.push_back(std::make_unique<cl::opt<std::string>>(
            llvm::StringRef(option.flag), cl::desc(help), cl::value_desc(valueName(option)),
            cl::cat(category)));
    }
  }

  /// The options the command line gave, over zcc's defaults; else the
  /// message naming the flag.
  std::string apply(zcc::CompileOptions &options) const {
    const std::vector<zcc::options::Info> &table = zcc::options::table();
    for (size_t i = 0; i < table.size(); ++i) {
      cl::Option &flag = *flags_[i];
      if (!flag.getNumOccurrences())
        continue;
      std::vector<std::string> texts;
      if (table[i].kind == zcc::options::Kind::Flag)
        texts.push_back(static_cast<cl::opt<bool> &>(flag) ? "true" : "false");
      else if (table[i].kind == zcc::options::Kind::Names)
        texts.assign(static_cast<cl::list<std::string> &>(flag).begin(),
                     static_cast<cl::list<std::string> &>(flag).end());
      else
        texts.push_back(static_cast<cl::opt<std::string> &>(flag).getValue());
      for (const std::string &text : texts)
        if (std::string bad = zcc::options::setFromText(options, table[i], text);
            !bad.empty())
          return bad;
    }
    return {};
  }

private:
  static const char *valueName(const zcc::options::Info &option) {
    switch (option.kind) {
    case zcc::options::Kind::Int:
      return "n";
    case zcc::options::Kind::Bytes:
      return "bytes";
    case zcc::options::Kind::Real:
      return "x";
    default:
      return "text";
    }
  }
  std::deque<std::string> help_; // cl::desc keeps a reference
  std::vector<std::unique_ptr<cl::Option>> flags_;
};

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  OptionFlags flags;
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "zcc: compiles a zt training step (forward + loss) into a .zplan: "
      "autodiff, optimizer, liveness, memory plan\n");
  if (outputFile.empty() && !report && !fitReport && memoryJson.empty() &&
      memoryHtml.empty() && memoryTorchSnapshot.empty())
    return fail("no output: give -o FILE.zplan (or --report or a --memory-* "
                "file alone)");
  zcc::CompileOptions options;
  if (std::string bad = flags.apply(options); !bad.empty())
    return fail(bad);
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

  if (fitReport) {
    // Each size compiled from the parsed program: as it is, or recomputing
    // under the budget the size leaves, or not at all.
    if (options.fit > 0 || options.memoryBudget > 0)
      return fail("--fit-report chooses the budgets itself: give it without "
                  "--fit or --memory-budget");
    auto flops = [](const zcc::runtime::Plan &p, double &recomputed) {
      double total = 0;
      recomputed = 0;
      for (const zcc::runtime::Entry &e : p.entries) {
        zcc::runtime::EntryFlops f = zcc::runtime::entryFlops(e);
        total += f.total;
        recomputed += f.recomputed;
      }
      return total;
    };
    zcc::runtime::Plan plain;
    {
      OwningOpRef<ModuleOp> copy = module->clone();
      if (zcc::runtime::Status s =
              zcc::compileModule(*copy, options, plain, nullptr, nullptr);
          !s.isOk())
        return fail("'" + inputFile + "': " + s.message());
    }
    double plainRecomputed = 0;
    const double plainTotal = flops(plain, plainRecomputed);
    const uint64_t fixed = zcc::fixedDeviceBytes(plain, options.fitReserve);
    char line[200];
    std::snprintf(line, sizeof line,
                  "the step: arena %.1f MiB; persistent, inputs, outputs, "
                  "constants and reserve %.1f MiB; %.4g GFLOP\n",
                  plain.arenaSize / 1048576.0, fixed / 1048576.0,
                  plainTotal / 1e9);
    llvm::outs() << line
                 << "device  fits                 arena (MiB)  extra FLOPs "
                    "recomputed\n";
    for (int gb : {16, 24, 40, 80, 141}) {
      const uint64_t bytes = uint64_t(gb) * 1000 * 1000 * 1000;
      if (fixed + plain.arenaSize <= bytes) {
        std::snprintf(line, sizeof line, "%3d GB  as it is             %11.1f  0\n",
                      gb, plain.arenaSize / 1048576.0);
        llvm::outs() << line;
        continue;
      }
      zcc::CompileOptions sized = options;
      sized.fit = static_cast<int64_t>(bytes);
      OwningOpRef<ModuleOp> copy = module->clone();
      zcc::runtime::Plan candidate;
      zcc::runtime::Status fitted =
          zcc::compileModule(*copy, sized, candidate, nullptr, nullptr);
      if (!fitted.isOk()) {
        std::snprintf(line, sizeof line, "%3d GB  no: %s\n", gb,
                      fixed >= bytes ? "the other regions alone do not fit"
                                     : "not even recomputing all it can");
        llvm::outs() << line;
        continue;
      }
      double recomputed = 0;
      flops(candidate, recomputed);
      std::snprintf(line, sizeof line,
                    "%3d GB  recomputing          %11.1f  %.1f%% of the "
                    "step's\n",
                    gb, candidate.arenaSize / 1048576.0,
                    plainTotal > 0
                        ? 100.0 * (recomputed - plainRecomputed) / plainTotal
                        : 0.0);
      llvm::outs() << line;
    }
    if (outputFile.empty() && !report && memoryJson.empty() &&
        memoryHtml.empty() && memoryTorchSnapshot.empty())
      return 0;
  }

  zcc::runtime::Plan plan;
  std::string plannedIR, warnings;
  if (microbatchFlag.getNumOccurrences()) {
    int64_t size = 0;
    if (microbatchFlag != "auto" &&
        (!llvm::to_integer(llvm::StringRef(microbatchFlag), size, 10) ||
         size < 1))
      return fail("--microbatch takes 'auto' or a size >= 1, got '" +
                  microbatchFlag + "'");
    if (!emitIR.empty() || fitReport)
      return fail("--microbatch compiles several programs: give it without "
                  "--emit-ir or --fit-report");
    zcc::FitChoice choice;
    zcc::runtime::Status fitted =
        zcc::compileFitted(*module, options, size, choice, plan, &warnings);
    if (!fitted)
      return fail("'" + inputFile + "': " + fitted.message());
    const zcc::FitRow &chosen = choice.rows[choice.chosen];
    llvm::outs() << zcc::formatFitChoice(choice) << "microbatch "
                 << chosen.microbatch << " x " << chosen.microbatches
                 << ": run the plan with zrun --microbatches "
                 << chosen.microbatches << "\n";
  } else {
    zcc::runtime::Status compiled =
        zcc::compileModule(*module, options, plan,
                           emitIR.empty() ? nullptr : &plannedIR, &warnings);
    if (!compiled)
      return fail("'" + inputFile + "': " + compiled.message());
  }
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
