//===- DeviceKernels.h - the device executors' kernels, host and device ---===//
//
// Every kernel of the CUDA executor is a small functor over an index space,
// written once and compiled twice: by nvcc for the GPU (CudaBackend.cu) and
// by the host compiler for the emulator (Emulator.cpp), which runs the very
// same code on the CPU. So the kernels' index arithmetic, data checks and
// numerics are tested on machines with no GPU, against the CPU executor.
//
// Two shapes of kernel:
//  - element kernels, `operator()(i)` for i in [0, count): one thread each;
//  - group kernels, `operator()(g, group)` for g in [0, count): a group of
//    lanes (a thread block on the GPU, one lane in the emulator) shares one
//    row, striding over it and combining partial results with
//    `group.reduce`, whose order is fixed, so results never depend on timing.
// The emulator's single lane visits a row in order, as the CPU kernels do:
// emulated results match the CPU executor bit for bit, while the GPU's wider
// groups change only the order of floating-point sums.
//
// Functors hold raw pointers and sizes only (they are copied to the GPU as
// kernel parameters). Every functor has `abort`: when set, the functor does
// nothing once an earlier launch of the step has recorded a data error, so a
// step with a bad index or label leaves parameters and optimizer state as
// they were.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_RUNTIME_DEVICE_DEVICEKERNELS_H
#define ZCC_LIB_RUNTIME_DEVICE_DEVICEKERNELS_H

#include "zcc/Runtime/Kernels/BFloat16.h"
#include "zcc/Runtime/Plan/ElementKernels.h"
#include "zcc/Runtime/Kernels/Philox.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

namespace zcc::runtime::device {

inline constexpr int kMaxRank = 8;

/// The first data error of a step (written by the kernels, read by the host
/// after the step). `flag` is 0 until an error is recorded.
struct DeviceError {
  int32_t flag;
  int32_t launch;  // the plan launch's index in its entry
  int32_t operand; // the input holding the bad value
  int32_t what;    // 0: an index, 1: a label
  int64_t position;
  int64_t value;
  int64_t limit;
};

/// Records an error unless one is recorded already (the first launch of the
/// step to fail wins; within a launch, the emulator keeps the first position
/// in order, the GPU any one of the bad positions).
ZRT_HOST_DEVICE inline void recordError(DeviceError *error, int32_t launch,
                                        int32_t operand, int32_t what,
                                        int64_t position, int64_t value,
                                        int64_t limit) {
#ifdef __CUDA_ARCH__
  if (atomicCAS(&error->flag, 0, 1) != 0)
    return;
#else
  if (error->flag != 0)
    return;
  error->flag = 1;
#endif
  error->launch = launch;
  error->operand = operand;
  error->what = what;
  error->position = position;
  error->value = value;
  error->limit = limit;
}

//===----------------------------------------------------------------------===//
// Scalar functions: the CPU kernels' formulas, in f32
//===----------------------------------------------------------------------===//

template <typename T> ZRT_HOST_DEVICE inline bool isNaN(T x) { return x != x; }

#ifdef __CUDA_ARCH__
ZRT_HOST_DEVICE inline float fExp(float x) { return ::expf(x); }
ZRT_HOST_DEVICE inline float fLog(float x) { return ::logf(x); }
ZRT_HOST_DEVICE inline float fTanh(float x) { return ::tanhf(x); }
ZRT_HOST_DEVICE inline float fSqrt(float x) { return ::sqrtf(x); }
ZRT_HOST_DEVICE inline float fErf(float x) { return ::erff(x); }
ZRT_HOST_DEVICE inline double fErf(double x) { return ::erf(x); }
ZRT_HOST_DEVICE inline double fExp(double x) { return ::exp(x); }
ZRT_HOST_DEVICE inline double fLog(double x) { return ::log(x); }
ZRT_HOST_DEVICE inline double fTanh(double x) { return ::tanh(x); }
ZRT_HOST_DEVICE inline double fSqrt(double x) { return ::sqrt(x); }
ZRT_HOST_DEVICE inline double dPow(double x, double y) { return ::pow(x, y); }
ZRT_HOST_DEVICE inline float fSin(float x) { return ::sinf(x); }
ZRT_HOST_DEVICE inline double fSin(double x) { return ::sin(x); }
ZRT_HOST_DEVICE inline float fCos(float x) { return ::cosf(x); }
ZRT_HOST_DEVICE inline double fCos(double x) { return ::cos(x); }
ZRT_HOST_DEVICE inline float fPow(float x, float y) { return ::powf(x, y); }
ZRT_HOST_DEVICE inline double fPow(double x, double y) { return ::pow(x, y); }
ZRT_HOST_DEVICE inline float fExpm1(float x) { return ::expm1f(x); }
ZRT_HOST_DEVICE inline double fExpm1(double x) { return ::expm1(x); }
ZRT_HOST_DEVICE inline float fLog1p(float x) { return ::log1pf(x); }
ZRT_HOST_DEVICE inline double fLog1p(double x) { return ::log1p(x); }
ZRT_HOST_DEVICE inline double dCos(double x) { return ::cos(x); }
ZRT_HOST_DEVICE inline float fExpLoop(float x) { return ::expf(x); }
ZRT_HOST_DEVICE inline double fExpLoop(double x) { return ::exp(x); }
#else
template <typename T> inline T fExp(T x) { return std::exp(x); }

/// e^x in f32 without branches or calls, so that the host's loops over
/// elements vectorize (glibc's expf is one call per element): Cody-Waite
/// reduction to r in [-ln2/2, ln2/2], Cephes' degree-7 polynomial for e^r,
/// and 2^n applied as two factors so that 2^128 and subnormal results come
/// out right. Within 2 ulp of expf (HostMath.ExpLoopMatchesExpf); NaN stays
/// NaN, e^-inf = 0, e^inf = inf.
inline float expLoopF32(float x) {
  float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  // n = round(x / ln2): adding 1.5 * 2^23 rounds to an integer, whose value
  // is then in the low mantissa bits.
  float shifted = xc * 1.44269504088896341f + 12582912.0f;
  float n = shifted - 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  int32_t ni = bits - 0x4B400000;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  int32_t n1 = ni >> 1, n2 = ni - n1;
  int32_t b1 = (n1 + 127) << 23, b2 = (n2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, sizeof s1);
  std::memcpy(&s2, &b2, sizeof s2);
  float y = p * s1 * s2;
  return x != x ? x : y;
}
/// e^x where the caller is an element loop (sigmoid, GELU, exp): the
/// vectorizable f32 form on the host; f64 keeps libm's (the reference).
inline float fExpLoop(float x) { return expLoopF32(x); }
inline double fExpLoop(double x) { return std::exp(x); }
template <typename T> inline T fLog(T x) { return std::log(x); }
template <typename T> inline T fTanh(T x) { return std::tanh(x); }
template <typename T> inline T fSqrt(T x) { return std::sqrt(x); }
template <typename T> inline T fErf(T x) { return std::erf(x); }
inline double dPow(double x, double y) { return std::pow(x, y); }
template <typename T> inline T fSin(T x) { return std::sin(x); }
template <typename T> inline T fCos(T x) { return std::cos(x); }
template <typename T> inline T fPow(T x, T y) { return std::pow(x, y); }
template <typename T> inline T fExpm1(T x) { return std::expm1(x); }
template <typename T> inline T fLog1p(T x) { return std::log1p(x); }
inline double dCos(double x) { return std::cos(x); }
#endif

template <typename T> ZRT_HOST_DEVICE inline T sigmoidOf(T x) {
  // e^x / (1 + e^x) for negative x (e^-x would overflow), 1 / (1 + e^-x)
  // otherwise: one exp of -|x|.
  // Both quotients computed, then selected: no branch in the loop.
  T e = fExpLoop(x < T(0.0) ? x : -x);
  T d = T(1.0) / (T(1.0) + e);
  T n = e * d;
  return x < T(0.0) ? n : d;
}

template <typename T>
inline constexpr T kGeluC = T(0.79788456080286535587989211986876);
template <typename T> inline constexpr T kGeluA = T(0.044715);

/// GELU's tanh form, 0.5 x (1 + tanh(u)) with u = c (x + a x^3), computed
/// as x sigmoid(2u) (the same function): one exp and no cancellation.
template <typename T> ZRT_HOST_DEVICE inline T geluOf(T x) {
  T u = kGeluC<T> * (x + kGeluA<T> * x * x * x);
  return x * sigmoidOf(T(2.0) * u);
}

/// d/dx: s + 2 x s (1 - s) u' with s = sigmoid(2u) = 0.5 (1 + tanh(u)), as
/// 0.5 (1 - tanh(u)^2) = 2 s (1 - s).
template <typename T> ZRT_HOST_DEVICE inline T geluDerivative(T x) {
  T s = sigmoidOf(T(2.0) * kGeluC<T> * (x + kGeluA<T> * x * x * x));
  return s + T(2.0) * x * s * (T(1.0) - s) * kGeluC<T> *
                 (T(1.0) + T(3.0) * kGeluA<T> * x * x);
}

/// GELU's exact form (PyTorch's nn.GELU() default): x Phi(x), with Phi the
/// standard normal distribution function, 0.5 (1 + erf(x / sqrt 2)).
template <typename T> ZRT_HOST_DEVICE inline T geluErfOf(T x) {
  return T(0.5) * x * (T(1.0) + fErf(x * T(0.70710678118654752440)));
}

/// d/dx: Phi(x) + x phi(x), phi(x) = e^(-x^2 / 2) / sqrt(2 pi).
template <typename T> ZRT_HOST_DEVICE inline T geluErfDerivative(T x) {
  T phi = T(0.39894228040143267794) * fExpLoop(T(-0.5) * x * x);
  return T(0.5) * (T(1.0) + fErf(x * T(0.70710678118654752440))) + x * phi;
}

/// PyTorch's clamp: max(x, low) then min(., high) (high wins when
/// low > high); NaN stays NaN.
template <typename T> ZRT_HOST_DEVICE inline T clampOf(T x, T low, T high) {
  if (isNaN(x))
    return x;
  T v = x < low ? low : x;
  return v > high ? high : v;
}

/// SiLU's gradient: grad s (1 + x (1 - s)), s = sigmoid(x).
template <typename T> ZRT_HOST_DEVICE inline T siluGradOf(T x, T grad) {
  T s = sigmoidOf(x);
  return grad * s * (T(1.0) + x * (T(1.0) - s));
}

/// The largest of two, NaN spreading (reductions `max`).
template <typename T> ZRT_HOST_DEVICE inline T maxKeepNaN(T a, T b) {
  if (isNaN(a))
    return a;
  return b > a || isNaN(b) ? b : a;
}
/// The largest of two, NaN ignored (a softmax row's shift: a NaN reaches the
/// sum instead).
template <typename T> ZRT_HOST_DEVICE inline T maxSkipNaN(T a, T b) {
  return b > a ? b : a;
}

struct Sum {
  template <typename T> ZRT_HOST_DEVICE T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxKeepNaN {
  template <typename T> ZRT_HOST_DEVICE T operator()(T a, T b) const {
    return maxKeepNaN(a, b);
  }
};
struct MaxSkipNaN {
  template <typename T> ZRT_HOST_DEVICE T operator()(T a, T b) const {
    return maxSkipNaN(a, b);
  }
};
struct Min {
  template <typename T> ZRT_HOST_DEVICE T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};
struct Max {
  template <typename T> ZRT_HOST_DEVICE T operator()(T a, T b) const {
    return b > a ? b : a;
  }
};

/// An index tensor's element (i32 or i64).
ZRT_HOST_DEVICE inline int64_t readIndex(const void *data, bool wide,
                                         int64_t position) {
  return wide ? static_cast<const int64_t *>(data)[position]
              : static_cast<const int32_t *>(data)[position];
}

/// Moves one element of `bytes` (1, 2, 4 or 8) bytes.
ZRT_HOST_DEVICE inline void moveElement(const void *from, int64_t fromIndex,
                                        void *to, int64_t toIndex,
                                        int32_t bytes) {
  if (bytes == 8)
    static_cast<uint64_t *>(to)[toIndex] =
        static_cast<const uint64_t *>(from)[fromIndex];
  else if (bytes == 1)
    static_cast<uint8_t *>(to)[toIndex] =
        static_cast<const uint8_t *>(from)[fromIndex];
  else if (bytes == 2)
    static_cast<uint16_t *>(to)[toIndex] =
        static_cast<const uint16_t *>(from)[fromIndex];
  else
    static_cast<uint32_t *>(to)[toIndex] =
        static_cast<const uint32_t *>(from)[fromIndex];
}

/// A shape with per-dimension strides into some tensor: maps a row-major
/// position in the shape to an element offset.
struct StridedShape {
  int32_t rank = 0;
  int64_t size[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};

