//===- EntryPoints.h - reading training-step signatures ---------*- C++ -*-===//
//
// Small accessors the passes share for the attributes the zt dialect puts on
// a training step's arguments and results (docs/zt-dialect.md).
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_TRANSFORMS_ENTRYPOINTS_H
#define ZCC_LIB_TRANSFORMS_ENTRYPOINTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "zcc/Dialect/ZT/ZTOps.h"

#include <optional>
#include <string>

namespace zcc::zt {

inline std::optional<ArgRole> argRole(mlir::func::FuncOp fn, unsigned index) {
  if (auto role =
          fn.getArgAttrOfType<ArgRoleAttr>(index, ZTDialect::kRoleAttrName))
    return role.getValue();
  return std::nullopt;
}

/// True when some argument carries `zt.role`: the function is a training
/// step (or its forward), and the dialect's rules apply to all arguments.
inline bool hasArgRoles(mlir::func::FuncOp fn) {
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
    if (argRole(fn, i))
      return true;
  return false;
}

/// The argument's `zt.name`, or `arg<N>` when it has none.
inline std::string argName(mlir::func::FuncOp fn, unsigned index) {
  if (auto name = fn.getArgAttrOfType<mlir::StringAttr>(
          index, ZTDialect::kNameAttrName))
    return name.getValue().str();
  return "arg" + std::to_string(index);
}

/// The result's `zt.name`, or `result<N>` when it has none.
inline std::string resultName(mlir::func::FuncOp fn, unsigned index) {
  if (auto name = fn.getResultAttrOfType<mlir::StringAttr>(
          index, ZTDialect::kNameAttrName))
    return name.getValue().str();
  return "result" + std::to_string(index);
}

/// The argument index a result attribute (`zt.tied`, `zt.gradient_of`)
/// names, if the result has it.
inline std::optional<unsigned> resultArgIndex(mlir::func::FuncOp fn,
                                              unsigned index,
                                              llvm::StringRef attrName) {
  if (auto arg = fn.getResultAttrOfType<mlir::IntegerAttr>(index, attrName))
    return static_cast<unsigned>(arg.getInt());
  return std::nullopt;
}

/// The function's `zt.entry` kind, or "" for a forward-only function.
inline llvm::StringRef entryKind(mlir::func::FuncOp fn) {
  if (auto kind =
          fn->getAttrOfType<mlir::StringAttr>(ZTDialect::kEntryAttrName))
    return kind.getValue();
  return "";
}

} // namespace zcc::zt

#endif // ZCC_LIB_TRANSFORMS_ENTRYPOINTS_H
