//===- FuseElementwise.cpp - chains of element ops as one kernel ----------===//
//
// zt-fuse-elementwise: a float element op (a row of ElementKernels.h with
// float operands, or zt.scale) that another such op reads is merged into
// that op; the merged tree becomes one zt.fused, a
// short program of rows run per element in one pass. The values between the
// steps never reach memory: no launch, no buffer, no read or write of them.
// Each step's value is rounded to the element type as the op stored it, so
// the result has the unfused chain's bits on every executor.
//
// A value other ops also read is written out as a further result (the
// pre-activation the backward reads), when they all run after the root.
//
// What it leaves alone, and why: a value read before the root (the group
// would compute it too late); ops of the forward and the backward together
// (the forward's operands would live into the backward); the learning
// rate's scale (the timeline's update phase); and a merge that would keep
// an operand alive past where it dies, unless nothing runs in between (so
// no peak grows).
//
//===----------------------------------------------------------------------===//

#include "EntryPoints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Runtime/Plan/Launch.h"
#include "zcc/Transforms/Passes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>
#include <memory>

namespace zcc {
#define GEN_PASS_DEF_ZTFUSEELEMENTWISE
#include "zcc/Transforms/Passes.h.inc"
} // namespace zcc

using namespace mlir;
using namespace zcc;
using namespace zcc::zt;

namespace {

/// Ops merged into one zt.fused: in block order, the last (the root) the
/// one whose result the rest of the function reads; `extras`, values of
/// the others that ops outside the group also read (further results).
struct Group {
  SmallVector<Operation *> ops;
  llvm::SetVector<Value> inputs; // read from outside the group
  SmallVector<Value> extras;
  Operation *root() const { return ops.back(); }
};

class Fuser {
public:
  explicit Fuser(func::FuncOp fn) : fn(fn) {
    Block &body = fn.getBody().front();
    for (Operation &op : body.without_terminator())
      position[&op] = position.size();
    position[body.getTerminator()] = position.size();
    if (auto start = fn->getAttrOfType<IntegerAttr>(
            ZTDialect::kBackwardStartAttrName))
      backwardStart = start.getInt();
  }

  /// Fuses every chain of the function; returns the ops it removed.
  int64_t run() {
    Block &body = fn.getBody().front();
    for (Operation &op : body.without_terminator())
      if (fusible(&op))
        grow(&op);
    int64_t removed = 0, removedForward = 0;
    for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
      auto it = groupOf.find(&op);
      if (it == groupOf.end() || it->second->root() != &op ||
          it->second->ops.size() < 2)
        continue;
      Group &group = *it->second;
      if (forward(&op))
        removedForward += static_cast<int64_t>(group.ops.size()) - 1;
      removed += static_cast<int64_t>(group.ops.size()) - 1;
      rewrite(group);
    }
    if (backwardStart >= 0)
      fn->setAttr(ZTDialect::kBackwardStartAttrName,
                  IntegerAttr::get(IntegerType::get(fn.getContext(), 64),
                                   backwardStart - removedForward));
    return removed;
  }

private:
  bool forward(Operation *op) const {
    return backwardStart < 0 || position.lookup(op) < backwardStart;
  }

  static std::optional<runtime::KernelId> kernelOf(Operation *op) {
    if (!isa<ZTDialect>(op->getDialect()))
      return std::nullopt;
    return runtime::findKernel(op->getName().stripDialect());
  }
  static bool isDropout(Operation *op) {
    return kernelOf(op) == runtime::KernelId::Dropout;
  }
  /// The values a step reads: its operands, but dropout's step counter.
  static OperandRange valuesRead(Operation *op) {
    return isDropout(op) ? op->getOperands().take_front(1) : op->getOperands();
  }

