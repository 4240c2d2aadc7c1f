//===- KernelsTest.cpp - kernel rules, Philox and the CPU kernels ---------===//
//
// The rules are tested the way the zt verifiers are: one good launch per
// family and launches that break one rule each. The kernels are tested
// against hand computations, naive reference loops and, for the backward
// kernels, finite differences of the forward kernels in double precision.
//
//===----------------------------------------------------------------------===//

#include "LaunchCase.h"
#include "../ElementTestRows.h"

#include "zcc/Runtime/Kernels/BFloat16.h"
#include "zcc/Runtime/Plan/ElementVjp.h"
#include "zcc/Runtime/Plan/KernelRules.h"
#include "zcc/Runtime/Kernels/Philox.h"
#include "zcc/Runtime/Plan/ShapeRules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <functional>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace zcc::runtime;
using namespace zcc::runtime::testing;

namespace {

//===----------------------------------------------------------------------===//
// Names and in-place rules
//===----------------------------------------------------------------------===//

TEST(KernelNames, RoundTripEveryKernel) {
  for (int i = 0; i < static_cast<int>(KernelId::NumKernels); ++i) {
    KernelId id = static_cast<KernelId>(i);
    std::optional<KernelId> found = findKernel(kernelName(id));
    ASSERT_TRUE(found.has_value()) << kernelName(id);
    EXPECT_EQ(*found, id);
  }
  EXPECT_STREQ(kernelName(KernelId::SoftmaxCrossEntropyGrad),
               "softmax_cross_entropy_grad");
  EXPECT_FALSE(findKernel("reshape").has_value());
  EXPECT_FALSE(findKernel("").has_value());
}

TEST(KernelNames, InPlaceOnlyForElementwiseAndOptimizers) {
  EXPECT_TRUE(kernelAllowsInPlace(KernelId::Add));
  EXPECT_TRUE(kernelAllowsInPlace(KernelId::GeluGrad));
  EXPECT_TRUE(kernelAllowsInPlace(KernelId::Scale));
  EXPECT_TRUE(kernelAllowsInPlace(KernelId::Dropout));
  EXPECT_TRUE(kernelAllowsInPlace(KernelId::Sgd));
  EXPECT_TRUE(kernelAllowsInPlace(KernelId::Adamw));
  EXPECT_TRUE(kernelAllowsInPlace(KernelId::Copy));
  EXPECT_FALSE(kernelAllowsInPlace(KernelId::Matmul));
  EXPECT_FALSE(kernelAllowsInPlace(KernelId::Softmax));
  EXPECT_FALSE(kernelAllowsInPlace(KernelId::Transpose));
  EXPECT_FALSE(kernelAllowsInPlace(KernelId::Sum));
  EXPECT_FALSE(kernelAllowsInPlace(KernelId::LayerNormGrad));
}

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

TEST(KernelRules, OperandsMustBeSane) {
  LaunchCase tooDeep("neg");
  std::vector<int64_t> deep(9, 1);
  tooDeep.input(deep).output(deep);
  expectRejected(tooDeep, "above the kernels' limit of 8");

  LaunchCase negative("neg");
  negative.input({2}).output({2});
  negative.entry.tensors[1].type.shape = {-2};
  expectRejected(negative, "negative dimension");

  LaunchCase huge("neg");
  huge.input({2}).output({2});
  huge.entry.tensors[0].type.shape = {0, int64_t(1) << 40, int64_t(1) << 40};
  expectRejected(huge, "too large");

  LaunchCase dangling("neg");
  dangling.input({2}).output({2});
  dangling.launch().outputs[0] = 5;
  expectRejected(dangling, "names tensor 5");

  LaunchCase badDType("neg");
  badDType.input({2}).output({2});
  badDType.entry.tensors[0].type.dtype = static_cast<DType>(9);
  expectRejected(badDType, "unknown element type");
}

TEST(KernelRules, Elementwise) {
  LaunchCase good("add");
  good.input({2, 3}).input({2, 3}).output({2, 3});
  expectAccepted(good);

  LaunchCase count("add");
  count.input({2, 3}).output({2, 3});
  expectRejected(count, "expected 2 inputs and 1 outputs, got 1 and 1");

  LaunchCase dtype("exp");
  dtype.typedInput(DType::I32, {4}).typedOutput(DType::I32, {4});
  expectRejected(dtype, "operand must be an f32 or bf16 tensor, got 4xi32");

  LaunchCase shape("mul");
  shape.input({2, 3}).input({3, 2}).output({2, 3});
  expectRejected(shape, "rhs type 3x2xf32 must match lhs type 2x3xf32");

  LaunchCase result("relu_grad");
  result.input({4}).input({4}).output({5});
  expectRejected(result, "result type 5xf32 must match saved type 4xf32");

  LaunchCase scale("scale");
  scale.input({4}).output({4}).param(intParam("factor", 2));
  // Kinds are exact: zcc states every float as a float.
  expectRejected(scale, "parameter 'factor' must be a float, got an int");
  LaunchCase infinite("scale");
  infinite.input({4}).output({4}).param(floatParam("factor", kInf));
  expectRejected(infinite, "factor must be finite");
  LaunchCase missing("scale");
  missing.input({4}).output({4});
  expectRejected(missing, "missing parameter 'factor'");
}

TEST(KernelRules, ConstantsAndMask) {
  LaunchCase good("constant");
  good.typedOutput(DType::I64, {3}).param(floatParam("value", 5));
  expectAccepted(good);
  LaunchCase inputs("constant");
  inputs.input({3}).output({3}).param(floatParam("value", 1));
  expectRejected(inputs, "expected 0 inputs");
  LaunchCase range("constant");
  range.typedOutput(DType::I32, {3}).param(floatParam("value", 3e9));
  expectRejected(range, "out of range for i32");
  LaunchCase nan("constant");
  nan.typedOutput(DType::I64, {3}).param(floatParam("value", std::nan("")));
  expectRejected(nan, "out of range for i64");
  LaunchCase wrongKind("constant");
  wrongKind.output({3}).param(intsParam("value", {1}));
  expectRejected(wrongKind, "parameter 'value' must be a float, got an int "
                            "list");

  LaunchCase mask("causal_mask");
  mask.output({4, 4});
  expectAccepted(mask);
  LaunchCase notSquare("causal_mask");
  notSquare.output({4, 3});
  expectRejected(notSquare, "square 2-D");
}

TEST(KernelRules, BroadcastTransposeSliceConcat) {
  LaunchCase broadcast("broadcast_in_dim");
  broadcast.input({3}).output({2, 3}).param(
      intsParam("broadcast_dimensions", {1}));
  expectAccepted(broadcast);
  LaunchCase size("broadcast_in_dim");
  size.input({3}).output({3, 2}).param(intsParam("broadcast_dimensions", {1}));
  expectRejected(size, "cannot broadcast to result dimension 1");
  LaunchCase order("broadcast_in_dim");
  order.input({1, 3}).output({3, 3}).param(
      intsParam("broadcast_dimensions", {1, 0}));
  expectRejected(order, "strictly increasing");
  LaunchCase range("broadcast_in_dim");
  range.input({3}).output({3}).param(intsParam("broadcast_dimensions", {1}));
  expectRejected(range, "broadcast_dimensions[0] = 1 is out of range");
  LaunchCase entries("broadcast_in_dim");
  entries.input({3}).output({3}).param(intsParam("broadcast_dimensions", {}));
  expectRejected(entries, "has 0 entries but the operand has rank 1");

  LaunchCase transpose("transpose");
  transpose.input({2, 3, 4}).output({4, 2, 3}).param(
      intsParam("permutation", {2, 0, 1}));
  expectAccepted(transpose);
  LaunchCase duplicate("transpose");
  duplicate.input({2, 3}).output({2, 2}).param(
      intsParam("permutation", {0, 0}));
  expectRejected(duplicate, "is not a permutation of 0..1");
  LaunchCase permuted("transpose");
  permuted.input({2, 3}).output({2, 3}).param(intsParam("permutation", {1, 0}));
  expectRejected(permuted, "expected result shape [3, 2], got 2x3xf32");

  auto slice = [](std::vector<int64_t> in, std::vector<int64_t> out,
                  std::vector<int64_t> starts, std::vector<int64_t> limits,
                  std::vector<int64_t> strides) {
    LaunchCase c("slice");
    c.input(in).output(out);
    c.param(intsParam("start_indices", starts))
        .param(intsParam("limit_indices", limits))
        .param(intsParam("strides", strides));
    return c;
  };
  expectAccepted(slice({4, 5}, {2, 2}, {1, 0}, {4, 5}, {2, 3}));
  expectRejected(slice({4, 5}, {2, 2}, {1, 0}, {6, 5}, {2, 3}),
                 "dimension 0: range 1:6 is out of bounds for size 4");
  expectRejected(slice({4, 5}, {2, 2}, {1, 0}, {4, 5}, {2, 0}),
                 "dimension 1: stride must be >= 1, got 0");
  expectRejected(slice({4, 5}, {3, 2}, {1, 0}, {4, 5}, {2, 3}),
                 "expected result shape [2, 2], got 3x2xf32");
  expectRejected(slice({4, 5}, {2}, {1}, {4}, {2}),
                 "needs one start:limit[:stride] range per dimension");
  LaunchCase noStrides("slice");
  noStrides.input({4}).output({4});
  noStrides.param(intsParam("start_indices", {0}))
      .param(intsParam("limit_indices", {4}));
  expectRejected(noStrides, "missing parameter 'strides'");

  LaunchCase sliceGrad("slice_grad");
  sliceGrad.input({2, 2}).output({4, 5});
  sliceGrad.param(intsParam("start_indices", {1, 0}))
      .param(intsParam("limit_indices", {4, 5}))
      .param(intsParam("strides", {2, 3}));
  expectAccepted(sliceGrad);
  sliceGrad.entry.tensors[0].type.shape = {2, 3};
  expectRejected(sliceGrad, "expected grad shape [2, 2], got 2x3xf32");

  LaunchCase concat("concat");
  concat.input({2, 2}).input({2, 1}).output({2, 3}).param(
      intParam("dimension", 1));
  expectAccepted(concat);
  LaunchCase none("concat");
  none.output({2, 3}).param(intParam("dimension", 0));
  expectRejected(none, "expected at least 1 input");
  LaunchCase other("concat");
  other.input({2, 2}).input({3, 1}).output({2, 3}).param(
      intParam("dimension", 1));
  expectRejected(other, "operand #1 has size 3 in dimension 0, expected 2");
  LaunchCase sum("concat");
  sum.input({2, 2}).input({2, 1}).output({2, 4}).param(
      intParam("dimension", 1));
  expectRejected(sum, "expected result shape [2, 3]");
  LaunchCase dim("concat");
  dim.input({2, 2}).output({2, 2}).param(intParam("dimension", 2));
  expectRejected(dim, "dimension 2 is out of range for rank 2");
  LaunchCase mixed("concat");
  mixed.input({2})
      .typedInput(DType::I32, {2})
      .output({4})
      .param(intParam("dimension", 0));
  expectRejected(mixed, "operand #1 has element type i32, expected f32");
}

TEST(KernelRules, Reductions) {
  LaunchCase keep("sum");
  keep.input({2, 3, 4}).output({1, 3, 1});
  keep.param(intsParam("dims", {0, 2})).param(unitParam("keep_dims"));
  expectAccepted(keep);
  LaunchCase drop("mean");
  drop.input({2, 3, 4}).output({1, 3, 1}).param(intsParam("dims", {0, 2}));
  expectRejected(drop, "expected result shape [3], got 1x3x1xf32");
  LaunchCase order("max");
  order.input({2, 3}).output({}).param(intsParam("dims", {1, 0}));
  expectRejected(order, "dims must be strictly increasing, got [1, 0]");
  LaunchCase empty("sum");
  empty.input({2, 3}).output({2, 3}).param(intsParam("dims", {}));
  expectRejected(empty, "at least one dimension");
  LaunchCase range("sum");
  range.input({2, 3}).output({2}).param(intsParam("dims", {2}));
  expectRejected(range, "dims[0] = 2 is out of range for rank 2");
  LaunchCase unitKind("sum");
  unitKind.input({2, 3}).output({1, 3});
  unitKind.param(intsParam("dims", {0})).param(intParam("keep_dims", 1));
  expectRejected(unitKind, "'keep_dims' must be a unit flag, got an int");

  LaunchCase maxGrad("max_grad");
  maxGrad.input({2, 3}).input({2}).output({2, 3}).param(intsParam("dims", {1}));
  expectAccepted(maxGrad);
  LaunchCase badGrad("max_grad");
  badGrad.input({2, 3}).input({3}).output({2, 3}).param(intsParam("dims", {1}));
  expectRejected(badGrad, "expected grad shape [2], got 3xf32");
  LaunchCase badResult("max_grad");
  badResult.input({2, 3}).input({2}).output({2}).param(intsParam("dims", {1}));
  expectRejected(badResult, "result type 2xf32 must match operand type");
}

TEST(KernelRules, Matmul) {
  LaunchCase good("matmul");
  good.input({32, 784}).input({784, 128}).output({32, 128});
  expectAccepted(good);
  LaunchCase contraction("matmul");
  contraction.input({32, 784}).input({128, 784}).output({32, 128});
  expectRejected(contraction,
                 "launch 0 (matmul): contraction dimensions differ: lhs has "
                 "K = 784, rhs has K = 128 (transpose_lhs = 0, "
                 "transpose_rhs = 0)");
  LaunchCase flagged("matmul");
  flagged.input({32, 784})
      .input({128, 784})
      .output({32, 128})
      .param(unitParam("transpose_rhs"));
  expectAccepted(flagged);
  LaunchCase shared("matmul");
  shared.input({4, 8, 16}).input({16, 5}).output({4, 8, 5});
  expectAccepted(shared);
  LaunchCase batch("matmul");
  batch.input({4, 8, 16}).input({3, 16, 5}).output({4, 8, 5});
  expectRejected(batch, "batch dimensions differ");
  LaunchCase rank("matmul");
  rank.input({2, 4, 8, 16}).input({4, 16, 5}).output({2, 4, 8, 5});
  expectRejected(rank, "rhs must have the rank of lhs (4) or rank 2");
  LaunchCase vector("matmul");
  vector.input({16}).input({16, 5}).output({5});
  expectRejected(vector, "lhs must have rank >= 2");
  LaunchCase result("matmul");
  result.input({8, 16}).input({16, 5}).output({5, 8});
  expectRejected(result, "expected result shape [8, 5], got 5x8xf32");
  LaunchCase dtype("matmul");
  dtype.input({8, 16}).typedInput(DType::I64, {16, 5}).output({8, 5});
  expectRejected(dtype, "rhs element type i64 must match lhs element type f32");
}

TEST(KernelRules, Attention) {
  auto make = [](std::vector<int64_t> q, std::vector<int64_t> k,
                 std::vector<int64_t> v, std::vector<int64_t> y,
                 std::vector<int64_t> lse, double scale = 0.5) {
    LaunchCase c("attention");
    c.input(q).input(k).input(v).output(y).output(lse).param(
        floatParam("scale", scale));
    return c;
  };
  expectAccepted(make({2, 8, 4}, {2, 6, 4}, {2, 6, 3}, {2, 8, 3}, {2, 8}));
  expectRejected(make({2, 8, 4}, {2, 6, 5}, {2, 6, 3}, {2, 8, 3}, {2, 8}),
                 "query and key must have one head size");
  expectRejected(make({2, 8, 4}, {3, 6, 4}, {3, 6, 3}, {2, 8, 3}, {2, 8}),
                 "batch dimensions differ");
  expectRejected(make({2, 8, 4}, {2, 6, 4}, {2, 6, 3}, {2, 8, 4}, {2, 8}),
                 "expected result shape [2, 8, 3], got 2x8x4xf32");
  expectRejected(make({2, 8, 4}, {2, 6, 4}, {2, 6, 3}, {2, 8, 3}, {2, 6}),
                 "expected logsumexp shape [2, 8]");
  expectRejected(make({2, 0, 4}, {2, 6, 4}, {2, 6, 3}, {2, 0, 3}, {2, 0}),
                 "sequence lengths and head sizes must be at least 1");
  expectRejected(make({4}, {4}, {4}, {4}, {}), "query must have rank >= 2");
  expectRejected(make({2, 8, 4}, {2, 6, 4}, {2, 6, 3}, {2, 8, 3}, {2, 8},
                      std::numeric_limits<double>::infinity()),
                 "scale must be finite");
  LaunchCase grad("attention_grad");
  grad.input({2, 8, 4})
      .input({2, 6, 4})
      .input({2, 6, 3})
      .input({2, 8, 3})
      .input({2, 8})
      .input({2, 8, 3})
      .output({2, 8, 4})
      .output({2, 6, 4})
      .output({2, 6, 3})
      .param(floatParam("scale", 0.5))
      .param(unitParam("causal"));
  expectAccepted(grad);
  grad.entry.tensors[grad.launch().outputs[1]].type.shape = {2, 6, 3};
  expectRejected(grad, "key_grad type 2x6x3xf32 must match key type");
  // bf16 operands and result (mixed precision) with an f32 logsumexp; one
  // dtype across query, key, value and result.
  const DType bf = DType::BF16;
  auto typed = [&](DType q, DType k, DType y, DType lse) {
    LaunchCase c("attention");
    c.typedInput(q, {2, 8, 4})
        .typedInput(k, {2, 6, 4})
        .typedInput(k, {2, 6, 3})
        .typedOutput(y, {2, 8, 3})
        .typedOutput(lse, {2, 8})
        .param(floatParam("scale", 0.5));
    return c;
  };
  expectAccepted(typed(bf, bf, bf, DType::F32));
  expectRejected(typed(bf, DType::F32, bf, DType::F32),
                 "key element type f32 must match query element type bf16");
  expectRejected(typed(bf, bf, DType::F32, DType::F32),
                 "result element type f32 must match query element type bf16");
  expectRejected(typed(bf, bf, bf, bf), "logsumexp must be an f32 tensor");
}

TEST(KernelRules, AxisAndNormalisation) {
  LaunchCase softmax("softmax");
  softmax.input({2, 3}).output({2, 3}).param(intParam("axis", -2));
  expectAccepted(softmax);
  LaunchCase axis("log_softmax");
  axis.input({2, 3}).output({2, 3}).param(intParam("axis", 2));
  expectRejected(axis, "axis 2 is out of range for rank 2");
  LaunchCase kind("softmax");
  kind.input({2, 3}).output({2, 3}).param(floatParam("axis", 1));
  expectRejected(kind, "parameter 'axis' must be an int, got a float");
  LaunchCase missing("softmax_grad");
  missing.input({2, 3}).input({2, 3}).output({2, 3});
  expectRejected(missing, "missing parameter 'axis'");
  LaunchCase extra("softmax");
  extra.input({2, 3})
      .output({2, 3})
      .param(intParam("axis", 1))
      .param(floatParam("temperature", 2));
  // A parameter this runtime does not know could change the result: an
  // error, never ignored.
  expectRejected(extra, "unknown parameter 'temperature' (softmax takes no "
                        "such parameter)");
  LaunchCase twice("softmax");
  twice.input({2, 3})
      .output({2, 3})
      .param(intParam("axis", 1))
      .param(intParam("axis", 0));
  expectRejected(twice, "parameter 'axis' is stated twice");

  LaunchCase layerNorm("layer_norm");
  layerNorm.input({4, 8}).input({8}).input({8}).output({4, 8}).param(
      floatParam("epsilon", 1e-5));
  expectAccepted(layerNorm);
  LaunchCase gamma("layer_norm");
  gamma.input({4, 8}).input({4}).input({8}).output({4, 8}).param(
      floatParam("epsilon", 1e-5));
  expectRejected(gamma, "gamma must have shape [8]");
  LaunchCase epsilon("rms_norm");
  epsilon.input({4, 8}).input({8}).output({4, 8}).param(
      floatParam("epsilon", 0));
  expectRejected(epsilon, "epsilon must be > 0, got 0");
  LaunchCase scalar("rms_norm");
  scalar.input({}).input({1}).output({}).param(floatParam("epsilon", 1));
  expectRejected(scalar, "operand must have rank >= 1");

  LaunchCase grad("layer_norm_grad");
  grad.input({4, 8}).input({8}).input({4, 8});
  grad.output({4, 8}).output({8}).output({8}).param(
      floatParam("epsilon", 1e-5));
  expectAccepted(grad);
  LaunchCase dbeta("layer_norm_grad");
  dbeta.input({4, 8}).input({8}).input({4, 8});
  dbeta.output({4, 8}).output({8}).output({4, 8}).param(
      floatParam("epsilon", 1e-5));
  expectRejected(dbeta, "beta_grad type 4x8xf32 must match gamma type 8xf32");
  LaunchCase outputs("rms_norm_grad");
  outputs.input({4, 8}).input({8}).input({4, 8});
  outputs.output({4, 8}).output({8}).output({8}).param(
      floatParam("epsilon", 1e-5));
  expectRejected(outputs, "expected 3 inputs and 2 outputs, got 3 and 3");
}

TEST(KernelRules, LookupAndLosses) {
  LaunchCase embedding("embedding");
  embedding.input({10, 4}).typedInput(DType::I32, {2, 3}).output({2, 3, 4});
  expectAccepted(embedding);
  LaunchCase table("embedding");
  table.input({10, 4, 1}).typedInput(DType::I32, {2}).output({2, 4});
  expectRejected(table, "table must have rank 2");
  LaunchCase indices("embedding");
  indices.input({10, 4}).input({2}).output({2, 4});
  expectRejected(indices, "indices must be an i32 or i64 tensor, got 2xf32");
  LaunchCase rows("embedding");
  rows.input({10, 4}).typedInput(DType::I64, {2}).output({3, 4});
  expectRejected(rows, "expected result shape [2, 4], got 3x4xf32");
  LaunchCase grad("embedding_grad");
  grad.typedInput(DType::I64, {2, 3}).input({2, 3, 4}).output({10, 4});
  expectAccepted(grad);
  grad.entry.tensors[1].type.shape = {2, 3, 5};
  expectRejected(grad, "expected grad shape [2, 3, 4], got 2x3x5xf32");

  LaunchCase sce("softmax_cross_entropy");
  sce.input({4, 10}).typedInput(DType::I32, {4}).output({});
  expectAccepted(sce);
  LaunchCase labels("softmax_cross_entropy");
  labels.input({4, 10}).typedInput(DType::I32, {10}).output({});
  expectRejected(labels, "labels shape [10] must equal the logits shape");
  LaunchCase floatLabels("softmax_cross_entropy");
  floatLabels.input({4, 10}).input({4}).output({});
  expectRejected(floatLabels, "labels must be an i32 or i64 tensor");
  LaunchCase loss("softmax_cross_entropy");
  loss.input({4, 10}).typedInput(DType::I32, {4}).output({1});
  expectRejected(loss, "result must be a rank-0 f32 tensor, got 1xf32");
  LaunchCase sceGrad("softmax_cross_entropy_grad");
  sceGrad.input({4, 10}).typedInput(DType::I32, {4}).input({}).output({4, 10});
  expectAccepted(sceGrad);
  LaunchCase dloss("softmax_cross_entropy_grad");
  dloss.input({4, 10}).typedInput(DType::I32, {4}).input({4}).output({4, 10});
  expectRejected(dloss, "loss_grad must be a rank-0 f32 tensor");

  LaunchCase mse("mse");
  mse.input({4, 1}).input({4, 1}).output({});
  expectAccepted(mse);
  LaunchCase target("mse_grad");
  target.input({4, 1}).input({4}).input({}).output({4, 1});
  expectRejected(target, "target type 4xf32 must match prediction type");
}

TEST(KernelRules, Dropout) {
  auto dropout = [](DType stepType, double rate) {
    LaunchCase c("dropout");
    c.input({8}).typedInput(stepType, {}, {0}).output({8});
    c.param(floatParam("rate", rate)).param(intParam("seed", 7));
    return c;
  };
  expectAccepted(dropout(DType::I64, 0.0));
  expectRejected(dropout(DType::I64, 1.0), "rate must be >= 0 and < 1, got 1");
  expectRejected(dropout(DType::I32, 0.5),
                 "step must be a rank-0 i64 tensor, got i32");
  LaunchCase noSeed("dropout");
  noSeed.input({8})
      .typedInput(DType::I64, {}, {0})
      .output({8})
      .param(floatParam("rate", 0.1));
  expectRejected(noSeed, "missing parameter 'seed'");
}

TEST(KernelRules, Optimizers) {
  LaunchCase plain("sgd");
  plain.input({10}).input({10}).output({10}).param(floatParam("lr", 0.1));
  expectAccepted(plain.stateOptimizerParams());
  // The runtime has no defaults: zcc states every parameter.
  LaunchCase noDecay("sgd");
  noDecay.input({10}).input({10}).output({10}).param(floatParam("lr", 0.1));
  noDecay.param(floatParam("momentum", 0.0));
  expectRejected(noDecay, "missing parameter 'weight_decay'");
  LaunchCase noLr("sgd");
  noLr.input({10}).input({10}).output({10}).stateOptimizerParams();
  expectRejected(noLr, "missing parameter 'lr'");
  LaunchCase noBuffer("sgd");
  noBuffer.input({10}).input({10}).output({10});
  noBuffer.param(floatParam("lr", 0.1)).param(floatParam("momentum", 0.9));
  expectRejected(noBuffer.stateOptimizerParams(), "expected 3 inputs and 2 outputs, got 2 and 1");
  LaunchCase extraBuffer("sgd");
  extraBuffer.input({10}).input({10}).input({10}).output({10}).output({10});
  extraBuffer.param(floatParam("lr", 0.1));
  expectRejected(extraBuffer.stateOptimizerParams(), "expected 2 inputs and 1 outputs, got 3 and 2");
  LaunchCase nesterov("sgd");
  nesterov.input({10}).input({10}).output({10});
  nesterov.param(floatParam("lr", 0.1)).param(unitParam("nesterov"));
  expectRejected(nesterov.stateOptimizerParams(), "nesterov needs momentum != 0");
  LaunchCase momentum("sgd");
  momentum.input({10}).input({10}).input({10}).output({10}).output({10});
  momentum.param(floatParam("lr", 0.1)).param(floatParam("momentum", 0.9));
  expectAccepted(momentum.stateOptimizerParams());
  momentum.entry.tensors[2].type.shape = {11};
  expectRejected(momentum, "momentum_buffer type 11xf32 must match param");
  LaunchCase negative("sgd");
  negative.input({10}).input({10}).output({10}).param(floatParam("lr", -1));
  expectRejected(negative.stateOptimizerParams(), "lr must be >= 0, got -1");

  auto adamw = [](double beta1) {
    LaunchCase c("adamw");
    c.input({10}).input({10}).input({10}).input({10});
    c.typedInput(DType::I64, {}, {0});
    c.outputInPlace(0).outputInPlace(2).outputInPlace(3);
    c.param(floatParam("lr", 1e-3)).param(floatParam("beta1", beta1));
    c.stateOptimizerParams();
    return c;
  };
  expectAccepted(adamw(0.9));
  expectRejected(adamw(1.0), "beta1 must be >= 0 and < 1, got 1");
  LaunchCase state("adamw");
  state.input({10}).input({10}).input({10, 1}).input({10});
  state.typedInput(DType::I64, {}, {0});
  state.output({10}).output({10}).output({10}).param(floatParam("lr", 1e-3));
  state.stateOptimizerParams();
  expectRejected(state, "exp_avg type 10x1xf32 must match param type 10xf32");
  LaunchCase eps("adamw");
  eps.input({10}).input({10}).input({10}).input({10});
  eps.typedInput(DType::I64, {}, {0});
  eps.output({10}).output({10}).output({10});
  eps.param(floatParam("lr", 1e-3)).param(floatParam("eps", 0));
  eps.stateOptimizerParams();
  LaunchCase noBeta2 = adamw(0.9);
  auto &params = noBeta2.params;
  params.erase(std::remove_if(params.begin(), params.end(),
                              [](const Param &p) { return p.name == "beta2"; }),
               params.end());
  expectRejected(noBeta2, "missing parameter 'beta2'");
  expectRejected(eps, "eps must be > 0, got 0");

  // Clipping: max_grad_norm > 0 takes the sum of squares after the state;
  // one input more is a learning-rate schedule's factor.
  LaunchCase clipped = adamw(0.9);
  clipped.input({}, {4}).input({}, {0.5});
  expectRejected(clipped, "expected 5 inputs and 3 outputs, got 7 and 3");
  clipped.param(floatParam("max_grad_norm", 1.0));
  std::vector<Param> &stated = clipped.params;
  stated.erase(std::remove_if(stated.begin(), stated.end(),
                              [](const Param &p) {
                                return p.name == "max_grad_norm" &&
                                       p.floatValue == 0;
                              }),
               stated.end());
  expectAccepted(clipped);
  clipped.entry.tensors[5].type.shape = {1};
  expectRejected(clipped, "grad_sum_squares must be a rank-0 f32 tensor");
  clipped.entry.tensors[5].type.shape = {};
  clipped.entry.tensors[6].type.dtype = DType::I64;
  expectRejected(clipped, "lr_factor must be a rank-0 f32 tensor");
  LaunchCase scheduled("sgd");
  scheduled.input({10}).input({10}).input({}, {0.5}).output({10});
  scheduled.param(floatParam("lr", 0.1));
  expectAccepted(scheduled.stateOptimizerParams());
  LaunchCase noSum("sgd");
  noSum.input({10}).input({10}).output({10}).param(floatParam("lr", 0.1));
  noSum.param(floatParam("max_grad_norm", 1.0));
  expectRejected(noSum.stateOptimizerParams(),
                 "clipping (max_grad_norm > 0) needs the grad_sum_squares "
                 "input");
  LaunchCase negativeNorm("sgd");
  negativeNorm.input({10}).input({10}).output({10});
  negativeNorm.param(floatParam("lr", 0.1))
      .param(floatParam("max_grad_norm", -1.0));
  expectRejected(negativeNorm.stateOptimizerParams(),
                 "max_grad_norm must be >= 0, got -1");
  LaunchCase sum("sum_squares");
  sum.input({3}).input({}).input({}).output({});
  expectRejected(sum, "expected 2 inputs and 1 outputs, got 3 and 1");
}

TEST(KernelRules, LrSchedule) {
  auto schedule = [](int64_t warmup, int64_t decay, double minFactor,
                     const char *kind) {
    LaunchCase c("lr_schedule");
    c.typedInput(DType::I64, {}, {3}).output({});
    c.param(intParam("warmup_steps", warmup))
        .param(intParam("decay_steps", decay))
        .param(floatParam("min_factor", minFactor));
    if (kind)
      c.param(unitParam(kind));
    return c;
  };
  expectAccepted(schedule(10, 0, 0, nullptr));
  expectAccepted(schedule(10, 100, 0.1, "cosine"));
  expectAccepted(schedule(0, 1, 1, "linear"));
  expectRejected(schedule(-1, 0, 0, nullptr),
                 "warmup_steps must be >= 0, got -1");
  expectRejected(schedule(10, 10, 0, "linear"),
                 "decay_steps must be > warmup_steps (10), got 10");
  expectRejected(schedule(0, 10, 0, nullptr),
                 "decay_steps and min_factor need a decay");
  expectRejected(schedule(0, 10, 1.5, "cosine"),
                 "min_factor must be >= 0 and <= 1, got 1.5");
  LaunchCase both = schedule(0, 10, 0, "cosine");
  both.param(unitParam("linear"));
  expectRejected(both, "decays one way: cosine or linear, not both");
  LaunchCase step = schedule(1, 0, 0, nullptr);
  step.entry.tensors[0].type.dtype = DType::I32;
  expectRejected(step, "step");
  LaunchCase result = schedule(1, 0, 0, nullptr);
  result.entry.tensors[1].type.shape = {2};
  expectRejected(result, "result must be a rank-0 f32 tensor");
}

TEST(KernelRules, Copy) {
  LaunchCase reshape("copy");
  reshape.input({2, 6}).output({3, 4});
  expectAccepted(reshape);
  LaunchCase count("copy");
  count.input({2, 6}).output({3, 3});
  expectRejected(count, "copies 12 elements (2x6xf32) into 9 (3x3xf32)");
  LaunchCase dtype("copy");
  dtype.typedInput(DType::I32, {4}).output({4});
  expectRejected(dtype, "result element type f32 must match operand element "
                        "type i32");
}

//===----------------------------------------------------------------------===//
// Philox
//===----------------------------------------------------------------------===//

// Random123's known-answer vectors for philox4x32 with 10 rounds (counter
// words, key words, output words; from its kat_vectors file).
TEST(Philox, KnownAnswerVectors) {
  struct Vector {
    PhiloxBlock counter;
    PhiloxKey key;
    PhiloxBlock expected;
  };
  const Vector vectors[] = {
      {{{0, 0, 0, 0}},
       {{0, 0}},
       {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       {{0xffffffff, 0xffffffff}},
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       {{0xa4093822, 0x299f31d0}},
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Vector &v : vectors) {
    PhiloxBlock out = philox4x32_10(v.counter, v.key);
    for (int w = 0; w < 4; ++w)
      EXPECT_EQ(out.words[w], v.expected.words[w]) << "word " << w;
  }
}

TEST(Philox, DropoutKeepUsesSeedIndexAndStepWords) {
  // index / 4 = 0x04488cd115599de2, index % 4 = 3: the block's last word.
  uint64_t seed = 0x0123456789abcdefull, index = 0x1122334455667788ull + 3,
           step = 0x99aabbccddeeff00ull;
  PhiloxBlock counter{{0x15599de2u, 0x04488cd1u, 0xddeeff00u, 0x99aabbccu}};
  PhiloxKey key{{0x89abcdefu, 0x01234567u}};
  double u = philox4x32_10(counter, key).words[3] / 4294967296.0;
  EXPECT_EQ(dropoutKeep(seed, index, step, u), true); // u >= u
  EXPECT_EQ(dropoutKeep(seed, index, step, std::nextafter(u, 2.0)), false);
  EXPECT_TRUE(dropoutKeep(seed, index, step, 0.0));
  // The threshold is exact: 0.5 keeps 2^31 and above, the smallest rate
  // above 0 drops only the word 0.
  EXPECT_EQ(dropoutThreshold(0.5), 0x80000000ull);
  EXPECT_EQ(dropoutThreshold(std::nextafter(0.0, 1.0)), 1ull);
  EXPECT_EQ(dropoutThreshold(std::nextafter(1.0, 0.0)), 0x100000000ull);
  EXPECT_EQ(uniformFromWord(0), 0.0);
  EXPECT_LT(uniformFromWord(0xffffffffu), 1.0);
  EXPECT_GT(uniformOpenFromWord(0), 0.0);
  EXPECT_EQ(uniformOpenFromWord(0xffffffffu), 1.0);
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

/// result[b, m, n] = sum_k op(lhs)[b, m, k] op(rhs)[b, k, n], by the
/// definition.
std::vector<double> naiveMatmul(const std::vector<double> &lhs,
                                const std::vector<double> &rhs, int64_t batch,
                                int64_t m, int64_t n, int64_t k,
                                bool transposeLhs, bool transposeRhs,
                                bool sharedRhs) {
  std::vector<double> out(batch * m * n, 0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          double a = transposeLhs ? lhs[b * m * k + p * m + i]
                                  : lhs[b * m * k + i * k + p];
          int64_t rb = sharedRhs ? 0 : b * k * n;
          double r = transposeRhs ? rhs[rb + j * k + p] : rhs[rb + p * n + j];
          sum += a * r;
        }
        out[b * m * n + i * n + j] = sum;
      }
  return out;
}

struct MatmulShape {
  int64_t batch, m, n, k;
  bool sharedRhs;
};

class MatmulTest : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(MatmulTest, MatchesNaiveLoop) {
  auto [transposeLhs, transposeRhs] = GetParam();
  const MatmulShape shapes[] = {
      {1, 5, 3, 4, true},  // plain rank-2 product
      {3, 5, 3, 4, false}, // batched, one rhs per batch entry
      {3, 5, 3, 4, true},  // batched lhs, shared rank-2 rhs
      {2, 1, 7, 6, true},
  };
  for (const MatmulShape &s : shapes) {
    std::vector<int64_t> lhsShape, rhsShape, outShape;
    if (s.batch > 1 || !s.sharedRhs)
      lhsShape.push_back(s.batch);
    outShape = lhsShape;
    lhsShape.push_back(transposeLhs ? s.k : s.m);
    lhsShape.push_back(transposeLhs ? s.m : s.k);
    if (!s.sharedRhs)
      rhsShape.push_back(s.batch);
    rhsShape.push_back(transposeRhs ? s.n : s.k);
    rhsShape.push_back(transposeRhs ? s.k : s.n);
    outShape.push_back(s.m);
    outShape.push_back(s.n);
    LaunchCase c("matmul");
    c.input(lhsShape).input(rhsShape).output(outShape);
    if (transposeLhs)
      c.param(unitParam("transpose_lhs"));
    if (transposeRhs)
      c.param(unitParam("transpose_rhs"));
    std::vector<double> expected =
        naiveMatmul(c.values[0], c.values[1], s.batch, s.m, s.n, s.k,
                    transposeLhs, transposeRhs, s.sharedRhs);
    ASSERT_TRUE(c.run<double>().isOk());
    expectNear(c.result(), expected, 1e-12);
    ASSERT_TRUE(c.run<float>().isOk());
    expectNear(c.result(), expected, 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(AllTransposeFlags, MatmulTest,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Bool()));

TEST(MatmulKernel, EmptyContractionGivesZeros) {
  LaunchCase c("matmul");
  c.input({2, 0}, {}).input({0, 3}, {}).output({2, 3});
  c.values[0].clear();
  c.values[1].clear();
  ASSERT_TRUE(c.run<float>().isOk());
  expectNear(c.result(), std::vector<double>(6, 0.0), 0);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// Attention written out in f64, one head and query at a time: the [S, T]
/// probabilities materialized, the backward through the softmax Jacobian
/// (ds = p (dp - sum p dp)), not the kernels' rowsum(dy * y) form.
struct NaiveAttention {
  int64_t heads, s, t, d, dv;
  double scale;
  bool causal;
  /// [heads, s, t], or empty: which keys each query sees besides `causal`.
  std::vector<bool> allowed;
  /// Query heads per key and value head (grouped-query: head h reads key
  /// and value head h / groups).
  int64_t groups = 1;
  /// Dropout of the probabilities (rate 0: none): zt.dropout's draw over
  /// the [heads, s, t] probabilities at this seed and step.
  double rate = 0.0;
  uint64_t seed = 0, step = 0;
  std::vector<double> y, lse, dq, dk, dv_;

  void run(const std::vector<double> &q, const std::vector<double> &k,
           const std::vector<double> &v, const std::vector<double> &dy) {
    y.assign(heads * s * dv, 0);
    lse.assign(heads * s, 0);
    dq.assign(heads * s * d, 0);
    dk.assign(heads / groups * t * d, 0);
    dv_.assign(heads / groups * t * dv, 0);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0, kh = h / groups; i < s; ++i) {
        int64_t seen = causal ? std::min(t, i + 1) : t;
        std::vector<double> p(seen), dp(seen);
        double top = -kInf;
        for (int64_t j = 0; j < seen; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < d; ++c)
            dot += q[(h * s + i) * d + c] * k[(kh * t + j) * d + c];
          bool sees = allowed.empty() || allowed[(h * s + i) * t + j];
          p[j] = sees ? scale * dot : -kInf;
          top = std::max(top, p[j]);
        }
        if (top == -kInf) { // no key: PyTorch's 0, and no gradient
          lse[h * s + i] = -kInf;
          continue;
        }
        double sum = 0;
        for (double &x : p)
          sum += std::exp(x - top);
        lse[h * s + i] = top + std::log(sum);
        for (double &x : p)
          x = std::exp(x - lse[h * s + i]);
        // The dropped probabilities, and the factor of each (0 or 1/keep).
        std::vector<double> dropped(seen), factor(seen, 1.0);
        for (int64_t j = 0; j < seen; ++j) {
          if (rate > 0)
            factor[j] = dropoutKeep(seed, (h * s + i) * t + j, step, rate)
                            ? 1.0 / (1.0 - rate)
                            : 0.0;
          dropped[j] = p[j] * factor[j];
        }
        double pdp = 0;
        for (int64_t j = 0; j < seen; ++j) {
          for (int64_t c = 0; c < dv; ++c) {
            y[(h * s + i) * dv + c] += dropped[j] * v[(kh * t + j) * dv + c];
            dp[j] += dy[(h * s + i) * dv + c] * v[(kh * t + j) * dv + c];
            dv_[(kh * t + j) * dv + c] +=
                dropped[j] * dy[(h * s + i) * dv + c];
          }
          dp[j] *= factor[j]; // through the dropout
          pdp += p[j] * dp[j];
        }
        for (int64_t j = 0; j < seen; ++j) {
          double ds = scale * p[j] * (dp[j] - pdp);
          for (int64_t c = 0; c < d; ++c) {
            dq[(h * s + i) * d + c] += ds * k[(kh * t + j) * d + c];
            dk[(kh * t + j) * d + c] += ds * q[(h * s + i) * d + c];
          }
        }
      }
  }
};

struct AttentionShapeCase {
  std::vector<int64_t> batch;
  int64_t s, t, d, dv;
  bool causal;
  /// Query heads (the last batch dimension) per key and value head.
  int64_t groups = 1;
  /// Dropout of the probabilities at seed 5, step 3 (0: none).
  double dropout = 0.0;
};

/// attention and attention_grad over `c` (and `mask`, a bool tensor of
/// `maskShape`, when given) against the written-out form, in f64 and f32.
void expectAttentionMatchesWrittenOut(const AttentionShapeCase &c,
                                      const std::vector<int64_t> &maskShape = {},
                                      const std::vector<double> &mask = {},
                                      const std::vector<bool> &allowed = {}) {
  int64_t heads = elementCount(c.batch), kvHeads = heads / c.groups;
  auto shape = [&](int64_t a, int64_t b, bool kv = false) {
    std::vector<int64_t> out = c.batch;
    if (kv && c.groups > 1)
      out.back() /= c.groups;
    out.push_back(a);
    if (b >= 0)
      out.push_back(b);
    return out;
  };
  double scale = 1.0 / std::sqrt(double(c.d)) * 1.7;
  LaunchCase forward("attention");
  forward.input(shape(c.s, c.d), randomValues(heads * c.s * c.d, 3, -2, 2))
      .input(shape(c.t, c.d, true), randomValues(kvHeads * c.t * c.d, 4, -2, 2))
      .input(shape(c.t, c.dv, true));
  if (!mask.empty())
    forward.typedInput(DType::Bool, maskShape, mask);
  constexpr int64_t kSeed = 5, kStep = 3;
  auto dropout = [&](LaunchCase &launch) {
    if (c.dropout > 0)
      launch.typedInput(DType::I64, {}, {double(kStep)})
          .param(floatParam("dropout", c.dropout))
          .param(intParam("seed", kSeed));
  };
  dropout(forward);
  forward.output(shape(c.s, c.dv))
      .output(shape(c.s, -1))
      .param(floatParam("scale", scale));
  if (c.causal)
    forward.param(unitParam("causal"));
  std::vector<double> dy = randomValues(heads * c.s * c.dv, 9);
  NaiveAttention naive{heads,   c.s,      c.t,       c.d,   c.dv,
                       scale,   c.causal, allowed,   c.groups,
                       c.dropout, kSeed,  kStep};
  naive.run(forward.values[0], forward.values[1], forward.values[2], dy);
  ASSERT_TRUE(forward.run<double>().isOk());
  expectNear(forward.result(0), naive.y, 1e-12);
  expectNear(forward.result(1), naive.lse, 1e-12);
  std::vector<double> y = forward.result(0), lse = forward.result(1);
  ASSERT_TRUE(forward.run<float>().isOk());
  expectNear(forward.result(0), naive.y, 1e-5);
  expectNear(forward.result(1), naive.lse, 1e-5);

  LaunchCase backward("attention_grad");
  backward.input(shape(c.s, c.d), forward.values[0])
      .input(shape(c.t, c.d, true), forward.values[1])
      .input(shape(c.t, c.dv, true), forward.values[2])
      .input(shape(c.s, c.dv), y)
      .input(shape(c.s, -1), lse)
      .input(shape(c.s, c.dv), dy);
  if (!mask.empty())
    backward.typedInput(DType::Bool, maskShape, mask);
  dropout(backward);
  backward.output(shape(c.s, c.d))
      .output(shape(c.t, c.d, true))
      .output(shape(c.t, c.dv, true))
      .param(floatParam("scale", scale));
  if (c.causal)
    backward.param(unitParam("causal"));
  ASSERT_TRUE(backward.run<double>().isOk());
  expectNear(backward.result(0), naive.dq, 1e-11);
  expectNear(backward.result(1), naive.dk, 1e-11);
  expectNear(backward.result(2), naive.dv_, 1e-11);
  ASSERT_TRUE(backward.run<float>().isOk());
  expectNear(backward.result(0), naive.dq, 1e-4);
  expectNear(backward.result(1), naive.dk, 1e-4);
  expectNear(backward.result(2), naive.dv_, 1e-4);
}

TEST(AttentionKernels, MatchTheWrittenOutFormForwardAndBackward) {
  // Single and several blocks of 64 query rows, a last partial block,
  // causal with S < T and S > T (PyTorch's top-left alignment), several
  // batch dimensions, different head sizes for values.
  const AttentionShapeCase cases[] = {
      {{2}, 5, 5, 3, 2, true},    {{2, 3}, 4, 7, 5, 3, false},
      {{3}, 70, 70, 4, 4, true},  {{1}, 130, 40, 3, 5, true},
      {{2}, 20, 150, 6, 2, true}, {{2}, 129, 129, 8, 8, false},
      {{}, 9, 3, 2, 2, true},
      // Grouped-query: 6 query heads on 2 or 3 key and value heads, over
      // several blocks; one key head for all (multi-query).
      {{2, 6}, 70, 70, 4, 3, true, 3}, {{2, 6}, 9, 12, 3, 3, false, 2},
      {{1, 4}, 130, 130, 2, 2, true, 4},
      // Dropout of the probabilities: several blocks, grouped, cross.
      {{2, 3}, 70, 70, 4, 3, true, 1, 0.25}, {{2, 4}, 9, 130, 3, 2, false, 2, 0.5},
  };
  for (const AttentionShapeCase &c : cases) {
    SCOPED_TRACE("heads " + std::to_string(elementCount(c.batch)) + " S " +
                 std::to_string(c.s) + " T " + std::to_string(c.t) +
                 (c.causal ? " causal" : "") + " groups " +
                 std::to_string(c.groups) + " dropout " +
                 std::to_string(c.dropout));
    expectAttentionMatchesWrittenOut(c);
  }
}

TEST(AttentionKernels, MasksMatchTheWrittenOutForm) {
  // A padding mask [B, 1, 1, T] over heads, one per query [B..., S, T], one
  // shared by the batch [1, S, T], with causal, over several blocks of
  // query rows; every fourth row of the mask allows no key (its queries
  // give 0, as PyTorch's, and no gradient), the others 3 keys in 4.
  struct MaskCase {
    AttentionShapeCase shape;
    std::vector<int> broadcast; // the mask's size-1 dimensions
  };
  const MaskCase cases[] = {
      {{{2, 3}, 6, 6, 4, 4, true}, {1, 2}}, {{{2}, 70, 50, 3, 2, false}, {}},
      {{{3}, 9, 9, 2, 2, true}, {0}},       {{{2, 2}, 130, 20, 4, 3, false}, {1}},
      {{{1}, 5, 7, 3, 3, false}, {0, 1}},
      {{{2, 4}, 70, 70, 3, 2, true, 2}, {1, 2}},
      {{{2, 2}, 70, 40, 3, 2, true, 1, 0.3}, {1, 2}},
  };
  for (const MaskCase &m : cases) {
    const AttentionShapeCase &c = m.shape;
    std::vector<int64_t> scores = c.batch;
    scores.push_back(c.s);
    scores.push_back(c.t);
    std::vector<int64_t> maskShape = scores;
    for (int d : m.broadcast)
      maskShape[d] = 1;
    SCOPED_TRACE("mask " + ::testing::PrintToString(maskShape) + " of " +
                 ::testing::PrintToString(scores));
    std::vector<double> mask = randomValues(elementCount(maskShape), 5, 0, 1);
    for (int64_t i = 0; i < int64_t(mask.size()); ++i)
      mask[i] = (i / c.t) % 4 == 1 ? 0.0 : (mask[i] < 0.75 ? 1.0 : 0.0);
    // The mask broadcast to the scores, for the written-out form.
    std::vector<bool> allowed(elementCount(scores));
    for (int64_t i = 0; i < int64_t(allowed.size()); ++i) {
      int64_t rest = i, offset = 0, stride = 1;
      for (int d = int(scores.size()) - 1; d >= 0; --d) {
        int64_t at = rest % scores[d];
        rest /= scores[d];
        if (maskShape[d] != 1)
          offset += at * stride;
        stride *= maskShape[d];
      }
      allowed[i] = mask[offset] != 0;
    }
    expectAttentionMatchesWrittenOut(c, maskShape, mask, allowed);
  }
}

TEST(KernelRules, AttentionMasks) {
  auto masked = [](std::vector<int64_t> mask, DType dtype) {
    LaunchCase c("attention");
    c.input({2, 4, 5, 3}).input({2, 4, 6, 3}).input({2, 4, 6, 3});
    c.typedInput(dtype, mask).output({2, 4, 5, 3}).output({2, 4, 5});
    c.param(floatParam("scale", 0.5));
    return c;
  };
  expectAccepted(masked({2, 1, 1, 6}, DType::Bool));
  expectAccepted(masked({2, 4, 5, 6}, DType::Bool));
  expectAccepted(masked({1, 1, 5, 6}, DType::Bool));
  expectRejected(masked({2, 1, 1, 5}, DType::Bool),
                 "mask [2, 1, 1, 5] does not broadcast to the scores "
                 "[2, 4, 5, 6]");
  expectRejected(masked({2, 6}, DType::Bool),
                 "does not broadcast to the scores");
  expectRejected(masked({2, 1, 1, 6}, DType::F32), "mask must be a bool tensor");
}

TEST(KernelRules, AttentionDropout) {
  auto dropped = [](double rate, bool step, bool seed, bool masked = false) {
    LaunchCase c("attention");
    c.input({2, 4, 5, 3}).input({2, 4, 6, 3}).input({2, 4, 6, 3});
    if (masked)
      c.typedInput(DType::Bool, {2, 1, 1, 6});
    if (step)
      c.typedInput(DType::I64, {}, {1});
    c.output({2, 4, 5, 3}).output({2, 4, 5});
    c.param(floatParam("scale", 0.5)).param(floatParam("dropout", rate));
    if (seed)
      c.param(intParam("seed", 2));
    return c;
  };
  expectAccepted(dropped(0.1, true, true));
  expectAccepted(dropped(0.1, true, true, /*masked=*/true));
  expectRejected(dropped(1.0, true, true), "dropout must be in [0, 1), got 1");
  expectRejected(dropped(0.1, true, false), "dropout needs its seed");
  expectRejected(dropped(0.1, false, true), "expected 4 inputs");
  LaunchCase seedOnly("attention");
  seedOnly.input({2, 5, 3}).input({2, 6, 3}).input({2, 6, 3});
  seedOnly.output({2, 5, 3}).output({2, 5});
  seedOnly.param(floatParam("scale", 0.5)).param(intParam("seed", 2));
  expectRejected(seedOnly, "a seed without dropout");
}

TEST(IntegerKernels, ArithmeticWrapsAsPyTorchsIntegers) {
  // add, sub and mul on i32 and i64 (one broadcast operand), wrapping
  // around at the type's ends as PyTorch's integers do.
  const double big = 2147483647.0;
  struct Case {
    const char *op;
    std::vector<double> expected;
  };
  const std::vector<double> lhs = {1, big, -5, -big - 1, 7, 0};
  const std::vector<double> rhs = {2, 1, 3, -1, -7, 5};
  for (const Case &c : {Case{"add", {3, -big - 1, -2, big, 0, 5}},
                        Case{"sub", {-1, big - 1, -8, -big, 14, -5}},
                        Case{"mul", {2, big, -15, -big - 1, -49, 0}}}) {
    LaunchCase i32(c.op);
    i32.typedInput(DType::I32, {6}, lhs)
        .typedInput(DType::I32, {6}, rhs)
        .typedOutput(DType::I32, {6});
    ASSERT_TRUE(i32.run<float>().isOk()) << c.op;
    EXPECT_EQ(i32.result(), c.expected) << c.op;
    ASSERT_TRUE(i32.run<double>().isOk()) << c.op;
    EXPECT_EQ(i32.result(), c.expected) << c.op;
  }
  // i64: no wrap at 2^31.
  LaunchCase i64("mul");
  i64.typedInput(DType::I64, {3}, {65536, -3, 1e9})
      .typedInput(DType::I64, {3}, {65536, 4, 1e6})
      .typedOutput(DType::I64, {3});
  ASSERT_TRUE(i64.run<float>().isOk());
  EXPECT_EQ(i64.result(), (std::vector<double>{4294967296.0, -12, 1e15}));
  // Mixed integer types, or an integer with a float, are plan errors.
  LaunchCase mixed("add");
  mixed.typedInput(DType::I32, {2}).typedInput(DType::I64, {2}).typedOutput(
      DType::I32, {2});
  expectRejected(mixed, "rhs type");
  LaunchCase divide("div");
  divide.typedInput(DType::I32, {2}).typedInput(DType::I32, {2}).typedOutput(
      DType::I32, {2});
  expectRejected(divide, "lhs must be an f32 or bf16 tensor");
}

TEST(IntegerKernels, ConversionsAndRunningSums) {
  auto convert = [](DType from, DType to, std::vector<double> values) {
    LaunchCase c("convert");
    int64_t n = static_cast<int64_t>(values.size());
    c.typedInput(from, {n}, std::move(values)).typedOutput(to, {n});
    EXPECT_TRUE(c.run<float>().isOk());
    return c.result();
  };
  using V = std::vector<double>;
  EXPECT_EQ(convert(DType::Bool, DType::I32, {1, 0, 1}), (V{1, 0, 1}));
  EXPECT_EQ(convert(DType::I32, DType::Bool, {3, 0, -1}), (V{1, 0, 1}));
  EXPECT_EQ(convert(DType::I32, DType::I64, {-7, 2147483647}),
            (V{-7, 2147483647}));
  // i64 to i32 keeps the low 32 bits; floats truncate toward zero, NaN is 0
  // and the ends saturate.
  EXPECT_EQ(convert(DType::I64, DType::I32, {4294967297.0, -1}), (V{1, -1}));
  EXPECT_EQ(convert(DType::F32, DType::I32,
                    {2.7, -2.7, std::nan(""), 1e10, -1e10}),
            (V{2, -2, 0, 2147483647, -2147483648.0}));
  EXPECT_EQ(convert(DType::I64, DType::F32, {-3, 16777217}),
            (V{-3, 16777216})); // rounded to the nearest f32
  EXPECT_EQ(convert(DType::F32, DType::Bool, {0.5, 0, -0.0}), (V{1, 0, 0}));
  // Running sums of integers, forward and reverse.
  LaunchCase sums("cumsum");
  sums.typedInput(DType::I32, {2, 3}, {1, 0, 1, 2147483647, 1, 0})
      .typedOutput(DType::I32, {2, 3})
      .param(intParam("dim", 1));
  ASSERT_TRUE(sums.run<double>().isOk());
  EXPECT_EQ(sums.result(), (V{1, 1, 2, 2147483647, -2147483648.0,
                              -2147483648.0}));
  LaunchCase reverse("cumsum");
  reverse.typedInput(DType::I64, {4}, {1, 2, 3, 4})
      .typedOutput(DType::I64, {4})
      .param(intParam("dim", 0))
      .param(unitParam("reverse"));
  ASSERT_TRUE(reverse.run<float>().isOk());
  EXPECT_EQ(reverse.result(), (V{10, 9, 7, 4}));
}

TEST(AttentionKernels, WorkspaceIsABlockOfRowsNotTheMatrix) {
  // GPT-2 small's attention: 8 x 12 heads of 1024 queries. The forward's
  // workspace is one block of 64 query rows (1/16 of the matrix), the
  // backward's two blocks and one number per query.
  LaunchCase forward("attention");
  forward.input({8, 12, 1024, 64}, {0.0})
      .input({8, 12, 1024, 64}, {0.0})
      .input({8, 12, 1024, 64}, {0.0})
      .output({8, 12, 1024, 64})
      .output({8, 12, 1024})
      .param(floatParam("scale", 0.125))
      .param(unitParam("causal"));
  Entry e;
  ASSERT_TRUE(forward.decoded(e).isOk());
  AttentionShape a = attentionShape(e, e.launches[0]);
  EXPECT_EQ(a.batch, 96);
  EXPECT_EQ(a.blockRows, 64);
  EXPECT_EQ(kernelScratchBytes(e, e.launches[0]), 4u * 96 * 64 * 1024);
  EXPECT_EQ(pinnedScratchBytes(e), 4u * 96 * 64 * 1024);
  // Rows per block halve until a block is at most 2^24 probabilities.
  LaunchCase wide("attention");
  wide.input({64, 32, 4096, 8}, {0.0})
      .input({64, 32, 4096, 8}, {0.0})
      .input({64, 32, 4096, 8}, {0.0})
      .output({64, 32, 4096, 8})
      .output({64, 32, 4096})
      .param(floatParam("scale", 0.5));
  ASSERT_TRUE(wide.decoded(e).isOk());
  a = attentionShape(e, e.launches[0]);
  EXPECT_EQ(a.blockRows, 2);
  EXPECT_LE(a.batch * a.blockRows * a.keys, int64_t(1) << 24);
}

//===----------------------------------------------------------------------===//
// Shape kernels
//===----------------------------------------------------------------------===//

/// The elements a strided view reads, materialized in row-major order.
std::vector<double> expandStrided(const std::vector<int64_t> &shape,
                                  const std::vector<int64_t> &strides,
                                  const std::vector<double> &data) {
  std::vector<double> out(static_cast<size_t>(elementCount(shape)));
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t rest = static_cast<int64_t>(i), offset = 0;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      offset += rest % shape[d] * strides[d];
      rest /= shape[d];
    }
    out[i] = data[static_cast<size_t>(offset)];
  }
  return out;
}

TEST(ElementKernels, BroadcastOperandsReadThroughStridesLikeMaterializedOnes) {
  struct Read {
    std::vector<int64_t> strides; // empty: contiguous
    std::vector<double> data;     // the buffer (its reach)
  };
  struct Case {
    const char *kernel;
    std::vector<int64_t> shape;
    Read a, b;
  };
  const Case cases[] = {
      // A bias row under every row; a [3, 4] block under a batch.
      {"add", {4, 3}, {{}, {}}, {{0, 1}, {0.5, -1.0, 2.0}}},
      {"mul", {2, 3, 4}, {{0, 4, 1}, randomValues(12, 5)}, {{}, {}}},
      // A column and a row; a scalar; size-1 dimensions between.
      {"sub", {3, 5}, {{1, 0}, {1.0, 2.0, 3.0}}, {{0, 1}, randomValues(5, 6)}},
      {"div", {2, 3}, {{}, {}}, {{0, 0}, {4.0}}},
      {"add", {2, 1, 3}, {{0, 0, 1}, {1.0, 2.0, 3.0}}, {{}, {}}},
      {"relu_grad", {3, 4}, {{0, 1}, {-1.0, 2.0, 0.0, 3.0}}, {{}, {}}},
      {"scale", {4, 2}, {{0, 1}, {1.5, -2.5}}, {{}, {}}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.kernel);
    int64_t n = elementCount(c.shape);
    bool binary = std::string(c.kernel) != "scale";
    LaunchCase strided(c.kernel), materialized(c.kernel);
    const Read *reads[2] = {&c.a, &c.b};
    for (int k = 0; k < (binary ? 2 : 1); ++k) {
      const Read &r = *reads[k];
      std::vector<double> data =
          r.strides.empty() ? randomValues(n, 40 + k) : r.data;
      if (r.strides.empty()) {
        strided.input(c.shape, data);
        materialized.input(c.shape, data);
      } else {
        strided.stridedInput(c.shape, r.strides, data);
        materialized.input(c.shape, expandStrided(c.shape, r.strides, data));
      }
    }
    strided.output(c.shape);
    materialized.output(c.shape);
    if (!binary) {
      strided.param(floatParam("factor", 0.75));
      materialized.param(floatParam("factor", 0.75));
    }
    ASSERT_TRUE(materialized.run<float>().isOk());
    Status status = strided.run<float>();
    ASSERT_TRUE(status.isOk()) << status.toString();
    EXPECT_EQ(strided.result(), materialized.result());
    ASSERT_TRUE(materialized.run<double>().isOk());
    ASSERT_TRUE(strided.run<double>().isOk());
    EXPECT_EQ(strided.result(), materialized.result());
  }
}

TEST(KernelRules, StridedViewsAreElementKernelInputsOnly) {
  LaunchCase good("add");
  good.input({4, 3}).stridedInput({4, 3}, {0, 1}, {1, 2, 3}).output({4, 3});
  expectAccepted(good);
  LaunchCase third("mse_grad");
  third.input({4, 3})
      .input({4, 3})
      .stridedInput({1}, {0}, {1.0})
      .output({4, 3});
  expectRejected(third, "input #2 is a strided view");
  LaunchCase matmul("matmul");
  matmul.stridedInput({4, 3}, {0, 1}, {1, 2, 3}).input({3, 2}).output({4, 2});
  expectRejected(matmul, "input #0 is a strided view, which only element "
                         "kernels read");
  LaunchCase written("add");
  written.input({4, 3}).input({4, 3}).output({4, 3});
  written.entry.tensors[2].strides = {0, 1};
  expectRejected(written, "output #0 is a strided view");
}

TEST(ShapeKernels, BroadcastInDim) {
  LaunchCase row("broadcast_in_dim");
  row.input({3}, {1, 2, 3})
      .output({2, 3})
      .param(intsParam("broadcast_dimensions", {1}));
  ASSERT_TRUE(row.run<float>().isOk());
  expectNear(row.result(), {1, 2, 3, 1, 2, 3}, 0);

  LaunchCase column("broadcast_in_dim");
  column.input({2, 1}, {5, 6})
      .output({2, 3})
      .param(intsParam("broadcast_dimensions", {0, 1}));
  ASSERT_TRUE(column.run<double>().isOk());
  expectNear(column.result(), {5, 5, 5, 6, 6, 6}, 0);

  LaunchCase scalar("broadcast_in_dim");
  scalar.typedInput(DType::I64, {}, {9})
      .typedOutput(DType::I64, {2, 2})
      .param(intsParam("broadcast_dimensions", {}));
  ASSERT_TRUE(scalar.run<float>().isOk());
  expectNear(scalar.result(), {9, 9, 9, 9}, 0);

  LaunchCase middle("broadcast_in_dim");
  middle.input({2, 2}, {1, 2, 3, 4})
      .output({2, 3, 2})
      .param(intsParam("broadcast_dimensions", {0, 2}));
  ASSERT_TRUE(middle.run<float>().isOk());
  expectNear(middle.result(), {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}, 0);
}

TEST(ShapeKernels, Transpose) {
  LaunchCase c("transpose");
  c.input({2, 3, 4}).output({4, 2, 3}).param(
      intsParam("permutation", {2, 0, 1}));
  ASSERT_TRUE(c.run<double>().isOk());
  const std::vector<double> &x = c.values[0];
  std::vector<double> expected;
  for (int l = 0; l < 4; ++l)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        expected.push_back(x[i * 12 + j * 4 + l]);
  expectNear(c.result(), expected, 0);

  LaunchCase ints("transpose");
  ints.typedInput(DType::I32, {2, 3}, {1, 2, 3, 4, 5, 6})
      .typedOutput(DType::I32, {3, 2})
      .param(intsParam("permutation", {1, 0}));
  ASSERT_TRUE(ints.run<double>().isOk());
  expectNear(ints.result(), {1, 4, 2, 5, 3, 6}, 0);
}

TEST(ShapeKernels, SliceWithStridesAndItsGradient) {
  std::vector<double> x(20);
  for (int i = 0; i < 20; ++i)
    x[i] = i;
  // Rows 1, 3 and columns 0, 3 of a 4x5 matrix.
  LaunchCase slice("slice");
  slice.input({4, 5}, x).output({2, 2});
  slice.param(intsParam("start_indices", {1, 0}))
      .param(intsParam("limit_indices", {4, 5}))
      .param(intsParam("strides", {2, 3}));
  ASSERT_TRUE(slice.run<float>().isOk());
  expectNear(slice.result(), {5, 8, 15, 18}, 0);

  LaunchCase grad("slice_grad");
  grad.input({2, 2}, {1, 2, 3, 4}).output({4, 5});
  grad.param(intsParam("start_indices", {1, 0}))
      .param(intsParam("limit_indices", {4, 5}))
      .param(intsParam("strides", {2, 3}));
  ASSERT_TRUE(grad.run<double>().isOk());
  std::vector<double> expected(20, 0);
  expected[5] = 1;
  expected[8] = 2;
  expected[15] = 3;
  expected[18] = 4;
  expectNear(grad.result(), expected, 0);

  LaunchCase empty("slice");
  empty.input({4}, {1, 2, 3, 4}).output({0});
  empty.param(intsParam("start_indices", {2}))
      .param(intsParam("limit_indices", {2}))
      .param(intsParam("strides", {1}));
  ASSERT_TRUE(empty.run<float>().isOk());
  EXPECT_TRUE(empty.result().empty());
}

TEST(ShapeKernels, Concat) {
  LaunchCase c("concat");
  c.input({2, 2}, {1, 2, 3, 4})
      .input({2, 1}, {9, 8})
      .input({2, 0}, {})
      .output({2, 3})
      .param(intParam("dimension", 1));
  c.values[2].clear();
  ASSERT_TRUE(c.run<float>().isOk());
  expectNear(c.result(), {1, 2, 9, 3, 4, 8}, 0);

  LaunchCase rows("concat");
  rows.typedInput(DType::I64, {1, 2}, {1, 2})
      .typedInput(DType::I64, {2, 2}, {3, 4, 5, 6})
      .typedOutput(DType::I64, {3, 2})
      .param(intParam("dimension", 0));
  ASSERT_TRUE(rows.run<double>().isOk());
  expectNear(rows.result(), {1, 2, 3, 4, 5, 6}, 0);
}

/// A rank of a job whose collectives the kernel tests never run.
struct RankOnly : Communicator {
  RankOnly(int rank, int size) : r(rank), n(size) {}
  int rank() const override { return r; }
  int size() const override { return n; }
  uint64_t start(const CollectiveCall &) override {
    ADD_FAILURE() << "no collective expected";
    return 0;
  }
  void finish(uint64_t) override {}
  void broadcast(void *, uint64_t) override {}
  uint64_t collectives() const override { return 0; }
  double secondsBlocked() const override { return 0; }
  std::string describe() const override { return "rank only"; }
  int r, n;
};

// ZeRO-1's shard reads the parameters where they are: rank r's part of
// them flattened end to end, zero padded to equal shards.
TEST(ShapeKernels, ShardOfSeveralTensorsOnEachRank) {
  std::vector<std::vector<double>> expected = {
      {1, 2, 3, 10, 20},
      {30, 40, 50, 60, 0},
      {1, 2, 3, 10, 20, 30, 40, 50, 60}};
  for (int rank = 0; rank < 3; ++rank) {
    SCOPED_TRACE(rank);
    RankOnly job(rank % 2, 2);
    int ranks = rank < 2 ? 2 : 1;
    LaunchCase c("shard");
    c.input({3}, {1, 2, 3})
        .input({2, 3}, {10, 20, 30, 40, 50, 60})
        .output({ranks == 2 ? 5 : 9})
        .param(intParam("ranks", ranks));
    if (ranks == 2)
      c.communicator = &job;
    ASSERT_TRUE(c.run<float>().isOk());
    expectNear(c.result(), expected[rank], 0);
    ASSERT_TRUE(c.run<double>().isOk());
    expectNear(c.result(), expected[rank], 0);
  }
  // The shard must be ceil(total / ranks) elements.
  LaunchCase wrong("shard");
  wrong.input({3}).input({2, 3}).output({4}).param(intParam("ranks", 2));
  EXPECT_CONTAINS(wrong.check().message(),
                  "must be flat with 5 elements: 9 over 2 ranks");
}

// A reduce_scatter reads its inputs as one flat tensor: several must lie
// end to end (a zt.pack's parts), else the launch is refused (one buffer
// per tensor here, so they do not); one may have any shape.
TEST(ShapeKernels, ReduceScatterReadsItsInputsFlatAndEndToEnd) {
  LaunchCase c("reduce_scatter");
  c.input({2, 3}).input({2}).output({8}).param(intParam("ranks", 1));
  ASSERT_TRUE(c.check().isOk()) << c.check().message();
  Status s = c.run<float>();
  EXPECT_EQ(s.code(), StatusCode::InvalidPlan);
  EXPECT_CONTAINS(s.message(), "input #1 does not follow input #0 in memory");
  LaunchCase wrong("reduce_scatter");
  wrong.input({2, 3}).input({3}).output({4}).param(intParam("ranks", 2));
  EXPECT_CONTAINS(wrong.check().message(),
                  "the inputs (9 elements) must be 2 shards (4xf32), flat");
  // One input of any shape (a gradient larger than its bucket) is read flat.
  LaunchCase one("reduce_scatter");
  one.input({2, 3}, {1, 2, 3, 4, 5, 6}).output({6}).param(intParam("ranks", 1));
  Status ran = one.run<float>();
  ASSERT_TRUE(ran.isOk()) << ran.message();
  expectNear(one.result(), {1, 2, 3, 4, 5, 6}, 0);
  LaunchCase odd("reduce_scatter");
  odd.input({3, 3}).output({4}).param(intParam("ranks", 2));
  EXPECT_CONTAINS(odd.check().message(),
                  "the inputs (9 elements) must be 2 shards (4xf32), flat");
}

TEST(ShapeKernels, ConstantCausalMaskAndCopy) {
  LaunchCase constant("constant");
  constant.typedOutput(DType::I32, {3}).param(floatParam("value", -4));
  ASSERT_TRUE(constant.run<float>().isOk());
  expectNear(constant.result(), {-4, -4, -4}, 0);
  LaunchCase half("constant");
  half.output({2}).param(floatParam("value", 0.125));
  ASSERT_TRUE(half.run<double>().isOk());
  expectNear(half.result(), {0.125, 0.125}, 0);

  LaunchCase mask("causal_mask");
  mask.output({3, 3});
  ASSERT_TRUE(mask.run<float>().isOk());
  expectNear(mask.result(), {0, -kInf, -kInf, 0, 0, -kInf, 0, 0, 0}, 0);

  LaunchCase copy("copy");
  copy.input({2, 3}).output({6});
  ASSERT_TRUE(copy.run<double>().isOk());
  expectNear(copy.result(), copy.values[0], 0);
  LaunchCase self("copy");
  self.typedInput(DType::I64, {3}, {7, 8, 9}).outputInPlace(0);
  ASSERT_TRUE(self.run<float>().isOk());
  expectNear(self.result(), {7, 8, 9}, 0);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

TEST(Reductions, SumMeanMaxWithKeepDims) {
  std::vector<double> x(24);
  for (int i = 0; i < 24; ++i)
    x[i] = (i * 7) % 11 - 5; // a fixed jumble with repeats
  // Over dims 0 and 2 of [2, 3, 4], keeping them: result [1, 3, 1].
  std::vector<double> sum(3, 0), max(3, -kInf);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int l = 0; l < 4; ++l) {
        double v = x[i * 12 + j * 4 + l];
        sum[j] += v;
        max[j] = std::max(max[j], v);
      }
  std::vector<double> mean = {sum[0] / 8, sum[1] / 8, sum[2] / 8};
  for (const char *kernel : {"sum", "mean", "max"}) {
    LaunchCase c(kernel);
    c.input({2, 3, 4}, x).output({1, 3, 1});
    c.param(intsParam("dims", {0, 2})).param(unitParam("keep_dims"));
    ASSERT_TRUE(c.run<float>().isOk()) << kernel;
    std::string name = kernel;
    expectNear(c.result(),
               name == "sum"    ? sum
               : name == "mean" ? mean
                                : max,
               1e-6);
  }
  LaunchCase all("sum");
  all.input({2, 3}, {1, 2, 3, 4, 5, 6})
      .output({})
      .param(intsParam("dims", {0, 1}));
  ASSERT_TRUE(all.run<double>().isOk());
  expectNear(all.result(), {21}, 0);
  LaunchCase columns("sum");
  columns.input({2, 3}, {1, 2, 3, 4, 5, 6})
      .output({3})
      .param(intsParam("dims", {0}));
  ASSERT_TRUE(columns.run<double>().isOk());
  expectNear(columns.result(), {5, 7, 9}, 0);
}

// Column sums on a GPU (ChunkedColumns): each column's rows summed in
// chunks, in row order, then the chunks in order; a sum that fits one chunk
// (few rows) gives the CPU's row-order bits. Checked against that order
// computed here in float, for f32 and bf16 storage, sum and mean, with a
// leading dimension of extent 1 and a last chunk shorter than the others;
// reductions that are not column sums keep their group per result.
TEST(Reductions, GpuColumnSumsAddChunksOfRowsInOrder) {
  EXPECT_EQ(columnSumChunks(300, 40), 9); // 300 / 32 rows; chunks of 34
  EXPECT_EQ(columnSumChunks(40, 48), 1);
  EXPECT_EQ(columnSumChunks(1 << 20, 768), 171); // about 2^17 threads
  EXPECT_EQ(columnSumChunks(8192, 1 << 18), 1);
  struct Shape {
    int64_t rows, columns;
  };
  for (Shape shape : {Shape{300, 40}, Shape{40, 48}})
    for (DType dtype : {DType::F32, DType::BF16})
      for (const char *kernel : {"sum", "mean"})
        for (bool groups : {false, true}) {
          const int64_t rows = shape.rows, columns = shape.columns;
          std::vector<double> x = randomValues(rows * columns, 5, -2, 2);
          std::vector<float> stored(x.size());
          for (size_t i = 0; i < x.size(); ++i)
            stored[i] = dtype == DType::BF16
                            ? bf16ToFloat(floatToBf16(static_cast<float>(x[i])))
                            : static_cast<float>(x[i]);
          int64_t chunks = groups ? columnSumChunks(rows, columns) : 1;
          int64_t chunkRows = (rows + chunks - 1) / chunks;
          std::vector<double> expected(columns);
          for (int64_t j = 0; j < columns; ++j) {
            float total = 0;
            for (int64_t c = 0; c < chunks; ++c) {
              float part = 0;
              for (int64_t r = c * chunkRows;
                   r < std::min(rows, (c + 1) * chunkRows); ++r)
                part += stored[r * columns + j];
              total += part;
            }
            if (std::string(kernel) == "mean")
              total /= static_cast<float>(rows);
            expected[j] = dtype == DType::BF16
                              ? bf16ToFloat(floatToBf16(total))
                              : total;
          }
          LaunchCase c(kernel);
          c.typedInput(dtype, {1, rows, columns}, x)
              .typedOutput(dtype, {columns})
              .param(intsParam("dims", {0, 1}));
          c.gpuGroups = groups;
          std::string what = std::string(kernel) + " " + dtypeName(dtype) +
                             " [" + std::to_string(rows) + ", " +
                             std::to_string(columns) + "]" +
                             (groups ? " gpu" : "");
          ASSERT_TRUE(c.run<float>().isOk()) << what;
          EXPECT_EQ(c.result(), expected) << what;
        }
  // Rows reduced after a kept dimension: not a column sum.
  Entry entry;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{300, 40},
                                     std::vector<int64_t>{3, 300, 1, 40}}) {
    Tensor t;
    t.type = TensorType{DType::F32, shape};
    entry.tensors.push_back(t);
  }
  Launch launch;
  launch.kernel = KernelId::Sum;
  launch.inputs = {0};
  launch.params.dims = {1};
  ColumnSumShape found;
  EXPECT_FALSE(columnSumShape(entry, launch, found));
  launch.params.dims = {0};
  ASSERT_TRUE(columnSumShape(entry, launch, found));
  EXPECT_EQ(found.rows, 300);
  EXPECT_EQ(found.columns, 40);
  launch.inputs = {1};
  launch.params.dims = {0, 1};
  ASSERT_TRUE(columnSumShape(entry, launch, found));
  EXPECT_EQ(found.rows, 900);
  launch.params.dims = {0, 1, 3};
  EXPECT_FALSE(columnSumShape(entry, launch, found)); // 1 column
}