  ZRT_HOST_DEVICE int64_t offsetOf(int64_t position) const {
    if (rank == 1) // the common case once simplified (no division)
      return position * stride[0];
    int64_t offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t extent = size[d];
      offset += (position % extent) * stride[d];
      position /= extent;
    }
    return offset;
  }
};

struct Functor {
  /// Elements (element kernels) or groups (group kernels).
  int64_t count = 0;
  /// Set for launches that write persistent state: skip after an error.
  const int32_t *abort = nullptr;
  /// Group kernels: threads per group on the GPU (a multiple of 32).
  int32_t groupThreads = 32;
};

/// Element kernels that need values computed from device data once per
/// launch (AdamW's bias corrections from the step counter) have `prepare()`;
/// its result goes to `operator()(i, prepared)`.
template <typename F, typename = void> struct HasPrepare {
  static constexpr bool value = false;
};
template <typename F>
struct HasPrepare<F,
                  std::void_t<decltype(std::declval<const F &>().prepare())>> {
  static constexpr bool value = true;
};

/// Element kernel `f` over i = first, first + stride, ... < end: a GPU
/// thread's share, or (stride 1) a host thread's range.
template <typename F>
ZRT_HOST_DEVICE void runElements(const F &f, int64_t first, int64_t end,
                                 int64_t stride) {
  if constexpr (HasPrepare<F>::value) {
    auto prepared = f.prepare();
    for (int64_t i = first; i < end; i += stride)
      f(i, prepared);
  } else {
    for (int64_t i = first; i < end; i += stride)
      f(i);
  }
}

//===----------------------------------------------------------------------===//
// Runs: an element kernel's GPU threads take consecutive elements
//===----------------------------------------------------------------------===//

#if defined(__CUDA_ARCH__)
#define ZRT_UNROLL _Pragma("unroll")
#else
#define ZRT_UNROLL
#endif
/// nvcc keeps a large function (an op switch) out of line, and a run's
/// arrays passed to it by reference then live in local memory.
#if defined(__CUDACC__)
#define ZRT_INLINE __forceinline__
#else
#define ZRT_INLINE inline
#endif

/// Elements a GPU thread takes at once in a kernel with runs. One bf16 per
/// thread keeps too few bytes in flight to fill HBM's bandwidth (the H200's
/// element kernels ran at a fifth of it); a run reads 16 bytes of each
/// operand with one load before it computes, and writes 16 at once.
inline constexpr int kRunElements = 8;

/// Element kernels with `elementRun(first)` (or `elementRun(first,
/// prepared)`): elements first .. first + kRunElements - 1, each computed as
/// operator()(i) computes it, every operand's run read before any result is
/// written. The elements after the last whole run go through operator().
template <typename F, typename = void> struct HasRuns {
  static constexpr bool value = false;
};
template <typename F>
struct HasRuns<F, std::void_t<decltype(&F::elementRun)>> {
  static constexpr bool value = true;
};

/// 16 bytes of elements, loaded or stored with one instruction on the GPU.
template <typename S> struct alignas(16) Chunk16 {
  S e[16 / sizeof(S)];
};

/// Elements first .. first + N - 1 of a contiguous operand into `out`.
template <int N, typename S>
ZRT_HOST_DEVICE ZRT_INLINE void loadRun(const S *p, int64_t first, S (&out)[N]) {
  const S *at = p + first;
  constexpr int kChunk = static_cast<int>(16 / sizeof(S));
  if constexpr (N % kChunk == 0) {
    if ((reinterpret_cast<uintptr_t>(at) & 15) == 0) {
      ZRT_UNROLL
      for (int c = 0; c < N / kChunk; ++c) {
#ifdef __CUDA_ARCH__
        Chunk16<S> chunk = reinterpret_cast<const Chunk16<S> *>(at)[c];
#else
        Chunk16<S> chunk;
        std::memcpy(&chunk, at + c * kChunk, 16);
#endif
        ZRT_UNROLL
        for (int e = 0; e < kChunk; ++e)
          out[c * kChunk + e] = chunk.e[e];
      }
      return;
    }
  }
  ZRT_UNROLL
  for (int e = 0; e < N; ++e)
    out[e] = at[e];
}

/// Elements first .. first + N - 1 into a contiguous result.
template <int N, typename S>
ZRT_HOST_DEVICE ZRT_INLINE void storeRun(S *p, int64_t first, const S (&v)[N]) {
  S *at = p + first;
  constexpr int kChunk = static_cast<int>(16 / sizeof(S));
  if constexpr (N % kChunk == 0) {
    if ((reinterpret_cast<uintptr_t>(at) & 15) == 0) {
      ZRT_UNROLL
      for (int c = 0; c < N / kChunk; ++c) {
        Chunk16<S> chunk;
        ZRT_UNROLL
        for (int e = 0; e < kChunk; ++e)
          chunk.e[e] = v[c * kChunk + e];
#ifdef __CUDA_ARCH__
        reinterpret_cast<Chunk16<S> *>(at)[c] = chunk;
#else
        std::memcpy(at + c * kChunk, &chunk, 16);
#endif
      }
      return;
    }
  }
  ZRT_UNROLL
  for (int e = 0; e < N; ++e)
    at[e] = v[e];
}

/// Elements first .. first + N - 1 of an operand read through strides
/// (`strided`, a broadcast) or contiguous. A run within one line of the
/// innermost dimension costs one offsetOf; one crossing lines, one each.
template <int N, typename S>
ZRT_HOST_DEVICE ZRT_INLINE void loadOperandRun(const S *p, bool strided,
                                           const StridedShape &read,
                                           int64_t first, S (&out)[N]) {
  if (!strided)
    return loadRun(p, first, out);
  int64_t offset = read.offsetOf(first);
  int64_t inner = read.rank > 0 ? read.size[read.rank - 1] : 1;
  int64_t step = read.rank > 0 ? read.stride[read.rank - 1] : 0;
  if (read.rank <= 1 || first % inner + N <= inner) {
    ZRT_UNROLL
    for (int e = 0; e < N; ++e)
      out[e] = p[offset + e * step];
    return;
  }
  ZRT_UNROLL
  for (int e = 0; e < N; ++e)
    out[e] = p[read.offsetOf(first + e)];
}

/// The GPU threads a kernel with runs takes: one per run, or per element
/// after the last run (the emulator replays as many).
ZRT_HOST_DEVICE constexpr int64_t runThreads(int64_t count) {
  return count / kRunElements > count % kRunElements ? count / kRunElements
                                                     : count % kRunElements;
}

/// A GPU thread's share of a kernel with runs: runs `thread`, `thread +
/// threads`, ..., then the elements after the last whole run, one a thread.
template <typename F>
ZRT_HOST_DEVICE void runElementRuns(const F &f, int64_t thread,
                                    int64_t threads) {
  int64_t runs = f.count / kRunElements;
  if constexpr (HasPrepare<F>::value) {
    auto prepared = f.prepare();
    for (int64_t r = thread; r < runs; r += threads)
      f.elementRun(r * kRunElements, prepared);
    for (int64_t i = runs * kRunElements + thread; i < f.count; i += threads)
      f(i, prepared);
  } else {
    for (int64_t r = thread; r < runs; r += threads)
      f.elementRun(r * kRunElements);
    for (int64_t i = runs * kRunElements + thread; i < f.count; i += threads)
      f(i);
  }
}

//===----------------------------------------------------------------------===//
// Element kernels
//===----------------------------------------------------------------------===//

/// The element kernels: one per row of ElementKernels.h, with the same
/// name, plus the two with parameters of their own.
enum class ElementOp : int32_t {
#define ZRT_ELEMENT_OP(id, name, arity, ...) id,
  ZRT_ELEMENT_KERNEL_LIST(ZRT_ELEMENT_OP)
#undef ZRT_ELEMENT_OP
  Scale,   // x * factor
  MseGrad, // lossGrad * 2 / elements * (x - target)
  Dropout  // a fused program's dropout step (ElementProgram)
};

/// The row's arity of `op` (Unary for scale, Binary for mse_grad).
ZRT_HOST_DEVICE constexpr ElementArity elementArityOf(ElementOp op) {
  switch (op) {
#define ZRT_ELEMENT_ARITY_OF(id, name, arity, ...)                             \
  case ElementOp::id:                                                          \
    return ElementArity::arity;
    ZRT_ELEMENT_KERNEL_LIST(ZRT_ELEMENT_ARITY_OF)
#undef ZRT_ELEMENT_ARITY_OF
  case ElementOp::Scale:
    return ElementArity::Unary;
  case ElementOp::MseGrad:
    return ElementArity::Binary;
  case ElementOp::Dropout:
    return ElementArity::Unary;
  }
  return ElementArity::Unary;
}

/// An element as the kernels compute with it (T) from its storage (S): the
/// same type, or bf16 (mixed precision), widened exactly and narrowed to
/// nearest even.
template <typename T, typename S> ZRT_HOST_DEVICE inline T loadAs(S s) {
  if constexpr (std::is_same_v<S, BFloat16>)
    return static_cast<T>(bf16ToFloat(s));
  else
    return static_cast<T>(s);
}
template <typename S, typename T> ZRT_HOST_DEVICE inline S storeAs(T v) {
  if constexpr (std::is_same_v<S, BFloat16>)
    return floatToBf16(static_cast<float>(v));
  else
    return static_cast<S>(v);
}
/// `v` as storage S holds it, back in T: an op's result as the next op
/// reads it (fused programs' steps, rotary's products).
template <typename S, typename T> ZRT_HOST_DEVICE inline T roundedAs(T v) {
  return loadAs<T>(storeAs<S>(v));
}

/// A float row's Value (ElementKernels.h) in T: the only copy, run by the
/// element kernels and the fused programs.
template <ElementOp Op, typename T>
ZRT_HOST_DEVICE inline T floatRowValue(T x, [[maybe_unused]] T bv,
                                       [[maybe_unused]] T p0,
                                       [[maybe_unused]] T p1) {
#define ZRT_ELEMENT_FORMULA(id, name, arity, method, params, torch, traits,    \
                            value, ...)                                        \
  ZRT_IF_FLOAT_##arity(if constexpr (Op == ElementOp::id) { return value; } else)
  ZRT_ELEMENT_KERNEL_LIST(ZRT_ELEMENT_FORMULA)
#undef ZRT_ELEMENT_FORMULA
  {
    static_assert(sizeof(T) == 0, "an ElementOp with no formula");
    return x;
  }
}

/// y = op(a) or op(a, b); an output may be an input's buffer (each element
/// is read before it is written, by the same thread). An operand may be a
/// broadcast read through strides (aStrided, bStrided): element i of the
/// result reads its element aRead.offsetOf(i); such an operand is never an
/// output's buffer. Elements are stored as S (T, or bf16 computed in T).
template <typename T, typename S = T> struct Elementwise : Functor {
  static constexpr bool kGrouped = false;
  ElementOp op = ElementOp::Neg;
  const S *a = nullptr;
  const S *b = nullptr;
  const T *lossGrad = nullptr; // mse_grad's scalar (f32 operands only)
  S *y = nullptr;
  T factor = T(1.0);    // scale
  T param[kMaxElementParams] = {}; // a row's params (p0, p1)
  int64_t elements = 0; // mse_grad's divisor
  bool aStrided = false, bStrided = false;
  StridedShape aRead, bRead; // over the result's positions

  /// Whether op `Op` reads `b` (binary and gradient ops, mse_grad).
  ZRT_HOST_DEVICE static constexpr bool readsB(ElementOp op) {
    if (op == ElementOp::Scale)
      return false;
    if (op == ElementOp::MseGrad)
      return true;
    return elementArityOf(op) != ElementArity::Unary;
  }

  /// Result element of op `Op` from x (of a) and bv (of b, when it reads
  /// one): each float row's Value (ElementKernels.h), then scale and
  /// mse_grad.
  template <ElementOp Op> ZRT_HOST_DEVICE T compute(T x, T bv) const {
    if constexpr (Op == ElementOp::Scale) {
      return x * factor;
    } else if constexpr (Op == ElementOp::MseGrad) {
      T f = *lossGrad * T(2.0) / static_cast<T>(elements);
      return f * (x - bv);
    } else {
      return floatRowValue<Op>(x, bv, param[0], param[1]);
    }
  }

  /// Calls fn with `op` as a compile-time constant, so that a loop over the
  /// elements can be specialized for one op (the host's). The float rows,
  /// scale and mse_grad.
  template <typename Fn>
  ZRT_HOST_DEVICE ZRT_INLINE static void dispatch(ElementOp op, Fn &&fn) {
    switch (op) {
#define ZRT_ELEMENT_DISPATCH(id, name, arity, ...)                             \
  ZRT_IF_FLOAT_##arity(case ElementOp::id                                      \
                       : fn(std::integral_constant<ElementOp, ElementOp::id>{}); \
                       break;)
      ZRT_ELEMENT_KERNEL_LIST(ZRT_ELEMENT_DISPATCH)
#undef ZRT_ELEMENT_DISPATCH
    case ElementOp::Scale:
      fn(std::integral_constant<ElementOp, ElementOp::Scale>{});
      break;
    case ElementOp::MseGrad:
      fn(std::integral_constant<ElementOp, ElementOp::MseGrad>{});
      break;
    default:
      break;
    }
  }

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    dispatch(op, [&](auto constant) {
      constexpr ElementOp Op = decltype(constant)::value;
      T x = loadAs<T>(a[aStrided ? aRead.offsetOf(i) : i]);
      T bv = T(0.0);
      if constexpr (readsB(Op))
        bv = loadAs<T>(b[bStrided ? bRead.offsetOf(i) : i]);
      y[i] = storeAs<S>(compute<Op>(x, bv));
    });
  }

  ZRT_HOST_DEVICE void elementRun(int64_t first) const {
    S xs[kRunElements], bs[kRunElements] = {}, ys[kRunElements];
    loadOperandRun(a, aStrided, aRead, first, xs);
    if (readsB(op))
      loadOperandRun(b, bStrided, bRead, first, bs);
    dispatch(op, [&](auto constant) {
      constexpr ElementOp Op = decltype(constant)::value;
      ZRT_UNROLL
      for (int e = 0; e < kRunElements; ++e)
        ys[e] = storeAs<S>(compute<Op>(loadAs<T>(xs[e]), loadAs<T>(bs[e])));
    });
    storeRun(y, first, ys);
  }
};

/// One step of a fused element program: a float row (or scale, its factor
/// in p0; or dropout, its keep probability in p0, as the Dropout kernel
/// draws it) on two earlier values (b unread by unary rows).
template <typename T> struct ProgramStep {
  ElementOp op = ElementOp::Neg;
  int8_t a = 0, b = 0;
  T p0 = T(0.0), p1 = T(0.0);
  uint64_t seed = 0, threshold = 0; // dropout's
};

