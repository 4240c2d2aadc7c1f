//===- ShapeRules.cpp - the ops' shape rules, stated once -----------------===//

#include "zcc/Runtime/Plan/ShapeRules.h"

#include <cmath>
#include <sstream>

using namespace zcc::runtime;

namespace {

template <typename... Parts> Status broken(const Parts &...parts) {
  return makeError(StatusCode::InvalidArgument, parts...);
}

} // namespace

std::string zcc::runtime::formatShape(const Shape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

Status zcc::runtime::dimListRule(const char *name,
                                 const std::vector<int64_t> &dims,
                                 int64_t rank) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= rank)
      return broken(name, "[", i, "] = ", dims[i], " is out of range for rank ",
                    rank);
    if (i > 0 && dims[i] <= dims[i - 1])
      return broken(name, " must be strictly increasing, got ",
                    formatShape(dims));
  }
  return Status::ok();
}

Status zcc::runtime::reductionShape(const Shape &operand,
                                    const std::vector<int64_t> &dims,
                                    bool keepDims, Shape &result) {
  if (dims.empty())
    return broken("dims must name at least one dimension");
  int64_t rank = static_cast<int64_t>(operand.size());
  ZRT_RETURN_IF_ERROR(dimListRule("dims", dims, rank));
  result.clear();
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) {
    bool reduced = next < dims.size() && dims[next] == d;
    if (reduced)
      ++next;
    if (!reduced)
      result.push_back(operand[d]);
    else if (keepDims)
      result.push_back(1);
  }
  return Status::ok();
}

Status zcc::runtime::transposeShape(const Shape &operand,
                                    const std::vector<int64_t> &permutation,
                                    Shape &result) {
  int64_t rank = static_cast<int64_t>(operand.size());
  if (static_cast<int64_t>(permutation.size()) != rank)
    return broken("permutation has ", permutation.size(),
                  " entries but the operand has rank ", rank);
  std::vector<bool> seen(operand.size(), false);
  result.clear();
  for (int64_t dim : permutation) {
    if (dim < 0 || dim >= rank || seen[dim])
      return broken("permutation ", formatShape(permutation),
                    " is not a permutation of 0..", rank - 1);
    seen[dim] = true;
    result.push_back(operand[dim]);
  }
  return Status::ok();
}

Status zcc::runtime::sliceShape(const Shape &whole,
                                const std::vector<int64_t> &starts,
                                const std::vector<int64_t> &limits,
                                const std::vector<int64_t> &strides,
                                Shape &part) {
  size_t rank = whole.size();
  if (starts.size() != rank || limits.size() != rank || strides.size() != rank)
    return broken("needs one start:limit[:stride] range per dimension (rank ",
                  rank, "), got ", starts.size(), ", ", limits.size(), " and ",
                  strides.size(), " entries");
  part.clear();
  for (size_t d = 0; d < rank; ++d) {
    int64_t start = starts[d], limit = limits[d], stride = strides[d];
    if (start < 0 || start > limit || limit > whole[d])
      return broken("dimension ", d, ": range ", start, ":", limit,
                    " is out of bounds for size ", whole[d]);
    if (stride < 1)
      return broken("dimension ", d, ": stride must be >= 1, got ", stride);
    int64_t span = limit - start;
    part.push_back(span == 0 ? 0 : (span - 1) / stride + 1);
  }
  return Status::ok();
}

Status zcc::runtime::concatShape(const std::vector<Shape> &operands,
                                 int64_t dimension, Shape &result) {
  if (operands.empty())
    return broken("needs at least one operand");
  const Shape &first = operands.front();
  int64_t rank = static_cast<int64_t>(first.size());
  if (dimension < 0 || dimension >= rank)
    return broken("dimension ", dimension, " is out of range for rank ", rank);
  result = first;
  result[dimension] = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Shape &shape = operands[i];
    if (static_cast<int64_t>(shape.size()) != rank)
      return broken("operand #", i, " has rank ", shape.size(), ", expected ",
                    rank);
    for (int64_t d = 0; d < rank; ++d)
      if (d != dimension && shape[d] != first[d])
        return broken("operand #", i, " has size ", shape[d], " in dimension ",
                      d, ", expected ", first[d], " (only dimension ",
                      dimension, " may differ)");
    result[dimension] += shape[dimension];
  }
  return Status::ok();
}