TEST(Reductions, MaxPropagatesNaN) {
  LaunchCase c("max");
  c.input({2, 3}, {1, std::nan(""), 3, -kInf, -kInf, -kInf}).output({2});
  c.param(intsParam("dims", {1}));
  ASSERT_TRUE(c.run<float>().isOk());
  EXPECT_TRUE(std::isnan(c.result()[0]));
  EXPECT_EQ(c.result()[1], -kInf);
}

TEST(Reductions, MaxGradGoesToTheFirstMaximum) {
  // Rows over dim 0 of a 3x2 matrix: column 0 has its maximum 5 twice.
  LaunchCase c("max_grad");
  c.input({3, 2}, {5, 1, 2, 7, 5, 7}).input({2}, {10, 20}).output({3, 2});
  c.param(intsParam("dims", {0}));
  ASSERT_TRUE(c.run<double>().isOk());
  expectNear(c.result(), {10, 0, 0, 20, 0, 0}, 0);

  // Over both dims of a 2x2x2 tensor (kept), the first maximum in row-major
  // order of each [i, :, :] block.
  LaunchCase block("max_grad");
  block.input({2, 2, 2}, {0, 3, 3, 1, 9, 2, 9, 9})
      .input({2, 1, 1}, {1, 2})
      .output({2, 2, 2});
  block.param(intsParam("dims", {1, 2})).param(unitParam("keep_dims"));
  ASSERT_TRUE(block.run<float>().isOk());
  expectNear(block.result(), {0, 1, 0, 0, 2, 0, 0, 0}, 0);
}

