//===- ElementKernels.h - the element ops, one row each ----------*- C++ -*-===//
//
// An element op computes output element i from element i of each operand.
// Each row here is one such op, described once: everything the compiler and
// the runtime know about it comes from its row.
//
//   X(Id, "name", Arity, method, Params, "torch", "traits", Value, Vjp, "doc")
//
// - Id: the kernel id (KernelId::Id, ElementOp::Id) and the zt op's C++
//   class (zt::IdOp); "name" its name in zt (`zt.name`) and in a plan.
// - method: the capture API's method (Graph::method); Grad rows have none.
// - Arity: Unary (x), Binary (lhs, rhs) or Grad (saved, grad: the forward
//   op's saved operand or result, and the gradient of its result), all of
//   one float type; or Compare, BoolUnary, BoolBinary, Mask, Select, whose
//   operands or result are bool (ElementArity).
// - Params: the op's numbers, F64 attributes of the zt op, named as the
//   PyTorch argument they come from: P0, P1(name, default) or
//   P2(name0, default0, name1, default1).
// - "torch": the ATen overloads zcc.from_torch maps to the op, tensors then
//   the params positionally (space separated; "" for none or by hand).
// - traits: the row's own properties (OpTraits.h) beyond its arity's
//   (elementArityTraits): kCommutative (ODS Commutative), kStoresBf16
//   (mixed precision keeps bf16 operands' result in bf16), kIntegers (a
//   Binary row also on i32/i64 operands, run by ElementMixed, wrapping),
//   or kNoTraits.
// - Value: the formula of an element in T, of `x` (operand 0), `bv`
//   (operand 1) and `cv` (operand 2), with the params `p0`, `p1`
//   (Elementwise::compute; for the bool arities mixedValue, where T is the
//   operands' storage type and a condition `x` a bool). It is the only
//   copy: the CPU executor (f32 and the f64 reference precision), the
//   emulator and the CUDA executor all run it.
// - Vjp: the gradients of the operands as expressions over other rows
//   (ElementVjp.h), in terms of A, B and C (the operands), Y (the result) and
//   DY (its gradient); G0 is operand 0's gradient, Zero none. NoVjp for
//   Grad rows.
//   A row used in a Vjp takes the forward op's params of the same names.
// - "doc": the formula as the generated dialect docs show it.
//
// From the rows come: the zt ops' ODS (GenElementOps.cpp writes
// ZTElementOps.td), autodiff (Autodiff.cpp interprets Vjp), the kernel list
// and loader rules (Launch.h, KernelRules.cpp), the kernels and their
// dispatch (DeviceKernels.h), the C++ capture methods (Graph.h), the Python
// ops and the importer's mapping (zcc._zcc.element_rows()), and the test
// cases (LaunchCase.h). docs/adding-an-op.md lists the rest.
//
// No dependencies: the CUDA executor's kernels include it too.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_ELEMENTKERNELS_H
#define ZCC_RUNTIME_ELEMENTKERNELS_H

#include "zcc/Runtime/Plan/OpTraits.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace zcc::runtime {

/// The operands of an element kernel. Float ops (the Elementwise kernel):
/// Unary (x), Binary (lhs, rhs) and Grad (saved, grad), one float type for
/// all. The others (the ElementMixed kernel): Compare (lhs, rhs of one type
/// -> bool), BoolUnary (bool -> bool), BoolBinary (bool, bool -> bool), Mask
/// (condition, x -> x's type) and Select (condition, on_true, on_false ->
/// their type).
enum class ElementArity {
  Unary,
  Binary,
  Grad,
  Compare,
  BoolUnary,
  BoolBinary,
  Mask,
  Select
};

