//===- KernelRules.cpp - kernel names and the rules every launch obeys ----===//
//
// The rules every launch obeys, over plan tensors: operand counts, dtypes
// the executors implement, shapes, parameter values, and what a plan file
// read from disk must also be held to (operands within the kernels' rank
// limit and with sane sizes). Passing them is what lets a kernel index its
// operands without any bounds check of its own. They are most zt ops'
// verifiers too (ZT_KernelRules: checkKernelTypes), and for the kernels in
// ZRT_INFERRED_KERNELS the one place their results' types come from.
//
//===----------------------------------------------------------------------===//

#include "zcc/Runtime/Plan/KernelRules.h"
#include "zcc/Runtime/Plan/ShapeRules.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

using namespace zcc::runtime;

namespace {

/// Bounds the product of an operand's non-zero dimensions, so every stride,
/// offset and element count the kernels derive fits in int64_t with room to
/// spare (an odometer may step a few sizes past the end before it wraps).
constexpr int64_t kMaxElements = int64_t(1) << 60;
/// BLAS takes 32-bit sizes and leading dimensions.
constexpr int64_t kMaxBlasDim = std::numeric_limits<int32_t>::max();

std::string formatList(const std::vector<int64_t> &values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i)
      text += ", ";
    text += std::to_string(values[i]);
  }
  return text + "]";
}

/// One launch under check: its operands' types, its parameters, and error
/// messages that name the rule broken after `prefix` ("launch 3 (softmax):
/// " for a plan's launch; nothing for a zt op, whose verifier names it).
class LaunchRules {
public:
  LaunchRules(KernelId id, const LaunchParams &params,
              std::vector<const TensorType *> inputs,
              std::vector<const TensorType *> outputs, std::string prefix)
      : params(params), id(id), inputs(std::move(inputs)),
        outputs(std::move(outputs)), prefix(std::move(prefix)) {}

  template <typename... Parts> Status fail(const Parts &...parts) const {
    return makeError(StatusCode::InvalidPlan, prefix, parts...);
  }

  size_t numInputs() const { return inputs.size(); }
  size_t numOutputs() const { return outputs.size(); }
  const TensorType &input(size_t i) const { return *inputs[i]; }
  const TensorType &output(size_t i) const { return *outputs[i]; }

  //===--------------------------------------------------------------------===//
  // Operands
  //===--------------------------------------------------------------------===//

  /// Every operand has a known element type, a rank the kernels handle, and
  /// a size whose strides cannot overflow.
  Status checkOperands() const {
    for (int side = 0; side < 2; ++side) {
      const std::vector<const TensorType *> &list =
          side == 0 ? inputs : outputs;
      const char *what = side == 0 ? "input" : "output";
      for (size_t i = 0; i < list.size(); ++i) {
        const TensorType &type = *list[i];
        if (dtypeBytes(type.dtype) == 0)
          return fail(what, " #", i, " has an unknown element type (",
                      static_cast<int>(type.dtype), ")");
        if (type.rank() > kMaxKernelRank)
          return fail(what, " #", i, " has rank ", type.rank(),
                      ", above the kernels' limit of ", kMaxKernelRank);
        int64_t product = 1;
        for (int64_t dim : type.shape) {
          if (dim < 0)
            return fail(what, " #", i,
                        " has a negative dimension: ", formatList(type.shape));
          if (dim != 0 && product > kMaxElements / dim)
            return fail(what, " #", i,
                        " is too large: ", formatList(type.shape));
          if (dim != 0)
            product *= dim;
        }
      }
    }
    return Status::ok();
  }

  Status expectInputs(size_t inputs) const {
    if (numInputs() != inputs)
      return fail("expected ", inputs, " input", inputs == 1 ? "" : "s",
                  ", got ", numInputs());
    return Status::ok();
  }

  Status expectCounts(size_t inputs, size_t outputs) const {
    if (numInputs() != inputs || numOutputs() != outputs)
      return fail("expected ", inputs, " inputs and ", outputs,
                  " outputs, got ", numInputs(), " and ", numOutputs());
    return Status::ok();
  }

  Status expectFloat(const char *role, const TensorType &type) const {
    if (type.dtype != DType::F32)
      return fail(role, " must be an f32 tensor, got ", typeString(type));
    return Status::ok();
  }

  /// f32, or bf16 for the kernels that also store mixed precision's
  /// activations (element kernels, products, conversions).
  Status expectF32OrBf16(const char *role, const TensorType &type) const {
    if (!isAnyFloat(type.dtype))
      return fail(role, " must be an f32 or bf16 tensor, got ",
                  typeString(type));
    return Status::ok();
  }

  Status expectIndex(const char *role, const TensorType &type) const {
    if (type.dtype != DType::I32 && type.dtype != DType::I64)
      return fail(role, " must be an i32 or i64 tensor, got ",
                  typeString(type));
    return Status::ok();
  }

  /// The step counter: a rank-0 i64.
  Status expectStep(const char *role, const TensorType &type) const {
    if (type.dtype != DType::I64 || type.rank() != 0)
      return fail(role, " must be a rank-0 i64 tensor, got ", typeString(type));
    return Status::ok();
  }

  Status expectFloatScalar(const char *role, const TensorType &type) const {
    if (type.dtype != DType::F32 || type.rank() != 0)
      return fail(role, " must be a rank-0 f32 tensor, got ", typeString(type));
    return Status::ok();
  }

  Status expectSameType(const char *role, const TensorType &type,
                        const char *refRole, const TensorType &ref) const {
    if (type.dtype != ref.dtype || type.shape != ref.shape)
      return fail(role, " type ", typeString(type), " must match ", refRole,
                  " type ", typeString(ref));
    return Status::ok();
  }

  Status expectSameDType(const char *role, const TensorType &type,
                         const char *refRole, const TensorType &ref) const {
    if (type.dtype != ref.dtype)
      return fail(role, " element type ", dtypeName(type.dtype), " must match ",
                  refRole, " element type ", dtypeName(ref.dtype));
    return Status::ok();
  }

  Status expectShape(const char *role, const TensorType &type,
                     const std::vector<int64_t> &expected) const {
    if (type.shape != expected)
      return fail("expected ", role, " shape ", formatList(expected), ", got ",
                  typeString(type));
    return Status::ok();
  }

  /// A shape rule's verdict (ShapeRules.h, the zt verifiers' too) as this
  /// launch's error.
  Status expectRule(const Status &verdict) const {
    return verdict.isOk() ? verdict : fail(verdict.message());
  }

  //===--------------------------------------------------------------------===//
  // Parameters
  //===--------------------------------------------------------------------===//

  /// `lo <= value` (or `lo < value`) and `value < hiExclusive`, finite.
  Status expectRange(const char *name, double value, double lo,
                     bool loInclusive,
                     std::optional<double> hiExclusive) const {
    bool ok = std::isfinite(value) &&
              (loInclusive ? value >= lo : value > lo) &&
              (!hiExclusive || value < *hiExclusive);
    if (ok)
      return Status::ok();
    std::string bound =
        std::string(loInclusive ? ">= " : "> ") + formatNumber(lo);
    if (hiExclusive)
      bound += " and < " + formatNumber(*hiExclusive);
    return fail(name, " must be ", bound, ", got ", formatNumber(value));
  }

  static std::string formatNumber(double value) {
    std::ostringstream os;
    os << value;
    return os.str();
  }

  //===--------------------------------------------------------------------===//
  // Shared rules
  //===--------------------------------------------------------------------===//

  /// Strictly increasing and within [0, rank).
  Status expectDimList(const char *name, const std::vector<int64_t> &dims,
                       int64_t rank) const {
    return expectRule(dimListRule(name, dims, rank));
  }

  /// `axis` (negative counts from the end) names a dimension of `type`.
  Status expectAxis(const TensorType &type) const {
    return expectRule(axisRule(type.shape, params.axis));
  }

  /// The shape a reduction over `dims` of `operand` gives.
  Status expectReduction(const TensorType &operand, const char *resultRole,
                         const TensorType &result) const {
    Shape expected;
    ZRT_RETURN_IF_ERROR(expectRule(
        reductionShape(operand.shape, params.dims, params.keepDims, expected)));
    return expectShape(resultRole, result, expected);
  }

  /// The slice ranges select `part` of `whole`.
  Status expectSliceRanges(const TensorType &whole, const char *partRole,
                           const TensorType &part) const {
    Shape expected;
    ZRT_RETURN_IF_ERROR(expectRule(
        sliceShape(whole.shape, params.startIndices, params.limitIndices,
                   params.strides, expected)));
    return expectShape(partRole, part, expected);
  }

  /// Normalisation over the last dimension: rank >= 1, affine parameters
  /// of shape [D], epsilon > 0.
  Status expectNorm(const TensorType &operand, const char *affineRole,
                    const TensorType &affine) const {
    ZRT_RETURN_IF_ERROR(expectFloat(affineRole, affine));
    return expectRule(
        normRule(operand.shape, {affineRole}, {affine.shape}, params.epsilon));
  }

