//===- AllowTF32.cpp - f32 products in TF32 -------------------------------===//
//
// zt-allow-tf32: every zt.matmul of f32 operands gets `tf32`, so the CUDA
// executor runs it on tensor cores with operands rounded to TF32 (PyTorch's
// set_float32_matmul_precision("high")). Run after zt-autodiff and
// zt-optimizer, so the gradients' products are marked too.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/BuiltinOps.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Transforms/Passes.h"

namespace zcc {
#define GEN_PASS_DEF_ZTALLOWTF32
#include "zcc/Transforms/Passes.h.inc"
} // namespace zcc

using namespace mlir;

namespace {

class ZTAllowTF32Pass : public zcc::impl::ZTAllowTF32Base<ZTAllowTF32Pass> {
public:
  using ZTAllowTF32Base::ZTAllowTF32Base;

  void runOnOperation() override {
    getOperation().walk([](zcc::zt::MatmulOp op) {
      auto type = cast<RankedTensorType>(op.getLhs().getType());
      if (type.getElementType().isF32())
        op.setTf32(true);
    });
  }
};

} // namespace
