//===- Fit.cpp - a program at another microbatch, and the one that fits ---===//
//
// zcc --fit --microbatch: the program's batch (its first input's leading
// size) divided into microbatches that accumulate. rebatchModule rewrites the
// program at a smaller batch; compileFitted compiles each size and keeps the
// largest that fits as it is, else the one recomputing the fewest FLOPs.
//
//===----------------------------------------------------------------------===//

#include "zcc/Compiler/Compile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Verifier.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Reports/PlanReport.h"
#include "zcc/Target/PlanExport.h"

#include "llvm/ADT/DenseSet.h"

#include <cstdio>
#include <limits>

using namespace mlir;
namespace zt = zcc::zt;
using zcc::runtime::makeError;
using zcc::runtime::Status;
using zcc::runtime::StatusCode;

namespace {

bool isBatchRole(func::FuncOp fn, unsigned i, bool inputOnly) {
  auto role =
      fn.getArgAttrOfType<zt::ArgRoleAttr>(i, zt::ZTDialect::kRoleAttrName);
  return role && (role.getValue() == zt::ArgRole::Input ||
                  (!inputOnly && role.getValue() == zt::ArgRole::Label));
}

std::string argName(func::FuncOp fn, unsigned i) {
  auto name =
      fn.getArgAttrOfType<StringAttr>(i, zt::ZTDialect::kNameAttrName);
  return name ? name.str() : "#" + std::to_string(i);
}

std::string where(Operation *op) {
  return zcc::formatLocation(op->getLoc()) + ": '" +
         op->getName().getStringRef().str() + "'";
}

/// One function at `b` rows of its batch `B`.
Status rebatchFunction(func::FuncOp fn, int64_t B, int64_t b) {
  auto leading = [&](Type t) -> int64_t {
    auto r = dyn_cast<RankedTensorType>(t);
    return r && r.getRank() >= 1 ? r.getDimSize(0) : 0;
  };
  llvm::DenseSet<Value> batched;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    if (!isBatchRole(fn, i, false))
      continue;
    int64_t n = leading(fn.getArgument(i).getType());
    if (n <= 0 || n % B)
      return makeError(StatusCode::InvalidArgument, "input '", argName(fn, i),
                       "': its leading size is not a multiple of the batch ",
                       B, " (the first input's)");
    batched.insert(fn.getArgument(i));
  }
  // Forward: what the batch flows into, batch-major (leading size a
  // multiple of it); what moves or splits the batch is refused.
  Status status;
  fn.walk([&](Operation *op) {
    if (!status.isOk() ||
        llvm::none_of(op->getOperands(),
                      [&](Value v) { return batched.contains(v); }))
      return;
    int64_t from = 0; // the batched operands' leading size
    for (Value v : op->getOperands())
      if (batched.contains(v))
        from = std::max(from, leading(v.getType()));
    auto refuse = [&](const char *why) {
      status = makeError(StatusCode::InvalidArgument, where(op), " ", why);
    };
    if (auto t = dyn_cast<zt::TransposeOp>(op)) {
      if (t.getPermutation()[0] != 0)
        return refuse("moves the batch dimension");
    } else if (auto s = dyn_cast<zt::SliceOp>(op)) {
      if (s.getStartIndices()[0] != 0 || s.getLimitIndices()[0] != from ||
          s.getStrides()[0] != 1)
        return refuse("takes part of the batch");
    } else if (auto c = dyn_cast<zt::ConcatOp>(op)) {
      if (c.getDimension() == 0)
        return refuse("joins along the batch dimension");
    }
    ArrayRef<int64_t> reduced;
    if (auto r = dyn_cast<zt::SumOp>(op))
      reduced = r.getDims();
    else if (auto r = dyn_cast<zt::MeanOp>(op))
      reduced = r.getDims();
    else if (auto r = dyn_cast<zt::MaxOp>(op))
      reduced = r.getDims();
    if (llvm::is_contained(reduced, 0))
      return; // the batch summed away
    bool reshape = isa<zt::ReshapeOp>(op);
    for (Value r : op->getResults()) {
      int64_t n = leading(r.getType());
      // A reshape keeps the batch major when its leading size is a
      // multiple of it; other ops keep the leading size they read.
      if (n > 0 && n % B == 0 && (reshape || n == from))
        batched.insert(r);
    }
  });
  if (!status.isOk())
    return status;
  // Back: a broadcast of something else to the batch's size (a position
  // table over the rows) or a splat constant, beside the batch, follows it.
  for (bool changed = true; changed;) {
    changed = false;
    fn.walk([&](Operation *op) {
      SmallVector<Type> shapes;
      for (Value v : op->getOperands())
        if (batched.contains(v))
          shapes.push_back(v.getType());
      for (Value v : op->getResults())
        if (batched.contains(v))
          shapes.push_back(v.getType());
      if (shapes.empty())
        return;
      for (Value v : op->getOperands()) {
        if (batched.contains(v) || !llvm::is_contained(shapes, v.getType()))
          continue;
        Operation *def = v.getDefiningOp();
        bool follows = false;
        if (auto bc = dyn_cast_or_null<zt::BroadcastInDimOp>(def))
          follows = !llvm::is_contained(bc.getBroadcastDimensions(), 0);
        else if (auto k = dyn_cast_or_null<zt::ConstantOp>(def))
          follows = isa<SplatElementsAttr>(k.getValue());
        if (follows) {
          batched.insert(v);
          changed = true;
        }
      }
    });
  }
  auto scaled = [&](Type t) {
    auto r = cast<RankedTensorType>(t);
    SmallVector<int64_t> shape(r.getShape());
    shape[0] = shape[0] / B * b;
    return RankedTensorType::get(shape, r.getElementType(), r.getEncoding());
  };
  for (BlockArgument a : fn.getArguments())
    if (batched.contains(a))
      a.setType(scaled(a.getType()));
  fn.walk([&](Operation *op) {
    if (auto s = dyn_cast<zt::SliceOp>(op);
        s && batched.contains(s.getOperand())) {
      SmallVector<int64_t> limits(s.getLimitIndices());
      limits[0] = limits[0] / B * b;
      s.setLimitIndices(limits);
    }
    for (Value r : op->getResults()) {
      if (!batched.contains(r))
        continue;
      Type to = scaled(r.getType());
      if (auto k = dyn_cast<zt::ConstantOp>(op))
        k.setValueAttr(cast<ElementsAttr>(
            cast<SplatElementsAttr>(k.getValue())
                .resizeSplat(cast<ShapedType>(to))));
      r.setType(to);
    }
  });
  SmallVector<Type> results;
  fn.walk([&](func::ReturnOp ret) {
    results.assign(ret.getOperandTypes().begin(), ret.getOperandTypes().end());
  });
  fn.setFunctionType(FunctionType::get(
      fn.getContext(), fn.getBody().getArgumentTypes(), results));
  return Status::ok();
}

} // namespace

