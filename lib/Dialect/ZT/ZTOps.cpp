//===- ZTOps.cpp - zt op verifiers and custom syntax ----------------------===//
//
// Verifiers state every shape and dtype rule of the op set, so later passes
// (autodiff, liveness, planning) can assume well-formed IR and never crash.
// Most ops are checked by their kernel's rules, the plan loader's
// (ZT_KernelRules: verifyKernelRules); the verifiers here are the ops'
// whose IR admits more than a launch (f16, optimizer operand segments,
// collectives' buckets) or whose words say more than the loader's.
//
//===----------------------------------------------------------------------===//

#include "zcc/Dialect/ZT/ZTOps.h"

#include "FormatNumber.h"
#include "zcc/Runtime/Plan/ShapeRules.h"
#include "zcc/Runtime/Plan/KernelRules.h"
#include "zcc/Runtime/Plan/Launch.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace zcc::zt;
using zcc::zt::detail::formatNumber;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Operands and results are statically shaped ranked tensors once the ODS
/// type constraints have passed, which runs before every custom verifier.
static RankedTensorType tensorTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

static std::string formatList(ArrayRef<int64_t> values) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  llvm::interleaveComma(values, os);
  os << ']';
  return text;
}

/// Checks the result's shape against the one the op's rule derives.
static LogicalResult verifyResultShape(Operation *op, RankedTensorType result,
                                       ArrayRef<int64_t> expected) {
  if (result.getShape() == expected)
    return success();
  return op->emitOpError() << "expected result shape " << formatList(expected)
                           << ", got " << result;
}

/// A shape rule's verdict (zcc/Runtime/Plan/ShapeRules.h, the rules the
/// capture API and the plan loader apply too) as the op's error.
static LogicalResult ruleHolds(Operation *op,
                               const zcc::runtime::Status &verdict) {
  if (verdict.isOk())
    return success();
  return op->emitOpError() << verdict.message();
}

static zcc::runtime::Shape shapeOf(Value value) {
  ArrayRef<int64_t> shape = tensorTypeOf(value).getShape();
  return zcc::runtime::Shape(shape.begin(), shape.end());
}

static LogicalResult verifyTypeMatches(Operation *op, StringRef name,
                                       Type actual, StringRef refName,
                                       Type expected) {
  if (actual == expected)
    return success();
  return op->emitOpError() << name << " type " << actual << " must match "
                           << refName << " type " << expected;
}

/// A sum's result element type: its operands', or f32 summing bf16 ones
/// (products, and clipping's sums of squares of bf16 gradients).
static LogicalResult verifySumType(Operation *op, Type operand, Value result,
                                   StringRef whose, StringRef bf16Operands) {
  Type element = tensorTypeOf(result).getElementType();
  if (element == operand || (operand.isBF16() && element.isF32()))
    return success();
  return op->emitOpError() << "result element type " << element
                           << " must be the " << whose << " (" << operand
                           << "), or f32 for " << bf16Operands;
}

/// An update's gradient: the parameter's type, or for an f32 parameter
/// bf16 of its shape (mixed precision's gradient, widened exactly as it is
/// read).
static LogicalResult verifyGradient(Operation *op, Type grad, Type param) {
  auto g = cast<RankedTensorType>(grad), p = cast<RankedTensorType>(param);
  if (p.getElementType().isF32() && g.getElementType().isBF16() &&
      g.getShape() == p.getShape())
    return success();
  return verifyTypeMatches(op, "grad", grad, "param", param);
}

/// Range check for a floating-point hyperparameter: lo <= value (< hi).
static LogicalResult verifyHyperparameter(Operation *op, StringRef name,
                                          double value, double lo,
                                          bool loInclusive,
                                          std::optional<double> hiExclusive) {
  bool ok = std::isfinite(value) && (loInclusive ? value >= lo : value > lo) &&
            (!hiExclusive || value < *hiExclusive);
  if (ok)
    return success();
  InFlightDiagnostic diag = op->emitOpError()
                            << name << " must be "
                            << (loInclusive ? ">= " : "> ") << formatNumber(lo);
  if (hiExclusive)
    diag << " and < " << formatNumber(*hiExclusive);
  return diag << ", got " << formatNumber(value);
}

