//===- CpuKernels.cpp - reference kernels of the CPU executor -------------===//
//
// Straightforward loops over host memory with the numerics of
// docs/zt-dialect.md; matmul goes to BLAS. Every launch has passed
// checkLaunch, so operand counts, shapes and parameters are trusted here:
// the only data checked is what the plan cannot know (embedding indices and
// labels). Reductions run in a fixed order, so results never depend on
// buffer addresses or threads.
//
//===----------------------------------------------------------------------===//

#include "CpuKernels.h"

#include "zcc/Runtime/Philox.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

using namespace zcc::runtime;
using namespace zcc::runtime::cpu;

namespace {

/// The highest rank a kernel indexes; checkLaunch rejects higher ranks
/// (kMaxKernelRank in KernelRules.cpp), so per-dimension arrays of this
/// size never overflow.
constexpr int kMaxRank = kMaxKernelRank;

//===----------------------------------------------------------------------===//
// Operand access and index arithmetic
//===----------------------------------------------------------------------===//

template <typename E> const E *inputData(const KernelCall &call, size_t i) {
  return static_cast<const E *>(call.inputs[i].data);
}
template <typename E> E *outputData(const KernelCall &call, size_t i) {
  return static_cast<E *>(call.outputs[i].data);
}
const TensorType &inputType(const KernelCall &call, size_t i) {
  return *call.inputs[i].type;
}
const TensorType &outputType(const KernelCall &call, size_t i) {
  return *call.outputs[i].type;
}

int rankOf(const TensorType &type) { return static_cast<int>(type.rank()); }

/// Calls `fn(offsetA, offsetB)` for every index of `shape` in row-major
/// order, where offsetX is the dot product of the index with `stridesX`.
/// The innermost dimension is a plain loop; the outer ones advance an
/// odometer, so no division is needed per element.
template <typename Fn>
void forEachIndex(int rank, const int64_t *shape, const int64_t *stridesA,
                  const int64_t *stridesB, Fn &&fn) {
  for (int d = 0; d < rank; ++d)
    if (shape[d] == 0)
      return;
  if (rank == 0) {
    fn(int64_t(0), int64_t(0));
    return;
  }
  int64_t index[kMaxRank] = {};
  int64_t offsetA = 0, offsetB = 0;
  const int last = rank - 1;
  const int64_t innerSize = shape[last];
  const int64_t innerA = stridesA[last], innerB = stridesB[last];
  while (true) {
    for (int64_t k = 0; k < innerSize; ++k)
      fn(offsetA + k * innerA, offsetB + k * innerB);
    int d = last - 1;
    for (; d >= 0; --d) {
      offsetA += stridesA[d];
      offsetB += stridesB[d];
      if (++index[d] < shape[d])
        break;
      offsetA -= shape[d] * stridesA[d];
      offsetB -= shape[d] * stridesB[d];
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

/// Runs `fn(E{})` with E the C++ type of `dtype`'s elements: T for float
/// tensors (the executor's precision), the stored integer type otherwise.
template <typename T, typename Fn> void withElementType(DType dtype, Fn &&fn) {
  switch (dtype) {
  case DType::F32:
    fn(T{});
    return;
  case DType::I32:
    fn(int32_t{});
    return;
  case DType::I64:
    fn(int64_t{});
    return;
  }
}

/// Reads an integer index tensor (i32 or i64) at `position`.
int64_t readIndex(const void *data, DType dtype, int64_t position) {
  if (dtype == DType::I32)
    return static_cast<const int32_t *>(data)[position];
  return static_cast<const int64_t *>(data)[position];
}

Status indexOutOfRange(const KernelCall &call, const char *what,
                       const TensorType &indices, int64_t position,
                       int64_t value, int64_t limit) {
  return makeError(StatusCode::ExecutionError, kernelName(call.id), ": ", what,
                   " ", value, " at position ",
                   formatIndexPosition(indices.shape, position),
                   " is out of range [0, ", limit, ")");
}

/// `axis` split into the sizes before it, along it and after it.
struct AxisLayout {
  int64_t outer = 1, size = 1, inner = 1;
};

AxisLayout axisLayout(const TensorType &type, int64_t axis) {
  int64_t rank = type.rank();
  size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  AxisLayout layout;
  layout.outer = shapeProduct(type.shape, 0, a);
  layout.size = type.shape[a];
  layout.inner = shapeProduct(type.shape, a + 1, type.shape.size());
  return layout;
}

//===----------------------------------------------------------------------===//
// Scalar functions
//===----------------------------------------------------------------------===//

template <typename T> T sigmoidOf(T x) {
  // e^x / (1 + e^x) for negative x: e^-x would overflow.
  if (x < T(0)) {
    T e = std::exp(x);
    return e / (T(1) + e);
  }
  return T(1) / (T(1) + std::exp(-x));
}

template <typename T>
constexpr T kGeluC = T(0.79788456080286535587989211986876);
template <typename T> constexpr T kGeluA = T(0.044715);

template <typename T> T geluOf(T x) {
  T inner = kGeluC<T> * (x + kGeluA<T> * x * x * x);
  return T(0.5) * x * (T(1) + std::tanh(inner));
}

template <typename T> T geluDerivative(T x) {
  T t = std::tanh(kGeluC<T> * (x + kGeluA<T> * x * x * x));
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * kGeluC<T> *
                                   (T(1) + T(3) * kGeluA<T> * x * x);
}

template <typename T> T reluOf(T x) {
  if (std::isnan(x))
    return x;
  return x > T(0) ? x : T(0);
}

//===----------------------------------------------------------------------===//
// Elementwise kernels (an output may be an input's very buffer: each
// element is read before it is written)
//===----------------------------------------------------------------------===//

template <typename T, typename Fn>
void unaryKernel(const KernelCall &call, Fn fn) {
  const T *x = inputData<T>(call, 0);
  T *y = outputData<T>(call, 0);
  int64_t n = outputType(call, 0).numElements();
  for (int64_t i = 0; i < n; ++i)
    y[i] = fn(x[i]);
}

template <typename T, typename Fn>
void binaryKernel(const KernelCall &call, Fn fn) {
  const T *a = inputData<T>(call, 0);
  const T *b = inputData<T>(call, 1);
  T *y = outputData<T>(call, 0);
  int64_t n = outputType(call, 0).numElements();
  for (int64_t i = 0; i < n; ++i)
    y[i] = fn(a[i], b[i]);
}

template <typename T> void constantKernel(const KernelCall &call) {
  double value = paramFloat(*call.launch, "value");
  const TensorType &type = outputType(call, 0);
  int64_t n = type.numElements();
  // checkLaunch bounds the value to the element type's range.
  withElementType<T>(type.dtype, [&](auto tag) {
    using E = decltype(tag);
    std::fill_n(outputData<E>(call, 0), n, static_cast<E>(value));
  });
}

template <typename T> void causalMaskKernel(const KernelCall &call) {
  int64_t size = outputType(call, 0).shape[0];
  T *y = outputData<T>(call, 0);
  const T minusInf = -std::numeric_limits<T>::infinity();
  for (int64_t q = 0; q < size; ++q)
    for (int64_t k = 0; k < size; ++k)
      y[q * size + k] = k <= q ? T(0) : minusInf;
}

//===----------------------------------------------------------------------===//
// Shape kernels: strided copies over any element type
//===----------------------------------------------------------------------===//

/// dst[dstOffset + index . dstStrides] = src[srcOffset + index . srcStrides]
/// for every index of `shape`.
template <typename T>
void stridedCopy(DType dtype, int rank, const int64_t *shape, const void *src,
                 int64_t srcOffset, const int64_t *srcStrides, void *dst,
                 int64_t dstOffset, const int64_t *dstStrides) {
  withElementType<T>(dtype, [&](auto tag) {
    using E = decltype(tag);
    const E *from = static_cast<const E *>(src) + srcOffset;
    E *to = static_cast<E *>(dst) + dstOffset;
    forEachIndex(rank, shape, srcStrides, dstStrides,
                 [&](int64_t s, int64_t d) { to[d] = from[s]; });
  });
}

template <typename T> void broadcastKernel(const KernelCall &call) {
  const TensorType &operand = inputType(call, 0);
  const TensorType &result = outputType(call, 0);
  const std::vector<int64_t> &dims =
      paramInts(*call.launch, "broadcast_dimensions");
  int64_t operandStrides[kMaxRank], resultStrides[kMaxRank];
  rowMajorStrides(operand.shape, operandStrides);
  rowMajorStrides(result.shape, resultStrides);
  // A result dimension reads the operand dimension mapped to it, unless that
  // has size 1 (repeated) or there is none (new): stride 0.
  int64_t srcStrides[kMaxRank] = {};
  for (size_t i = 0; i < dims.size(); ++i)
    if (operand.shape[i] != 1)
      srcStrides[dims[i]] = operandStrides[i];
  stridedCopy<T>(result.dtype, rankOf(result), result.shape.data(),
                 call.inputs[0].data, 0, srcStrides, call.outputs[0].data, 0,
                 resultStrides);
}

template <typename T> void transposeKernel(const KernelCall &call) {
  const TensorType &operand = inputType(call, 0);
  const TensorType &result = outputType(call, 0);
  const std::vector<int64_t> &perm = paramInts(*call.launch, "permutation");
  int64_t operandStrides[kMaxRank], resultStrides[kMaxRank],
      srcStrides[kMaxRank];
  rowMajorStrides(operand.shape, operandStrides);
  rowMajorStrides(result.shape, resultStrides);
  for (size_t i = 0; i < perm.size(); ++i)
    srcStrides[i] = operandStrides[perm[i]];
  stridedCopy<T>(result.dtype, rankOf(result), result.shape.data(),
                 call.inputs[0].data, 0, srcStrides, call.outputs[0].data, 0,
                 resultStrides);
}

/// The strides and start offset that the slice ranges select in `whole`.
void sliceStrides(const Launch &launch, const TensorType &whole,
                  int64_t *strides, int64_t &offset) {
  const std::vector<int64_t> &starts = paramInts(launch, "start_indices");
  const std::vector<int64_t> &steps = paramInts(launch, "strides");
  int64_t wholeStrides[kMaxRank];
  rowMajorStrides(whole.shape, wholeStrides);
  offset = 0;
  for (size_t d = 0; d < whole.shape.size(); ++d) {
    // A step of at least the size takes one element at most: clamping it
    // keeps the stride product from overflowing.
    int64_t step = std::min(steps[d], std::max<int64_t>(whole.shape[d], 1));
    strides[d] = wholeStrides[d] * step;
    offset += starts[d] * wholeStrides[d];
  }
}

template <typename T> void sliceKernel(const KernelCall &call) {
  const TensorType &operand = inputType(call, 0);
  const TensorType &result = outputType(call, 0);
  int64_t srcStrides[kMaxRank], resultStrides[kMaxRank], offset = 0;
  sliceStrides(*call.launch, operand, srcStrides, offset);
  rowMajorStrides(result.shape, resultStrides);
  stridedCopy<T>(result.dtype, rankOf(result), result.shape.data(),
                 call.inputs[0].data, offset, srcStrides, call.outputs[0].data,
                 0, resultStrides);
}

template <typename T> void sliceGradKernel(const KernelCall &call) {
  const TensorType &grad = inputType(call, 0);
  const TensorType &result = outputType(call, 0);
  std::fill_n(outputData<T>(call, 0), result.numElements(), T(0));
  int64_t dstStrides[kMaxRank], gradStrides[kMaxRank], offset = 0;
  sliceStrides(*call.launch, result, dstStrides, offset);
  rowMajorStrides(grad.shape, gradStrides);
  stridedCopy<T>(result.dtype, rankOf(grad), grad.shape.data(),
                 call.inputs[0].data, 0, gradStrides, call.outputs[0].data,
                 offset, dstStrides);
}

template <typename T> void concatKernel(const KernelCall &call) {
  const TensorType &result = outputType(call, 0);
  size_t dim = static_cast<size_t>(paramInt(*call.launch, "dimension"));
  // Each operand contributes one contiguous block per index of the
  // dimensions before `dim`.
  int64_t outer = shapeProduct(result.shape, 0, dim);
  int64_t inner = shapeProduct(result.shape, dim + 1, result.shape.size());
  int64_t resultBlock = result.shape[dim] * inner;
  withElementType<T>(result.dtype, [&](auto tag) {
    using E = decltype(tag);
    E *y = outputData<E>(call, 0);
    int64_t offset = 0;
    for (size_t k = 0; k < call.numInputs; ++k) {
      const E *x = inputData<E>(call, k);
      int64_t block = inputType(call, k).shape[dim] * inner;
      for (int64_t o = 0; o < outer; ++o)
        std::copy_n(x + o * block, block, y + o * resultBlock + offset);
      offset += block;
    }
  });
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Marks the reduced dimensions and gives, per operand dimension, its
/// stride in the reduced result (0 for a reduced one). Returns the number
/// of operand elements per result element.
int64_t reductionStrides(const Launch &launch, const TensorType &operand,
                         bool *reduced, int64_t *resultStrides) {
  const std::vector<int64_t> &dims = paramInts(launch, "dims");
  int rank = rankOf(operand);
  std::fill_n(reduced, rank, false);
  for (int64_t d : dims)
    reduced[d] = true;
  int64_t stride = 1, count = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (reduced[d]) {
      resultStrides[d] = 0;
      count *= operand.shape[d];
      continue;
    }
    resultStrides[d] = stride;
    stride *= operand.shape[d];
  }
  return count;
}

enum class ReduceKind { Sum, Mean, Max };

template <typename T>
void reduceKernel(const KernelCall &call, ReduceKind kind) {
  const TensorType &operand = inputType(call, 0);
  const T *x = inputData<T>(call, 0);
  T *y = outputData<T>(call, 0);
  int64_t n = outputType(call, 0).numElements();
  bool reduced[kMaxRank];
  int64_t operandStrides[kMaxRank], resultStrides[kMaxRank];
  rowMajorStrides(operand.shape, operandStrides);
  int64_t count =
      reductionStrides(*call.launch, operand, reduced, resultStrides);
  // One pass over the operand in row-major order: each result element sees
  // its operands in that order, whatever the reduced dimensions.
  if (kind == ReduceKind::Max) {
    std::fill_n(y, n, -std::numeric_limits<T>::infinity());
    forEachIndex(rankOf(operand), operand.shape.data(), operandStrides,
                 resultStrides, [&](int64_t i, int64_t o) {
                   T v = x[i];
                   // NaN propagates: once the maximum is NaN it stays NaN.
                   if (v > y[o] || std::isnan(v))
                     y[o] = std::isnan(y[o]) ? y[o] : v;
                 });
    return;
  }
  std::fill_n(y, n, T(0));
  forEachIndex(rankOf(operand), operand.shape.data(), operandStrides,
               resultStrides, [&](int64_t i, int64_t o) { y[o] += x[i]; });
  if (kind == ReduceKind::Mean) {
    T divisor = static_cast<T>(count);
    for (int64_t o = 0; o < n; ++o)
      y[o] /= divisor;
  }
}

/// dy goes to the first maximal element (the first NaN, if any) of each
/// reduced row in row-major order.
template <typename T> void maxGradKernel(const KernelCall &call) {
  const TensorType &operand = inputType(call, 0);
  const T *x = inputData<T>(call, 0);
  const T *dy = inputData<T>(call, 1);
  T *dx = outputData<T>(call, 0);
  std::fill_n(dx, operand.numElements(), T(0));
  bool reduced[kMaxRank];
  int64_t operandStrides[kMaxRank], resultStrides[kMaxRank];
  rowMajorStrides(operand.shape, operandStrides);
  reductionStrides(*call.launch, operand, reduced, resultStrides);
  // Split the operand's dimensions into kept (one dy element each) and
  // reduced (one row).
  int64_t keptShape[kMaxRank], keptStrides[kMaxRank], keptGradStrides[kMaxRank];
  int64_t rowShape[kMaxRank], rowStrides[kMaxRank];
  int keptRank = 0, rowRank = 0;
  for (int d = 0; d < rankOf(operand); ++d) {
    if (reduced[d]) {
      rowShape[rowRank] = operand.shape[d];
      rowStrides[rowRank++] = operandStrides[d];
    } else {
      keptShape[keptRank] = operand.shape[d];
      keptStrides[keptRank] = operandStrides[d];
      keptGradStrides[keptRank++] = resultStrides[d];
    }
  }
  forEachIndex(keptRank, keptShape, keptStrides, keptGradStrides,
               [&](int64_t base, int64_t o) {
                 int64_t best = -1;
                 T bestValue = T(0);
                 forEachIndex(rowRank, rowShape, rowStrides, rowStrides,
                              [&](int64_t i, int64_t) {
                                T v = x[base + i];
                                if (best < 0 ||
                                    (!std::isnan(bestValue) &&
                                     (v > bestValue || std::isnan(v)))) {
                                  best = i;
                                  bestValue = v;
                                }
                              });
                 if (best >= 0)
                   dx[base + best] = dy[o];
               });
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

template <typename T>
void gemm(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
          const T *a, int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc) {
  CBLAS_TRANSPOSE ta = transposeA ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE tb = transposeB ? CblasTrans : CblasNoTrans;
  // checkLaunch keeps every size below 2^31.
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b,
                static_cast<int>(ldb), 0.0f, c, static_cast<int>(ldc));
  else
    cblas_dgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0, a, static_cast<int>(lda), b,
                static_cast<int>(ldb), 0.0, c, static_cast<int>(ldc));
}

template <typename T> void matmulKernel(const KernelCall &call) {
  const TensorType &lhs = inputType(call, 0);
  const TensorType &rhs = inputType(call, 1);
  bool transposeLhs = call.launch->hasUnit("transpose_lhs");
  bool transposeRhs = call.launch->hasUnit("transpose_rhs");
  size_t lhsRank = lhs.shape.size(), rhsRank = rhs.shape.size();
  int64_t m = lhs.shape[lhsRank - (transposeLhs ? 1 : 2)];
  int64_t k = lhs.shape[lhsRank - (transposeLhs ? 2 : 1)];
  int64_t n = rhs.shape[rhsRank - (transposeRhs ? 2 : 1)];
  int64_t batch = shapeProduct(lhs.shape, 0, lhsRank - 2);
  const T *a = inputData<T>(call, 0);
  const T *b = inputData<T>(call, 1);
  T *c = outputData<T>(call, 0);
  if (batch == 0 || m == 0 || n == 0)
    return;
  if (k == 0) { // an empty sum; BLAS rejects a zero leading dimension
    std::fill_n(c, batch * m * n, T(0));
    return;
  }
  // Leading dimensions are the stored row lengths.
  int64_t lda = lhs.shape[lhsRank - 1];
  int64_t ldb = rhs.shape[rhsRank - 1];
  bool sharedRhs = rhsRank == 2;
  // A weight shared by every batch entry against an untransposed lhs is one
  // [batch * M, K] x [K, N] product.
  if (sharedRhs && !transposeLhs && batch * m <= INT_MAX) {
    gemm(false, transposeRhs, batch * m, n, k, a, lda, b, ldb, c, n);
    return;
  }
  int64_t rhsStride = sharedRhs ? 0 : k * n;
  for (int64_t i = 0; i < batch; ++i)
    gemm(transposeLhs, transposeRhs, m, n, k, a + i * m * k, lda,
         b + i * rhsStride, ldb, c + i * m * n, n);
}

//===----------------------------------------------------------------------===//
// Softmax family (along an axis)
//===----------------------------------------------------------------------===//

/// Calls `fn(base, stride, size)` for every line along the launch's `axis`.
template <typename Fn>
void forEachAxisLine(const KernelCall &call, const TensorType &type, Fn fn) {
  AxisLayout layout = axisLayout(type, paramInt(*call.launch, "axis"));
  for (int64_t o = 0; o < layout.outer; ++o)
    for (int64_t i = 0; i < layout.inner; ++i)
      fn(o * layout.size * layout.inner + i, layout.inner, layout.size);
}

/// The line's maximum, ignoring NaN (a NaN reaches the sum instead).
template <typename T>
T lineMax(const T *x, int64_t base, int64_t stride, int64_t size) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < size; ++j)
    if (x[base + j * stride] > m)
      m = x[base + j * stride];
  return m;
}

template <typename T> void softmaxKernel(const KernelCall &call, bool isLog) {
  const T *x = inputData<T>(call, 0);
  T *y = outputData<T>(call, 0);
  forEachAxisLine(call, inputType(call, 0),
                  [&](int64_t base, int64_t stride, int64_t size) {
                    T m = lineMax(x, base, stride, size);
                    T sum = T(0);
                    for (int64_t j = 0; j < size; ++j) {
                      T e = std::exp(x[base + j * stride] - m);
                      if (!isLog)
                        y[base + j * stride] = e;
                      sum += e;
                    }
                    if (isLog) {
                      T logSum = std::log(sum);
                      for (int64_t j = 0; j < size; ++j)
                        y[base + j * stride] =
                            x[base + j * stride] - m - logSum;
                      return;
                    }
                    for (int64_t j = 0; j < size; ++j)
                      y[base + j * stride] /= sum;
                  });
}

template <typename T>
void softmaxGradKernel(const KernelCall &call, bool isLog) {
  const T *y = inputData<T>(call, 0);
  const T *dy = inputData<T>(call, 1);
  T *dx = outputData<T>(call, 0);
  forEachAxisLine(call, inputType(call, 0),
                  [&](int64_t base, int64_t stride, int64_t size) {
                    T sum = T(0);
                    for (int64_t j = 0; j < size; ++j) {
                      int64_t i = base + j * stride;
                      sum += isLog ? dy[i] : dy[i] * y[i];
                    }
                    for (int64_t j = 0; j < size; ++j) {
                      int64_t i = base + j * stride;
                      dx[i] = isLog ? dy[i] - std::exp(y[i]) * sum
                                    : y[i] * (dy[i] - sum);
                    }
                  });
}

//===----------------------------------------------------------------------===//
// Normalisation over the last dimension
//===----------------------------------------------------------------------===//

/// Rows of the last dimension: (count, width); width 0 means no elements.
struct Rows {
  int64_t count = 0, width = 0;
};

Rows lastDimRows(const TensorType &type) {
  Rows rows;
  rows.width = type.shape.back();
  rows.count = rows.width ? type.numElements() / rows.width : 0;
  return rows;
}

template <typename T> struct RowStats { T mean, rstd; };

template <typename T>
RowStats<T> layerNormStats(const T *x, int64_t width, T epsilon) {
  T sum = T(0);
  for (int64_t j = 0; j < width; ++j)
    sum += x[j];
  T mean = sum / static_cast<T>(width);
  T sq = T(0);
  for (int64_t j = 0; j < width; ++j)
    sq += (x[j] - mean) * (x[j] - mean);
  T var = sq / static_cast<T>(width);
  return {mean, T(1) / std::sqrt(var + epsilon)};
}

/// 1 / sqrt(mean(x^2) + epsilon).
template <typename T> T rmsNormScale(const T *x, int64_t width, T epsilon) {
  T sq = T(0);
  for (int64_t j = 0; j < width; ++j)
    sq += x[j] * x[j];
  return T(1) / std::sqrt(sq / static_cast<T>(width) + epsilon);
}

template <typename T> void layerNormKernel(const KernelCall &call) {
  Rows rows = lastDimRows(inputType(call, 0));
  const T *x = inputData<T>(call, 0);
  const T *gamma = inputData<T>(call, 1);
  const T *beta = inputData<T>(call, 2);
  T *y = outputData<T>(call, 0);
  T epsilon = static_cast<T>(paramFloat(*call.launch, "epsilon"));
  for (int64_t r = 0; r < rows.count; ++r) {
    const T *xr = x + r * rows.width;
    T *yr = y + r * rows.width;
    RowStats<T> stats = layerNormStats(xr, rows.width, epsilon);
    for (int64_t j = 0; j < rows.width; ++j)
      yr[j] = (xr[j] - stats.mean) * stats.rstd * gamma[j] + beta[j];
  }
}

template <typename T> void rmsNormKernel(const KernelCall &call) {
  Rows rows = lastDimRows(inputType(call, 0));
  const T *x = inputData<T>(call, 0);
  const T *gamma = inputData<T>(call, 1);
  T *y = outputData<T>(call, 0);
  T epsilon = static_cast<T>(paramFloat(*call.launch, "epsilon"));
  for (int64_t r = 0; r < rows.count; ++r) {
    const T *xr = x + r * rows.width;
    T *yr = y + r * rows.width;
    T scale = rmsNormScale(xr, rows.width, epsilon);
    for (int64_t j = 0; j < rows.width; ++j)
      yr[j] = xr[j] * scale * gamma[j];
  }
}

/// With xhat = (x - mu) rstd and g = dy gamma, per row:
/// dx = rstd (g - mean(g) - xhat mean(g xhat)); dgamma and dbeta sum
/// dy xhat and dy over the rows, in row order.
template <typename T> void layerNormGradKernel(const KernelCall &call) {
  Rows rows = lastDimRows(inputType(call, 0));
  const T *x = inputData<T>(call, 0);
  const T *gamma = inputData<T>(call, 1);
  const T *dy = inputData<T>(call, 2);
  T *dx = outputData<T>(call, 0);
  T *dgamma = outputData<T>(call, 1);
  T *dbeta = outputData<T>(call, 2);
  T epsilon = static_cast<T>(paramFloat(*call.launch, "epsilon"));
  std::fill_n(dgamma, rows.width, T(0));
  std::fill_n(dbeta, rows.width, T(0));
  T width = static_cast<T>(rows.width);
  for (int64_t r = 0; r < rows.count; ++r) {
    const T *xr = x + r * rows.width;
    const T *dyr = dy + r * rows.width;
    T *dxr = dx + r * rows.width;
    RowStats<T> stats = layerNormStats(xr, rows.width, epsilon);
    T sumG = T(0), sumGXhat = T(0);
    for (int64_t j = 0; j < rows.width; ++j) {
      T xhat = (xr[j] - stats.mean) * stats.rstd;
      T g = dyr[j] * gamma[j];
      sumG += g;
      sumGXhat += g * xhat;
      dgamma[j] += dyr[j] * xhat;
      dbeta[j] += dyr[j];
    }
    T meanG = sumG / width, meanGXhat = sumGXhat / width;
    for (int64_t j = 0; j < rows.width; ++j) {
      T xhat = (xr[j] - stats.mean) * stats.rstd;
      T g = dyr[j] * gamma[j];
      dxr[j] = stats.rstd * (g - meanG - xhat * meanGXhat);
    }
  }
}

/// With r = 1/sqrt(mean(x^2) + eps) and g = dy gamma, per row:
/// dx = r g - x r^3 mean(g x); dgamma sums dy x r over the rows.
template <typename T> void rmsNormGradKernel(const KernelCall &call) {
  Rows rows = lastDimRows(inputType(call, 0));
  const T *x = inputData<T>(call, 0);
  const T *gamma = inputData<T>(call, 1);
  const T *dy = inputData<T>(call, 2);
  T *dx = outputData<T>(call, 0);
  T *dgamma = outputData<T>(call, 1);
  T epsilon = static_cast<T>(paramFloat(*call.launch, "epsilon"));
  std::fill_n(dgamma, rows.width, T(0));
  T width = static_cast<T>(rows.width);
  for (int64_t r = 0; r < rows.count; ++r) {
    const T *xr = x + r * rows.width;
    const T *dyr = dy + r * rows.width;
    T *dxr = dx + r * rows.width;
    T scale = rmsNormScale(xr, rows.width, epsilon);
    T sumGX = T(0);
    for (int64_t j = 0; j < rows.width; ++j) {
      sumGX += dyr[j] * gamma[j] * xr[j];
      dgamma[j] += dyr[j] * xr[j] * scale;
    }
    T correction = scale * scale * scale * (sumGX / width);
    for (int64_t j = 0; j < rows.width; ++j)
      dxr[j] = scale * dyr[j] * gamma[j] - xr[j] * correction;
  }
}

//===----------------------------------------------------------------------===//
// Lookup and losses: the kernels that check data
//===----------------------------------------------------------------------===//

template <typename T> Status embeddingKernel(const KernelCall &call) {
  const TensorType &table = inputType(call, 0);
  const TensorType &indices = inputType(call, 1);
  int64_t vocabulary = table.shape[0], width = table.shape[1];
  const T *rowsData = inputData<T>(call, 0);
  T *y = outputData<T>(call, 0);
  int64_t positions = indices.numElements();
  for (int64_t p = 0; p < positions; ++p) {
    int64_t index = readIndex(call.inputs[1].data, indices.dtype, p);
    if (index < 0 || index >= vocabulary)
      return indexOutOfRange(call, "index", indices, p, index, vocabulary);
    std::copy_n(rowsData + index * width, width, y + p * width);
  }
  return Status::ok();
}

/// Rows added into a zero table in position order: the same sums, in the
/// same order, on every run.
template <typename T> Status embeddingGradKernel(const KernelCall &call) {
  const TensorType &indices = inputType(call, 0);
  const TensorType &result = outputType(call, 0);
  int64_t vocabulary = result.shape[0], width = result.shape[1];
  const T *dy = inputData<T>(call, 1);
  T *table = outputData<T>(call, 0);
  std::fill_n(table, result.numElements(), T(0));
  int64_t positions = indices.numElements();
  for (int64_t p = 0; p < positions; ++p) {
    int64_t index = readIndex(call.inputs[0].data, indices.dtype, p);
    if (index < 0 || index >= vocabulary)
      return indexOutOfRange(call, "index", indices, p, index, vocabulary);
    T *row = table + index * width;
    const T *grad = dy + p * width;
    for (int64_t j = 0; j < width; ++j)
      row[j] += grad[j];
  }
  return Status::ok();
}

/// A contiguous row's maximum and its sum of exp(x - max): softmax is
/// exp(x - max) / sum, logsumexp is max + log(sum).
template <typename T> struct RowExpSum { T max, sum; };

template <typename T> RowExpSum<T> rowExpSum(const T *row, int64_t size) {
  RowExpSum<T> stats{lineMax(row, 0, 1, size), T(0)};
  for (int64_t c = 0; c < size; ++c)
    stats.sum += std::exp(row[c] - stats.max);
  return stats;
}

template <typename T> Status softmaxCrossEntropyKernel(const KernelCall &call) {
  const TensorType &logits = inputType(call, 0);
  const TensorType &labels = inputType(call, 1);
  int64_t classes = logits.shape.back();
  int64_t rows = labels.numElements();
  const T *x = inputData<T>(call, 0);
  T total = T(0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t label = readIndex(call.inputs[1].data, labels.dtype, r);
    if (label < 0 || label >= classes)
      return indexOutOfRange(call, "label", labels, r, label, classes);
    const T *row = x + r * classes;
    RowExpSum<T> stats = rowExpSum(row, classes);
    total += stats.max + std::log(stats.sum) - row[label];
  }
  *outputData<T>(call, 0) = total / static_cast<T>(rows);
  return Status::ok();
}

template <typename T>
Status softmaxCrossEntropyGradKernel(const KernelCall &call) {
  const TensorType &logits = inputType(call, 0);
  const TensorType &labels = inputType(call, 1);
  int64_t classes = logits.shape.back();
  int64_t rows = labels.numElements();
  const T *x = inputData<T>(call, 0);
  T lossGrad = *inputData<T>(call, 2);
  T *dx = outputData<T>(call, 0);
  T rowCount = static_cast<T>(rows);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t label = readIndex(call.inputs[1].data, labels.dtype, r);
    if (label < 0 || label >= classes)
      return indexOutOfRange(call, "label", labels, r, label, classes);
    const T *row = x + r * classes;
    T *out = dx + r * classes;
    RowExpSum<T> stats = rowExpSum(row, classes);
    for (int64_t c = 0; c < classes; ++c) {
      T p = std::exp(row[c] - stats.max) / stats.sum;
      T onehot = c == label ? T(1) : T(0);
      out[c] = lossGrad * (p - onehot) / rowCount;
    }
  }
  return Status::ok();
}

