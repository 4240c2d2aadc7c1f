//===- MixedPrecision.cpp - bf16 matrix products with f32 master weights --===//
//
// zt-mixed-precision{precision=bf16}: every f32 matrix product takes bf16
// operands (one zt.convert per value, just before its first product) and
// keeps its f32 result, summed in f32. Parameters, the loss, the
// normalizations, softmax and the optimizer stay f32. Running before
// zt-autodiff, it leaves the rest to the gradient rules: a conversion's
// gradient converts back, so the backward's products run in bf16 too and
// every parameter's gradient reaches the optimizer in f32. The products'
// saved operands are what a training step keeps most of, and they are
// stored in half the bytes.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Transforms/Passes.h"
#include "llvm/ADT/DenseMap.h"

namespace zcc {
#define GEN_PASS_DEF_ZTMIXEDPRECISION
#include "zcc/Transforms/Passes.h.inc"
} // namespace zcc

using namespace mlir;
using namespace zcc;
using namespace zcc::zt;

namespace {

struct MixedPrecisionPass
    : public zcc::impl::ZTMixedPrecisionBase<MixedPrecisionPass> {
  using ZTMixedPrecisionBase::ZTMixedPrecisionBase;

  void runOnOperation() override {
    if (precision == "f32")
      return;
    if (precision != "bf16") {
      getOperation().emitError()
          << "zt-mixed-precision: precision must be f32 or bf16, got '"
          << precision << "'";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      // A value's bf16 copy, made once before its first product: a weight
      // or an activation read by several products is converted once.
      DenseMap<Value, Value> converted;
      func.walk([&](MatmulOp op) {
        auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
        if (!lhsType.getElementType().isF32())
          return;
        OpBuilder b(op);
        for (unsigned i = 0; i < 2; ++i) {
          Value operand = op->getOperand(i);
          Value &copy = converted[operand];
          if (!copy) {
            auto type = cast<RankedTensorType>(operand.getType());
            copy = b.create<ConvertOp>(op.getLoc(), type.clone(b.getBF16Type()),
                                       operand);
          }
          op->setOperand(i, copy);
        }
      });
    }
  }
};

} // namespace