/// An optimizer update's clipping: `grad_sum_squares` present exactly when
/// `max_grad_norm > 0`, in the parameter's element type.
static LogicalResult verifyClipping(Operation *op, double maxGradNorm,
                                    Value sumSquares, Type paramType) {
  if (failed(verifyHyperparameter(op, "max_grad_norm", maxGradNorm, 0.0, true,
                                  std::nullopt)))
    return failure();
  if ((maxGradNorm > 0) != static_cast<bool>(sumSquares))
    return op->emitOpError()
           << "takes a grad_sum_squares operand exactly when max_grad_norm > "
              "0 (clipping), got max_grad_norm = "
           << formatNumber(maxGradNorm) << (sumSquares ? " with" : " without")
           << " one";
  if (sumSquares && cast<ShapedType>(sumSquares.getType()).getElementType() !=
                        cast<ShapedType>(paramType).getElementType())
    return op->emitOpError()
           << "grad_sum_squares must have the element type of param ("
           << cast<ShapedType>(paramType).getElementType() << "), got "
           << sumSquares.getType();
  return success();
}

/// A learning-rate schedule's factor, when an update takes one: in the
/// parameter's element type.
static LogicalResult verifyLrFactor(Operation *op, Value factor,
                                    Type paramType) {
  Type element = cast<ShapedType>(paramType).getElementType();
  if (factor && cast<ShapedType>(factor.getType()).getElementType() != element)
    return op->emitOpError()
           << "lr_factor must have the element type of param (" << element
           << "), got " << factor.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp, CausalMaskOp
//===----------------------------------------------------------------------===//

LogicalResult
ConstantOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                             ValueRange operands, DictionaryAttr attributes,
                             OpaqueProperties properties, RegionRange,
                             SmallVectorImpl<Type> &inferredReturnTypes) {
  ConstantOp::Adaptor adaptor(operands, attributes, properties);
  ElementsAttr value = adaptor.getValueAttr();
  if (!value)
    return failure();
  inferredReturnTypes.push_back(value.getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

LogicalResult ConstantOp::verify() {
  return verifyTypeMatches(*this, "result", getType(), "value",
                           getValue().getType());
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType operandType = tensorTypeOf(getOperand());
  RankedTensorType resultType = tensorTypeOf(getResult());
  if (operandType.getNumElements() != resultType.getNumElements())
    return emitOpError() << "cannot reshape " << operandType.getNumElements()
                         << " elements (" << operandType << ") into "
                         << resultType.getNumElements() << " elements ("
                         << resultType << ")";
  return success();
}

/// `%value [start:limit(:stride), ...] attr-dict : (type) -> type`, shared by
/// zt.slice and zt.slice_grad (whose ranges index its result).
template <typename OpT>
static ParseResult parseSliceLike(OpAsmParser &parser,
                                  OperationState &result) {
  OpAsmParser::UnresolvedOperand operand;
  SmallVector<int64_t> starts, limits, strides;
  auto parseRange = [&]() -> ParseResult {
    int64_t start, limit, stride = 1;
    if (parser.parseInteger(start) || parser.parseColon() ||
        parser.parseInteger(limit))
      return failure();
    if (succeeded(parser.parseOptionalColon()) && parser.parseInteger(stride))
      return failure();
    starts.push_back(start);
    limits.push_back(limit);
    strides.push_back(stride);
    return success();
  };
  FunctionType fnType;
  if (parser.parseOperand(operand) ||
      parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square,
                                     parseRange) ||
      parser.parseOptionalAttrDict(result.attributes) || parser.parseColon() ||
      parser.parseType(fnType))
    return failure();
  if (fnType.getNumInputs() != 1 || fnType.getNumResults() != 1)
    return parser.emitError(parser.getCurrentLocation(),
                            "expected a (operand type) -> result type");
  Builder &builder = parser.getBuilder();
  auto &props = result.getOrAddProperties<typename OpT::Properties>();
  props.start_indices = builder.getDenseI64ArrayAttr(starts);
  props.limit_indices = builder.getDenseI64ArrayAttr(limits);
  props.strides = builder.getDenseI64ArrayAttr(strides);
  result.addTypes(fnType.getResults());
  return parser.resolveOperand(operand, fnType.getInput(0), result.operands);
}

template <typename OpT>
static void printSliceLike(OpT op, OpAsmPrinter &printer) {
  printer << ' ' << op->getOperand(0) << " [";
  llvm::interleaveComma(
      llvm::zip(op.getStartIndices(), op.getLimitIndices(), op.getStrides()),
      printer, [&](auto range) {
        auto [start, limit, stride] = range;
        printer << start << ':' << limit;
        if (stride != 1)
          printer << ':' << stride;
      });
  printer << ']';
  printer.printOptionalAttrDict(
      op->getAttrs(), {op.getStartIndicesAttrName(),
                       op.getLimitIndicesAttrName(), op.getStridesAttrName()});
  printer << " : ";
  printer.printFunctionalType(op.getOperation());
}

ParseResult SliceOp::parse(OpAsmParser &parser, OperationState &result) {
  return parseSliceLike<SliceOp>(parser, result);
}

void SliceOp::print(OpAsmPrinter &printer) { printSliceLike(*this, printer); }

ParseResult SliceGradOp::parse(OpAsmParser &parser, OperationState &result) {
  return parseSliceLike<SliceGradOp>(parser, result);
}

void SliceGradOp::print(OpAsmPrinter &printer) {
  printSliceLike(*this, printer);
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  zcc::runtime::Shape expected;
  if (failed(ruleHolds(*this, zcc::runtime::matmulShape(
                                  shapeOf(getLhs()), shapeOf(getRhs()),
                                  getTransposeLhs(), getTransposeRhs(),
                                  expected))))
    return failure();
  Type operand = tensorTypeOf(getLhs()).getElementType();
  if (failed(verifySumType(*this, operand, getResult(), "operands'",
                           "bf16 operands")))
    return failure();
  if (getTf32() && !operand.isF32())
    return emitOpError() << "tf32 applies to products of f32 operands, not "
                         << operand;
  return verifyResultShape(*this, tensorTypeOf(getResult()), expected);
}

//===----------------------------------------------------------------------===//
// ConvertOp
//===----------------------------------------------------------------------===//

LogicalResult ConvertOp::verify() {
  Type from = tensorTypeOf(getOperand()).getElementType();
  Type to = tensorTypeOf(getResult()).getElementType();
  auto supported = [](Type t) {
    return t.isF32() || t.isBF16() || t.isInteger(32) || t.isInteger(64) ||
           t.isInteger(1);
  };
  if (!supported(from) || !supported(to) || from == to)
    return emitOpError() << "converts between two of f32, bf16, i32, i64 "
                            "and i1, got "
                         << from << " to " << to;
  return success();
}

//===----------------------------------------------------------------------===//
// EmbeddingOp, losses, dropout
//===----------------------------------------------------------------------===//

/// Labels index the rows of `logits`: their shape is logits' without the
/// class dimension.
static LogicalResult verifyLogitsAndLabels(Operation *op, Value logits,
                                           Value labels) {
  return ruleHolds(op, zcc::runtime::logitsLabelsRule(shapeOf(logits),
                                                      shapeOf(labels)));
}

/// The loss's element type for these logits: theirs, or f32 for bf16
/// logits (mixed precision computes the loss in f32).
static LogicalResult verifyLossElement(Operation *op, Value logits,
                                       StringRef role, Type loss) {
  Type element = cast<RankedTensorType>(logits.getType()).getElementType();
  Type expected =
      element.isBF16() ? Float32Type::get(op->getContext()) : element;
  Type actual = cast<RankedTensorType>(loss).getElementType();
  if (actual != expected)
    return op->emitOpError() << role << " must have element type " << expected
                             << " for " << element << " logits, got " << actual;
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  if (failed(verifyLossElement(*this, getLogits(), "result",
                               getResult().getType())))
    return failure();
  return verifyLogitsAndLabels(*this, getLogits(), getLabels());
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  if (failed(verifyLossElement(*this, getLogits(), "loss_grad",
                               getLossGrad().getType())))
    return failure();
  return verifyLogitsAndLabels(*this, getLogits(), getLabels());
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

LogicalResult SgdOp::verify() {
  Type paramType = getParam().getType();
  double momentum = getMomentum().convertToDouble();
  if (failed(verifyHyperparameter(*this, "lr", getLr().convertToDouble(), 0.0,
                                  true, std::nullopt)) ||
      failed(
          verifyHyperparameter(*this, "momentum", momentum, 0.0, true, 1.0)) ||
      failed(verifyHyperparameter(*this, "weight_decay",
                                  getWeightDecay().convertToDouble(), 0.0, true,
                                  std::nullopt)) ||
      failed(verifyGradient(*this, getGrad().getType(), paramType)) ||
      failed(verifyTypeMatches(*this, "new_param", getNewParam().getType(),
                               "param", paramType)))
    return failure();
  bool hasBuffer = static_cast<bool>(getMomentumBuffer());
  if (momentum != 0.0 && !hasBuffer)
    return emitOpError() << "momentum = " << formatNumber(momentum)
                         << " needs a momentum_buffer operand";
  if (momentum == 0.0 && hasBuffer)
    return emitOpError() << "a momentum_buffer operand needs momentum != 0";
  if (getNesterov() && momentum == 0.0)
    return emitOpError() << "nesterov needs momentum != 0";
  if (static_cast<bool>(getNewMomentumBuffer()) != hasBuffer)
    return emitOpError() << "must return a new_momentum_buffer exactly when it "
                            "takes a momentum_buffer";
  if (hasBuffer && (failed(verifyTypeMatches(*this, "momentum_buffer",
                                             getMomentumBuffer().getType(),
                                             "param", paramType)) ||
                    failed(verifyTypeMatches(*this, "new_momentum_buffer",
                                             getNewMomentumBuffer().getType(),
                                             "param", paramType))))
    return failure();
  if (failed(verifyClipping(*this, getMaxGradNorm().convertToDouble(),
                            getGradSumSquares(), paramType)))
    return failure();
  return verifyLrFactor(*this, getLrFactor(), paramType);
}

/// A bucket (zt.all_reduce, zt.pack): one or more operands, each result
/// typed like its operand.
static LogicalResult verifyBucket(Operation *op) {
  if (op->getNumOperands() == 0)
    return op->emitOpError() << "needs at least one operand (a bucket of one "
                                "or more tensors)";
  if (op->getNumOperands() != op->getNumResults())
    return op->emitOpError()
           << "has " << op->getNumOperands() << " operands and "
           << op->getNumResults() << " results; each operand needs its result";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(op->getOperands(), op->getResults()))) {
    auto [in, out] = pair;
    if (in.getType() != out.getType())
      return op->emitOpError()
             << "result #" << i << " type " << out.getType()
             << " must match operand #" << i << " type " << in.getType();
  }
  return success();
}

