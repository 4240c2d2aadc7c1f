//===- ElementKernels.h - the element kernels, one row each ------*- C++ -*-===//
//
// An element kernel computes output element i from element i of each
// operand. Each row here is one such kernel: its kernel id, its name in a
// plan (the zt op's name), and its operands. Everything the runtime knows
// about it comes from the row: the kernel list (Kernels.h), the loader's
// operand rules and in-place permission (KernelRules.cpp), the ElementOp the
// executors run and their dispatch (Device/DeviceKernels.h). Its formula is
// the branch of Elementwise::compute for ElementOp::Id, which fails to
// compile while missing. docs/adding-an-op.md lists the other places (the
// op's .td row, its VJP rule, its tests).
//
// No dependencies: the CUDA executor's kernels include it too.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_ELEMENTKERNELS_H
#define ZCC_RUNTIME_ELEMENTKERNELS_H

namespace zcc::runtime {

/// The operands of an element kernel: Unary (x), Binary (lhs, rhs) or Grad
/// (saved, grad: the forward op's saved operand or result, and the gradient
/// of its result).
enum class ElementArity { Unary, Binary, Grad };

// X(Id, "name", Arity)
#define ZRT_ELEMENT_KERNEL_LIST(X)                                             \
  X(Add, "add", Binary)                                                        \
  X(Sub, "sub", Binary)                                                        \
  X(Mul, "mul", Binary)                                                        \
  X(Div, "div", Binary)                                                        \
  X(Neg, "neg", Unary)                                                         \
  X(Exp, "exp", Unary)                                                         \
  X(Log, "log", Unary)                                                         \
  X(Tanh, "tanh", Unary)                                                       \
  X(Sigmoid, "sigmoid", Unary)                                                 \
  X(Relu, "relu", Unary)                                                       \
  X(Gelu, "gelu", Unary)                                                       \
  X(GeluErf, "gelu_erf", Unary)                                                \
  X(Silu, "silu", Unary)                                                       \
  X(Sqrt, "sqrt", Unary)                                                       \
  X(Rsqrt, "rsqrt", Unary)                                                     \
  X(ReluGrad, "relu_grad", Grad)                                               \
  X(GeluGrad, "gelu_grad", Grad)                                               \
  X(GeluErfGrad, "gelu_erf_grad", Grad)                                        \
  X(SiluGrad, "silu_grad", Grad)                                               \
  X(TanhGrad, "tanh_grad", Grad)                                               \
  X(SigmoidGrad, "sigmoid_grad", Grad)                                         \
  X(SqrtGrad, "sqrt_grad", Grad)                                               \
  X(RsqrtGrad, "rsqrt_grad", Grad)

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_ELEMENTKERNELS_H