template <typename T> void mseKernel(const KernelCall &call) {
  const T *p = inputData<T>(call, 0);
  const T *t = inputData<T>(call, 1);
  int64_t n = inputType(call, 0).numElements();
  T total = T(0);
  for (int64_t i = 0; i < n; ++i)
    total += (p[i] - t[i]) * (p[i] - t[i]);
  *outputData<T>(call, 0) = total / static_cast<T>(n);
}

template <typename T> void mseGradKernel(const KernelCall &call) {
  // Read the rank-0 loss gradient first: a rank-0 result may be its buffer.
  T factor = *inputData<T>(call, 2) * T(2) /
             static_cast<T>(inputType(call, 0).numElements());
  binaryKernel<T>(call, [&](T p, T t) { return factor * (p - t); });
}

//===----------------------------------------------------------------------===//
// Randomness and optimizer updates
//===----------------------------------------------------------------------===//

template <typename T> void dropoutKernel(const KernelCall &call) {
  double rate = paramFloat(*call.launch, "rate");
  uint64_t seed = static_cast<uint64_t>(paramInt(*call.launch, "seed"));
  uint64_t step = static_cast<uint64_t>(*inputData<int64_t>(call, 1));
  const T *x = inputData<T>(call, 0);
  T *y = outputData<T>(call, 0);
  T keepProbability = static_cast<T>(1.0 - rate);
  int64_t n = outputType(call, 0).numElements();
  for (int64_t i = 0; i < n; ++i)
    y[i] = dropoutKeep(seed, static_cast<uint64_t>(i), step, rate)
               ? x[i] / keepProbability
               : T(0);
}

