//===- Optimizer.cpp - append SGD / AdamW updates to a training step ------===//
//
// Replaces the gradients a training step returns with parameter updates whose
// results are tied to the persistent slots they overwrite, adding the
// optimizer state as persistent arguments. For a microbatch entry it builds
// the separate apply entry that consumes the accumulators.
//
//===----------------------------------------------------------------------===//

#include "EntryPoints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Transforms/BufferLiveness.h"
#include "zcc/Transforms/Passes.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

namespace zcc {
#define GEN_PASS_DEF_ZTOPTIMIZER
#include "zcc/Transforms/Passes.h.inc"
} // namespace zcc

using namespace mlir;
using namespace zcc::zt;

namespace {

NamedAttrList attrList(DictionaryAttr dict) {
  return dict ? NamedAttrList(dict) : NamedAttrList();
}

/// A function under construction: its argument list grows as state is
/// added, and its results are collected with their attributes.
struct StepSignature {
  func::FuncOp fn;
  SmallVector<Value> results;
  SmallVector<NamedAttrList> resultAttrs;

  /// Appends a persistent, zero-initialised argument.
  BlockArgument addState(ArgRole role, Type type, StringRef name) {
    MLIRContext *ctx = fn.getContext();
    NamedAttrList attrs;
    attrs.set(ZTDialect::kRoleAttrName, ArgRoleAttr::get(ctx, role));
    attrs.set(ZTDialect::kInitAttrName, InitAttr::getZeros(ctx));
    attrs.set(ZTDialect::kNameAttrName, StringAttr::get(ctx, name));
    return addArgument(type, attrs);
  }

  BlockArgument addArgument(Type type, const NamedAttrList &attrs) {
    unsigned index = fn.getNumArguments();
    fn.insertArgument(index, type, attrs.getDictionary(fn.getContext()),
                      fn.getLoc());
    return fn.getArgument(index);
  }

  /// Returns `value` as the new content of persistent argument `arg`.
  void addTied(Value value, BlockArgument arg) {
    NamedAttrList attrs;
    attrs.set(ZTDialect::kTiedAttrName,
              IntegerAttr::get(IntegerType::get(fn.getContext(), 64),
                               arg.getArgNumber()));
    attrs.set(
        ZTDialect::kNameAttrName,
        StringAttr::get(fn.getContext(), argName(fn, arg.getArgNumber())));
    results.push_back(value);
    resultAttrs.push_back(attrs);
  }