LogicalResult AllReduceOp::verify() { return verifyBucket(*this); }

LogicalResult PackOp::verify() { return verifyBucket(*this); }

/// A flat tensor of `ranks` shards and one shard: rank-1 tensors of one
/// element type, the whole `ranks` times the shard.
static LogicalResult verifyShards(Operation *op, int64_t ranks, Type wholeType,
                                  Type shardType) {
  auto whole = cast<RankedTensorType>(wholeType);
  auto shard = cast<RankedTensorType>(shardType);
  if (ranks < 1)
    return op->emitOpError() << "ranks must be at least 1, got " << ranks;
  if (whole.getRank() != 1 || shard.getRank() != 1)
    return op->emitOpError() << "works on flat (rank-1) tensors, got "
                             << wholeType << " and " << shardType;
  if (whole.getElementType() != shard.getElementType())
    return op->emitOpError()
           << "element types differ: " << wholeType << " and " << shardType;
  if (whole.getDimSize(0) != ranks * shard.getDimSize(0))
    return op->emitOpError()
           << "a shard of " << shard.getDimSize(0) << " elements times "
           << ranks << " ranks is not the " << whole.getDimSize(0)
           << " elements of the whole";
  return success();
}

/// The element count of `inputs` read as one flat tensor: one or more, each
/// of `shard`'s element type.
static FailureOr<int64_t> flatTotal(Operation *op, ValueRange inputs,
                                    RankedTensorType shard) {
  if (inputs.empty())
    return op->emitOpError() << "needs at least one operand";
  int64_t total = 0;
  for (Value input : inputs) {
    auto type = cast<RankedTensorType>(input.getType());
    if (type.getElementType() != shard.getElementType())
      return op->emitOpError()
             << "element types differ: " << type << " and " << shard;
    total += type.getNumElements();
  }
  return total;
}