/// A fused element program (zt.fused): per element, the operands' values,
/// then each step's row on earlier values, each result rounded to the
/// storage (bf16, or T itself) as the unfused op would store it, so the
/// result has the chain's bits on every executor. Operands may be read
/// through strides; an output may be a contiguous operand's buffer (every
/// operand element is read before any result element is written). Output
/// `o` is value `out[o]`.
template <typename T> struct ElementProgram : Functor {
  static constexpr bool kGrouped = false;
  int32_t inputs = 0, steps = 0, outputs = 0;
  bool bf16 = false; // the storage: bf16, else T
  const void *in[kMaxFusedInputs] = {};
  bool strided[kMaxFusedInputs] = {};
  StridedShape read[kMaxFusedInputs];
  void *y[kMaxFusedOutputs] = {};
  int8_t out[kMaxFusedOutputs] = {};
  const int64_t *stepCounter = nullptr; // with a dropout step
  ProgramStep<T> step[kMaxFusedSteps];

  /// Whether dropout step `s` keeps element i: the Dropout kernel's draw.
  ZRT_HOST_DEVICE bool keeps(const ProgramStep<T> &s, int64_t i) const {
    PhiloxBlock block = dropoutBlock(s.seed, static_cast<uint64_t>(i),
                                     static_cast<uint64_t>(*stepCounter));
    return block.words[i % 4] >= s.threshold;
  }

  /// Step `s`'s value from x and bv (not dropout).
  ZRT_HOST_DEVICE static T value(const ProgramStep<T> &s, T x, T bv) {
    T r = x;
    Elementwise<T>::dispatch(s.op, [&](auto constant) {
      constexpr ElementOp Op = decltype(constant)::value;
      if constexpr (Op == ElementOp::Scale)
        r = x * s.p0;
      else if constexpr (Op != ElementOp::MseGrad && Op != ElementOp::Dropout)
        r = floatRowValue<Op>(x, bv, s.p0, s.p1);
    });
    return r;
  }

  /// Each step's value after the operands' in v, rounded as its op stores
  /// it (S); kept(s): whether dropout step s keeps this element (the
  /// Dropout kernel's formula).
  template <typename S, typename Kept>
  ZRT_HOST_DEVICE void runSteps(T *v, Kept &&kept) const {
    for (int s = 0; s < steps; ++s) {
      const ProgramStep<T> &st = step[s];
      T r = st.op != ElementOp::Dropout ? value(st, v[st.a], v[st.b])
            : kept(s)                   ? v[st.a] / st.p0
                                        : T(0.0);
      v[inputs + s] = roundedAs<S>(r);
    }
  }

  template <typename S> ZRT_HOST_DEVICE void run(int64_t i) const {
    T v[kMaxFusedInputs + kMaxFusedSteps];
    for (int k = 0; k < inputs; ++k)
      v[k] = loadAs<T>(static_cast<const S *>(
          in[k])[strided[k] ? read[k].offsetOf(i) : i]);
    runSteps<S>(v, [&](int s) { return keeps(step[s], i); });
    for (int o = 0; o < outputs; ++o)
      static_cast<S *>(y[o])[i] = storeAs<S>(v[out[o]]);
  }

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    if (bf16)
      run<BFloat16>(i);
    else
      run<T>(i);
  }

  /// Operands a run holds in registers; a program with more runs element
  /// by element (as many registers for 8 would halve the GPU's threads).
  static constexpr int kRunInputs = 4;

  /// Elements first .. first + kRunElements - 1: every operand's run read
  /// first, each dropout step's keep bits drawn once per Philox block (four
  /// elements), then each element's steps as run(i) does them.
  template <typename S> ZRT_HOST_DEVICE void runOf(int64_t first) const {
    if (inputs > kRunInputs) {
      for (int e = 0; e < kRunElements; ++e)
        run<S>(first + e);
      return;
    }
    S raw[kRunInputs][kRunElements];
    ZRT_UNROLL
    for (int k = 0; k < kRunInputs; ++k)
      if (k < inputs)
        loadOperandRun(static_cast<const S *>(in[k]), strided[k], read[k],
                       first, raw[k]);
    uint32_t kept[kMaxFusedSteps]; // bit e: step s keeps element first + e
    for (int s = 0; s < steps; ++s) {
      if (step[s].op != ElementOp::Dropout)
        continue;
      uint32_t bits = 0;
      ZRT_UNROLL
      for (int q = 0; q < kRunElements; q += 4) {
        PhiloxBlock block =
            dropoutBlock(step[s].seed, static_cast<uint64_t>(first + q),
                         static_cast<uint64_t>(*stepCounter));
        ZRT_UNROLL
        for (int j = 0; j < 4; ++j)
          if (block.words[j] >= step[s].threshold)
            bits |= 1u << (q + j);
      }
      kept[s] = bits;
    }
    S outs[kMaxFusedOutputs][kRunElements];
    ZRT_UNROLL
    for (int e = 0; e < kRunElements; ++e) {
      T v[kMaxFusedInputs + kMaxFusedSteps];
      ZRT_UNROLL
      for (int k = 0; k < kRunInputs; ++k)
        if (k < inputs)
          v[k] = loadAs<T>(raw[k][e]);
      runSteps<S>(v, [&](int s) { return ((kept[s] >> e) & 1u) != 0; });
      ZRT_UNROLL
      for (int o = 0; o < kMaxFusedOutputs; ++o)
        if (o < outputs)
          outs[o][e] = storeAs<S>(v[out[o]]);
    }
    ZRT_UNROLL
    for (int o = 0; o < kMaxFusedOutputs; ++o)
      if (o < outputs)
        storeRun(static_cast<S *>(y[o]), first, outs[o]);
  }

  ZRT_HOST_DEVICE void elementRun(int64_t first) const {
    if (bf16)
      runOf<BFloat16>(first);
    else
      runOf<T>(first);
  }

  template <typename B> static void build(B &b) {
    ElementProgram f;
    f.steps = b.programSteps(f.step, f.inputs);
    for (int k = 0; k < f.inputs; ++k)
      f.in[k] = b.template in<void>(k);
    if (f.inputs < static_cast<int32_t>(b.launch.inputs.size()))
      f.stepCounter = b.template in<int64_t>(f.inputs);
    b.stridedReads(f.inputs, f.strided, f.read);
    f.outputs = static_cast<int32_t>(b.launch.outputs.size());
    for (int o = 0; o < f.outputs; ++o) {
      f.y[o] = b.template result<void>(o);
      f.out[o] = static_cast<int8_t>(b.launch.params.programOutputs[o]);
    }
    f.bf16 = b.resultIsBf16(0);
    f.count = b.outType(0).numElements();
    b.push(f);
  }
};

/// A row's Value for the element kernels with bool operands or results
/// (ElementKernels.h): comparisons of two T, logical ops of bools, mask and
/// select of a bool `x` and values of T (which may be raw bits: zero bits
/// are 0 in every storage).
template <ElementOp Op, typename X, typename T>
ZRT_HOST_DEVICE auto mixedValue(X x, [[maybe_unused]] T bv,
                                [[maybe_unused]] T cv) {
#define ZRT_MIXED_FORMULA(id, name, arity, method, params, torch, traits,      \
                          value, ...)                                          \
  ZRT_IF_MIXED_##arity(if constexpr (Op == ElementOp::id) { return value; } else)
  ZRT_ELEMENT_KERNEL_LIST(ZRT_MIXED_FORMULA)
#undef ZRT_MIXED_FORMULA
  {
    static_assert(sizeof(T) == 0, "an ElementOp with no formula");
    return x;
  }
}

/// A Binary row's Value on unsigned integers (the kIntegers rows: add, sub,
/// mul, whose formulas wrap in unsigned arithmetic).
template <ElementOp Op, typename U>
ZRT_HOST_DEVICE U integerValue(U x, [[maybe_unused]] U bv) {
  using T = U; // the formulas' type
#define ZRT_INTEGER_FORMULA(id, name, arity, method, params, torch, traits,    \
                            value, ...)                                        \
  ZRT_IF_INTEGER_##arity(if constexpr (Op == ElementOp::id) {                  \
    return static_cast<U>(value);                                              \
  } else)
  ZRT_ELEMENT_KERNEL_LIST(ZRT_INTEGER_FORMULA)
#undef ZRT_INTEGER_FORMULA
  {
    static_assert(sizeof(U) == 0, "an ElementOp with no integer formula");
    return x;
  }
}

/// How ElementMixed's non-bool operands are stored: as the executor's float
/// type (an f32 tensor), i32, i64, bf16 or bool; numbered as the plan's
/// DType (DeviceProgram.cpp checks), which this header cannot include.
enum class MixedStorage : int8_t { Compute, I32, I64, BF16, Bool };

/// The element kernels with bool operands or results: comparisons (a and b
/// of one storage -> bool), logical ops (bools -> bool), mask (bool a, b ->
/// b or 0) and select (bool a, b, c -> b or c). Bools are bytes, 0 or 1. a
/// and b may be read through broadcast strides, as Elementwise's.
template <typename T> struct ElementMixed : Functor {
  static constexpr bool kGrouped = false;
  ElementOp op = ElementOp::Eq;
  const void *a = nullptr, *b = nullptr, *c = nullptr;
  void *y = nullptr;
  MixedStorage storage = MixedStorage::Compute; // b (and a when compared)
  bool aStrided = false, bStrided = false;
  StridedShape aRead, bRead;

  template <ElementOp Op>
  ZRT_HOST_DEVICE static void dispatchOp(const ElementMixed &f, int64_t i) {
    constexpr ElementArity arity = elementArityOf(Op);
    int64_t ia = f.aStrided ? f.aRead.offsetOf(i) : i;
    int64_t ib = f.bStrided ? f.bRead.offsetOf(i) : i;
    auto *out = static_cast<uint8_t *>(f.y);
    auto bytes = [](const void *p) { return static_cast<const uint8_t *>(p); };
    if constexpr (arity == ElementArity::BoolUnary) {
      out[i] = mixedValue<Op>(bytes(f.a)[ia] != 0, false, false);
    } else if constexpr (arity == ElementArity::BoolBinary) {
      out[i] = mixedValue<Op>(bytes(f.a)[ia] != 0, bytes(f.b)[ib] != 0, false);
    } else if constexpr (arity == ElementArity::Compare) {
      f.byStorage(/*asValues=*/true, [&](auto v) {
        using V = decltype(v);
        V x = load<V>(f.a, ia, f.storage), bv = load<V>(f.b, ib, f.storage);
        out[i] = mixedValue<Op>(x, bv, bv);
      });
    } else if constexpr (arity == ElementArity::Binary &&
                         (kElementRows[static_cast<int>(Op)].traits &
                          kIntegers) != 0) {
      // Integers (i32, i64): the row's formula on their unsigned forms,
      // which wrap around as PyTorch's integers do.
      f.byStorage(/*asValues=*/true, [&](auto v) {
        using V = decltype(v);
        if constexpr (std::is_same_v<V, int32_t> ||
                      std::is_same_v<V, int64_t>) {
          using U = std::make_unsigned_t<V>;
          U x = static_cast<U>(load<V>(f.a, ia, f.storage));
          U bv = static_cast<U>(load<V>(f.b, ib, f.storage));
          static_cast<V *>(f.y)[i] =
              static_cast<V>(integerValue<Op>(x, bv));
        }
      });
    } else if constexpr (arity == ElementArity::Mask ||
                         arity == ElementArity::Select) {
      f.byStorage(/*asValues=*/false, [&](auto v) {
        using V = decltype(v);
        const V *bs = static_cast<const V *>(f.b);
        V cv = arity == ElementArity::Select ? static_cast<const V *>(f.c)[i]
                                             : V(0);
        static_cast<V *>(f.y)[i] = mixedValue<Op>(bytes(f.a)[ia] != 0, bs[ib], cv);
      });
    }
  }

  /// fn(V()) for the storage: compared values as numbers (bf16 widened to
  /// float), moved values as bits.
  template <typename Fn>
  ZRT_HOST_DEVICE void byStorage(bool asValues, Fn &&fn) const {
    switch (storage) {
    case MixedStorage::Compute:
      fn(T());
      break;
    case MixedStorage::BF16:
      if (asValues)
        fn(float());
      else
        fn(uint16_t());
      break;
    case MixedStorage::I32:
      fn(int32_t());
      break;
    case MixedStorage::I64:
      fn(int64_t());
      break;
    case MixedStorage::Bool:
      fn(uint8_t());
      break;
    }
  }
  /// Element `i` as V: bf16 bits widened when V is float from bf16 storage.
  template <typename V>
  ZRT_HOST_DEVICE static V load(const void *p, int64_t i, MixedStorage s) {
    if constexpr (std::is_same_v<V, float>)
      if (s == MixedStorage::BF16)
        return bf16ToFloat(static_cast<const BFloat16 *>(p)[i]);
    return static_cast<const V *>(p)[i];
  }

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    switch (op) {
#define ZRT_MIXED_DISPATCH(id, name, arity, ...)                               \
  ZRT_IF_MIXED_##arity(case ElementOp::id                                      \
                       : dispatchOp<ElementOp::id>(*this, i);                  \
                       break;)
      ZRT_ELEMENT_KERNEL_LIST(ZRT_MIXED_DISPATCH)
#undef ZRT_MIXED_DISPATCH
#define ZRT_INTEGER_DISPATCH(id, name, arity, ...)                             \
  ZRT_IF_INTEGER_##arity(case ElementOp::id                                    \
                         : dispatchOp<ElementOp::id>(*this, i);                \
                         break;)
      ZRT_ELEMENT_KERNEL_LIST(ZRT_INTEGER_DISPATCH)
#undef ZRT_INTEGER_DISPATCH
    default:
      break;
    }
  }
};

/// Every element set to one bit pattern of 1, 2, 4 or 8 bytes (`constant`).
struct Fill : Functor {
  static constexpr bool kGrouped = false;
  void *y = nullptr;
  uint64_t bits = 0;
  int32_t bytes = 4;

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    if (bytes == 8)
      static_cast<uint64_t *>(y)[i] = bits;
    else if (bytes == 1)
      static_cast<uint8_t *>(y)[i] = static_cast<uint8_t>(bits);
    else if (bytes == 2)
      static_cast<uint16_t *>(y)[i] = static_cast<uint16_t>(bits);
    else
      static_cast<uint32_t *>(y)[i] = static_cast<uint32_t>(bits);
  }
};

/// y = x between the float type T and bf16: widening is exact, narrowing
/// rounds to nearest, ties to even (mixed precision's zt.convert).
/// zt.convert: between the executor's float type (an f32 tensor), bf16,
/// i32, i64 and bool (ElementMixed's storages). Floats to integers truncate
/// toward zero and saturate, NaN to 0; i64 to i32 wraps; to bool is != 0.
template <typename T> struct Convert : Functor {
  static constexpr bool kGrouped = false;
  const void *x = nullptr;
  void *y = nullptr;
  MixedStorage from = MixedStorage::Compute, to = MixedStorage::BF16;

  template <typename I> ZRT_HOST_DEVICE static I saturate(T v) {
    constexpr I hi = sizeof(I) == 4 ? I(2147483647) : I(9223372036854775807LL);
    constexpr I lo = -hi - 1;
    if (!(v == v))
      return I(0);
    if (v <= static_cast<T>(lo))
      return lo;
    if (v >= static_cast<T>(hi)) // hi rounds up to 2^31 or 2^63 in T
      return hi;
    return static_cast<I>(v);
  }

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    bool integral = from == MixedStorage::I32 || from == MixedStorage::I64 ||
                    from == MixedStorage::Bool;
    int64_t n = 0;
    T v = T(0.0);
    switch (from) {
    case MixedStorage::Compute:
      v = static_cast<const T *>(x)[i];
      break;
    case MixedStorage::BF16:
      v = static_cast<T>(bf16ToFloat(static_cast<const BFloat16 *>(x)[i]));
      break;
    case MixedStorage::I32:
      n = static_cast<const int32_t *>(x)[i];
      break;
    case MixedStorage::I64:
      n = static_cast<const int64_t *>(x)[i];
      break;
    case MixedStorage::Bool:
      n = static_cast<const uint8_t *>(x)[i] != 0;
      break;
    }
    switch (to) {
    case MixedStorage::Compute:
      static_cast<T *>(y)[i] = integral ? static_cast<T>(n) : v;
      break;
    case MixedStorage::BF16:
      static_cast<BFloat16 *>(y)[i] =
          floatToBf16(integral ? static_cast<float>(n) : static_cast<float>(v));
      break;
    case MixedStorage::I32:
      static_cast<int32_t *>(y)[i] =
          integral ? static_cast<int32_t>(static_cast<uint32_t>(
                         static_cast<uint64_t>(n)))
                   : saturate<int32_t>(v);
      break;
    case MixedStorage::I64:
      static_cast<int64_t *>(y)[i] = integral ? n : saturate<int64_t>(v);
      break;
    case MixedStorage::Bool:
      static_cast<uint8_t *>(y)[i] = integral ? n != 0 : v != T(0.0);
      break;
    }
  }

  /// Runs for the casts between T and bf16 (mixed precision's, a weight's
  /// every step); the other conversions element by element.
  ZRT_HOST_DEVICE void elementRun(int64_t first) const {
    if (from == MixedStorage::Compute && to == MixedStorage::BF16) {
      T xs[kRunElements];
      BFloat16 ys[kRunElements];
      loadRun(static_cast<const T *>(x), first, xs);
      ZRT_UNROLL
      for (int e = 0; e < kRunElements; ++e)
        ys[e] = floatToBf16(static_cast<float>(xs[e]));
      storeRun(static_cast<BFloat16 *>(y), first, ys);
    } else if (from == MixedStorage::BF16 && to == MixedStorage::Compute) {
      BFloat16 xs[kRunElements];
      T ys[kRunElements];
      loadRun(static_cast<const BFloat16 *>(x), first, xs);
      ZRT_UNROLL
      for (int e = 0; e < kRunElements; ++e)
        ys[e] = static_cast<T>(bf16ToFloat(xs[e]));
      storeRun(static_cast<T *>(y), first, ys);
    } else {
      for (int e = 0; e < kRunElements; ++e)
        (*this)(first + e);
    }
  }
};