  /// A float element row, zt.scale or zt.dropout with an f32 or bf16
  /// result, not the learning rate's scale (an operand an update op
  /// computed).
  static bool fusible(Operation *op) {
    if (op->getNumResults() != 1)
      return false;
    std::optional<runtime::KernelId> kernel = kernelOf(op);
    if (!kernel)
      return false;
    std::optional<runtime::ElementArity> arity = runtime::elementArity(*kernel);
    if (!(arity ? runtime::elementIsFloat(*arity)
                : *kernel == runtime::KernelId::Scale ||
                      *kernel == runtime::KernelId::Dropout))
      return false;
    Type element =
        cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
    if (!element.isF32() && !element.isBF16())
      return false;
    for (Value operand : valuesRead(op)) {
      if (operand.getType() != op->getResult(0).getType())
        return false;
      if (Operation *def = operand.getDefiningOp())
        if (traitsOf(def) & runtime::kUpdate)
          return false;
    }
    return true;
  }

  /// Starts `op`'s group and merges into it the groups of its operands'
  /// ops, nearest first, where the limits and the lifetimes allow.
  void grow(Operation *op) {
    auto owned = std::make_unique<Group>();
    Group &group = *owned;
    groups.push_back(std::move(owned));
    group.ops.push_back(op);
    for (Value operand : valuesRead(op))
      group.inputs.insert(operand);
    groupOf[op] = &group;

    SmallVector<Operation *> producers;
    for (Value operand : valuesRead(op)) {
      Operation *def = operand.getDefiningOp();
      if (!def || !groupOf.count(def) || groupOf[def]->root() != def ||
          llvm::is_contained(producers, def))
        continue;
      if (forward(def) != forward(op) ||
          def->hasAttr(ZTDialect::kRecomputeAttrName) !=
              op->hasAttr(ZTDialect::kRecomputeAttrName))
        continue;
      producers.push_back(def);
    }
    llvm::sort(producers, [&](Operation *a, Operation *b) {
      return position.lookup(a) > position.lookup(b);
    });
    for (Operation *producer : producers)
      merge(group, *groupOf[producer]);
  }

  /// Merges `from` (a producer's group) into `into`, when the limits and
  /// the lifetimes allow: every value of `from` read outside the merged
  /// group (a further result, then computed at `into`'s root) is read only
  /// after that root.
  void merge(Group &into, Group &from) {
    SmallVector<Operation *> ops(from.ops.begin(), from.ops.end());
    ops.append(into.ops.begin(), into.ops.end());
    llvm::sort(ops, [&](Operation *a, Operation *b) {
      return position.lookup(a) < position.lookup(b);
    });
    llvm::SmallPtrSet<Operation *, 16> members(ops.begin(), ops.end());
    const int64_t at = position.lookup(into.root());
    llvm::SetVector<Value> inputs, stepCounters;
    SmallVector<Value> extras;
    for (Operation *op : ops) {
      for (Value operand : valuesRead(op))
        if (!members.contains(operand.getDefiningOp()))
          inputs.insert(operand);
      if (isDropout(op))
        stepCounters.insert(op->getOperand(1));
      if (op == into.root())
        continue;
      bool outside = false;
      for (Operation *user : op->getResult(0).getUsers()) {
        if (members.contains(user))
          continue;
        if (position.lookup(user) <= at)
          return; // read before the merged group would compute it
        outside = true;
      }
      if (outside)
        extras.push_back(op->getResult(0));
    }
    if (inputs.size() > static_cast<size_t>(runtime::kMaxFusedInputs) ||
        ops.size() > static_cast<size_t>(runtime::kMaxFusedSteps) ||
        extras.size() + 1 > static_cast<size_t>(runtime::kMaxFusedOutputs) ||
        stepCounters.size() > 1)
      return;
    if (!lifetimesKept(into, from))
      return;
    into.ops = std::move(ops);
    into.inputs = std::move(inputs);
    into.extras = std::move(extras);
    for (Operation *op : from.ops)
      groupOf[op] = &into;
  }

  /// Whether running `from` at `into`'s root keeps every operand's lifetime:
  /// each operand of `from` is an argument, is read again at or after the
  /// root anyway, or nothing outside the two groups runs in between.
  bool lifetimesKept(const Group &into, const Group &from) const {
    int64_t at = position.lookup(into.root());
    bool adjacent = true;
    for (int64_t p = position.lookup(from.root()) + 1; p < at && adjacent;
         ++p)
      adjacent = llvm::any_of(into.ops, [&](Operation *op) {
        return position.lookup(op) == p;
      });
    if (adjacent)
      return true;
    for (Value v : from.inputs) {
      if (isa<BlockArgument>(v) || into.inputs.contains(v))
        continue;
      bool readLater = llvm::any_of(v.getUsers(), [&](Operation *user) {
        return position.lookup(user) >= at;
      });
      if (!readLater)
        return false;
    }
    return true;
  }