// Inputs of any shape, one or a zt.pack's parts: a tensor larger than a
// bucket is its own bucket.
LogicalResult ReduceScatterOp::verify() {
  auto shard = cast<RankedTensorType>(getType());
  FailureOr<int64_t> total = flatTotal(*this, getInputs(), shard);
  if (failed(total))
    return failure();
  return verifyShards(*this, getRanks(),
                      RankedTensorType::get({*total}, shard.getElementType()),
                      shard);
}

LogicalResult AllGatherOp::verify() {
  return verifyShards(*this, getRanks(), getType(), getOperand().getType());
}

LogicalResult ShardOp::verify() {
  int64_t ranks = getRanks();
  if (ranks < 1)
    return emitOpError() << "ranks must be at least 1, got " << ranks;
  auto shard = cast<RankedTensorType>(getType());
  if (shard.getRank() != 1)
    return emitOpError() << "result must be flat (rank 1), got " << shard;
  FailureOr<int64_t> flat = flatTotal(*this, getInputs(), shard);
  if (failed(flat))
    return failure();
  int64_t total = *flat, expected = (total + ranks - 1) / ranks;
  if (shard.getDimSize(0) != expected)
    return emitOpError() << "a shard of " << total << " elements over " << ranks
                         << " ranks has " << expected << " elements, got "
                         << shard;
  return success();
}