Status zcc::runtime::matmulShape(const Shape &lhs, const Shape &rhs,
                                 bool transposeLhs, bool transposeRhs,
                                 Shape &result) {
  size_t lhsRank = lhs.size(), rhsRank = rhs.size();
  if (lhsRank < 2)
    return broken("lhs must have rank >= 2, got ", formatShape(lhs));
  if (rhsRank < 2)
    return broken("rhs must have rank >= 2, got ", formatShape(rhs));
  if (rhsRank != lhsRank && rhsRank != 2)
    return broken("rhs must have the rank of lhs (", lhsRank,
                  ") or rank 2 (a weight shared by every batch entry), got "
                  "rank ",
                  rhsRank);
  Shape batch(lhs.begin(), lhs.end() - 2);
  if (rhsRank == lhsRank && Shape(rhs.begin(), rhs.end() - 2) != batch)
    return broken("batch dimensions differ: lhs ", formatShape(batch),
                  ", rhs ", formatShape(Shape(rhs.begin(), rhs.end() - 2)));
  int64_t m = lhs[lhsRank - (transposeLhs ? 1 : 2)];
  int64_t lhsK = lhs[lhsRank - (transposeLhs ? 2 : 1)];
  int64_t rhsK = rhs[rhsRank - (transposeRhs ? 1 : 2)];
  int64_t n = rhs[rhsRank - (transposeRhs ? 2 : 1)];
  if (lhsK != rhsK)
    return broken("contraction dimensions differ: lhs has K = ", lhsK,
                  ", rhs has K = ", rhsK, " (transpose_lhs = ", transposeLhs,
                  ", transpose_rhs = ", transposeRhs, ")");
  result = batch;
  result.push_back(m);
  result.push_back(n);
  return Status::ok();
}

Status zcc::runtime::attentionShapes(const Shape &q, const Shape &k,
                                     const Shape &v, double scale,
                                     Shape &result, Shape &logsumexp) {
  size_t rank = q.size();
  if (rank < 2)
    return broken("query must have rank >= 2 ([B..., S, D]), got ",
                  formatShape(q));
  if (k.size() != rank || v.size() != rank)
    return broken("query, key and value must have one rank, got ",
                  formatShape(q), ", ", formatShape(k), " and ",
                  formatShape(v));
  Shape batch(q.begin(), q.end() - 2);
  Shape kvBatch(k.begin(), k.end() - 2);
  if (Shape(v.begin(), v.end() - 2) != kvBatch)
    return broken("key and value must have one batch, got ", formatShape(k),
                  " and ", formatShape(v));
  // Grouped-query attention: the heads (the last batch dimension) of key
  // and value may divide the query's, each serving a run of query heads.
  bool grouped = rank >= 3 && k[rank - 3] >= 1 &&
                 q[rank - 3] % k[rank - 3] == 0 &&
                 Shape(q.begin(), q.end() - 3) ==
                     Shape(k.begin(), k.end() - 3);
  if (kvBatch != batch && !grouped)
    return broken("batch dimensions differ: query ", formatShape(q), ", key ",
                  formatShape(k), ", value ", formatShape(v),
                  " (key and value may have fewer heads, a divisor of the "
                  "query's, in the dimension before the sequence)");
  int64_t s = q[rank - 2], d = q[rank - 1];
  int64_t t = k[rank - 2], dv = v[rank - 1];
  if (k[rank - 1] != d)
    return broken("query and key must have one head size, got ",
                  formatShape(q), " and ", formatShape(k));
  if (v[rank - 2] != t)
    return broken("key and value must have one length, got ", formatShape(k),
                  " and ", formatShape(v));
  if (s < 1 || t < 1 || d < 1 || dv < 1)
    return broken("sequence lengths and head sizes must be at least 1, got ",
                  formatShape(q), ", ", formatShape(k), " and ",
                  formatShape(v));
  if (!std::isfinite(scale)) {
    std::ostringstream os;
    os << scale;
    return broken("scale must be finite, got ", os.str());
  }
  logsumexp = batch;
  logsumexp.push_back(s);
  result = logsumexp;
  result.push_back(dv);
  return Status::ok();
}

Status zcc::runtime::conv2dShape(const Shape &input, const Shape &weight,
                                 const std::vector<int64_t> &stride,
                                 const std::vector<int64_t> &padding,
                                 const std::vector<int64_t> &dilation,
                                 int64_t groups, Shape &result) {
  if (input.size() != 4 || weight.size() != 4)
    return broken("input must be [N, C, H, W] and weight [O, C / groups, KH, "
                  "KW], got ", formatShape(input), " and ", formatShape(weight));
  if (stride.size() != 2 || padding.size() != 2 || dilation.size() != 2)
    return broken("stride, padding and dilation must have 2 numbers each");
  for (int d = 0; d < 2; ++d)
    if (stride[d] < 1 || dilation[d] < 1 || padding[d] < 0)
      return broken("strides and dilations must be at least 1 and paddings "
                    "at least 0");
  if (groups < 1 || input[1] % groups != 0 || weight[0] % groups != 0 ||
      weight[1] * groups != input[1])
    return broken("groups ", groups, " must divide the input's ", input[1],
                  " channels and the weight's ", weight[0],
                  " outputs, with weight [O, C / groups, KH, KW], got ",
                  formatShape(weight));
  for (int64_t n : input)
    if (n < 1)
      return broken("input sizes must be at least 1, got ", formatShape(input));
  result = {input[0], weight[0], 0, 0};
  for (int d = 0; d < 2; ++d) {
    int64_t span = dilation[d] * (weight[2 + d] - 1) + 1;
    int64_t padded = input[2 + d] + 2 * padding[d];
    if (weight[2 + d] < 1 || span > padded)
      return broken("the kernel ", formatShape(weight), " (dilated) does not ",
                    "fit the padded input ", formatShape(input));
    result[2 + d] = (padded - span) / stride[d] + 1;
  }
  return Status::ok();
}

