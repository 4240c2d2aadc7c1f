//===- Autodiff.cpp - reverse-mode differentiation of a zt loss -----------===//
//
// Turns a forward + loss function into a training step: the forward ops are
// kept, the backward ops are appended in reverse order, one vector-Jacobian
// rule per op. Saved tensors are ordinary SSA uses of forward values, so the
// liveness analysis sees exactly how long each must live.
//
//===----------------------------------------------------------------------===//

#include "EntryPoints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Runtime/Plan/OpTraits.h"
#include "zcc/Runtime/Plan/ElementVjp.h"
#include "zcc/Transforms/Passes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <numeric>

namespace zcc {
#define GEN_PASS_DEF_ZTAUTODIFF
#include "zcc/Transforms/Passes.h.inc"
} // namespace zcc

using namespace mlir;
using namespace zcc::zt;
namespace vjp = zcc::runtime::vjp;

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

bool isFloatTensor(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && isa<FloatType>(type.getElementType());
}

/// A gradient contribution to a value. Contributions through a zt.slice are
/// kept unscattered until the value's gradient is summed, so slices that
/// tile the value (attention's q/k/v) become one concat instead of a
/// zero-filled full-size tensor each.
struct GradientPiece {
  Value grad;
  SliceOp throughSlice;
};

class GradientBuilder {
public:
  GradientBuilder(OpBuilder &builder, Location loc,
                  const DenseSet<Value> &active)
      : b(builder), loc(loc), active(active) {}

  void contribute(Value value, Value grad) {
    if (active.contains(value))
      pieces[value].push_back({grad, SliceOp()});
  }

  /// The sum of every contribution to `value`, or null when it has none.
  Value gradientOf(Value value);

  /// Emits the vector-Jacobian products of `op` for its active operands,
  /// given the gradients of its results (null where a result has none).
  LogicalResult backward(Operation *op, ArrayRef<Value> resultGrads);

private:
  Value concatIfTiling(Value value, ArrayRef<GradientPiece> slices);

  Value add(Value lhs, Value rhs) {
    return b.create<AddOp>(loc, lhs.getType(), lhs, rhs);
  }
  Value neg(Value x) { return b.create<NegOp>(loc, x.getType(), x); }
  /// `x` with `like`'s element type (a zt.convert, made once per value and
  /// type: a gradient read by two bf16 products is converted once), or `x`
  /// when it has it.
  Value convertLike(Value x, Value like) {
    RankedTensorType type = tensorType(x);
    Type element = tensorType(like).getElementType();
    if (type.getElementType() == element)
      return x;
    Value &converted = conversions[{x, element}];
    if (!converted)
      converted = b.create<ConvertOp>(loc, type.clone(element), x);
    return converted;
  }
  DenseMap<std::pair<Value, Type>, Value> conversions;
  Value mul(Value lhs, Value rhs) {
    return b.create<MulOp>(loc, lhs.getType(), lhs, rhs);
  }
  /// concat(-x[..., D/2:], x[..., :D/2]) over the last dimension.
  Value rotateHalf(Value x) {
    RankedTensorType type = tensorType(x);
    int64_t rank = type.getRank(), half = type.getDimSize(rank - 1) / 2;
    SmallVector<int64_t> halfShape(type.getShape());
    halfShape.back() = half;
    auto part = [&](int64_t start) {
      SmallVector<int64_t> starts(rank, 0), limits(type.getShape());
      starts.back() = start;
      limits.back() = start + half;
      return b.create<SliceOp>(loc, type.clone(halfShape), x,
                               b.getDenseI64ArrayAttr(starts),
                               b.getDenseI64ArrayAttr(limits),
                               b.getDenseI64ArrayAttr(
                                   SmallVector<int64_t>(rank, 1)));
    };
    Value parts[] = {neg(part(half)), part(0)};
    return b.create<ConcatOp>(loc, type, parts,
                              b.getI64IntegerAttr(rank - 1));
  }
  Value scale(Value x, double factor) {
    return b.create<ScaleOp>(loc, x.getType(), x, b.getF64FloatAttr(factor));
  }
  Value reshape(Value x, Type type) {
    if (x.getType() == type)
      return x;
    return b.create<ReshapeOp>(loc, type, x);
  }
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    RankedTensorType type = tensorType(x);
    SmallVector<int64_t> shape;
    for (int64_t p : perm)
      shape.push_back(type.getDimSize(p));
    return b.create<TransposeOp>(loc, type.clone(shape), x,
                                 b.getDenseI64ArrayAttr(perm));
  }
  /// Swaps the last two dimensions (a matrix transpose per batch entry).
  Value transposeLastTwo(Value x) {
    SmallVector<int64_t> perm(tensorType(x).getRank());
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    return transpose(x, perm);
  }
  Value matmul(Value lhs, Value rhs, bool transposeLhs, bool transposeRhs) {
    RankedTensorType lhsType = tensorType(lhs);
    RankedTensorType rhsType = tensorType(rhs);
    int64_t lr = lhsType.getRank(), rr = rhsType.getRank();
    SmallVector<int64_t> shape(lhsType.getShape().drop_back(2));
    shape.push_back(lhsType.getDimSize(lr - (transposeLhs ? 1 : 2)));
    shape.push_back(rhsType.getDimSize(rr - (transposeRhs ? 2 : 1)));
    return b.create<MatmulOp>(loc, lhsType.clone(shape), lhs, rhs,
                              transposeLhs ? b.getUnitAttr() : UnitAttr(),
                              transposeRhs ? b.getUnitAttr() : UnitAttr());
  }
  Value broadcast(Value x, RankedTensorType type, ArrayRef<int64_t> dims) {
    return b.create<BroadcastInDimOp>(loc, type, x,
                                      b.getDenseI64ArrayAttr(dims));
  }
  Value sum(Value x, ArrayRef<int64_t> dims) {
    RankedTensorType type = tensorType(x);
    SmallVector<int64_t> shape;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (!llvm::is_contained(dims, d))
        shape.push_back(type.getDimSize(d));
    return b.create<SumOp>(loc, type.clone(shape), x,
                           b.getDenseI64ArrayAttr(dims), UnitAttr());
  }
  /// The gradient of a reduction: `grad` spread back over `operandType`.
  Value unreduce(Value grad, RankedTensorType operandType,
                 ArrayRef<int64_t> dims, bool keepDims) {
    SmallVector<int64_t> kept;
    for (int64_t d = 0; d < operandType.getRank(); ++d)
      if (keepDims || !llvm::is_contained(dims, d))
        kept.push_back(d);
    return broadcast(grad, operandType, kept);
  }

  /// An element op's gradients: its row's Vjp, each expression built as the
  /// element ops it names (ElementVjp.h), for the operands that need one.
  LogicalResult elementBackward(Operation *op, int row, Value dy);
  /// Row `row` applied to `operands`, with `forward`'s params of the same
  /// names.
  Value elementOp(Operation *forward, int row, ArrayRef<Value> operands);

  void matmulBackward(MatmulOp op, Value grad);
  void broadcastBackward(BroadcastInDimOp op, Value grad);
  void concatBackward(ConcatOp op, Value grad);

  OpBuilder &b;
  Location loc;
  const DenseSet<Value> &active;
  // Looked up by value, never iterated: the output order comes from the ops.
  DenseMap<Value, SmallVector<GradientPiece, 2>> pieces;
};