  /// `logits` [N..., C] and integer `labels` [N...].
  Status expectLogitsAndLabels(const TensorType &logits,
                               const TensorType &labels) const {
    ZRT_RETURN_IF_ERROR(expectF32OrBf16("logits", logits));
    ZRT_RETURN_IF_ERROR(expectIndex("labels", labels));
    return expectRule(logitsLabelsRule(logits.shape, labels.shape));
  }

  const LaunchParams &params;
  KernelId id;

private:
  std::vector<const TensorType *> inputs, outputs;
  std::string prefix;
};

//===----------------------------------------------------------------------===//
// Rules per kernel family
//===----------------------------------------------------------------------===//

Status checkElementwise(const LaunchRules &r, size_t arity,
                        const char *const *roles, bool bf16 = false) {
  ZRT_RETURN_IF_ERROR(r.expectCounts(arity, 1));
  ZRT_RETURN_IF_ERROR(bf16 ? r.expectF32OrBf16(roles[0], r.input(0))
                           : r.expectFloat(roles[0], r.input(0)));
  for (size_t i = 1; i < arity; ++i)
    ZRT_RETURN_IF_ERROR(
        r.expectSameType(roles[i], r.input(i), roles[0], r.input(0)));
  return r.expectSameType("result", r.output(0), roles[0], r.input(0));
}

/// The element kernels with bool operands or results (ElementArity):
/// operands and result of one shape; a comparison's operands of one type
/// and a bool result; logical ops all bool; mask and select a bool
/// condition and choices of the result's type (mask: a float).
Status checkMixedElementwise(const LaunchRules &r, ElementArity arity) {
  static const char *const kRoles[][3] = {{"lhs", "rhs", ""},
                                          {"operand", "", ""},
                                          {"condition", "operand", ""},
                                          {"condition", "on_true", "on_false"}};
  const char *const *roles = arity == ElementArity::BoolUnary ? kRoles[1]
                             : arity == ElementArity::Mask    ? kRoles[2]
                             : arity == ElementArity::Select  ? kRoles[3]
                                                              : kRoles[0];
  size_t n = static_cast<size_t>(elementOperandCount(arity));
  ZRT_RETURN_IF_ERROR(r.expectCounts(n, 1));
  const TensorType &result = r.output(0);
  for (size_t i = 0; i < n; ++i)
    ZRT_RETURN_IF_ERROR(r.expectShape(roles[i], r.input(i), result.shape));
  auto expectBool = [&](const char *role, const TensorType &type) {
    return type.dtype == DType::Bool
               ? Status::ok()
               : r.fail(role, " must be a bool tensor, got ", typeString(type));
  };
  switch (arity) {
  case ElementArity::Compare:
    ZRT_RETURN_IF_ERROR(
        r.expectSameDType("rhs", r.input(1), "lhs", r.input(0)));
    return expectBool("result", result);
  case ElementArity::BoolUnary:
  case ElementArity::BoolBinary:
    for (size_t i = 0; i < n; ++i)
      ZRT_RETURN_IF_ERROR(expectBool(roles[i], r.input(i)));
    return expectBool("result", result);
  case ElementArity::Mask:
    ZRT_RETURN_IF_ERROR(expectBool(roles[0], r.input(0)));
    ZRT_RETURN_IF_ERROR(r.expectF32OrBf16(roles[1], r.input(1)));
    return r.expectSameType("result", result, roles[1], r.input(1));
  case ElementArity::Select:
    ZRT_RETURN_IF_ERROR(expectBool(roles[0], r.input(0)));
    ZRT_RETURN_IF_ERROR(
        r.expectSameType(roles[2], r.input(2), roles[1], r.input(1)));
    return r.expectSameType("result", result, roles[1], r.input(1));
  default:
    return r.fail("not an element kernel with bool operands");
  }
}

/// zt.fused: a program fusedProgram accepts, its 1 to kMaxFusedInputs
/// operands and 1 to kMaxFusedOutputs results of one float type and shape
/// (operands may be strided views of that shape), then the step counter
/// when it has a dropout.
Status checkFused(const LaunchRules &r) {
  if (r.numOutputs() < 1 ||
      r.numOutputs() > static_cast<size_t>(kMaxFusedOutputs))
    return r.fail("expected 1 to ", kMaxFusedOutputs, " outputs, got ",
                  r.numOutputs());
  FusedProgram program;
  ZRT_RETURN_IF_ERROR(r.expectRule(
      fusedProgram(r.params, r.numInputs(), r.numOutputs(), program)));
  const TensorType &result = r.output(0);
  ZRT_RETURN_IF_ERROR(r.expectF32OrBf16("result", result));
  for (size_t i = 0; i < program.operands + r.numOutputs(); ++i) {
    bool input = i < program.operands;
    size_t k = input ? i : i - program.operands;
    std::string role = (input ? "operand #" : "result #") + std::to_string(k);
    ZRT_RETURN_IF_ERROR(r.expectSameType(
        role.c_str(), input ? r.input(k) : r.output(k), "result", result));
  }
  if (program.readsStep)
    return r.expectStep("step (after the operands, for dropout)",
                        r.input(program.operands));
  return Status::ok();
}

Status checkConstant(const LaunchRules &r) {
  ZRT_RETURN_IF_ERROR(r.expectCounts(0, 1));
  double value = r.params.value;
  const TensorType &result = r.output(0);
  // The kernel converts the value to the element type: out-of-range
  // conversions are undefined, so they are plan errors.
  switch (result.dtype) {
  case DType::F32:
    if (std::isfinite(value) && std::fabs(value) > FLT_MAX)
      return r.fail("value ", LaunchRules::formatNumber(value),
                    " is out of range for f32");
    return Status::ok();
  case DType::I32:
    if (!(value >= -2147483648.0 && value < 2147483648.0))
      return r.fail("value ", LaunchRules::formatNumber(value),
                    " is out of range for i32");
    return Status::ok();
  case DType::I64:
    if (!(value >= -9223372036854775808.0 && value < 9223372036854775808.0))
      return r.fail("value ", LaunchRules::formatNumber(value),
                    " is out of range for i64");
    return Status::ok();
  case DType::BF16: // rounded to the nearest bf16, as zt.convert does
    if (std::isfinite(value) && std::fabs(value) > FLT_MAX)
      return r.fail("value ", LaunchRules::formatNumber(value),
                    " is out of range for bf16");
    return Status::ok();
  case DType::Bool:
    if (value != 0.0 && value != 1.0)
      return r.fail("value ", LaunchRules::formatNumber(value),
                    " is not a bool (0 or 1)");
    return Status::ok();
  }
  return r.fail("result has an unknown element type");
}

Status checkCausalMask(const LaunchRules &r) {
  ZRT_RETURN_IF_ERROR(r.expectCounts(0, 1));
  const TensorType &result = r.output(0);
  ZRT_RETURN_IF_ERROR(r.expectFloat("result", result));
  if (result.rank() != 2 || result.shape[0] != result.shape[1])
    return r.fail("result must be a square 2-D tensor, got ",
                  typeString(result));
  return Status::ok();
}

Status checkBroadcastInDim(const LaunchRules &r) {
  ZRT_RETURN_IF_ERROR(r.expectCounts(1, 1));
  const TensorType &operand = r.input(0), &result = r.output(0);
  ZRT_RETURN_IF_ERROR(r.expectSameDType("result", result, "operand", operand));
  const std::vector<int64_t> *dims = &r.params.broadcastDimensions;
  if (static_cast<int64_t>(dims->size()) != operand.rank())
    return r.fail("broadcast_dimensions has ", dims->size(),
                  " entries but the operand has rank ", operand.rank());
  ZRT_RETURN_IF_ERROR(
      r.expectDimList("broadcast_dimensions", *dims, result.rank()));
  for (size_t i = 0; i < dims->size(); ++i) {
    int64_t from = operand.shape[i], to = result.shape[(*dims)[i]];
    if (from != 1 && from != to)
      return r.fail("operand dimension ", i, " (size ", from,
                    ") cannot broadcast to result dimension ", (*dims)[i],
                    " (size ", to, "): it must be 1 or ", to);
  }
  return Status::ok();
}

Status checkTranspose(const LaunchRules &r) {
  ZRT_RETURN_IF_ERROR(r.expectCounts(1, 1));
  const TensorType &operand = r.input(0), &result = r.output(0);
  ZRT_RETURN_IF_ERROR(r.expectSameDType("result", result, "operand", operand));
  Shape expected;
  ZRT_RETURN_IF_ERROR(r.expectRule(
      transposeShape(operand.shape, r.params.permutation, expected)));
  return r.expectShape("result", result, expected);
}

Status checkConcat(const LaunchRules &r) {
  if (r.numInputs() < 1 || r.numOutputs() != 1)
    return r.fail("expected at least 1 input and 1 output, got ", r.numInputs(),
                  " and ", r.numOutputs());
  const TensorType &first = r.input(0);
  std::vector<Shape> shapes;
  for (size_t i = 0; i < r.numInputs(); ++i) {
    const TensorType &type = r.input(i);
    if (type.dtype != first.dtype)
      return r.fail("operand #", i, " has element type ", dtypeName(type.dtype),
                    ", expected ", dtypeName(first.dtype));
    shapes.push_back(type.shape);
  }
  Shape expected;
  ZRT_RETURN_IF_ERROR(
      r.expectRule(concatShape(shapes, r.params.dimension, expected)));
  // Each size is below 2^60 (checkOperands), so their sum cannot overflow.
  if (expected[r.params.dimension] > kMaxElements)
    return r.fail("the concatenated dimension is too large");
  ZRT_RETURN_IF_ERROR(
      r.expectSameDType("result", r.output(0), "operand #0", first));
  return r.expectShape("result", r.output(0), expected);
}