// ZRT_IF_FLOAT_##arity(code) keeps `code` for the float arities (the
// Elementwise kernel), ZRT_IF_MIXED_##arity(code) for the others (the
// ElementMixed kernel): how a row list is split between the two kernels.
#define ZRT_IF_FLOAT_Unary(...) __VA_ARGS__
#define ZRT_IF_FLOAT_Binary(...) __VA_ARGS__
#define ZRT_IF_FLOAT_Grad(...) __VA_ARGS__
#define ZRT_IF_FLOAT_Compare(...)
#define ZRT_IF_FLOAT_BoolUnary(...)
#define ZRT_IF_FLOAT_BoolBinary(...)
#define ZRT_IF_FLOAT_Mask(...)
#define ZRT_IF_FLOAT_Select(...)
#define ZRT_IF_MIXED_Unary(...)
#define ZRT_IF_MIXED_Binary(...)
#define ZRT_IF_MIXED_Grad(...)
#define ZRT_IF_MIXED_Compare(...) __VA_ARGS__
#define ZRT_IF_MIXED_BoolUnary(...) __VA_ARGS__
#define ZRT_IF_MIXED_BoolBinary(...) __VA_ARGS__
#define ZRT_IF_MIXED_Mask(...) __VA_ARGS__
#define ZRT_IF_MIXED_Select(...) __VA_ARGS__
// ZRT_IF_INTEGER_##arity(code): the Binary rows, whose kIntegers ones also
// run on integers (DeviceKernels.h's integerValue).
#define ZRT_IF_INTEGER_Unary(...)
#define ZRT_IF_INTEGER_Binary(...) __VA_ARGS__
#define ZRT_IF_INTEGER_Grad(...)
#define ZRT_IF_INTEGER_Compare(...)
#define ZRT_IF_INTEGER_BoolUnary(...)
#define ZRT_IF_INTEGER_BoolBinary(...)
#define ZRT_IF_INTEGER_Mask(...)
#define ZRT_IF_INTEGER_Select(...)

/// Operands of each arity.
constexpr int elementOperandCount(ElementArity arity) {
  switch (arity) {
  case ElementArity::Unary:
  case ElementArity::BoolUnary:
    return 1;
  case ElementArity::Select:
    return 3;
  default:
    return 2;
  }
}
/// Whether the op's result is bool (i1).
constexpr bool elementResultIsBool(ElementArity arity) {
  return arity == ElementArity::Compare || arity == ElementArity::BoolUnary ||
         arity == ElementArity::BoolBinary;
}
/// Whether it runs as the float Elementwise kernel (every operand and the
/// result of one float type).
constexpr bool elementIsFloat(ElementArity arity) {
  return arity == ElementArity::Unary || arity == ElementArity::Binary ||
         arity == ElementArity::Grad;
}
/// What every element op of `arity` is: run in place and read through
/// broadcast strides (both kernels index each element once); the forward
/// ones (every arity but Grad) cheap to recompute.
constexpr OpTraits elementArityTraits(ElementArity arity) {
  return kInPlace | kStridedReads |
         (arity == ElementArity::Grad ? kNoTraits : kCheapToRecompute);
}