LogicalResult AdamwOp::verify() {
  Type paramType = getParam().getType();
  if (failed(verifyGradient(*this, getGrad().getType(), paramType)))
    return failure();
  std::pair<StringRef, Value> sameAsParam[] = {
      {"exp_avg", getExpAvg()},
      {"exp_avg_sq", getExpAvgSq()},
      {"new_param", getNewParam()},
      {"new_exp_avg", getNewExpAvg()},
      {"new_exp_avg_sq", getNewExpAvgSq()}};
  for (auto [name, value] : sameAsParam)
    if (failed(verifyTypeMatches(*this, name, value.getType(), "param",
                                 paramType)))
      return failure();
  if (failed(verifyHyperparameter(*this, "lr", getLr().convertToDouble(), 0.0,
                                  true, std::nullopt)) ||
      failed(verifyHyperparameter(*this, "beta1", getBeta1().convertToDouble(),
                                  0.0, true, 1.0)) ||
      failed(verifyHyperparameter(*this, "beta2", getBeta2().convertToDouble(),
                                  0.0, true, 1.0)) ||
      failed(verifyHyperparameter(*this, "eps", getEps().convertToDouble(), 0.0,
                                  false, std::nullopt)) ||
      failed(verifyHyperparameter(*this, "weight_decay",
                                  getWeightDecay().convertToDouble(), 0.0, true,
                                  std::nullopt)))
    return failure();
  if (failed(verifyClipping(*this, getMaxGradNorm().convertToDouble(),
                            getGradSumSquares(), paramType)))
    return failure();
  return verifyLrFactor(*this, getLrFactor(), paramType);
}