/// Updated in place when the outputs are the state's buffers: every input
/// element is read before the outputs at that element are written.
template <typename T> void sgdKernel(const KernelCall &call) {
  const Launch &launch = *call.launch;
  T lr = static_cast<T>(paramFloat(launch, "lr"));
  T momentum = static_cast<T>(paramFloat(launch, "momentum", 0.0));
  T weightDecay = static_cast<T>(paramFloat(launch, "weight_decay", 0.0));
  bool nesterov = launch.hasUnit("nesterov");
  bool hasBuffer = call.numInputs == 3;
  const T *param = inputData<T>(call, 0);
  const T *grad = inputData<T>(call, 1);
  const T *buffer = hasBuffer ? inputData<T>(call, 2) : nullptr;
  T *newParam = outputData<T>(call, 0);
  T *newBuffer = hasBuffer ? outputData<T>(call, 1) : nullptr;
  int64_t n = inputType(call, 0).numElements();
  for (int64_t i = 0; i < n; ++i) {
    T p = param[i];
    T g = grad[i] + weightDecay * p;
    if (!hasBuffer) {
      newParam[i] = p - lr * g;
      continue;
    }
    T b = momentum * buffer[i] + g;
    newBuffer[i] = b;
    newParam[i] = nesterov ? p - lr * (g + momentum * b) : p - lr * b;
  }
}

