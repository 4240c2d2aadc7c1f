//===- PlanExport.cpp - zplan IR to runtime::Plan -------------------------===//

#include "zcc/Target/PlanExport.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "zcc/Dialect/ZPlan/ZPlanOps.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <cstring>

using namespace mlir;
using namespace zcc;
namespace rt = zcc::runtime;

namespace {

FailureOr<rt::DType> dtypeOf(Location loc, Type element) {
  if (std::optional<rt::DType> dtype = zt::runtimeDType(element))
    return *dtype;
  return emitError(loc) << "the plan format holds f32, bf16, i32, i64 and "
                           "bool tensors; got element type "
                        << element;
}

FailureOr<rt::TensorType> typeOf(Location loc, Type type) {
  auto memref = cast<MemRefType>(type);
  FailureOr<rt::DType> dtype = dtypeOf(loc, memref.getElementType());
  if (failed(dtype))
    return failure();
  ArrayRef<int64_t> shape = memref.getShape();
  return rt::TensorType{*dtype,
                        std::vector<int64_t>(shape.begin(), shape.end())};
}

/// A zplan enum as the runtime's: both come from one list (PlanEnums.h),
/// whose values are the file's.
template <typename Runtime, typename ZPlan> Runtime runtimeEnum(ZPlan value) {
  return static_cast<Runtime>(static_cast<uint32_t>(value));
}

FailureOr<rt::Initializer> initializerOf(zplan::SlotOp slot) {
  auto init = dyn_cast_or_null<zt::InitAttr>(slot.getInitAttr());
  if (!init)
    return slot.emitOpError() << "a persistent slot needs a #zt.init";
  rt::Initializer result;
  switch (init.getKind()) {
  case zt::InitKind::Zeros:
    result.kind = rt::InitKind::Zeros;
    break;
  case zt::InitKind::Ones:
    result.kind = rt::InitKind::Ones;
    break;
  case zt::InitKind::Constant:
    result.kind = rt::InitKind::Constant;
    break;
  case zt::InitKind::Normal:
    result.kind = rt::InitKind::Normal;
    break;
  case zt::InitKind::Uniform:
    result.kind = rt::InitKind::Uniform;
    break;
  case zt::InitKind::Given:
    result.kind = rt::InitKind::Given;
    break;
  }
  result.first = init.getFirst().convertToDouble();
  result.second = init.getSecond().convertToDouble();
  return result;
}

/// Writes a constant slot's data into the constant region, little-endian.
LogicalResult writeConstant(zplan::SlotOp slot, std::vector<uint8_t> &out) {
  auto data = dyn_cast<DenseElementsAttr>(slot.getInitAttr());
  if (!data)
    return slot.emitOpError() << "constant data must be dense elements";
  uint8_t *at = out.data() + slot.getOffset();
  Type element = data.getElementType();
  int64_t i = 0;
  if (element.isF32()) {
    for (const APFloat &v : data.getValues<APFloat>()) {
      float f = v.convertToFloat();
      std::memcpy(at + 4 * i++, &f, 4);
    }
  } else if (element.isSignlessInteger(32)) {
    for (const APInt &v : data.getValues<APInt>()) {
      int32_t x = static_cast<int32_t>(v.getSExtValue());
      std::memcpy(at + 4 * i++, &x, 4);
    }
  } else if (element.isSignlessInteger(64)) {
    for (const APInt &v : data.getValues<APInt>()) {
      int64_t x = v.getSExtValue();
      std::memcpy(at + 8 * i++, &x, 8);
    }
  } else {
    return slot.emitOpError()
           << "constant of unsupported element type " << element;
  }
  return success();
}

uint64_t i64Attr(ModuleOp module, StringRef name) {
  if (auto attr = module->getAttrOfType<IntegerAttr>(name))
    return static_cast<uint64_t>(attr.getInt());
  return 0;
}

} // namespace

std::string zcc::formatLocation(Location loc) {
  FileLineColLoc file = loc->findInstanceOf<FileLineColLoc>();
  if (!file)
    return "";
  std::string text =
      file.getFilename().str() + ":" + std::to_string(file.getLine());
  if (file.getColumn() != 0)
    text += ":" + std::to_string(file.getColumn());
  return text;
}

