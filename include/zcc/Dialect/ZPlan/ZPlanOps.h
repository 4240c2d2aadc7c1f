//===- ZPlanOps.h - the zplan dialect ---------------------------*- C++ -*-===//

#ifndef ZCC_DIALECT_ZPLAN_ZPLANOPS_H
#define ZCC_DIALECT_ZPLAN_ZPLANOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "zcc/Dialect/ZPlan/ZPlanDialect.h.inc"
#include "zcc/Dialect/ZPlan/ZPlanEnums.h.inc"

#define GET_OP_CLASSES
#include "zcc/Dialect/ZPlan/ZPlanOps.h.inc"

#endif // ZCC_DIALECT_ZPLAN_ZPLANOPS_H