/// y[q, k] = 0 for k <= q, else -inf.
template <typename T> struct CausalMask : Functor {
  static constexpr bool kGrouped = false;
  T *y = nullptr;
  int64_t size = 0;

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    int64_t q = i / size, k = i % size;
    y[i] = k <= q ? T(0.0) : -INFINITY;
  }
};

/// y[i] = x[offset + the source offset of output position i]: broadcast,
/// transpose, slice and copy. The output is contiguous.
struct StridedCopy : Functor {
  static constexpr bool kGrouped = false;
  const void *x = nullptr;
  void *y = nullptr;
  int64_t offset = 0;
  int32_t bytes = 4;
  StridedShape source; // the output's shape, the source's strides

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    moveElement(x, offset + source.offsetOf(i), y, i, bytes);
  }
};

/// One concat operand: block `j` of its rows goes to the result's rows at
/// `offset` (a concat launch is one of these per operand).
struct ConcatPart : Functor {
  static constexpr bool kGrouped = false;
  const void *x = nullptr;
  void *y = nullptr;
  int64_t block = 1;       // operand elements per outer index
  int64_t resultBlock = 1; // result elements per outer index
  int64_t offset = 0;      // where this operand starts in a result block
  int32_t bytes = 4;

  ZRT_HOST_DEVICE void operator()(int64_t j) const {
    int64_t outer = j / block, inner = j % block;
    moveElement(x, j, y, outer * resultBlock + offset + inner, bytes);
  }
};

/// The gradient of a strided slice: each result element is the gradient at
/// its place in the slice, or 0 where the slice did not take it. Stored as S
/// (T, or bf16).
template <typename T, typename S = T> struct SliceGrad : Functor {
  static constexpr bool kGrouped = false;
  const S *grad = nullptr;
  S *y = nullptr;
  int32_t rank = 0;
  int64_t shape[kMaxRank] = {}; // the result's
  int64_t start[kMaxRank] = {};
  int64_t step[kMaxRank] = {};
  int64_t gradShape[kMaxRank] = {};
  int64_t gradStride[kMaxRank] = {};

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    int64_t position = i, offset = 0;
    bool taken = true;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t index = position % shape[d];
      position /= shape[d];
      int64_t relative = index - start[d];
      if (relative < 0 || relative % step[d] != 0 ||
          relative / step[d] >= gradShape[d]) {
        taken = false;
        continue;
      }
      offset += relative / step[d] * gradStride[d];
    }
    y[i] = taken ? grad[offset] : storeAs<S>(T(0.0));
  }
};

/// Looks up rows of a table; an index outside [0, vocabulary) is an error
/// and its row becomes 0.
template <typename T> struct Embedding : Functor {
  static constexpr bool kGrouped = false;
  const T *table = nullptr;
  const void *indices = nullptr;
  bool wideIndices = false;
  T *y = nullptr;
  int64_t vocabulary = 0, width = 1;
  DeviceError *error = nullptr;
  int32_t launch = 0;

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    int64_t p = i / width, j = i % width;
    int64_t index = readIndex(indices, wideIndices, p);
    if (index < 0 || index >= vocabulary) {
      recordError(error, launch, 1, 0, p, index, vocabulary);
      y[i] = T(0.0);
      return;
    }
    y[i] = table[index * width + j];
  }
};

/// The table gradient: each thread owns one column of a slice of the
/// vocabulary rows, zeroes it, then adds the rows of dy in position order,
/// as the CPU does (no atomics, same sums). Slices give the GPU threads
/// enough to fill it; a thread reads every index but adds only its own.
template <typename T> struct EmbeddingGrad : Functor {
  static constexpr bool kGrouped = false;
  const void *indices = nullptr;
  bool wideIndices = false;
  const T *dy = nullptr;
  T *table = nullptr;
  int64_t vocabulary = 0, width = 1, positions = 0;
  int64_t slices = 1; // count = slices * width
  DeviceError *error = nullptr;
  int32_t launch = 0;

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    int64_t j = i % width, slice = i / width;
    int64_t rowsPerSlice = (vocabulary + slices - 1) / slices;
    int64_t first = slice * rowsPerSlice;
    int64_t last =
        first + rowsPerSlice < vocabulary ? first + rowsPerSlice : vocabulary;
    for (int64_t v = first; v < last; ++v)
      table[v * width + j] = T(0.0);
    for (int64_t p = 0; p < positions; ++p) {
      int64_t index = readIndex(indices, wideIndices, p);
      if (index < 0 || index >= vocabulary) {
        if (slice == 0)
          recordError(error, launch, 0, 0, p, index, vocabulary);
        continue;
      }
      if (index >= first && index < last)
        table[index * width + j] += dy[p * width + j];
    }
  }
};

template <typename T, typename S = T> struct Dropout : Functor {
  static constexpr bool kGrouped = false;
  const S *x = nullptr; // stored as S (T, or bf16), computed in T
  const int64_t *step = nullptr;
  S *y = nullptr;
  uint64_t seed = 0;
  double rate = 0;
  T keepProbability = T(1.0);

  /// Elements; `count` is the number of Philox blocks, (elements + 3) / 4.
  int64_t elements = 0;
  uint64_t threshold = 0; // dropoutThreshold(rate)

  /// Elements 4b .. 4b+3 from block b's four words (dropoutKeep).
  ZRT_HOST_DEVICE void operator()(int64_t b) const {
    int64_t first = 4 * b;
    PhiloxBlock block = dropoutBlock(seed, static_cast<uint64_t>(first),
                                     static_cast<uint64_t>(*step));
    int64_t n = elements - first < 4 ? elements - first : 4;
    for (int64_t j = 0; j < n; ++j)
      y[first + j] = storeAs<S>(block.words[j] >= threshold
                                    ? loadAs<T>(x[first + j]) / keepProbability
                                    : T(0.0));
  }
};

/// Clipping by the global norm, as torch.nn.utils.clip_grad_norm_: the
/// gradients' factor min(1, max_norm / (norm + 1e-6)) in T, from the sum of
/// their squares; 1 without clipping (no sum). A NaN norm gives NaN.
template <typename T>
ZRT_HOST_DEVICE inline T clipCoefficient(const T *sumSquares, T maxNorm) {
  if (!sumSquares)
    return T(1.0);
  T c = maxNorm / (fSqrt(*sumSquares) + T(1e-6));
  return c > T(1.0) ? T(1.0) : c;
}

/// A learning-rate schedule (zt.lr_schedule): the factor of lr at step k
/// (optimizer steps taken before this one): linear warmup over `warmup`
/// steps, then constant, or decaying (cosine or linear) to `minFactor` at
/// step `decayEnd`. nanoGPT's get_lr divided by lr.
ZRT_HOST_DEVICE inline double lrScheduleFactor(int64_t k, int64_t warmup,
                                               int64_t decayEnd, bool cosine,
                                               bool linear, double minFactor) {
  if (k < warmup)
    return static_cast<double>(k + 1) / static_cast<double>(warmup + 1);
  if (!cosine && !linear)
    return 1.0;
  if (k >= decayEnd)
    return minFactor;
  double r =
      static_cast<double>(k - warmup) / static_cast<double>(decayEnd - warmup);
  double c = cosine ? 0.5 * (1.0 + dCos(3.14159265358979323846 * r)) : 1.0 - r;
  return minFactor + c * (1.0 - minFactor);
}

/// One element: the schedule's factor at the step counter's value.
template <typename T> struct LrSchedule : Functor {
  static constexpr bool kGrouped = false;
  const int64_t *step = nullptr;
  T *y = nullptr;
  int64_t warmupSteps = 0, decaySteps = 0;
  double minFactor = 0;
  bool cosine = false, linear = false;

  ZRT_HOST_DEVICE void operator()(int64_t) const {
    *y = static_cast<T>(lrScheduleFactor(*step, warmupSteps, decaySteps, cosine,
                                         linear, minFactor));
  }
};

/// The learning rate of this step: lr, times the schedule's factor when
/// there is one (read once per launch).
template <typename T>
ZRT_HOST_DEVICE inline T scheduledLr(T lr, const T *factor) {
  return factor ? lr * *factor : lr;
}

/// An update's gradient run: T, or mixed precision's bf16 widened.
template <typename T>
ZRT_HOST_DEVICE ZRT_INLINE void loadGradRun(const T *grad, const BFloat16 *gradBf16,
                                        int64_t first, T (&out)[kRunElements]) {
  if (!gradBf16)
    return loadRun(grad, first, out);
  BFloat16 raw[kRunElements];
  loadRun(gradBf16, first, raw);
  ZRT_UNROLL
  for (int e = 0; e < kRunElements; ++e)
    out[e] = loadAs<T>(raw[e]);
}

/// Updated in place when the outputs are the state's buffers.
template <typename T> struct Sgd : Functor {
  static constexpr bool kGrouped = false;
  const T *param = nullptr, *grad = nullptr, *buffer = nullptr;
  const BFloat16 *gradBf16 = nullptr; // instead of grad: mixed precision's
  const T *gradSumSquares = nullptr; // clipping, else null
  const T *lrFactor = nullptr;       // a schedule, else null
  T *newParam = nullptr, *newBuffer = nullptr;
  T lr = 0, momentum = 0, weightDecay = 0, maxGradNorm = 0;
  bool nesterov = false;

  struct Prepared {
    T clip, lr;
  };
  ZRT_HOST_DEVICE Prepared prepare() const {
    return {clipCoefficient(gradSumSquares, maxGradNorm),
            scheduledLr(lr, lrFactor)};
  }

  /// The new parameter (and momentum buffer, when there is one) from p, g
  /// and b.
  ZRT_HOST_DEVICE void update(T &p, T g, T &b, const Prepared &c) const {
    g = g * c.clip + weightDecay * p;
    if (!buffer) {
      p = p - c.lr * g;
      return;
    }
    b = momentum * b + g;
    p = nesterov ? p - c.lr * (g + momentum * b) : p - c.lr * b;
  }

  ZRT_HOST_DEVICE void operator()(int64_t i, const Prepared &c) const {
    T p = param[i], b = buffer ? buffer[i] : T(0.0);
    update(p, gradBf16 ? loadAs<T>(gradBf16[i]) : grad[i], b, c);
    if (buffer)
      newBuffer[i] = b;
    newParam[i] = p;
  }

  ZRT_HOST_DEVICE void elementRun(int64_t first, const Prepared &c) const {
    T ps[kRunElements], gs[kRunElements], bs[kRunElements] = {};
    loadRun(param, first, ps);
    loadGradRun(grad, gradBf16, first, gs);
    if (buffer)
      loadRun(buffer, first, bs);
    ZRT_UNROLL
    for (int e = 0; e < kRunElements; ++e)
      update(ps[e], gs[e], bs[e], c);
    if (buffer)
      storeRun(newBuffer, first, bs);
    storeRun(newParam, first, ps);
  }
};

template <typename T> struct Adamw : Functor {
  static constexpr bool kGrouped = false;
  const T *param = nullptr, *grad = nullptr, *expAvg = nullptr,
          *expAvgSq = nullptr;
  const BFloat16 *gradBf16 = nullptr; // instead of grad: mixed precision's
  const int64_t *step = nullptr;
  const T *gradSumSquares = nullptr; // clipping, else null
  const T *lrFactor = nullptr;       // a schedule, else null
  T *newParam = nullptr, *newExpAvg = nullptr, *newExpAvgSq = nullptr;
  double beta1 = 0, beta2 = 0; // from the plan, which states every one
  T lr = 0, eps = 0, weightDecay = 0, maxGradNorm = 0;

  struct Prepared {
    T correction1, correction2, clip, lr;
  };
  /// The bias corrections, the clipping factor and the learning rate, once
  /// per launch rather than per element.
  ZRT_HOST_DEVICE Prepared prepare() const {
    // The step counter counts from 0; bias correction uses t = step + 1.
    double t = static_cast<double>(*step) + 1.0;
    return {static_cast<T>(1.0 - dPow(beta1, t)),
            static_cast<T>(1.0 - dPow(beta2, t)),
            clipCoefficient(gradSumSquares, maxGradNorm),
            scheduledLr(lr, lrFactor)};
  }

  /// One element's update: p, m, v become the new parameter and moments.
  ZRT_HOST_DEVICE void update(T &p, T g, T &m, T &v, const Prepared &c) const {
    g = g * c.clip;
    T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2);
    T oneMinusB1 = static_cast<T>(1.0 - beta1);
    T oneMinusB2 = static_cast<T>(1.0 - beta2);
    m = b1 * m + oneMinusB1 * g;
    v = b2 * v + oneMinusB2 * g * g;
    T mHat = m / c.correction1;
    T vHat = v / c.correction2;
    p = p - c.lr * (mHat / (fSqrt(vHat) + eps) + weightDecay * p);
  }

  ZRT_HOST_DEVICE void operator()(int64_t i, const Prepared &c) const {
    T p = param[i], m = expAvg[i], v = expAvgSq[i];
    update(p, gradBf16 ? loadAs<T>(gradBf16[i]) : grad[i], m, v, c);
    newExpAvg[i] = m;
    newExpAvgSq[i] = v;
    newParam[i] = p;
  }

  ZRT_HOST_DEVICE void elementRun(int64_t first, const Prepared &c) const {
    T ps[kRunElements], gs[kRunElements], ms[kRunElements], vs[kRunElements];
    loadRun(param, first, ps);
    loadGradRun(grad, gradBf16, first, gs);
    loadRun(expAvg, first, ms);
    loadRun(expAvgSq, first, vs);
    ZRT_UNROLL
    for (int e = 0; e < kRunElements; ++e)
      update(ps[e], gs[e], ms[e], vs[e], c);
    storeRun(newExpAvg, first, ms);
    storeRun(newExpAvgSq, first, vs);
    storeRun(newParam, first, ps);
  }
};