Status checkMatmul(const LaunchRules &r) {
  ZRT_RETURN_IF_ERROR(r.expectCounts(2, 1));
  const TensorType &lhs = r.input(0), &rhs = r.input(1), &result = r.output(0);
  // f32 products, or bf16 operands accumulated in f32 into an f32 or a bf16
  // result (mixed precision).
  ZRT_RETURN_IF_ERROR(r.expectF32OrBf16("lhs", lhs));
  ZRT_RETURN_IF_ERROR(r.expectSameDType("rhs", rhs, "lhs", lhs));
  ZRT_RETURN_IF_ERROR(r.expectF32OrBf16("result", result));
  if (lhs.dtype == DType::F32 && result.dtype != DType::F32)
    return r.fail("a product of f32 operands must have an f32 result, got ",
                  typeString(result));
  if (r.params.tf32 && lhs.dtype != DType::F32)
    return r.fail("tf32 applies to products of f32 operands, not ",
                  typeString(lhs));
  Shape expected;
  ZRT_RETURN_IF_ERROR(r.expectRule(matmulShape(lhs.shape, rhs.shape,
                                               r.params.transposeLhs,
                                               r.params.transposeRhs, expected)));
  // The summed dimension is lhs's last (first, transposed).
  int64_t k = lhs.shape[lhs.rank() - (r.params.transposeLhs ? 2 : 1)];
  int64_t m = expected[expected.size() - 2], n = expected.back();
  if (m > kMaxBlasDim || n > kMaxBlasDim || k > kMaxBlasDim)
    return r.fail("matrix sizes exceed the BLAS limit of ", kMaxBlasDim);
  return r.expectShape("result", result, expected);
}

/// attention (query, key, value[, mask][, step]) -> (result, logsumexp)
/// and attention_grad (query, key, value, result, logsumexp, result_grad[,
/// mask][, step]) -> (query_grad, key_grad, value_grad); a step exactly
/// with dropout (and its seed).
Status checkAttention(const LaunchRules &r, bool isGrad) {
  size_t operands = isGrad ? 6 : 3;
  bool dropout = r.params.dropout.has_value();
  bool masked = r.numInputs() == operands + 1 + (dropout ? 1 : 0);
  ZRT_RETURN_IF_ERROR(r.expectCounts(operands + masked + dropout,
                                     isGrad ? 3 : 2));
  if (dropout) {
    double p = *r.params.dropout;
    if (!(p >= 0.0 && p < 1.0))
      return r.fail("dropout must be in [0, 1), got ",
                    LaunchRules::formatNumber(p));
    if (!r.params.dropoutSeed)
      return r.fail("dropout needs its seed");
    ZRT_RETURN_IF_ERROR(r.expectStep("step", r.input(r.numInputs() - 1)));
  } else if (r.params.dropoutSeed) {
    return r.fail("a seed without dropout");
  }
  // Operands and results f32, or bf16 (mixed precision); the logsumexp f32.
  const TensorType &q = r.input(0), &k = r.input(1), &v = r.input(2);
  ZRT_RETURN_IF_ERROR(r.expectF32OrBf16("query", q));
  ZRT_RETURN_IF_ERROR(r.expectSameDType("key", k, "query", q));
  ZRT_RETURN_IF_ERROR(r.expectSameDType("value", v, "query", q));
  Shape result, logsumexp;
  ZRT_RETURN_IF_ERROR(r.expectRule(attentionShapes(
      q.shape, k.shape, v.shape, r.params.scale, result, logsumexp)));
  if (masked) {
    const TensorType &mask = r.input(operands);
    if (mask.dtype != DType::Bool)
      return r.fail("mask must be a bool tensor, got ", typeString(mask));
    ZRT_RETURN_IF_ERROR(
        r.expectRule(attentionMaskRule(mask.shape, q.shape, k.shape)));
  }
  int64_t rank = q.rank();
  for (int64_t size : {q.shape[rank - 2], q.shape[rank - 1], k.shape[rank - 2],
                       v.shape[rank - 1], shapeProduct(q.shape, 0, rank - 2)})
    if (size > kMaxBlasDim)
      return r.fail("sizes exceed the BLAS limit of ", kMaxBlasDim);
  if (!isGrad) {
    ZRT_RETURN_IF_ERROR(r.expectSameDType("result", r.output(0), "query", q));
    ZRT_RETURN_IF_ERROR(r.expectShape("result", r.output(0), result));
    ZRT_RETURN_IF_ERROR(r.expectFloat("logsumexp", r.output(1)));
    return r.expectShape("logsumexp", r.output(1), logsumexp);
  }
  ZRT_RETURN_IF_ERROR(r.expectSameDType("result", r.input(3), "query", q));
  ZRT_RETURN_IF_ERROR(r.expectShape("result", r.input(3), result));
  ZRT_RETURN_IF_ERROR(r.expectFloat("logsumexp", r.input(4)));
  ZRT_RETURN_IF_ERROR(r.expectShape("logsumexp", r.input(4), logsumexp));
  ZRT_RETURN_IF_ERROR(
      r.expectSameType("result_grad", r.input(5), "result", r.input(3)));
  ZRT_RETURN_IF_ERROR(r.expectSameType("query_grad", r.output(0), "query", q));
  ZRT_RETURN_IF_ERROR(r.expectSameType("key_grad", r.output(1), "key", k));
  return r.expectSameType("value_grad", r.output(2), "value", v);
}

/// Cross-entropy's label_smoothing, when stated: in [0, 1], as PyTorch's.
Status checkLabelSmoothing(const LaunchRules &r) {
  std::optional<double> e = r.params.labelSmoothing;
  if (e && !(*e >= 0.0 && *e <= 1.0))
    return r.fail("label_smoothing must be in [0, 1], got ", *e);
  return Status::ok();
}

/// The normalizations read f32 or bf16 activations (mixed precision) and
/// f32 affine parameters.
Status checkNorm(const LaunchRules &r, bool withBeta) {
  ZRT_RETURN_IF_ERROR(r.expectCounts(withBeta ? 3 : 2, 1));
  const TensorType &operand = r.input(0);
  ZRT_RETURN_IF_ERROR(r.expectF32OrBf16("operand", operand));
  ZRT_RETURN_IF_ERROR(r.expectNorm(operand, "gamma", r.input(1)));
  if (withBeta)
    ZRT_RETURN_IF_ERROR(r.expectNorm(operand, "beta", r.input(2)));
  return r.expectSameType("result", r.output(0), "operand", operand);
}

/// layer_norm_grad (x, gamma, dy) -> (dx, dgamma, dbeta) and rms_norm_grad
/// (x, gamma, dy) -> (dx, dgamma).
Status checkNormGrad(const LaunchRules &r, bool withBeta) {
  ZRT_RETURN_IF_ERROR(r.expectCounts(3, withBeta ? 3 : 2));
  const TensorType &operand = r.input(0), &gamma = r.input(1);
  ZRT_RETURN_IF_ERROR(r.expectF32OrBf16("operand", operand));
  ZRT_RETURN_IF_ERROR(r.expectNorm(operand, "gamma", gamma));
  ZRT_RETURN_IF_ERROR(r.expectSameType("grad", r.input(2), "operand", operand));
  ZRT_RETURN_IF_ERROR(
      r.expectSameType("operand_grad", r.output(0), "operand", operand));
  ZRT_RETURN_IF_ERROR(
      r.expectSameType("gamma_grad", r.output(1), "gamma", gamma));
  if (withBeta)
    ZRT_RETURN_IF_ERROR(
        r.expectSameType("beta_grad", r.output(2), "gamma", gamma));
  return Status::ok();
}

Status checkEmbedding(const LaunchRules &r) {
  ZRT_RETURN_IF_ERROR(r.expectCounts(2, 1));
  const TensorType &table = r.input(0), &indices = r.input(1);
  ZRT_RETURN_IF_ERROR(r.expectFloat("table", table));
  ZRT_RETURN_IF_ERROR(r.expectIndex("indices", indices));
  ZRT_RETURN_IF_ERROR(r.expectFloat("result", r.output(0)));
  Shape expected;
  ZRT_RETURN_IF_ERROR(
      r.expectRule(embeddingShape(table.shape, indices.shape, expected)));
  return r.expectShape("result", r.output(0), expected);
}

Status checkEmbeddingGrad(const LaunchRules &r) {
  ZRT_RETURN_IF_ERROR(r.expectCounts(2, 1));
  const TensorType &indices = r.input(0), &grad = r.input(1),
                   &result = r.output(0);
  ZRT_RETURN_IF_ERROR(r.expectIndex("indices", indices));
  ZRT_RETURN_IF_ERROR(r.expectFloat("grad", grad));
  ZRT_RETURN_IF_ERROR(r.expectFloat("result", result));
  Shape expected;
  ZRT_RETURN_IF_ERROR(r.expectRule(
      embeddingShape(result.shape, indices.shape, expected, "result")));
  return r.expectShape("grad", grad, expected);
}