Status zcc::programBatch(ModuleOp module, int64_t &batch) {
  for (auto fn : module.getOps<func::FuncOp>())
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      if (!isBatchRole(fn, i, true))
        continue;
      auto type = dyn_cast<RankedTensorType>(fn.getArgument(i).getType());
      if (!type || type.getRank() == 0 || type.getDimSize(0) < 1)
        return makeError(StatusCode::InvalidArgument, "input '",
                         argName(fn, i),
                         "' has no batch dimension to divide");
      batch = type.getDimSize(0);
      return Status::ok();
    }
  return makeError(StatusCode::InvalidArgument,
                   "the program has no input: no batch to divide");
}

Status zcc::rebatchModule(ModuleOp module, int64_t microbatch) {
  int64_t batch = 0;
  ZRT_RETURN_IF_ERROR(programBatch(module, batch));
  if (microbatch < 1 || batch % microbatch)
    return makeError(StatusCode::InvalidArgument, "microbatch ", microbatch,
                     " does not divide the program's batch ", batch);
  if (microbatch == batch)
    return Status::ok();
  for (auto fn : module.getOps<func::FuncOp>())
    if (Status s = rebatchFunction(fn, batch, microbatch); !s.isOk())
      return makeError(s.code(), "the program at microbatch ", microbatch,
                       ": ", s.message());
  DiagnosticCollector diagnostics(*module.getContext());
  if (failed(verify(module)))
    return makeError(StatusCode::InvalidArgument, "the program at microbatch ",
                     microbatch, " is not valid (an op mixes the batch with "
                     "something else):\n",
                     diagnostics.text());
  return Status::ok();
}