Value GradientBuilder::gradientOf(Value value) {
  auto it = pieces.find(value);
  if (it == pieces.end())
    return Value();
  SmallVector<GradientPiece> slices;
  SmallVector<Value> terms;
  for (const GradientPiece &piece : it->second) {
    if (piece.throughSlice)
      slices.push_back(piece);
    else
      terms.push_back(piece.grad);
  }
  if (Value tiled = concatIfTiling(value, slices)) {
    terms.push_back(tiled);
  } else {
    for (const GradientPiece &piece : slices) {
      SliceOp slice = piece.throughSlice;
      terms.push_back(b.create<SliceGradOp>(
          loc, value.getType(), piece.grad, slice.getStartIndicesAttr(),
          slice.getLimitIndicesAttr(), slice.getStridesAttr()));
    }
  }
  Value total = terms.front();
  for (Value term : ArrayRef<Value>(terms).drop_front())
    total = add(total, term);
  return total;
}

Value GradientBuilder::concatIfTiling(Value value,
                                      ArrayRef<GradientPiece> slices) {
  if (slices.size() < 2)
    return Value();
  RankedTensorType type = tensorType(value);
  int64_t rank = type.getRank();
  // The one dimension the slices split; every other is taken whole.
  std::optional<int64_t> splitDim;
  for (const GradientPiece &piece : slices) {
    SliceOp slice = piece.throughSlice;
    for (int64_t d = 0; d < rank; ++d) {
      if (slice.getStrides()[d] != 1)
        return Value();
      bool whole = slice.getStartIndices()[d] == 0 &&
                   slice.getLimitIndices()[d] == type.getDimSize(d);
      if (whole)
        continue;
      if (splitDim && *splitDim != d)
        return Value();
      splitDim = d;
    }
  }
  if (!splitDim)
    return Value();
  SmallVector<GradientPiece> sorted(slices);
  auto startOf = [&](SliceOp slice) {
    return slice.getStartIndices()[*splitDim];
  };
  llvm::stable_sort(sorted, [&](GradientPiece a, GradientPiece b) {
    return startOf(a.throughSlice) < startOf(b.throughSlice);
  });
  int64_t next = 0;
  SmallVector<Value> parts;
  for (GradientPiece piece : sorted) {
    if (startOf(piece.throughSlice) != next)
      return Value();
    next = piece.throughSlice.getLimitIndices()[*splitDim];
    parts.push_back(piece.grad);
  }
  if (next != type.getDimSize(*splitDim))
    return Value();
  return b.create<ConcatOp>(loc, type, parts, b.getI64IntegerAttr(*splitDim));
}

void GradientBuilder::matmulBackward(MatmulOp op, Value grad) {
  Value lhs = op.getLhs(), rhs = op.getRhs();
  // bf16 operands with an f32 result: the gradient products take bf16 too,
  // and give the operands' bf16 gradients.
  grad = convertLike(grad, lhs);
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  int64_t lhsRank = tensorType(lhs).getRank();
  int64_t rhsRank = tensorType(rhs).getRank();
  // C = op(A) op(B): d op(A) = dC op(B)^T, d op(B) = op(A)^T dC, and the
  // transpose flags absorb every transpose when the ranks allow.
  if (active.contains(lhs)) {
    if (!ta)
      contribute(lhs, matmul(grad, rhs, false, !tb));
    else if (rhsRank == lhsRank)
      contribute(lhs, matmul(rhs, grad, tb, true));
    else // A shared rank-2 B cannot be a batched lhs: transpose explicitly.
      contribute(lhs, transposeLastTwo(matmul(grad, rhs, false, !tb)));
  }
  if (active.contains(rhs)) {
    if (rhsRank == lhsRank) {
      contribute(rhs, tb ? matmul(grad, lhs, true, ta)
                         : matmul(lhs, grad, !ta, false));
      return;
    }
    // A weight shared by every batch entry: its gradient sums over the
    // batch, which is one matrix product over the flattened rows.
    RankedTensorType gradType = tensorType(grad);
    Value rowsA = ta ? transposeLastTwo(lhs) : lhs;
    RankedTensorType rowsType = tensorType(rowsA);
    int64_t k = rowsType.getShape().back();
    int64_t n = gradType.getShape().back();
    int64_t rows = rowsType.getNumElements() / k;
    Value a2 = reshape(rowsA, rowsType.clone({rows, k}));
    Value g2 = reshape(grad, gradType.clone({rows, n}));
    contribute(rhs,
               tb ? matmul(g2, a2, true, false) : matmul(a2, g2, true, false));
  }
}