//===----------------------------------------------------------------------===//
// Softmax family and normalisation
//===----------------------------------------------------------------------===//

TEST(AxisKernels, SoftmaxAndLogSoftmaxWithMinusInfinity) {
  double e = std::exp(1.0);
  LaunchCase softmax("softmax");
  softmax.input({2, 3}, {0, -kInf, 1, 1000, 1000, -kInf}).output({2, 3});
  softmax.param(intParam("axis", -1));
  ASSERT_TRUE(softmax.run<float>().isOk());
  expectNear(softmax.result(), {1 / (1 + e), 0, e / (1 + e), 0.5, 0.5, 0},
             1e-6);
  EXPECT_EQ(softmax.result()[1], 0.0); // exactly 0, never NaN

  LaunchCase log("log_softmax");
  log.input({2, 3}, {0, -kInf, 1, 1000, 1000, -kInf}).output({2, 3});
  log.param(intParam("axis", 1));
  ASSERT_TRUE(log.run<double>().isOk());
  double l = std::log(1 + e);
  expectNear(log.result(),
             {-l, -kInf, 1 - l, -std::log(2.0), -std::log(2.0), -kInf}, 1e-12);

  // Along axis 0 of [3, 2]: columns are the lines.
  LaunchCase column("softmax");
  column.input({3, 2}, {0, 5, 0, 5, 0, 5}).output({3, 2});
  column.param(intParam("axis", 0));
  ASSERT_TRUE(column.run<double>().isOk());
  expectNear(column.result(), std::vector<double>(6, 1.0 / 3), 1e-12);
}