/// The optional inputs after an update's `state` inputs (parameter,
/// gradient and optimizer state): the sum of the squares of the step's
/// gradients when clipping (max_grad_norm > 0), then the learning-rate
/// schedule's factor when there is one more input, a scalar (the ops'
/// operand segments, which a plan does not state). Checks their count and
/// types, and the update's `outputs`.
Status updateInputs(const LaunchRules &r, size_t state, size_t outputs) {
  ZRT_RETURN_IF_ERROR(r.expectRange("max_grad_norm", r.params.maxGradNorm, 0.0,
                                    true, std::nullopt));
  size_t clip = r.params.maxGradNorm > 0 ? 1 : 0;
  if (clip && r.numInputs() < state + 1)
    return r.fail("clipping (max_grad_norm > 0) needs the grad_sum_squares "
                  "input");
  bool scheduled = r.numInputs() == state + clip + 1 &&
                   r.input(state + clip).rank() == 0;
  ZRT_RETURN_IF_ERROR(
      r.expectCounts(state + clip + (scheduled ? 1 : 0), outputs));
  if (clip)
    ZRT_RETURN_IF_ERROR(
        r.expectFloatScalar("grad_sum_squares", r.input(state)));
  if (scheduled)
    ZRT_RETURN_IF_ERROR(
        r.expectFloatScalar("lr_factor", r.input(state + clip)));
  return Status::ok();
}

/// The schedule's parameters, as zt.lr_schedule's verifier states them.
Status checkLrSchedule(const LaunchRules &r) {
  const LaunchParams &p = r.params;
  if (p.warmupSteps < 0)
    return r.fail("warmup_steps must be >= 0, got ", p.warmupSteps);
  if (p.cosine && p.linear)
    return r.fail("decays one way: cosine or linear, not both");
  bool decays = p.cosine || p.linear;
  if (decays && p.decaySteps <= p.warmupSteps)
    return r.fail("decay_steps must be > warmup_steps (", p.warmupSteps,
                  "), got ", p.decaySteps);
  if (!decays && (p.decaySteps != 0 || p.minFactor != 0))
    return r.fail("decay_steps and min_factor need a decay (cosine or "
                  "linear)");
  if (!std::isfinite(p.minFactor) || p.minFactor < 0 || p.minFactor > 1)
    return r.fail("min_factor must be >= 0 and <= 1, got ", p.minFactor);
  return Status::ok();
}

/// An update's gradient (input 1): the parameter's type, or for an f32
/// parameter bf16 of its shape (mixed precision's gradient, widened exactly
/// as it is read).
Status expectGradient(const LaunchRules &r, const TensorType &param) {
  const TensorType &grad = r.input(1);
  if (param.dtype == DType::F32 && grad.dtype == DType::BF16 &&
      grad.shape == param.shape)
    return Status::ok();
  return r.expectSameType("grad", grad, "param", param);
}

Status checkSgd(const LaunchRules &r) {
  double lr = r.params.lr, momentum = r.params.momentum,
         weightDecay = r.params.weightDecay;
  bool nesterov = r.params.nesterov;
  ZRT_RETURN_IF_ERROR(r.expectRange("lr", lr, 0.0, true, std::nullopt));
  ZRT_RETURN_IF_ERROR(r.expectRange("momentum", momentum, 0.0, true, 1.0));
  ZRT_RETURN_IF_ERROR(
      r.expectRange("weight_decay", weightDecay, 0.0, true, std::nullopt));
  bool hasBuffer = momentum != 0.0;
  if (nesterov && !hasBuffer)
    return r.fail("nesterov needs momentum != 0");
  // The momentum buffer is an operand and a result exactly when momentum
  // is on.
  ZRT_RETURN_IF_ERROR(updateInputs(r, hasBuffer ? 3 : 2, hasBuffer ? 2 : 1));
  const TensorType &param = r.input(0);
  ZRT_RETURN_IF_ERROR(r.expectFloat("param", param));
  ZRT_RETURN_IF_ERROR(expectGradient(r, param));
  ZRT_RETURN_IF_ERROR(
      r.expectSameType("new_param", r.output(0), "param", param));
  if (hasBuffer) {
    ZRT_RETURN_IF_ERROR(
        r.expectSameType("momentum_buffer", r.input(2), "param", param));
    ZRT_RETURN_IF_ERROR(
        r.expectSameType("new_momentum_buffer", r.output(1), "param", param));
  }
  return Status::ok();
}

Status checkAdamw(const LaunchRules &r) {
  ZRT_RETURN_IF_ERROR(updateInputs(r, 5, 3));
  const TensorType &param = r.input(0);
  ZRT_RETURN_IF_ERROR(r.expectFloat("param", param));
  ZRT_RETURN_IF_ERROR(expectGradient(r, param));
  ZRT_RETURN_IF_ERROR(r.expectSameType("exp_avg", r.input(2), "param", param));
  ZRT_RETURN_IF_ERROR(
      r.expectSameType("exp_avg_sq", r.input(3), "param", param));
  ZRT_RETURN_IF_ERROR(r.expectStep("step", r.input(4)));
  ZRT_RETURN_IF_ERROR(
      r.expectSameType("new_param", r.output(0), "param", param));
  ZRT_RETURN_IF_ERROR(
      r.expectSameType("new_exp_avg", r.output(1), "param", param));
  ZRT_RETURN_IF_ERROR(
      r.expectSameType("new_exp_avg_sq", r.output(2), "param", param));
  const LaunchParams &p = r.params;
  double lr = p.lr, beta1 = p.beta1, beta2 = p.beta2, eps = p.eps,
         weightDecay = p.weightDecay;
  ZRT_RETURN_IF_ERROR(r.expectRange("lr", lr, 0.0, true, std::nullopt));
  ZRT_RETURN_IF_ERROR(r.expectRange("beta1", beta1, 0.0, true, 1.0));
  ZRT_RETURN_IF_ERROR(r.expectRange("beta2", beta2, 0.0, true, 1.0));
  ZRT_RETURN_IF_ERROR(r.expectRange("eps", eps, 0.0, false, std::nullopt));
  return r.expectRange("weight_decay", weightDecay, 0.0, true, std::nullopt);
}

/// A bucket (all_reduce, pack): output i is input i (reduced over the
/// ranks), in place or copied in first (the loader allows an input in the
/// bytes of its own output only: PlanValidator).
Status checkBucket(const LaunchRules &r) {
  if (r.numInputs() == 0 || r.numInputs() != r.numOutputs())
    return r.fail("expected as many outputs as inputs (at least one), got ",
                  r.numInputs(), " and ", r.numOutputs());
  for (size_t i = 0; i < r.numInputs(); ++i) {
    std::string role = "input #" + std::to_string(i);
    ZRT_RETURN_IF_ERROR(r.expectFloat(role.c_str(), r.input(i)));
    std::string result = "output #" + std::to_string(i);
    ZRT_RETURN_IF_ERROR(r.expectSameType(result.c_str(), r.output(i),
                                         role.c_str(), r.input(i)));
  }
  return Status::ok();
}

/// all_gather: one flat shard in, the flat whole of `ranks` shards out.
Status checkAllGather(const LaunchRules &r) {
  ZRT_RETURN_IF_ERROR(r.expectCounts(1, 1));
  const TensorType &shard = r.input(0), &whole = r.output(0);
  ZRT_RETURN_IF_ERROR(r.expectFloat("the whole", whole));
  ZRT_RETURN_IF_ERROR(r.expectFloat("the shard", shard));
  int64_t ranks = r.params.ranks;
  if (ranks < 1 || ranks > 65536)
    return r.fail("ranks must be from 1 to 65536, got ", ranks);
  if (whole.rank() != 1 || shard.rank() != 1 ||
      whole.shape[0] != ranks * shard.shape[0])
    return r.fail("the whole (", typeString(whole), ") must be ", ranks,
                  " shards (", typeString(shard), "), flat");
  return Status::ok();
}

/// Inputs read as one flat tensor (flattened end to end) and one flat f32
/// shard of them: one or more inputs of the shard's type, `ranks` in range.
/// `total` is the inputs' element count.
Status checkFlatInputs(const LaunchRules &r, int64_t &total) {
  if (r.numInputs() < 1 || r.numOutputs() != 1)
    return r.fail("expected one or more inputs and one output, got ",
                  r.numInputs(), " and ", r.numOutputs());
  const TensorType &shard = r.output(0);
  ZRT_RETURN_IF_ERROR(r.expectFloat("the shard", shard));
  if (shard.rank() != 1)
    return r.fail("the shard (", typeString(shard), ") must be flat");
  if (r.params.ranks < 1 || r.params.ranks > 65536)
    return r.fail("ranks must be from 1 to 65536, got ", r.params.ranks);
  total = 0;
  for (size_t i = 0; i < r.numInputs(); ++i) {
    std::string role = "input #" + std::to_string(i);
    ZRT_RETURN_IF_ERROR(
        r.expectSameDType(role.c_str(), r.input(i), "the shard", shard));
    total += r.input(i).numElements();
  }
  return Status::ok();
}

