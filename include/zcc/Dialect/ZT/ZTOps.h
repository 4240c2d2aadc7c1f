//===- ZTOps.h - zt dialect ops ---------------------------------*- C++ -*-===//

#ifndef ZCC_DIALECT_ZT_ZTOPS_H
#define ZCC_DIALECT_ZT_ZTOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "zcc/Dialect/ZT/ZTDialect.h"

#define GET_OP_CLASSES
#include "zcc/Dialect/ZT/ZTOps.h.inc"

namespace zcc::zt {
/// The attributes of a zt op that are its kernel's parameters: all it
/// defines but the operand segment sizes (the loader counts operands from
/// the parameters, e.g. momentum and max_grad_norm).
inline bool isKernelParameter(llvm::StringRef attribute) {
  return attribute != "operandSegmentSizes";
}

/// The row (ElementKernels.h) of element op `op`, or -1.
int elementRowOf(mlir::Operation *op);

/// Builds element row `row` on `operands`, with one attribute per param of
/// the row in its order, and the result type its arity gives (a bool tensor
/// for comparisons and logical ops, else the type of the last operand). Not
/// verified: the caller verifies what it built from user input.
mlir::Operation *buildElementOp(mlir::OpBuilder &b, mlir::Location loc,
                                int row, mlir::ValueRange operands,
                                llvm::ArrayRef<mlir::Attribute> params);
} // namespace zcc::zt

#endif // ZCC_DIALECT_ZT_ZTOPS_H