FailureOr<rt::Plan> zcc::exportPlan(ModuleOp module) {
  rt::Plan plan;
  if (!module->getAttrOfType<IntegerAttr>("zplan.arena_size"))
    return module.emitError()
           << "not a planned module (no zplan.arena_size): run the "
              "zcc-train-step pipeline first";
  plan.alignment = i64Attr(module, "zplan.alignment");
  plan.arenaSize = i64Attr(module, "zplan.arena_size");
  plan.persistentSize = i64Attr(module, "zplan.persistent_size");
  plan.constantSize = i64Attr(module, "zplan.constant_size");
  plan.constants.assign(plan.constantSize, 0);
  if (auto sharded = module->getAttrOfType<ArrayAttr>("zt.sharded_states"))
    for (Attribute item : sharded) {
      auto dict = cast<DictionaryAttr>(item);
      rt::ShardedState state;
      state.name = dict.getAs<StringAttr>("name").str();
      state.suffix = dict.getAs<StringAttr>("suffix").str();
      state.ranks =
          static_cast<uint32_t>(dict.getAs<IntegerAttr>("ranks").getInt());
      for (Attribute param : dict.getAs<ArrayAttr>("params"))
        state.params.push_back(cast<StringAttr>(param).str());
      for (int64_t offset :
           dict.getAs<DenseI64ArrayAttr>("offsets").asArrayRef())
        state.offsets.push_back(static_cast<uint64_t>(offset));
      plan.sharded.push_back(std::move(state));
    }
  llvm::StringMap<unsigned> persistentIndex;

  for (auto entryOp : module.getOps<zplan::EntryOp>()) {
    rt::Entry entry;
    entry.name = entryOp.getSymName().str();
    entry.kind = runtimeEnum<rt::EntryKind>(entryOp.getKind());
    entry.arenaSize = entryOp.getArena();
    entry.lowerBound = entryOp.getLowerBound();
    entry.noReuseSize = entryOp.getNoReuse();
    llvm::DenseMap<Value, uint32_t> tensorOf;
    for (Operation &op : entryOp.getBody().front()) {
      if (auto slot = dyn_cast<zplan::SlotOp>(op)) {
        FailureOr<rt::TensorType> type = typeOf(slot.getLoc(), slot.getType());
        if (failed(type))
          return failure();
        rt::Buffer buffer{runtimeEnum<rt::Region>(slot.getRegion()),
                          static_cast<uint64_t>(slot.getOffset()),
                          static_cast<uint64_t>(slot.getSize())};
        uint64_t end = buffer.offset + buffer.size;
        if (buffer.region == rt::Region::Input)
          entry.inputSize = std::max(entry.inputSize, end);
        if (buffer.region == rt::Region::Output)
          entry.outputSize = std::max(entry.outputSize, end);
        rt::Tensor tensor;
        tensor.name = slot.getName().value_or("").str();
        tensor.type = *type;
        tensor.buffer = static_cast<uint32_t>(entry.buffers.size());
        if (std::optional<zplan::TensorRole> role = slot.getRole())
          tensor.role = runtimeEnum<rt::TensorRole>(*role);
        if (buffer.region == rt::Region::Persistent) {
          FailureOr<rt::Initializer> init = initializerOf(slot);
          if (failed(init))
            return failure();
          auto [it, inserted] = persistentIndex.try_emplace(
              tensor.name, static_cast<unsigned>(plan.persistent.size()));
          if (inserted)
            plan.persistent.push_back(
                {tensor.name, *type, buffer.offset, *init});
        }
        if (buffer.region == rt::Region::Constant &&
            failed(writeConstant(slot, plan.constants)))
          return failure();
        entry.buffers.push_back(buffer);
        tensorOf[slot.getBuffer()] = entry.tensors.size();
        entry.tensors.push_back(std::move(tensor));
        continue;
      }
      if (auto view = dyn_cast<zplan::ViewOp>(op)) {
        FailureOr<rt::TensorType> type = typeOf(view.getLoc(), view.getType());
        if (failed(type))
          return failure();
        const rt::Tensor &source = entry.tensors[tensorOf.at(view.getSource())];
        rt::Tensor tensor;
        tensor.type = *type;
        tensor.buffer = source.buffer;
        // A view of a named persistent tensor keeps its name (the loader
        // matches persistent tensors by name).
        if (entry.buffers[source.buffer].region == rt::Region::Persistent)
          tensor.name = source.name;
        tensorOf[view.getResult()] = entry.tensors.size();
        entry.tensors.push_back(std::move(tensor));
        continue;
      }
      // A view read through steps (a broadcast, or attention's from an
      // offset): its source's buffer.
      auto stridedView = [&](auto view, int64_t offset) -> LogicalResult {
        FailureOr<rt::TensorType> type = typeOf(view.getLoc(), view.getType());
        if (failed(type))
          return failure();
        rt::Tensor tensor;
        tensor.type = *type;
        tensor.buffer = entry.tensors[tensorOf.at(view.getSource())].buffer;
        tensor.strides.assign(view.getStrides().begin(),
                              view.getStrides().end());
        tensor.offset = offset;
        tensorOf[view.getResult()] = entry.tensors.size();
        entry.tensors.push_back(std::move(tensor));
        return success();
      };
      if (auto view = dyn_cast<zplan::BroadcastViewOp>(op)) {
        if (failed(stridedView(view, 0)))
          return failure();
        continue;
      }
      if (auto view = dyn_cast<zplan::StridedViewOp>(op)) {
        if (failed(stridedView(view, view.getOffset())))
          return failure();
        continue;
      }
      auto launchOp = dyn_cast<zplan::LaunchOp>(op);
      if (!launchOp)
        return op.emitOpError() << "unexpected in a zplan.entry";
      FailureOr<rt::Launch> decoded = zt::decodeLaunchOf(
          launchOp, launchOp.getKernel(), launchOp.getParams());
      if (failed(decoded))
        return failure();
      rt::Launch launch = std::move(*decoded);
      for (Value v : launchOp.getInputs())
        launch.inputs.push_back(tensorOf.at(v));
      for (Value v : launchOp.getOutputs())
        launch.outputs.push_back(tensorOf.at(v));
      launch.location = formatLocation(launchOp.getLoc());
      if (std::optional<zplan::Phase> phase = launchOp.getPhase())
        launch.phase = runtimeEnum<rt::Phase>(*phase);
      entry.launches.push_back(std::move(launch));
    }
    uint64_t align = std::max<uint64_t>(plan.alignment, 1);
    entry.inputSize = (entry.inputSize + align - 1) / align * align;
    entry.outputSize = (entry.outputSize + align - 1) / align * align;
    plan.entries.push_back(std::move(entry));
  }
  return plan;
}