/// reduce_scatter: its inputs (one tensor of any shape, or a zt.pack's
/// parts) read as one flat tensor of `ranks` shards. That they lie end to
/// end is the program's check (DeviceProgram), where addresses are known.
Status checkReduceScatter(const LaunchRules &r) {
  int64_t total = 0;
  ZRT_RETURN_IF_ERROR(checkFlatInputs(r, total));
  const TensorType &shard = r.output(0);
  if (total != r.params.ranks * shard.shape[0])
    return r.fail("the inputs (", total, " elements) must be ", r.params.ranks,
                  " shards (", typeString(shard), "), flat");
  return Status::ok();
}

/// shard: this rank's part of the inputs flattened end to end, zero padded
/// to `ranks` equal shards.
Status checkShard(const LaunchRules &r) {
  int64_t total = 0;
  ZRT_RETURN_IF_ERROR(checkFlatInputs(r, total));
  int64_t ranks = r.params.ranks, expected = (total + ranks - 1) / ranks;
  if (r.output(0).shape[0] != expected)
    return r.fail("the shard (", typeString(r.output(0)),
                  ") must be flat with ", expected, " elements: ", total,
                  " over ", ranks, " ranks");
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Kernels whose rule infers their results
//===----------------------------------------------------------------------===//
//
// A kernel listed in ZRT_INFERRED_KERNELS states its rule once, as a
// function from its inputs and parameters to its results' types: the
// loader checks a launch's outputs against it, the zt verifier an op's
// results (zt::KernelRules), and the capture API builds the op from it
// (Graph::op). The message names the rule broken.

/// cumsum: running sums of a float tensor along `dim` (negative counts from
/// the end), from its end when `reverse`; the result has the operand's type.
Status inferCumsum(const LaunchRules &r, std::vector<TensorType> &results) {
  ZRT_RETURN_IF_ERROR(r.expectInputs(1));
  if (!isIntegerDType(r.input(0).dtype))
    ZRT_RETURN_IF_ERROR(r.expectFloat("operand", r.input(0)));
  ZRT_RETURN_IF_ERROR(r.expectRule(axisRule(r.input(0).shape, r.params.axis,
                                            "dim")));
  results = {r.input(0)};
  return Status::ok();
}

/// rotary (x, cos, sin): rotary position embeddings over the last dimension
/// of x (even), cos and sin of x's shape (their broadcast read through
/// strides), of x's type or f32 (mixed precision's tables beside bf16 x);
/// the result has x's type. f32, or bf16 under mixed precision.
Status inferRotary(const LaunchRules &r, std::vector<TensorType> &results) {
  ZRT_RETURN_IF_ERROR(r.expectInputs(3));
  const TensorType &x = r.input(0);
  ZRT_RETURN_IF_ERROR(r.expectF32OrBf16("x", x));
  if (x.rank() < 1 || x.shape.back() % 2 != 0)
    return r.fail("x must have an even last dimension (its two halves "
                  "rotate together), got ",
                  typeString(x));
  const char *roles[] = {"cos", "sin"};
  for (size_t i = 1; i < 3; ++i) {
    ZRT_RETURN_IF_ERROR(r.expectShape(roles[i - 1], r.input(i), x.shape));
    if (r.input(i).dtype != DType::F32)
      ZRT_RETURN_IF_ERROR(r.expectSameDType(roles[i - 1], r.input(i), "x", x));
  }
  if (r.input(1).dtype != r.input(2).dtype)
    return r.fail("cos and sin must have one element type, got ",
                  typeString(r.input(1)), " and ", typeString(r.input(2)));
  results = {x};
  return Status::ok();
}

/// conv2d (input, weight) -> result (conv2dShape); its gradients take the
/// forward's operands and the result's gradient: conv2d_input_grad (input,
/// weight, result_grad) -> the input's type, conv2d_weight_grad (input,
/// weight, result_grad) -> the weight's type.
Status conv2dRule(const LaunchRules &r, size_t inputs, TensorType &result) {
  ZRT_RETURN_IF_ERROR(r.expectInputs(inputs));
  const TensorType &x = r.input(0), &w = r.input(1);
  ZRT_RETURN_IF_ERROR(r.expectFloat("input", x));
  ZRT_RETURN_IF_ERROR(r.expectFloat("weight", w));
  Shape shape;
  ZRT_RETURN_IF_ERROR(r.expectRule(
      conv2dShape(x.shape, w.shape, r.params.strides, r.params.padding,
                  r.params.dilation, r.params.groups, shape)));
  result = x;
  result.shape = shape;
  if (inputs == 3)
    ZRT_RETURN_IF_ERROR(
        r.expectSameType("result_grad", r.input(2), "result", result));
  return Status::ok();
}
Status inferConv2d(const LaunchRules &r, std::vector<TensorType> &results) {
  results.resize(1);
  return conv2dRule(r, 2, results[0]);
}
/// Either gradient: the type of the operand it is the gradient of.
Status inferConv2dGrad(const LaunchRules &r, std::vector<TensorType> &results) {
  TensorType y;
  ZRT_RETURN_IF_ERROR(conv2dRule(r, 3, y));
  results = {r.input(r.id == KernelId::Conv2dInputGrad ? 0 : 1)};
  return Status::ok();
}

/// max_pool2d (input) -> result (pool2dShape); max_pool2d_grad (input,
/// result_grad) -> the input's type.
Status inferMaxPool2d(const LaunchRules &r, std::vector<TensorType> &results) {
  bool grad = r.id == KernelId::MaxPool2dGrad;
  ZRT_RETURN_IF_ERROR(r.expectInputs(grad ? 2 : 1));
  const TensorType &x = r.input(0);
  ZRT_RETURN_IF_ERROR(r.expectFloat("input", x));
  TensorType y = x;
  ZRT_RETURN_IF_ERROR(r.expectRule(
      pool2dShape(x.shape, r.params.kernelSize, r.params.strides,
                  r.params.padding, r.params.dilation, r.params.ceilMode,
                  y.shape)));
  if (grad)
    ZRT_RETURN_IF_ERROR(r.expectSameType("result_grad", r.input(1), "result", y));
  results = {grad ? x : y};
  return Status::ok();
}

/// Training-mode BatchNorm over [N, C, ...] (rank >= 2; the statistics of
/// each channel over every other dimension): batch_norm_stats (input) ->
/// [2, C] (row 0 the means, row 1 the biased variances); its gradient
/// batch_norm_stats_grad (input, stats, stats_grad) -> the input's type;
/// batch_norm (input, stats, gamma [C], beta [C]) -> the input's type;
/// batch_norm_grad (input, stats, gamma, result_grad) -> the input's,
/// gamma's and beta's types. epsilon > 0.
Status inferBatchNorm(const LaunchRules &r, std::vector<TensorType> &results) {
  static const size_t kInputs[] = {1, 3, 4, 4};
  size_t which = r.id == KernelId::BatchNormStats       ? 0
                 : r.id == KernelId::BatchNormStatsGrad ? 1
                 : r.id == KernelId::BatchNorm          ? 2
                                                        : 3;
  ZRT_RETURN_IF_ERROR(r.expectInputs(kInputs[which]));
  const TensorType &x = r.input(0);
  ZRT_RETURN_IF_ERROR(r.expectFloat("input", x));
  if (x.rank() < 2)
    return r.fail("input must be [N, C, ...] (rank 2 or more), got ",
                  typeString(x));
  int64_t channels = x.shape[1];
  TensorType stats{DType::F32, {2, channels}}, perChannel{DType::F32, {channels}};
  if (which == 0) {
    results = {stats};
    return Status::ok();
  }
  ZRT_RETURN_IF_ERROR(r.expectSameType("stats", r.input(1), "[2, C]", stats));
  if (which == 1) {
    ZRT_RETURN_IF_ERROR(
        r.expectSameType("stats_grad", r.input(2), "stats", stats));
    results = {x};
    return Status::ok();
  }
  ZRT_RETURN_IF_ERROR(
      r.expectRange("epsilon", r.params.epsilon, 0, false, std::nullopt));
  ZRT_RETURN_IF_ERROR(r.expectSameType("gamma", r.input(2), "[C]", perChannel));
  if (which == 2) {
    ZRT_RETURN_IF_ERROR(r.expectSameType("beta", r.input(3), "[C]", perChannel));
    results = {x};
    return Status::ok();
  }
  ZRT_RETURN_IF_ERROR(r.expectSameType("result_grad", r.input(3), "input", x));
  results = {x, perChannel, perChannel};
  return Status::ok();
}

#define ZRT_INFERRED_KERNELS(X)                                                \
  X(BatchNormStats, inferBatchNorm)                                            \
  X(BatchNormStatsGrad, inferBatchNorm)                                        \
  X(BatchNorm, inferBatchNorm)                                                 \
  X(BatchNormGrad, inferBatchNorm)                                             \
  X(MaxPool2d, inferMaxPool2d)                                                 \
  X(MaxPool2dGrad, inferMaxPool2d)                                             \
  X(Cumsum, inferCumsum)                                                       \
  X(Rotary, inferRotary)                                                       \
  X(Conv2d, inferConv2d)                                                       \
  X(Conv2dInputGrad, inferConv2dGrad)                                          \
  X(Conv2dWeightGrad, inferConv2dGrad)

Status inferResults(const LaunchRules &r, std::vector<TensorType> &results) {
  switch (r.id) {
#define ZRT_INFER(kernel, rule)                                                \
  case KernelId::kernel:                                                       \
    return rule(r, results);
    ZRT_INFERRED_KERNELS(ZRT_INFER)
#undef ZRT_INFER
  default:
    return r.fail(kernelName(r.id), " has no rule that infers its results");
  }
}

/// A launch of an inferred kernel: its outputs are the ones its rule gives.
Status checkInferred(const LaunchRules &r) {
  std::vector<TensorType> expected;
  ZRT_RETURN_IF_ERROR(inferResults(r, expected));
  if (r.numOutputs() != expected.size())
    return r.fail("expected ", expected.size(), " result",
                  expected.size() == 1 ? "" : "s", ", got ", r.numOutputs());
  for (size_t i = 0; i < expected.size(); ++i)
    if (r.output(i).dtype != expected[i].dtype ||
        r.output(i).shape != expected[i].shape)
      return r.fail("expected result", expected.size() == 1 ? "" : " #",
                    expected.size() == 1 ? "" : std::to_string(i), " type ",
                    typeString(expected[i]), ", got ", typeString(r.output(i)));
  return Status::ok();
}

Status checkKernel(const LaunchRules &r) {
  static const char *const kBinaryRoles[] = {"lhs", "rhs"};
  static const char *const kUnaryRoles[] = {"operand"};
  static const char *const kGradRoles[] = {"saved", "grad"};
  if (const ElementRow *row = elementRow(r.id)) {
    // Infinities are bounds (clamp's open ends); NaN is never a number.
    for (int k = 0; k < row->paramCount; ++k)
      if (std::isnan(r.params.elementParams[k]))
        return r.fail(row->paramNames[k], " must be a number, got nan");
    switch (row->arity) {
    case ElementArity::Unary:
      return checkElementwise(r, 1, kUnaryRoles, /*bf16=*/true);
    case ElementArity::Binary:
      if ((row->traits & kIntegers) && r.numInputs() == 2 &&
          (r.input(0).dtype == DType::I32 || r.input(0).dtype == DType::I64)) {
        ZRT_RETURN_IF_ERROR(r.expectCounts(2, 1));
        ZRT_RETURN_IF_ERROR(
            r.expectSameType("rhs", r.input(1), "lhs", r.input(0)));
        return r.expectSameType("result", r.output(0), "lhs", r.input(0));
      }
      return checkElementwise(r, 2, kBinaryRoles, /*bf16=*/true);
    case ElementArity::Grad:
      return checkElementwise(r, 2, kGradRoles, /*bf16=*/true);
    case ElementArity::Compare:
    case ElementArity::BoolUnary:
    case ElementArity::BoolBinary:
    case ElementArity::Mask:
    case ElementArity::Select:
      return checkMixedElementwise(r, row->arity);
    }
  }
  if (kernelInfersResults(r.id))
    return checkInferred(r);
  switch (r.id) {
  case KernelId::Scale: {
    ZRT_RETURN_IF_ERROR(checkElementwise(r, 1, kUnaryRoles, /*bf16=*/true));
    double factor = r.params.factor;
    if (!std::isfinite(factor))
      return r.fail("factor must be finite, got ",
                    LaunchRules::formatNumber(factor));
    return Status::ok();
  }
  case KernelId::Constant:
    return checkConstant(r);
  case KernelId::CausalMask:
    return checkCausalMask(r);
  case KernelId::BroadcastInDim:
    return checkBroadcastInDim(r);
  case KernelId::Transpose:
    return checkTranspose(r);
  case KernelId::Slice:
    ZRT_RETURN_IF_ERROR(r.expectCounts(1, 1));
    ZRT_RETURN_IF_ERROR(
        r.expectSameDType("result", r.output(0), "operand", r.input(0)));
    return r.expectSliceRanges(r.input(0), "result", r.output(0));
  case KernelId::SliceGrad:
    ZRT_RETURN_IF_ERROR(r.expectCounts(1, 1));
    ZRT_RETURN_IF_ERROR(r.expectF32OrBf16("grad", r.input(0)));
    ZRT_RETURN_IF_ERROR(
        r.expectSameDType("result", r.output(0), "grad", r.input(0)));
    // The ranges index the result (the forward slice's operand).
    return r.expectSliceRanges(r.output(0), "grad", r.input(0));
  case KernelId::Concat:
    return checkConcat(r);
  case KernelId::Sum:
  case KernelId::Mean:
  case KernelId::Max:
    ZRT_RETURN_IF_ERROR(r.expectCounts(1, 1));
    ZRT_RETURN_IF_ERROR(r.expectF32OrBf16("operand", r.input(0)));
    ZRT_RETURN_IF_ERROR(
        r.expectSameDType("result", r.output(0), "operand", r.input(0)));
    return r.expectReduction(r.input(0), "result", r.output(0));
  case KernelId::MaxGrad:
    ZRT_RETURN_IF_ERROR(r.expectCounts(2, 1));
    ZRT_RETURN_IF_ERROR(r.expectFloat("operand", r.input(0)));
    ZRT_RETURN_IF_ERROR(r.expectFloat("grad", r.input(1)));
    ZRT_RETURN_IF_ERROR(
        r.expectSameType("result", r.output(0), "operand", r.input(0)));
    // `grad` has the shape of the forward max's result.
    return r.expectReduction(r.input(0), "grad", r.input(1));
  case KernelId::Matmul:
    return checkMatmul(r);
  case KernelId::Attention:
    return checkAttention(r, /*isGrad=*/false);
  case KernelId::AttentionGrad:
    return checkAttention(r, /*isGrad=*/true);
  case KernelId::Softmax:
  case KernelId::LogSoftmax:
    ZRT_RETURN_IF_ERROR(checkElementwise(r, 1, kUnaryRoles));
    return r.expectAxis(r.input(0));
  case KernelId::SoftmaxGrad:
  case KernelId::LogSoftmaxGrad: {
    static const char *const kAxisGradRoles[] = {"result_value", "grad"};
    ZRT_RETURN_IF_ERROR(checkElementwise(r, 2, kAxisGradRoles));
    return r.expectAxis(r.input(0));
  }
  case KernelId::LayerNorm:
    return checkNorm(r, /*withBeta=*/true);
  case KernelId::RmsNorm:
    return checkNorm(r, /*withBeta=*/false);
  case KernelId::LayerNormGrad:
    return checkNormGrad(r, /*withBeta=*/true);
  case KernelId::RmsNormGrad:
    return checkNormGrad(r, /*withBeta=*/false);
  case KernelId::Embedding:
    return checkEmbedding(r);
  case KernelId::EmbeddingGrad:
    return checkEmbeddingGrad(r);
  case KernelId::SoftmaxCrossEntropy:
    ZRT_RETURN_IF_ERROR(r.expectCounts(2, 1));
    ZRT_RETURN_IF_ERROR(checkLabelSmoothing(r));
    ZRT_RETURN_IF_ERROR(r.expectLogitsAndLabels(r.input(0), r.input(1)));
    return r.expectFloatScalar("result", r.output(0));
  case KernelId::SoftmaxCrossEntropyGrad:
    ZRT_RETURN_IF_ERROR(r.expectCounts(3, 1));
    ZRT_RETURN_IF_ERROR(checkLabelSmoothing(r));
    ZRT_RETURN_IF_ERROR(r.expectLogitsAndLabels(r.input(0), r.input(1)));
    ZRT_RETURN_IF_ERROR(r.expectFloatScalar("loss_grad", r.input(2)));
    return r.expectSameType("result", r.output(0), "logits", r.input(0));
  case KernelId::SoftmaxCrossEntropyFused: // both of the above in one
    ZRT_RETURN_IF_ERROR(r.expectCounts(3, 2));
    ZRT_RETURN_IF_ERROR(checkLabelSmoothing(r));
    ZRT_RETURN_IF_ERROR(r.expectLogitsAndLabels(r.input(0), r.input(1)));
    ZRT_RETURN_IF_ERROR(r.expectFloatScalar("loss_grad", r.input(2)));
    ZRT_RETURN_IF_ERROR(r.expectFloatScalar("loss", r.output(0)));
    return r.expectSameType("logits_grad", r.output(1), "logits", r.input(0));
  case KernelId::Mse:
    ZRT_RETURN_IF_ERROR(r.expectCounts(2, 1));
    ZRT_RETURN_IF_ERROR(r.expectFloat("prediction", r.input(0)));
    ZRT_RETURN_IF_ERROR(
        r.expectSameType("target", r.input(1), "prediction", r.input(0)));
    return r.expectFloatScalar("result", r.output(0));
  case KernelId::MseGrad:
    ZRT_RETURN_IF_ERROR(r.expectCounts(3, 1));
    ZRT_RETURN_IF_ERROR(r.expectFloat("prediction", r.input(0)));
    ZRT_RETURN_IF_ERROR(
        r.expectSameType("target", r.input(1), "prediction", r.input(0)));
    ZRT_RETURN_IF_ERROR(r.expectFloatScalar("loss_grad", r.input(2)));
    return r.expectSameType("result", r.output(0), "prediction", r.input(0));
  case KernelId::Dropout: {
    ZRT_RETURN_IF_ERROR(r.expectCounts(2, 1));
    ZRT_RETURN_IF_ERROR(r.expectF32OrBf16("operand", r.input(0)));
    ZRT_RETURN_IF_ERROR(r.expectStep("step", r.input(1)));
    ZRT_RETURN_IF_ERROR(
        r.expectSameType("result", r.output(0), "operand", r.input(0)));
    return r.expectRange("rate", r.params.rate, 0.0, true, 1.0);
  }
  case KernelId::SumSquares:
    // The operand, and the running total when it continues one.
    ZRT_RETURN_IF_ERROR(r.expectCounts(r.numInputs() == 1 ? 1 : 2, 1));
    // bf16: mixed precision's gradients, read widened (the sum is f32).
    ZRT_RETURN_IF_ERROR(r.expectF32OrBf16("operand", r.input(0)));
    if (r.numInputs() == 2)
      ZRT_RETURN_IF_ERROR(r.expectFloatScalar("partial", r.input(1)));
    return r.expectFloatScalar("result", r.output(0));
  case KernelId::LrSchedule: {
    ZRT_RETURN_IF_ERROR(r.expectCounts(1, 1));
    ZRT_RETURN_IF_ERROR(r.expectStep("step", r.input(0)));
    ZRT_RETURN_IF_ERROR(r.expectFloatScalar("result", r.output(0)));
    return checkLrSchedule(r);
  }
  case KernelId::Sgd:
    return checkSgd(r);
  case KernelId::Adamw:
    return checkAdamw(r);
  case KernelId::AllReduce:
  case KernelId::Pack:
    return checkBucket(r);
  case KernelId::ReduceScatter:
    return checkReduceScatter(r);
  case KernelId::Shard:
    return checkShard(r);
  case KernelId::AllGather:
    return checkAllGather(r);
  case KernelId::Copy: {
    ZRT_RETURN_IF_ERROR(r.expectCounts(1, 1));
    const TensorType &from = r.input(0), &to = r.output(0);
    ZRT_RETURN_IF_ERROR(r.expectSameDType("result", to, "operand", from));
    if (from.numElements() != to.numElements())
      return r.fail("copies ", from.numElements(), " elements (",
                    typeString(from), ") into ", to.numElements(), " (",
                    typeString(to), ")");
    return Status::ok();
  }
  case KernelId::Convert: {
    ZRT_RETURN_IF_ERROR(r.expectCounts(1, 1));
    const TensorType &from = r.input(0), &to = r.output(0);
    for (auto [role, type] : {std::pair<const char *, const TensorType *>{
                                  "operand", &from},
                              {"result", &to}})
      if (!isAnyFloat(type->dtype) && !isIntegerDType(type->dtype) &&
          type->dtype != DType::Bool)
        return r.fail(role, " must be f32, bf16, i32, i64 or bool, got ",
                      typeString(*type));
    if (from.dtype == to.dtype)
      return r.fail("converts ", typeString(from), " to its own element type");
    return r.expectShape("result", to, from.shape);
  }
  case KernelId::Fused:
    return checkFused(r);
  case KernelId::NumKernels:
    break;
  }
  return r.fail("unknown kernel");
}

} // namespace