Status zcc::compileFitted(ModuleOp module, const CompileOptions &options,
                          int64_t microbatch, FitChoice &choice,
                          runtime::Plan &out, std::string *warnings) {
  ZRT_RETURN_IF_ERROR(checkCompileOptions(options));
  choice = FitChoice();
  choice.fit = options.fit;
  choice.reserve = options.fitReserve;
  ZRT_RETURN_IF_ERROR(programBatch(module, choice.batch));
  const int64_t batch = choice.batch;
  std::vector<int64_t> sizes;
  if (microbatch > 0) {
    if (batch % microbatch)
      return makeError(StatusCode::InvalidArgument, "microbatch ", microbatch,
                       " does not divide the program's batch ", batch);
    sizes.push_back(microbatch);
  } else {
    for (int64_t b = batch; b >= 1; --b)
      if (batch % b == 0)
        sizes.push_back(b);
  }
  std::vector<runtime::Plan> plans; // per row: the plan it would keep
  for (int64_t b : sizes) {
    FitRow row;
    row.microbatch = b;
    row.microbatches = batch / b;
    OwningOpRef<ModuleOp> program = module.clone();
    ZRT_RETURN_IF_ERROR(rebatchModule(*program, b));
    plans.emplace_back();
    ZRT_RETURN_IF_ERROR(fitCandidate(*program, options, row.microbatches, row,
                                     plans.back(), warnings));
    choice.rows.push_back(row);
    if (row.result == FitRow::AsIs)
      break; // nothing smaller is chosen over it
  }
  choice.chosen = pickFitRow(choice.rows);
  if (choice.chosen < 0)
    return makeError(StatusCode::OutOfMemory, "no microbatch size fits:\n",
                     formatFitChoice(choice));
  out = std::move(plans[choice.chosen]);
  return Status::ok();
}

Status zcc::fitCandidate(ModuleOp program, const CompileOptions &options,
                         int64_t microbatches, FitRow &row, runtime::Plan &out,
                         std::string *warnings) {
  const uint64_t limit = options.fit > 0
                             ? static_cast<uint64_t>(options.fit)
                             : std::numeric_limits<uint64_t>::max();
  CompileOptions sized = options;
  sized.fit = 0;
  sized.memoryBudget = 0;
  if (microbatches > 1) {
    // The mean of the microbatches' gradients: the whole batch's, for a
    // loss that is a mean.
    sized.accumulate = true;
    sized.gradScale = options.gradScale / static_cast<double>(microbatches);
  }
  row.result = FitRow::No;
  runtime::Plan plain;
  {
    OwningOpRef<ModuleOp> copy = program.clone();
    ZRT_RETURN_IF_ERROR(compileModule(*copy, sized, plain, nullptr, warnings));
  }
  row.other = fixedDeviceBytes(plain, options.fitReserve);
  row.arena = plain.arenaSize;
  if (row.other + row.arena <= limit) {
    row.result = FitRow::AsIs;
    out = std::move(plain);
    return Status::ok();
  }
  if (row.other >= limit) {
    row.why = "the other regions alone do not fit";
    return Status::ok();
  }
  CompileOptions budgeted = sized;
  budgeted.memoryBudget = static_cast<int64_t>(limit - row.other);
  runtime::Plan recomputing;
  OwningOpRef<ModuleOp> copy = program.clone();
  Status s = compileModule(*copy, budgeted, recomputing, nullptr, warnings);
  if (s.code() == StatusCode::OutOfMemory) {
    row.why = "not even recomputing all it can";
    return Status::ok();
  }
  ZRT_RETURN_IF_ERROR(s);
  auto [all, recomputed] = stepFlops(recomputing, microbatches);
  row.result = FitRow::Recomputing;
  row.arena = recomputing.arenaSize;
  row.extraFlops = recomputed - stepFlops(plain, microbatches).second;
  row.extraShare = all > 0 ? row.extraFlops / all : 0.0;
  out = std::move(recomputing);
  return Status::ok();
}

