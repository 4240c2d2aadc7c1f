//===- ZTDialect.h - zt dialect and attributes ------------------*- C++ -*-===//

#ifndef ZCC_DIALECT_ZT_ZTDIALECT_H
#define ZCC_DIALECT_ZT_ZTDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/APFloat.h"

#include "zcc/Dialect/ZT/ZTDialect.h.inc"
#include "zcc/Dialect/ZT/ZTEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "zcc/Dialect/ZT/ZTAttrs.h.inc"

namespace zcc::zt {
/// The roles whose tensors live in the persistent region for the whole run
/// (and so need an initializer).
inline bool isPersistentRole(ArgRole role) {
  return role == ArgRole::Parameter || role == ArgRole::OptimizerState ||
         role == ArgRole::Accumulator || role == ArgRole::State;
}
} // namespace zcc::zt

#endif // ZCC_DIALECT_ZT_ZTDIALECT_H