Status zcc::runtime::fusedProgram(const LaunchParams &params,
                                  size_t launchInputs, size_t outputs,
                                  FusedProgram &program) {
  const std::vector<std::string> &ops = params.programOps;
  std::vector<FusedStep> &steps = program.steps;
  steps.clear();
  if (ops.empty() || ops.size() > static_cast<size_t>(kMaxFusedSteps))
    return makeError(StatusCode::InvalidPlan, "a fused program has 1 to ",
                     kMaxFusedSteps, " ops, got ", ops.size());
  program.readsStep =
      std::find(ops.begin(), ops.end(), "dropout") != ops.end();
  if (launchInputs < (program.readsStep ? 2u : 1u) ||
      launchInputs - (program.readsStep ? 1 : 0) >
          static_cast<size_t>(kMaxFusedInputs))
    return makeError(StatusCode::InvalidPlan, "a fused program reads 1 to ",
                     kMaxFusedInputs, " operands",
                     program.readsStep ? " and the step counter" : "",
                     ", got ", launchInputs, " inputs");
  const size_t inputs = launchInputs - (program.readsStep ? 1 : 0);
  program.operands = inputs;
  size_t arg = 0, number = 0, seed = 0;
  std::vector<bool> read(inputs, false);
  for (size_t k = 0; k < ops.size(); ++k) {
    FusedStep step;
    int numbers = 1;
    if (ops[k] == "scale") {
      step.kernel = KernelId::Scale;
    } else if (ops[k] == "dropout") {
      step.kernel = KernelId::Dropout;
      if (seed >= params.programSeeds.size())
        return makeError(StatusCode::InvalidPlan, "op ", k,
                         " 'dropout' has no seed in seeds (",
                         params.programSeeds.size(), " given)");
      step.seed = static_cast<uint64_t>(params.programSeeds[seed++]);
    } else {
      int row = findElementRow(ops[k].data(), ops[k].size());
      if (row < 0 || !elementIsFloat(kElementRows[row].arity))
        return makeError(StatusCode::InvalidPlan, "op ", k, " '", ops[k],
                         "' is not a float element row, scale or dropout");
      step.kernel = static_cast<KernelId>(row);
      step.operands = elementOperandCount(kElementRows[row].arity);
      numbers = kElementRows[row].paramCount;
    }
    for (int o = 0; o < step.operands; ++o, ++arg) {
      if (arg >= params.programArgs.size())
        return makeError(StatusCode::InvalidPlan, "op ", k, " '", ops[k],
                         "' has no operand #", o, " in args (", 
                         params.programArgs.size(), " given)");
      int64_t value = params.programArgs[arg];
      if (value < 0 || value >= static_cast<int64_t>(inputs + k))
        return makeError(StatusCode::InvalidPlan, "op ", k, " '", ops[k],
                         "' reads value ", value, ", not an operand (",
                         inputs, ") or an earlier op's result");
      if (static_cast<size_t>(value) < inputs)
        read[value] = true;
      step.args[o] = static_cast<int>(value);
    }
    for (int n = 0; n < numbers; ++n, ++number) {
      if (number >= params.programNumbers.size())
        return makeError(StatusCode::InvalidPlan, "op ", k, " '", ops[k],
                         "' has no number #", n, " in numbers (",
                         params.programNumbers.size(), " given)");
      double value = params.programNumbers[number];
      if (std::isnan(value) ||
          (step.kernel == KernelId::Scale && !std::isfinite(value)) ||
          (step.kernel == KernelId::Dropout && !(value >= 0 && value < 1)))
        return makeError(StatusCode::InvalidPlan, "op ", k, " '", ops[k],
                         "' has number ", value, ", not ",
                         step.kernel == KernelId::Scale     ? "a finite factor"
                         : step.kernel == KernelId::Dropout ? "a rate in [0, 1)"
                                                            : "a number");
      step.numbers[n] = value;
    }
    steps.push_back(step);
  }
  if (arg != params.programArgs.size() ||
      number != params.programNumbers.size() ||
      seed != params.programSeeds.size())
    return makeError(StatusCode::InvalidPlan, "a fused program's ops read ",
                     arg, " args, ", number, " numbers and ", seed,
                     " seeds, but ", params.programArgs.size(), ", ",
                     params.programNumbers.size(), " and ",
                     params.programSeeds.size(), " are given");
  for (size_t i = 0; i < inputs; ++i)
    if (!read[i])
      return makeError(StatusCode::InvalidPlan, "operand #", i,
                       " is read by no op of the fused program");
  const std::vector<int64_t> &out = params.programOutputs;
  if (out.size() != outputs)
    return makeError(StatusCode::InvalidPlan, "outputs names ", out.size(),
                     " values for ", outputs, " results");
  const int64_t last = static_cast<int64_t>(inputs + ops.size()) - 1;
  for (size_t k = 0; k < out.size(); ++k) {
    if (out[k] < static_cast<int64_t>(inputs) || out[k] > last)
      return makeError(StatusCode::InvalidPlan, "output #", k, " is value ",
                       out[k], ", not an op's result (", inputs, " to ", last,
                       ")");
    for (size_t j = 0; j < k; ++j)
      if (out[j] == out[k])
        return makeError(StatusCode::InvalidPlan, "outputs #", j, " and #", k,
                         " are both value ", out[k]);
  }
  if (std::find(out.begin(), out.end(), last) == out.end())
    return makeError(StatusCode::InvalidPlan,
                     "the last op's result (value ", last,
                     ") is no output: the op would be dead");
  return Status::ok();
}