TEST(NormKernels, LayerNormAgainstHandComputation) {
  std::vector<double> x = {1, 2, 3, 6, -1, 0, 1, 0};
  std::vector<double> gamma = {1, 2, 0.5, -1}, beta = {0, 1, 0, 0.25};
  double eps = 1e-5;
  LaunchCase c("layer_norm");
  c.input({2, 4}, x).input({4}, gamma).input({4}, beta).output({2, 4});
  c.param(floatParam("epsilon", eps));
  std::vector<double> expected;
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int j = 0; j < 4; ++j)
      mean += x[r * 4 + j] / 4;
    for (int j = 0; j < 4; ++j)
      var += (x[r * 4 + j] - mean) * (x[r * 4 + j] - mean) / 4;
    for (int j = 0; j < 4; ++j)
      expected.push_back(
          (x[r * 4 + j] - mean) / std::sqrt(var + eps) * gamma[j] + beta[j]);
  }
  ASSERT_TRUE(c.run<double>().isOk());
  expectNear(c.result(), expected, 1e-12);
  ASSERT_TRUE(c.run<float>().isOk());
  expectNear(c.result(), expected, 1e-5);

  LaunchCase rms("rms_norm");
  rms.input({1, 2}, {3, 4}).input({2}, {1, 2}).output({1, 2});
  rms.param(floatParam("epsilon", 0.5));
  ASSERT_TRUE(rms.run<double>().isOk());
  double scale = 1 / std::sqrt(12.5 + 0.5);
  expectNear(rms.result(), {3 * scale, 8 * scale}, 1e-12);
}

//===----------------------------------------------------------------------===//
// Backward kernels against finite differences of the forward ones
//===----------------------------------------------------------------------===//

/// sum(dy * forward(inputs)) as a function of input `which`'s elements: its
/// gradient by central differences, in double precision.
std::vector<double> numericalGradient(LaunchCase forward, size_t which,
                                      const std::vector<double> &dy,
                                      double step = 1e-6) {
  uint32_t tensor = forward.launch().inputs[which];
  std::vector<double> grad(forward.values[tensor].size());
  for (size_t i = 0; i < grad.size(); ++i) {
    double saved = forward.values[tensor][i];
    double sums[2];
    for (int side = 0; side < 2; ++side) {
      forward.values[tensor][i] = saved + (side ? -step : step);
      EXPECT_TRUE(forward.run<double>().isOk());
      sums[side] = 0;
      for (size_t k = 0; k < dy.size(); ++k)
        sums[side] += dy[k] * forward.result()[k];
    }
    forward.values[tensor][i] = saved;
    grad[i] = (sums[0] - sums[1]) / (2 * step);
  }
  return grad;
}

/// Whether operand `i` of an element op of `arity` is a bool (a condition
/// or a logical op's operand).
bool isBoolOperand(ElementArity arity, int i) {
  return arity == ElementArity::BoolUnary ||
         arity == ElementArity::BoolBinary ||
         (i == 0 &&
          (arity == ElementArity::Mask || arity == ElementArity::Select));
}

/// A row applied to `operands` by its kernel (f64), with `params`.
std::vector<double> runRow(int row, const std::vector<std::vector<double>> &operands,
                           const std::vector<Param> &params) {
  const ElementRow &r = kElementRows[row];
  LaunchCase c(r.name);
  std::vector<int64_t> shape = {static_cast<int64_t>(operands[0].size())};
  for (size_t i = 0; i < operands.size(); ++i)
    c.typedInput(isBoolOperand(r.arity, int(i)) ? DType::Bool : DType::F32,
                 shape, operands[i]);
  c.typedOutput(elementResultIsBool(r.arity) ? DType::Bool : DType::F32, shape);
  for (const Param &p : params)
    c.param(p);
  EXPECT_TRUE(c.rowParams().run<double>().isOk()) << r.name;
  return c.result();
}

/// A Vjp expression (ElementVjp.h) evaluated with the kernels of the rows
/// it names.
std::vector<double> evaluateVjp(const vjp::Expr &e,
                                const std::vector<double> leaves[6],
                                const std::vector<Param> &params) {
  std::vector<std::vector<double>> stack;
  for (int s = 0; s < e.count; ++s) {
    const vjp::Step &step = e.steps[s];
    if (step.isLeaf) {
      stack.push_back(leaves[step.code]);
      continue;
    }
    size_t n = vjp::operandCount(step.code);
    std::vector<std::vector<double>> operands(stack.end() - n, stack.end());
    stack.resize(stack.size() - n);
    // A row in a Vjp takes the forward op's params of the same names.
    std::vector<Param> own;
    const ElementRow &r = kElementRows[step.code];
    for (int k = 0; k < r.paramCount; ++k)
      for (const Param &p : params)
        if (p.name == r.paramNames[k])
          own.push_back(p);
    EXPECT_EQ(own.size(), static_cast<size_t>(r.paramCount))
        << r.name << " reads a param its forward op lacks";
    stack.push_back(runRow(step.code, operands, own));
  }
  return stack.back();
}

// Every element row's gradient (its Vjp, the expression zt-autodiff builds)
// evaluated with the kernels it names, against finite differences of the
// row's own kernel, in f64. A bool operand (a condition) has no gradient,
// nor has any operand of a row with a bool result.
TEST(BackwardKernels, EveryElementRowsVjpMatchesFiniteDifferences) {
  int checked = 0;
  for (int row = 0; row < kElementRowCount; ++row) {
    const ElementRow &r = kElementRows[row];
    const vjp::Vjp &rule = vjp::kElementVjps[row];
    if (!rule.defined) {
      EXPECT_EQ(r.arity, ElementArity::Grad) << r.name << " has no Vjp";
      continue;
    }
    SCOPED_TRACE(r.name);
    ASSERT_EQ(rule.count, elementOperandCount(r.arity));
    if (elementResultIsBool(r.arity)) {
      for (int i = 0; i < rule.count; ++i)
        EXPECT_EQ(rule.grads[i].count, 0) << "a bool result has no gradient";
      continue;
    }
    ElementTestRow test = elementTestRow(r.name);
    if (test.zeroGradient) {
      for (int i = 0; i < rule.count; ++i)
        EXPECT_EQ(rule.grads[i].count, 0) << "its gradient is zero";
      ++checked;
      continue;
    }
    const size_t n = 12;
    LaunchCase forward(r.name);
    std::vector<double> leaves[6]; // A, B, C, Y, DY, G0
    for (int i = 0; i < rule.count; ++i) {
      bool condition = isBoolOperand(r.arity, i);
      leaves[i] = condition ? randomValues(n, 30 + i)
                            : randomValues(n, 30 + i, test.low, test.high);
      forward.typedInput(condition ? DType::Bool : DType::F32, {3, 4},
                         leaves[i]);
    }
    forward.output({3, 4});
    std::vector<Param> params;
    for (size_t k = 0; k < test.params.size(); ++k)
      params.push_back(floatParam(r.paramNames[k], test.params[k]));
    for (const Param &p : params)
      forward.param(p);
    forward.rowParams();
    for (int k = static_cast<int>(params.size()); k < r.paramCount; ++k)
      params.push_back(floatParam(r.paramNames[k], r.paramDefaults[k]));
    ASSERT_TRUE(forward.run<double>().isOk());
    leaves[int(vjp::Leaf::Y)] = forward.result();
    const std::vector<double> &dy = leaves[int(vjp::Leaf::DY)] =
        randomValues(n, 40);
    for (int i = 0; i < rule.count; ++i) {
      if (isBoolOperand(r.arity, i)) {
        EXPECT_EQ(rule.grads[i].count, 0) << "a condition has no gradient";
        continue;
      }
      std::vector<double> grad =
          rule.grads[i].count == 0 ? std::vector<double>(n, 0.0)
                                   : evaluateVjp(rule.grads[i], leaves, params);
      if (i == 0)
        leaves[int(vjp::Leaf::G0)] = grad;
      SCOPED_TRACE("operand " + std::to_string(i));
      expectNear(grad, numericalGradient(forward, i, dy), 1e-6);
    }
    ++checked;
  }
  EXPECT_GE(checked, 31);
}

TEST(BackwardKernels, SoftmaxGradientsMatchFiniteDifferences) {
  std::vector<double> x = randomValues(12, 7, -2, 2);
  std::vector<double> dy = randomValues(12, 8);
  for (int64_t axis : {0, -1}) {
    for (const char *name : {"softmax", "log_softmax"}) {
      LaunchCase forward(name);
      forward.input({3, 4}, x).output({3, 4}).param(intParam("axis", axis));
      ASSERT_TRUE(forward.run<double>().isOk());
      LaunchCase backward(std::string(name) + "_grad");
      backward.input({3, 4}, forward.result()).input({3, 4}, dy).output({3, 4});
      backward.param(intParam("axis", axis));
      ASSERT_TRUE(backward.run<double>().isOk());
      SCOPED_TRACE(std::string(name) + " axis " + std::to_string(axis));
      expectNear(backward.result(), numericalGradient(forward, 0, dy), 1e-6);
    }
  }
}

TEST(BackwardKernels, NormGradientsMatchFiniteDifferences) {
  std::vector<double> x = randomValues(15, 9, -2, 2);
  std::vector<double> gamma = randomValues(5, 10, 0.5, 1.5);
  std::vector<double> beta = randomValues(5, 11);
  std::vector<double> dy = randomValues(15, 12);
  double eps = 1e-3;

  LaunchCase layerNorm("layer_norm");
  layerNorm.input({3, 5}, x).input({5}, gamma).input({5}, beta).output({3, 5});
  layerNorm.param(floatParam("epsilon", eps));
  LaunchCase layerGrad("layer_norm_grad");
  layerGrad.input({3, 5}, x).input({5}, gamma).input({3, 5}, dy);
  layerGrad.output({3, 5}).output({5}).output({5});
  layerGrad.param(floatParam("epsilon", eps));
  ASSERT_TRUE(layerGrad.run<double>().isOk());
  expectNear(layerGrad.result(0), numericalGradient(layerNorm, 0, dy), 1e-6);
  expectNear(layerGrad.result(1), numericalGradient(layerNorm, 1, dy), 1e-6);
  expectNear(layerGrad.result(2), numericalGradient(layerNorm, 2, dy), 1e-6);

  LaunchCase rmsNorm("rms_norm");
  rmsNorm.input({3, 5}, x).input({5}, gamma).output({3, 5});
  rmsNorm.param(floatParam("epsilon", eps));
  LaunchCase rmsGrad("rms_norm_grad");
  rmsGrad.input({3, 5}, x).input({5}, gamma).input({3, 5}, dy);
  rmsGrad.output({3, 5}).output({5}).param(floatParam("epsilon", eps));
  ASSERT_TRUE(rmsGrad.run<double>().isOk());
  expectNear(rmsGrad.result(0), numericalGradient(rmsNorm, 0, dy), 1e-6);
  expectNear(rmsGrad.result(1), numericalGradient(rmsNorm, 1, dy), 1e-6);
}

