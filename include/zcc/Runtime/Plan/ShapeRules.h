//===- ShapeRules.h - the ops' shape rules, stated once ----------*- C++ -*-===//
//
// The shapes an op's operands and parameters must have, and the shapes of
// its results, for the ops whose results follow from them. Each rule is
// written once, here, MLIR-free, and called by the zt verifiers
// (ZTOps.cpp), the capture API's type inference (Graph.cpp) and the plan
// loader's checks (KernelRules.cpp). An error's message states the rule
// broken, naming operands by their role ("lhs", "query") and without a
// prefix: the caller says where (the op, or the launch).
//
// Element types, and limits only a plan file must be held to (BLAS sizes,
// element counts), are the callers'.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_SHAPERULES_H
#define ZCC_RUNTIME_SHAPERULES_H

#include "zcc/Runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zcc::runtime {

using Shape = std::vector<int64_t>;

/// "[4, 8]".
std::string formatShape(const Shape &shape);

/// `dims` strictly increasing and within [0, rank) (`name` is the
/// parameter's: "dims", "broadcast_dimensions").
Status dimListRule(const char *name, const std::vector<int64_t> &dims,
                   int64_t rank);

/// sum, mean, max (and max_grad's `grad`): `dims` names at least one
/// dimension of `operand`; the result drops them, or keeps them as 1.
Status reductionShape(const Shape &operand, const std::vector<int64_t> &dims,
                      bool keepDims, Shape &result);

/// transpose: `permutation` is one of 0..rank-1; the result's dimension i is
/// the operand's permutation[i].
Status transposeShape(const Shape &operand,
                      const std::vector<int64_t> &permutation, Shape &result);

/// slice (and slice_grad, whose `whole` is its result): one in-bounds
/// start:limit:stride range per dimension of `whole`, strides >= 1; `part`
/// has ceil((limit - start) / stride) elements along each.
Status sliceShape(const Shape &whole, const std::vector<int64_t> &starts,
                  const std::vector<int64_t> &limits,
                  const std::vector<int64_t> &strides, Shape &part);

/// concat: at least one operand, one rank, sizes equal but along
/// `dimension`, where the result's is their sum.
Status concatShape(const std::vector<Shape> &operands, int64_t dimension,
                   Shape &result);

/// matmul: `lhs` [B..., M, K] and `rhs` [B..., K, N] or [K, N] (with the
/// transposes applied); the result [B..., M, N].
Status matmulShape(const Shape &lhs, const Shape &rhs, bool transposeLhs,
                   bool transposeRhs, Shape &result);

/// attention (and attention_grad's forward operands): `query` [B..., S, D],
/// `key` [B..., T, D], `value` [B..., T, Dv], sizes >= 1, a finite `scale`;
/// `result` [B..., S, Dv] and `logsumexp` [B..., S]. Grouped-query
/// attention: key and value [B'..., Hkv, T, _] where the query is
/// [B'..., H, S, D] with H a multiple of Hkv; query head h reads key and
/// value head h / (H / Hkv), as PyTorch's `enable_gqa`.
Status attentionShapes(const Shape &query, const Shape &key,
                       const Shape &value, double scale, Shape &result,
                       Shape &logsumexp);
/// conv2d: `input` [N, C, H, W], `weight` [O, C / groups, KH, KW] (O a
/// multiple of `groups`), `stride`, `padding` and `dilation` two numbers
/// each (strides and dilations >= 1, paddings >= 0), every output size >= 1:
/// `result` [N, O, (H + 2 ph - dh (KH - 1) - 1) / sh + 1, likewise W].
Status conv2dShape(const Shape &input, const Shape &weight,
                   const std::vector<int64_t> &stride,
                   const std::vector<int64_t> &padding,
                   const std::vector<int64_t> &dilation, int64_t groups,
                   Shape &result);
/// max_pool2d: `input` [N, C, H, W], a `kernel` window, `stride`, `padding`
/// (-inf, at most half the window) and `dilation`, two numbers each:
/// `result` [N, C, OH, OW] as conv2dShape's, or with `ceilMode` rounded up
/// as PyTorch's (a last window may hang over the end, never start in the
/// right padding).
Status pool2dShape(const Shape &input, const std::vector<int64_t> &kernel,
                   const std::vector<int64_t> &stride,
                   const std::vector<int64_t> &padding,
                   const std::vector<int64_t> &dilation, bool ceilMode,
                   Shape &result);
/// attention's optional mask (true where a query may see a key): the rank
/// of `query`, each dimension that of [B..., S, T] or 1 (broadcast).
Status attentionMaskRule(const Shape &mask, const Shape &query,
                         const Shape &key);

/// softmax, log_softmax and their gradients, cumsum: `axis` (negative counts
/// from the end) names a dimension of `operand` (`name`: the parameter's).
Status axisRule(const Shape &operand, int64_t axis, const char *name = "axis");

/// layer_norm, rms_norm and their gradients: `operand` of rank >= 1, each
/// affine parameter (`roles[i]`: "gamma", "beta") of shape [D], its last
/// dimension, and epsilon > 0 (finite).
Status normRule(const Shape &operand, const std::vector<const char *> &roles,
                const std::vector<Shape> &affine, double epsilon);

/// embedding: `table` [vocabulary, dim] (embedding_grad: its result), any
/// `indices`; the rows gathered are [indices..., dim].
Status embeddingShape(const Shape &table, const Shape &indices, Shape &rows,
                      const char *tableRole = "table");

/// softmax_cross_entropy and its gradient: `logits` [N..., C] and `labels`
/// [N...].
Status logitsLabelsRule(const Shape &logits, const Shape &labels);

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_SHAPERULES_H
