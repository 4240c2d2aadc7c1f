//===- OptimizerUpdates.cpp - SGD and AdamW updates, schedules, clipping ---===//
//
// The updates zt-optimizer emits (Optimizer.h): one zt.sgd or zt.adamw per
// parameter (or ZeRO-1 shard), its state added as persistent arguments,
// scaled by the learning-rate schedule's factor, with each parameter's
// weight decay and, when clipping, the global norm of every gradient.
//
//===----------------------------------------------------------------------===//

#include "Optimizer.h"

#include "EntryPoints.h"

using namespace mlir;
using namespace zcc::zt;
using namespace zcc::optimizer;

namespace {
constexpr const char *kLr = "lr";
constexpr const char *kGradNorm = "grad_norm";

LogicalResult returnNamed(StepSignature &sig, Value value,
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
} // namespace

//===----------------------------------------------------------------------===//
// StepSignature
//===----------------------------------------------------------------------===//

BlockArgument StepSignature::addState(ArgRole role, Type type, StringRef name) {
  MLIRContext *ctx = fn.getContext();
  NamedAttrList attrs;
  attrs.set(ZTDialect::kRoleAttrName, ArgRoleAttr::get(ctx, role));
  attrs.set(ZTDialect::kInitAttrName, InitAttr::getZeros(ctx));
  attrs.set(ZTDialect::kNameAttrName, StringAttr::get(ctx, name));
  return addArgument(type, attrs);
}

BlockArgument StepSignature::addArgument(Type type, const NamedAttrList &attrs) {
  unsigned index = fn.getNumArguments();
  fn.insertArgument(index, type, attrs.getDictionary(fn.getContext()),
                    fn.getLoc());
  return fn.getArgument(index);
}

void StepSignature::addTied(Value value, BlockArgument arg) {
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

void StepSignature::finish(OpBuilder &builder) {
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

//===----------------------------------------------------------------------===//
// UpdateBuilder
//===----------------------------------------------------------------------===//

LogicalResult UpdateBuilder::readPatterns(Operation *where) {
  for (const std::string &text : o.noWeightDecay) {
    llvm::Expected<llvm::GlobPattern> pattern = llvm::GlobPattern::create(text);
    if (!pattern)
      return where->emitError()
             << "zt-optimizer option 'no-weight-decay': '" << text
             << "' is not a name pattern: "
             << llvm::toString(pattern.takeError());
    noDecayPatterns.push_back(std::move(*pattern));
    noDecayUsed.push_back(false);
  }
  return success();
}

LogicalResult UpdateBuilder::checkPatternsUsed(Operation *where) const {
  for (auto [text, used] : llvm::zip(o.noWeightDecay, noDecayUsed))
    if (!used && o.weightDecay > 0)
      return where->emitError() << "zt-optimizer option 'no-weight-decay': '"
                                << text << "' matches no parameter";
  return success();
}

void UpdateBuilder::Update::tie(StepSignature &sig, BlockArgument to) const {
  sig.addTied(param, to);
  for (auto &[value, arg, suffix] : states)
    sig.addTied(value, arg);
}

double UpdateBuilder::weightDecayOf(BlockArgument param) {
  if (o.weightDecay == 0)
    return 0;
  auto type = cast<RankedTensorType>(param.getType());
  func::FuncOp fn = cast<func::FuncOp>(param.getOwner()->getParentOp());
  std::string name = argName(fn, param.getArgNumber());
  bool excluded = type.getRank() < o.weightDecayMinRank;
  for (auto [pattern, used] : llvm::zip(noDecayPatterns, noDecayUsed))
    if (pattern.match(name)) {
      used = true;
      excluded = true;
    }
  return excluded ? 0.0 : o.weightDecay;
}

FailureOr<Value> UpdateBuilder::lrFactor(StepSignature &sig, Type element) {
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
  bool decays = o.lrDecay != "none";
  Value factor = b.create<LrScheduleOp>(
      loc, type, *step, b.getI64IntegerAttr(o.lrWarmupSteps),
      b.getI64IntegerAttr(decays ? o.lrDecaySteps : 0),
      b.getF64FloatAttr(decays && o.lr > 0 ? o.minLr / o.lr : 0.0),
      o.lrDecay == "cosine" ? b.getUnitAttr() : UnitAttr(),
      o.lrDecay == "linear" ? b.getUnitAttr() : UnitAttr());
  if (sig.lrFactors.empty()) {
    // At the end, after the loss: the runtime takes an entry's first
    // scalar output as its loss.
    b.setInsertionPoint(sig.fn.getBody().front().getTerminator());
    Value rate = b.create<ScaleOp>(loc, type, factor, b.getF64FloatAttr(o.lr));
    if (failed(returnNamed(sig, rate, kLr, "the learning-rate schedule")))
      return failure();
  }
  sig.lrFactors.push_back({element, factor});
  return factor;
}

FailureOr<Value> UpdateBuilder::stepCounter(StepSignature &sig) {
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

LogicalResult UpdateBuilder::emitUpdate(OpBuilder &b, StepSignature &sig,
                                        BlockArgument param, Value grad,
                                        Value sumSquares) {
  FailureOr<Update> update =
      emitStep(b, sig, param, grad, argName(sig.fn, param.getArgNumber()),
               weightDecayOf(param), sumSquares);
  if (failed(update))
    return failure();
  update->tie(sig, param);
  return success();
}

Value UpdateBuilder::scaled(OpBuilder &b, Value grad) const {
  const double factor = o.maximize ? -o.gradScale : o.gradScale;
  if (factor == 1.0)
    return grad;
  return b.create<ScaleOp>(grad.getLoc(), grad.getType(), grad,
                           b.getF64FloatAttr(factor));
}

Value UpdateBuilder::sumSquares(OpBuilder &b, Value grad, Value partial) {
  auto type = RankedTensorType::get(
      {}, cast<RankedTensorType>(grad.getType()).getElementType());
  return b.create<SumSquaresOp>(grad.getLoc(), type, grad, partial);
}

FailureOr<UpdateBuilder::Update> UpdateBuilder::emitStep(OpBuilder &b, StepSignature &sig, Value param,
                           Value grad, const std::string &name, double decay,
                           Value sumSquares) {
  Location loc = sig.fn.getLoc();
  Type type = param.getType();
  auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
  FloatAttr maxGradNorm = sumSquares ? f64(o.clipGradNorm) : FloatAttr();
  FailureOr<Value> factor =
      lrFactor(sig, cast<RankedTensorType>(type).getElementType());
  if (failed(factor))
    return failure();
  auto state = [&](const char *suffix) {
    return sig.addState(ArgRole::OptimizerState, type, name + suffix);
  };
  Update update;
  if (o.optimizer == "sgd") {
    BlockArgument buffer;
    SmallVector<Type> types{type};
    if (o.momentum != 0) {
      buffer = state(".momentum");
      types.push_back(type);
    }
    auto sgd = b.create<SgdOp>(
        loc, types, param, grad, buffer ? Value(buffer) : Value(), sumSquares,
        f64(o.lr), f64(o.momentum), f64(decay),
        o.nesterov ? b.getUnitAttr() : UnitAttr(), maxGradNorm, *factor);
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
                                 grad, expAvg, expAvgSq, *step, f64(o.lr),
                                 f64(o.beta1), f64(o.beta2), f64(o.eps), f64(decay),
                                 sumSquares, maxGradNorm, *factor);
  update.param = adamw.getNewParam();
  update.states.push_back({adamw.getNewExpAvg(), expAvg, ".exp_avg"});
  update.states.push_back({adamw.getNewExpAvgSq(), expAvgSq, ".exp_avg_sq"});
  return update;
}

LogicalResult UpdateBuilder::clippedUpdates(OpBuilder &b, StepSignature &sig,
                                            ArrayRef<Gradient> gradients) {
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

LogicalResult UpdateBuilder::returnGradNorm(OpBuilder &b, StepSignature &sig,
                                            Value sumOfSquares) {
  Value norm = b.create<SqrtOp>(sumOfSquares.getLoc(), sumOfSquares.getType(),
                                sumOfSquares);
  return returnNamed(sig, norm, kGradNorm, "clipping");
}

Value UpdateBuilder::scaledSquares(OpBuilder &b, Value sum) const {
  if (o.gradScale == 1.0)
    return sum;
  return b.create<ScaleOp>(sum.getLoc(), sum.getType(), sum,
                           b.getF64FloatAttr(o.gradScale * o.gradScale));
}