// clang-format off
#define ZRT_ELEMENT_KERNEL_LIST(X)                                             \
  X(Add, "add", Binary, add, P0, "", kCommutative | kStoresBf16 | kIntegers,   \
    x + bv, Grads(DY, DY), "lhs[i] + rhs[i]")                                  \
  X(Sub, "sub", Binary, sub, P0, "", kStoresBf16 | kIntegers,                  \
    x - bv, Grads(DY, Neg(DY)), "lhs[i] - rhs[i]")                             \
  X(Mul, "mul", Binary, mul, P0, "", kCommutative | kStoresBf16 | kIntegers,   \
    x * bv, Grads(Mul(DY, B), Mul(DY, A)), "lhs[i] * rhs[i]")                  \
  X(Div, "div", Binary, div, P0, "", kNoTraits,                                \
    x / bv, Grads(Div(DY, B), Neg(Mul(G0, Y))), "lhs[i] / rhs[i]")             \
  X(Neg, "neg", Unary, neg, P0, "neg.default", kStoresBf16,                    \
    -x, Grads(Neg(DY)), "-x[i]")                                               \
  X(StopGradient, "stop_gradient", Unary, stopGradient, P0, "detach.default", \
    kStoresBf16, x, Grads(Zero), "x[i], its gradient zero (PyTorch's detach)") \
  X(AddScalar, "add_scalar", Unary, addScalar, P1(other, 0.0), "", kStoresBf16, \
    x + p0, Grads(DY), "x[i] + other (the number exact in f64)")               \
  X(Exp, "exp", Unary, exp, P0, "exp.default", kNoTraits,                      \
    fExpLoop(x), Grads(Mul(DY, Y)), "exp(x[i])")                               \
  X(Log, "log", Unary, log, P0, "log.default", kNoTraits,                      \
    fLog(x), Grads(Div(DY, A)), "log(x[i])")                                   \
  X(Tanh, "tanh", Unary, tanh, P0, "tanh.default", kStoresBf16,                \
    fTanh(x), Grads(TanhGrad(Y, DY)), "tanh(x[i])")                            \
  X(Sigmoid, "sigmoid", Unary, sigmoid, P0, "sigmoid.default", kStoresBf16,    \
    sigmoidOf(x), Grads(SigmoidGrad(Y, DY)), "1 / (1 + exp(-x[i]))")           \
  X(Relu, "relu", Unary, relu, P0, "relu.default", kStoresBf16,                \
    isNaN(x) ? x : (x > T(0.0) ? x : T(0.0)), Grads(ReluGrad(Y, DY)),          \
    "max(x[i], 0)")                                                            \
  X(Gelu, "gelu", Unary, gelu, P0, "", kStoresBf16,                            \
    geluOf(x), Grads(GeluGrad(A, DY)),                                         \
    "0.5 * x[i] * (1 + tanh(sqrt(2/pi) * (x[i] + 0.044715 * x[i]^3)))")        \
  X(GeluErf, "gelu_erf", Unary, geluErf, P0, "", kStoresBf16,                  \
    geluErfOf(x), Grads(GeluErfGrad(A, DY)),                                   \
    "0.5 * x[i] * (1 + erf(x[i] / sqrt(2)))")                                  \
  X(Silu, "silu", Unary, silu, P0, "silu.default", kStoresBf16,                \
    x * sigmoidOf(x), Grads(SiluGrad(A, DY)), "x[i] / (1 + exp(-x[i]))")       \
  X(Sqrt, "sqrt", Unary, sqrt, P0, "sqrt.default", kNoTraits,                  \
    fSqrt(x), Grads(SqrtGrad(Y, DY)), "sqrt(x[i])")                            \
  X(Rsqrt, "rsqrt", Unary, rsqrt, P0, "rsqrt.default", kNoTraits,              \
    T(1.0) / fSqrt(x), Grads(RsqrtGrad(Y, DY)), "1 / sqrt(x[i])")              \
  X(Abs, "abs", Unary, abs, P0, "abs.default", kNoTraits,                      \
    x < T(0.0) ? -x : (x == T(0.0) ? T(0.0) : x), Grads(AbsGrad(A, DY)),       \
    "|x[i]|")                                                                  \
  X(Clamp, "clamp", Unary, clamp, P2(min, -HUGE_VAL, max, HUGE_VAL),           \
    "clamp.default hardtanh.default", kNoTraits, clampOf(x, p0, p1),           \
    Grads(ClampGrad(A, DY)), "min(max(x[i], min), max)")                       \
  X(Hardswish, "hardswish", Unary, hardswish, P0, "hardswish.default", kNoTraits, \
    x * clampOf(x + T(3.0), T(0.0), T(6.0)) / T(6.0),                          \
    Grads(HardswishGrad(A, DY)), "x[i] * min(max(x[i] + 3, 0), 6) / 6")        \
  X(Hardsigmoid, "hardsigmoid", Unary, hardsigmoid, P0,                        \
    "hardsigmoid.default", kNoTraits, clampOf(x + T(3.0), T(0.0), T(6.0)) / T(6.0), \
    Grads(HardsigmoidGrad(A, DY)), "min(max(x[i] + 3, 0), 6) / 6")             \
  X(Erf, "erf", Unary, erf, P0, "erf.default", kNoTraits,                      \
    fErf(x), Grads(ErfGrad(A, DY)), "erf(x[i])")                               \
  X(Sin, "sin", Unary, sin, P0, "sin.default", kNoTraits,                      \
    fSin(x), Grads(Mul(DY, Cos(A))), "sin(x[i])")                              \
  X(Cos, "cos", Unary, cos, P0, "cos.default", kNoTraits,                      \
    fCos(x), Grads(Neg(Mul(DY, Sin(A)))), "cos(x[i])")                         \
  X(Softplus, "softplus", Unary, softplus, P2(beta, 1.0, threshold, 20.0),     \
    "softplus.default", kNoTraits, x * p0 > p1 ? x : fLog1p(fExp(x * p0)) / p0, \
    Grads(SoftplusGrad(A, DY)),                                                \
    "beta x[i] > threshold ? x[i] : log(1 + exp(beta x[i])) / beta")           \
  X(LeakyRelu, "leaky_relu", Unary, leakyRelu, P1(negative_slope, 0.01),       \
    "leaky_relu.default", kNoTraits, x > T(0.0) ? x : x * p0,                  \
    Grads(LeakyReluGrad(A, DY)), "x[i] > 0 ? x[i] : negative_slope x[i]")      \
  X(Elu, "elu", Unary, elu, P1(alpha, 1.0), "elu.default", kNoTraits,          \
    x > T(0.0) ? x : p0 * fExpm1(x), Grads(EluGrad(A, DY)),                    \
    "x[i] > 0 ? x[i] : alpha (exp(x[i]) - 1)")                                 \
  X(Reciprocal, "reciprocal", Unary, reciprocal, P0, "reciprocal.default", kNoTraits, \
    T(1.0) / x, Grads(Neg(Mul(DY, Mul(Y, Y)))), "1 / x[i]")                    \
  X(Pow, "pow", Unary, pow, P1(exponent, 1.0), "", kNoTraits,                  \
    fPow(x, p0), Grads(PowGrad(A, DY)), "x[i]^exponent")                       \
  X(Maximum, "maximum", Binary, maximum, P0, "maximum.default",                \
    kCommutative, isNaN(x) || isNaN(bv) ? x + bv : (x > bv ? x : bv),          \
    Grads(Mul(DY, MaxWeight(A, B)), Mul(DY, MaxWeight(B, A))),                 \
    "max(lhs[i], rhs[i])` (NaN if either is)`")                                \
  X(Minimum, "minimum", Binary, minimum, P0, "minimum.default",                \
    kCommutative, isNaN(x) || isNaN(bv) ? x + bv : (x < bv ? x : bv),          \
    Grads(Mul(DY, MaxWeight(B, A)), Mul(DY, MaxWeight(A, B))),                 \
    "min(lhs[i], rhs[i])` (NaN if either is)`")                                \
  X(MaxWeight, "max_weight", Binary, maxWeight, P0, "", kNoTraits,             \
    x > bv ? T(1.0) : (x == bv ? T(0.5) : T(0.0)), Grads(Zero, Zero),          \
    "lhs[i] > rhs[i] ? 1 : (lhs[i] == rhs[i] ? 0.5 : 0)` (the share of "       \
    "maximum's gradient that lhs gets, PyTorch's)`")                           \
  X(ReluGrad, "relu_grad", Grad, none, P0, "", kNoTraits,                      \
    x > T(0.0) ? bv : T(0.0), NoVjp, "y[i] > 0 ? grad[i] : 0")                 \
  X(GeluGrad, "gelu_grad", Grad, none, P0, "", kNoTraits,                      \
    bv * geluDerivative(x), NoVjp,                                             \
    "grad[i] * gelu'(x[i])` with the exact derivative of the tanh form: "      \
    "`0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 * 0.044715 x^2)`, "               \
    "`t = tanh(c (x + 0.044715 x^3))`, `c = sqrt(2/pi)")                       \
  X(GeluErfGrad, "gelu_erf_grad", Grad, none, P0, "", kNoTraits,               \
    bv * geluErfDerivative(x), NoVjp,                                          \
    "grad[i] * (Phi(x[i]) + x[i] phi(x[i]))` with "                            \
    "`Phi(x) = 0.5 (1 + erf(x / sqrt(2)))`, "                                  \
    "`phi(x) = exp(-x^2 / 2) / sqrt(2 pi)")                                    \
  X(SiluGrad, "silu_grad", Grad, none, P0, "", kNoTraits,                      \
    siluGradOf(x, bv), NoVjp,                                                  \
    "grad[i] * s (1 + x[i] (1 - s))` with `s = sigmoid(x[i])")                 \
  X(TanhGrad, "tanh_grad", Grad, none, P0, "", kNoTraits,                      \
    bv * (T(1.0) - x * x), NoVjp, "grad[i] * (1 - y[i]^2)")                    \
  X(SigmoidGrad, "sigmoid_grad", Grad, none, P0, "", kNoTraits,                \
    bv * x * (T(1.0) - x), NoVjp, "grad[i] * y[i] * (1 - y[i])")               \
  X(SqrtGrad, "sqrt_grad", Grad, none, P0, "", kNoTraits,                      \
    bv * T(0.5) / x, NoVjp, "grad[i] * 0.5 / y[i]")                            \
  X(RsqrtGrad, "rsqrt_grad", Grad, none, P0, "", kNoTraits,                    \
    bv * -T(0.5) * x * x * x, NoVjp, "grad[i] * -0.5 * y[i]^3")                \
  X(AbsGrad, "abs_grad", Grad, none, P0, "", kNoTraits,                        \
    x > T(0.0) ? bv : (x < T(0.0) ? -bv : T(0.0)), NoVjp,                      \
    "grad[i] * sign(x[i])")                                                    \
  X(ClampGrad, "clamp_grad", Grad, none, P2(min, -HUGE_VAL, max, HUGE_VAL),    \
    "", kNoTraits, x >= p0 && x <= p1 ? bv : T(0.0), NoVjp,                    \
    "min <= x[i] <= max ? grad[i] : 0")                                        \
  X(HardswishGrad, "hardswish_grad", Grad, none, P0, "", kNoTraits,            \
    x < T(-3.0) ? T(0.0) : (x <= T(3.0) ? bv * (x / T(3.0) + T(0.5)) : bv),    \
    NoVjp, "x[i] < -3 ? 0 : (x[i] <= 3 ? grad[i] (x[i] / 3 + 0.5) : grad[i])") \
  X(HardsigmoidGrad, "hardsigmoid_grad", Grad, none, P0, "", kNoTraits,        \
    x > T(-3.0) && x < T(3.0) ? bv / T(6.0) : T(0.0), NoVjp,                   \
    "-3 < x[i] < 3 ? grad[i] / 6 : 0")                                         \
  X(ErfGrad, "erf_grad", Grad, none, P0, "", kNoTraits,                        \
    bv * T(1.12837916709551257390) * fExp(-(x * x)), NoVjp,                    \
    "grad[i] 2 / sqrt(pi) exp(-x[i]^2)")                                       \
  X(SoftplusGrad, "softplus_grad", Grad, none,                                 \
    P2(beta, 1.0, threshold, 20.0), "", kNoTraits,                             \
    x * p0 > p1 ? bv : bv * sigmoidOf(x * p0), NoVjp,                          \
    "beta x[i] > threshold ? grad[i] : grad[i] sigmoid(beta x[i])")            \
  X(LeakyReluGrad, "leaky_relu_grad", Grad, none, P1(negative_slope, 0.01),    \
    "", kNoTraits, x > T(0.0) ? bv : bv * p0, NoVjp,                           \
    "x[i] > 0 ? grad[i] : negative_slope grad[i]")                             \
  X(EluGrad, "elu_grad", Grad, none, P1(alpha, 1.0), "", kNoTraits,            \
    x > T(0.0) ? bv : bv * p0 * fExp(x), NoVjp,                                \
    "x[i] > 0 ? grad[i] : grad[i] alpha exp(x[i])")                            \
  X(PowGrad, "pow_grad", Grad, none, P1(exponent, 1.0), "", kNoTraits,         \
    p0 == T(0.0) ? T(0.0) : bv * p0 * fPow(x, p0 - T(1.0)), NoVjp,             \
    "exponent == 0 ? 0 : grad[i] exponent x[i]^(exponent - 1)")                \
  X(Eq, "eq", Compare, eq, P0, "eq.Tensor eq.Scalar", kCommutative,            \
    x == bv, Grads(Zero, Zero), "lhs[i] == rhs[i]")                            \
  X(Ne, "ne", Compare, ne, P0, "ne.Tensor ne.Scalar", kCommutative,            \
    x != bv, Grads(Zero, Zero), "lhs[i] != rhs[i]")                            \
  X(Lt, "lt", Compare, lt, P0, "lt.Tensor lt.Scalar", kNoTraits,               \
    x < bv, Grads(Zero, Zero), "lhs[i] < rhs[i]")                              \
  X(Le, "le", Compare, le, P0, "le.Tensor le.Scalar", kNoTraits,               \
    x <= bv, Grads(Zero, Zero), "lhs[i] <= rhs[i]")                            \
  X(Gt, "gt", Compare, gt, P0, "gt.Tensor gt.Scalar", kNoTraits,               \
    x > bv, Grads(Zero, Zero), "lhs[i] > rhs[i]")                              \
  X(Ge, "ge", Compare, ge, P0, "ge.Tensor ge.Scalar", kNoTraits,               \
    x >= bv, Grads(Zero, Zero), "lhs[i] >= rhs[i]")                            \
  X(LogicalAnd, "logical_and", BoolBinary, logicalAnd, P0,                     \
    "logical_and.default bitwise_and.Tensor __and__.Tensor", kCommutative,     \
    x && bv, Grads(Zero, Zero), "lhs[i] and rhs[i]")                           \
  X(LogicalOr, "logical_or", BoolBinary, logicalOr, P0,                        \
    "logical_or.default bitwise_or.Tensor __or__.Tensor", kCommutative,        \
    x || bv, Grads(Zero, Zero), "lhs[i] or rhs[i]")                            \
  X(LogicalNot, "logical_not", BoolUnary, logicalNot, P0,                      \
    "logical_not.default bitwise_not.default", kNoTraits, !x, Grads(Zero),     \
    "not x[i]")                                                                \
  X(Where, "where", Select, where, P0,                                         \
    "where.self where.ScalarOther where.ScalarSelf where.Scalar", kNoTraits,   \
    x ? bv : cv, Grads(Zero, Mask(A, DY), Mask(LogicalNot(A), DY)),            \
    "condition[i] ? on_true[i] : on_false[i]")                                 \
  X(Mask, "mask", Mask, mask, P0, "", kNoTraits, x ? bv : T(0), Grads(Zero, Mask(A, DY)), \
    "condition[i] ? x[i] : 0` (where's gradient)`")
