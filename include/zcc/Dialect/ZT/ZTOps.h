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
#include "zcc/Runtime/Plan/Plan.h"

#include <optional>

namespace zcc::zt {
/// Checks `op` by its kernel's rules (runtime::checkKernelTypes): operand
/// and result types, and its attributes decoded as the loader decodes a
/// launch's parameters; the loader's words.
mlir::LogicalResult verifyKernelRules(mlir::Operation *op);

/// ZT_KernelRules: an op whose kernel's rule is its verifier.
template <typename ConcreteType>
class KernelRules : public mlir::OpTrait::TraitBase<ConcreteType, KernelRules> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifyKernelRules(op);
  }
};

/// verifyKernelRules for an op whose kernel's rule infers its results
/// (runtime::kernelInfersResults), which it must.
mlir::LogicalResult verifyBuiltByName(mlir::Operation *op);

/// ZT_BuiltByName: ZT_KernelRules for an op built by name from its rule.
template <typename ConcreteType>
class BuiltByName : public mlir::OpTrait::TraitBase<ConcreteType, BuiltByName> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifyBuiltByName(op);
  }
};
} // namespace zcc::zt

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

/// The plan's element type for `element`; none for a type no kernel holds
/// (f16).
std::optional<runtime::DType> runtimeDType(mlir::Type element);

/// The kernel and typed parameters (no operands) of the launch `op` runs:
/// kernel `kernel` with `params` (a zplan.launch's, or a zt op's
/// kernelParams), decoded as the loader decodes a plan's. An attribute the
/// format cannot hold, or a parameter the kernel does not take, is an error
/// on `op`.
mlir::FailureOr<runtime::Launch> decodeLaunchOf(mlir::Operation *op,
                                                llvm::StringRef kernel,
                                                mlir::DictionaryAttr params);

/// Builds zt op `name` (a kernel's name) on `operands` with `params` as its
/// attributes (a unit flag, an i64, an f64 or an i64 array) and result types
/// `results`; null when no zt op has that name. Not verified.
mlir::Operation *buildKernelOp(mlir::OpBuilder &b, mlir::Location loc,
                               llvm::StringRef name, mlir::ValueRange operands,
                               llvm::ArrayRef<runtime::Param> params,
                               mlir::TypeRange results);

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