template <typename T> void adamwKernel(const KernelCall &call) {
  const Launch &launch = *call.launch;
  double beta1 = paramFloat(launch, "beta1", 0.9);
  double beta2 = paramFloat(launch, "beta2", 0.999);
  T lr = static_cast<T>(paramFloat(launch, "lr"));
  T eps = static_cast<T>(paramFloat(launch, "eps", 1.0e-8));
  T weightDecay = static_cast<T>(paramFloat(launch, "weight_decay", 0.01));
  // The step counter counts from 0; bias correction uses t = step + 1.
  double t = static_cast<double>(*inputData<int64_t>(call, 4)) + 1.0;
  T correction1 = static_cast<T>(1.0 - std::pow(beta1, t));
  T correction2 = static_cast<T>(1.0 - std::pow(beta2, t));
  T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2);
  T oneMinusB1 = static_cast<T>(1.0 - beta1);
  T oneMinusB2 = static_cast<T>(1.0 - beta2);
  const T *param = inputData<T>(call, 0);
  const T *grad = inputData<T>(call, 1);
  const T *expAvg = inputData<T>(call, 2);
  const T *expAvgSq = inputData<T>(call, 3);
  T *newParam = outputData<T>(call, 0);
  T *newExpAvg = outputData<T>(call, 1);
  T *newExpAvgSq = outputData<T>(call, 2);
  int64_t n = inputType(call, 0).numElements();
  for (int64_t i = 0; i < n; ++i) {
    T p = param[i], g = grad[i];
    T m = b1 * expAvg[i] + oneMinusB1 * g;
    T v = b2 * expAvgSq[i] + oneMinusB2 * g * g;
    T mHat = m / correction1;
    T vHat = v / correction2;
    newExpAvg[i] = m;
    newExpAvgSq[i] = v;
    newParam[i] = p - lr * (mHat / (std::sqrt(vHat) + eps) + weightDecay * p);
  }
}