void GradientBuilder::broadcastBackward(BroadcastInDimOp op, Value grad) {
  RankedTensorType operandType = tensorType(op.getOperand());
  RankedTensorType resultType = tensorType(op.getResult());
  ArrayRef<int64_t> dims = op.getBroadcastDimensions();
  // Sum over the new dimensions and the size-1 dimensions that were
  // repeated; what remains has the operand's elements in its order.
  SmallVector<int64_t> summed;
  for (int64_t d = 0; d < resultType.getRank(); ++d) {
    auto pos = llvm::find(dims, d);
    if (pos == dims.end()) {
      summed.push_back(d);
      continue;
    }
    int64_t i = pos - dims.begin();
    if (operandType.getDimSize(i) == 1 && resultType.getDimSize(d) != 1)
      summed.push_back(d);
  }
  Value g = summed.empty() ? grad : sum(grad, summed);
  contribute(op.getOperand(), reshape(g, operandType));
}

void GradientBuilder::concatBackward(ConcatOp op, Value grad) {
  int64_t dim = op.getDimension();
  RankedTensorType gradType = tensorType(grad);
  int64_t offset = 0;
  for (Value input : op.getInputs()) {
    RankedTensorType inputType = tensorType(input);
    int64_t size = inputType.getDimSize(dim);
    if (active.contains(input)) {
      SmallVector<int64_t> starts(gradType.getRank(), 0);
      SmallVector<int64_t> limits(gradType.getShape());
      SmallVector<int64_t> strides(gradType.getRank(), 1);
      starts[dim] = offset;
      limits[dim] = offset + size;
      contribute(input, b.create<SliceOp>(loc, inputType, grad,
                                          b.getDenseI64ArrayAttr(starts),
                                          b.getDenseI64ArrayAttr(limits),
                                          b.getDenseI64ArrayAttr(strides)));
    }
    offset += size;
  }
}

Value GradientBuilder::elementOp(Operation *forward, int row,
                                 ArrayRef<Value> operands) {
  const zcc::runtime::ElementRow &r = zcc::runtime::kElementRows[row];
  SmallVector<Attribute, 2> params;
  for (int k = 0; k < r.paramCount; ++k) {
    params.push_back(forward->getAttr(r.paramNames[k]));
    assert(params.back() && "a row in a Vjp takes its forward op's params");
  }
  return buildElementOp(b, loc, row, operands, params)->getResult(0);
}

LogicalResult GradientBuilder::elementBackward(Operation *op, int row,
                                               Value dy) {
  const vjp::Vjp &rule = vjp::kElementVjps[row];
  Value g0;
  auto leaf = [&](int code) -> Value {
    switch (static_cast<vjp::Leaf>(code)) {
    case vjp::Leaf::A:
      return op->getOperand(0);
    case vjp::Leaf::B:
      return op->getOperand(1);
    case vjp::Leaf::C:
      return op->getOperand(2);
    case vjp::Leaf::Y:
      return op->getResult(0);
    case vjp::Leaf::DY:
      return dy;
    case vjp::Leaf::G0:
      return g0;
    }
    llvm_unreachable("a leaf of ElementVjp.h");
  };
  auto evaluate = [&](const vjp::Expr &e) {
    SmallVector<Value, 4> stack;
    for (int s = 0; s < e.count; ++s) {
      const vjp::Step &step = e.steps[s];
      if (step.isLeaf) {
        stack.push_back(leaf(step.code));
        continue;
      }
      size_t n = vjp::operandCount(step.code);
      SmallVector<Value, 2> operands(stack.end() - n, stack.end());
      stack.resize(stack.size() - n);
      stack.push_back(elementOp(op, step.code, operands));
    }
    return stack.back();
  };
  auto readsG0 = [](const vjp::Expr &e) {
    for (int s = 0; s < e.count; ++s)
      if (e.steps[s].isLeaf && e.steps[s].code == int(vjp::Leaf::G0))
        return true;
    return false;
  };
  // An operand needs a gradient when it is active and its gradient is not
  // Zero (no program); operand 0's is built first, also when only a later
  // operand's reads it (G0).
  auto needs = [&](int i) {
    return rule.grads[i].count > 0 && active.contains(op->getOperand(i));
  };
  bool g0Read = false;
  for (int i = 1; i < rule.count; ++i)
    g0Read = g0Read || (needs(i) && readsG0(rule.grads[i]));
  for (int i = 0; i < rule.count; ++i) {
    if (!needs(i) && !(i == 0 && g0Read && rule.grads[0].count > 0))
      continue;
    Value grad = evaluate(rule.grads[i]);
    if (i == 0)
      g0 = grad;
    contribute(op->getOperand(i), grad);
  }
  return success();
}

