//===- MixedPrecision.cpp - bf16 activations with f32 master weights ------===//
//
// zt-mixed-precision{precision=bf16}: the matrix products read bf16 operands
// and write bf16 results (summed in f32), and bf16 then flows through the
// ops that lose nothing by storing their result in bf16: element ops whose
// rounding is harmless (add, sub, mul, scale, the activations), dropout, the
// data moves (reshape, transpose, slice, broadcast, concat), attention (its
// logsumexp f32) and the normalizations (their statistics and affine
// parameters f32). An f32 operand beside a bf16 one comes in bf16 (a
// broadcast bias from its source's bf16 copy), so the residual stream is
// bf16 from its first bf16 branch on, as in llm.c. Everything else reads
// f32: a bf16 operand gets one zt.convert back before it (softmax,
// reductions, exp/log/sqrt/div, the embedding); the loss reads bf16 logits
// directly and computes in f32. Parameters stay f32
// (master weights): each gets one bf16 copy per step. Running before
// zt-autodiff, it leaves the rest to the gradient rules: a gradient has its
// value's type, and a conversion's gradient converts back, so every
// parameter's gradient reaches the optimizer in f32.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Runtime/Plan/OpTraits.h"
#include "zcc/Transforms/Passes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

namespace zcc {
#define GEN_PASS_DEF_ZTMIXEDPRECISION
#include "zcc/Transforms/Passes.h.inc"
} // namespace zcc

using namespace mlir;
using namespace zcc;
using namespace zcc::zt;

namespace {

Type elementOf(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type ? type.getElementType() : Type();
}
bool isBf16(Value v) {
  Type e = elementOf(v);
  return e && e.isBF16();
}
bool isF32(Value v) {
  Type e = elementOf(v);
  return e && e.isF32();
}

/// Ops that compute in f32 and store their result in the operands' type:
/// bf16 in, bf16 out, each result rounded once (kStoresBf16).
bool storesLikeOperands(Operation *op) {
  return traitsOf(op) & runtime::kStoresBf16;
}

class Rewriter {
public:
  explicit Rewriter(func::FuncOp func) : func(func) {}

  void run() {
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      ops.push_back(&op);
    for (Operation *op : ops)
      rewrite(op);
    // The f32 broadcasts a bf16 one replaced, once nothing else reads them
    // (erasing in any order gives the same IR).
    for (auto &[replaced, copy] : bf16Broadcasts)
      if (replaced->use_empty())
        replaced->erase();
  }

private:
  void rewrite(Operation *op) {
    if (auto product = dyn_cast<MatmulOp>(op)) {
      if (!isF32(product.getLhs()) && !isBf16(product.getLhs()))
        return;
      for (unsigned i = 0; i < 2; ++i)
        op->setOperand(i, bf16Of(op->getOperand(i), op));
      setElement(product.getResult(), bf16());
      return;
    }
    if (traitsOf(op) & runtime::kReadsBf16)
      return; // bf16 logits are read directly, the loss is f32
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      auto results = func.getFunctionType().getResults();
      for (auto [i, v] : llvm::enumerate(op->getOperands()))
        if (isBf16(v) && v.getType() != results[i])
          op->setOperand(i, f32Of(v, op));
      return;
    }
    bool anyBf16 = llvm::any_of(op->getOperands(), isBf16);
    if (!anyBf16)
      return;
    if (!storesLikeOperands(op)) {
      toF32(op);
      return;
    }
    if (traitsOf(op) & runtime::kAffineF32) {
      // A normalization: bf16 activations in and out, its affine
      // parameters (and its statistics) f32.
      if (!isBf16(op->getOperand(0))) {
        toF32(op);
        return;
      }
      for (OpOperand &use : llvm::drop_begin(op->getOpOperands()))
        if (isBf16(use.get()))
          use.set(f32Of(use.get(), op));
      setElement(op->getResult(0), bf16());
      return;
    }
    // f32 operands beside bf16 ones come in bf16: a broadcast (a bias, a
    // constant) from its source's bf16 copy, anything else through one
    // conversion (so the residual stream is bf16 from its first bf16
    // branch on).
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      if (!isF32(v))
        continue;
      auto broadcast = v.getDefiningOp<BroadcastInDimOp>();
      use.set(broadcast && isF32(broadcast.getOperand())
                  ? bf16Broadcast(broadcast, op)
                  : bf16Of(v, op));
    }
    if (isF32(op->getResult(0))) // the stored result; others keep theirs
      setElement(op->getResult(0), bf16());
  }

  void toF32(Operation *op) {
    for (OpOperand &use : op->getOpOperands())
      if (isBf16(use.get()))
        use.set(f32Of(use.get(), op));
  }

  Type bf16() { return BFloat16Type::get(func.getContext()); }
  static void setElement(Value v, Type element) {
    v.setType(cast<RankedTensorType>(v.getType()).clone(element));
  }

  /// `v` in bf16: itself, or its one conversion (placed before the first op
  /// that needs it, which comes before every later one).
  Value bf16Of(Value v, Operation *before) {
    if (isBf16(v))
      return v;
    return converted(v, bf16(), before);
  }
  Value f32Of(Value v, Operation *before) {
    return converted(v, Float32Type::get(func.getContext()), before);
  }
  Value converted(Value v, Type element, Operation *before) {
    Value &copy = conversions[{v, element}];
    if (!copy) {
      OpBuilder b(before);
      copy = b.create<ConvertOp>(
          v.getLoc(), cast<RankedTensorType>(v.getType()).clone(element), v);
    }
    return copy;
  }

  /// The broadcast of the operand's bf16 copy (converting the small source,
  /// not the broadcast result), made once per broadcast.
  Value bf16Broadcast(BroadcastInDimOp broadcast, Operation *before) {
    Value &copy = bf16Broadcasts[broadcast];
    if (!copy) {
      Value source = bf16Of(broadcast.getOperand(), before);
      OpBuilder b(before);
      copy = b.create<BroadcastInDimOp>(
          broadcast.getLoc(),
          cast<RankedTensorType>(broadcast.getType()).clone(bf16()), source,
          broadcast.getBroadcastDimensionsAttr());
    }
    return copy;
  }

  func::FuncOp func;
  DenseMap<std::pair<Value, Type>, Value> conversions;
  DenseMap<Operation *, Value> bf16Broadcasts;
};

struct MixedPrecisionPass
    : public zcc::impl::ZTMixedPrecisionBase<MixedPrecisionPass> {
  using ZTMixedPrecisionBase::ZTMixedPrecisionBase;

  void runOnOperation() override {
    std::string broken = zcc::options::check(
        ZCC_OPTIONS_OF_PASS(ZCC_ZT_MIXED_PRECISION_PASS_OPTIONS, *this));
    if (!broken.empty()) {
      getOperation().emitError() << "zt-mixed-precision " << broken;
      return signalPassFailure();
    }
    if (precision == "f32")
      return;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal())
        Rewriter(func).run();
  }
};

} // namespace