TEST(BackwardKernels, LossGradientsMatchFiniteDifferences) {
  std::vector<double> logits = randomValues(12, 13, -3, 3);
  std::vector<double> labels = {2, 0, 3};
  LaunchCase loss("softmax_cross_entropy");
  loss.input({3, 4}, logits).typedInput(DType::I32, {3}, labels).output({});
  LaunchCase grad("softmax_cross_entropy_grad");
  grad.input({3, 4}, logits)
      .typedInput(DType::I32, {3}, labels)
      .input({}, {0.5});
  grad.output({3, 4});
  ASSERT_TRUE(grad.run<double>().isOk());
  expectNear(grad.result(), numericalGradient(loss, 0, {0.5}), 1e-6);

  std::vector<double> p = randomValues(6, 14), t = randomValues(6, 15);
  LaunchCase mse("mse");
  mse.input({2, 3}, p).input({2, 3}, t).output({});
  LaunchCase mseGrad("mse_grad");
  mseGrad.input({2, 3}, p).input({2, 3}, t).input({}, {3}).output({2, 3});
  ASSERT_TRUE(mseGrad.run<double>().isOk());
  expectNear(mseGrad.result(), numericalGradient(mse, 0, {3}), 1e-6);
}

//===----------------------------------------------------------------------===//
// Lookup, losses, dropout, optimizers
//===----------------------------------------------------------------------===//

TEST(LookupKernels, EmbeddingGathersRows) {
  LaunchCase c("embedding");
  c.input({3, 2}, {1, 2, 3, 4, 5, 6})
      .typedInput(DType::I64, {2, 2}, {2, 0, 1, 2})
      .output({2, 2, 2});
  ASSERT_TRUE(c.run<float>().isOk());
  expectNear(c.result(), {5, 6, 1, 2, 3, 4, 5, 6}, 0);
}

TEST(LookupKernels, EmbeddingIndexOutOfRangeIsAnError) {
  for (double bad : {3.0, -1.0}) {
    LaunchCase c("embedding");
    c.input({3, 2})
        .typedInput(DType::I32, {2, 2}, {0, 1, bad, 2})
        .output({2, 2, 2});
    Status status = c.run<float>();
    EXPECT_EQ(status.code(), StatusCode::ExecutionError);
    EXPECT_CONTAINS(status.message(), "embedding: index ");
    EXPECT_CONTAINS(status.message(),
                    " at position [1, 0] is out of range [0, 3)");
  }
  LaunchCase grad("embedding_grad");
  grad.typedInput(DType::I64, {2}, {0, 7}).input({2, 2}).output({3, 2});
  Status status = grad.run<double>();
  EXPECT_EQ(status.code(), StatusCode::ExecutionError);
  EXPECT_CONTAINS(status.message(), "embedding_grad: index 7 at position [1]");
}

TEST(LookupKernels, EmbeddingGradAddsRepeatedIndices) {
  LaunchCase c("embedding_grad");
  c.typedInput(DType::I32, {4}, {1, 0, 1, 1})
      .input({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})
      .output({3, 2});
  ASSERT_TRUE(c.run<float>().isOk());
  expectNear(c.result(), {3, 4, 13, 16, 0, 0}, 0);
}

TEST(LossKernels, SoftmaxCrossEntropyAgainstHandComputation) {
  std::vector<double> logits = {1, 2, 3, 0, 0, 0};
  LaunchCase c("softmax_cross_entropy");
  c.input({2, 3}, logits).typedInput(DType::I64, {2}, {2, 1}).output({});
  ASSERT_TRUE(c.run<double>().isOk());
  // Row 0: log(e + e^2 + e^3) - 3; row 1: log 3 - 0; mean of the two.
  double row0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0;
  double row1 = std::log(3.0);
  expectNear(c.result(), {(row0 + row1) / 2}, 1e-12);
  ASSERT_TRUE(c.run<float>().isOk());
  expectNear(c.result(), {(row0 + row1) / 2}, 1e-6);

  // A certain prediction gives exactly 0 and never overflows.
  LaunchCase exact("softmax_cross_entropy");
  exact.input({1, 3}, {1e30, -kInf, -kInf}).typedInput(DType::I32, {1}, {0});
  exact.output({});
  ASSERT_TRUE(exact.run<float>().isOk());
  EXPECT_EQ(exact.result()[0], 0.0);

  LaunchCase bad("softmax_cross_entropy");
  bad.input({2, 3}, logits).typedInput(DType::I32, {2}, {0, 3}).output({});
  Status status = bad.run<float>();
  EXPECT_EQ(status.code(), StatusCode::ExecutionError);
  EXPECT_CONTAINS(status.message(),
                  "softmax_cross_entropy: label 3 at position [1] is "
                  "out of range [0, 3)");
}

TEST(LossKernels, IgnoredLabelsAreLeftOut) {
  // PyTorch's ignore_index: rows labelled -100 add nothing, the mean is over
  // the others, and their gradient is 0.
  std::vector<double> logits = randomValues(12, 21, -3, 3);
  std::vector<double> labels = {2, -100, 1, -100};
  auto rowLoss = [&](int r, int label) {
    double sum = 0;
    for (int c = 0; c < 3; ++c)
      sum += std::exp(logits[r * 3 + c]);
    return std::log(sum) - logits[r * 3 + label];
  };
  LaunchCase loss("softmax_cross_entropy");
  loss.input({4, 3}, logits).typedInput(DType::I64, {4}, labels).output({});
  loss.param(intParam("ignore_index", -100));
  ASSERT_TRUE(loss.run<double>().isOk());
  expectNear(loss.result(), {(rowLoss(0, 2) + rowLoss(2, 1)) / 2}, 1e-12);
  ASSERT_TRUE(loss.run<float>().isOk());
  expectNear(loss.result(), {(rowLoss(0, 2) + rowLoss(2, 1)) / 2}, 1e-6);

  LaunchCase grad("softmax_cross_entropy_grad");
  grad.input({4, 3}, logits).typedInput(DType::I64, {4}, labels);
  grad.input({}, {0.5}).output({4, 3}).param(intParam("ignore_index", -100));
  ASSERT_TRUE(grad.run<double>().isOk());
  std::vector<double> expected = numericalGradient(loss, 0, {0.5});
  expectNear(grad.result(), expected, 1e-6);
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(grad.result()[3 + c], 0.0);
    EXPECT_EQ(grad.result()[9 + c], 0.0);
  }
  ASSERT_TRUE(grad.run<float>().isOk());
  expectNear(grad.result(), expected, 1e-5);

  // Every row ignored: NaN, as PyTorch (0 / 0), and no gradient.
  LaunchCase none("softmax_cross_entropy");
  none.input({2, 3}).typedInput(DType::I32, {2}, {-1, -1}).output({});
  none.param(intParam("ignore_index", -1));
  ASSERT_TRUE(none.run<float>().isOk());
  EXPECT_TRUE(std::isnan(none.result()[0]));

  // Other labels out of range are still errors; so is -100 when not ignored.
  for (double ignore : {-100.0, 7.0}) {
    LaunchCase bad("softmax_cross_entropy");
    bad.input({2, 3}).typedInput(DType::I64, {2}, {-100, -5}).output({});
    bad.param(intParam("ignore_index", int64_t(ignore)));
    Status status = bad.run<float>();
    EXPECT_EQ(status.code(), StatusCode::ExecutionError);
    EXPECT_CONTAINS(status.message(), ignore == 7.0 ? "label -100" : "label -5");
  }
}

TEST(LossKernels, FusedCrossEntropyGivesTheTwoKernelsBits) {
  // softmax_cross_entropy_fused (zt-fuse-classifier) against the loss and
  // gradient kernels: the same loss and gradient bits for f32 and bf16
  // logits (and the f64 reference), ignored rows and smoothed labels, the
  // gradient beside the logits or over them, one lane per row and the GPU's
  // lanes replayed (32 per row of 70: labels owned by lanes other than 0).
  struct Variant {
    bool ignore;
    double smoothing;
  };
  const int64_t rows = 5, classes = 70;
  std::vector<double> logits = randomValues(rows * classes, 31, -4, 4);
  for (DType dtype : {DType::F32, DType::BF16})
    for (Variant v : {Variant{false, 0}, Variant{true, 0}, Variant{false, 0.1},
                      Variant{true, 0.2}})
      for (bool inPlace : {false, true})
        for (bool groups : {false, true})
          for (bool f64 : {false, true}) {
            if (f64 && dtype == DType::BF16)
              continue;
            std::vector<double> labels = {69, v.ignore ? -100.0 : 3, 0, 33, 64};
            auto params = [&](LaunchCase &c) {
              if (v.ignore)
                c.param(intParam("ignore_index", -100));
              if (v.smoothing != 0)
                c.param(floatParam("label_smoothing", v.smoothing));
              c.gpuGroups = groups;
            };
            LaunchCase loss("softmax_cross_entropy");
            loss.typedInput(dtype, {rows, classes}, logits)
                .typedInput(DType::I64, {rows}, labels)
                .output({});
            LaunchCase grad("softmax_cross_entropy_grad");
            grad.typedInput(dtype, {rows, classes}, logits)
                .typedInput(DType::I64, {rows}, labels)
                .input({}, {0.75})
                .typedOutput(dtype, {rows, classes});
            LaunchCase fused("softmax_cross_entropy_fused");
            fused.typedInput(dtype, {rows, classes}, logits)
                .typedInput(DType::I64, {rows}, labels)
                .input({}, {0.75})
                .output({});
            if (inPlace)
              fused.outputInPlace(0);
            else
              fused.typedOutput(dtype, {rows, classes});
            for (LaunchCase *c : {&loss, &grad, &fused})
              params(*c);
            std::string what = std::string(dtypeName(dtype)) +
                               (v.ignore ? " ignore" : "") +
                               (v.smoothing != 0 ? " smoothing" : "") +
                               (inPlace ? " in place" : "") +
                               (groups ? " gpu groups" : "") +
                               (f64 ? " f64" : "");
            for (LaunchCase *c : {&loss, &grad, &fused})
              ASSERT_TRUE((f64 ? c->run<double>() : c->run<float>()).isOk())
                  << what;
            EXPECT_EQ(fused.result(0), loss.result(0)) << what;
            EXPECT_EQ(fused.result(1), grad.result(0)) << what;
          }

  // A label out of range: the loss kernel's error, under the fused name.
  LaunchCase bad("softmax_cross_entropy_fused");
  bad.input({2, 3}).typedInput(DType::I32, {2}, {0, 3}).input({}, {1});
  bad.output({}).outputInPlace(0);
  Status status = bad.run<float>();
  EXPECT_EQ(status.code(), StatusCode::ExecutionError);
  EXPECT_CONTAINS(status.message(),
                  "softmax_cross_entropy_fused: label 3 at position [1] is "
                  "out of range [0, 3)");
}

TEST(LossKernels, LabelSmoothingMixesInTheUniformTarget) {
  // PyTorch's label_smoothing e: the target is (1 - e) onehot + e / C, with
  // an ignored row beside; the gradient against finite differences.
  std::vector<double> logits = randomValues(12, 22, -3, 3);
  std::vector<double> labels = {1, -100, 0, 2};
  const double e = 0.2;
  auto rowLoss = [&](int r, int label) {
    double sum = 0, total = 0;
    for (int c = 0; c < 3; ++c) {
      sum += std::exp(logits[r * 3 + c]);
      total += logits[r * 3 + c];
    }
    return std::log(sum) - (1 - e) * logits[r * 3 + label] - e * total / 3;
  };
  LaunchCase loss("softmax_cross_entropy");
  loss.input({4, 3}, logits).typedInput(DType::I64, {4}, labels).output({});
  loss.param(intParam("ignore_index", -100)).param(floatParam("label_smoothing", e));
  ASSERT_TRUE(loss.run<double>().isOk());
  double expected = (rowLoss(0, 1) + rowLoss(2, 0) + rowLoss(3, 2)) / 3;
  expectNear(loss.result(), {expected}, 1e-12);

  LaunchCase grad("softmax_cross_entropy_grad");
  grad.input({4, 3}, logits).typedInput(DType::I64, {4}, labels);
  grad.input({}, {1.5}).output({4, 3});
  grad.param(intParam("ignore_index", -100)).param(floatParam("label_smoothing", e));
  ASSERT_TRUE(grad.run<double>().isOk());
  expectNear(grad.result(), numericalGradient(loss, 0, {1.5}), 1e-6);

  LaunchCase bad("softmax_cross_entropy");
  bad.input({4, 3}, logits).typedInput(DType::I64, {4}, labels).output({});
  bad.param(floatParam("label_smoothing", 1.5));
  expectRejected(bad, "label_smoothing must be in [0, 1], got 1.5");
}

TEST(RandomKernels, DropoutKeepsAboutOneMinusRate) {
  const int64_t n = 20000;
  const double rate = 0.3;
  std::vector<double> x(n, 2.0);
  auto run = [&](int64_t step, uint64_t seed) {
    LaunchCase c("dropout");
    c.input({n}, x).typedInput(DType::I64, {}, {double(step)}).output({n});
    c.param(floatParam("rate", rate)).param(intParam("seed", seed));
    EXPECT_TRUE(c.run<float>().isOk());
    return c.result();
  };
  std::vector<double> first = run(5, 7);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (first[i] != 0) {
      ++kept;
      EXPECT_NEAR(first[i], 2.0 / (1 - rate), 1e-6);
    }
    EXPECT_EQ(first[i] != 0, dropoutKeep(7, i, 5, rate)) << "at " << i;
  }
  // 20000 draws: the kept fraction is within 4 standard deviations (~0.013).
  EXPECT_NEAR(double(kept) / n, 1 - rate, 0.013);
  EXPECT_EQ(run(5, 7), first); // the same (seed, step): the same mask
  EXPECT_NE(run(6, 7), first); // another step: another mask
  EXPECT_NE(run(5, 8), first); // another seed: another mask

  LaunchCase none("dropout");
  none.input({4}, {1, 2, 3, 4})
      .typedInput(DType::I64, {}, {0})
      .outputInPlace(0);
  none.param(floatParam("rate", 0.0)).param(intParam("seed", 1));
  ASSERT_TRUE(none.run<double>().isOk());
  expectNear(none.result(), {1, 2, 3, 4}, 0);
}

/// One AdamW step on two elements: the launch (clipped when `maxNorm` > 0,
/// from `sumSquares`) and its written-out result.
struct AdamwStep {
  std::vector<double> p = {1.0, -2.0}, g = {0.5, 0.25}, m = {0.1, 0.0},
                      v = {0.01, 0.0};
  double lr = 0.01, b1 = 0.8, b2 = 0.9, eps = 1e-6, wd = 0.1;

  LaunchCase launch(int64_t step, double maxNorm = 0,
                    double sumSquares = 0) const {
    LaunchCase c("adamw");
    c.input({2}, p).input({2}, g).input({2}, m).input({2}, v);
    c.typedInput(DType::I64, {}, {double(step)});
    if (maxNorm > 0)
      c.input({}, {sumSquares});
    c.outputInPlace(0).outputInPlace(2).outputInPlace(3);
    c.param(floatParam("lr", lr))
        .param(floatParam("beta1", b1))
        .param(floatParam("beta2", b2))
        .param(floatParam("eps", eps))
        .param(floatParam("weight_decay", wd))
        .param(floatParam("max_grad_norm", maxNorm));
    return c;
  }

  /// The new parameter, exp_avg and exp_avg_sq at t = step + 1, the
  /// gradient multiplied by `clip`.
  std::array<std::vector<double>, 3> expected(int64_t step,
                                              double clip = 1) const {
    double t = double(step + 1);
    std::array<std::vector<double>, 3> out;
    for (int i = 0; i < 2; ++i) {
      double gi = g[i] * clip;
      double mi = b1 * m[i] + (1 - b1) * gi;
      double vi = b2 * v[i] + (1 - b2) * gi * gi;
      double mHat = mi / (1 - std::pow(b1, t)),
             vHat = vi / (1 - std::pow(b2, t));
      out[0].push_back(p[i] -
                       lr * (mHat / (std::sqrt(vHat) + eps) + wd * p[i]));
      out[1].push_back(mi);
      out[2].push_back(vi);
    }
    return out;
  }
};

TEST(OptimizerKernels, AdamwOneStepInPlace) {
  AdamwStep a;
  LaunchCase c = a.launch(/*step=*/2); // t = 3
  auto [newP, newM, newV] = a.expected(2);
  ASSERT_TRUE(c.run<double>().isOk());
  expectNear(c.result(0), newP, 1e-12);
  expectNear(c.result(1), newM, 1e-12);
  expectNear(c.result(2), newV, 1e-12);
  ASSERT_TRUE(c.run<float>().isOk());
  expectNear(c.result(0), newP, 1e-6);
}

TEST(OptimizerKernels, SumSquaresChainsInDouble) {
  // 1e8 + 1 + 1 + ...: summed in f32 the ones would vanish.
  std::vector<double> x(1001, 1.0);
  x[0] = 1e4;
  LaunchCase first("sum_squares");
  first.input({1001}, x).output({});
  ASSERT_TRUE(first.run<float>().isOk());
  expectNear(first.result(), {1e8 + 1000}, 0);
  LaunchCase next("sum_squares");
  next.input({2}, {3, -4}).input({}, {0.5}).output({});
  ASSERT_TRUE(next.run<double>().isOk());
  expectNear(next.result(), {25.5}, 0);
  // Several chunks, the last a part one, continuing a total: every element
  // once, element i counting i % 3 + 1 squared.
  int64_t n = 3 * kSumSquaresChunk + 5;
  std::vector<double> y(n);
  double expected = 0;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = double(i % 3 + 1);
    expected += y[i] * y[i];
  }
  ASSERT_EQ(sumSquaresChunks(n), 4);
  LaunchCase chunks("sum_squares");
  chunks.input({n}, y).input({}, {0.5}).output({});
  ASSERT_TRUE(chunks.run<float>().isOk());
  expectNear(chunks.result(), {expected + 0.5}, 0);
}

TEST(OptimizerKernels, ClippingScalesTheGradientByTheGlobalNorm) {
  // torch.nn.utils.clip_grad_norm_: g * min(1, max_norm / (norm + 1e-6)).
  AdamwStep a;
  for (double sumSquares : {9.0, 0.25}) {
    double maxNorm = 1.5;
    double clip = std::min(1.0, maxNorm / (std::sqrt(sumSquares) + 1e-6));
    LaunchCase c = a.launch(/*step=*/0, maxNorm, sumSquares);
    auto [newP, newM, newV] = a.expected(0, clip);
    ASSERT_TRUE(c.run<double>().isOk());
    expectNear(c.result(0), newP, 1e-12);
    expectNear(c.result(1), newM, 1e-12);
    expectNear(c.result(2), newV, 1e-12);

    LaunchCase s("sgd");
    s.input({2}, a.p).input({2}, a.g).input({}, {sumSquares}).outputInPlace(0);
    s.param(floatParam("lr", a.lr)).param(floatParam("max_grad_norm", maxNorm));
    ASSERT_TRUE(s.stateOptimizerParams().run<double>().isOk());
    expectNear(s.result(),
               {a.p[0] - a.lr * a.g[0] * clip, a.p[1] - a.lr * a.g[1] * clip},
               1e-15);
  }
}

/// nanoGPT's get_lr (train.py), written out: the learning rate at step k.
double nanoGptLr(int64_t k, double lr, int64_t warmup, int64_t decayEnd,
                 double minLr, bool cosine) {
  if (k < warmup)
    return lr * double(k + 1) / double(warmup + 1);
  if (k > decayEnd)
    return minLr;
  double ratio = double(k - warmup) / double(decayEnd - warmup);
  double c = cosine ? 0.5 * (1.0 + std::cos(M_PI * ratio)) : 1.0 - ratio;
  return minLr + c * (lr - minLr);
}

TEST(OptimizerKernels, LrScheduleIsNanoGptsGetLr) {
  // 4 warmup steps, then cosine or linear decay to 1e-4 at step 12.
  double lr = 6e-4, minLr = 6e-5;
  for (const char *kind : {"cosine", "linear"}) {
    for (int64_t k : {0, 1, 3, 4, 5, 8, 11, 12, 13, 1000}) {
      LaunchCase c("lr_schedule");
      c.typedInput(DType::I64, {}, {double(k)}).output({});
      c.param(intParam("warmup_steps", 4))
          .param(intParam("decay_steps", 12))
          .param(floatParam("min_factor", minLr / lr))
          .param(unitParam(kind));
      double expected =
          nanoGptLr(k, lr, 4, 12, minLr, std::string(kind) == "cosine") / lr;
      ASSERT_TRUE(c.run<double>().isOk());
      expectNear(c.result(), {expected}, 1e-15);
      ASSERT_TRUE(c.run<float>().isOk());
      expectNear(c.result(), {expected}, 1e-7);
    }
  }
  // Warmup alone: then lr itself.
  for (int64_t k : {0, 2, 3, 50}) {
    LaunchCase c("lr_schedule");
    c.typedInput(DType::I64, {}, {double(k)}).output({});
    c.param(intParam("warmup_steps", 3))
        .param(intParam("decay_steps", 0))
        .param(floatParam("min_factor", 0));
    ASSERT_TRUE(c.run<double>().isOk());
    expectNear(c.result(), {k < 3 ? double(k + 1) / 4 : 1.0}, 0);
  }
}

TEST(OptimizerKernels, UpdatesTakeTheScheduledLr) {
  // AdamW: lr * factor everywhere lr was, the weight decay included.
  AdamwStep a;
  double factor = 0.375;
  LaunchCase c = a.launch(/*step=*/1);
  c.input({}, {factor});
  AdamwStep scaled = a;
  scaled.lr = a.lr * factor;
  auto [newP, newM, newV] = scaled.expected(1);
  ASSERT_TRUE(c.run<double>().isOk());
  expectNear(c.result(0), newP, 1e-15);
  expectNear(c.result(1), newM, 1e-15);
  // With clipping too: the sum of squares first, then the factor.
  LaunchCase both = a.launch(/*step=*/1, /*maxNorm=*/1.5, /*sumSquares=*/9);
  both.input({}, {factor});
  double clip = 1.5 / (3 + 1e-6);
  auto [bothP, bothM, bothV] = scaled.expected(1, clip);
  ASSERT_TRUE(both.run<double>().isOk());
  expectNear(both.result(0), bothP, 1e-15);
  // SGD with momentum.
  LaunchCase s("sgd");
  s.input({2}, a.p).input({2}, a.g).input({2}, {0.5, 1.0}).input({}, {factor});
  s.outputInPlace(0).outputInPlace(2);
  s.param(floatParam("lr", 0.1)).param(floatParam("momentum", 0.9));
  ASSERT_TRUE(s.stateOptimizerParams().run<double>().isOk());
  double b0 = 0.9 * 0.5 + a.g[0], b1 = 0.9 * 1.0 + a.g[1];
  expectNear(s.result(0),
             {a.p[0] - 0.1 * factor * b0, a.p[1] - 0.1 * factor * b1}, 1e-15);
}