LogicalResult GradientBuilder::backward(Operation *op,
                                        ArrayRef<Value> resultGrads) {
  Value dy = resultGrads.empty() ? Value() : resultGrads.front();
  auto isActive = [&](Value v) { return active.contains(v); };
  // The backward ops of `op` carry its source location (reports and the
  // memory timeline then name the forward line a gradient belongs to).
  loc = op->getLoc();
  // The first result's gradient: every differentiable op but zt.attention
  // has one result (the optimizer updates have no rule).
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ScaleOp o) {
        contribute(o.getOperand(), scale(dy, o.getFactor().convertToDouble()));
        return success();
      })
      .Case([&](BroadcastInDimOp o) {
        broadcastBackward(o, dy);
        return success();
      })
      .Case([&](ReshapeOp o) {
        contribute(o.getOperand(), reshape(dy, o.getOperand().getType()));
        return success();
      })
      .Case([&](TransposeOp o) {
        ArrayRef<int64_t> perm = o.getPermutation();
        SmallVector<int64_t> inverse(perm.size());
        for (auto [i, p] : llvm::enumerate(perm))
          inverse[p] = i;
        contribute(o.getOperand(), transpose(dy, inverse));
        return success();
      })
      .Case([&](SliceOp o) {
        if (isActive(o.getOperand()))
          pieces[o.getOperand()].push_back({dy, o});
        return success();
      })
      .Case([&](ConcatOp o) {
        concatBackward(o, dy);
        return success();
      })
      .Case([&](SumOp o) {
        contribute(o.getOperand(), unreduce(dy, tensorType(o.getOperand()),
                                            o.getDims(), o.getKeepDims()));
        return success();
      })
      .Case([&](MeanOp o) {
        RankedTensorType type = tensorType(o.getOperand());
        int64_t count = 1;
        for (int64_t d : o.getDims())
          count *= type.getDimSize(d);
        // Scale the small reduced gradient, then spread it.
        Value scaled = scale(dy, 1.0 / static_cast<double>(count));
        contribute(o.getOperand(),
                   unreduce(scaled, type, o.getDims(), o.getKeepDims()));
        return success();
      })
      .Case([&](MaxOp o) {
        contribute(o.getOperand(),
                   b.create<MaxGradOp>(loc, o.getOperand().getType(),
                                       o.getOperand(), dy, o.getDimsAttr(),
                                       o.getKeepDimsAttr()));
        return success();
      })
      .Case([&](MatmulOp o) {
        matmulBackward(o, dy);
        return success();
      })
      .Case([&](ConvertOp o) {
        contribute(o.getOperand(), convertLike(dy, o.getOperand()));
        return success();
      })
      .Case([&](AttentionOp o) -> LogicalResult {
        if (resultGrads.size() > 1 && resultGrads[1])
          return o->emitOpError()
                 << "has a differentiated use of its logsumexp result; only "
                    "the attention output has a gradient rule (the "
                    "logsumexp is for zt.attention_grad)";
        auto grad = b.create<AttentionGradOp>(
            loc,
            TypeRange{o.getQuery().getType(), o.getKey().getType(),
                      o.getValue().getType()},
            o.getQuery(), o.getKey(), o.getValue(), o.getResult(),
            o.getLogsumexp(), dy, o.getMask(), o.getStep(), o.getScaleAttr(),
            o.getCausalAttr(), o.getDropoutAttr(), o.getSeedAttr());
        contribute(o.getQuery(), grad.getQueryGrad());
        contribute(o.getKey(), grad.getKeyGrad());
        contribute(o.getValue(), grad.getValueGrad());
        return success();
      })
      .Case([&](SoftmaxOp o) {
        contribute(o.getOperand(),
                   b.create<SoftmaxGradOp>(loc, dy.getType(), o.getResult(), dy,
                                           o.getAxisAttr()));
        return success();
      })
      .Case([&](LogSoftmaxOp o) {
        contribute(o.getOperand(),
                   b.create<LogSoftmaxGradOp>(loc, dy.getType(), o.getResult(),
                                              dy, o.getAxisAttr()));
        return success();
      })
      .Case([&](Conv2dOp o) {
        // Each gradient only where needed: an image's is a product and a
        // gather as costly as the forward.
        auto grad = [&](auto op, Value of) {
          if (isActive(of))
            contribute(of, b.create<decltype(op)>(
                               loc, of.getType(), o.getInput(), o.getWeight(),
                               dy, o.getStrideAttr(), o.getPaddingAttr(),
                               o.getDilationAttr(), o.getGroupsAttr()));
        };
        grad(Conv2dInputGradOp(), o.getInput());
        grad(Conv2dWeightGradOp(), o.getWeight());
        return success();
      })
      .Case([&](MaxPool2dOp o) {
        contribute(o.getInput(),
                   b.create<MaxPool2dGradOp>(
                       loc, o.getInput().getType(), o.getInput(), dy,
                       o.getKernelSizeAttr(), o.getStrideAttr(),
                       o.getPaddingAttr(), o.getDilationAttr(),
                       o.getCeilModeAttr()));
        return success();
      })
      .Case([&](CumsumOp o) {
        // Each input element reaches every later sum: the sums of dy from
        // the other end.
        contribute(o.getOperand(),
                   b.create<CumsumOp>(loc, dy.getType(), dy, o.getDimAttr(),
                                      o.getReverse() ? UnitAttr()
                                                     : b.getUnitAttr()));
        return success();
      })
      .Case([&](RotaryOp o) {
        // Linear in x: x's gradient is the transposed map of dy. With
        // y = C x + S R x (R: rotate_half), cos's is dy x and sin's
        // dy R(x); transposed, y = C x + R^T S x, sin's is x R(dy).
        Value x = o.getX();
        bool transposed = o.getTransposed();
        if (isActive(x))
          contribute(x, b.create<RotaryOp>(
                            loc, x.getType(), dy, o.getCos(), o.getSin(),
                            transposed ? UnitAttr() : b.getUnitAttr()));
        // (Under mixed precision the tables are f32 beside bf16 x.)
        if (isActive(o.getCos()))
          contribute(o.getCos(), convertLike(mul(dy, x), o.getCos()));
        if (isActive(o.getSin()))
          contribute(o.getSin(),
                     convertLike(transposed ? mul(x, rotateHalf(dy))
                                            : mul(dy, rotateHalf(x)),
                                 o.getSin()));
        return success();
      })
      .Case([&](BatchNormOp o) -> LogicalResult {
        // The fused gradient counts the statistics' dependence on the
        // input, so it is this op's only when they are its input's own.
        auto stats = o.getStats().getDefiningOp<BatchNormStatsOp>();
        if (!stats || stats.getInput() != o.getInput())
          return o->emitOpError()
                 << "has a gradient only with its statistics from "
                    "zt.batch_norm_stats of its own input";
        Type perChannel = o.getGamma().getType();
        auto grad = b.create<BatchNormGradOp>(
            loc, TypeRange{o.getInput().getType(), perChannel, perChannel},
            o.getInput(), o.getStats(), o.getGamma(), dy,
            o.getEpsilonAttr());
        contribute(o.getInput(), grad.getInputGrad());
        contribute(o.getGamma(), grad.getGammaGrad());
        contribute(o.getBeta(), grad.getBetaGrad());
        return success();
      })
      .Case([&](BatchNormStatsOp o) {
        contribute(o.getInput(), b.create<BatchNormStatsGradOp>(
                                     loc, o.getInput().getType(), o.getInput(),
                                     o.getResult(), dy));
        return success();
      })
      .Case([&](LayerNormOp o) {
        Type gammaType = o.getGamma().getType();
        auto grad = b.create<LayerNormGradOp>(
            loc, TypeRange{dy.getType(), gammaType, gammaType}, o.getOperand(),
            o.getGamma(), dy, o.getEpsilonAttr());
        contribute(o.getOperand(), grad.getOperandGrad());
        contribute(o.getGamma(), grad.getGammaGrad());
        contribute(o.getBeta(), grad.getBetaGrad());
        return success();
      })
      .Case([&](RmsNormOp o) {
        auto grad = b.create<RmsNormGradOp>(
            loc, TypeRange{dy.getType(), o.getGamma().getType()},
            o.getOperand(), o.getGamma(), dy, o.getEpsilonAttr());
        contribute(o.getOperand(), grad.getOperandGrad());
        contribute(o.getGamma(), grad.getGammaGrad());
        return success();
      })
      .Case([&](EmbeddingOp o) {
        contribute(o.getTable(),
                   b.create<EmbeddingGradOp>(loc, o.getTable().getType(),
                                             o.getIndices(), dy));
        return success();
      })
      .Case([&](SoftmaxCrossEntropyOp o) {
        contribute(o.getLogits(), b.create<SoftmaxCrossEntropyGradOp>(
                                      loc, o.getLogits().getType(),
                                      o.getLogits(), o.getLabels(), dy,
                                      o.getIgnoreIndexAttr(),
                                      o.getLabelSmoothingAttr()));
        return success();
      })
      .Case([&](MseOp o) {
        Value dPrediction =
            b.create<MseGradOp>(loc, o.getPrediction().getType(),
                                o.getPrediction(), o.getTarget(), dy);
        contribute(o.getPrediction(), dPrediction);
        if (isActive(o.getTarget()))
          contribute(o.getTarget(), neg(dPrediction));
        return success();
      })
      .Case([&](DropoutOp o) {
        // The same mask, recomputed from (seed, step, index): never saved.
        contribute(o.getOperand(),
                   b.create<DropoutOp>(loc, dy.getType(), dy, o.getStep(),
                                       o.getRateAttr(), o.getSeedAttr()));
        return success();
      })
      .Case<SgdOp, AdamwOp, SumSquaresOp, LrScheduleOp>([&](Operation *o) {
        return o->emitOpError()
               << "has no gradient rule: optimizer updates belong after "
                  "zt-autodiff (zt-optimizer adds them)";
      })
      .Default([&](Operation *o) -> LogicalResult {
        // Element ops: their rows' gradients (elementRowOf is -1 outside zt).
        if (int row = elementRowOf(o);
            row >= 0 && vjp::kElementVjps[row].defined)
          return elementBackward(o, row, dy);
        if (isa<ZTDialect>(o->getDialect()))
          return o->emitOpError()
                 << "has no gradient rule (zt-autodiff differentiates "
                    "forward ops once; higher-order gradients are not "
                    "supported)";
        return o->emitOpError()
               << "has no gradient rule: zt-autodiff differentiates zt ops "
                  "only";
      });
}