//===----------------------------------------------------------------------===//
// Group kernels
//===----------------------------------------------------------------------===//

/// sum, mean or max over some dimensions: one group per result element,
/// striding over its reduced elements in row-major order.
enum class ReduceKind : int32_t { Sum, Mean, Max };

/// Summed in T, stored as S (T, or bf16: the bias gradients of mixed
/// precision's bf16 activations).
template <typename T, typename S = T> struct Reduce : Functor {
  static constexpr bool kGrouped = true;
  ReduceKind kind = ReduceKind::Sum;
  const S *x = nullptr;
  S *y = nullptr;
  StridedShape kept;    // result position -> operand offset
  StridedShape reduced; // reduced position -> offset within the row
  int64_t reducedCount = 0;

  ZRT_HOST_DEVICE T identity() const {
    return kind == ReduceKind::Max ? T(-INFINITY) : T(0.0);
  }
  ZRT_HOST_DEVICE T combine(T acc, T value) const {
    return kind == ReduceKind::Max ? maxKeepNaN(acc, value) : acc + value;
  }
  ZRT_HOST_DEVICE T finish(T acc) const {
    return kind == ReduceKind::Mean ? acc / static_cast<T>(reducedCount) : acc;
  }

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t o, G &group) const {
    int64_t base = kept.offsetOf(o);
    T acc = identity();
    for (int64_t j = group.lane; j < reducedCount; j += group.lanes)
      acc = combine(acc, loadAs<T>(x[base + reduced.offsetOf(j)]));
    acc = kind == ReduceKind::Max ? group.reduce(acc, MaxKeepNaN())
                                  : group.reduce(acc, Sum());
    if (group.lane == 0)
      y[o] = storeAs<S>(finish(acc));
  }
};

/// dy goes to the first maximal element (the first NaN, if any) of each
/// reduced row; every other element of dx is 0.
template <typename T> struct MaxGrad : Functor {
  static constexpr bool kGrouped = true;
  const T *x = nullptr, *dy = nullptr;
  T *dx = nullptr;
  StridedShape kept, reduced;
  int64_t reducedCount = 0;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t o, G &group) const {
    int64_t base = kept.offsetOf(o);
    // Each lane's own first NaN, else first maximum (the CPU's rule).
    int64_t best = -1;
    T bestValue = T(0.0);
    for (int64_t j = group.lane; j < reducedCount; j += group.lanes) {
      T v = x[base + reduced.offsetOf(j)];
      if (best < 0 || (!isNaN(bestValue) && (v > bestValue || isNaN(v)))) {
        best = j;
        bestValue = v;
      }
    }
    const int64_t none = INT64_MAX;
    int32_t anyNaN = group.reduce(
        static_cast<int32_t>(best >= 0 && isNaN(bestValue)), Max());
    int64_t chosen;
    if (anyNaN) {
      chosen = group.reduce(best >= 0 && isNaN(bestValue) ? best : none, Min());
    } else {
      T top = group.reduce(best >= 0 ? bestValue : -INFINITY, Max());
      chosen = group.reduce(best >= 0 && bestValue == top ? best : none, Min());
    }
    for (int64_t j = group.lane; j < reducedCount; j += group.lanes)
      dx[base + reduced.offsetOf(j)] = j == chosen ? dy[o] : T(0.0);
  }
};

/// Lines along an axis: line g starts at (g / inner) * size * inner +
/// g % inner and steps by inner.
struct AxisLines {
  int64_t size = 0, inner = 1;
  ZRT_HOST_DEVICE int64_t base(int64_t g) const {
    return (g / inner) * size * inner + g % inner;
  }
};

template <typename T> struct Softmax : Functor {
  static constexpr bool kGrouped = true;
  bool isLog = false;
  const T *x = nullptr;
  T *y = nullptr;
  AxisLines lines;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t g, G &group) const {
    int64_t base = lines.base(g), stride = lines.inner;
    T m = -INFINITY;
    for (int64_t j = group.lane; j < lines.size; j += group.lanes)
      m = maxSkipNaN(m, x[base + j * stride]);
    m = group.reduce(m, MaxSkipNaN());
    T sum = T(0.0);
    for (int64_t j = group.lane; j < lines.size; j += group.lanes)
      sum += fExp(x[base + j * stride] - m);
    sum = group.reduce(sum, Sum());
    if (isLog) {
      T logSum = fLog(sum);
      for (int64_t j = group.lane; j < lines.size; j += group.lanes)
        y[base + j * stride] = x[base + j * stride] - m - logSum;
      return;
    }
    for (int64_t j = group.lane; j < lines.size; j += group.lanes)
      y[base + j * stride] = fExp(x[base + j * stride] - m) / sum;
  }
};

/// Running sums along lines (cumsum): one line per index, summed in order
/// from its start (from its end when `reverse`), so every executor gives
/// the same bits.
template <typename T> struct Cumsum : Functor {
  static constexpr bool kGrouped = false;
  bool reverse = false;
  const void *x = nullptr;
  void *y = nullptr;
  /// T, or i32/i64 (summed as their unsigned forms: wrapping).
  MixedStorage storage = MixedStorage::Compute;
  AxisLines lines;

  template <typename V, typename S>
  ZRT_HOST_DEVICE void sumLine(int64_t i) const {
    int64_t base = lines.base(i), stride = lines.inner;
    S sum = S(0);
    for (int64_t j = 0; j < lines.size; ++j) {
      int64_t at = base + (reverse ? lines.size - 1 - j : j) * stride;
      sum += static_cast<S>(static_cast<const V *>(x)[at]);
      static_cast<V *>(y)[at] = static_cast<V>(sum);
    }
  }

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    if (storage == MixedStorage::I32)
      sumLine<int32_t, uint32_t>(i);
    else if (storage == MixedStorage::I64)
      sumLine<int64_t, uint64_t>(i);
    else
      sumLine<T, T>(i);
  }

  template <typename B> static void build(B &b) {
    Cumsum f;
    f.reverse = b.launch.params.reverse;
    f.x = b.template in<void>(0);
    f.y = b.template result<void>(0);
    f.storage = static_cast<MixedStorage>(b.inType(0).dtype);
    f.lines = b.axisLines(b.inType(0), f.count);
    b.push(f);
  }
};

/// N elements at `at`, `step` apart (a run when the step is 1: loadRun's
/// 16-byte loads where aligned).
template <int N, typename S>
ZRT_HOST_DEVICE ZRT_INLINE void loadSteps(const S *p, int64_t at, int64_t step,
                                          S (&out)[N]) {
  if (step == 1)
    return loadRun(p, at, out);
  ZRT_UNROLL
  for (int e = 0; e < N; ++e)
    out[e] = p[at + e * step];
}
template <int N, typename S>
ZRT_HOST_DEVICE ZRT_INLINE void storeSteps(S *p, int64_t at, int64_t step,
                                           const S (&v)[N]) {
  if (step == 1)
    return storeRun(p, at, v);
  ZRT_UNROLL
  for (int e = 0; e < N; ++e)
    p[at + e * step] = v[e];
}

/// rotary: rotary position embeddings over lines of the last dimension
/// (2 half elements): y = x cos + rotate_half(x) sin, rotate_half(x) =
/// [-x2, x1]; `transposed`, y = x cos + rotate_half^T(x sin) (the gradient).
/// Each product and the sum round to the storage as zt.mul and zt.add store
/// them, so the op gives the separate ops' bits. An element is a line: its
/// halves are read once, element k with k + half. x and y may be views
/// (any steps), cos and sin broadcasts; per operand (x, cos, sin, y), where
/// its lines start (rank 0: row-major) and the step along them. Stored as
/// T, or bf16 computed in T; beside bf16, cos and sin may be f32 tables,
/// rounded to bf16 as they are read (as zt.convert would store them).
template <typename T> struct Rotary : Functor {
  static constexpr bool kGrouped = false;
  bool transposed = false;
  bool bf16 = false;
  bool tablesF32 = false; // bf16 x with f32 cos and sin
  int64_t half = 0;
  const void *x = nullptr, *c = nullptr, *s = nullptr;
  void *y = nullptr;
  StridedShape starts[4];
  int64_t along[4] = {1, 1, 1, 1};

  ZRT_HOST_DEVICE int64_t lineAt(int k, int64_t line) const {
    return starts[k].rank == 0 ? line * 2 * half : starts[k].offsetOf(line);
  }

  /// A table's element as the products read it: rounded to S.
  template <typename S, typename C> ZRT_HOST_DEVICE static T table(C v) {
    return roundedAs<S>(loadAs<T>(v));
  }

  template <int N, typename S, typename C>
  ZRT_HOST_DEVICE ZRT_INLINE void rotateLine(int64_t line) const {
    const S *xp = static_cast<const S *>(x);
    const C *cp = static_cast<const C *>(c), *sp = static_cast<const C *>(s);
    S *yp = static_cast<S *>(y);
    int64_t at[4];
    ZRT_UNROLL
    for (int k = 0; k < 4; ++k)
      at[k] = lineAt(k, line);
    for (int64_t j = 0; j < half; j += N) {
      S x0[N], x1[N], y0[N], y1[N];
      C c0[N], c1[N], s0[N], s1[N];
      loadSteps(xp, at[0] + j * along[0], along[0], x0);
      loadSteps(xp, at[0] + (j + half) * along[0], along[0], x1);
      loadSteps(cp, at[1] + j * along[1], along[1], c0);
      loadSteps(cp, at[1] + (j + half) * along[1], along[1], c1);
      loadSteps(sp, at[2] + j * along[2], along[2], s0);
      loadSteps(sp, at[2] + (j + half) * along[2], along[2], s1);
      ZRT_UNROLL
      for (int e = 0; e < N; ++e) {
        T a = loadAs<T>(x0[e]), b = loadAs<T>(x1[e]);
        T ca = roundedAs<S>(a * table<S>(c0[e]));
        T cb = roundedAs<S>(b * table<S>(c1[e]));
        // Forward: [a c0 - b s0, b c1 + a s1]; transposed: [a c0 + b s1,
        // b c1 - a s0].
        T sb = roundedAs<S>(b * table<S>(transposed ? s1[e] : s0[e]));
        T sa = roundedAs<S>(a * table<S>(transposed ? s0[e] : s1[e]));
        y0[e] = storeAs<S>(transposed ? ca + sb : ca - sb);
        y1[e] = storeAs<S>(transposed ? cb - sa : cb + sa);
      }
      storeSteps(yp, at[3] + j * along[3], along[3], y0);
      storeSteps(yp, at[3] + (j + half) * along[3], along[3], y1);
    }
  }

  template <typename S, typename C>
  ZRT_HOST_DEVICE void line(int64_t i) const {
    if (half % kRunElements == 0)
      rotateLine<kRunElements, S, C>(i);
    else
      rotateLine<1, S, C>(i);
  }

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    if (!bf16)
      line<T, T>(i);
    else if (tablesF32)
      line<BFloat16, T>(i);
    else
      line<BFloat16, BFloat16>(i);
  }

  template <typename B> static void build(B &b) {
    Rotary f;
    f.transposed = b.launch.params.transposed;
    f.bf16 = b.resultIsBf16(0);
    f.tablesF32 = f.bf16 && !b.inIsBf16(1);
    f.x = b.template in<void>(0);
    f.c = b.template in<void>(1);
    f.s = b.template in<void>(2);
    f.y = b.template result<void>(0);
    for (int k = 0; k < 4; ++k)
      f.starts[k] = b.lineStarts(k == 3, k == 3 ? 0 : k, f.along[k]);
    const auto &shape = b.inType(0).shape;
    int64_t length = shape.empty() ? 0 : shape.back(), lines = 1;
    for (size_t d = 0; d + 1 < shape.size(); ++d)
      lines *= shape[d];
    f.half = length / 2;
    f.count = length == 0 ? 0 : lines;
    b.push(f);
  }
};

template <typename T> struct SoftmaxGrad : Functor {
  static constexpr bool kGrouped = true;
  bool isLog = false;
  const T *y = nullptr, *dy = nullptr;
  T *dx = nullptr;
  AxisLines lines;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t g, G &group) const {
    int64_t base = lines.base(g), stride = lines.inner;
    T sum = T(0.0);
    for (int64_t j = group.lane; j < lines.size; j += group.lanes) {
      int64_t i = base + j * stride;
      sum += isLog ? dy[i] : dy[i] * y[i];
    }
    sum = group.reduce(sum, Sum());
    for (int64_t j = group.lane; j < lines.size; j += group.lanes) {
      int64_t i = base + j * stride;
      dx[i] = isLog ? dy[i] - fExp(y[i]) * sum : y[i] * (dy[i] - sum);
    }
  }
};

/// Mean and 1/std of a row of `width` stored as S (T, or bf16), in T, as
/// the CPU computes them.
template <typename T, typename S, typename G>
ZRT_HOST_DEVICE inline void layerNormStats(const S *row, int64_t width,
                                           T epsilon, G &group, T &mean,
                                           T &rstd) {
  T sum = T(0.0);
  for (int64_t j = group.lane; j < width; j += group.lanes)
    sum += loadAs<T>(row[j]);
  mean = group.reduce(sum, Sum()) / static_cast<T>(width);
  T sq = T(0.0);
  for (int64_t j = group.lane; j < width; j += group.lanes)
    sq += (loadAs<T>(row[j]) - mean) * (loadAs<T>(row[j]) - mean);
  T var = group.reduce(sq, Sum()) / static_cast<T>(width);
  rstd = T(1.0) / fSqrt(var + epsilon);
}

/// 1 / sqrt(mean(x^2) + epsilon) of a row stored as S.
template <typename T, typename S, typename G>
ZRT_HOST_DEVICE inline T rmsNormScale(const S *row, int64_t width, T epsilon,
                                      G &group) {
  T sq = T(0.0);
  for (int64_t j = group.lane; j < width; j += group.lanes)
    sq += loadAs<T>(row[j]) * loadAs<T>(row[j]);
  return T(1.0) /
         fSqrt(group.reduce(sq, Sum()) / static_cast<T>(width) + epsilon);
}

// The normalizations and their gradients: activations (x, y, dy, dx)
// stored as S (T, or bf16: mixed precision), the affine parameters, their
// gradients and the statistics in T.

template <typename T, typename S = T> struct LayerNorm : Functor {
  static constexpr bool kGrouped = true;
  const S *x = nullptr;
  const T *gamma = nullptr, *beta = nullptr;
  S *y = nullptr;
  int64_t width = 0;
  T epsilon = 0;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t r, G &group) const {
    const S *xr = x + r * width;
    S *yr = y + r * width;
    T mean, rstd;
    layerNormStats(xr, width, epsilon, group, mean, rstd);
    for (int64_t j = group.lane; j < width; j += group.lanes)
      yr[j] = storeAs<S>((loadAs<T>(xr[j]) - mean) * rstd * gamma[j] + beta[j]);
  }
};