// clang-format on

/// Each row's index in kElementRows (and its KernelId's value):
/// element_row::Tanh.
namespace element_row {
enum Index : int {
#define ZRT_ROW_INDEX(id, ...) id,
  ZRT_ELEMENT_KERNEL_LIST(ZRT_ROW_INDEX)
#undef ZRT_ROW_INDEX
};
} // namespace element_row

/// The most params an element op has.
inline constexpr int kMaxElementParams = 2;

/// A fused element program's limits (zt.fused): its operands, read through
/// strides or not, its steps and its outputs. Each element keeps one value per operand
/// and step in registers (a GPU thread) or in a block of scratch (a host
/// thread).
inline constexpr int kMaxFusedInputs = 8;
inline constexpr int kMaxFusedSteps = 16;
inline constexpr int kMaxFusedOutputs = 4;

/// What the runtime and the bindings read of a row.
struct ElementRow {
  const char *name;
  ElementArity arity;
  int paramCount;
  const char *paramNames[kMaxElementParams];
  double paramDefaults[kMaxElementParams];
  const char *torch;
  /// The row's traits and its arity's (elementArityTraits).
  OpTraits traits;
};

#define ZRT_ROW_PARAMS_P0 0, {nullptr, nullptr}, {0.0, 0.0}
#define ZRT_ROW_PARAMS_P1(n0, d0) 1, {#n0, nullptr}, {d0, 0.0}
#define ZRT_ROW_PARAMS_P2(n0, d0, n1, d1) 2, {#n0, #n1}, {d0, d1}
#define ZRT_ELEMENT_ROW(id, name, arity, method, params, torch, traits, ...)   \
  {name, ElementArity::arity, ZRT_ROW_PARAMS_##params, torch,                  \
   (traits) | elementArityTraits(ElementArity::arity)},
/// The rows in KernelId order (element kernels come first).
inline constexpr ElementRow kElementRows[] = {
    ZRT_ELEMENT_KERNEL_LIST(ZRT_ELEMENT_ROW)};
#undef ZRT_ELEMENT_ROW
#undef ZRT_ROW_PARAMS_P0
#undef ZRT_ROW_PARAMS_P1
#undef ZRT_ROW_PARAMS_P2

inline constexpr int kElementRowCount =
    static_cast<int>(sizeof(kElementRows) / sizeof(kElementRows[0]));

/// The index of the row named `name` ("tanh"), or -1.
inline int findElementRow(const char *name, size_t length) {
  for (int row = 0; row < kElementRowCount; ++row) {
    const char *rowName = kElementRows[row].name;
    size_t i = 0;
    while (i < length && rowName[i] != '\0' && rowName[i] == name[i])
      ++i;
    if (i == length && rowName[i] == '\0')
      return row;
  }
  return -1;
}

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_ELEMENTKERNELS_H