LogicalResult SumSquaresOp::verify() {
  if (failed(verifySumType(*this, tensorTypeOf(getOperand()).getElementType(),
                           getResult(), "operand's", "a bf16 operand")))
    return failure();
  if (getPartial() && getPartial().getType() != getResult().getType())
    return emitOpError() << "partial must have the result's type ("
                         << getResult().getType() << "), got "
                         << getPartial().getType();
  return success();
}

LogicalResult LrScheduleOp::verify() {
  int64_t warmup = getWarmupSteps(), decay = getDecaySteps();
  double minFactor = getMinFactor().convertToDouble();
  if (warmup < 0)
    return emitOpError() << "warmup_steps must be >= 0, got " << warmup;
  if (getCosine() && getLinear())
    return emitOpError() << "decays one way: cosine or linear, not both";
  bool decays = getCosine() || getLinear();
  if (decays && decay <= warmup)
    return emitOpError() << "decay_steps (the step where the decay ends, "
                            "counted from 0) must be > warmup_steps ("
                         << warmup << "), got " << decay;
  if (!decays && decay != 0)
    return emitOpError() << "decay_steps = " << decay
                         << " needs a decay (cosine or linear)";
  if (!decays && minFactor != 0.0)
    return emitOpError() << "min_factor = " << formatNumber(minFactor)
                         << " needs a decay (cosine or linear)";
  if (!std::isfinite(minFactor) || minFactor < 0.0 || minFactor > 1.0)
    return emitOpError() << "min_factor must be >= 0 and <= 1, got "
                         << formatNumber(minFactor);
  return success();
}

#define GET_OP_CLASSES
#include "zcc/Dialect/ZT/ZTOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Ops as their kernels' launches
//===----------------------------------------------------------------------===//

std::optional<zcc::runtime::DType> zcc::zt::runtimeDType(Type element) {
  using zcc::runtime::DType;
  if (element.isF32())
    return DType::F32;
  if (element.isBF16())
    return DType::BF16;
  if (element.isSignlessInteger(32))
    return DType::I32;
  if (element.isSignlessInteger(64))
    return DType::I64;
  if (element.isSignlessInteger(1))
    return DType::Bool;
  return std::nullopt;
}

