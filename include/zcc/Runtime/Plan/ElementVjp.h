//===- ElementVjp.h - the element ops' gradients, as data --------*- C++ -*-===//
//
// The Vjp column of ElementKernels.h as data: per operand, a short postfix
// program over the leaves A, B, C (the operands), Y (the result), DY (the
// result's gradient), G0 (operand 0's gradient) and the rows themselves;
// Zero (no program) where the gradient is zero.
// zt-autodiff builds the ops it names; the tests evaluate it with the
// kernels' formulas against finite differences; GenElementOps.cpp prints it.
// Written as nested calls (`Neg(Mul(G0, Y))`), each call a row's name.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_ELEMENTVJP_H
#define ZCC_RUNTIME_ELEMENTVJP_H

#include "zcc/Runtime/Plan/ElementKernels.h"

namespace zcc::runtime::vjp {

/// A leaf of a gradient expression.
enum class Leaf : int16_t { A, B, C, Y, DY, G0 };

/// One step of a postfix program: a leaf pushed, or a row (its index in
/// kElementRows) applied to the top one or two values.
struct Step {
  bool isLeaf = true;
  int16_t code = 0; // Leaf or row index
};

inline constexpr int kMaxSteps = 16;

struct Expr {
  Step steps[kMaxSteps] = {};
  int count = 0;

  constexpr Expr() = default;
  constexpr explicit Expr(Leaf leaf) : count(1) {
    steps[0] = Step{true, static_cast<int16_t>(leaf)};
  }
  constexpr Expr then(const Expr &next) const {
    Expr out = *this;
    for (int i = 0; i < next.count; ++i)
      out.steps[out.count++] = next.steps[i];
    return out;
  }
  constexpr Expr apply(int row) const {
    Expr out = *this;
    out.steps[out.count++] = Step{false, static_cast<int16_t>(row)};
    return out;
  }
};

/// The gradients of an op's operands, in operand order; `defined` is false
/// for the rows with no gradient (the Grad rows).
struct Vjp {
  Expr grads[3] = {};
  int count = 0;
  bool defined = false;
};

inline constexpr Expr A{Leaf::A}, B{Leaf::B}, C{Leaf::C}, Y{Leaf::Y},
    DY{Leaf::DY}, G0{Leaf::G0};
/// A zero gradient: the operand gets no contribution.
inline constexpr Expr Zero{};
inline constexpr Vjp NoVjp{};
constexpr Vjp Grads(const Expr &g) {
  return Vjp{{g, Expr(), Expr()}, 1, true};
}
constexpr Vjp Grads(const Expr &g0, const Expr &g1) {
  return Vjp{{g0, g1, Expr()}, 2, true};
}
constexpr Vjp Grads(const Expr &g0, const Expr &g1, const Expr &g2) {
  return Vjp{{g0, g1, g2}, 3, true};
}

// One builder per row, named as its Id: Mul(a, b), Neg(a), TanhGrad(y, dy).
#define ZRT_VJP_BUILDER_Unary(id)                                              \
  constexpr Expr id(const Expr &a) { return a.apply(element_row::id); }
#define ZRT_VJP_BUILDER_Binary(id)                                             \
  constexpr Expr id(const Expr &a, const Expr &b) {                            \
    return a.then(b).apply(element_row::id);                                        \
  }
#define ZRT_VJP_BUILDER_Grad(id) ZRT_VJP_BUILDER_Binary(id)
#define ZRT_VJP_BUILDER_Compare(id) ZRT_VJP_BUILDER_Binary(id)
#define ZRT_VJP_BUILDER_BoolUnary(id) ZRT_VJP_BUILDER_Unary(id)
#define ZRT_VJP_BUILDER_BoolBinary(id) ZRT_VJP_BUILDER_Binary(id)
#define ZRT_VJP_BUILDER_Mask(id) ZRT_VJP_BUILDER_Binary(id)
#define ZRT_VJP_BUILDER_Select(id)                                             \
  constexpr Expr id(const Expr &a, const Expr &b, const Expr &c) {             \
    return a.then(b).then(c).apply(element_row::id);                           \
  }
#define ZRT_VJP_BUILDER(id, name, arity, ...)                          \
  ZRT_VJP_BUILDER_##arity(id)
ZRT_ELEMENT_KERNEL_LIST(ZRT_VJP_BUILDER)
#undef ZRT_VJP_BUILDER
#undef ZRT_VJP_BUILDER_Unary
#undef ZRT_VJP_BUILDER_Binary
#undef ZRT_VJP_BUILDER_Grad
#undef ZRT_VJP_BUILDER_Compare
#undef ZRT_VJP_BUILDER_BoolUnary
#undef ZRT_VJP_BUILDER_BoolBinary
#undef ZRT_VJP_BUILDER_Mask
#undef ZRT_VJP_BUILDER_Select

#define ZRT_VJP_OF(id, name, arity, method, params, torch, traits, value,      \
                   vjp, doc)                                                   \
  vjp,
/// Each row's gradients, in kElementRows order.
inline constexpr Vjp kElementVjps[] = {ZRT_ELEMENT_KERNEL_LIST(ZRT_VJP_OF)};
#undef ZRT_VJP_OF

static_assert(sizeof(kElementVjps) / sizeof(kElementVjps[0]) ==
                  static_cast<size_t>(kElementRowCount),
              "one Vjp per row");

/// The number of operands of row `row`.
constexpr int operandCount(int row) {
  return elementOperandCount(kElementRows[row].arity);
}

} // namespace zcc::runtime::vjp

#endif // ZCC_RUNTIME_ELEMENTVJP_H