template <typename T> void copyKernel(const KernelCall &call) {
  const TensorType &type = inputType(call, 0);
  size_t elementBytes = type.dtype == DType::F32
                            ? sizeof(T)
                            : static_cast<size_t>(dtypeBytes(type.dtype));
  // memmove: a copy onto its own buffer is allowed (and a no-op).
  std::memmove(call.outputs[0].data, call.inputs[0].data,
               static_cast<size_t>(type.numElements()) * elementBytes);
}

} // namespace

template <typename T>
Status zcc::runtime::cpu::runKernel(const KernelCall &call) {
  switch (call.id) {
  case KernelId::Add:
    binaryKernel<T>(call, [](T a, T b) { return a + b; });
    break;
  case KernelId::Sub:
    binaryKernel<T>(call, [](T a, T b) { return a - b; });
    break;
  case KernelId::Mul:
    binaryKernel<T>(call, [](T a, T b) { return a * b; });
    break;
  case KernelId::Div:
    binaryKernel<T>(call, [](T a, T b) { return a / b; });
    break;
  case KernelId::Neg:
    unaryKernel<T>(call, [](T x) { return -x; });
    break;
  case KernelId::Exp:
    unaryKernel<T>(call, [](T x) { return std::exp(x); });
    break;
  case KernelId::Log:
    unaryKernel<T>(call, [](T x) { return std::log(x); });
    break;
  case KernelId::Tanh:
    unaryKernel<T>(call, [](T x) { return std::tanh(x); });
    break;
  case KernelId::Sigmoid:
    unaryKernel<T>(call, [](T x) { return sigmoidOf(x); });
    break;
  case KernelId::Relu:
    unaryKernel<T>(call, [](T x) { return reluOf(x); });
    break;
  case KernelId::Gelu:
    unaryKernel<T>(call, [](T x) { return geluOf(x); });
    break;
  case KernelId::Silu:
    unaryKernel<T>(call, [](T x) { return x * sigmoidOf(x); });
    break;
  case KernelId::Sqrt:
    unaryKernel<T>(call, [](T x) { return std::sqrt(x); });
    break;
  case KernelId::Rsqrt:
    unaryKernel<T>(call, [](T x) { return T(1) / std::sqrt(x); });
    break;
  case KernelId::Constant:
    constantKernel<T>(call);
    break;
  case KernelId::CausalMask:
    causalMaskKernel<T>(call);
    break;
  case KernelId::BroadcastInDim:
    broadcastKernel<T>(call);
    break;
  case KernelId::Transpose:
    transposeKernel<T>(call);
    break;
  case KernelId::Slice:
    sliceKernel<T>(call);
    break;
  case KernelId::Concat:
    concatKernel<T>(call);
    break;
  case KernelId::Sum:
    reduceKernel<T>(call, ReduceKind::Sum);
    break;
  case KernelId::Mean:
    reduceKernel<T>(call, ReduceKind::Mean);
    break;
  case KernelId::Max:
    reduceKernel<T>(call, ReduceKind::Max);
    break;
  case KernelId::Matmul:
    matmulKernel<T>(call);
    break;
  case KernelId::Softmax:
    softmaxKernel<T>(call, /*isLog=*/false);
    break;
  case KernelId::LogSoftmax:
    softmaxKernel<T>(call, /*isLog=*/true);
    break;
  case KernelId::LayerNorm:
    layerNormKernel<T>(call);
    break;
  case KernelId::RmsNorm:
    rmsNormKernel<T>(call);
    break;
  case KernelId::Embedding:
    return embeddingKernel<T>(call);
  case KernelId::SoftmaxCrossEntropy:
    return softmaxCrossEntropyKernel<T>(call);
  case KernelId::Mse:
    mseKernel<T>(call);
    break;
  case KernelId::Dropout:
    dropoutKernel<T>(call);
    break;
  case KernelId::Scale: {
    T factor = static_cast<T>(paramFloat(*call.launch, "factor"));
    unaryKernel<T>(call, [factor](T x) { return x * factor; });
    break;
  }
  case KernelId::ReluGrad:
    binaryKernel<T>(call, [](T y, T dy) { return y > T(0) ? dy : T(0); });
    break;
  case KernelId::GeluGrad:
    binaryKernel<T>(call, [](T x, T dy) { return dy * geluDerivative(x); });
    break;
  case KernelId::SiluGrad:
    binaryKernel<T>(call, [](T x, T dy) {
      T s = sigmoidOf(x);
      return dy * s * (T(1) + x * (T(1) - s));
    });
    break;
  case KernelId::TanhGrad:
    binaryKernel<T>(call, [](T y, T dy) { return dy * (T(1) - y * y); });
    break;
  case KernelId::SigmoidGrad:
    binaryKernel<T>(call, [](T y, T dy) { return dy * y * (T(1) - y); });
    break;
  case KernelId::SqrtGrad:
    binaryKernel<T>(call, [](T y, T dy) { return dy * T(0.5) / y; });
    break;
  case KernelId::RsqrtGrad:
    binaryKernel<T>(call, [](T y, T dy) { return dy * T(-0.5) * y * y * y; });
    break;
  case KernelId::SoftmaxGrad:
    softmaxGradKernel<T>(call, /*isLog=*/false);
    break;
  case KernelId::LogSoftmaxGrad:
    softmaxGradKernel<T>(call, /*isLog=*/true);
    break;
  case KernelId::MaxGrad:
    maxGradKernel<T>(call);
    break;
  case KernelId::SliceGrad:
    sliceGradKernel<T>(call);
    break;
  case KernelId::LayerNormGrad:
    layerNormGradKernel<T>(call);
    break;
  case KernelId::RmsNormGrad:
    rmsNormGradKernel<T>(call);
    break;
  case KernelId::EmbeddingGrad:
    return embeddingGradKernel<T>(call);
  case KernelId::SoftmaxCrossEntropyGrad:
    return softmaxCrossEntropyGradKernel<T>(call);
  case KernelId::MseGrad:
    mseGradKernel<T>(call);
    break;
  case KernelId::Sgd:
    sgdKernel<T>(call);
    break;
  case KernelId::Adamw:
    adamwKernel<T>(call);
    break;
  case KernelId::Copy:
    copyKernel<T>(call);
    break;
  case KernelId::NumKernels:
    return makeError(StatusCode::InvalidArgument, "no such kernel");
  }
  return Status::ok();
}

template Status zcc::runtime::cpu::runKernel<float>(const KernelCall &call);
template Status zcc::runtime::cpu::runKernel<double>(const KernelCall &call);
