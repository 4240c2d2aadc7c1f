//===- Optimizer.cpp - append SGD / AdamW updates to a training step ------===//
//
// Replaces the gradients a training step returns with parameter updates whose
// results are tied to the persistent slots they overwrite, adding the
// optimizer state as persistent arguments. For a microbatch entry it builds
// the separate apply entry that consumes the accumulators. The updates and
// the buckets are its parts (Optimizer.h).
//
//===----------------------------------------------------------------------===//

#include "EntryPoints.h"
#include "Optimizer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Transforms/BufferLiveness.h"
#include "zcc/Transforms/Passes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/GlobPattern.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace zcc {
#define GEN_PASS_DEF_ZTOPTIMIZER
#include "zcc/Transforms/Passes.h.inc"
} // namespace zcc

using namespace mlir;
using namespace zcc::zt;
using namespace zcc::optimizer;

int64_t zcc::autoBucketBytes(int64_t gradientBytes) {
  constexpr int64_t kBuckets = 16;
  constexpr int64_t kFloor = int64_t{1} << 20, kCap = int64_t{25} << 20;
  return std::clamp(gradientBytes / kBuckets, kFloor, kCap);
}

namespace {

NamedAttrList attrList(DictionaryAttr dict) {
  return dict ? NamedAttrList(dict) : NamedAttrList();
}

struct ZTOptimizerPass : public zcc::impl::ZTOptimizerBase<ZTOptimizerPass> {
  using ZTOptimizerBase::ZTOptimizerBase;

  void runOnOperation() override {
    if (failed(checkOptions()))
      return signalPassFailure();
    SmallVector<func::FuncOp> steps, microbatches;
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      StringRef kind = entryKind(fn);
      if (kind == "train_step")
        steps.push_back(fn);
      else if (kind == "microbatch")
        microbatches.push_back(fn);
    }
    if (steps.empty() && microbatches.empty()) {
      getOperation().emitError()
          << "zt-optimizer found no training step: run zt-autodiff first";
      return signalPassFailure();
    }
    for (func::FuncOp fn : steps)
      if (failed(updateTrainStep(fn)))
        return signalPassFailure();
    for (func::FuncOp fn : microbatches)
      if (failed(buildApply(fn)))
        return signalPassFailure();
    if (failed(updates->checkPatternsUsed(getOperation())))
      return signalPassFailure();
    readBf16Gradients();
    if (!shardedStates.empty())
      getOperation()->setAttr(ZTDialect::kShardedStatesAttrName,
                              ArrayAttr::get(&getContext(), shardedStates));
  }

  /// The options' rules (zcc::options::check, the compile driver's), and
  /// the patterns of no-weight-decay.
  LogicalResult checkOptions() {
    if (optimizer == "none")
      return getOperation().emitError()
             << "zt-optimizer option 'optimizer' must be 'sgd' or 'adamw', "
                "got 'none' (none: leave zt-optimizer out)";
    zcc::CompileOptions options =
        ZCC_OPTIONS_OF_PASS(ZCC_ZT_OPTIMIZER_PASS_OPTIONS, *this);
    std::string broken = zcc::options::check(options);
    if (!broken.empty())
      return getOperation().emitError() << "zt-optimizer " << broken;
    updates.emplace(std::move(options));
    return updates->readPatterns(getOperation());
  }