/// Ops whose result costs less to compute again in the backward than to keep
/// from the forward: elementwise ops, views and copies, broadcasts, dropout
/// (its mask comes from the seed and the step), the normalizations (one
/// row pass over an input the backward keeps anyway) and conversions (a
/// parameter's bf16 copy is made again for the backward's products).
bool isCheapToRecompute(Operation *op) {
  if (op->getNumOperands() == 0 || op->getNumResults() != 1)
    return false;
  return traitsOf(op) & zcc::runtime::kCheapToRecompute;
}

/// Forward values the backward reads are recomputed just before their first
/// backward use when that is cheap and needs nothing more to be kept: the
/// producing op is cheap and each operand is an argument, a value the
/// backward keeps past that point anyway, or itself recomputable so. The
/// forward value then dies in the forward instead of living across the
/// forward/backward boundary, where the step's memory peaks (GELU's output
/// beside its saved input, a layer_norm's output beside its saved input, the
/// transposed attention output beside the attention's saved output). The
/// clone computes the same bits as the original.
class CheapRecompute {
public:
  CheapRecompute(Block &body, const DenseSet<Operation *> &forward)
      : body(body), forward(forward) {
    int64_t index = 0;
    for (Operation &op : body)
      position[&op] = index++;
    for (Operation &op : body)
      if (forward.contains(&op))
        for (Value result : op.getResults())
          if (lastBackwardUse(result) >= 0)
            kept.insert(result);
  }

  void run() {
    SmallVector<Operation *> ops;
    for (Operation &op : body)
      if (forward.contains(&op) && isCheapToRecompute(&op))
        ops.push_back(&op);
    for (Operation *op : ops) {
      Value result = op->getResult(0);
      if (!kept.contains(result))
        continue;
      Operation *first = firstBackwardUser(result);
      int64_t at = position.lookup(first);
      if (!anyWorkBetween(lastForwardUse(op), at))
        continue; // nothing would live while it is gone
      if (!llvm::all_of(op->getOperands(),
                        [&](Value v) { return available(v, at, kMaxDepth); }))
        continue;
      OpBuilder b(first);
      Value clone = cloneOf(op, b, at);
      kept.erase(result);
      result.replaceUsesWithIf(clone, [&](OpOperand &use) {
        return isBackward(use.getOwner()) &&
               use.getOwner() != clone.getDefiningOp();
      });
    }
  }

private:
  static constexpr int kMaxDepth = 12;