/// One zt attribute as a launch parameter; false for an attribute kind
/// the plan format cannot hold.
static bool paramOf(NamedAttribute attr, zcc::runtime::Param &param) {
  param.name = attr.getName().str();
  Attribute value = attr.getValue();
  if (isa<UnitAttr>(value)) {
    param.kind = zcc::runtime::ParamKind::Unit;
  } else if (auto b = dyn_cast<BoolAttr>(value)) {
    param.kind = zcc::runtime::ParamKind::Int;
    param.intValue = b.getValue();
  } else if (auto i = dyn_cast<IntegerAttr>(value)) {
    param.kind = zcc::runtime::ParamKind::Int;
    param.intValue = i.getInt();
  } else if (auto f = dyn_cast<FloatAttr>(value)) {
    param.kind = zcc::runtime::ParamKind::Float;
    param.floatValue = f.getValueAsDouble();
  } else if (auto ints = dyn_cast<DenseI64ArrayAttr>(value)) {
    param.kind = zcc::runtime::ParamKind::Ints;
    param.ints.assign(ints.asArrayRef().begin(), ints.asArrayRef().end());
  } else if (auto floats = dyn_cast<DenseF64ArrayAttr>(value)) {
    param.kind = zcc::runtime::ParamKind::Floats;
    param.floats.assign(floats.asArrayRef().begin(),
                        floats.asArrayRef().end());
  } else if (auto names = dyn_cast<ArrayAttr>(value)) {
    param.kind = zcc::runtime::ParamKind::Names;
    for (Attribute name : names) {
      auto text = dyn_cast<StringAttr>(name);
      if (!text)
        return false;
      param.names.push_back(text.str());
    }
  } else if (auto splat = dyn_cast<SplatElementsAttr>(value)) {
    // A splat constant: its one value (an integer splat is exact in a
    // double up to 2^53, far beyond any index).
    param.kind = zcc::runtime::ParamKind::Float;
    Type element = splat.getElementType();
    if (isa<FloatType>(element))
      param.floatValue = splat.getSplatValue<APFloat>().convertToDouble();
    else if (element.isInteger(1)) // true is 1, not i1's signed -1
      param.floatValue = splat.getSplatValue<bool>() ? 1.0 : 0.0;
    else
      param.floatValue =
          static_cast<double>(splat.getSplatValue<APInt>().getSExtValue());
  } else {
    return false;
  }
  return true;
}

FailureOr<zcc::runtime::Launch> zcc::zt::decodeLaunchOf(Operation *op, StringRef kernel,
                                          DictionaryAttr params) {
  std::vector<zcc::runtime::Param> decoded;
  for (NamedAttribute attr : params) {
    zcc::runtime::Param param;
    if (!paramOf(attr, param))
      return op->emitOpError()
             << "parameter '" << attr.getName()
             << "' has an attribute kind the plan format cannot hold: "
             << attr.getValue();
    decoded.push_back(std::move(param));
  }
  // The same decoding the loader does, so a plan the compiler writes reads
  // back.
  zcc::runtime::Launch launch;
  zcc::runtime::Status status = zcc::runtime::decodeLaunch(kernel, decoded, launch);
  if (!status.isOk())
    return op->emitOpError() << status.message();
  return launch;
}

LogicalResult zcc::zt::verifyKernelRules(Operation *op) {
  namespace rt = zcc::runtime;
  StringRef name = op->getName().stripDialect();
  std::optional<rt::KernelId> kernel = rt::findKernel(name);
  if (!kernel)
    return op->emitOpError() << "has no kernel whose rules check it";
  FailureOr<rt::Launch> launch = decodeLaunchOf(op, name, kernelParams(op));
  if (failed(launch))
    return failure();
  std::vector<rt::TensorType> sides[2];
  for (int side = 0; side < 2; ++side) {
    TypeRange types = side == 0 ? TypeRange(op->getOperandTypes())
                                : TypeRange(op->getResultTypes());
    for (auto [i, type] : llvm::enumerate(types)) {
      auto tensor = cast<RankedTensorType>(type);
      std::optional<rt::DType> dtype = runtimeDType(tensor.getElementType());
      if (!dtype)
        return op->emitOpError()
               << (side == 0 ? "operand #" : "result #") << i
               << ": no kernel holds element type " << tensor.getElementType();
      sides[side].push_back(rt::TensorType{
          *dtype, std::vector<int64_t>(tensor.getShape().begin(),
                                       tensor.getShape().end())});
    }
  }
  rt::Status verdict =
      rt::checkKernelTypes(*kernel, launch->params, sides[0], sides[1]);
  return ruleHolds(op, verdict);
}

LogicalResult zcc::zt::verifyBuiltByName(Operation *op) {
  std::optional<zcc::runtime::KernelId> kernel =
      zcc::runtime::findKernel(op->getName().stripDialect());
  if (kernel && !zcc::runtime::kernelInfersResults(*kernel))
    return op->emitOpError() << "is built by name but its kernel's rule does "
                                "not infer its results (ZRT_INFERRED_KERNELS)";
  return verifyKernelRules(op);
}