  /// Replaces the terminator with a return of the collected results.
  void finish(OpBuilder &builder) {
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    builder.setInsertionPoint(ret);
    builder.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();
    SmallVector<Type> types;
    for (Value v : results)
      types.push_back(v.getType());
    fn.setType(
        FunctionType::get(fn.getContext(), fn.getArgumentTypes(), types));
    SmallVector<DictionaryAttr> dicts;
    for (NamedAttrList &attrs : resultAttrs)
      dicts.push_back(attrs.getDictionary(fn.getContext()));
    fn.setAllResultAttrs(dicts);
  }
};

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
  }

  LogicalResult checkOptions() {
    auto fail = [&](StringRef name, double value, StringRef rule) {
      return getOperation().emitError()
             << "zt-optimizer option '" << name << "' must be " << rule
             << ", got " << value;
    };
    auto finite = [](double v) { return std::isfinite(v); };
    if (optimizer != "sgd" && optimizer != "adamw")
      return getOperation().emitError()
             << "zt-optimizer option 'optimizer' must be 'sgd' or 'adamw', "
                "got '"
             << optimizer << "'";
    if (!finite(lr) || lr < 0)
      return fail("lr", lr, ">= 0");
    if (!finite(weightDecay) || weightDecay < 0)
      return fail("weight-decay", weightDecay, ">= 0");
    if (!finite(gradScale) || gradScale <= 0)
      return fail("grad-scale", gradScale, "> 0");
    if (bucketBytes < 1)
      return fail("bucket-bytes", static_cast<double>(bucketBytes), ">= 1");
    if (optimizer == "sgd") {
      if (!finite(momentum) || momentum < 0 || momentum >= 1)
        return fail("momentum", momentum, ">= 0 and < 1");
      if (nesterov && momentum == 0)
        return getOperation().emitError()
               << "zt-optimizer option 'nesterov' needs momentum > 0";
      return success();
    }
    if (!finite(beta1) || beta1 < 0 || beta1 >= 1)
      return fail("beta1", beta1, ">= 0 and < 1");
    if (!finite(beta2) || beta2 < 0 || beta2 >= 1)
      return fail("beta2", beta2, ">= 0 and < 1");
    if (!finite(eps) || eps <= 0)
      return fail("eps", eps, "> 0");
    return success();
  }

  /// The step counter AdamW's bias correction needs: the existing `step`
  /// argument, or a new one.
  FailureOr<Value> stepCounter(StepSignature &sig) {
    func::FuncOp fn = sig.fn;
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
      if (argRole(fn, i) == ArgRole::Step)
        return Value(fn.getArgument(i));
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
      if (argName(fn, i) == "step")
        return fn.emitOpError()
               << "argument #" << i
               << " is named 'step' but is not the step counter; adamw needs "
                  "to add a step argument of that name";
    MLIRContext *ctx = fn.getContext();
    NamedAttrList attrs;
    attrs.set(ZTDialect::kRoleAttrName, ArgRoleAttr::get(ctx, ArgRole::Step));
    attrs.set(ZTDialect::kNameAttrName, StringAttr::get(ctx, "step"));
    return Value(sig.addArgument(
        RankedTensorType::get({}, IntegerType::get(ctx, 64)), attrs));
  }

  /// Emits the update of `param` from `grad` and returns the new parameter
  /// and state, each tied to its argument.
  LogicalResult emitUpdate(OpBuilder &b, StepSignature &sig,
                           BlockArgument param, Value grad) {
    Location loc = sig.fn.getLoc();
    Type type = param.getType();
    std::string name = argName(sig.fn, param.getArgNumber());
    if (gradScale != 1.0)
      grad = b.create<ScaleOp>(loc, type, grad, b.getF64FloatAttr(gradScale));
    auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
    if (optimizer == "sgd") {
      BlockArgument buffer;
      SmallVector<Type> types{type};
      if (momentum != 0) {
        buffer =
            sig.addState(ArgRole::OptimizerState, type, name + ".momentum");
        types.push_back(type);
      }
      auto sgd = b.create<SgdOp>(loc, types, param, grad,
                                 buffer ? Value(buffer) : Value(), f64(lr),
                                 f64(momentum), f64(weightDecay),
                                 nesterov ? b.getUnitAttr() : UnitAttr());
      sig.addTied(sgd.getNewParam(), param);
      if (buffer)
        sig.addTied(sgd.getNewMomentumBuffer(), buffer);
      return success();
    }
    FailureOr<Value> step = stepCounter(sig);
    if (failed(step))
      return failure();
    BlockArgument expAvg =
        sig.addState(ArgRole::OptimizerState, type, name + ".exp_avg");
    BlockArgument expAvgSq =
        sig.addState(ArgRole::OptimizerState, type, name + ".exp_avg_sq");
    auto adamw = b.create<AdamwOp>(
        loc, TypeRange{type, type, type}, param, grad, expAvg, expAvgSq, *step,
        f64(lr), f64(beta1), f64(beta2), f64(eps), f64(weightDecay));
    sig.addTied(adamw.getNewParam(), param);
    sig.addTied(adamw.getNewExpAvg(), expAvg);
    sig.addTied(adamw.getNewExpAvgSq(), expAvgSq);
    return success();
  }

  LogicalResult updateTrainStep(func::FuncOp fn) {
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    StepSignature sig{fn, {}, {}};
    SmallVector<std::pair<BlockArgument, Value>> gradients;
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
    if (dataParallel)
      averageOverRanks(b, fn, gradients, /*inProductionOrder=*/true);
    for (auto [param, grad] : gradients) {
      // Each update goes right after its gradient and the parameter's last
      // read, so a gradient dies as soon as it is computed instead of all of
      // them living until the end of the step.
      Operation *after = lastReader(param, grad, ret);
      if (after)
        b.setInsertionPointAfter(after);
      else
        b.setInsertionPointToStart(&fn.getBody().front());
      if (failed(emitUpdate(b, sig, param, grad)))
        return failure();
    }
    sig.finish(b);
    return success();
  }

  /// Replaces each gradient of `gradients` by its mean over the ranks:
  /// gradients in buckets of about bucket-bytes, each bucket one
  /// zt.all_reduce placed right after the last gradient it holds, so the
  /// reduction of one bucket overlaps the computing of the next. Buckets
  /// follow the order the gradients are computed in (`inProductionOrder`;
  /// the backward yields them in reverse, as PyTorch DDP's buckets), or the
  /// list's order (an apply entry's accumulators, all there from its start).
  void averageOverRanks(OpBuilder &b, func::FuncOp fn,
                        SmallVector<std::pair<BlockArgument, Value>> &gradients,
                        bool inProductionOrder) {
    // Each distinct value once, in the order it becomes available.
    SmallVector<Value> order;
    llvm::DenseMap<Value, Value> reduced;
    for (auto &entry : gradients)
      if (reduced.try_emplace(entry.second, Value()).second)
        order.push_back(entry.second);
    auto position = [](Value v) -> Operation * { return v.getDefiningOp(); };
    if (inProductionOrder)
      llvm::stable_sort(order, [&](Value x, Value y) {
        Operation *a = position(x), *c = position(y);
        if (!a || !c)
          return !a && c; // arguments first
        return a->isBeforeInBlock(c);
      });
    Block &body = fn.getBody().front();
    // Buckets of arguments only (accumulators) go first, in their order.
    Operation *lastOfArguments = nullptr;
    auto flush = [&](ArrayRef<Value> bucket) {
      if (bucket.empty())
        return;
      Operation *last = nullptr;
      for (Value v : bucket)
        if (Operation *def = position(v))
          if (!last || last->isBeforeInBlock(def))
            last = def;
      if (last)
        b.setInsertionPointAfter(last);
      else if (lastOfArguments)
        b.setInsertionPointAfter(lastOfArguments);
      else
        b.setInsertionPointToStart(&body);
      SmallVector<Type> types;
      for (Value v : bucket)
        types.push_back(v.getType());
      auto op =
          b.create<AllReduceOp>(fn.getLoc(), types, bucket, b.getUnitAttr());
      if (!last)
        lastOfArguments = op;
      for (auto [from, to] : llvm::zip(bucket, op.getResults()))
        reduced[from] = to;
    };
    SmallVector<Value> bucket;
    int64_t bytes = 0;
    for (Value v : order) {
      bucket.push_back(v);
      bytes += zcc::tensorBytes(v.getType());
      if (bytes >= bucketBytes) {
        flush(bucket);
        bucket.clear();
        bytes = 0;
      }
    }
    flush(bucket);
    for (auto &entry : gradients)
      entry.second = reduced.lookup(entry.second);
  }

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
    SmallVector<std::pair<BlockArgument, Value>> updates;
    for (auto [param, acc] : args)
      updates.push_back({param, acc});
    if (dataParallel)
      averageOverRanks(b, apply, updates, /*inProductionOrder=*/false);
    b.setInsertionPoint(body->getTerminator());
    for (auto [param, grad] : updates)
      if (failed(emitUpdate(b, sig, param, grad)))
        return failure();
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