  bool isBackward(Operation *op) const {
    return !forward.contains(op) && !isa<func::ReturnOp>(op);
  }
  /// The latest position of a backward use, or -1.
  int64_t lastBackwardUse(Value v) const {
    int64_t last = -1;
    for (Operation *user : v.getUsers())
      if (isBackward(user))
        last = std::max(last, position.lookup(user));
    return last;
  }
  /// The position of the last forward op reading `op`'s result, or `op`'s.
  int64_t lastForwardUse(Operation *op) const {
    int64_t last = position.lookup(op);
    for (Operation *user : op->getResult(0).getUsers())
      if (!isBackward(user) && !isa<func::ReturnOp>(user))
        last = std::max(last, position.lookup(user));
    return last;
  }
  /// Some op strictly between positions `from` and `to` computes a tensor
  /// (constants need no work and no arena).
  bool anyWorkBetween(int64_t from, int64_t to) const {
    for (Operation &op : body)
      if (int64_t p = position.lookup(&op);
          p > from && p < to && !isa<ConstantOp>(op))
        return true;
    return false;
  }
  Operation *firstBackwardUser(Value v) const {
    Operation *first = nullptr;
    for (Operation *user : v.getUsers())
      if (isBackward(user) &&
          (!first || position.lookup(user) < position.lookup(first)))
        first = user;
    return first;
  }
  /// `v` can be read at position `at` without keeping anything longer.
  bool keptUntil(Value v, int64_t at) const {
    return isa<BlockArgument>(v) ||
           (kept.contains(v) && lastBackwardUse(v) >= at);
  }
  bool available(Value v, int64_t at, int depth) const {
    if (keptUntil(v, at))
      return true;
    Operation *def = v.getDefiningOp();
    if (depth == 0 || !def || !forward.contains(def) ||
        !isCheapToRecompute(def))
      return false;
    return llvm::all_of(def->getOperands(),
                        [&](Value o) { return available(o, at, depth - 1); });
  }
  /// How many ops recomputing `v` at `at` copies (0 for a kept value).
  int64_t copies(Value v, int64_t at) const {
    if (keptUntil(v, at))
      return 0;
    int64_t n = 1;
    for (Value operand : v.getDefiningOp()->getOperands())
      n += copies(operand, at);
    return n;
  }
  /// A copy of `op` at `b`'s point, its operands kept values or copies.
  /// The longest chain of copies first: a residual stream recomputed
  /// through its blocks then holds one block's copies at a time, not every
  /// block's normalized branch waiting for the chain below it.
  Value cloneOf(Operation *op, OpBuilder &b, int64_t at) {
    SmallVector<std::pair<int64_t, unsigned>> order;
    for (auto [i, operand] : llvm::enumerate(op->getOperands()))
      if (!keptUntil(operand, at))
        order.push_back({-copies(operand, at), static_cast<unsigned>(i)});
    llvm::stable_sort(order);
    IRMapping mapping;
    for (auto [cost, i] : order) {
      Value operand = op->getOperand(i);
      if (!mapping.contains(operand))
        mapping.map(operand, cloneOf(operand.getDefiningOp(), b, at));
    }
    Operation *clone = b.clone(*op, mapping);
    clone->setAttr(ZTDialect::kRecomputeAttrName, b.getUnitAttr());
    position[clone] = at;
    return clone->getResult(0);
  }

  Block &body;
  const DenseSet<Operation *> &forward;
  DenseMap<Operation *, int64_t> position;
  DenseSet<Value> kept;
};

struct ZTAutodiffPass : public zcc::impl::ZTAutodiffBase<ZTAutodiffPass> {
  using ZTAutodiffBase::ZTAutodiffBase;

  void runOnOperation() override {
    SmallVector<func::FuncOp> functions;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (hasArgRoles(fn) && entryKind(fn).empty())
        functions.push_back(fn);
    for (func::FuncOp fn : functions)
      if (failed(differentiate(fn)))
        return signalPassFailure();
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if ((entryKind(fn) == "eval" || entryKind(fn) == "predict") &&
          failed(prepareEvaluation(fn)))
        return signalPassFailure();
  }