/// Whether a strided tensor's elements lie at distinct places: with its
/// dimensions in order of their steps, each step passes everything the
/// smaller steps reach.
static bool stepsAreOneToOne(const Tensor &tensor) {
  std::vector<std::pair<int64_t, int64_t>> dims; // (step, size)
  for (size_t d = 0; d < tensor.strides.size(); ++d)
    if (tensor.type.shape[d] > 1)
      dims.emplace_back(tensor.strides[d], tensor.type.shape[d]);
  std::sort(dims.begin(), dims.end());
  uint64_t reach = 0; // the farthest element the smaller steps reach
  for (auto [step, size] : dims) {
    uint64_t s = static_cast<uint64_t>(step), n = static_cast<uint64_t>(size);
    if (step <= 0 || s <= reach || s > (UINT64_MAX - reach) / (n - 1))
      return false;
    reach += s * (n - 1);
  }
  return true;
}

uint64_t zcc::runtime::tensorReachBytes(const Tensor &tensor) {
  if (!tensor.isStrided())
    return static_cast<uint64_t>(tensor.type.bytes());
  if (tensor.type.numElements() == 0)
    return 0;
  // Saturating: a corrupt stride reaches past every buffer, never wraps.
  constexpr uint64_t kFar = uint64_t(1) << 62;
  if (tensor.offset < 0 || static_cast<uint64_t>(tensor.offset) > kFar)
    return kFar;
  uint64_t last = static_cast<uint64_t>(tensor.offset);
  for (size_t d = 0; d < tensor.strides.size() && d < tensor.type.shape.size();
       ++d) {
    uint64_t steps = static_cast<uint64_t>(tensor.type.shape[d] - 1);
    uint64_t stride = static_cast<uint64_t>(tensor.strides[d]);
    if (stride > kFar || (steps && stride > (kFar - last) / steps))
      return kFar;
    last += steps * stride;
  }
  return (last + 1) * dtypeBytes(tensor.type.dtype);
}

