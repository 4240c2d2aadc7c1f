//===- Passes.h - zcc compiler passes ---------------------------*- C++ -*-===//

#ifndef ZCC_TRANSFORMS_PASSES_H
#define ZCC_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace zcc {

#define GEN_PASS_DECL
#include "zcc/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "zcc/Transforms/Passes.h.inc"

} // namespace zcc

#endif // ZCC_TRANSFORMS_PASSES_H