Operation *zcc::zt::buildKernelOp(OpBuilder &b, Location loc, StringRef name,
                                  ValueRange operands,
                                  ArrayRef<zcc::runtime::Param> params,
                                  TypeRange results) {
  using zcc::runtime::ParamKind;
  std::string full = ("zt." + name).str();
  if (!RegisteredOperationName::lookup(full, b.getContext()))
    return nullptr;
  OperationState state(loc, full);
  state.addOperands(operands);
  state.addTypes(results);
  for (const zcc::runtime::Param &p : params) {
    switch (p.kind) {
    case ParamKind::Unit:
      state.addAttribute(p.name, b.getUnitAttr());
      break;
    case ParamKind::Int:
      state.addAttribute(p.name, b.getI64IntegerAttr(p.intValue));
      break;
    case ParamKind::Float:
      state.addAttribute(p.name, b.getF64FloatAttr(p.floatValue));
      break;
    case ParamKind::Ints:
      state.addAttribute(p.name, b.getDenseI64ArrayAttr(p.ints));
      break;
    case ParamKind::Floats:
      state.addAttribute(p.name, b.getDenseF64ArrayAttr(p.floats));
      break;
    case ParamKind::Names: {
      SmallVector<StringRef> names(p.names.begin(), p.names.end());
      state.addAttribute(p.name, b.getStrArrayAttr(names));
      break;
    }
    }
  }
  return b.create(state);
}

//===----------------------------------------------------------------------===//
// Element ops, by their rows
//===----------------------------------------------------------------------===//

int zcc::zt::elementRowOf(Operation *op) {
  if (!isa<ZTDialect>(op->getDialect()))
    return -1;
  StringRef name = op->getName().stripDialect();
  return zcc::runtime::findElementRow(name.data(), name.size());
}

DictionaryAttr zcc::zt::kernelParams(Operation *op) {
  NamedAttrList params;
  std::optional<RegisteredOperationName> info = op->getRegisteredInfo();
  if (!info)
    return params.getDictionary(op->getContext());
  for (StringAttr name : info->getAttributeNames()) {
    if (!isKernelParameter(name.strref()))
      continue;
    if (std::optional<Attribute> value = op->getInherentAttr(name.strref()))
      if (*value)
        params.set(name, *value);
  }
  info->populateDefaultAttrs(params);
  return params.getDictionary(op->getContext());
}

uint32_t zcc::zt::traitsOf(Operation *op) {
  if (isa<ReshapeOp>(op))
    return zcc::runtime::kCheapToRecompute | zcc::runtime::kStoresBf16;
  if (!isa<ZTDialect>(op->getDialect()))
    return zcc::runtime::kNoTraits;
  std::optional<zcc::runtime::KernelId> kernel =
      zcc::runtime::findKernel(op->getName().stripDialect());
  return kernel ? zcc::runtime::kernelTraits(*kernel)
                : zcc::runtime::kNoTraits;
}

Operation *zcc::zt::buildElementOp(OpBuilder &b, Location loc, int row,
                                   ValueRange operands,
                                   ArrayRef<Attribute> params) {
  const zcc::runtime::ElementRow &r = zcc::runtime::kElementRows[row];
  assert(operands.size() ==
             size_t(zcc::runtime::elementOperandCount(r.arity)) &&
         params.size() == size_t(r.paramCount) && "the row's operands");
  auto last = cast<RankedTensorType>(operands.back().getType());
  Type result = zcc::runtime::elementResultIsBool(r.arity)
                    ? last.clone(b.getI1Type())
                    : last;
  OperationState state(loc, (Twine("zt.") + r.name).str());
  state.addOperands(operands);
  state.addTypes(result);
  for (int k = 0; k < r.paramCount; ++k)
    state.addAttribute(r.paramNames[k], params[k]);
  return b.create(state);
}
