//===- PlanMemory.cpp - lower entry points to the planned zplan form ------===//
//
// Extract buffer info (BufferLiveness) -> plan the arena with an algorithm
// from the planner's registry -> verify with the independent checker ->
// rewrite to slots and launches. A plan the checker rejects is a compiler
// error, never output.
//
//===----------------------------------------------------------------------===//

#include "EntryPoints.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "zcc/Dialect/ZPlan/ZPlanOps.h"
#include "zcc/Planner/Algorithms.h"
#include "zcc/Runtime/Plan/OpTraits.h"
#include "zcc/Planner/PlanChecker.h"
#include "zcc/Transforms/BufferLiveness.h"
#include "zcc/Transforms/Passes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <sstream>
#include <vector>

namespace zcc {
#define GEN_PASS_DEF_ZTPLANMEMORY
#include "zcc/Transforms/Passes.h.inc"
} // namespace zcc

using namespace mlir;
using namespace zcc;
using namespace zcc::zt;
namespace planner = zcc::planner;

namespace {

MemRefType memrefOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return MemRefType::get(tensor.getShape(), tensor.getElementType());
}

/// A tensor of the persistent region, shared by every entry by name.
struct PersistentTensor {
  Type type;
  Attribute init;
  int64_t offset = 0;
};

/// A name for an arena slot: the defining op's location name, if it has one
/// (`loc("saved")`), so tests and reports can point at a value.
StringAttr slotName(Value root) {
  if (!root)
    return {};
  if (auto name = dyn_cast<NameLoc>(root.getLoc()))
    return name.getName();
  return {};
}

/// What an input or output slot holds, for the runtime: it writes the step
/// itself, feeds inputs and labels, and reports the loss.
zplan::TensorRoleAttr slotRole(func::FuncOp fn, const LiveBuffer &buffer) {
  MLIRContext *ctx = fn.getContext();
  if (buffer.kind == MemoryKind::Input) {
    std::optional<ArgRole> role = argRole(fn, buffer.argIndex);
    return zplan::TensorRoleAttr::get(
        ctx, role == ArgRole::Label  ? zplan::TensorRole::Label
             : role == ArgRole::Step ? zplan::TensorRole::Step
                                     : zplan::TensorRole::Input);
  }
  if (buffer.kind == MemoryKind::Output)
    return zplan::TensorRoleAttr::get(
        ctx, entryKind(fn) == "predict" ? zplan::TensorRole::Output
             : resultArgIndex(fn, buffer.resultIndex,
                              ZTDialect::kGradientOfAttrName)
                 ? zplan::TensorRole::Gradient
                 : zplan::TensorRole::Loss);
  return {};
}

