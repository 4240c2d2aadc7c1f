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

int64_t zcc::autoBucketBytes(int64_t gradientBytes) {
  constexpr int64_t kBuckets = 16;
  constexpr int64_t kFloor = int64_t{1} << 20, kCap = int64_t{25} << 20;
  return std::clamp(gradientBytes / kBuckets, kFloor, kCap);
}

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
  /// The learning-rate schedule's factor per parameter element type, made
  /// once per entry (lrFactor).
  SmallVector<std::pair<Type, Value>, 1> lrFactors;

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
    // A pattern that names no parameter is a typo, not a choice.
    for (auto [text, used] : llvm::zip(noWeightDecay, noDecayUsed))
      if (!used && weightDecay > 0) {
        getOperation().emitError() << "zt-optimizer option 'no-weight-decay': '"
                                   << text << "' matches no parameter";
        return signalPassFailure();
      }
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
    std::string broken = zcc::options::check(
        ZCC_OPTIONS_OF_PASS(ZCC_ZT_OPTIMIZER_PASS_OPTIONS, *this));
    if (!broken.empty())
      return getOperation().emitError() << "zt-optimizer " << broken;
    for (const std::string &text : noWeightDecay) {
      llvm::Expected<llvm::GlobPattern> pattern =
          llvm::GlobPattern::create(text);
      if (!pattern)
        return getOperation().emitError()
               << "zt-optimizer option 'no-weight-decay': '" << text
               << "' is not a name pattern: "
               << llvm::toString(pattern.takeError());
      noDecayPatterns.push_back(std::move(*pattern));
      noDecayUsed.push_back(false);
    }
    return success();
  }

  /// The weight decay of parameter `param` (an argument of its entry):
  /// none below weight-decay-min-rank dimensions or when a no-weight-decay
  /// pattern matches its name (PyTorch's parameter groups, as nanoGPT's
  /// configure_optimizers makes them), else weight-decay.
  double weightDecayOf(BlockArgument param) {
    if (weightDecay == 0)
      return 0;
    auto type = cast<RankedTensorType>(param.getType());
    func::FuncOp fn = cast<func::FuncOp>(param.getOwner()->getParentOp());
    std::string name = argName(fn, param.getArgNumber());
    bool excluded = type.getRank() < weightDecayMinRank;
    for (auto [pattern, used] : llvm::zip(noDecayPatterns, noDecayUsed))
      if (pattern.match(name)) {
        used = true;
        excluded = true;
      }
    return excluded ? 0.0 : weightDecay.getValue();
  }
  SmallVector<llvm::GlobPattern> noDecayPatterns;
  SmallVector<bool> noDecayUsed;

  bool scheduled() const { return lrWarmupSteps > 0 || lrDecay != "none"; }

  /// The schedule's factor for updates of `element` parameters: one
  /// zt.lr_schedule at the top of the entry (it reads only the step
  /// counter), made the first time; the learning rate it gives is returned
  /// as `lr`, computed at the end. Null without a schedule.
  FailureOr<Value> lrFactor(StepSignature &sig, Type element) {
    if (!scheduled())
      return Value();
    for (auto &[type, factor] : sig.lrFactors)
      if (type == element)
        return factor;
    FailureOr<Value> step = stepCounter(sig);
    if (failed(step))
      return failure();
    OpBuilder b(sig.fn.getContext());
    b.setInsertionPointToStart(&sig.fn.getBody().front());
    Location loc = sig.fn.getLoc();
    auto type = RankedTensorType::get({}, element);
    bool decays = lrDecay != "none";
    Value factor = b.create<LrScheduleOp>(
        loc, type, *step, b.getI64IntegerAttr(lrWarmupSteps),
        b.getI64IntegerAttr(decays ? lrDecaySteps : 0),
        b.getF64FloatAttr(decays && lr > 0 ? minLr / lr : 0.0),
        lrDecay == "cosine" ? b.getUnitAttr() : UnitAttr(),
        lrDecay == "linear" ? b.getUnitAttr() : UnitAttr());
    if (sig.lrFactors.empty()) {
      // At the end, after the loss: the runtime takes an entry's first
      // scalar output as its loss.
      b.setInsertionPoint(sig.fn.getBody().front().getTerminator());
      Value rate = b.create<ScaleOp>(loc, type, factor, b.getF64FloatAttr(lr));
      if (failed(returnNamed(sig, rate, kLr, "the learning-rate schedule")))
        return failure();
    }
    sig.lrFactors.push_back({element, factor});
    return factor;
  }
  static constexpr const char *kLr = "lr";

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

  /// Emits the update of `param` from `grad`: the new parameter and state,
  /// each tied to its argument.
  LogicalResult emitUpdate(OpBuilder &b, StepSignature &sig,
                           BlockArgument param, Value grad,
                           Value sumSquares = {}) {
    FailureOr<Update> update =
        emitStep(b, sig, param, grad, argName(sig.fn, param.getArgNumber()),
                 weightDecayOf(param), sumSquares);
    if (failed(update))
      return failure();
    update->tie(sig, param);
    return success();
  }

  /// An optimizer step's results: the new parameter and each state's new
  /// value with its argument (and name suffix).
  struct Update {
    Value param;
    SmallVector<std::tuple<Value, BlockArgument, std::string>> states;

    /// Returns them tied: the parameter first, then its state.
    void tie(StepSignature &sig, BlockArgument to) const {
      sig.addTied(param, to);
      for (auto &[value, arg, suffix] : states)
        sig.addTied(value, arg);
    }
  };

  /// `grad` times grad-scale, negated to maximize (as torch.optim negates
  /// the gradient first; the norm clipping reads is the same).
  Value scaled(OpBuilder &b, Value grad) {
    const double factor = maximize ? -gradScale : gradScale;
    if (factor == 1.0)
      return grad;
    return b.create<ScaleOp>(grad.getLoc(), grad.getType(), grad,
                             b.getF64FloatAttr(factor));
  }

  /// `partial` (null: none) plus the sum of `grad`'s squares: the next link
  /// of clipping's chain.
  static Value sumSquares(OpBuilder &b, Value grad, Value partial) {
    auto type = RankedTensorType::get(
        {}, cast<RankedTensorType>(grad.getType()).getElementType());
    return b.create<SumSquaresOp>(grad.getLoc(), type, grad, partial);
  }

  /// The optimizer's step on `param` (an argument, or a shard of several)
  /// from `grad` (scaled), its state added as arguments named `name` +
  /// ".momentum" or ".exp_avg" / ".exp_avg_sq", with weight decay `decay`;
  /// clipped by the global norm when `sumSquares` (the sum of every
  /// gradient's squares) is given.
  FailureOr<Update> emitStep(OpBuilder &b, StepSignature &sig, Value param,
                             Value grad, const std::string &name, double decay,
                             Value sumSquares) {
    Location loc = sig.fn.getLoc();
    Type type = param.getType();
    auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
    FloatAttr maxGradNorm = sumSquares ? f64(clipGradNorm) : FloatAttr();
    FailureOr<Value> factor =
        lrFactor(sig, cast<RankedTensorType>(type).getElementType());
    if (failed(factor))
      return failure();
    auto state = [&](const char *suffix) {
      return sig.addState(ArgRole::OptimizerState, type, name + suffix);
    };
    Update update;
    if (optimizer == "sgd") {
      BlockArgument buffer;
      SmallVector<Type> types{type};
      if (momentum != 0) {
        buffer = state(".momentum");
        types.push_back(type);
      }
      auto sgd = b.create<SgdOp>(
          loc, types, param, grad, buffer ? Value(buffer) : Value(), sumSquares,
          f64(lr), f64(momentum), f64(decay),
          nesterov ? b.getUnitAttr() : UnitAttr(), maxGradNorm, *factor);
      update.param = sgd.getNewParam();
      if (buffer)
        update.states.push_back(
            {sgd.getNewMomentumBuffer(), buffer, ".momentum"});
      return update;
    }
    FailureOr<Value> step = stepCounter(sig);
    if (failed(step))
      return failure();
    BlockArgument expAvg = state(".exp_avg");
    BlockArgument expAvgSq = state(".exp_avg_sq");
    auto adamw = b.create<AdamwOp>(loc, TypeRange{type, type, type}, param,
                                   grad, expAvg, expAvgSq, *step, f64(lr),
                                   f64(beta1), f64(beta2), f64(eps), f64(decay),
                                   sumSquares, maxGradNorm, *factor);
    update.param = adamw.getNewParam();
    update.states.push_back({adamw.getNewExpAvg(), expAvg, ".exp_avg"});
    update.states.push_back({adamw.getNewExpAvgSq(), expAvgSq, ".exp_avg_sq"});
    return update;
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
    if (shardOptimizerState) {
      if (failed(shardedUpdates(b, sig, gradients, /*inProductionOrder=*/true)))
        return failure();
      sig.finish(b);
      return success();
    }
    if (dataParallel)
      averageOverRanks(b, fn, gradients, /*inProductionOrder=*/true);
    if (clipGradNorm > 0) {
      b.setInsertionPoint(ret);
      if (failed(clippedUpdates(b, sig, gradients)))
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
      if (failed(emitUpdate(b, sig, param, scaled(b, grad))))
        return failure();
    }
    sig.finish(b);
    return success();
  }

  /// Clipping by the global norm, at `b`: the squares of every gradient
  /// summed in the list's order, then every update, clipped.
  LogicalResult
  clippedUpdates(OpBuilder &b, StepSignature &sig,
                 ArrayRef<std::pair<BlockArgument, Value>> gradients) {
    Value total;
    for (auto [param, grad] : gradients)
      total = sumSquares(b, grad, total);
    total = scaledSquares(b, total);
    if (failed(returnGradNorm(b, sig, total)))
      return failure();
    for (auto [param, grad] : gradients)
      if (failed(emitUpdate(b, sig, param, scaled(b, grad), total)))
        return failure();
    return success();
  }

  /// Returns the gradients' global norm before clipping (what
  /// clip_grad_norm_ returns, for logging) as the entry's `grad_norm`.
  LogicalResult returnGradNorm(OpBuilder &b, StepSignature &sig,
                               Value sumOfSquares) {
    Value norm = b.create<SqrtOp>(sumOfSquares.getLoc(), sumOfSquares.getType(),
                                  sumOfSquares);
    return returnNamed(sig, norm, kGradNorm, "clipping");
  }

  /// Adds `value` as the entry's output `name`, which no argument or
  /// result may have already (`what` says what adds it).
  static LogicalResult returnNamed(StepSignature &sig, Value value,
                                   StringRef name, StringRef what) {
    func::FuncOp fn = sig.fn;
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
      if (argName(fn, i) == name)
        return fn.emitOpError() << "argument #" << i << " is named '" << name
                                << "', the output " << what << " adds";
    for (const NamedAttrList &attrs : sig.resultAttrs)
      if (auto n =
              dyn_cast_or_null<StringAttr>(attrs.get(ZTDialect::kNameAttrName));
          n && n.getValue() == name)
        return fn.emitOpError() << "returns a result named '" << name
                                << "', the output " << what << " adds";
    NamedAttrList attrs;
    attrs.set(ZTDialect::kNameAttrName, StringAttr::get(fn.getContext(), name));
    sig.results.push_back(value);
    sig.resultAttrs.push_back(attrs);
    return success();
  }
  static constexpr const char *kGradNorm = "grad_norm";

  /// A sum of squares of gradients as that of the scaled gradients: times
  /// grad-scale squared, so that no scaled copy of every gradient has to
  /// live until the norm is known.
  Value scaledSquares(OpBuilder &b, Value sum) {
    if (gradScale == 1.0)
      return sum;
    return b.create<ScaleOp>(sum.getLoc(), sum.getType(), sum,
                             b.getF64FloatAttr(gradScale * gradScale));
  }

  /// Groups `gradients` into buckets of about bucket-bytes and calls
  /// `emit(members)` (indices into `gradients`) for each, with `b` placed
  /// right after the last gradient the bucket holds, so that a bucket's
  /// communication overlaps the computing of the next. Buckets follow the
  /// order the gradients are computed in (`inProductionOrder`; the backward
  /// yields them in reverse, as PyTorch DDP's buckets), or the list's order
  /// (an apply entry's accumulators, all there from its start: those
  /// buckets go first, one after the other).
  ///
  /// With `decayClass` (ZeRO-1), parameters of its two classes never share
  /// a bucket.
  template <typename Emit>
  void forEachBucket(OpBuilder &b, func::FuncOp fn,
                     ArrayRef<std::pair<BlockArgument, Value>> gradients,
                     bool inProductionOrder, Emit emit,
                     function_ref<int(BlockArgument)> decayClass = {}) {
    SmallVector<unsigned> order;
    for (unsigned i = 0; i < gradients.size(); ++i)
      order.push_back(i);
    auto def = [&](unsigned i) { return gradients[i].second.getDefiningOp(); };
    if (inProductionOrder)
      llvm::stable_sort(order, [&](unsigned x, unsigned y) {
        Operation *a = def(x), *c = def(y);
        if (!a || !c)
          return !a && c; // arguments first
        return a->isBeforeInBlock(c);
      });
    Block &body = fn.getBody().front();
    Operation *lastOfArguments = nullptr;
    // The latest gradient a bucket was placed after: buckets are placed in
    // the order they are emitted (ZeRO-1's stages chain them), so one whose
    // gradients were all done earlier (a class's last) goes after the ops
    // the previous bucket placed, where the builder was left.
    Operation *latest = nullptr;
    // The op computing a bucket's last gradient; null: all arguments.
    auto lastDef = [&](ArrayRef<unsigned> members) -> Operation * {
      Operation *last = nullptr;
      for (unsigned i : members)
        if (Operation *d = def(i))
          if (!last || last->isBeforeInBlock(d))
            last = d;
      return last;
    };
    auto flush = [&](ArrayRef<unsigned> bucket) {
      if (bucket.empty())
        return;
      Operation *last = lastDef(bucket);
      if (last && latest && last->isBeforeInBlock(latest)) {
        emit(bucket);
        return;
      }
      if (last) {
        latest = last;
        b.setInsertionPointAfter(last);
      } else if (lastOfArguments) {
        b.setInsertionPointAfter(lastOfArguments);
      } else {
        b.setInsertionPointToStart(&body);
      }
      emit(bucket);
      if (!last)
        lastOfArguments = &*std::prev(b.getInsertionPoint());
    };
    int64_t cap = bucketBytes;
    if (cap == 0) {
      int64_t total = 0;
      llvm::DenseSet<Value> seen;
      for (const auto &g : gradients)
        if (seen.insert(g.second).second)
          total += zcc::tensorBytes(g.second.getType());
      cap = zcc::autoBucketBytes(total);
    }
    // One open bucket per class (ZeRO-1: parameters with and without
    // weight decay, whose shards take different steps); each closes at the
    // cap, right after its last gradient.
    SmallVector<unsigned> bucket[2];
    int64_t bytes[2] = {0, 0};
    for (unsigned i : order) {
      int c = decayClass ? decayClass(gradients[i].first) : 0;
      bucket[c].push_back(i);
      bytes[c] += zcc::tensorBytes(gradients[i].second.getType());
      if (bytes[c] >= cap) {
        flush(bucket[c]);
        bucket[c].clear();
        bytes[c] = 0;
      }
    }
    // The last ones in the order their gradients complete.
    Operation *last0 = lastDef(bucket[0]), *last1 = lastDef(bucket[1]);
    bool oneFirst = last1 && (!last0 || last1->isBeforeInBlock(last0));
    flush(bucket[oneFirst ? 1 : 0]);
    flush(bucket[oneFirst ? 0 : 1]);
  }

  /// Replaces each gradient of `gradients` by its mean over the ranks: each
  /// bucket one zt.all_reduce, each distinct gradient once.
  void averageOverRanks(OpBuilder &b, func::FuncOp fn,
                        SmallVector<std::pair<BlockArgument, Value>> &gradients,
                        bool inProductionOrder) {
    llvm::DenseMap<Value, Value> reduced;
    forEachBucket(b, fn, gradients, inProductionOrder,
                  [&](ArrayRef<unsigned> members) {
                    SmallVector<Value> values;
                    SmallVector<Type> types;
                    for (unsigned i : members)
                      if (reduced.try_emplace(gradients[i].second).second) {
                        values.push_back(gradients[i].second);
                        types.push_back(gradients[i].second.getType());
                      }
                    auto op = b.create<AllReduceOp>(fn.getLoc(), types, values,
                                                    b.getUnitAttr());
                    for (auto [from, to] : llvm::zip(values, op.getResults()))
                      reduced[from] = to;
                  });
    for (auto &entry : gradients)
      entry.second = reduced.lookup(entry.second);
  }

  /// ZeRO-1: per bucket, the gradients packed side by side into one buffer
  /// (zero padded to `world-size` equal shards) are reduce-scattered (mean), this
  /// rank's shard of the flattened parameters takes the optimizer's step
  /// with state of one shard's size, and the shards are all-gathered back
  /// into the parameters. Each state tensor is recorded in `sharded` for
  /// the plan, so checkpoints can hold it per parameter.
  ///
  /// Three stages per bucket, each deferred past the next bucket's
  /// collective so communication overlaps computation (as the plain
  /// all_reduce's updates): the reduce_scatter where the bucket is
  /// complete; the step and all_gather after the next bucket's
  /// reduce_scatter; the parameters' slices after the next all_gather.
  struct ShardedBucket {
    SmallVector<unsigned> members;
    SmallVector<int64_t> offsets, counts;
    int64_t total = 0, shard = 0;
    double weightDecay = 0; // its members' (one class of forEachBucket)
    Type element;
    Operation *reduceScatter = nullptr;
    Operation *allGather = nullptr;
  };

  LogicalResult
  shardedUpdates(OpBuilder &b, StepSignature &sig,
                 ArrayRef<std::pair<BlockArgument, Value>> gradients,
                 bool inProductionOrder) {
    func::FuncOp fn = sig.fn;
    Location loc = fn.getLoc();
    MLIRContext *ctx = fn.getContext();
    auto ranksAttr = b.getI64IntegerAttr(worldSize);
    int bucketIndex = 0;
    LogicalResult result = success();

    // Clipping: the sum of the squares of every rank's shards, all reduced
    // (sum) once every bucket is; null without clipping.
    Value sumOfSquares;
    // The step on this rank's shard, then the all_gather; the states'
    // records for the plan.
    auto step = [&](ShardedBucket &k) -> LogicalResult {
      auto shardType = RankedTensorType::get({k.shard}, k.element);
      // Read where the parameters are: the flat whole is never built.
      SmallVector<Value> members;
      for (unsigned i : k.members)
        members.push_back(gradients[i].first);
      Value params = b.create<ShardOp>(loc, shardType, members, ranksAttr);
      std::string name = "zero." + std::to_string(bucketIndex++);
      Value grad = scaled(b, k.reduceScatter->getResult(0));
      FailureOr<Update> update =
          emitStep(b, sig, params, grad, name, k.weightDecay, sumOfSquares);
      if (failed(update))
        return failure();
      for (auto &[value, arg, suffix] : update->states)
        sig.addTied(value, arg);
      k.allGather = b.create<AllGatherOp>(
          loc, RankedTensorType::get({k.shard * worldSize}, k.element),
          update->param, ranksAttr);
      SmallVector<Attribute> names;
      for (unsigned i : k.members)
        names.push_back(StringAttr::get(
            ctx, argName(fn, gradients[i].first.getArgNumber())));
      for (auto &[value, arg, suffix] : update->states) {
        NamedAttrList entry;
        entry.set("name", StringAttr::get(ctx, name + suffix));
        entry.set("suffix", StringAttr::get(ctx, suffix));
        entry.set("ranks", ranksAttr);
        entry.set("params", ArrayAttr::get(ctx, names));
        entry.set("offsets", b.getDenseI64ArrayAttr(k.offsets));
        shardedStates.push_back(entry.getDictionary(ctx));
      }
      return success();
    };
    // The gathered parameters back into their own tensors.
    auto slices = [&](const ShardedBucket &k) {
      Value gathered = k.allGather->getResult(0);
      for (auto [j, i] : llvm::enumerate(k.members)) {
        BlockArgument param = gradients[i].first;
        Value slice = b.create<SliceOp>(
            loc, RankedTensorType::get({k.counts[j]}, k.element), gathered,
            b.getDenseI64ArrayAttr({k.offsets[j]}),
            b.getDenseI64ArrayAttr({k.offsets[j] + k.counts[j]}),
            b.getDenseI64ArrayAttr({1}));
        sig.addTied(b.create<ReshapeOp>(loc, param.getType(), slice), param);
      }
    };

    // Buckets whose step, or whose slices, wait for the next collective.
    std::optional<ShardedBucket> stepPending, slicesPending;
    // Clipping: every bucket, reduced, and this rank's sum of squares.
    SmallVector<ShardedBucket> clipped;
    Value partialSum;
    // Runs the stages due after `rs`, the reduce_scatter just placed (null
    // after the last bucket: then what is still pending, after the last op
    // placed).
    auto advance = [&](Operation *rs) {
      if (!stepPending)
        return;
      if (rs) // else where the last bucket's stages left it
        b.setInsertionPointAfter(rs);
      if (failed(step(*stepPending))) {
        result = failure();
        return;
      }
      if (slicesPending) {
        b.setInsertionPointAfter(stepPending->allGather);
        slices(*slicesPending);
      }
      slicesPending = std::move(stepPending);
      stepPending.reset();
    };
    forEachBucket(
        b, fn, gradients, inProductionOrder,
        [&](ArrayRef<unsigned> members) {
          if (failed(result))
            return;
          ShardedBucket k;
          k.members.assign(members.begin(), members.end());
          k.element =
              cast<RankedTensorType>(gradients[members[0]].first.getType())
                  .getElementType();
          k.weightDecay = weightDecayOf(gradients[members[0]].first);
          for (unsigned i : members) {
            auto type = cast<RankedTensorType>(gradients[i].first.getType());
            k.offsets.push_back(k.total);
            k.counts.push_back(type.getNumElements());
            k.total += type.getNumElements();
          }
          k.shard = (k.total + worldSize - 1) / worldSize;
          // The gradients side by side in one bucket (computed there where
          // the plan can), zero padded to `world-size` equal shards.
          SmallVector<Value> parts;
          for (unsigned i : members)
            parts.push_back(gradients[i].second);
          if (k.shard * worldSize > k.total) {
            auto padType =
                RankedTensorType::get({k.shard * worldSize - k.total}, k.element);
            parts.push_back(b.create<ConstantOp>(
                loc, DenseElementsAttr::get(padType,
                                            b.getFloatAttr(k.element, 0.0))));
          }
          auto packed =
              b.create<PackOp>(loc, ValueRange(parts).getTypes(), parts);
          k.reduceScatter = b.create<ReduceScatterOp>(
              loc, RankedTensorType::get({k.shard}, k.element),
              packed.getResults(), ranksAttr, b.getUnitAttr());
          if (clipGradNorm > 0) {
            // Every step waits for the norm: the buckets' steps come after
            // the last one, each shard's squares summed as it arrives.
            partialSum =
                sumSquares(b, k.reduceScatter->getResult(0), partialSum);
            clipped.push_back(std::move(k));
            return;
          }
          Operation *rs = k.reduceScatter;
          advance(rs);
          stepPending = std::move(k);
          // The insertion point is left after the last op placed, where
          // forEachBucket puts a next bucket of arguments (the apply
          // entry's accumulators).
        },
        [&](BlockArgument param) { return weightDecayOf(param) > 0 ? 1 : 0; });
    if (failed(result))
      return failure();
    if (clipGradNorm > 0) {
      // This rank's shards' squares summed over the ranks (one number), then
      // each bucket's step and all_gather, the previous bucket's slices
      // after it.
      sumOfSquares =
          scaledSquares(b, b.create<AllReduceOp>(loc, partialSum.getType(),
                                                 partialSum, UnitAttr())
                               .getResult(0));
      if (failed(returnGradNorm(b, sig, sumOfSquares)))
        return failure();
      std::optional<ShardedBucket> previous;
      for (ShardedBucket &k : clipped) {
        if (failed(step(k)))
          return failure();
        if (previous)
          slices(*previous);
        previous = std::move(k);
      }
      slices(*previous);
    } else {
      advance(nullptr);
    }
    if (failed(result))
      return failure();
    if (slicesPending) {
      b.setInsertionPointAfter(slicesPending->allGather);
      slices(*slicesPending);
    }
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
    SmallVector<std::pair<BlockArgument, Value>> updates;
    for (auto [param, acc] : args)
      updates.push_back({param, acc});
    if (shardOptimizerState) {
      if (failed(shardedUpdates(b, sig, updates, /*inProductionOrder=*/false)))
        return failure();
    } else {
      if (dataParallel)
        averageOverRanks(b, apply, updates, /*inProductionOrder=*/false);
      b.setInsertionPoint(body->getTerminator());
      if (clipGradNorm > 0) {
        if (failed(clippedUpdates(b, sig, updates)))
          return failure();
      } else {
        for (auto [param, grad] : updates)
          if (failed(emitUpdate(b, sig, param, scaled(b, grad))))
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