TEST(OptimizerKernels, SgdPlainMomentumAndNesterov) {
  std::vector<double> p = {1.0, 2.0}, g = {0.5, -1.0}, buf = {0.2, 0.4};
  double lr = 0.1, mu = 0.9, wd = 0.01;
  LaunchCase plain("sgd");
  plain.input({2}, p).input({2}, g).outputInPlace(0);
  plain.param(floatParam("lr", lr)).param(floatParam("weight_decay", wd));
  ASSERT_TRUE(plain.stateOptimizerParams().run<double>().isOk());
  expectNear(plain.result(),
             {p[0] - lr * (g[0] + wd * p[0]), p[1] - lr * (g[1] + wd * p[1])},
             1e-12);

  for (bool nesterov : {false, true}) {
    LaunchCase c("sgd");
    c.input({2}, p).input({2}, g).input({2}, buf);
    c.outputInPlace(0).outputInPlace(2);
    c.param(floatParam("lr", lr))
        .param(floatParam("momentum", mu))
        .param(floatParam("weight_decay", wd));
    if (nesterov)
      c.param(unitParam("nesterov"));
    c.stateOptimizerParams();
    std::vector<double> newP, newBuf;
    for (int i = 0; i < 2; ++i) {
      double gi = g[i] + wd * p[i];
      double b = mu * buf[i] + gi;
      newBuf.push_back(b);
      newP.push_back(nesterov ? p[i] - lr * (gi + mu * b) : p[i] - lr * b);
    }
    ASSERT_TRUE(c.run<double>().isOk());
    expectNear(c.result(0), newP, 1e-12);
    expectNear(c.result(1), newBuf, 1e-12);
  }
}

// Mixed precision's updates read the bf16 gradient itself (zt-optimizer
// drops its conversion to f32): widening is exact, so each update gives
// the bits it gives the same values in f32, on one lane and on the
// emulator's GPU path (its element kernels in another order), with a
// schedule's and clipping's inputs too; so does clipping's sum of squares.
// A bf16 gradient is for an f32 parameter of its shape only.
TEST(OptimizerKernels, Bf16GradientsGiveTheWidenedGradientsBits) {
  const int64_t n = 1000;
  std::vector<double> p = randomValues(n, 41, -1, 1),
                      g = randomValues(n, 42, -3, 3),
                      m = randomValues(n, 43, -0.5, 0.5),
                      v = randomValues(n, 44, 0, 0.5);
  for (double &x : g) // values bf16 holds exactly
    x = bf16ToFloat(floatToBf16(static_cast<float>(x)));
  auto adamw = [&](DType grad, bool clipped) {
    LaunchCase c("adamw");
    c.input({n}, p).typedInput(grad, {n}, g).input({n}, m).input({n}, v);
    c.typedInput(DType::I64, {}, {3});
    if (clipped)
      c.input({}, {1e4}).input({}, {0.5});
    c.outputInPlace(0).outputInPlace(2).outputInPlace(3);
    c.param(floatParam("lr", 1e-2)).param(floatParam("weight_decay", 0.1));
    if (clipped)
      c.param(floatParam("max_grad_norm", 1.0));
    return c;
  };
  auto sgd = [&](DType grad, bool clipped) {
    LaunchCase c("sgd");
    c.input({n}, p).typedInput(grad, {n}, g).input({n}, m);
    if (clipped)
      c.input({}, {1e4}).input({}, {0.5});
    c.outputInPlace(0).outputInPlace(2);
    c.param(floatParam("lr", 0.1))
        .param(floatParam("momentum", 0.9))
        .param(floatParam("weight_decay", 0.01))
        .param(unitParam("nesterov"));
    if (clipped)
      c.param(floatParam("max_grad_norm", 1.0));
    return c;
  };
  for (auto make : {std::function<LaunchCase(DType, bool)>(adamw),
                    std::function<LaunchCase(DType, bool)>(sgd)})
    for (bool clipped : {false, true})
      for (bool groups : {false, true}) {
        LaunchCase narrow = make(DType::BF16, clipped);
        LaunchCase wide = make(DType::F32, clipped);
        SCOPED_TRACE(narrow.kernel + (clipped ? " clipped" : "") +
                     (groups ? " gpu groups" : ""));
        narrow.stateOptimizerParams();
        wide.stateOptimizerParams();
        narrow.gpuGroups = wide.gpuGroups = groups;
        ASSERT_TRUE(narrow.run<float>().isOk());
        ASSERT_TRUE(wide.run<float>().isOk());
        ASSERT_EQ(narrow.results.size(), wide.results.size());
        for (size_t o = 0; o < narrow.results.size(); ++o)
          EXPECT_EQ(narrow.results[o], wide.results[o]) << "output " << o;
        EXPECT_NE(narrow.results[0], p); // it did update
      }
  // Clipping's sum of squares of a bf16 gradient, one chunk and several.
  for (int64_t size : {n, 3 * kSumSquaresChunk + 5}) {
    std::vector<double> x = randomValues(size, 45, -3, 3);
    for (double &e : x)
      e = bf16ToFloat(floatToBf16(static_cast<float>(e)));
    LaunchCase narrow("sum_squares"), wide("sum_squares");
    narrow.typedInput(DType::BF16, {size}, x).input({}, {0.5}).output({});
    wide.input({size}, x).input({}, {0.5}).output({});
    for (bool groups : {false, true}) {
      narrow.gpuGroups = wide.gpuGroups = groups;
      ASSERT_TRUE(narrow.run<float>().isOk());
      ASSERT_TRUE(wide.run<float>().isOk());
      EXPECT_EQ(narrow.result(), wide.result()) << size;
    }
  }
  LaunchCase shape = adamw(DType::BF16, false);
  shape.entry.tensors[1].type.shape = {n / 2, 2};
  expectRejected(shape.stateOptimizerParams(),
                 "grad type 500x2xbf16 must match param type 1000xf32");
}

//===----------------------------------------------------------------------===//
// Precision: the float kernels track the double ones
//===----------------------------------------------------------------------===//

TEST(Precision, FloatAgreesWithDouble) {
  std::vector<LaunchCase> cases;
  cases.emplace_back("gelu");
  cases.back().input({64}).output({64});
  cases.emplace_back("gelu_erf");
  cases.back().input({64}, randomValues(64, 31, -8, 8)).output({64});
  cases.emplace_back("gelu_erf_grad");
  cases.back()
      .input({64}, randomValues(64, 32, -8, 8))
      .input({64}, randomValues(64, 33))
      .output({64});
  cases.emplace_back("sigmoid");
  cases.back().input({64}, randomValues(64, 30, -40, 40)).output({64});
  cases.emplace_back("softmax");
  cases.back().input({4, 16}).output({4, 16}).param(intParam("axis", 1));
  cases.emplace_back("layer_norm");
  cases.back().input({4, 16}).input({16}).input({16}).output({4, 16}).param(
      floatParam("epsilon", 1e-5));
  cases.emplace_back("matmul");
  cases.back().input({2, 8, 16}).input({16, 4}).output({2, 8, 4});
  cases.emplace_back("softmax_cross_entropy_grad");
  cases.back()
      .input({4, 5})
      .typedInput(DType::I32, {4}, {0, 4, 2, 1})
      .input({}, {1})
      .output({4, 5});
  cases.emplace_back("mean");
  cases.back().input({8, 8}).output({8}).param(intsParam("dims", {1}));
  for (LaunchCase &c : cases) {
    SCOPED_TRACE(c.kernel);
    ASSERT_TRUE(c.run<double>().isOk());
    std::vector<double> reference = c.result();
    ASSERT_TRUE(c.run<float>().isOk());
    expectNear(c.result(), reference, 1e-6);
  }
}

TEST(Precision, SigmoidNeverOverflows) {
  LaunchCase c("sigmoid");
  c.input({3}, {-1000, 0, 1000}).output({3});
  ASSERT_TRUE(c.run<float>().isOk());
  expectNear(c.result(), {0, 0.5, 1}, 0);
  LaunchCase relu("relu");
  relu.input({3}, {std::nan(""), -1, 2}).output({3});
  ASSERT_TRUE(relu.run<float>().isOk());
  EXPECT_TRUE(std::isnan(relu.result()[0]));
  expectNear({relu.result()[1], relu.result()[2]}, {0, 2}, 0);
}

//===----------------------------------------------------------------------===//
// Every kernel, and corrupted launches
//===----------------------------------------------------------------------===//

TEST(EveryKernel, RunsAndWritesEveryOutputElement) {
  std::vector<LaunchCase> cases = everyKernel();
  std::vector<bool> covered(static_cast<size_t>(KernelId::NumKernels), false);
  for (LaunchCase &c : cases) {
    SCOPED_TRACE(c.kernel);
    std::optional<KernelId> id = findKernel(c.kernel);
    ASSERT_TRUE(id.has_value());
    covered[static_cast<size_t>(*id)] = true;
    for (int precision = 0; precision < 2; ++precision) {
      Status status = precision ? c.run<double>() : c.run<float>();
      ASSERT_TRUE(status.isOk()) << status.toString();
      for (const std::vector<double> &output : c.results)
        for (double v : output)
          EXPECT_NE(v, 777.0); // the sentinel: an element left unwritten
    }
  }
  for (size_t i = 0; i < covered.size(); ++i)
    EXPECT_TRUE(covered[i]) << kernelName(static_cast<KernelId>(i));
}

/// Corrupts one launch the way a flipped byte in a plan file could: a
/// dimension, a rank, a dtype, a parameter, an operand.
void corrupt(LaunchCase &c, std::mt19937_64 &rng) {
  auto pick = [&](size_t n) {
    return static_cast<size_t>(rng() % std::max<size_t>(n, 1));
  };
  const int64_t extremes[] = {-1,
                              0,
                              1,
                              2,
                              3,
                              5,
                              int64_t(1) << 40,
                              std::numeric_limits<int64_t>::max(),
                              std::numeric_limits<int64_t>::min()};
  const double floats[] = {-1, 0, 0.5, 1, 2, 1e300, kInf, std::nan("")};
  Launch &launch = c.launch();
  std::vector<Tensor> &tensors = c.entry.tensors;
  switch (pick(7)) {
  case 0: { // a dimension
    TensorType &type = tensors[pick(tensors.size())].type;
    if (!type.shape.empty())
      type.shape[pick(type.shape.size())] = static_cast<int64_t>(pick(6));
    break;
  }
  case 1: { // a rank
    TensorType &type = tensors[pick(tensors.size())].type;
    if (!type.shape.empty() && pick(2))
      type.shape.pop_back();
    else
      type.shape.push_back(1 + static_cast<int64_t>(pick(3)));
    break;
  }
  case 2: // a dtype
    tensors[pick(tensors.size())].type.dtype = static_cast<DType>(pick(3));
    break;
  case 3: { // a parameter's value
    if (c.params.empty())
      break;
    Param &p = c.params[pick(c.params.size())];
    if (p.kind == ParamKind::Int)
      p.intValue = extremes[pick(std::size(extremes))];
    else if (p.kind == ParamKind::Float)
      p.floatValue = floats[pick(std::size(floats))];
    else if (p.kind == ParamKind::Ints && !p.ints.empty() && pick(4))
      p.ints[pick(p.ints.size())] = extremes[pick(std::size(extremes))];
    else if (p.kind == ParamKind::Ints)
      p.ints.push_back(extremes[pick(4)]);
    else
      p.kind = ParamKind::Int;
    break;
  }
  case 4: // a parameter's kind, or its absence
    if (c.params.empty())
      break;
    if (pick(2))
      c.params.erase(c.params.begin() + pick(c.params.size()));
    else
      c.params[pick(c.params.size())].kind =
          static_cast<ParamKind>(pick(4));
    break;
  case 5: { // an operand names another tensor
    std::vector<uint32_t> &list =
        pick(2) || launch.outputs.empty() ? launch.inputs : launch.outputs;
    if (!list.empty())
      list[pick(list.size())] = static_cast<uint32_t>(pick(tensors.size()));
    break;
  }
  case 6: // an operand more or less
    if (pick(2) && !launch.inputs.empty())
      launch.inputs.pop_back();
    else if (!tensors.empty())
      launch.inputs.push_back(static_cast<uint32_t>(pick(tensors.size())));
    break;
  }
}

// What the loader decodes, the writer states again: every kernel's
// parameters survive a round trip through their names.
TEST(EveryKernel, ParamsRoundTripThroughNames) {
  for (const LaunchCase &c : everyKernel()) {
    Entry decoded;
    ASSERT_TRUE(c.decoded(decoded).isOk()) << c.kernel;
    Launch again;
    ASSERT_TRUE(decodeLaunch(c.kernel, encodeParams(decoded.launches[0]),
                             again)
                    .isOk())
        << c.kernel;
    EXPECT_EQ(again.kernel, decoded.launches[0].kernel);
    EXPECT_TRUE(again.params == decoded.launches[0].params) << c.kernel;
  }
}

// The safety net for corrupt plans: whatever checkLaunch accepts, the kernel
// runs within its operands' bytes (the canaries around every buffer), and
// every kernel family sees accepted corruptions, so the test is not vacuous.
TEST(EveryKernel, CorruptLaunchesAreRejectedOrRunInBounds) {
  std::mt19937_64 rng(20240531);
  std::vector<LaunchCase> seeds = everyKernel();
  int accepted = 0, rejected = 0;
  for (int round = 0; round < 200; ++round) {
    for (const LaunchCase &seed : seeds) {
      LaunchCase c = seed;
      int mutations = 1 + static_cast<int>(rng() % 3);
      for (int m = 0; m < mutations; ++m)
        corrupt(c, rng);
      // Tiny tensors only: a corruption that keeps the rules but asks for a
      // huge buffer would test the allocator, not the kernel.
      bool small = true;
      for (const Tensor &t : c.entry.tensors)
        for (int64_t d : t.type.shape)
          small = small && d >= 0 && d <= 64;
      if (!small)
        continue;
      if (!c.check().isOk()) {
        ++rejected;
        continue;
      }
      ++accepted;
      SCOPED_TRACE(c.kernel);
      // An error is allowed only for bad data (an index now out of range),
      // or for where operands lie (a bucket's parts end to end), which the
      // loader checks with the plan's offsets rather than checkLaunch.
      for (Status status : {c.run<float>(), c.run<double>()}) {
        if (!status.isOk() && status.code() != StatusCode::ExecutionError)
          EXPECT_NE(status.message().find("in memory"), std::string::npos)
              << status.toString();
      }
    }
  }
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(rejected, 1000);
  RecordProperty("accepted", accepted);
  RecordProperty("rejected", rejected);
}

// The shape rules the zt verifiers, the capture API and the loader share
// (ShapeRules.h): the shapes they give, and a broken rule named.
TEST(ShapeRules, GiveResultShapesAndNameTheBrokenRule) {
  Shape out, lse;
  ASSERT_TRUE(matmulShape({4, 8, 16}, {16, 32}, false, false, out).isOk());
  EXPECT_EQ(out, (Shape{4, 8, 32}));
  ASSERT_TRUE(matmulShape({4, 16, 8}, {4, 32, 16}, true, true, out).isOk());
  EXPECT_EQ(out, (Shape{4, 8, 32}));
  Status broken = matmulShape({8, 16}, {8, 32}, false, false, out);
  EXPECT_NE(broken.message().find("lhs has K = 16, rhs has K = 8"),
            std::string::npos)
      << broken.message();
  ASSERT_TRUE(reductionShape({2, 3, 4}, {0, 2}, false, out).isOk());
  EXPECT_EQ(out, (Shape{3}));
  ASSERT_TRUE(reductionShape({2, 3, 4}, {1}, true, out).isOk());
  EXPECT_EQ(out, (Shape{2, 1, 4}));
  EXPECT_FALSE(reductionShape({2, 3}, {1, 0}, false, out).isOk());
  ASSERT_TRUE(transposeShape({2, 3, 4}, {2, 0, 1}, out).isOk());
  EXPECT_EQ(out, (Shape{4, 2, 3}));
  EXPECT_FALSE(transposeShape({2, 3}, {0, 0}, out).isOk());
  ASSERT_TRUE(sliceShape({10, 8}, {1, 0}, {10, 8}, {3, 2}, out).isOk());
  EXPECT_EQ(out, (Shape{3, 4}));
  EXPECT_FALSE(sliceShape({10}, {2}, {11}, {1}, out).isOk());
  ASSERT_TRUE(concatShape({{2, 3}, {5, 3}}, 0, out).isOk());
  EXPECT_EQ(out, (Shape{7, 3}));
  EXPECT_FALSE(concatShape({{2, 3}, {2, 4}}, 0, out).isOk());
  ASSERT_TRUE(
      attentionShapes({2, 8, 4}, {2, 6, 4}, {2, 6, 3}, 0.5, out, lse).isOk());
  EXPECT_EQ(out, (Shape{2, 8, 3}));
  EXPECT_EQ(lse, (Shape{2, 8}));
  EXPECT_FALSE(
      attentionShapes({2, 8, 4}, {2, 6, 4}, {2, 5, 3}, 0.5, out, lse).isOk());
  // Grouped-query: key and value heads divide the query's.
  ASSERT_TRUE(attentionShapes({2, 6, 8, 4}, {2, 2, 5, 4}, {2, 2, 5, 3}, 0.5,
                              out, lse)
                  .isOk());
  EXPECT_EQ(out, (Shape{2, 6, 8, 3}));
  EXPECT_EQ(lse, (Shape{2, 6, 8}));
  EXPECT_NE(attentionShapes({2, 6, 8, 4}, {2, 4, 5, 4}, {2, 4, 5, 3}, 0.5,
                            out, lse)
                .message()
                .find("batch dimensions differ"),
            std::string::npos);
  EXPECT_FALSE(attentionShapes({2, 6, 8, 4}, {1, 2, 5, 4}, {1, 2, 5, 3}, 0.5,
                               out, lse)
                   .isOk());
  EXPECT_NE(attentionShapes({2, 6, 8, 4}, {2, 2, 5, 4}, {2, 3, 5, 3}, 0.5,
                            out, lse)
                .message()
                .find("key and value must have one batch"),
            std::string::npos);
  EXPECT_TRUE(axisRule({2, 3}, -2).isOk());
  EXPECT_FALSE(axisRule({2, 3}, 2).isOk());
  EXPECT_TRUE(normRule({4, 8}, {"gamma", "beta"}, {{8}, {8}}, 1e-5).isOk());
  EXPECT_EQ(normRule({4, 8}, {"gamma", "beta"}, {{8}, {1, 8}}, 1e-5).message(),
            "beta must have shape [8] (the operand's last dimension), got "
            "[1, 8]");
  EXPECT_FALSE(normRule({4, 8}, {"gamma"}, {{8}}, 0.0).isOk());
  ASSERT_TRUE(embeddingShape({100, 16}, {4, 7}, out).isOk());
  EXPECT_EQ(out, (Shape{4, 7, 16}));
  EXPECT_FALSE(embeddingShape({100}, {4}, out).isOk());
  EXPECT_TRUE(logitsLabelsRule({4, 7, 10}, {4, 7}).isOk());
  EXPECT_FALSE(logitsLabelsRule({4, 10}, {10}).isOk());
}

} // namespace

namespace {

// GELU in its sigmoid form is the tanh form, and its derivative the
// tanh form's derivative (f64, where the two agree to rounding).
TEST(HostMath, GeluSigmoidFormIsTheTanhForm) {
  const double c = 0.79788456080286535587989211986876, a = 0.044715;
  for (double x = -12; x <= 12; x += 0.01) {
    double u = c * (x + a * x * x * x), t = std::tanh(u);
    EXPECT_NEAR(device::geluOf(x), 0.5 * x * (1 + t), 1e-14 * (1 + std::fabs(x)));
    double dt = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * a * x * x);
    EXPECT_NEAR(device::geluDerivative(x), dt, 1e-13 * (1 + x * x));
  }
}

// GELU's exact form against PyTorch's nn.GELU() (approximate='none'),
// values printed by torch 2.15 in f64: x Phi(x) at a few points, and the
// tanh form differs from it (so the two kernels are not one formula).
TEST(HostMath, GeluErfIsTorchsExactGelu) {
  const std::pair<double, double> torch[] = {
      {-3.0, -0.00404969409489031},
      {-1.0, -0.15865525393145702},
      {-0.5, -0.15426876936299344},
      {0.0, 0.0},
      {0.5, 0.34573123063700656},
      {1.0, 0.841344746068543},
      {2.5, 2.4844758366855597},
  };
  for (auto [x, want] : torch) {
    EXPECT_NEAR(device::geluErfOf(x), want, 1e-15) << "x = " << x;
    EXPECT_NEAR(device::geluErfOf(float(x)), want, 2e-7) << "x = " << x;
  }
  EXPECT_GT(std::fabs(device::geluOf(-3.0) - device::geluErfOf(-3.0)), 1e-4);
}

// The vectorizable f32 exp of the host's element loops: within 2 ulp of
// the correctly rounded e^x over every 1021st float of [-104, 89] (normal,
// subnormal and overflowing results), exact at the special values.
TEST(HostMath, ExpLoopMatchesExpf) {
  auto ordered = [](float f) {
    int32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b < 0 ? int64_t(INT32_MIN) - b : int64_t(b);
  };
  int64_t worst = 0, checked = 0;
  for (float x : {-104.0f, 89.0f}) // the ends are covered, not just passed
    EXPECT_EQ(device::expLoopF32(x), float(std::exp(double(x))));
  for (int64_t o = ordered(-104.0f); o <= ordered(89.0f); o += 1021) {
    int32_t b = o < 0 ? int32_t(int64_t(INT32_MIN) - o) : int32_t(o);
    float x;
    std::memcpy(&x, &b, sizeof x);
    float want = float(std::exp(double(x)));
    float got = device::expLoopF32(x);
    int64_t ulps = std::llabs(ordered(got) - ordered(want));
    worst = std::max(worst, ulps);
    ++checked;
    ASSERT_LE(ulps, 2) << "e^" << x << " = " << got << ", want " << want;
  }
  EXPECT_GT(checked, 1000000);
  RecordProperty("worst_ulps", static_cast<int>(worst));
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(device::expLoopF32(0.0f), 1.0f);
  EXPECT_EQ(device::expLoopF32(-inf), 0.0f);
  EXPECT_EQ(device::expLoopF32(-200.0f), 0.0f);
  EXPECT_EQ(device::expLoopF32(inf), inf);
  EXPECT_EQ(device::expLoopF32(100.0f), inf);
  EXPECT_TRUE(std::isnan(device::expLoopF32(std::nanf(""))));
}

//===----------------------------------------------------------------------===//
// The host's loops for each instruction set
//===----------------------------------------------------------------------===//