Status zcc::runtime::pool2dShape(const Shape &input,
                                 const std::vector<int64_t> &kernel,
                                 const std::vector<int64_t> &stride,
                                 const std::vector<int64_t> &padding,
                                 const std::vector<int64_t> &dilation,
                                 bool ceilMode, Shape &result) {
  if (input.size() != 4)
    return broken("input must be [N, C, H, W], got ", formatShape(input));
  if (kernel.size() != 2)
    return broken("kernel_size must have 2 numbers");
  for (int d = 0; d < 2; ++d)
    if (kernel[d] < 1 || padding.size() == 2 && 2 * padding[d] > kernel[d])
      return broken("kernel sizes must be at least 1 and paddings at most "
                    "half the kernel");
  Shape weight = {input[1], 1, kernel[0], kernel[1]};
  ZRT_RETURN_IF_ERROR(conv2dShape(input, weight, stride, padding, dilation,
                                  input[1], result));
  // PyTorch's ceil_mode: one more window where the floor left input over,
  // unless it would start in the right padding.
  for (int d = 0; ceilMode && d < 2; ++d) {
    int64_t span = dilation[d] * (kernel[d] - 1) + 1;
    int64_t over = (input[2 + d] + 2 * padding[d] - span) % stride[d];
    if (over != 0 && result[2 + d] * stride[d] < input[2 + d] + padding[d])
      ++result[2 + d];
  }
  return Status::ok();
}

Status zcc::runtime::attentionMaskRule(const Shape &mask, const Shape &query,
                                       const Shape &key) {
  size_t rank = query.size();
  Shape scores(query.begin(), query.end() - 1);
  scores.push_back(key[rank - 2]);
  bool fits = mask.size() == rank;
  for (size_t d = 0; fits && d < rank; ++d)
    fits = mask[d] == scores[d] || mask[d] == 1;
  if (!fits)
    return broken("mask ", formatShape(mask),
                  " does not broadcast to the scores ", formatShape(scores),
                  " ([B..., S, T], each dimension equal or 1)");
  return Status::ok();
}

Status zcc::runtime::axisRule(const Shape &operand, int64_t axis,
                              const char *name) {
  int64_t rank = static_cast<int64_t>(operand.size());
  if (axis < -rank || axis >= rank)
    return broken(name, " ", axis, " is out of range for rank ", rank);
  return Status::ok();
}

Status zcc::runtime::normRule(const Shape &operand,
                              const std::vector<const char *> &roles,
                              const std::vector<Shape> &affine,
                              double epsilon) {
  if (operand.empty())
    return broken("operand must have rank >= 1, got ", formatShape(operand));
  for (size_t i = 0; i < affine.size() && i < roles.size(); ++i)
    if (affine[i] != Shape{operand.back()})
      return broken(roles[i], " must have shape [", operand.back(),
                    "] (the operand's last dimension), got ",
                    formatShape(affine[i]));
  if (!(std::isfinite(epsilon) && epsilon > 0)) {
    std::ostringstream os;
    os << epsilon;
    return broken("epsilon must be > 0, got ", os.str());
  }
  return Status::ok();
}

Status zcc::runtime::embeddingShape(const Shape &table, const Shape &indices,
                                    Shape &rows, const char *tableRole) {
  if (table.size() != 2)
    return broken(tableRole, " must have rank 2 ([vocabulary, dim]), got ",
                  formatShape(table));
  rows = indices;
  rows.push_back(table[1]);
  return Status::ok();
}

Status zcc::runtime::logitsLabelsRule(const Shape &logits,
                                      const Shape &labels) {
  if (logits.empty())
    return broken("logits must have a class dimension, got ",
                  formatShape(logits));
  Shape rows(logits.begin(), logits.end() - 1);
  if (labels != rows)
    return broken("labels shape ", formatShape(labels),
                  " must equal the logits shape without its class dimension, ",
                  formatShape(rows));
  return Status::ok();
}