std::pair<double, double> zcc::stepFlops(const runtime::Plan &plan,
                                         int64_t microbatches) {
  double all = 0, recomputed = 0;
  for (const zcc::runtime::Entry &e : plan.entries) {
    double weight = e.kind == zcc::runtime::EntryKind::Microbatch
                        ? static_cast<double>(microbatches)
                    : e.kind == zcc::runtime::EntryKind::TrainStep ||
                            e.kind == zcc::runtime::EntryKind::Apply
                        ? 1.0
                        : 0.0;
    zcc::runtime::EntryFlops f = zcc::runtime::entryFlops(e);
    all += weight * f.total;
    recomputed += weight * f.recomputed;
  }
  return {all, recomputed};
}

int zcc::pickFitRow(const std::vector<FitRow> &rows) {
  int chosen = -1;
  for (size_t i = 0; i < rows.size(); ++i) {
    const FitRow &r = rows[i];
    if (r.result == FitRow::AsIs)
      return static_cast<int>(i); // the largest that recomputes nothing
    // Rows come largest first: a tie keeps the larger microbatch.
    if (r.result == FitRow::Recomputing &&
        (chosen < 0 || r.extraFlops < rows[chosen].extraFlops))
      chosen = static_cast<int>(i);
  }
  return chosen;
}

std::string zcc::formatFitChoice(const FitChoice &choice) {
  const double mib = 1024.0 * 1024.0;
  char line[256];
  std::string text;
  if (choice.fit > 0)
    std::snprintf(line, sizeof line,
                  "fit %lld bytes (%.1f MiB, reserve %.1f MiB), global batch "
                  "%lld\n",
                  static_cast<long long>(choice.fit), choice.fit / mib,
                  choice.reserve / mib, static_cast<long long>(choice.batch));
  else
    std::snprintf(line, sizeof line, "no device limit, global batch %lld\n",
                  static_cast<long long>(choice.batch));
  text += line;
  text += "  microbatch  x  result       arena MiB  other MiB  extra FLOPs\n";
  for (size_t i = 0; i < choice.rows.size(); ++i) {
    const FitRow &r = choice.rows[i];
    const char *result = r.result == FitRow::AsIs          ? "as is"
                         : r.result == FitRow::Recomputing ? "recomputing"
                                                           : "no";
    std::string extra;
    if (r.result == FitRow::Recomputing) {
      std::snprintf(line, sizeof line, "%.2f%% of the step",
                    r.extraShare * 100.0);
      extra = line;
    } else {
      extra = r.result == FitRow::AsIs ? "0" : r.why;
    }
    std::snprintf(line, sizeof line, "%c %9lld  %-2lld %-11s  %9.1f  %9.1f  %s\n",
                  static_cast<int>(i) == choice.chosen ? '*' : ' ',
                  static_cast<long long>(r.microbatch),
                  static_cast<long long>(r.microbatches), result,
                  r.arena / mib, r.other / mib, extra.c_str());
    text += line;
  }
  return text;
}
