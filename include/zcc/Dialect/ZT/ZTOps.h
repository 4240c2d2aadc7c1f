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

/// A zt op's attributes as its launch's parameters: every attribute the op
/// defines, defaults included, since the runtime holds no defaults of its
/// own; nothing else (a discardable attribute is not the kernel's).
mlir::DictionaryAttr kernelParams(mlir::Operation *op);

/// The row (ElementKernels.h) of element op `op`, or -1.
int elementRowOf(mlir::Operation *op);

/// The properties of zt op `op` (zcc/Runtime/Plan/OpTraits.h): its kernel's
/// (the kernel of its name: runtime::kernelTraits); zt.reshape, a view with
/// no kernel, is cheap to recompute and keeps bf16; 0 for any other op.
uint32_t traitsOf(mlir::Operation *op);

/// Builds element row `row` on `operands`, with one attribute per param of
/// the row in its order, and the result type its arity gives (a bool tensor
/// for comparisons and logical ops, else the type of the last operand). Not
/// verified: the caller verifies what it built from user input.
mlir::Operation *buildElementOp(mlir::OpBuilder &b, mlir::Location loc,
                                int row, mlir::ValueRange operands,
                                llvm::ArrayRef<mlir::Attribute> params);
} // namespace zcc::zt

#endif // ZCC_DIALECT_ZT_ZTOPS_H