struct ZTPlanMemoryPass : public zcc::impl::ZTPlanMemoryBase<ZTPlanMemoryPass> {
  using ZTPlanMemoryBase::ZTPlanMemoryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string broken = zcc::options::check(
        ZCC_OPTIONS_OF_PASS(ZCC_ZT_PLAN_MEMORY_PASS_OPTIONS, *this));
    if (!broken.empty()) {
      module.emitError() << "zt-plan-memory " << broken;
      return signalPassFailure();
    }
    if (!planner::findPlannerAlgorithm(algorithm)) {
      std::string names;
      for (const planner::PlannerAlgorithm &a : planner::plannerAlgorithms())
        names += (names.empty() ? "" : ", ") + std::string(a.name);
      module.emitError() << "zt-plan-memory option 'algorithm': unknown '"
                         << algorithm << "'; expected one of " << names;
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> entries;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!entryKind(fn).empty())
        entries.push_back(fn);
    if (entries.empty()) {
      module.emitError()
          << "zt-plan-memory found no entry point: run zt-autodiff first";
      return signalPassFailure();
    }
    std::vector<BufferLiveness> analyses;
    for (func::FuncOp fn : entries) {
      FailureOr<BufferLiveness> live =
          BufferLiveness::compute(fn, inPlace, plantInPlaceBug, alignment,
                                  attentionViews);
      if (failed(live))
        return signalPassFailure();
      analyses.push_back(std::move(*live));
    }
    if (failed(layOutPersistent(entries, analyses)))
      return signalPassFailure();
    int64_t arenaSize = 0;
    for (auto [index, live] : llvm::enumerate(analyses)) {
      FailureOr<int64_t> arena = lowerEntry(entries[index], live);
      if (failed(arena))
        return signalPassFailure();
      arenaSize = std::max(arenaSize, *arena);
    }
    for (func::FuncOp fn : entries)
      fn.erase();
    Builder b(&getContext());
    module->setAttr("zplan.arena_size", b.getI64IntegerAttr(arenaSize));
    module->setAttr("zplan.persistent_size",
                    b.getI64IntegerAttr(persistentSize));
    module->setAttr("zplan.constant_size", b.getI64IntegerAttr(constantSize));
    module->setAttr("zplan.alignment", b.getI64IntegerAttr(alignment));
  }

  /// One layout of the persistent region for all entries, in order of first
  /// appearance; a name used twice must mean the same tensor.
  LogicalResult layOutPersistent(ArrayRef<func::FuncOp> entries,
                                 ArrayRef<BufferLiveness> analyses) {
    for (auto [index, live] : llvm::enumerate(analyses)) {
      func::FuncOp fn = entries[index];
      for (const LiveBuffer &buffer : live.getBuffers()) {
        if (buffer.kind != MemoryKind::Persistent)
          continue;
        Type type = buffer.root.getType();
        Attribute init =
            fn.getArgAttr(buffer.argIndex, ZTDialect::kInitAttrName);
        auto [it, inserted] =
            persistent.try_emplace(buffer.name, PersistentTensor{type, init});
        if (inserted) {
          it->second.offset = persistentSize;
          persistentSize =
              planner::alignUp(persistentSize + tensorBytes(type), alignment);
          continue;
        }
        if (it->second.type != type || it->second.init != init)
          return fn.emitOpError()
                 << "argument #" << buffer.argIndex << " ('" << buffer.name
                 << "') differs in type or initializer from the persistent "
                    "tensor of that name in an earlier entry";
      }
    }
    return success();
  }

  /// Plans `fn`'s arena, replaces it with a zplan.entry, and returns the
  /// arena bytes it needs.
  /// The part of the step an op belongs to, for the memory timeline:
  /// update (the optimizer's updates, their clipping's sums and
  /// learning-rate schedule, every op of an apply entry),
  /// recompute (a forward op copied into the backward),
  /// backward (from zt-autodiff's zt.backward_start on), else none (the
  /// forward).
  static std::optional<zplan::Phase>
  phaseOf(func::FuncOp fn, const BufferLiveness &live, Operation *op) {
    if ((traitsOf(op) & runtime::kUpdate) || entryKind(fn) == "apply")
      return zplan::Phase::Update;
    // The learning rate the schedule gives, returned as `lr`.
    if (isa<ScaleOp>(op) && op->getOperand(0).getDefiningOp<LrScheduleOp>())
      return zplan::Phase::Update;
    if (op->hasAttr(ZTDialect::kRecomputeAttrName))
      return zplan::Phase::Recompute;
    auto start =
        fn->getAttrOfType<IntegerAttr>(ZTDialect::kBackwardStartAttrName);
    if (start && live.getPosition(op) >= start.getInt())
      return zplan::Phase::Backward;
    return std::nullopt;
  }

  FailureOr<int64_t> lowerEntry(func::FuncOp fn, const BufferLiveness &live) {
    ArrayRef<LiveBuffer> buffers = live.getBuffers();
    planner::Problem problem;
    SmallVector<int> requestOf(buffers.size(), -1);
    int64_t noReuse = 0;
    for (auto [id, buffer] : llvm::enumerate(buffers)) {
      if (buffer.kind != MemoryKind::Arena)
        continue;
      requestOf[id] = problem.buffers.size();
      planner::BufferRequest request;
      request.id = id;
      request.lower = buffer.first;
      request.upper = buffer.last;
      request.size = buffer.bytes;
      request.alignment = alignment;
      problem.buffers.push_back(request);
      noReuse += planner::alignUp(buffer.bytes, alignment);
    }
    planner::PlanOptions options;
    options.timeLimitSeconds = plannerTimeLimit;
    options.nodeLimit = static_cast<uint64_t>(plannerNodeLimit);
    planner::CheckedRun run = planner::runChecked(
        *planner::findPlannerAlgorithm(algorithm), problem, options);
    if (!run.violation.empty())
      return fn.emitOpError()
             << "memory plan rejected by the independent checker (a planner "
                "bug; nothing was written): "
             << run.violation;
    const planner::Plan &plan = run.outcome.plan;
    if (run.outcome.timeLimited) {
      // Nodes give every machine the same plan; the clock does not. Ranks
      // that compile their own plans must agree on it (plan hash at load).
      std::ostringstream limits;
      limits << "its time limit (" << static_cast<double>(plannerTimeLimit)
             << " s)";
      if (plannerNodeLimit)
        limits << " before its node limit ("
               << static_cast<int64_t>(plannerNodeLimit)
               << " nodes)";
      const int64_t lower = run.outcome.lowerBound;
      std::string where = "at the lower bound";
      if (plan.arenaSize > lower)
        where = llvm::formatv("{0:F2}% above the lower bound",
                              100.0 * (plan.arenaSize - lower) /
                                  std::max<int64_t>(lower, 1))
                    .str();
      fn.emitWarning() << "memory planning of '" << fn.getName()
                       << "' stopped at " << limits.str() << ", " << where
                       << ": the plan may differ on another machine or a "
                          "busier one; raise the planner's time limit or "
                          "lower its node limit (zcc --planner-time-limit, "
                          "--planner-node-limit) for the same plan everywhere";
    }

    std::optional<zplan::EntryKind> kind =
        zplan::symbolizeEntryKind(entryKind(fn));
    if (!kind)
      return fn.emitOpError() << "has no entry kind (zt.entry), so it cannot "
                                 "be planned as an entry point";
    OpBuilder b(fn);
    auto entry = b.create<zplan::EntryOp>(fn.getLoc(), fn.getName(), *kind,
                                          plan.arenaSize,
                                          run.outcome.lowerBound, noReuse);
    Block *body = b.createBlock(&entry.getBody());
    b.setInsertionPointToStart(body);

    // Input and output slots are laid out in order, per entry.
    int64_t inputSize = 0, outputSize = 0;
    SmallVector<Value> slots(buffers.size());
    for (auto [id, buffer] : llvm::enumerate(buffers)) {
      // A bucket is placed by the planner but is no tensor's slot: its parts
      // are, side by side at its offset.
      if (!buffer.parts.empty())
        continue;
      // An output is typed like its result, which may be a reshape of the
      // value computed into it (its root), or a copy.
      Type type;
      if (buffer.kind == MemoryKind::Output)
        type = fn.getResultTypes()[buffer.resultIndex];
      else
        type = buffer.root.getType();
      int64_t offset = 0;
      zplan::Region region;
      DenseI64ArrayAttr liveAttr;
      StringAttr name;
      if (!buffer.name.empty())
        name = b.getStringAttr(buffer.name);
      Attribute init;
      int64_t size = buffer.bytes;
      switch (buffer.kind) {
      case MemoryKind::ArenaPart:
        // Sized to the next part, so that a bucket's parts tile it and the
        // runtime finds them one contiguous range.
        region = zplan::Region::Arena;
        offset = plan.offsets[requestOf[buffer.bucket]] + buffer.bucketOffset;
        if (!buffers[buffer.bucket].dense)
          size = planner::alignUp(buffer.bytes, alignment);
        liveAttr = b.getDenseI64ArrayAttr({buffer.first, buffer.last});
        name = slotName(buffer.root);
        break;
      case MemoryKind::Arena:
        region = zplan::Region::Arena;
        offset = plan.offsets[requestOf[id]];
        liveAttr = b.getDenseI64ArrayAttr({buffer.first, buffer.last});
        name = slotName(buffer.root);
        break;
      case MemoryKind::Persistent: {
        region = zplan::Region::Persistent;
        const PersistentTensor &tensor = persistent.find(buffer.name)->second;
        offset = tensor.offset;
        init = tensor.init;
        break;
      }
      case MemoryKind::Input:
        region = zplan::Region::Input;
        offset = inputSize;
        inputSize = planner::alignUp(inputSize + buffer.bytes, alignment);
        break;
      case MemoryKind::Output:
        region = zplan::Region::Output;
        offset = outputSize;
        outputSize = planner::alignUp(outputSize + buffer.bytes, alignment);
        break;
      case MemoryKind::Constant:
        region = zplan::Region::Constant;
        offset = constantSize;
        constantSize = planner::alignUp(constantSize + buffer.bytes, alignment);
        init = cast<ConstantOp>(buffer.root.getDefiningOp()).getValue();
        name = slotName(buffer.root);
        break;
      }
      slots[id] = b.create<zplan::SlotOp>(fn.getLoc(), memrefOf(type), region,
                                          offset, size, liveAttr, name,
                                          slotRole(fn, buffer), init);
    }

    // Every zt value as a memref: its buffer's slot, or a view of it when
    // the value's shape differs (reshapes; updates written in place).
    DenseMap<Value, Value> memrefs;
    auto memrefFor = [&](Value v) -> Value {
      auto it = memrefs.find(v);
      if (it != memrefs.end())
        return it->second;
      Value slot = slots[live.getBufferId(v)];
      Value result = slot;
      if (const ViewLayout *layout = live.viewLayout(v))
        result = b.create<zplan::StridedViewOp>(
            fn.getLoc(), memrefOf(v.getType()), slot,
            b.getI64IntegerAttr(layout->offset),
            b.getDenseI64ArrayAttr(layout->strides));
      else if (slot.getType() != memrefOf(v.getType()))
        result =
            b.create<zplan::ViewOp>(fn.getLoc(), memrefOf(v.getType()), slot);
      memrefs[v] = result;
      return result;
    };
    for (Operation *op : live.getSchedule()) {
      if (isa<ReshapeOp>(op) || live.isStridedView(op)) {
        // An attention view is made where a launch reads or writes it
        // (the slices and reshapes on the way to it are none).
        if (!live.viewLayout(op->getResult(0)))
          memrefFor(op->getResult(0));
        continue;
      }
      if (live.isBroadcastView(op)) {
        // The operand read with stride 0 along the repeated dimensions.
        auto broadcast = cast<BroadcastInDimOp>(op);
        auto from = cast<RankedTensorType>(broadcast.getOperand().getType());
        auto to = cast<RankedTensorType>(broadcast.getResult().getType());
        SmallVector<int64_t> strides(to.getRank(), 0);
        int64_t stride = 1;
        ArrayRef<int64_t> dims = broadcast.getBroadcastDimensions();
        for (int64_t i = from.getRank() - 1; i >= 0; --i) {
          if (from.getDimSize(i) != 1)
            strides[dims[i]] = stride;
          stride *= from.getDimSize(i);
        }
        memrefs[broadcast.getResult()] = b.create<zplan::BroadcastViewOp>(
            op->getLoc(), memrefOf(to), memrefFor(broadcast.getOperand()),
            b.getDenseI64ArrayAttr(strides));
        continue;
      }
      if (live.getBuffers()[live.getBufferId(op->getResult(0))].kind ==
          MemoryKind::Constant)
        continue; // data the plan carries: nothing to run
      SmallVector<Value> inputs, outputs;
      for (Value operand : op->getOperands())
        inputs.push_back(memrefFor(operand));
      for (Value result : op->getResults())
        outputs.push_back(memrefFor(result));
      std::optional<zplan::Phase> phase = phaseOf(fn, live, op);
      b.create<zplan::LaunchOp>(
          op->getLoc(), op->getName().stripDialect(), inputs, outputs,
          kernelParams(op),
          phase ? zplan::PhaseAttr::get(b.getContext(), *phase)
                : zplan::PhaseAttr());
    }
    // Copies at the return: outputs first, since a tied copy may overwrite
    // an argument another output returns.
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    for (bool tied : {false, true}) {
      for (auto [r, placement] : llvm::enumerate(live.getResults())) {
        if (!placement.copyFrom ||
            tied != static_cast<bool>(
                        resultArgIndex(fn, r, ZTDialect::kTiedAttrName)))
          continue;
        Value from = memrefFor(ret.getOperand(r));
        Value to = slots[placement.buffer];
        if (to.getType() != from.getType())
          to = b.create<zplan::ViewOp>(fn.getLoc(), from.getType(), to);
        b.create<zplan::LaunchOp>(fn.getLoc(), "copy", ValueRange{from},
                                  ValueRange{to}, b.getDictionaryAttr({}),
                                  zplan::PhaseAttr());
      }
    }
    return plan.arenaSize;
  }

  llvm::StringMap<PersistentTensor> persistent;
  int64_t persistentSize = 0;
  int64_t constantSize = 0;
};

} // namespace