  /// Mixed precision's parameter gradients come in bf16 and are converted
  /// to f32 for the update: where the conversion's only readers are the
  /// update and clipping's sum of squares, they read the bf16 gradient
  /// itself. Widening is exact, so the bits are the same, with one launch
  /// and an f32 copy of the gradient fewer. (Accumulation and data
  /// parallelism add or reduce the f32 gradient, and keep the conversion.)
  void readBf16Gradients() {
    SmallVector<ConvertOp> unread;
    getOperation().walk([&](ConvertOp convert) {
      auto from = cast<RankedTensorType>(convert.getOperand().getType());
      auto to = cast<RankedTensorType>(convert.getType());
      if (!from.getElementType().isBF16() || !to.getElementType().isF32() ||
          convert->use_empty())
        return;
      for (OpOperand &use : convert->getUses())
        if (!readsWidened(use))
          return;
      convert.getResult().replaceAllUsesWith(convert.getOperand());
      unread.push_back(convert);
    });
    for (ConvertOp convert : unread)
      convert->erase();
  }
  /// Whether `use` reads a gradient the same widened from bf16: an
  /// update's gradient, or a sum of squares' operand.
  static bool readsWidened(OpOperand &use) {
    Operation *op = use.getOwner();
    if (auto adamw = dyn_cast<AdamwOp>(op))
      return &use == &adamw.getGradMutable();
    if (auto sgd = dyn_cast<SgdOp>(op))
      return &use == &sgd.getGradMutable();
    if (auto sum = dyn_cast<SumSquaresOp>(op))
      return &use == &sum.getOperandMutable();
    return false;
  }

  /// The updates, as the options ask (made by checkOptions).
  std::optional<UpdateBuilder> updates;

  LogicalResult updateTrainStep(func::FuncOp fn) {
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    StepSignature sig{fn, {}, {}};
    SmallVector<Gradient> gradients;
    for (unsigned r = 0, e = fn.getNumResults(); r < e; ++r) {
      std::optional<unsigned> of =
          resultArgIndex(fn, r, ZTDialect::kGradientOfAttrName);
      if (of && argRole(fn, *of) == ArgRole::Parameter) {
        gradients.push_back({fn.getArgument(*of), ret.getOperand(r)});
        continue;
      }
      // The loss and anything else the step returns stay as they are.
      sig.results.push_back(ret.getOperand(r));
      sig.resultAttrs.push_back(attrList(fn.getResultAttrDict(r)));
    }
    if (gradients.empty())
      return fn.emitOpError()
             << "returns no parameter gradient to apply (zt-optimizer runs "
                "once, after zt-autodiff)";
    OpBuilder b(ret);
    if (shardOptimizerState) {
      if (failed(shardedUpdates(*updates, b, sig, gradients,
                                /*inProductionOrder=*/true, shardedStates)))
        return failure();
      sig.finish(b);
      return success();
    }
    if (dataParallel)
      averageOverRanks(updates->options(), b, fn, gradients,
                       /*inProductionOrder=*/true);
    if (clipGradNorm > 0) {
      b.setInsertionPoint(ret);
      if (failed(updates->clippedUpdates(b, sig, gradients)))
        return failure();
      sig.finish(b);
      return success();
    }
    for (auto [param, grad] : gradients) {
      // Each update goes right after its gradient and the parameter's last
      // read, so a gradient dies as soon as it is computed instead of all of
      // them living until the end of the step. Data parallel: after the
      // next bucket's all_reduce too, so that a bucket is reduced while the
      // next is computed (one more bucket of gradients live).
      Operation *after = lastReader(param, grad, ret);
      if (auto reduce = grad.getDefiningOp<AllReduceOp>())
        if (Operation *next = nextOfKind<AllReduceOp>(reduce))
          if (!after || after->isBeforeInBlock(next))
            after = next;
      if (after)
        b.setInsertionPointAfter(after);
      else
        b.setInsertionPointToStart(&fn.getBody().front());
      if (failed(updates->emitUpdate(b, sig, param, updates->scaled(b, grad))))
        return failure();
    }
    sig.finish(b);
    return success();
  }

  /// The first op of kind `Op` after `op` in its block, or null.
  template <typename Op> static Operation *nextOfKind(Operation *op) {
    for (Operation *next = op->getNextNode(); next; next = next->getNextNode())
      if (isa<Op>(next))
        return next;
    return nullptr;
  }

  /// ZeRO-1's sharded state tensors (shardedUpdates), for the module.
  SmallVector<Attribute> shardedStates;

