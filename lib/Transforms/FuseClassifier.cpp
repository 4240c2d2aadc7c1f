//===- FuseClassifier.cpp - the loss and its gradient in one kernel -------===//
//
// zt-fuse-classifier: zt.softmax_cross_entropy and its gradient read the
// same logits, each computing every row's max and exp-sum; the largest
// tensor of a language model's step is read twice for it. One
// zt.softmax_cross_entropy_fused at the loss's place computes both, so the
// logits die there and the gradient is written over them. The gradient's
// scale must be known before the loss: zt-autodiff's seed is a constant
// after the forward, moved up with whatever it is computed from (a scale
// computed from the loss itself leaves the pair alone).
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Transforms/Passes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <algorithm>

namespace zcc {
#define GEN_PASS_DEF_ZTFUSECLASSIFIER
#include "zcc/Transforms/Passes.h.inc"
} // namespace zcc

using namespace mlir;
using namespace zcc::zt;

namespace {

class ClassifierFuser {
public:
  explicit ClassifierFuser(func::FuncOp fn) : fn(fn), body(fn.getBody().front()) {
    renumber();
    if (auto start =
            fn->getAttrOfType<IntegerAttr>(ZTDialect::kBackwardStartAttrName))
      backwardStart = start.getInt();
  }

  void run() {
    SmallVector<SoftmaxCrossEntropyGradOp> grads;
    for (auto grad : body.getOps<SoftmaxCrossEntropyGradOp>())
      grads.push_back(grad);
    if (grads.empty())
      return;
    // The forward ops, by identity: the ops moved before a loss and the
    // fused op join them, so the backward's start is recounted after.
    llvm::DenseSet<Operation *> forward;
    for (Operation &op : body)
      if (backwardStart >= 0 && position[&op] < backwardStart)
        forward.insert(&op);
    bool changed = false;
    for (SoftmaxCrossEntropyGradOp grad : grads)
      changed |= fuse(grad, forward);
    if (!changed || backwardStart < 0)
      return;
    int64_t start = 0;
    for (Operation &op : body) {
      if (!forward.contains(&op))
        break;
      ++start;
    }
    fn->setAttr(ZTDialect::kBackwardStartAttrName,
                IntegerAttr::get(IntegerType::get(fn.getContext(), 64), start));
  }

private:
  void renumber() {
    position.clear();
    for (Operation &op : body)
      position[&op] = static_cast<int64_t>(position.size());
  }

  /// The loss of `grad`'s logits, labels and attributes, before it.
  SoftmaxCrossEntropyOp lossOf(SoftmaxCrossEntropyGradOp grad) {
    for (Operation *user : grad.getLogits().getUsers()) {
      auto loss = dyn_cast<SoftmaxCrossEntropyOp>(user);
      if (loss && loss.getLabels() == grad.getLabels() &&
          loss.getIgnoreIndexAttr() == grad.getIgnoreIndexAttr() &&
          loss.getLabelSmoothingAttr() == grad.getLabelSmoothingAttr() &&
          loss->getBlock() == &body && position[loss] < position[grad])
        return loss;
    }
    return {};
  }

  /// The ops after `loss` that `value` is computed from, in block order;
  /// false when one of them is the loss or has effects (they stay put).
  bool sliceAfter(Value value, Operation *loss,
                  SmallVectorImpl<Operation *> &slice) {
    llvm::DenseSet<Operation *> seen;
    SmallVector<Value> work{value};
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (!def || def->getBlock() != &body ||
          position[def] < position[loss] || !seen.insert(def).second)
        continue;
      if (def == loss || !isMemoryEffectFree(def) || def->getNumRegions())
        return false;
      slice.push_back(def);
      for (Value operand : def->getOperands())
        work.push_back(operand);
    }
    llvm::sort(slice, [&](Operation *a, Operation *b) {
      return position[a] < position[b];
    });
    return true;
  }

  bool fuse(SoftmaxCrossEntropyGradOp grad,
            llvm::DenseSet<Operation *> &forward) {
    SoftmaxCrossEntropyOp loss = lossOf(grad);
    if (!loss)
      return false;
    // Logits another op reads stay alive past the loss: the two kernels
    // then cost no more memory than one.
    for (Operation *user : grad.getLogits().getUsers())
      if (user != loss && user != grad)
        return false;
    SmallVector<Operation *> slice;
    if (!sliceAfter(grad.getLossGrad(), loss, slice))
      return false;
    for (Operation *op : slice) {
      op->moveBefore(loss);
      forward.insert(op);
    }
    OpBuilder b(loss);
    auto fused = b.create<SoftmaxCrossEntropyFusedOp>(
        FusedLoc::get(fn.getContext(), {loss.getLoc(), grad.getLoc()}),
        TypeRange{loss.getType(), grad.getType()}, loss.getLogits(),
        loss.getLabels(), grad.getLossGrad(), loss.getIgnoreIndexAttr(),
        loss.getLabelSmoothingAttr());
    forward.insert(fused);
    loss.getResult().replaceAllUsesWith(fused.getLoss());
    grad.getResult().replaceAllUsesWith(fused.getLogitsGrad());
    forward.erase(loss);
    forward.erase(grad);
    grad.erase();
    loss.erase();
    renumber();
    return true;
  }

  func::FuncOp fn;
  Block &body;
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t backwardStart = -1;
};

class ZTFuseClassifierPass
    : public zcc::impl::ZTFuseClassifierBase<ZTFuseClassifierPass> {
public:
  using ZTFuseClassifierBase::ZTFuseClassifierBase;

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (fn.getBody().hasOneBlock())
        ClassifierFuser(fn).run();
  }
};

} // namespace