  /// Replaces the group with one zt.fused at its root.
  void rewrite(Group &group) {
    Operation *root = group.root();
    // Operands (values no op of the group defines; an earlier group's
    // root may have been replaced since) in the order the program first
    // reads them.
    llvm::SmallPtrSet<Operation *, 16> members(group.ops.begin(),
                                               group.ops.end());
    llvm::DenseMap<Value, int64_t> index;
    SmallVector<Value> inputs;
    Value stepCounter; // dropout's, after the operands
    for (Operation *op : group.ops) {
      for (Value operand : valuesRead(op))
        if (!members.contains(operand.getDefiningOp()) &&
            !index.count(operand)) {
          index[operand] = static_cast<int64_t>(inputs.size());
          inputs.push_back(operand);
        }
      if (isDropout(op))
        stepCounter = op->getOperand(1);
    }
    SmallVector<StringRef> ops;
    SmallVector<int64_t> args, seeds;
    SmallVector<double> numbers;
    for (auto [k, op] : llvm::enumerate(group.ops)) {
      StringRef name = op->getName().stripDialect();
      ops.push_back(name);
      for (Value operand : valuesRead(op))
        args.push_back(index.lookup(operand));
      FailureOr<runtime::Launch> launch =
          decodeLaunchOf(op, name, kernelParams(op));
      // The verifier accepted the op; its numbers decode.
      if (succeeded(launch)) {
        if (launch->kernel == runtime::KernelId::Scale) {
          numbers.push_back(launch->params.factor);
        } else if (launch->kernel == runtime::KernelId::Dropout) {
          numbers.push_back(launch->params.rate);
          seeds.push_back(launch->params.seed);
        } else {
          const runtime::ElementRow *row = runtime::elementRow(launch->kernel);
          for (int n = 0; n < row->paramCount; ++n)
            numbers.push_back(launch->params.elementParams[n]);
        }
      }
      index[op->getResult(0)] = static_cast<int64_t>(inputs.size() + k);
    }
    // Results in program order: the further ones, then the root's.
    SmallVector<Value> results(group.extras.begin(), group.extras.end());
    results.push_back(root->getResult(0));
    SmallVector<Type> types;
    SmallVector<int64_t> outputs;
    for (Value v : results) {
      types.push_back(v.getType());
      outputs.push_back(index.lookup(v));
    }
    if (stepCounter)
      inputs.push_back(stepCounter);
    OpBuilder b(root);
    auto fused = b.create<FusedOp>(root->getLoc(), types, inputs,
                                   b.getStrArrayAttr(ops),
                                   b.getDenseI64ArrayAttr(args),
                                   b.getDenseF64ArrayAttr(numbers),
                                   b.getDenseI64ArrayAttr(outputs),
                                   b.getDenseI64ArrayAttr(seeds));
    if (llvm::all_of(group.ops, [](Operation *op) {
          return op->hasAttr(ZTDialect::kRecomputeAttrName);
        }))
      fused->setAttr(ZTDialect::kRecomputeAttrName, b.getUnitAttr());
    for (auto [value, result] : llvm::zip(results, fused.getResults()))
      value.replaceAllUsesWith(result);
    for (Operation *op : llvm::reverse(group.ops))
      op->erase();
  }

  func::FuncOp fn;
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t backwardStart = -1;
  SmallVector<std::unique_ptr<Group>> groups;
  llvm::DenseMap<Operation *, Group *> groupOf;
};

class ZTFuseElementwisePass
    : public zcc::impl::ZTFuseElementwiseBase<ZTFuseElementwisePass> {
public:
  using ZTFuseElementwiseBase::ZTFuseElementwiseBase;

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (fn.getBody().hasOneBlock())
        Fuser(fn).run();
  }
};

} // namespace