/// Whether `kernel`'s views are heads (headLayout: rows of consecutive
/// elements, the dimensions before the heads one run), as attention's
/// products and row kernels read them.
static bool takesViewsAsHeads(KernelId kernel) {
  return kernel == KernelId::Attention || kernel == KernelId::AttentionGrad;
}

Status zcc::runtime::checkLaunch(const Entry &entry, size_t launchIndex) {
  if (launchIndex >= entry.launches.size())
    return makeError(StatusCode::InvalidPlan, "launch ", launchIndex,
                     " does not exist (the entry has ", entry.launches.size(),
                     ")");
  const Launch &launch = entry.launches[launchIndex];
  std::string prefix = "launch " + std::to_string(launchIndex) + " (" +
                       kernelName(launch.kernel) + "): ";
  std::vector<const TensorType *> sides[2];
  for (int side = 0; side < 2; ++side) {
    const std::vector<uint32_t> &list =
        side == 0 ? launch.inputs : launch.outputs;
    const char *what = side == 0 ? "input" : "output";
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i] >= entry.tensors.size())
        return makeError(StatusCode::InvalidPlan, prefix, what, " #", i,
                         " names tensor ", list[i], " of ",
                         entry.tensors.size());
      const Tensor &tensor = entry.tensors[list[i]];
      // Strided tensors are broadcasts that element kernels read as inputs
      // 0 and 1 (any input of zt.fused; rotary's cos and sin), or views
      // (kernelTakesView), which alone have an offset: attention's kernels
      // take them as heads (headLayout), rotary's through any steps.
      if (kernelTakesView(launch.kernel, side == 1, i)) {
        HeadLayout layout;
        if (Status s = tensor.isStrided() && takesViewsAsHeads(launch.kernel)
                           ? headLayout(tensor, layout)
                           : Status::ok();
            !s.isOk())
          return makeError(StatusCode::InvalidPlan, prefix, what, " #", i,
                           ": ", s.message());
        // Written elements each have their own place (threads writing
        // one would race).
        if (side == 1 && tensor.isStrided() && !stepsAreOneToOne(tensor))
          return makeError(StatusCode::InvalidPlan, prefix, what, " #", i,
                           " is a view whose steps reach one element twice");
      } else if (tensor.isStrided() &&
                 (side == 1 || !kernelReadsInputThroughStrides(launch.kernel,
                                                               i) ||
                  tensor.offset != 0)) {
        return makeError(
            StatusCode::InvalidPlan, prefix, what, " #", i,
            side == 1 ? " is a strided view, which only attention and "
                        "rotary write"
                      : " is a strided view, which only element kernels "
                        "read (as one of their first two operands; a fused "
                        "program as any), attention and rotary");
      }
      sides[side].push_back(&tensor.type);
    }
  }
  LaunchRules rules(launch.kernel, launch.params, std::move(sides[0]),
                    std::move(sides[1]), std::move(prefix));
  ZRT_RETURN_IF_ERROR(rules.checkOperands());
  return checkKernel(rules);
}

namespace {
std::vector<const TensorType *> pointers(const std::vector<TensorType> &types) {
  std::vector<const TensorType *> list;
  for (const TensorType &t : types)
    list.push_back(&t);
  return list;
}
} // namespace

Status zcc::runtime::checkKernelTypes(KernelId id, const LaunchParams &params,
                                      const std::vector<TensorType> &inputs,
                                      const std::vector<TensorType> &outputs) {
  LaunchRules rules(id, params, pointers(inputs), pointers(outputs), "");
  ZRT_RETURN_IF_ERROR(rules.checkOperands());
  return checkKernel(rules);
}

bool zcc::runtime::kernelInfersResults(KernelId id) {
  switch (id) {
#define ZRT_INFERS(kernel, rule)                                               \
  case KernelId::kernel:                                                       \
    return true;
    ZRT_INFERRED_KERNELS(ZRT_INFERS)
#undef ZRT_INFERS
  default:
    return false;
  }
}

Status zcc::runtime::inferKernelResults(KernelId id, const LaunchParams &params,
                                        const std::vector<TensorType> &inputs,
                                        std::vector<TensorType> &outputs) {
  LaunchRules rules(id, params, pointers(inputs), {}, "");
  ZRT_RETURN_IF_ERROR(rules.checkOperands());
  outputs.clear();
  return inferResults(rules, outputs);
}

std::string zcc::runtime::formatIndexPosition(const std::vector<int64_t> &shape,
                                              int64_t position) {
  std::string text;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    int64_t size = shape[d];
    std::string digit = std::to_string(size ? position % size : 0);
    text = d + 1 < static_cast<int>(shape.size()) ? digit + ", " + text : digit;
    position = size ? position / size : 0;
  }
  return "[" + text + "]";
}

void zcc::runtime::rowMajorStrides(const std::vector<int64_t> &shape,
                                   int64_t *strides) {
  int64_t stride = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= shape[d];
  }
}

int64_t zcc::runtime::shapeProduct(const std::vector<int64_t> &shape,
                                   size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d)
    n *= shape[d];
  return n;
}

double zcc::runtime::kernelFlops(KernelId kernel,
                                 const std::vector<TensorType> &inputs,
                                 const std::vector<TensorType> &outputs,
                                 const LaunchParams &params) {
  switch (kernel) {
  case KernelId::Matmul: {
    const TensorType &lhs = inputs[0];
    int64_t k = lhs.shape[lhs.rank() - (params.transposeLhs ? 2 : 1)];
    return 2.0 * static_cast<double>(outputs[0].numElements()) *
           static_cast<double>(k);
  }
  case KernelId::Conv2d:
  case KernelId::Conv2dInputGrad:
  case KernelId::Conv2dWeightGrad: {
    // A product per output element: C / groups * KH * KW multiply-adds.
    const TensorType &weight = inputs[1];
    if (weight.rank() != 4 || inputs[0].rank() != 4)
      return 0;
    double perOutput = 2.0 * static_cast<double>(shapeProduct(weight.shape, 1, 4));
    double outputs = static_cast<double>(inputs[0].shape[0]) *
                     static_cast<double>(weight.shape[0]);
    Shape y;
    if (conv2dShape(inputs[0].shape, weight.shape, params.strides,
                    params.padding, params.dilation, params.groups, y)
            .isOk())
      outputs *= static_cast<double>(y[2] * y[3]);
    return outputs * perOutput;
  }
  case KernelId::Fused: // one per step and element
    return static_cast<double>(params.programOps.size()) *
           static_cast<double>(outputs.empty() ? 0 : outputs[0].numElements());
  case KernelId::Rotary: // two products and a sum per element
    return 3.0 * static_cast<double>(outputs.empty() ? 0
                                                     : outputs[0].numElements());
  case KernelId::Attention:
  case KernelId::AttentionGrad: {
    // query [B..., S, D], key [B..., T, D], value [B..., T, Dv].
    const TensorType &query = inputs[0], &value = inputs[2];
    double head = static_cast<double>(query.shape.back());
    double rows = static_cast<double>(query.numElements()) / head; // B... S
    double keys = static_cast<double>(value.shape[value.rank() - 2]);
    double forward =
        2.0 * rows * keys * (head + static_cast<double>(value.shape.back()));
    return kernel == KernelId::Attention ? forward : 2.5 * forward;
  }
  default: {
    double total = 0;
    for (const TensorType &t : outputs)
      total += static_cast<double>(t.numElements());
    return total;
  }
  }
}