template <typename T, typename S = T> struct RmsNorm : Functor {
  static constexpr bool kGrouped = true;
  const S *x = nullptr;
  const T *gamma = nullptr;
  S *y = nullptr;
  int64_t width = 0;
  T epsilon = 0;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t r, G &group) const {
    const S *xr = x + r * width;
    S *yr = y + r * width;
    T scale = rmsNormScale(xr, width, epsilon, group);
    for (int64_t j = group.lane; j < width; j += group.lanes)
      yr[j] = storeAs<S>(loadAs<T>(xr[j]) * scale * gamma[j]);
  }
};

/// layer_norm_grad, rows: dx = rstd (g - mean(g) - xhat mean(g xhat)) with
/// g = dy gamma; keeps each row's mean and rstd in the workspace for the
/// column kernel.
template <typename T, typename S = T> struct LayerNormGradRows : Functor {
  static constexpr bool kGrouped = true;
  const S *x = nullptr, *dy = nullptr;
  const T *gamma = nullptr;
  S *dx = nullptr;
  T *stats = nullptr; // 2 per row, in the workspace
  int64_t width = 0;
  T epsilon = 0;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t r, G &group) const {
    const S *xr = x + r * width;
    const S *dyr = dy + r * width;
    S *dxr = dx + r * width;
    T mean, rstd;
    layerNormStats(xr, width, epsilon, group, mean, rstd);
    T sumG = T(0.0), sumGXhat = T(0.0);
    for (int64_t j = group.lane; j < width; j += group.lanes) {
      T xhat = (loadAs<T>(xr[j]) - mean) * rstd;
      T g = loadAs<T>(dyr[j]) * gamma[j];
      sumG += g;
      sumGXhat += g * xhat;
    }
    sumG = group.reduce(sumG, Sum());
    sumGXhat = group.reduce(sumGXhat, Sum());
    T meanG = sumG / static_cast<T>(width);
    T meanGXhat = sumGXhat / static_cast<T>(width);
    for (int64_t j = group.lane; j < width; j += group.lanes) {
      T xhat = (loadAs<T>(xr[j]) - mean) * rstd;
      T g = loadAs<T>(dyr[j]) * gamma[j];
      dxr[j] = storeAs<S>(rstd * (g - meanG - xhat * meanGXhat));
    }
    if (group.lane == 0) {
      stats[2 * r] = mean;
      stats[2 * r + 1] = rstd;
    }
  }
};

/// layer_norm_grad, columns: dgamma and dbeta sum dy xhat and dy over the
/// rows, one group per column (one lane: row order, as the CPU).
template <typename T, typename S = T> struct LayerNormGradColumns : Functor {
  static constexpr bool kGrouped = true;
  using Acc = T;
  const S *x = nullptr, *dy = nullptr;
  const T *stats = nullptr;
  T *dgamma = nullptr, *dbeta = nullptr;
  int64_t width = 0, rows = 0;

  /// Column sums, one row at a time (the host runs them row-major).
  static constexpr int kSums = 2;
  ZRT_HOST_DEVICE void addRow(int64_t r, int64_t j, T *sums) const {
    T xhat = (loadAs<T>(x[r * width + j]) - stats[2 * r]) * stats[2 * r + 1];
    T g = loadAs<T>(dy[r * width + j]);
    sums[0] += g * xhat;
    sums[1] += g;
  }
  ZRT_HOST_DEVICE void store(int64_t j, const T *sums) const {
    dgamma[j] = sums[0];
    dbeta[j] = sums[1];
  }
  ZRT_HOST_DEVICE void load(int64_t j, T *sums) const {
    sums[0] = dgamma[j];
    sums[1] = dbeta[j];
  }

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t j, G &group) const {
    T sums[kSums] = {T(0.0), T(0.0)};
    for (int64_t r = group.lane; r < rows; r += group.lanes)
      addRow(r, j, sums);
    sums[0] = group.reduce(sums[0], Sum());
    sums[1] = group.reduce(sums[1], Sum());
    if (group.lane == 0)
      store(j, sums);
  }
};

/// rms_norm_grad, rows: with r = 1/rms and g = dy gamma,
/// dx = r g - x r^3 mean(g x); keeps r per row in the workspace.
template <typename T, typename S = T> struct RmsNormGradRows : Functor {
  static constexpr bool kGrouped = true;
  const S *x = nullptr, *dy = nullptr;
  const T *gamma = nullptr;
  S *dx = nullptr;
  T *stats = nullptr; // 1/rms per row, in the workspace
  int64_t width = 0;
  T epsilon = 0;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t r, G &group) const {
    const S *xr = x + r * width;
    const S *dyr = dy + r * width;
    S *dxr = dx + r * width;
    T scale = rmsNormScale(xr, width, epsilon, group);
    T sumGX = T(0.0);
    for (int64_t j = group.lane; j < width; j += group.lanes)
      sumGX += loadAs<T>(dyr[j]) * gamma[j] * loadAs<T>(xr[j]);
    sumGX = group.reduce(sumGX, Sum());
    T correction = scale * scale * scale * (sumGX / static_cast<T>(width));
    for (int64_t j = group.lane; j < width; j += group.lanes)
      dxr[j] = storeAs<S>(scale * loadAs<T>(dyr[j]) * gamma[j] -
                          loadAs<T>(xr[j]) * correction);
    if (group.lane == 0)
      stats[r] = scale;
  }
};

/// rms_norm_grad, columns: dgamma, one group per column.
template <typename T, typename S = T> struct RmsNormGradColumns : Functor {
  static constexpr bool kGrouped = true;
  using Acc = T;
  const S *x = nullptr, *dy = nullptr;
  const T *stats = nullptr; // 1/rms per row
  T *dgamma = nullptr;
  int64_t width = 0, rows = 0;

  static constexpr int kSums = 1;
  ZRT_HOST_DEVICE void addRow(int64_t r, int64_t j, T *sums) const {
    sums[0] += loadAs<T>(dy[r * width + j]) * loadAs<T>(x[r * width + j]) *
               stats[r];
  }
  ZRT_HOST_DEVICE void store(int64_t j, const T *sums) const {
    dgamma[j] = sums[0];
  }
  ZRT_HOST_DEVICE void load(int64_t j, T *sums) const { sums[0] = dgamma[j]; }

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t j, G &group) const {
    T sums[kSums] = {T(0.0)};
    for (int64_t r = group.lane; r < rows; r += group.lanes)
      addRow(r, j, sums);
    sums[0] = group.reduce(sums[0], Sum());
    if (group.lane == 0)
      store(j, sums);
  }
};

/// sum or mean over the leading dimensions of a [rows, width] operand (bias
/// gradients) as a column sum's terms (ChunkedColumns): summed in T, stored
/// as S.
template <typename T, typename S = T> struct ColumnValues {
  using Acc = T;
  static constexpr int kSums = 1;
  const S *x = nullptr;
  S *y = nullptr;
  int64_t width = 0, rows = 0;
  bool mean = false;

  ZRT_HOST_DEVICE void addRow(int64_t r, int64_t j, T *sums) const {
    sums[0] += loadAs<T>(x[r * width + j]);
  }
  ZRT_HOST_DEVICE void store(int64_t j, const T *sums) const {
    y[j] = storeAs<S>(mean ? sums[0] / static_cast<T>(rows) : sums[0]);
  }
};

/// A column sum (columnSumShape; C: ColumnValues, LayerNormGradColumns or
/// RmsNormGradColumns) as the GPU runs it: element kernels, adjacent
/// threads on adjacent columns. The chunks pass: element i sums column
/// i % width over chunk i / width's rows, in row order, and with one chunk
/// stores the result (the CPU's order and bits), else its partial sums.
/// The totals pass (`totals`, one element per column) adds a column's
/// partials in chunk order and stores the result.
template <typename C> struct ChunkedColumns : Functor {
  static constexpr bool kGrouped = false;
  using T = typename C::Acc;
  C columns;
  T *partials = nullptr; // [chunks][C::kSums][width]
  int64_t chunks = 1, chunkRows = 0;
  bool totals = false;

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t width = columns.width;
    T sums[C::kSums];
    for (int k = 0; k < C::kSums; ++k)
      sums[k] = T(0.0);
    if (totals) {
      for (int64_t c = 0; c < chunks; ++c)
        for (int k = 0; k < C::kSums; ++k)
          sums[k] += partials[(c * C::kSums + k) * width + i];
      columns.store(i, sums);
      return;
    }
    int64_t j = i % width, c = i / width;
    int64_t first = c * chunkRows;
    int64_t end = first + chunkRows < columns.rows ? first + chunkRows
                                                   : columns.rows;
    for (int64_t r = first; r < end; ++r)
      columns.addRow(r, j, sums);
    if (chunks == 1) {
      columns.store(j, sums);
      return;
    }
    for (int k = 0; k < C::kSums; ++k)
      partials[(c * C::kSums + k) * width + j] = sums[k];
  }
};

/// A row's maximum (NaN ignored) and sum of exp(x - max).
/// A row stored as S (T, or bf16), in T.
template <typename T, typename S, typename G>
ZRT_HOST_DEVICE inline void rowExpSum(const S *row, int64_t size, G &group,
                                      T &max, T &sum) {
  T m = -INFINITY;
  for (int64_t c = group.lane; c < size; c += group.lanes)
    m = maxSkipNaN(m, loadAs<T>(row[c]));
  max = group.reduce(m, MaxSkipNaN());
  T s = T(0.0);
  for (int64_t c = group.lane; c < size; c += group.lanes)
    s += fExp(loadAs<T>(row[c]) - max);
  sum = group.reduce(s, Sum());
}

/// Labels of a loss, with the label value that marks a row ignored
/// (cross-entropy's ignore_index), if any.
struct LossLabels {
  const void *labels = nullptr;
  bool wide = false;
  bool ignores = false;
  int64_t ignoreIndex = 0;

  ZRT_HOST_DEVICE int64_t at(int64_t r) const {
    return readIndex(labels, wide, r);
  }
  ZRT_HOST_DEVICE bool ignored(int64_t label) const {
    return ignores && label == ignoreIndex;
  }
};

/// A row's max and exp-sum and, with label_smoothing, its sum (for the
/// uniform part of the target): what a row's loss is computed from.
template <typename T, typename S, typename G>
ZRT_HOST_DEVICE inline void crossEntropyRowStats(const S *row, int64_t size,
                                                 T smoothing, G &group, T &max,
                                                 T &sum, T &total) {
  rowExpSum(row, size, group, max, sum);
  total = T(0.0);
  if (smoothing != T(0.0)) {
    for (int64_t c = group.lane; c < size; c += group.lanes)
      total += loadAs<T>(row[c]);
    total = group.reduce(total, Sum());
  }
}

/// A row's cross-entropy from its max, exp-sum, label logit and (with
/// label_smoothing e) sum: the loss kernels' one formula.
template <typename T>
ZRT_HOST_DEVICE inline T crossEntropyOfRow(T max, T sum, T target, T total,
                                           T smoothing, int64_t classes) {
  return smoothing == T(0.0)
             ? max + fLog(sum) - target
             : max + fLog(sum) - (T(1.0) - smoothing) * target -
                   smoothing * total / T(classes);
}

/// A row's gradient, g (softmax - target) / rows, each lane its columns:
/// the gradient kernels' one loop (out may be row: each element is read
/// before it is written, by the same lane).
template <typename T, typename S, typename G>
ZRT_HOST_DEVICE inline void crossEntropyGradOfRow(
    const S *row, S *out, int64_t classes, int64_t label, T max, T sum, T g,
    T rows, T smoothing, G &group) {
  for (int64_t c = group.lane; c < classes; c += group.lanes) {
    T p = fExp(loadAs<T>(row[c]) - max) / sum;
    T onehot = c == label ? T(1.0) : T(0.0);
    if (smoothing != T(0.0))
      onehot = (T(1.0) - smoothing) * onehot + smoothing / T(classes);
    out[c] = storeAs<S>(g * (p - onehot) / rows);
  }
}

/// softmax_cross_entropy, rows: each row's loss into the workspace (NaN for
/// a bad label, which is recorded; 0 for an ignored one). Logits stored as
/// S (T, or bf16).
template <typename T, typename S = T> struct CrossEntropyRows : Functor {
  static constexpr bool kGrouped = true;
  const S *logits = nullptr;
  LossLabels labels;
  T *losses = nullptr; // 1 per row, in the workspace
  int64_t classes = 0;
  T smoothing = T(0.0); // label_smoothing: e / C on every class
  DeviceError *error = nullptr;
  int32_t launch = 0;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t r, G &group) const {
    int64_t label = labels.at(r);
    if (labels.ignored(label)) {
      if (group.lane == 0)
        losses[r] = T(0.0);
      return;
    }
    bool bad = label < 0 || label >= classes;
    const S *row = logits + r * classes;
    T max, sum, total;
    crossEntropyRowStats(row, classes, smoothing, group, max, sum, total);
    if (group.lane != 0)
      return;
    if (bad) {
      recordError(error, launch, 1, 1, r, label, classes);
      losses[r] = NAN;
      return;
    }
    losses[r] = crossEntropyOfRow(max, sum, loadAs<T>(row[label]), total,
                                  smoothing, classes);
  }
};

/// sum x[i]^2 over chunk g of x (one group per chunk), summed in double
/// into sums[g]: the first step of sum_squares. An operand of one chunk
/// (`y` set) is the whole step: partial + its sum goes to y, rounded once.
template <typename T> struct SumSquaresChunks : Functor {
  static constexpr bool kGrouped = true;
  const T *x = nullptr;
  const BFloat16 *xBf16 = nullptr; // instead of x: a bf16 gradient
  double *sums = nullptr;
  const T *partial = nullptr; // one chunk: the running total, or null
  T *y = nullptr;             // one chunk: the result
  int64_t elements = 0, chunk = 0;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t g, G &group) const {
    int64_t begin = g * chunk;
    int64_t end = elements - begin < chunk ? elements : begin + chunk;
    double total = 0.0;
    for (int64_t i = begin + group.lane; i < end; i += group.lanes) {
      double v = xBf16 ? static_cast<double>(bf16ToFloat(xBf16[i]))
                       : static_cast<double>(x[i]);
      total += v * v;
    }
    total = group.reduce(total, Sum());
    if (group.lane != 0)
      return;
    if (y)
      *y = static_cast<T>((partial ? static_cast<double>(*partial) : 0.0) +
                          total);
    else
      sums[g] = total;
  }
};

