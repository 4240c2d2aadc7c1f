//===- ZPlanOps.cpp - zplan dialect verifiers -----------------------------===//
//
// The verifiers state what makes a plan well formed on its own (sizes,
// regions, lifetimes); that slots do not overlap is the planner checker's
// job, run by zt-plan-memory and again by the runtime's loader.
//
//===----------------------------------------------------------------------===//

#include "zcc/Dialect/ZPlan/ZPlanOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace zcc::zplan;

#include "zcc/Dialect/ZPlan/ZPlanDialect.cpp.inc"
#include "zcc/Dialect/ZPlan/ZPlanEnums.cpp.inc"

void ZPlanDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "zcc/Dialect/ZPlan/ZPlanOps.cpp.inc"
      >();
}

LogicalResult ZPlanDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attribute) {
  StringRef name = attribute.getName().strref();
  static const StringRef sizes[] = {"zplan.arena_size", "zplan.persistent_size",
                                    "zplan.constant_size", "zplan.alignment"};
  if (!llvm::is_contained(sizes, name))
    return op->emitError() << "unknown zplan attribute '" << name << "'";
  if (!isa<ModuleOp>(op))
    return op->emitError() << "'" << name << "' is only valid on a module";
  auto value = dyn_cast<IntegerAttr>(attribute.getValue());
  if (!value || !value.getType().isInteger(64) || value.getInt() < 0)
    return op->emitError() << "'" << name
                           << "' must be a non-negative i64, got "
                           << attribute.getValue();
  if (name == "zplan.alignment" && !llvm::isPowerOf2_64(value.getInt()))
    return op->emitError() << "'zplan.alignment' must be a power of two, got "
                           << value.getInt();
  return success();
}

static int64_t memrefBytes(MemRefType type) {
  return type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
}

LogicalResult EntryOp::verify() {
  if (getArena() < 0 || getLowerBound() < 0 || getNoReuse() < 0)
    return emitOpError() << "sizes must be non-negative";
  if (getLowerBound() > getArena())
    return emitOpError() << "arena = " << getArena()
                         << " is below its lower bound " << getLowerBound()
                         << ": no plan can use less than the peak of live "
                            "bytes";
  for (auto slot : getBody().getOps<SlotOp>())
    if (slot.getRegion() == Region::Arena &&
        slot.getOffset() + slot.getSize() > getArena())
      return slot.emitOpError()
             << "ends at byte " << slot.getOffset() + slot.getSize()
             << ", past the entry's arena of " << getArena() << " bytes";
  return success();
}

LogicalResult SlotOp::verify() {
  auto type = cast<MemRefType>(getBuffer().getType());
  if (getOffset() < 0)
    return emitOpError() << "offset must be non-negative, got " << getOffset();
  if (getSize() < memrefBytes(type))
    return emitOpError() << "size " << getSize() << " is smaller than the "
                         << memrefBytes(type) << " bytes of " << type;
  bool arena = getRegion() == Region::Arena;
  if (arena != static_cast<bool>(getLive()))
    return emitOpError() << (arena ? "an arena slot needs its lifetime 'live'"
                                   : "only arena slots have a lifetime");
  if (std::optional<ArrayRef<int64_t>> live = getLive())
    if (live->size() != 2 || (*live)[0] < 0 || (*live)[0] >= (*live)[1])
      return emitOpError() << "live must be [first, last] with 0 <= first < "
                              "last";
  if (std::optional<TensorRole> role = getRole()) {
    bool input = getRegion() == Region::Input;
    bool output = getRegion() == Region::Output;
    if (!input && !output)
      return emitOpError() << "only input and output slots have a role";
    bool forInput = *role == TensorRole::Input || *role == TensorRole::Label ||
                    *role == TensorRole::Step;
    bool forOutput = *role == TensorRole::Loss ||
                     *role == TensorRole::Gradient ||
                     *role == TensorRole::Output;
    if (input && !forInput)
      return emitOpError() << "an input slot's role is 'input', 'label' or "
                              "'step', got '"
                           << stringifyTensorRole(*role) << "'";
    if (output && !forOutput)
      return emitOpError() << "an output slot's role is 'loss', "
                              "'gradient' or 'output', got '"
                           << stringifyTensorRole(*role) << "'";
  }
  if (Attribute init = getInitAttr()) {
    if (getRegion() == Region::Constant) {
      auto data = dyn_cast<ElementsAttr>(init);
      if (!data || data.getNumElements() != type.getNumElements())
        return emitOpError() << "constant data must have "
                             << type.getNumElements() << " elements";
    } else if (getRegion() != Region::Persistent) {
      return emitOpError() << "only persistent and constant slots have an "
                              "initial value";
    }
  } else if (getRegion() == Region::Constant) {
    return emitOpError() << "a constant slot needs its data in 'init'";
  }
  return success();
}

LogicalResult ViewOp::verify() {
  int64_t from = memrefBytes(cast<MemRefType>(getSource().getType()));
  int64_t to = memrefBytes(cast<MemRefType>(getResult().getType()));
  if (from != to)
    return emitOpError() << "a view keeps the bytes: " << from << " vs " << to;
  return success();
}

/// A view through `strides` from `offset`: one step per result dimension,
/// none negative, its last element within the source.
static LogicalResult verifyStrided(Operation *op, Value sourceValue,
                                   Value resultValue,
                                   ArrayRef<int64_t> strides, int64_t offset) {
  auto source = cast<MemRefType>(sourceValue.getType());
  auto result = cast<MemRefType>(resultValue.getType());
  if (source.getElementType() != result.getElementType())
    return op->emitOpError() << "a view keeps the element type";
  if (static_cast<int64_t>(strides.size()) != result.getRank())
    return op->emitOpError()
           << "needs one stride per result dimension, got " << strides.size()
           << " for rank " << result.getRank();
  if (offset < 0)
    return op->emitOpError() << "the offset must not be negative";
  int64_t last = offset;
  for (auto [size, stride] : llvm::zip(result.getShape(), strides)) {
    if (stride < 0)
      return op->emitOpError() << "strides must not be negative";
    if (size > 0)
      last += (size - 1) * stride;
  }
  if (result.getNumElements() > 0 && last >= source.getNumElements())
    return op->emitOpError() << "reads element " << last
                             << " of a source of " << source.getNumElements();
  return success();
}

LogicalResult BroadcastViewOp::verify() {
  return verifyStrided(*this, getSource(), getResult(), getStrides(), 0);
}

LogicalResult StridedViewOp::verify() {
  return verifyStrided(*this, getSource(), getResult(), getStrides(),
                       getOffset());
}

LogicalResult LaunchOp::verify() {
  if (getKernel().empty())
    return emitOpError() << "needs a kernel name";
  if (getOutputs().empty())
    return emitOpError() << "must write at least one slot";
  return success();
}

#define GET_OP_CLASSES
#include "zcc/Dialect/ZPlan/ZPlanOps.cpp.inc"