  /// The latest op before `ret` that defines `grad` or reads `param`
  /// (directly or through a zt.reshape view); null when there is none.
  static Operation *lastReader(Value param, Value grad, Operation *ret) {
    Operation *last = grad.getDefiningOp();
    auto later = [&](Operation *op) {
      if (op != ret && (!last || last->isBeforeInBlock(op)))
        last = op;
    };
    SmallVector<Value> worklist{param};
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (Operation *user : v.getUsers()) {
        later(user);
        if (auto view = dyn_cast<ReshapeOp>(user))
          worklist.push_back(view.getResult());
      }
    }
    return last;
  }

  /// Builds `@<name>_apply`: the update from each accumulator (scaled by
  /// grad-scale), then the accumulators zeroed for the next microbatches.
  LogicalResult buildApply(func::FuncOp microbatch) {
    MLIRContext *ctx = &getContext();
    std::string applyName = (microbatch.getName() + "_apply").str();
    ModuleOp module = getOperation();
    if (SymbolTable::lookupSymbolIn(module, applyName))
      return microbatch.emitOpError()
             << "cannot add its apply entry: the module already has a symbol "
                "named '"
             << applyName << "'";
    // (parameter, accumulator) argument indices of the microbatch entry.
    SmallVector<std::pair<unsigned, unsigned>> pairs;
    for (unsigned r = 0, e = microbatch.getNumResults(); r < e; ++r) {
      auto of = resultArgIndex(microbatch, r, ZTDialect::kGradientOfAttrName);
      auto tied = resultArgIndex(microbatch, r, ZTDialect::kTiedAttrName);
      if (of && tied && argRole(microbatch, *tied) == ArgRole::Accumulator)
        pairs.push_back({*of, *tied});
    }
    if (pairs.empty())
      return microbatch.emitOpError()
             << "accumulates no parameter gradient to apply";

    OpBuilder b(ctx);
    b.setInsertionPointAfter(microbatch);
    Location loc = microbatch.getLoc();
    auto apply =
        b.create<func::FuncOp>(loc, applyName, FunctionType::get(ctx, {}, {}));
    apply->setAttr(ZTDialect::kEntryAttrName, StringAttr::get(ctx, "apply"));
    Block *body = apply.addEntryBlock();
    b.setInsertionPointToStart(body);
    b.create<func::ReturnOp>(loc);
    StepSignature sig{apply, {}, {}};
    // Parameters and accumulators keep their names, so both entries address
    // the same persistent slots.
    SmallVector<std::pair<BlockArgument, BlockArgument>> args;
    for (auto [param, acc] : pairs) {
      BlockArgument p =
          sig.addArgument(microbatch.getArgument(param).getType(),
                          attrList(microbatch.getArgAttrDict(param)));
      BlockArgument a =
          sig.addArgument(microbatch.getArgument(acc).getType(),
                          attrList(microbatch.getArgAttrDict(acc)));
      args.push_back({p, a});
    }
    b.setInsertionPoint(body->getTerminator());
    // The updates read the accumulators, averaged over the ranks when data
    // parallel; the zeroing below still names the accumulators themselves.
    SmallVector<Gradient> updates;
    for (auto [param, acc] : args)
      updates.push_back({param, acc});
    if (shardOptimizerState) {
      if (failed(shardedUpdates(*this->updates, b, sig, updates,
                                /*inProductionOrder=*/false, shardedStates)))
        return failure();
    } else {
      if (dataParallel)
        averageOverRanks(this->updates->options(), b, apply, updates,
                         /*inProductionOrder=*/false);
      b.setInsertionPoint(body->getTerminator());
      if (clipGradNorm > 0) {
        if (failed(this->updates->clippedUpdates(b, sig, updates)))
          return failure();
      } else {
        for (auto [param, grad] : updates)
          if (failed(this->updates->emitUpdate(b, sig, param,
                                              this->updates->scaled(b, grad))))
            return failure();
      }
    }
    b.setInsertionPoint(body->getTerminator());
    // Zeroing comes last, after every read of the accumulators.
    for (auto [param, acc] : args) {
      auto type = cast<RankedTensorType>(acc.getType());
      Value zero = b.create<ConstantOp>(
          loc, DenseElementsAttr::get(
                   type, b.getFloatAttr(type.getElementType(), 0.0)));
      sig.addTied(zero, acc);
    }
    sig.finish(b);
    return success();
  }
};

} // namespace