/// partial + the chunks' sums (one group), rounded once to T: a link of the
/// chain that clipping by the global norm sums the gradients' squares in.
template <typename T> struct SumSquares : Functor {
  static constexpr bool kGrouped = true;
  const double *sums = nullptr;
  const T *partial = nullptr; // the running total, or null
  T *y = nullptr;
  int64_t chunks = 0;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t, G &group) const {
    double total = 0.0;
    for (int64_t i = group.lane; i < chunks; i += group.lanes)
      total += sums[i];
    total = group.reduce(total, Sum());
    if (group.lane == 0)
      *y = static_cast<T>((partial ? static_cast<double>(*partial) : 0.0) +
                          total);
  }
};

/// A sum of `elements` floats in order (one group), divided by `divisor`:
/// the mean loss of the rows, or mse. With `labels` ignoring some rows, the
/// divisor is the number of rows kept instead; and with `a` null, that
/// number is the result (cross-entropy's gradient divides by it).
template <typename T> struct MeanOf : Functor {
  static constexpr bool kGrouped = true;
  const T *a = nullptr;
  const T *b = nullptr; // mse: sum (a - b)^2 instead of a
  LossLabels labels;
  T *y = nullptr;
  int64_t elements = 0;
  T divisor = T(1.0);

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t, G &group) const {
    T total = T(0.0), kept = T(0.0);
    for (int64_t i = group.lane; i < elements; i += group.lanes) {
      if (a)
        total += b ? (a[i] - b[i]) * (a[i] - b[i]) : a[i];
      if (labels.ignores && !labels.ignored(labels.at(i)))
        kept += T(1.0);
    }
    total = group.reduce(total, Sum());
    if (labels.ignores)
      kept = group.reduce(kept, Sum());
    if (group.lane == 0)
      *y = !a ? kept : total / (labels.ignores ? kept : divisor);
  }
};

/// softmax_cross_entropy_grad, rows: a row's gradient; with `losses` also
/// its loss (softmax_cross_entropy_fused: CrossEntropyRows's loss from the
/// same max and exp-sum, so one pass over the logits serves both, with the
/// two kernels' bits). The gradient may be written over the logits (dx ==
/// logits): the label's logit is read first, by the lane that owns its
/// column, which also writes the row's loss. Logits and their gradient
/// stored as S (T, or bf16); the loss's gradient is a T.
template <typename T, typename S = T> struct CrossEntropyGradRows : Functor {
  static constexpr bool kGrouped = true;
  const S *logits = nullptr;
  LossLabels labels;
  const T *lossGrad = nullptr;
  S *dx = nullptr;
  T *losses = nullptr; // fused: 1 per row, in the workspace
  int64_t classes = 0;
  T rowCount = T(1.0);
  const T *keptRows = nullptr; // with ignored labels: the rows kept
  T smoothing = T(0.0);
  DeviceError *error = nullptr;
  int32_t launch = 0;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t r, G &group) const {
    int64_t label = labels.at(r);
    S *out = dx + r * classes;
    if (labels.ignored(label)) {
      if (losses && group.lane == 0)
        losses[r] = T(0.0);
      for (int64_t c = group.lane; c < classes; c += group.lanes)
        out[c] = storeAs<S>(T(0.0));
      return;
    }
    bool bad = label < 0 || label >= classes;
    if (bad && group.lane == 0)
      recordError(error, launch, 1, 1, r, label, classes);
    // The lane that writes the loss: the label's column's, else lane 0.
    bool owner =
        losses && (bad ? group.lane == 0 : label % group.lanes == group.lane);
    const S *row = logits + r * classes;
    T target = owner && !bad ? loadAs<T>(row[label]) : T(0.0);
    T rows = keptRows ? *keptRows : rowCount;
    T max, sum, total;
    crossEntropyRowStats(row, classes, losses ? smoothing : T(0.0), group, max,
                         sum, total);
    if (owner)
      losses[r] = bad ? T(NAN)
                      : crossEntropyOfRow(max, sum, target, total, smoothing,
                                          classes);
    crossEntropyGradOfRow(row, out, classes, label, max, sum, *lossGrad, rows,
                          smoothing, group);
  }
};

//===----------------------------------------------------------------------===//
// Convolutions (an image at a time: columns, then GEMM steps)
//===----------------------------------------------------------------------===//

/// One image's convolution geometry: input [C, H, W], kernel [KH, KW],
/// output [OH, OW]; column row (c, r, s) reads input (c, oh sh - ph + r dh,
/// ow sw - pw + s dw) for column (oh, ow), 0 in the padding.
struct ConvGeometry {
  int64_t channels = 0, height = 0, width = 0, kh = 0, kw = 0;
  int64_t outHeight = 0, outWidth = 0;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;

  ZRT_HOST_DEVICE int64_t columns() const { return outHeight * outWidth; }
};

/// The geometry of a conv2d or max_pool2d launch (or their gradients'):
/// input 0 [N, C, H, W], a [kh, kw] window, the launch's stride, padding
/// and dilation.
template <typename B>
ConvGeometry convGeometry(const B &b, int64_t kh, int64_t kw) {
  const auto &x = b.inType(0).shape;
  const auto &p = b.launch.params;
  ConvGeometry g;
  g.channels = x[1];
  g.height = x[2];
  g.width = x[3];
  g.kh = kh;
  g.kw = kw;
  g.sh = p.strides[0];
  g.sw = p.strides[1];
  g.ph = p.padding[0];
  g.pw = p.padding[1];
  g.dh = p.dilation[0];
  g.dw = p.dilation[1];
  g.outHeight = (g.height + 2 * g.ph - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  g.outWidth = (g.width + 2 * g.pw - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  return g;
}

/// Calls f(oh, ow, r, s) for each output position (oh, ow) whose window
/// reads input (ih, iw), at tap (r, s), in order of the taps: the gathers
/// back to the input (col2im, max pooling's gradient) sum in this order.
template <typename F>
ZRT_HOST_DEVICE inline void forEachWindowReading(const ConvGeometry &g,
                                                 int64_t ih, int64_t iw, F f) {
  for (int64_t r = 0; r < g.kh; ++r) {
    int64_t top = ih + g.ph - r * g.dh;
    if (top < 0 || top % g.sh != 0 || top / g.sh >= g.outHeight)
      continue;
    for (int64_t s = 0; s < g.kw; ++s) {
      int64_t left = iw + g.pw - s * g.dw;
      if (left < 0 || left % g.sw != 0 || left / g.sw >= g.outWidth)
        continue;
      f(top / g.sh, left / g.sw, r, s);
    }
  }
}

/// The output columns ow of a window row whose tap sits at input column
/// ow * sw + offset: [first, last) are those inside the image's width.
ZRT_HOST_DEVICE inline void columnsInside(const ConvGeometry &g, int64_t offset,
                                          int64_t &first, int64_t &last) {
  first = offset >= 0 ? 0 : (g.sw - 1 - offset) / g.sw;
  last = offset >= g.width ? 0 : (g.width - 1 - offset) / g.sw + 1;
  last = last < g.outWidth ? last : g.outWidth;
  first = first < last ? first : last;
}

/// im2col: cols[(c KH + r) KW + s][oh OW + ow] from one image, one output
/// row (c, r, s, oh) per index: its columns read along one input row, so
/// the inner loop is a (strided) copy with no division.
template <typename T> struct Im2col : Functor {
  static constexpr bool kGrouped = false;
  const T *x = nullptr; // the image [C, H, W]
  T *cols = nullptr;
  ConvGeometry g;

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    int64_t oh = i % g.outHeight, row = i / g.outHeight;
    int64_t s = row % g.kw, r = row / g.kw % g.kh, c = row / (g.kw * g.kh);
    T *to = cols + row * g.columns() + oh * g.outWidth;
    int64_t ih = oh * g.sh - g.ph + r * g.dh, offset = s * g.dw - g.pw;
    int64_t first = 0, last = 0;
    if (ih >= 0 && ih < g.height)
      columnsInside(g, offset, first, last);
    // Indices, not a pointer moved by a negative offset, outside the image.
    int64_t from = (c * g.height + ih) * g.width + offset;
    for (int64_t ow = 0; ow < first; ++ow)
      to[ow] = T(0.0);
    if (g.sw == 1)
      for (int64_t ow = first; ow < last; ++ow)
        to[ow] = x[from + ow];
    else
      for (int64_t ow = first; ow < last; ++ow)
        to[ow] = x[from + ow * g.sw];
    for (int64_t ow = last; ow < g.outWidth; ++ow)
      to[ow] = T(0.0);
  }
};

/// col2im, gathered: dx[c][ih][iw] = the sum, over the kernel positions
/// (r, s) in order, of the columns that read it: no atomics, the same bits
/// everywhere. One input row (c, ih) per index, each tap's columns added
/// along it (each element still sums its taps in (r, s) order).
template <typename T> struct Col2im : Functor {
  static constexpr bool kGrouped = false;
  const T *cols = nullptr;
  T *dx = nullptr; // the image's gradient [C, H, W]
  ConvGeometry g;

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    int64_t ih = i % g.height, c = i / g.height;
    T *to = dx + i * g.width;
    for (int64_t iw = 0; iw < g.width; ++iw)
      to[iw] = T(0.0);
    for (int64_t r = 0; r < g.kh; ++r) {
      int64_t top = ih + g.ph - r * g.dh;
      if (top < 0 || top % g.sh != 0 || top / g.sh >= g.outHeight)
        continue;
      for (int64_t s = 0; s < g.kw; ++s) {
        int64_t offset = s * g.dw - g.pw, first = 0, last = 0;
        columnsInside(g, offset, first, last);
        const T *from = cols + ((c * g.kh + r) * g.kw + s) * g.columns() +
                        top / g.sh * g.outWidth;
        if (g.sw == 1)
          for (int64_t ow = first; ow < last; ++ow)
            to[ow + offset] += from[ow];
        else
          for (int64_t ow = first; ow < last; ++ow)
            to[ow * g.sw + offset] += from[ow];
      }
    }
  }
};

/// The pooling window of output (oh, ow) over one [H, W] plane: its first
/// maximum in row-major order (a NaN wins, as in PyTorch), as the index
/// into the plane, or -1 when the window is all padding.
template <typename T>
ZRT_HOST_DEVICE inline int64_t windowArgmax(const T *plane, const ConvGeometry &g,
                                           int64_t oh, int64_t ow) {
  int64_t best = -1;
  T top = T(0.0);
  for (int64_t r = 0; r < g.kh; ++r) {
    int64_t ih = oh * g.sh - g.ph + r * g.dh;
    if (ih < 0 || ih >= g.height)
      continue;
    for (int64_t s = 0; s < g.kw; ++s) {
      int64_t iw = ow * g.sw - g.pw + s * g.dw;
      if (iw < 0 || iw >= g.width)
        continue;
      T v = plane[ih * g.width + iw];
      if (best < 0 || v > top || v != v) { // as PyTorch: a NaN wins
        best = ih * g.width + iw;
        top = v;
      }
    }
  }
  return best;
}

/// The geometry of a max_pool2d launch (or its gradient's), whose pooled
/// result has type `pooled`: its size as the loader's rule gave it
/// (pool2dShape; ceil_mode rounds it up).
template <typename B, typename TT>
ConvGeometry poolGeometry(const B &b, const TT &pooled) {
  const auto &window = b.launch.params.kernelSize;
  ConvGeometry g = convGeometry(b, window[0], window[1]);
  g.outHeight = pooled.shape[2];
  g.outWidth = pooled.shape[3];
  return g;
}

/// max_pool2d: each output element, the maximum of its window.
template <typename T> struct MaxPool2d : Functor {
  static constexpr bool kGrouped = false;
  const T *x = nullptr;
  T *y = nullptr;
  ConvGeometry g;

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    int64_t plane = i / g.columns(), at = i % g.columns();
    const T *in = x + plane * g.height * g.width;
    int64_t best = windowArgmax(in, g, at / g.outWidth, at % g.outWidth);
    y[i] = best < 0 ? T(-INFINITY) : in[best];
  }

  template <typename B> static void build(B &b) {
    MaxPool2d f;
    f.x = b.in(0);
    f.y = b.result(0);
    f.g = poolGeometry(b, b.outType(0));
    f.count = b.outType(0).numElements();
    b.push(f);
  }
};

/// max_pool2d_grad, gathered: each input element sums the gradients of the
/// windows whose maximum it is (recomputed from the input: no indices are
/// kept), in order: no atomics, the same bits everywhere.
template <typename T> struct MaxPool2dGrad : Functor {
  static constexpr bool kGrouped = false;
  const T *x = nullptr, *dy = nullptr;
  T *dx = nullptr;
  ConvGeometry g;

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    int64_t area = g.height * g.width, plane = i / area, at = i % area;
    int64_t ih = at / g.width, iw = at % g.width;
    const T *in = x + plane * area;
    const T *grad = dy + plane * g.columns();
    T sum = T(0.0);
    forEachWindowReading(g, ih, iw, [&](int64_t oh, int64_t ow, int64_t, int64_t) {
      if (windowArgmax(in, g, oh, ow) == at)
        sum += grad[oh * g.outWidth + ow];
    });
    dx[i] = sum;
  }

  template <typename B> static void build(B &b) {
    MaxPool2dGrad f;
    f.x = b.in(0);
    f.dy = b.in(1);
    f.dx = b.result(0);
    f.g = poolGeometry(b, b.inType(1));
    f.count = b.outType(0).numElements();
    b.push(f);
  }
};

//===----------------------------------------------------------------------===//
// Attention (a block of query rows at a time; the products are GEMM steps)
//===----------------------------------------------------------------------===//

/// Attention's operand rows through its layout (HeadLayout, with the heads
/// per run and the rows per head): row r of the [runs, heads, rows, width]
/// operand starts at at(r). Row-major, at(r) = r * width.
struct HeadRows {
  int64_t outer = 0, head = 0, row = 0, heads = 1, rows = 1;
  ZRT_HOST_DEVICE int64_t at(int64_t r) const {
    int64_t item = r / rows;
    return item / heads * outer + item % heads * head + r % rows * row;
  }
};

/// attention_grad's key or value gradient written through its layout, a
/// row at a time: row r of the [runs, heads, rows, width] sums in T (0 when
/// `sums` is null: the start of a result the blocks add into), stored as S.
template <typename T, typename S = T> struct HeadStore : Functor {
  static constexpr bool kGrouped = true;
  const T *sums = nullptr;
  S *y = nullptr;
  HeadRows to;
  int64_t width = 1;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t r, G &group) const {
    S *row = y + to.at(r);
    const T *from = sums ? sums + r * width : nullptr;
    for (int64_t j = group.lane; j < width; j += group.lanes)
      row[j] = storeAs<S>(from ? from[j] : T(0.0));
  }
};

/// Where a block of attention rows is: row g of the block is query
/// `first + g % rows` of head `g / rows`, `width` scores long (the keys the
/// block sees); that query sees `seen(q)` of them, the rest are masked, and
/// of those, with a mask, the keys `allowed` by it.
struct AttentionBlock {
  int64_t rows = 0, width = 0, first = 0, queries = 0, keys = 0;
  bool causal = false;
  /// The mask (one byte per element), read as [B..., S, T] through
  /// `maskRead`'s strides (0 along its broadcast dimensions); or null.
  const uint8_t *mask = nullptr;
  StridedShape maskRead;