/// Values over the kernels' interesting ranges, with the special ones
/// (signed zeros, infinities, NaN, a subnormal, exp's clamps, huge) spread
/// through them.
std::vector<double> isaValues(int64_t n, uint64_t seed) {
  const double specials[] = {0.0,   -0.0, kInf, -kInf, std::nan(""),
                             1e-40, 88.5, -104, 1e30,  -1e30,
                             0.5,   -0.5, 3.0,  -3.0};
  std::vector<double> v = randomValues(n, seed, -12, 12);
  for (int64_t i = 0; i < n; i += 7)
    v[i] = specials[(i / 7 + seed) % std::size(specials)];
  return v;
}

/// Launches with operands large enough for the vector loops of every
/// width (several hundred elements, odd sizes so that remainders run too):
/// every element kernel (f32 and bf16 storage, contiguous and broadcast
/// reads) and the kernels whose host loops are their own.
std::vector<LaunchCase> isaCases() {
  std::vector<LaunchCase> cases;
  const std::vector<int64_t> shape = {7, 61};
  const int64_t n = elementCount(shape);
  auto add = [&](const char *kernel) -> LaunchCase & {
    cases.emplace_back(kernel);
    return cases.back();
  };
  for (int row = 0; row < kElementRowCount; ++row)
    for (DType dtype : {DType::F32, DType::BF16}) {
      if (!elementIsFloat(kElementRows[row].arity)) {
        elementRowCase(add(kElementRows[row].name), row, dtype, shape);
        continue;
      }
      add(kElementRows[row].name).typedInput(dtype, shape, isaValues(n, 1));
      if (kElementRows[row].arity != ElementArity::Unary)
        cases.back().typedInput(dtype, shape, isaValues(n, 2));
      cases.back().typedOutput(dtype, shape).rowParams();
    }
  add("mul")
      .input(shape, isaValues(n, 3))
      .stridedInput(shape, {0, 1}, isaValues(shape[1], 4))
      .output(shape);
  add("scale")
      .input(shape, isaValues(n, 5))
      .output(shape)
      .param(floatParam("factor", 0.75));
  for (DType dtype : {DType::F32, DType::BF16})
    add("dropout")
        .typedInput(dtype, {1001}, isaValues(1001, 6))
        .typedInput(DType::I64, {}, {3})
        .typedOutput(dtype, {1001})
        .param(floatParam("rate", 0.3))
        .param(intParam("seed", 9));
  add("adamw")
      .input({1001}, isaValues(1001, 7))
      .input({1001}, randomValues(1001, 8))
      .input({1001}, randomValues(1001, 9))
      .input({1001}, randomValues(1001, 10, 0, 1))
      .typedInput(DType::I64, {}, {4})
      .outputInPlace(0)
      .outputInPlace(2)
      .outputInPlace(3)
      .param(floatParam("lr", 1e-3))
      .stateOptimizerParams();
  add("sgd")
      .input({1001}, isaValues(1001, 11))
      .input({1001}, randomValues(1001, 12))
      .input({1001}, randomValues(1001, 13))
      .outputInPlace(0)
      .outputInPlace(2)
      .param(floatParam("lr", 0.1))
      .param(floatParam("momentum", 0.9))
      .stateOptimizerParams();
  add("concat").input({5, 61}).input({5, 3}).output({5, 64}).param(
      intParam("dimension", 1));
  add("layer_norm")
      .input(shape)
      .input({61})
      .input({61})
      .output(shape)
      .param(floatParam("epsilon", 1e-5));
  add("layer_norm_grad")
      .input(shape)
      .input({61})
      .input(shape)
      .output(shape)
      .output({61})
      .output({61})
      .param(floatParam("epsilon", 1e-5));
  for (const char *name : {"softmax", "log_softmax"})
    add(name)
        .input(shape, randomValues(n, 14, -30, 30))
        .output(shape)
        .param(intParam("axis", 1));
  add("softmax_cross_entropy_grad")
      .input(shape)
      .typedInput(DType::I64, {7}, {3, 0, 60, 5, 9, 1, 2})
      .input({}, {1})
      .output(shape);
  add("sum").input(shape).output({61}).param(intsParam("dims", {0}));
  add("attention")
      .input({2, 33, 16})
      .input({2, 33, 16})
      .input({2, 33, 16})
      .output({2, 33, 16})
      .output({2, 33})
      .param(floatParam("scale", 0.25))
      .param(unitParam("causal"));
  return cases;
}

/// The bits of a result, every NaN as one: which of two NaN operands an
/// instruction passes on (and so a NaN's sign) depends on the order the
/// compiler gave a commutative operation's operands.
std::vector<uint64_t> bitsOf(const std::vector<std::vector<double>> &results) {
  std::vector<uint64_t> bits;
  for (const std::vector<double> &r : results)
    for (double v : r) {
      uint64_t b = 0x7ff8000000000000u;
      if (!std::isnan(v))
        std::memcpy(&b, &v, sizeof b);
      bits.push_back(b);
    }
  return bits;
}

// The loops compiled for AVX2 and AVX-512 compute the baseline's bits (a
// NaN's sign aside): same input, same result on any x86-64 machine (a fused
// multiply-add, a reordered sum or another exp would show here).
TEST(HostIsa, EveryInstructionSetGivesTheBaselinesBits) {
  std::vector<device::HostIsa> wider;
  for (device::HostIsa isa :
       {device::HostIsa::X86_64_V3, device::HostIsa::X86_64_V4})
    if (static_cast<int>(isa) <= static_cast<int>(device::bestHostIsa()))
      wider.push_back(isa);
  if (wider.empty())
    GTEST_SKIP() << "this CPU runs only the baseline loops: nothing to compare";
  int compared = 0;
  for (LaunchCase &c : isaCases()) {
    SCOPED_TRACE(c.kernel);
    for (int precision = 0; precision < 2; ++precision) {
      auto run = [&](device::HostIsa isa) {
        c.isa = isa;
        Status status = precision ? c.run<double>() : c.run<float>();
        EXPECT_TRUE(status.isOk()) << status.toString();
        return bitsOf(c.results);
      };
      bool bf16 = false;
      for (const Tensor &t : c.entry.tensors)
        bf16 |= t.type.dtype == DType::BF16;
      if (precision && bf16)
        continue; // bf16 storage runs in f32 only
      std::vector<uint64_t> baseline = run(device::HostIsa::Baseline);
      for (device::HostIsa isa : wider) {
        SCOPED_TRACE(device::hostIsaName(isa));
        EXPECT_EQ(run(isa), baseline);
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 60);
  RecordProperty("compared_with", device::hostIsaName(wider.back()));
}

// An f64 run takes no plan that stores bf16 (CpuExecutor refuses one), so
// the host loops of bf16 storage are compiled for f32 alone (HostRun.cpp):
// such a step given to an f64 run is refused, with nothing written.
TEST(HostRun, AnF64RunRefusesStepsThatStoreBf16) {
  int refused = 0;
  for (LaunchCase &c : isaCases()) {
    bool bf16 = false;
    for (const Tensor &t : c.entry.tensors)
      bf16 |= t.type.dtype == DType::BF16;
    Status status = c.run<double>();
    if (status.isOk())
      continue;
    SCOPED_TRACE(c.kernel);
    EXPECT_TRUE(bf16) << status.toString();
    EXPECT_EQ(status.code(), StatusCode::Unsupported);
    EXPECT_CONTAINS(status.message(), "an f64 run was given a step that "
                                      "stores bf16");
    // Each output as the case stored it: zeros, or (in place) its input.
    for (size_t i = 0; i < c.results.size(); ++i) {
      uint32_t t = c.launch().outputs[i];
      const std::vector<double> &before = c.values[t];
      for (size_t j = 0; j < c.results[i].size(); ++j) {
        double stored = 0.0;
        if (j < before.size())
          stored = c.entry.tensors[t].type.dtype == DType::BF16
                       ? bf16ToFloat(floatToBf16(static_cast<float>(before[j])))
                       : before[j];
        ASSERT_EQ(c.results[i][j], stored) << "a refused step wrote output "
                                           << i << " at " << j;
      }
    }
    ++refused;
  }
  // Every float element row and dropout, in bf16.
  int floatRows = 0;
  for (int row = 0; row < kElementRowCount; ++row)
    floatRows += elementIsFloat(kElementRows[row].arity);
  EXPECT_GE(refused, floatRows + 1);
  RecordProperty("refused", refused);
}

TEST(HostIsa, NamesParseAndAskOnlyForWhatTheCpuHas) {
  for (device::HostIsa isa :
       {device::HostIsa::Baseline, device::HostIsa::X86_64_V3,
        device::HostIsa::X86_64_V4}) {
    device::HostIsa parsed = device::HostIsa::Baseline;
    Status status = device::parseHostIsa(device::hostIsaName(isa), parsed);
    if (static_cast<int>(isa) <= static_cast<int>(device::bestHostIsa())) {
      ASSERT_TRUE(status.isOk()) << status.toString();
      EXPECT_EQ(parsed, isa);
    } else {
      EXPECT_CONTAINS(status.message(), "need instructions this CPU lacks");
    }
  }
  device::HostIsa out;
  Status unknown = device::parseHostIsa("avx9", out);
  EXPECT_CONTAINS(unknown.message(),
                  "unknown host loops 'avx9' (expected baseline, x86-64-v3 "
                  "or x86-64-v4)");
}

} // namespace

/// bf16 rounding by another route: the two bf16 neighbours of x (toward
/// zero, and one ulp further, infinity past the largest), compared in
/// double, which holds both differences exactly; ties to the even one.
uint16_t referenceBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if (std::isnan(x))
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t low = bits & 0xffff0000u, high = low + 0x10000u;
  auto value = [](uint32_t b) {
    double sign = (b >> 31) ? -1.0 : 1.0;
    if (((b >> 23) & 0xff) == 0xff) // one step past the largest finite value
      return sign * std::ldexp(1.0, 128);
    float f;
    std::memcpy(&f, &b, sizeof f);
    return static_cast<double>(f);
  };
  if (std::isinf(x))
    return static_cast<uint16_t>(low >> 16);
  double dl = std::fabs(static_cast<double>(x) - value(low));
  double dh = std::fabs(value(high) - static_cast<double>(x));
  bool up = dh < dl || (dh == dl && ((low >> 16) & 1u));
  return static_cast<uint16_t>((up ? high : low) >> 16);
}

TEST(BFloat16, NarrowingRoundsToNearestEven) {
  // Every sign, exponent and top mantissa bits, with the low half at the
  // edges that decide rounding (exact, below, at and above the midpoint),
  // then random patterns.
  const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff};
  std::mt19937 random(7);
  size_t checked = 0;
  auto check = [&](uint32_t bits) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    uint16_t got = floatToBf16(x).bits;
    ASSERT_EQ(got, referenceBf16(x)) << std::hex << "bits 0x" << bits;
    ++checked;
  };
  for (uint32_t high = 0; high < 0x10000; ++high)
    for (uint32_t low : lows)
      check(high << 16 | low);
  for (int i = 0; i < 1000000; ++i)
    check(static_cast<uint32_t>(random()));
  EXPECT_EQ(checked, 0x10000u * 6 + 1000000u);
  // Named cases: overflow to infinity, the largest finite, NaN quiet.
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()).bits, 0x7f80);
  EXPECT_EQ(floatToBf16(3.3895313892515355e38f).bits, 0x7f7f);
  EXPECT_EQ(floatToBf16(1.0f).bits, 0x3f80);
  EXPECT_EQ(floatToBf16(-0.0f).bits, 0x8000);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
}

TEST(BFloat16, WideningIsExact) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = bf16ToFloat({static_cast<uint16_t>(b)});
    if (std::isnan(f))
      continue;
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    ASSERT_EQ(bits, b << 16);
    ASSERT_EQ(floatToBf16(f).bits, b); // and back, unchanged
  }
}

TEST(KernelRules, Bf16OnlyWhereMixedPrecisionUsesIt) {
  const DType bf = DType::BF16;
  LaunchCase same("convert");
  same.input({3, 5}).output({3, 5});
  expectRejected(same, "converts 3x5xf32 to its own element type");
  LaunchCase shape("convert");
  shape.input({3, 5}).typedOutput(bf, {5, 3});
  expectRejected(shape, "expected result shape [3, 5], got 5x3xbf16");
  LaunchCase mixed("matmul");
  mixed.typedInput(bf, {8, 16}).input({16, 5}).output({8, 5});
  expectRejected(mixed,
                 "rhs element type f32 must match lhs element type bf16");
  LaunchCase narrow("matmul");
  narrow.input({8, 16}).input({16, 5}).typedOutput(bf, {8, 5});
  expectRejected(narrow,
                 "a product of f32 operands must have an f32 result, got "
                 "8x5xbf16");
  LaunchCase both("matmul");
  both.typedInput(bf, {8, 16}).typedInput(bf, {16, 5}).typedOutput(bf, {8, 5});
  expectAccepted(both);
  // TF32 is a rounding of f32 operands: a bf16 product may not ask for it.
  LaunchCase tf32 = both;
  tf32.param(unitParam("tf32"));
  expectRejected(tf32, "tf32 applies to products of f32 operands, not 8x16xbf16");
  LaunchCase f32Tf32("matmul");
  f32Tf32.input({8, 16}).input({16, 5}).output({8, 5}).param(unitParam("tf32"));
  expectAccepted(f32Tf32);
  LaunchCase softmax("softmax");
  softmax.typedInput(bf, {2, 3})
      .typedOutput(bf, {2, 3})
      .param(intParam("axis", 1));
  expectRejected(softmax, "operand must be an f32 tensor, got 2x3xbf16");
  LaunchCase add("add");
  add.typedInput(bf, {2, 3}).input({2, 3}).typedOutput(bf, {2, 3});
  expectRejected(add, "rhs type 2x3xf32 must match lhs type 2x3xbf16");
  LaunchCase constant("constant");
  constant.typedOutput(bf, {2}).param(floatParam("value", 1));
  expectAccepted(constant);
  LaunchCase huge("constant");
  huge.typedOutput(bf, {2}).param(floatParam("value", 1e39));
  expectRejected(huge, "value 1e+39 is out of range for bf16");
  // The loss reads bf16 logits and gives an f32 loss; its gradient is bf16.
  LaunchCase loss("softmax_cross_entropy");
  loss.typedInput(bf, {4, 3}).typedInput(DType::I32, {4}).output({});
  expectAccepted(loss);
  LaunchCase bf16Loss("softmax_cross_entropy");
  bf16Loss.typedInput(bf, {4, 3})
      .typedInput(DType::I32, {4})
      .typedOutput(bf, {});
  expectRejected(bf16Loss, "result must be a rank-0 f32 tensor, got bf16");
  LaunchCase lossGrad("softmax_cross_entropy_grad");
  lossGrad.typedInput(bf, {4, 3})
      .typedInput(DType::I32, {4})
      .input({})
      .output({4, 3});
  expectRejected(lossGrad,
                 "result type 4x3xf32 must match logits type 4x3xbf16");
  LaunchCase sum("sum");
  sum.typedInput(bf, {4, 3}).output({3}).param(intsParam("dims", {0}));
  expectRejected(sum, "result element type f32 must match operand element "
                      "type bf16");
}

namespace {

/// Row-major op(L) op(R) in double, for a matmul case's shapes and flags
/// (R shared when it has rank 2), from the values as the kernel sees them.
std::vector<double> naiveProduct(const LaunchCase &c,
                                 const std::vector<double> &l,
                                 const std::vector<double> &r) {
  const TensorType &lt = c.entry.tensors[c.launch().inputs[0]].type;
  const TensorType &rt = c.entry.tensors[c.launch().inputs[1]].type;
  bool tl = c.findParam("transpose_lhs"), tr = c.findParam("transpose_rhs");
  size_t lr = lt.shape.size(), rr = rt.shape.size();
  int64_t m = lt.shape[lr - (tl ? 1 : 2)], k = lt.shape[lr - (tl ? 2 : 1)];
  int64_t n = rt.shape[rr - (tr ? 2 : 1)];
  int64_t batch = elementCount(lt.shape) / (m * k);
  bool shared = rr == 2;
  std::vector<double> out(static_cast<size_t>(batch * m * n));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          double a = l[b * m * k + (tl ? p * m + i : i * k + p)];
          double w = r[(shared ? 0 : b * k * n) + (tr ? j * k + p : p * n + j)];
          sum += a * w;
        }
        out[b * m * n + i * n + j] = sum;
      }
  return out;
}

std::vector<double> roundedToBf16(const std::vector<double> &values) {
  std::vector<double> out;
  for (double v : values)
    out.push_back(bf16ToFloat(floatToBf16(static_cast<float>(v))));
  return out;
}

} // namespace

// The host's bf16 products (blocks widened to f32, sgemm) against a double
// loop over the same bf16 values: an f32 result within f32 summation error,
// a bf16 one that rounding of it (one bf16 unit, at most 2^-7 relative).
TEST(Bf16Kernels, ProductsMatchADoubleLoopOverTheBf16Values) {
  int products = 0;
  for (LaunchCase c : bf16Kernels()) {
    if (c.kernel != "matmul")
      continue;
    SCOPED_TRACE(typeString(c.entry.tensors[0].type) + " x " +
                 typeString(c.entry.tensors[1].type));
    ASSERT_TRUE(c.run<float>().isOk());
    std::vector<double> ref =
        naiveProduct(c, roundedToBf16(c.values[c.launch().inputs[0]]),
                     roundedToBf16(c.values[c.launch().inputs[1]]));
    bool bf16Out =
        c.entry.tensors[c.launch().outputs[0]].type.dtype == DType::BF16;
    ASSERT_EQ(c.result().size(), ref.size());
    int bad = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      double tolerance = 1e-5 * std::max(1.0, std::fabs(ref[i])) +
                         (bf16Out ? std::fabs(ref[i]) / 128 : 0);
      if (std::fabs(c.result()[i] - ref[i]) > tolerance && ++bad <= 3)
        ADD_FAILURE() << "element " << i << ": " << c.result()[i]
                      << ", reference " << ref[i];
      if (bf16Out) // stored as bf16: exactly representable
        EXPECT_EQ(c.result()[i],
                  bf16ToFloat(floatToBf16(static_cast<float>(c.result()[i]))));
    }
    ++products;
  }
  EXPECT_EQ(products, 9);
}

// Conversions and bf16 element kernels round once, to nearest even, the
// f32 result of the f32 formula on the widened operands.
TEST(Bf16Kernels, ConversionsAndElementKernelsRoundTheF32ResultOnce) {
  for (LaunchCase c : bf16Kernels()) {
    if (c.kernel != "convert" && c.kernel != "add" && c.kernel != "gelu" &&
        c.kernel != "scale")
      continue;
    SCOPED_TRACE(c.kernel + " " + typeString(c.entry.tensors[0].type));
    ASSERT_TRUE(c.run<float>().isOk());
    const TensorType &in = c.entry.tensors[c.launch().inputs[0]].type;
    std::vector<double> a = c.values[c.launch().inputs[0]];
    if (in.dtype == DType::BF16)
      a = roundedToBf16(a);
    for (size_t i = 0; i < c.result().size(); ++i) {
      float x = static_cast<float>(a[i]), expected;
      if (c.kernel == "convert")
        expected = in.dtype == DType::BF16 ? x // widening is exact
                                           : bf16ToFloat(floatToBf16(x));
      else if (c.kernel == "add")
        expected = bf16ToFloat(
            floatToBf16(x + static_cast<float>(roundedToBf16(
                                c.values[c.launch().inputs[1]])[i])));
      else if (c.kernel == "gelu")
        expected = bf16ToFloat(floatToBf16(device::geluOf(x)));
      else
        expected = bf16ToFloat(floatToBf16(x * 3.0f));
      if (std::isnan(expected))
        EXPECT_TRUE(std::isnan(c.result()[i])) << "element " << i;
      else
        EXPECT_EQ(c.result()[i], expected) << "element " << i;
    }
  }
  // The named rounding cases: ties go to the even neighbour, overflow to
  // infinity, a subnormal to the nearest subnormal bf16.
  LaunchCase edges = bf16Kernels()[2];
  ASSERT_TRUE(edges.run<float>().isOk());
  EXPECT_EQ(edges.result()[0], 1.0);
  EXPECT_EQ(edges.result()[1], 1.0 + 2.0 / 128);
  EXPECT_EQ(edges.result()[2], -(1.0 + 2.0 / 128));
  EXPECT_TRUE(std::isinf(edges.result()[3]));
  EXPECT_TRUE(std::isinf(edges.result()[4]) && edges.result()[4] < 0);
  EXPECT_TRUE(std::isnan(edges.result()[5]));
  EXPECT_EQ(edges.result()[7], 0.0);
}