  /// An eval or predict function (`zt.entry` written by its author): a
  /// forward the plan runs as it is, sharing the training entries'
  /// parameters and state by name. Checked and named here like a step.
  LogicalResult prepareEvaluation(func::FuncOp fn) {
    MLIRContext *ctx = &getContext();
    bool eval = entryKind(fn) == "eval";
    StringRef kind = entryKind(fn);
    if (!fn.getBody().hasOneBlock())
      return fn.emitOpError() << "must have a single block";
    llvm::StringSet<> names;
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
      std::optional<ArgRole> role = argRole(fn, i);
      if (!role)
        return fn.emitOpError() << "argument #" << i
                                << " has no 'zt.role'; every argument of an "
                                << kind << " entry needs one";
      if (*role == ArgRole::OptimizerState || *role == ArgRole::Accumulator)
        return fn.emitOpError()
               << "argument #" << i << " has role '" << stringifyArgRole(*role)
               << "'; an " << kind
               << " entry reads only parameters, state, inputs and labels";
      if (!eval && *role == ArgRole::Label)
        return fn.emitOpError() << "argument #" << i
                                << " is a label; a predict entry takes inputs "
                                   "only (its results are the predictions)";
      if (!names.insert(argName(fn, i)).second)
        return fn.emitOpError()
               << "argument #" << i << ": the name '" << argName(fn, i)
               << "' is used by an earlier argument";
      fn.setArgAttr(i, ZTDialect::kNameAttrName,
                    StringAttr::get(ctx, argName(fn, i)));
    }
    // Code the results do not use needs no buffer.
    SmallVector<Operation *> all;
    for (Operation &op : fn.getBody().front().without_terminator())
      all.push_back(&op);
    for (Operation *op : llvm::reverse(all))
      if (isOpTriviallyDead(op))
        op->erase();
    unsigned results = fn.getNumResults();
    for (unsigned r = 0; r < results; ++r)
      if (resultArgIndex(fn, r, ZTDialect::kTiedAttrName) ||
          resultArgIndex(fn, r, ZTDialect::kGradientOfAttrName))
        return fn.emitOpError()
               << "result #" << r << ": an " << kind
               << " entry writes no persistent tensor and has no gradients "
                  "(no 'zt.tied' or 'zt.gradient_of')";
    if (eval) {
      auto lossType = results == 1
                          ? dyn_cast<RankedTensorType>(fn.getResultTypes()[0])
                          : RankedTensorType();
      if (!lossType || lossType.getRank() != 0 ||
          !isa<FloatType>(lossType.getElementType()))
        return fn.emitOpError()
               << "an eval entry returns one rank-0 floating-point loss; it "
                  "returns "
               << fn.getResultTypes();
      fn.setResultAttr(0, ZTDialect::kNameAttrName,
                       StringAttr::get(ctx, "loss"));
      return success();
    }
    if (results == 0)
      return fn.emitOpError() << "a predict entry returns its predictions; "
                                 "it returns nothing";
    llvm::StringSet<> resultNames;
    for (unsigned r = 0; r < results; ++r) {
      std::string name = results == 1 ? "output" : "output" + std::to_string(r);
      if (auto given = fn.getResultAttrOfType<StringAttr>(
              r, ZTDialect::kNameAttrName))
        name = given.getValue().str();
      if (!isa<RankedTensorType>(fn.getResultTypes()[r]) ||
          !isa<FloatType>(
              cast<RankedTensorType>(fn.getResultTypes()[r]).getElementType()))
        return fn.emitOpError() << "result #" << r << " ('" << name
                                << "'): a prediction is a floating-point "
                                   "tensor, got "
                                << fn.getResultTypes()[r];
      if (!resultNames.insert(name).second)
        return fn.emitOpError() << "result #" << r << ": the name '" << name
                                << "' is used by an earlier result";
      fn.setResultAttr(r, ZTDialect::kNameAttrName,
                       StringAttr::get(ctx, name));
    }
    return success();
  }

  LogicalResult checkSignature(func::FuncOp fn) {
    if (!fn.getBody().hasOneBlock())
      return fn.emitOpError()
             << "must have a single block to be differentiated";
    if (fn.getNumResults() == 0)
      return fn.emitOpError() << "must return the rank-0 loss first; it "
                                 "returns nothing";
    // After the loss: the new values of state arguments (zt.tied), which
    // the step writes in place without a gradient.
    llvm::SmallDenseSet<unsigned> updated;
    for (unsigned r = 1, e = fn.getNumResults(); r < e; ++r) {
      std::optional<unsigned> tied =
          resultArgIndex(fn, r, ZTDialect::kTiedAttrName);
      if (!tied || argRole(fn, *tied) != ArgRole::State)
        return fn.emitOpError()
               << "result #" << r
               << ": after the loss, a training-step function returns only "
                  "new values of 'state' arguments, tied to them "
                  "('zt.tied')";
      if (!updated.insert(*tied).second)
        return fn.emitOpError() << "result #" << r << ": state argument #"
                                << *tied << " is updated by an earlier result";
    }
    auto lossType = dyn_cast<RankedTensorType>(fn.getResultTypes()[0]);
    if (!lossType || lossType.getRank() != 0 ||
        !isa<FloatType>(lossType.getElementType()))
      return fn.emitOpError()
             << "must return a rank-0 floating-point loss, got "
             << fn.getResultTypes()[0];
    llvm::StringSet<> names;
    bool anyParameter = false;
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
      std::optional<ArgRole> role = argRole(fn, i);
      if (!role)
        return fn.emitOpError()
               << "argument #" << i
               << " has no 'zt.role'; once one argument of a training-step "
                  "function has a role, every argument needs one";
      if (*role == ArgRole::OptimizerState || *role == ArgRole::Accumulator)
        return fn.emitOpError()
               << "argument #" << i << " has role '" << stringifyArgRole(*role)
               << "', which zt-autodiff and zt-optimizer add themselves";
      anyParameter |= *role == ArgRole::Parameter;
      if (!names.insert(argName(fn, i)).second)
        return fn.emitOpError()
               << "argument #" << i << ": the name '" << argName(fn, i)
               << "' is used by an earlier argument";
    }
    if (!anyParameter)
      return fn.emitOpError() << "has no parameter argument to differentiate";
    return success();
  }

  LogicalResult differentiate(func::FuncOp fn) {
    if (failed(checkSignature(fn)))
      return failure();
    MLIRContext *ctx = &getContext();
    Block &body = fn.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Value loss = ret.getOperand(0);

    // Active values depend on a parameter; only they get gradients.
    DenseSet<Value> active;
    for (BlockArgument arg : body.getArguments())
      if (argRole(fn, arg.getArgNumber()) == ArgRole::Parameter)
        active.insert(arg);
    for (Operation &op : body.without_terminator()) {
      bool anyActive = llvm::any_of(
          op.getOperands(), [&](Value v) { return active.contains(v); });
      if (anyActive)
        for (Value result : op.getResults())
          if (isFloatTensor(result))
            active.insert(result);
    }

    // The forward, before the backward adds anything (the seed included).
    SmallVector<Operation *> forward;
    for (Operation &op : body.without_terminator())
      forward.push_back(&op);
    DenseSet<Operation *> forwardOps(forward.begin(), forward.end());
    OpBuilder builder(ret);
    Location loc = fn.getLoc();
    GradientBuilder grads(builder, loc, active);
    if (active.contains(loss)) {
      auto lossType = cast<RankedTensorType>(loss.getType());
      Value seed = builder.create<ConstantOp>(
          loc,
          DenseElementsAttr::get(
              lossType, builder.getFloatAttr(lossType.getElementType(), 1.0)));
      grads.contribute(loss, seed);
    }
    // A parameter's gradient is complete once the reverse walk has passed
    // its first user: summed (and accumulated) there, it dies right away
    // instead of living until the end of the step.
    DenseMap<Operation *, SmallVector<BlockArgument, 1>> completedAt;
    for (BlockArgument arg : body.getArguments()) {
      if (argRole(fn, arg.getArgNumber()) != ArgRole::Parameter)
        continue;
      Operation *first = nullptr;
      for (Operation *user : arg.getUsers())
        if (user != ret && (!first || user->isBeforeInBlock(first)))
          first = user;
      if (first)
        completedAt[first].push_back(arg);
    }
    DenseMap<Value, Value> paramGrads;
    for (Operation *op : llvm::reverse(forward)) {
      SmallVector<Value> resultGrads;
      bool any = false;
      for (Value result : op->getResults()) {
        resultGrads.push_back(grads.gradientOf(result));
        any |= static_cast<bool>(resultGrads.back());
      }
      if (any && failed(grads.backward(op, resultGrads)))
        return failure();
      for (BlockArgument param : completedAt.lookup(op))
        if (Value grad = grads.gradientOf(param))
          paramGrads[param] = grad;
    }

    // Name every argument, so plans and checkpoints can refer to it.
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
      fn.setArgAttr(i, ZTDialect::kNameAttrName,
                    StringAttr::get(ctx, argName(fn, i)));

    SmallVector<Value> results{loss};
    SmallVector<NamedAttrList> resultAttrs(1);
    resultAttrs[0].set(ZTDialect::kNameAttrName, StringAttr::get(ctx, "loss"));
    // State updates stay as the forward computed them, named as their state.
    for (unsigned r = 1, e = ret.getNumOperands(); r < e; ++r) {
      unsigned tied = *resultArgIndex(fn, r, ZTDialect::kTiedAttrName);
      NamedAttrList attrs;
      attrs.set(ZTDialect::kTiedAttrName, builder.getI64IntegerAttr(tied));
      attrs.set(ZTDialect::kNameAttrName,
                StringAttr::get(ctx, argName(fn, tied)));
      results.push_back(ret.getOperand(r));
      resultAttrs.push_back(attrs);
    }
    unsigned numForwardArgs = fn.getNumArguments();
    for (unsigned i = 0; i < numForwardArgs; ++i) {
      if (argRole(fn, i) != ArgRole::Parameter)
        continue;
      BlockArgument param = body.getArgument(i);
      std::string name = argName(fn, i);
      Value grad = paramGrads.lookup(param);
      if (!grad) {
        fn.emitWarning() << "parameter '" << name
                         << "' does not affect the loss; its gradient is zero";
        auto type = cast<RankedTensorType>(param.getType());
        grad = builder.create<ConstantOp>(
            loc, DenseElementsAttr::get(
                     type, builder.getFloatAttr(type.getElementType(), 0.0)));
      }
      NamedAttrList attrs;
      if (accumulate) {
        // The accumulator is a new persistent argument; the sum overwrites
        // it in place, so microbatches add up without growing memory.
        NamedAttrList argAttrs;
        argAttrs.set(ZTDialect::kRoleAttrName,
                     ArgRoleAttr::get(ctx, ArgRole::Accumulator));
        argAttrs.set(ZTDialect::kInitAttrName, InitAttr::getZeros(ctx));
        argAttrs.set(ZTDialect::kNameAttrName,
                     StringAttr::get(ctx, name + ".grad_acc"));
        unsigned accIndex = fn.getNumArguments();
        fn.insertArgument(accIndex, param.getType(),
                          argAttrs.getDictionary(ctx), loc);
        Value acc = body.getArgument(accIndex);
        // Right after the gradient: it dies into the accumulator at once.
        OpBuilder::InsertionGuard guard(builder);
        if (Operation *def = grad.getDefiningOp())
          builder.setInsertionPointAfter(def);
        grad = builder.create<AddOp>(loc, acc.getType(), acc, grad);
        attrs.set(ZTDialect::kTiedAttrName,
                  builder.getI64IntegerAttr(accIndex));
        attrs.set(ZTDialect::kNameAttrName,
                  StringAttr::get(ctx, name + ".grad_acc"));
      } else {
        attrs.set(ZTDialect::kNameAttrName,
                  StringAttr::get(ctx, name + ".grad"));
      }
      // Accumulated or not, the result is this parameter's gradient.
      attrs.set(ZTDialect::kGradientOfAttrName, builder.getI64IntegerAttr(i));
      results.push_back(grad);
      resultAttrs.push_back(attrs);
    }

    builder.create<func::ReturnOp>(loc, results);
    ret.erase();
    SmallVector<Type> resultTypes;
    for (Value v : results)
      resultTypes.push_back(v.getType());
    fn.setType(FunctionType::get(ctx, fn.getArgumentTypes(), resultTypes));
    SmallVector<DictionaryAttr> resultDicts;
    for (NamedAttrList &attrs : resultAttrs)
      resultDicts.push_back(attrs.getDictionary(ctx));
    fn.setAllResultAttrs(resultDicts);
    fn->setAttr(ZTDialect::kEntryAttrName,
                StringAttr::get(ctx, accumulate ? "microbatch" : "train_step"));

    // Forward code the loss does not use, and backward ops whose results
    // went unused, need no buffer.
    SmallVector<Operation *> all;
    for (Operation &op : body.without_terminator())
      all.push_back(&op);
    for (Operation *op : llvm::reverse(all))
      if (isOpTriviallyDead(op)) {
        forwardOps.erase(op);
        op->erase();
      }
    if (recompute)
      CheapRecompute(body, forwardOps).run();
    // Where the backward starts, for the memory timeline's kinds: the forward
    // ops come first, the backward follows.
    int64_t backwardStart = 0;
    for (Operation &op : body.without_terminator()) {
      if (!forwardOps.contains(&op))
        break;
      ++backwardStart;
    }
    fn->setAttr(ZTDialect::kBackwardStartAttrName,
                builder.getI64IntegerAttr(backwardStart));
    return success();
  }
};

} // namespace