  ZRT_HOST_DEVICE int64_t query(int64_t g) const { return first + g % rows; }
  /// The query's row of logsumexp (and of rowsum(dy * y)).
  ZRT_HOST_DEVICE int64_t rowOf(int64_t g) const {
    return g / rows * queries + query(g);
  }
  ZRT_HOST_DEVICE int64_t seen(int64_t q) const {
    return causal ? (q + 1 < keys ? q + 1 : keys) : keys;
  }
  /// Whether block row g's query sees key c (c < seen(query(g))).
  ZRT_HOST_DEVICE bool allowed(int64_t g, int64_t c) const {
    return !mask || mask[maskRead.offsetOf(rowOf(g) * keys + c)] != 0;
  }

  /// Dropout of the probabilities (`step` null without): probability c of
  /// block row g is kept where zt.dropout at `seed` and `*step` keeps
  /// element (rowOf(g), c) of the [B..., S, T] probabilities (dropoutKeep),
  /// then divided by `keep` (1 - rate, in the executor's type).
  const int64_t *step = nullptr;
  uint64_t seed = 0, threshold = 0;
  double keep = 1.0;
  /// The last Philox block drawn (one serves four consecutive elements).
  struct Draw {
    uint64_t counter = ~uint64_t(0);
    PhiloxBlock block{};
  };
  ZRT_HOST_DEVICE bool dropped(int64_t g, int64_t c, Draw &draw) const {
    if (!step)
      return false;
    uint64_t index = static_cast<uint64_t>(rowOf(g) * keys + c);
    if (draw.counter != index / 4) {
      draw.counter = index / 4;
      draw.block = dropoutBlock(seed, index, static_cast<uint64_t>(*step));
    }
    return draw.block.words[index % 4] < threshold;
  }
};

/// attention, per block row, in place: the scores become probabilities
/// (softmax of scale * score over the keys the query sees, 0 beyond them),
/// and the row's logsumexp is stored. With bf16 storage the probabilities
/// are also written rounded to `rounded` for the product with bf16 values
/// (as FlashAttention and cuDNN round them).
template <typename T> struct AttentionRows : Functor {
  static constexpr bool kGrouped = true;
  T *scores = nullptr;         // [heads][rows][width], in the workspace
  BFloat16 *rounded = nullptr; // the same, rounded; or null
  T *logsumexp = nullptr;
  AttentionBlock block;
  T scale = T(1.0);

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t g, G &group) const {
    T *row = scores + g * block.width;
    int64_t n = block.seen(block.query(g));
    if (block.mask) // masked keys read as -inf
      for (int64_t c = group.lane; c < n; c += group.lanes)
        if (!block.allowed(g, c))
          row[c] = -INFINITY;
    T m = -INFINITY;
    for (int64_t c = group.lane; c < n; c += group.lanes)
      m = maxSkipNaN(m, scale * row[c]);
    m = group.reduce(m, MaxSkipNaN());
    // A query its mask lets see no key: PyTorch's output 0 (its
    // logsumexp -inf, and no gradient).
    bool none = m == -INFINITY;
    T sum = T(0.0);
    for (int64_t c = group.lane; c < n && !none; c += group.lanes)
      sum += fExp(scale * row[c] - m);
    sum = group.reduce(sum, Sum());
    // Every element by the lane that rounds it below: nothing orders two
    // lanes between reductions.
    for (int64_t c = group.lane; c < block.width; c += group.lanes)
      row[c] = none || c >= n ? T(0.0) : fExp(scale * row[c] - m) / sum;
    if (group.lane == 0)
      logsumexp[block.rowOf(g)] = none ? T(-INFINITY) : m + fLog(sum);
    AttentionBlock::Draw draw;
    if (block.step) // dropped out for the product with the values
      for (int64_t c = group.lane; c < n; c += group.lanes)
        row[c] = block.dropped(g, c, draw) ? T(0.0) : row[c] / T(block.keep);
    if (rounded)
      for (int64_t c = group.lane; c < block.width; c += group.lanes)
        rounded[g * block.width + c] = floatToBf16(static_cast<float>(row[c]));
  }
};

/// attention_grad: rowsum(dy * y) of each query row, into the workspace
/// (y and dy stored as S: T, or bf16).
template <typename T, typename S = T> struct AttentionGradDelta : Functor {
  static constexpr bool kGrouped = true;
  const S *y = nullptr, *dy = nullptr;
  HeadRows yRows, dyRows;
  T *delta = nullptr;
  int64_t width = 0;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t r, G &group) const {
    const S *yr = y + yRows.at(r), *dyr = dy + dyRows.at(r);
    T sum = T(0.0);
    for (int64_t j = group.lane; j < width; j += group.lanes)
      sum += loadAs<T>(dyr[j]) * loadAs<T>(yr[j]);
    sum = group.reduce(sum, Sum());
    if (group.lane == 0)
      delta[r] = sum;
  }
};

/// attention_grad, per element of a block, in place: the scores become the
/// recomputed probabilities p = exp(scale * s - logsumexp), and dp (= dy
/// v^T) becomes the scores' gradient scale * p * (dp - rowsum(dy * y)).
/// With bf16 storage both are also written rounded (`rounded`: the
/// probabilities, then the gradients) for the products with bf16 operands.
template <typename T> struct AttentionGradScores : Functor {
  static constexpr bool kGrouped = false;
  T *scores = nullptr, *grad = nullptr; // [heads][rows][width] each
  BFloat16 *roundedScores = nullptr, *roundedGrad = nullptr; // or null
  const T *logsumexp = nullptr, *delta = nullptr;
  AttentionBlock block;
  T scale = T(1.0);

  ZRT_HOST_DEVICE void operator()(int64_t i) const {
    T p = T(0.0), ds = T(0.0);
    compute(i, p, ds);
    scores[i] = p;
    grad[i] = ds;
    if (roundedScores) {
      roundedScores[i] = floatToBf16(static_cast<float>(p));
      roundedGrad[i] = floatToBf16(static_cast<float>(ds));
    }
  }

  /// Element i's probability for the values' gradient and its scores'
  /// gradient (0 and 0 for a key its query does not see).
  ZRT_HOST_DEVICE void compute(int64_t i, T &p, T &ds) const {
    int64_t g = i / block.width, c = i % block.width;
    int64_t r = block.rowOf(g);
    if (c >= block.seen(block.query(g)) || !block.allowed(g, c) ||
        logsumexp[r] == -INFINITY)
      return;
    p = fExp(scale * scores[i] - logsumexp[r]);
    if (block.step) {
      // grad holds the dropped probabilities' gradient dy v^T: dropped out
      // as they were, then through the softmax; the values' gradient reads
      // the dropped probabilities.
      AttentionBlock::Draw draw;
      bool dropped = block.dropped(g, c, draw);
      T dp = dropped ? T(0.0) : grad[i] / T(block.keep);
      ds = scale * p * (dp - delta[r]);
      p = dropped ? T(0.0) : p / T(block.keep);
      return;
    }
    ds = scale * p * (grad[i] - delta[r]);
  }
};

/// BatchNorm's shape: input [N, C, inner...] as images of channels of
/// `inner` elements each.
struct BatchNormShape {
  int64_t images = 0, channels = 0, inner = 0;

  template <typename B> static BatchNormShape of(const B &b) {
    const auto &x = b.inType(0).shape;
    BatchNormShape s;
    s.images = x[0];
    s.channels = x[1];
    s.inner = 1;
    for (size_t d = 2; d < x.size(); ++d)
      s.inner *= x[d];
    return s;
  }
  /// Elements per channel.
  ZRT_HOST_DEVICE int64_t perChannel() const { return images * inner; }
  /// f(i) for the index i of every element of channel c that the group's
  /// lane takes: the images in order, the lanes along each image's run.
  template <typename G, typename F>
  ZRT_HOST_DEVICE void forChannel(int64_t c, const G &group, F f) const {
    for (int64_t n = 0; n < images; ++n) {
      int64_t run = (n * channels + c) * inner;
      for (int64_t j = group.lane; j < inner; j += group.lanes)
        f(run + j);
    }
  }
};

/// BatchNorm's kernels take a channel per group (its lanes split each
/// image's run of the channel) and read its statistics and each of its
/// elements before writing that element, so a result may
/// be the buffer of an operand of its shape (even the [2, C] statistics
/// themselves, when the input is [2, C]: a channel's are its own elements).

/// batch_norm_stats: its mean, then the mean of its squared deviations (two
/// passes: no cancellation).
template <typename T> struct BatchNormStats : Functor {
  static constexpr bool kGrouped = true;
  const T *x = nullptr;
  T *stats = nullptr; // [2, C]
  BatchNormShape shape;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t c, G &group) const {
    T sum = T(0.0), sq = T(0.0);
    shape.forChannel(c, group, [&](int64_t i) { sum += x[i]; });
    T count = static_cast<T>(shape.perChannel());
    T mean = group.reduce(sum, Sum()) / count;
    shape.forChannel(c, group,
                     [&](int64_t i) { sq += (x[i] - mean) * (x[i] - mean); });
    T var = group.reduce(sq, Sum()) / count;
    if (group.lane == 0) {
      stats[c] = mean;
      stats[shape.channels + c] = var;
    }
  }

  template <typename B> static void build(B &b) {
    BatchNormStats f;
    f.x = b.in(0);
    f.stats = b.result(0);
    f.shape = BatchNormShape::of(b);
    f.count = f.shape.channels;
    b.push(f, f.shape.inner);
  }
};

/// batch_norm_stats_grad: dx = (dmean + 2 dvar (x - mean)) / M.
template <typename T> struct BatchNormStatsGrad : Functor {
  static constexpr bool kGrouped = true;
  const T *x = nullptr, *stats = nullptr, *dstats = nullptr;
  T *dx = nullptr;
  BatchNormShape shape;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t c, G &group) const {
    T count = static_cast<T>(shape.perChannel());
    T mean = stats[c], dmean = dstats[c] / count;
    T dvar = T(2.0) * dstats[shape.channels + c] / count;
    shape.forChannel(c, group,
                     [&](int64_t i) { dx[i] = dmean + dvar * (x[i] - mean); });
  }

  template <typename B> static void build(B &b) {
    BatchNormStatsGrad f;
    f.x = b.in(0);
    f.stats = b.in(1);
    f.dstats = b.in(2);
    f.dx = b.result(0);
    f.shape = BatchNormShape::of(b);
    f.count = f.shape.channels;
    b.push(f, f.shape.inner);
  }
};

/// batch_norm: y = (x - mean) rstd gamma + beta.
template <typename T> struct BatchNorm : Functor {
  static constexpr bool kGrouped = true;
  const T *x = nullptr, *stats = nullptr, *gamma = nullptr, *beta = nullptr;
  T *y = nullptr;
  BatchNormShape shape;
  T epsilon = 0;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t c, G &group) const {
    T mean = stats[c], shift = beta[c];
    T scale = T(1.0) / fSqrt(stats[shape.channels + c] + epsilon) * gamma[c];
    shape.forChannel(c, group,
                     [&](int64_t i) { y[i] = (x[i] - mean) * scale + shift; });
  }

  template <typename B> static void build(B &b) {
    BatchNorm f;
    f.x = b.in(0);
    f.stats = b.in(1);
    f.gamma = b.in(2);
    f.beta = b.in(3);
    f.y = b.result(0);
    f.epsilon = static_cast<T>(b.launch.params.epsilon);
    f.shape = BatchNormShape::of(b);
    f.count = f.shape.channels;
    b.push(f, f.shape.inner);
  }
};

/// batch_norm_grad: the channel's sums of dy and dy (x - mean), then dx
/// from them (PyTorch's training-mode gradient); dgamma and dbeta from the
/// sums.
template <typename T> struct BatchNormGrad : Functor {
  static constexpr bool kGrouped = true;
  const T *x = nullptr, *stats = nullptr, *gamma = nullptr, *dy = nullptr;
  T *dx = nullptr, *dgamma = nullptr, *dbeta = nullptr;
  BatchNormShape shape;
  T epsilon = 0;

  template <typename G>
  ZRT_HOST_DEVICE void operator()(int64_t c, G &group) const {
    T mean = stats[c];
    T rstd = T(1.0) / fSqrt(stats[shape.channels + c] + epsilon);
    T sumDy = T(0.0), sumDyXmu = T(0.0);
    shape.forChannel(c, group, [&](int64_t i) {
      sumDy += dy[i];
      sumDyXmu += dy[i] * (x[i] - mean);
    });
    sumDy = group.reduce(sumDy, Sum());
    sumDyXmu = group.reduce(sumDyXmu, Sum());
    T count = static_cast<T>(shape.perChannel());
    T meanDy = sumDy / count;
    T projection = sumDyXmu / count * rstd * rstd;
    T scale = rstd * gamma[c];
    shape.forChannel(c, group, [&](int64_t i) {
      dx[i] = (dy[i] - meanDy - (x[i] - mean) * projection) * scale;
    });
    if (group.lane == 0) {
      dgamma[c] = sumDyXmu * rstd;
      dbeta[c] = sumDy;
    }
  }

  template <typename B> static void build(B &b) {
    BatchNormGrad f;
    f.x = b.in(0);
    f.stats = b.in(1);
    f.gamma = b.in(2);
    f.dy = b.in(3);
    f.dx = b.result(0);
    f.dgamma = b.result(1);
    f.dbeta = b.result(2);
    f.epsilon = static_cast<T>(b.launch.params.epsilon);
    f.shape = BatchNormShape::of(b);
    f.count = f.shape.channels;
    b.push(f, f.shape.inner);
  }
};

} // namespace zcc::runtime::device

/// X(KernelId, functor): the kernels whose functor (a template over the
/// executor's float type) builds its own steps from a launch,
/// `functor<T>::build(builder)` (DeviceProgram.cpp's Builder), and is a step
/// kind of its own: a kernel added here needs no case in DeviceProgram.
#define ZRT_SELF_BUILT_KERNELS(X)                                              \
  X(Cumsum, Cumsum)                                                            \
  X(Rotary, Rotary)                                                            \
  X(MaxPool2d, MaxPool2d)                                                      \
  X(MaxPool2dGrad, MaxPool2dGrad)                                              \
  X(BatchNormStats, BatchNormStats)                                            \
  X(BatchNormStatsGrad, BatchNormStatsGrad)                                    \
  X(BatchNorm, BatchNorm)                                                      \
  X(BatchNormGrad, BatchNormGrad)                                              \
  X(Fused, ElementProgram)

#endif // ZCC_LIB_RUNTIME_DEVICE_DEVICEKERNELS_H