// The kernels bf16 activations pass through (moves, dropout, sums, the loss)
// give what the f32 kernel gives on the widened values, rounded once to
// bf16 where the result is stored in bf16: the storage changes nothing else.
TEST(Bf16Kernels, StorageKernelsMatchTheF32KernelOnTheWidenedValues) {
  int checked = 0;
  for (LaunchCase c : bf16Kernels()) {
    // Attention rounds inside (AttentionKernels.Bf16MatchesF32...).
    if (c.kernel == "convert" || c.kernel == "add" || c.kernel == "gelu" ||
        c.kernel == "scale" || c.kernel == "matmul" ||
        c.kernel.rfind("attention", 0) == 0)
      continue;
    SCOPED_TRACE(c.kernel + " " + typeString(c.entry.tensors[0].type));
    LaunchCase twin = c;
    for (size_t t = 0; t < twin.entry.tensors.size(); ++t)
      if (twin.entry.tensors[t].type.dtype == DType::BF16) {
        twin.entry.tensors[t].type.dtype = DType::F32;
        twin.values[t] = roundedToBf16(twin.values[t]);
      }
    ASSERT_TRUE(c.run<float>().isOk());
    ASSERT_TRUE(twin.run<float>().isOk());
    for (size_t o = 0; o < c.results.size(); ++o) {
      bool bf16Out =
          c.entry.tensors[c.launch().outputs[o]].type.dtype == DType::BF16;
      std::vector<double> expected =
          bf16Out ? roundedToBf16(twin.results[o]) : twin.results[o];
      ASSERT_EQ(c.results[o].size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(c.results[o][i], expected[i])
            << "output " << o << " element " << i;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 19);
  // The moves really moved 2-byte elements: a transpose's corner.
  LaunchCase t = bf16Kernels()[15];
  ASSERT_EQ(t.kernel, "transpose");
  ASSERT_TRUE(t.run<float>().isOk());
  EXPECT_EQ(t.result()[1], roundedToBf16(t.values[0])[5]); // [0,0,1] = x[0,1,0]
}

// bf16 attention computes in f32 but rounds the probabilities (and, in
// the backward, the scores' gradient) to bf16 for its products, as
// FlashAttention and cuDNN do: against f32 attention of the same (rounded)
// operands, every output within 2^-6 of its largest magnitude (a few bf16
// units), the logsumexp within f32 rounding. Two blocks of query rows, so
// the key and value gradients are sums over blocks.
TEST(AttentionKernels, Bf16MatchesF32WithinBf16Rounding) {
  std::vector<LaunchCase> cases;
  const std::vector<double> padding = [] {
    std::vector<double> m(2 * 90, 1.0);
    std::fill(m.begin() + 150, m.end(), 0.0);
    return m;
  }();
  addAttention(cases, DType::BF16, AttentionCase{{2, 4}, {2, 2}, 70, 90, 16, 8},
               true, true, nullptr, 0.0);
  addAttention(cases, DType::BF16, AttentionCase{{2, 2}, {2, 2}, 70, 90, 16, 8},
               false, false, &padding, 0.2);
  for (LaunchCase bf16 : cases) {
    SCOPED_TRACE(bf16.kernel);
    // The same launch in f32 over the bf16-rounded values.
    LaunchCase f32 = bf16;
    for (size_t t = 0; t < f32.entry.tensors.size(); ++t) {
      TensorType &type = f32.entry.tensors[t].type;
      if (type.dtype != DType::BF16)
        continue;
      type.dtype = DType::F32;
      f32.values[t] = roundedToBf16(f32.values[t]);
    }
    ASSERT_TRUE(bf16.run<float>().isOk());
    ASSERT_TRUE(f32.run<float>().isOk());
    for (size_t o = 0; o < f32.results.size(); ++o) {
      const std::vector<double> &want = f32.result(o), &got = bf16.result(o);
      double largest = 0, worst = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        largest = std::max(largest, std::fabs(want[i]));
        if (std::isfinite(want[i]))
          worst = std::max(worst, std::fabs(got[i] - want[i]));
        else
          EXPECT_EQ(got[i], want[i]) << "output " << o << " element " << i;
      }
      bool logsumexp = bf16.kernel == "attention" && o == 1;
      EXPECT_LE(worst, (logsumexp ? 1e-5 : 1.0 / 64) * largest)
          << "output " << o << " (largest " << largest << ")";
      EXPECT_GT(largest, 0.0) << "output " << o;
    }
  }
}

TEST(AttentionKernels, Bf16WorkspaceAddsTheRoundedBlockAndF32Sums) {
  // GPT-2 small's attention in bf16: the forward also keeps its block of
  // probabilities rounded; the backward both rounded blocks and the key and
  // value gradients summed in f32.
  auto gpt2 = [](const char *kernel) {
    std::vector<LaunchCase> cases;
    addAttention(cases, DType::BF16,
                 AttentionCase{{8, 12}, {8, 12}, 1024, 1024, 64, 64}, true,
                 true, nullptr, 0.0);
    return cases[std::string(kernel) == "attention" ? 0 : 1];
  };
  uint64_t block = 96 * 64 * 1024, heads = 96 * 1024 * 64;
  Entry e;
  ASSERT_TRUE(gpt2("attention").decoded(e).isOk());
  EXPECT_EQ(kernelScratchBytes(e, e.launches[0]), 4 * block + 2 * block);
  ASSERT_TRUE(gpt2("attention_grad").decoded(e).isOk());
  EXPECT_EQ(kernelScratchBytes(e, e.launches[0]),
            4 * (2 * block + 96 * 1024 + 2 * heads) + 2 * 2 * block);
}

//===----------------------------------------------------------------------===//
// Fused element programs (zt.fused)
//===----------------------------------------------------------------------===//

namespace {

/// (clamp(gelu(x + bias), -0.5, 0.75) - y) * 2 as one program; the bias a
/// broadcast read through strides.
LaunchCase fusedChain(std::vector<std::string> ops = {"add", "gelu", "clamp",
                                                      "sub", "scale"},
                      std::vector<int64_t> args = {0, 1, 3, 4, 5, 2, 6},
                      std::vector<double> numbers = {-0.5, 0.75, 2.0},
                      std::vector<int64_t> outputs = {}) {
  if (outputs.empty())
    outputs = {static_cast<int64_t>(3 + ops.size() - 1)};
  LaunchCase c("fused");
  c.input({5, 7}, randomValues(35, 3, -3, 3))
      .stridedInput({5, 7}, {0, 1}, randomValues(7, 4))
      .input({5, 7});
  for (size_t o = 0; o < outputs.size(); ++o)
    c.output({5, 7});
  c.param(namesParam("ops", std::move(ops)))
      .param(intsParam("args", std::move(args)))
      .param(floatsParam("numbers", std::move(numbers)))
      .param(intsParam("outputs", std::move(outputs)))
      .param(intsParam("seeds", {}));
  return c;
}

} // namespace

TEST(KernelRules, FusedPrograms) {
  expectAccepted(fusedChain());
  expectRejected(fusedChain({"add", "softmax"}, {0, 1, 3}, {}),
                 "op 1 'softmax' is not a float element row, scale or dropout");
  expectRejected(fusedChain({"add", "eq"}, {0, 1, 3, 2}, {}),
                 "op 1 'eq' is not a float element row, scale or dropout");
  expectRejected(fusedChain({"add", "sub"}, {0, 1, 3, 2, 2}, {}),
                 "ops read 4 args, 0 numbers and 0 seeds, but 5, 0 and 0 are given");
  expectRejected(fusedChain({"add", "sub"}, {0, 4, 3, 2}, {}),
                 "op 0 'add' reads value 4, not an operand (3) or an earlier "
                 "op's result");
  expectRejected(fusedChain({"add", "neg"}, {0, 1, 3}, {}),
                 "operand #2 is read by no op of the fused program");
  expectRejected(fusedChain({"add", "sub", "clamp"}, {0, 1, 3, 2, 4}, {0.5}),
                 "op 2 'clamp' has no number #1 in numbers (1 given)");
  expectRejected(fusedChain({"add", "sub", "scale"}, {0, 1, 3, 2, 4},
                            {std::numeric_limits<double>::infinity()}),
                 "not a finite factor");
  expectRejected(fusedChain({}, {}, {}, {2}), "a fused program has 1 to 16 ops");
  expectAccepted(fusedChain({"add", "gelu", "sub"}, {0, 1, 3, 4, 2}, {}, {5, 3}));
  expectRejected(fusedChain({"add", "gelu", "sub"}, {0, 1, 3, 4, 2}, {}, {4, 3}),
                 "the last op's result (value 5) is no output");
  expectRejected(fusedChain({"add", "gelu", "sub"}, {0, 1, 3, 4, 2}, {}, {5, 5}),
                 "outputs #0 and #1 are both value 5");
  expectRejected(fusedChain({"add", "gelu", "sub"}, {0, 1, 3, 4, 2}, {}, {5, 1}),
                 "output #1 is value 1, not an op's result (3 to 5)");
  std::vector<std::string> many(17, "neg");
  many[0] = "add";
  many[1] = "sub";
  std::vector<int64_t> chain = {0, 1, 3, 2};
  for (int64_t k = 2; k < 17; ++k)
    chain.push_back(2 + k);
  expectRejected(fusedChain(many, chain, {}),
                 "a fused program has 1 to 16 ops, got 17");
  LaunchCase wrongType("fused");
  wrongType.input({4}).input({5}).output({4});
  wrongType.param(namesParam("ops", {"add"}))
      .param(intsParam("args", {0, 1}))
      .param(floatsParam("numbers", {}))
      .param(intsParam("outputs", {2}))
      .param(intsParam("seeds", {}));
  expectRejected(wrongType, "operand #1 type 5xf32 must match result type 4xf32");
  LaunchCase stated("fused");
  stated.input({4}).output({4});
  stated.param(namesParam("ops", {"neg"})).param(intsParam("args", {0}));
  stated.param(intsParam("outputs", {1})).param(intsParam("seeds", {}));
  expectRejected(stated, "missing parameter 'numbers' (a float list)");
}

/// Runs `c` in T and returns its first result.
template <typename T> std::vector<double> resultOf(LaunchCase &c) {
  EXPECT_TRUE(c.run<T>().isOk());
  return c.result();
}

/// The program's results have the bits of the ops run one launch each (the
/// host's blocks and its per-element path agree with the element kernels):
/// f32 and the f64 reference; its second output is gelu's value.
TEST(FusedKernel, GivesTheUnfusedChainsBits) {
  LaunchCase fused = fusedChain({"add", "gelu", "clamp", "sub", "scale"},
                                {0, 1, 3, 4, 5, 2, 6}, {-0.5, 0.75, 2.0},
                                {7, 4});
  std::vector<double> geluValues[2];
  auto chain = [&](auto tag) -> std::vector<double> {
    using T = decltype(tag);
    auto step = [](LaunchCase c) { return resultOf<T>(c); };
    LaunchCase add("add");
    add.input({5, 7}, fused.values[0])
        .stridedInput({5, 7}, {0, 1}, fused.values[1])
        .output({5, 7});
    std::vector<double> v = step(add);
    LaunchCase gelu("gelu");
    gelu.input({5, 7}, v).output({5, 7});
    v = step(gelu);
    geluValues[sizeof(T) == 8] = v;
    LaunchCase clamp("clamp");
    clamp.input({5, 7}, v).output({5, 7}).param(floatParam("min", -0.5)).param(
        floatParam("max", 0.75));
    v = step(clamp);
    LaunchCase sub("sub");
    sub.input({5, 7}, v).input({5, 7}, fused.values[2]).output({5, 7});
    v = step(sub);
    LaunchCase scale("scale");
    scale.input({5, 7}, v).output({5, 7}).param(floatParam("factor", 2.0));
    return step(scale);
  };
  std::vector<double> f32 = chain(float()), f64 = chain(double());
  ASSERT_TRUE(fused.run<float>().isOk());
  EXPECT_EQ(fused.result(0), f32);
  EXPECT_EQ(fused.result(1), geluValues[0]);
  ASSERT_TRUE(fused.run<double>().isOk());
  EXPECT_EQ(fused.result(0), f64);
  EXPECT_EQ(fused.result(1), geluValues[1]);
  EXPECT_NE(f32, f64); // the two precisions really differ
}

/// A dropout step draws the Dropout kernel's mask (the same seed, step
/// counter and element index) and scales as it does: residual dropout
/// fused gives the bits of add, dropout, add; a missing step counter (the
/// last operand is taken for it), a missing seed or a rate of 1 is
/// refused.
TEST(FusedKernel, DropoutDrawsTheDropoutKernelsMask) {
  auto residual = [](std::vector<double> numbers, std::vector<int64_t> seeds,
                     bool withStep) {
    LaunchCase c("fused");
    c.input({6, 11}, randomValues(66, 8))
        .stridedInput({6, 11}, {0, 1}, randomValues(11, 9))
        .input({6, 11}, randomValues(66, 10));
    if (withStep)
      c.typedInput(DType::I64, {}, {5});
    c.output({6, 11})
        .param(namesParam("ops", {"add", "dropout", "add"}))
        .param(intsParam("args", {0, 1, 3, 2, 4}))
        .param(floatsParam("numbers", std::move(numbers)))
        .param(intsParam("outputs", {5}))
        .param(intsParam("seeds", std::move(seeds)));
    return c;
  };
  LaunchCase fused = residual({0.3}, {11}, true);
  auto chain = [&](auto tag) -> std::vector<double> {
    using T = decltype(tag);
    auto step = [](LaunchCase c) { return resultOf<T>(c); };
    LaunchCase add("add");
    add.input({6, 11}, fused.values[0])
        .stridedInput({6, 11}, {0, 1}, fused.values[1])
        .output({6, 11});
    LaunchCase dropout("dropout");
    dropout.input({6, 11}, step(add))
        .typedInput(DType::I64, {}, {5})
        .output({6, 11})
        .param(floatParam("rate", 0.3))
        .param(intParam("seed", 11));
    LaunchCase residualAdd("add");
    residualAdd.input({6, 11}, step(dropout))
        .input({6, 11}, fused.values[2])
        .output({6, 11});
    return step(residualAdd);
  };
  std::vector<double> f32 = chain(float()), f64 = chain(double());
  ASSERT_TRUE(fused.run<float>().isOk());
  EXPECT_EQ(fused.result(), f32);
  ASSERT_TRUE(fused.run<double>().isOk());
  EXPECT_EQ(fused.result(), f64);
  // Some elements were dropped: the residual alone remains there.
  int dropped = 0;
  for (size_t i = 0; i < f64.size(); ++i)
    dropped += f64[i] == fused.values[2][i];
  EXPECT_GT(dropped, 5);
  EXPECT_LT(dropped, 40);
  // A rate within 2^-32 of 1 keeps no word (its threshold is 2^32), as
  // the Dropout kernel: the residual alone remains everywhere.
  LaunchCase none = residual({1.0 - 1e-12}, {11}, true);
  ASSERT_TRUE(none.run<float>().isOk());
  for (size_t i = 0; i < none.result().size(); ++i)
    ASSERT_EQ(none.result()[i],
              static_cast<double>(static_cast<float>(none.values[2][i])));
  expectRejected(residual({0.3}, {11}, false),
                 "op 1 'dropout' reads value 3, not an operand (2)");
  expectRejected(residual({0.3}, {}, true), "op 1 'dropout' has no seed");
  expectRejected(residual({1.0}, {11}, true), "not a rate in [0, 1)");
}

/// A program over more elements than a block of the host loop and a
/// thread's share (so blocks and threads start at elements that are not a
/// multiple of four, a dropout Philox block's width), its operands read
/// through a transposing view (inner stride 3) and a rank-3 broadcast (the
/// host loop's runs carry through every dimension), gives the chain's bits
/// on the caller's thread and on two threads with every instruction set
/// the CPU has.
TEST(FusedKernel, LargeStridedProgramsGiveTheChainsBitsOnEveryThreadAndIsa) {
  const std::vector<int64_t> shape = {3, 37, 301};
  const int64_t n = elementCount(shape);
  const std::vector<int64_t> transposed = {1, 3 * 301, 3}, bias = {0, 1, 0};
  LaunchCase fused("fused");
  fused.stridedInput(shape, transposed, randomValues(n, 21, -3, 3))
      .stridedInput(shape, bias, randomValues(37, 22))
      .input(shape, randomValues(n, 23))
      .typedInput(DType::I64, {}, {7})
      .output(shape)
      .output(shape)
      .param(namesParam("ops", {"add", "gelu", "dropout", "add"}))
      .param(intsParam("args", {0, 1, 3, 4, 5, 2}))
      .param(floatsParam("numbers", {0.25}))
      .param(intsParam("outputs", {6, 4}))
      .param(intsParam("seeds", {13}));
  // The chain, kernel by kernel on the caller's thread.
  LaunchCase add("add");
  add.stridedInput(shape, transposed, fused.values[0])
      .stridedInput(shape, bias, fused.values[1])
      .output(shape);
  LaunchCase gelu("gelu");
  gelu.input(shape, resultOf<float>(add)).output(shape);
  std::vector<double> geluValues = resultOf<float>(gelu);
  LaunchCase dropout("dropout");
  dropout.input(shape, geluValues)
      .typedInput(DType::I64, {}, {7})
      .output(shape)
      .param(floatParam("rate", 0.25))
      .param(intParam("seed", 13));
  LaunchCase residual("add");
  residual.input(shape, resultOf<float>(dropout))
      .input(shape, fused.values[2])
      .output(shape);
  const std::vector<double> expected = resultOf<float>(residual);
  int dropped = 0;
  for (int64_t i = 0; i < n; ++i)
    dropped += expected[i] ==
               static_cast<double>(static_cast<float>(fused.values[2][i]));
  EXPECT_GT(dropped, n / 5); // a quarter dropped
  EXPECT_LT(dropped, n / 3);

  ASSERT_TRUE(fused.run<float>().isOk());
  EXPECT_EQ(fused.result(0), expected);
  EXPECT_EQ(fused.result(1), geluValues);
  for (device::HostIsa isa :
       {device::HostIsa::Baseline, device::HostIsa::X86_64_V3,
        device::HostIsa::X86_64_V4}) {
    if (static_cast<int>(isa) > static_cast<int>(device::bestHostIsa()))
      continue;
    SCOPED_TRACE(device::hostIsaName(isa));
    fused.isa = isa;
    ASSERT_TRUE(fused.run<float>().isOk());
    EXPECT_EQ(fused.result(0), expected);
    EXPECT_EQ(fused.result(1), geluValues);
  }
}

//===----------------------------------------------------------------------===//
// Runs: the GPU's element kernels take eight consecutive elements a thread
//===----------------------------------------------------------------------===//

/// Runs read 16 bytes at once where an operand is aligned and element by
/// element where it is not, with the same values; a strided run within one
/// line steps by its innermost stride, one crossing lines computes each
/// offset.
TEST(ElementRuns, LoadAndStoreAlignedOrNot) {
  std::vector<float> data(40);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<float>(i) + 0.5f;
  alignas(16) float buffer[40];
  std::copy(data.begin(), data.end(), buffer);
  for (int64_t first : {0, 8, 16}) // aligned runs
    for (int64_t shift : {0, 1, 3}) { // the pointer's offset: 0, 4, 12 bytes
      float run[device::kRunElements];
      device::loadRun(buffer + shift, first, run);
      for (int e = 0; e < device::kRunElements; ++e)
        EXPECT_EQ(run[e], data[shift + first + e]) << shift << " " << first;
      alignas(16) float out[48] = {};
      device::storeRun(out + shift, first, run);
      for (int e = 0; e < device::kRunElements; ++e)
        EXPECT_EQ(out[shift + first + e], run[e]);
      EXPECT_EQ(out[shift + first + device::kRunElements], 0.0f);
    }
  // [4, 6] read through strides (0, 1): a run from 8 crosses a line.
  device::StridedShape read;
  read.rank = 2;
  read.size[0] = 4;
  read.size[1] = 6;
  read.stride[0] = 0;
  read.stride[1] = 1;
  for (int64_t first : {0, 8, 16}) {
    float run[device::kRunElements];
    device::loadOperandRun(buffer, true, read, first, run);
    for (int e = 0; e < device::kRunElements; ++e)
      EXPECT_EQ(run[e], data[(first + e) % 6]) << first << " " << e;
  }
  read.size[1] = 16; // [4, 16]: runs within a line
  for (int64_t first : {0, 8, 16, 24}) {
    float run[device::kRunElements];
    device::loadOperandRun(buffer, true, read, first, run);
    for (int e = 0; e < device::kRunElements; ++e)
      EXPECT_EQ(run[e], data[(first + e) % 16]) << first << " " << e;
  }
}

/// The emulator's GPU mode runs element kernels as the GPU does (a thread
/// per run of eight elements, operands read a run at a time, the elements
/// after the last run one a thread, in no order): each element has the
/// bits of the CPU executor's loops. Counts with and without a last short
/// part; broadcasts within and across lines; in place; bf16 and f32
/// storage; programs with dropout; conversions; AdamW and SGD updates.
TEST(ElementRuns, GiveTheCpuExecutorsBits) {
  auto both = [](LaunchCase c, const std::string &what) {
    c.rowParams();
    LaunchCase gpu = c;
    gpu.gpuGroups = true;
    ASSERT_TRUE(c.run<float>().isOk()) << what;
    ASSERT_TRUE(gpu.run<float>().isOk()) << what;
    ASSERT_EQ(gpu.results.size(), c.results.size());
    for (size_t o = 0; o < c.results.size(); ++o) {
      EXPECT_EQ(gpu.result(o), c.result(o)) << what << ", output " << o;
      // Every element written (outputs start at 777).
      EXPECT_EQ(std::count(c.result(o).begin(), c.result(o).end(), 777.0), 0)
          << what;
    }
  };
  for (DType dtype : {DType::F32, DType::BF16}) {
    std::string type = dtypeName(dtype);
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{5, 7}, std::vector<int64_t>{3, 16},
          std::vector<int64_t>{3, 43}}) {
      int64_t n = elementCount(shape), line = shape[1];
      std::string at = type + " [" + std::to_string(shape[0]) + ", " +
                       std::to_string(line) + "]";
      LaunchCase add("add");
      add.typedInput(dtype, shape)
          .typedStridedInput(dtype, shape, {0, 1}, randomValues(line, 4))
          .typedOutput(dtype, shape);
      both(add, "add of a broadcast, " + at);
      LaunchCase mul("mul");
      mul.typedInput(dtype, shape).typedInput(dtype, shape).typedOutput(dtype,
                                                                        shape);
      both(mul, "mul, " + at);
      LaunchCase gelu("gelu");
      gelu.typedInput(dtype, shape, randomValues(n, 6, -3, 3)).outputInPlace(0);
      both(gelu, "gelu in place, " + at);
      // add, dropout, add (the residual's program) and a second output.
      LaunchCase program("fused");
      program.typedInput(dtype, shape)
          .typedStridedInput(dtype, shape, {0, 1}, randomValues(line, 9))
          .typedInput(dtype, shape, randomValues(n, 10))
          .typedInput(DType::I64, {}, {3})
          .typedOutput(dtype, shape)
          .typedOutput(dtype, shape)
          .param(namesParam("ops", {"add", "dropout", "gelu", "add"}))
          .param(intsParam("args", {0, 1, 3, 4, 5, 2}))
          .param(floatsParam("numbers", {0.3}))
          .param(intsParam("outputs", {6, 4}))
          .param(intsParam("seeds", {21}));
      both(program, "program with dropout, " + at);
      LaunchCase narrow("convert"), widen("convert");
      narrow.typedInput(DType::F32, shape).typedOutput(DType::BF16, shape);
      widen.typedInput(DType::BF16, shape).typedOutput(DType::F32, shape);
      both(narrow, "convert to bf16, " + at);
      both(widen, "convert from bf16, " + at);
      LaunchCase truncate("convert"); // element by element within a run
      truncate.typedInput(dtype, shape, randomValues(n, 11, -50, 50))
          .typedOutput(DType::I32, shape);
      both(truncate, "convert to i32, " + at);
      LaunchCase adamw("adamw");
      adamw.input(shape)
          .typedInput(dtype, shape)
          .input(shape, randomValues(n, 12, -0.1, 0.1))
          .input(shape, randomValues(n, 13, 0, 0.01))
          .typedInput(DType::I64, {}, {4})
          .outputInPlace(0)
          .outputInPlace(2)
          .outputInPlace(3)
          .param(floatParam("lr", 1e-2))
          .stateOptimizerParams();
      both(adamw, "adamw, gradient " + at);
      LaunchCase sgd("sgd");
      sgd.input(shape)
          .typedInput(dtype, shape)
          .input(shape)
          .outputInPlace(0)
          .outputInPlace(2)
          .param(floatParam("lr", 0.1))
          .param(floatParam("momentum", 0.9))
          .param(unitParam("nesterov"))
          .stateOptimizerParams();
      both(sgd, "sgd with momentum, gradient " + at);
    }
  }
}
