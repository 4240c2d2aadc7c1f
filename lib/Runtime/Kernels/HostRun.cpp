//===- HostRun.cpp - the kernels' steps run on the host ------------------===//
//
// See HostRun.h.
//
//===----------------------------------------------------------------------===//

#include "Kernels/HostRun.h"

#include "zcc/Runtime/Plan/KernelRules.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

using namespace zcc::runtime;
using namespace zcc::runtime::device;

namespace {

/// A step that stores bf16 and computes in double. An f64 run takes only
/// plans without bf16 (CpuExecutor refuses the others), so StepOf<double>'s
/// bf16 alternatives never come: their loops are not compiled (a quarter of
/// this file's code).
template <typename F> struct StoresBf16InF64 : std::false_type {};
template <template <typename, typename> class K>
struct StoresBf16InF64<K<double, BFloat16>> : std::true_type {};
template <typename F>
struct StoresBf16InF64<ChunkedColumns<F>> : StoresBf16InF64<F> {};

/// C = A B in column-major BLAS terms (the arguments cuBLAS gets).
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
          const float *a, int lda, const float *b, int ldb, float beta,
          float *c, int ldc) {
  cblas_sgemm(CblasColMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c,
              ldc);
}
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
          const double *a, int lda, const double *b, int ldb, double beta,
          double *c, int ldc) {
  cblas_dgemm(CblasColMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c,
              ldc);
}

/// One lane: reductions are the lane's own value, rows are visited in order.
struct HostGroup {
  int64_t lane = 0;
  int64_t lanes = 1;
  template <typename T, typename Op> T reduce(T value, Op) const {
    return value;
  }
};

/// The GPU's group of `lanes` threads, emulated by replay: every lane runs
/// the functor up to its next reduction, where it stops (an exception);
/// once every lane has got there, the lanes' values are combined in the
/// GPU's order (a butterfly within each warp of 32, then the warps in
/// order, as CudaBackend.cu's blockReduce), and the round starts again with
/// one more result known. Group kernels write only after their reductions,
/// so the final round, which runs through, writes every result. The lanes
/// run in a shuffled order (HostLauncher::replay): on a GPU nothing orders
/// them between two reductions, so a lane that reads what another wrote
/// there gets the emulator's results wrong too, as it would the GPU's.
struct ReplayGroup {
  struct Stop {};
  int64_t lane = 0;
  int64_t lanes = 32;
  std::vector<uint64_t> *known = nullptr;    // combined results so far
  std::vector<uint64_t> *captured = nullptr; // this round, per lane
  int64_t *arrived = nullptr;                // lanes captured this round
  size_t next = 0;

  template <typename T, typename Op> T reduce(T value, Op op) {
    static_assert(sizeof(T) <= sizeof(uint64_t));
    if (next < known->size()) {
      T result;
      std::memcpy(&result, &(*known)[next++], sizeof(T));
      return result;
    }
    std::memcpy(&(*captured)[lane], &value, sizeof(T));
    if (++*arrived == lanes) {
      std::vector<T> v(static_cast<size_t>(lanes));
      for (int64_t i = 0; i < lanes; ++i)
        std::memcpy(&v[i], &(*captured)[i], sizeof(T));
      for (int offset = 16; offset > 0; offset >>= 1) {
        std::vector<T> before = v;
        for (int64_t i = 0; i < lanes; ++i)
          v[i] = op(before[i], before[i ^ offset]);
      }
      T result = v[0];
      for (int64_t w = 1; w < lanes / 32; ++w)
        result = op(result, v[w * 32]);
      uint64_t bits = 0;
      std::memcpy(&bits, &result, sizeof(T));
      known->push_back(bits);
    }
    throw Stop{};
  }
};

/// A range of a kernel's elements or groups in a copy of its loop compiled
/// for one instruction set: `flatten` inlines the kernel's code into the
/// copy, where GCC vectorizes it for that set (the file is compiled with
/// -ffp-contract=off, so every copy computes the same bits).
#ifdef ZRT_HOST_ISAS
template <typename Fn>
__attribute__((target("arch=x86-64-v4"), flatten)) void
rangeOnV4(const Fn &fn, int64_t begin, int64_t end) {
  fn(begin, end);
}
template <typename Fn>
__attribute__((target("arch=x86-64-v3"), flatten)) void
rangeOnV3(const Fn &fn, int64_t begin, int64_t end) {
  fn(begin, end);
}
#endif
template <typename Fn>
void rangeOn(HostIsa isa, const Fn &fn, int64_t begin, int64_t end) {
#ifdef ZRT_HOST_ISAS
  if (isa == HostIsa::X86_64_V4)
    return rangeOnV4(fn, begin, end);
  if (isa == HostIsa::X86_64_V3)
    return rangeOnV3(fn, begin, end);
#endif
  (void)isa;
  fn(begin, end);
}

/// One step of a fused program over a block of values: its own function
/// per op and instruction set, so each loop vectorizes as the element
/// kernel's does (inlined into one range function, fifty ops' loops
/// would not).
template <typename T, typename S, ElementOp Op>
inline void programStepLoop(const T *__restrict a, const T *__restrict b,
                            T *__restrict y, int64_t n, T p0, T p1) {
  for (int64_t j = 0; j < n; ++j) {
    T r;
    if constexpr (Op == ElementOp::Scale)
      r = a[j] * p0;
    else if constexpr (Op == ElementOp::MseGrad || Op == ElementOp::Dropout)
      r = a[j]; // never a program's step (fusedProgram), dropout apart
    else
      r = floatRowValue<Op>(a[j], b[j], p0, p1);
    y[j] = roundedAs<S>(r);
  }
}
#ifdef ZRT_HOST_ISAS
template <typename T, typename S, ElementOp Op>
__attribute__((target("arch=x86-64-v4"), flatten)) void
programStepV4(const T *a, const T *b, T *y, int64_t n, T p0, T p1) {
  programStepLoop<T, S, Op>(a, b, y, n, p0, p1);
}
template <typename T, typename S, ElementOp Op>
__attribute__((target("arch=x86-64-v3"), flatten)) void
programStepV3(const T *a, const T *b, T *y, int64_t n, T p0, T p1) {
  programStepLoop<T, S, Op>(a, b, y, n, p0, p1);
}
#endif
template <typename T, typename S, ElementOp Op>
__attribute__((flatten)) void programStepBase(const T *a, const T *b, T *y,
                                              int64_t n, T p0, T p1) {
  programStepLoop<T, S, Op>(a, b, y, n, p0, p1);
}
template <typename T>
using ProgramStepFn = void (*)(const T *, const T *, T *, int64_t, T, T);

/// Elements a fused program computes at a time on the host.
constexpr int64_t kProgramBlock = 256;

/// A fused program's dropout step over elements [first, first + n): the
/// block's Philox draws word by word across the blocks (so the rounds
/// vectorize, as the Dropout kernel's), then the elements: the words and
/// formula of the Dropout kernel.
template <typename T, typename S>
inline void programDropoutLoop(const T *__restrict a, T *__restrict y,
                               int64_t first, int64_t n, uint64_t seed,
                               uint64_t step, uint64_t threshold, T keep) {
  // Element 4 * (first / 4) + i's word is words[i]: a block starting
  // mid-Philox-block draws that whole block.
  uint32_t words[kProgramBlock + 8];
  const PhiloxKey key = philoxKeyFromSeed(seed);
  const int64_t block0 = first / 4, blocks = (first + n + 3) / 4 - block0;
  for (int64_t k = 0; k < blocks; ++k) {
    PhiloxBlock block = philox4x32_10(
        philoxCounter(static_cast<uint64_t>(block0 + k), step), key);
    for (int j = 0; j < 4; ++j)
      words[4 * k + j] = block.words[j];
  }
  const uint32_t *w = words + (first - 4 * block0);
  if (threshold > 0xFFFFFFFFu) { // a rate within 2^-32 of 1: none kept
    for (int64_t j = 0; j < n; ++j)
      y[j] = T(0.0);
    return;
  }
  const auto word = static_cast<uint32_t>(threshold);
  for (int64_t j = 0; j < n; ++j) {
    T scaled = a[j] / keep;
    y[j] = roundedAs<S>(w[j] >= word ? scaled : T(0.0));
  }
}
#ifdef ZRT_HOST_ISAS
template <typename T, typename S>
__attribute__((target("arch=x86-64-v4"), flatten)) void
programDropoutV4(const T *a, T *y, int64_t first, int64_t n, uint64_t seed,
                 uint64_t step, uint64_t threshold, T keep) {
  programDropoutLoop<T, S>(a, y, first, n, seed, step, threshold, keep);
}
template <typename T, typename S>
__attribute__((target("arch=x86-64-v3"), flatten)) void
programDropoutV3(const T *a, T *y, int64_t first, int64_t n, uint64_t seed,
                 uint64_t step, uint64_t threshold, T keep) {
  programDropoutLoop<T, S>(a, y, first, n, seed, step, threshold, keep);
}
#endif
template <typename T, typename S>
__attribute__((flatten)) void
programDropoutBase(const T *a, T *y, int64_t first, int64_t n, uint64_t seed,
                   uint64_t step, uint64_t threshold, T keep) {
  programDropoutLoop<T, S>(a, y, first, n, seed, step, threshold, keep);
}

/// Elements, or groups, worth a thread of their own.
constexpr int64_t kElementGrain = 16384;
constexpr int64_t kGroupGrain = 32;

/// Multiply-adds below which a product stays one BLAS call.
constexpr double kGemmPanelWork = 1 << 21;
/// C's columns per call for a large product: about 8 panels, a multiple of
/// 16 columns and at least 32.
int64_t gemmPanelWidth(int64_t n) {
  int64_t width = ((n + 7) / 8 + 15) / 16 * 16;
  return std::max<int64_t>(width, 32);
}

/// A bf16 product's blocks on the host: op(A) rows x op(B) columns x the
/// summed dimension, widened to f32 (scratch: kBlockM * kBlockK +
/// kBlockK * kBlockN + kBlockM * kBlockN floats per thread).
constexpr int64_t kBlockM = 256, kBlockN = 256, kBlockK = 512;

/// 0 .. count - 1 in a fixed order drawn from `seed` (Fisher-Yates driven
/// by splitmix64): the emulator's stand-in for the GPU's lack of one, the
/// same every run, so its results are too.
std::vector<int64_t> shuffled(int64_t count, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int64_t>(i);
  uint64_t state = seed;
  for (size_t i = order.size(); i > 1; --i) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    std::swap(order[i - 1], order[(z ^ (z >> 31)) % i]);
  }
  return order;
}

struct HostLauncher {
  bool gpuGroups = false;
  HostThreads *threads = nullptr;
  /// Where bf16 products find their scratch (the threads, even when the
  /// kernels run on the caller alone).
  HostThreads *pool = nullptr;
  HostIsa isa = HostIsa::Baseline;
  /// The first failure of a backend's call (BackendCall), else ok.
  Status *failure = nullptr;

  /// fn(begin, end) over [0, n), on the threads when there are some, in
  /// `isa`'s loops.
  template <typename Fn>
  void forRange(int64_t n, int64_t grain, Fn &&fn) const {
    auto range = [&](int64_t begin, int64_t end) {
      rangeOn(isa, fn, begin, end);
    };
    if (threads)
      threads->parallelFor(n, grain, range);
    else
      range(int64_t{0}, n);
  }

  /// Every step: a kernel does nothing once an earlier launch of the step
  /// recorded a data error and it writes persistent state (`abort`).
  template <typename S> void operator()(const S &step) const {
    if constexpr (StoresBf16InF64<S>::value) {
      if (failure->isOk())
        *failure = makeError(StatusCode::Unsupported,
                             "an f64 run was given a step that stores bf16");
    } else {
      if constexpr (std::is_base_of_v<Functor, S>)
        if (step.abort && *step.abort)
          return;
      run(step);
    }
  }

  template <typename F> void run(const F &f) const {
    if constexpr (F::kGrouped)
      groups(f);
    else
      elements(f);
  }

  /// An element kernel's operator() over its elements, split by range; in
  /// the emulator's GPU mode from the last element down (a kernel whose
  /// element reads another's result would see it unwritten, as a GPU's
  /// thread may).
  template <typename F> void elements(const F &f) const {
    if constexpr (HasRuns<F>::value)
      if (gpuGroups)
        return runsDown(f);
    if (gpuGroups) {
      if constexpr (HasPrepare<F>::value) {
        auto prepared = f.prepare();
        for (int64_t i = f.count - 1; i >= 0; --i)
          f(i, prepared);
      } else {
        for (int64_t i = f.count - 1; i >= 0; --i)
          f(i);
      }
      return;
    }
    forRange(f.count, kElementGrain, [&](int64_t begin, int64_t end) {
      runElements(f, begin, end, 1);
    });
  }

  /// The GPU's threads of a kernel with runs, from the last thread down.
  template <typename F> void runsDown(const F &f) const {
    int64_t threads = runThreads(f.count);
    for (int64_t t = threads - 1; t >= 0; --t)
      runElementRuns(f, t, threads);
  }

  template <typename F> void groups(const F &f) const {
    if (gpuGroups) { // the GPU's blocks run in no order either
      for (int64_t g : shuffled(f.count, ~uint64_t(0)))
        replay(f, g);
      return;
    }
    forRange(f.count, kGroupGrain, [&](int64_t begin, int64_t end) {
      HostGroup group;
      for (int64_t g = begin; g < end; ++g)
        f(g, group);
    });
  }

  template <typename F> void replay(const F &f, int64_t g) const {
    std::vector<uint64_t> known, captured(static_cast<size_t>(f.groupThreads));
    // A lane runs before some lanes and after others, in another order for
    // each group.
    std::vector<int64_t> order = shuffled(f.groupThreads, g);
    while (true) {
      bool finished = true;
      int64_t arrived = 0;
      for (int64_t lane : order) {
        ReplayGroup group{lane, f.groupThreads, &known, &captured, &arrived};
        try {
          f(g, group);
        } catch (const ReplayGroup::Stop &) {
          finished = false;
        }
      }
      if (finished)
        return;
    }
  }


  /// One loop per op: the switch outside, so the loop can vectorize.
  /// The emulator runs the GPU's runs instead.
  template <typename T, typename S> void run(const Elementwise<T, S> &f) const {
    using E = Elementwise<T, S>;
    if (gpuGroups)
      return elements(f);
    if (f.aStrided || f.bStrided)
      return broadcastReads(f);
    E::dispatch(f.op, [&](auto constant) {
      constexpr ElementOp op = decltype(constant)::value;
      forRange(f.count, kElementGrain, [&](int64_t begin, int64_t end) {
        if constexpr (E::readsB(op)) {
          for (int64_t i = begin; i < end; ++i)
            f.y[i] = storeAs<S>(
                f.template compute<op>(loadAs<T>(f.a[i]), loadAs<T>(f.b[i])));
        } else {
          for (int64_t i = begin; i < end; ++i)
            f.y[i] =
                storeAs<S>(f.template compute<op>(loadAs<T>(f.a[i]), T(0.0)));
        }
      });
    });
  }
  /// With an operand read through broadcast strides: rows of the innermost
  /// dimension (both reads share the result's dimensions), one division
  /// per row, and in a row each operand steps by its innermost stride.
  template <typename T, typename S>
  void broadcastReads(const Elementwise<T, S> &f) const {
    using E = Elementwise<T, S>;
    const StridedShape &shape = f.aStrided ? f.aRead : f.bRead;
    int64_t inner = shape.rank > 0 ? shape.size[shape.rank - 1] : 1;
    if (inner <= 0 || f.count == 0)
      return;
    int64_t aStep = f.aStrided && f.aRead.rank > 0
                        ? f.aRead.stride[f.aRead.rank - 1]
                        : (f.aStrided ? 0 : 1);
    int64_t bStep = f.bStrided && f.bRead.rank > 0
                        ? f.bRead.stride[f.bRead.rank - 1]
                        : (f.bStrided ? 0 : 1);
    int64_t rows = f.count / inner;
    E::dispatch(f.op, [&](auto constant) {
      constexpr ElementOp op = decltype(constant)::value;
      int64_t grain = std::max<int64_t>(1, kElementGrain / inner);
      forRange(rows, grain, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          int64_t first = r * inner;
          const S *a = f.a + (f.aStrided ? f.aRead.offsetOf(first) : first);
          S *y = f.y + first;
          if constexpr (E::readsB(op)) {
            const S *b = f.b + (f.bStrided ? f.bRead.offsetOf(first) : first);
            for (int64_t j = 0; j < inner; ++j)
              y[j] = storeAs<S>(f.template compute<op>(
                  loadAs<T>(a[j * aStep]), loadAs<T>(b[j * bStep])));
          } else {
            for (int64_t j = 0; j < inner; ++j)
              y[j] = storeAs<S>(
                  f.template compute<op>(loadAs<T>(a[j * aStep]), T(0.0)));
          }
        }
      });
    });
  }

  /// A fused program a block of elements at a time: each step one loop
  /// over the block (specialized for its op, so it vectorizes) from and to
  /// the block's values, which stay in cache; the same arithmetic and
  /// rounding per element as ElementProgram::run.
  /// The emulator runs the GPU's per-element path instead.
  template <typename T> void run(const ElementProgram<T> &f) const {
    if (gpuGroups)
      return elements(f);
    if (f.bf16)
      programBlocks<T, BFloat16>(f);
    else
      programBlocks<T, T>(f);
  }
  template <typename T, typename S>
  void programBlocks(const ElementProgram<T> &f) const {
    ProgramStepFn<T> loops[kMaxFusedSteps] = {};
    auto dropoutLoop = &programDropoutBase<T, S>;
#ifdef ZRT_HOST_ISAS
    if (isa == HostIsa::X86_64_V4)
      dropoutLoop = &programDropoutV4<T, S>;
    else if (isa == HostIsa::X86_64_V3)
      dropoutLoop = &programDropoutV3<T, S>;
#endif
    for (int s = 0; s < f.steps; ++s)
      Elementwise<T>::dispatch(f.step[s].op, [&](auto constant) {
        constexpr ElementOp op = decltype(constant)::value;
#ifdef ZRT_HOST_ISAS
        if (isa == HostIsa::X86_64_V4)
          loops[s] = &programStepV4<T, S, op>;
        else if (isa == HostIsa::X86_64_V3)
          loops[s] = &programStepV3<T, S, op>;
        else
#endif
          loops[s] = &programStepBase<T, S, op>;
      });
    const auto stepCounter =
        f.stepCounter ? static_cast<uint64_t>(*f.stepCounter) : 0;
    forRange(f.count, kElementGrain, [&](int64_t begin, int64_t end) {
      T v[kMaxFusedInputs + kMaxFusedSteps][kProgramBlock];
      for (int64_t first = begin; first < end; first += kProgramBlock) {
        const int64_t n = std::min(kProgramBlock, end - first);
        for (int k = 0; k < f.inputs; ++k) {
          const S *in = static_cast<const S *>(f.in[k]);
          T *value = v[k];
          if (!f.strided[k]) {
            for (int64_t j = 0; j < n; ++j)
              value[j] = loadAs<T>(in[first + j]);
            continue;
          }
          const StridedShape &r = f.read[k];
          if (r.rank == 0) {
            for (int64_t j = 0; j < n; ++j)
              value[j] = loadAs<T>(in[0]);
            continue;
          }
          // An odometer over the read's dimensions from element `first`,
          // a run along the innermost dimension at a time.
          int64_t index[kMaxRank] = {}, offset = 0;
          for (int64_t rest = first, d = r.rank - 1; d >= 0; --d) {
            index[d] = rest % r.size[d];
            offset += index[d] * r.stride[d];
            rest /= r.size[d];
          }
          const int inner = r.rank - 1;
          const int64_t stride = r.stride[inner], extent = r.size[inner];
          for (int64_t j = 0; j < n;) {
            const int64_t run = std::min(extent - index[inner], n - j);
            const S *from = in + offset;
            if (stride == 1)
              for (int64_t t = 0; t < run; ++t)
                value[j + t] = loadAs<T>(from[t]);
            else
              for (int64_t t = 0; t < run; ++t)
                value[j + t] = loadAs<T>(from[t * stride]);
            j += run;
            offset += run * stride;
            index[inner] += run;
            for (int d = inner; d > 0 && index[d] == r.size[d]; --d) {
              offset += r.stride[d - 1] - r.stride[d] * r.size[d];
              index[d] = 0;
              ++index[d - 1];
            }
          }
        }
        for (int s = 0; s < f.steps; ++s) {
          const ProgramStep<T> &st = f.step[s];
          const T *a = v[st.a], *b = v[st.b];
          T *y = v[f.inputs + s];
          if (st.op == ElementOp::Dropout)
            dropoutLoop(a, y, first, n, st.seed, stepCounter, st.threshold,
                        st.p0);
          else
            loops[s](a, b, y, n, st.p0, st.p1);
        }
        for (int o = 0; o < f.outputs; ++o) {
          S *y = static_cast<S *>(f.y[o]) + first;
          const T *value = v[f.out[o]];
          for (int64_t j = 0; j < n; ++j)
            y[j] = storeAs<S>(value[j]);
        }
      }
    });
  }

  /// Sums over the leading dimension of a [rows, columns] operand (bias
  /// gradients) row by row, a block of columns at a time: each output still
  /// sums its column in row order, as one lane does, without striding
  /// through memory.
  template <typename T, typename S> void run(const Reduce<T, S> &f) const {
    bool columns = f.kept.rank == 1 && f.kept.stride[0] == 1 &&
                   f.reduced.rank == 1 && f.reduced.stride[0] == f.count;
    if (gpuGroups)
      return groups(f);
    if (!columns)
      return stridedRows(f);
    // Columns split over the threads; each still sums its rows in order.
    constexpr int64_t kBlock = 256;
    int64_t grain = std::max<int64_t>(
        1, kElementGrain / std::max<int64_t>(f.reducedCount, 1));
    forRange(f.count, grain, [&](int64_t begin, int64_t end) {
      T acc[kBlock];
      for (int64_t first = begin; first < end; first += kBlock) {
        int64_t n = std::min(kBlock, end - first);
        for (int64_t j = 0; j < n; ++j)
          acc[j] = f.identity();
        for (int64_t r = 0; r < f.reducedCount; ++r) {
          const S *row = f.x + r * f.count + first;
          for (int64_t j = 0; j < n; ++j)
            acc[j] = f.combine(acc[j], loadAs<T>(row[j]));
        }
        for (int64_t j = 0; j < n; ++j)
          f.y[first + j] = storeAs<S>(f.finish(acc[j]));
      }
    });
  }
  /// Each output's reduced elements in row-major order, as one lane reads
  /// them (the same sum, bit for bit), walked by an odometer over the outer
  /// reduced dimensions instead of a division per element: BatchNorm's
  /// statistics and their gradients reduce [N, C, H, W] over N, H and W.
  template <typename T, typename S> void stridedRows(const Reduce<T, S> &f) const {
    const StridedShape &r = f.reduced;
    if (r.rank == 0)
      return groups(f);
    const int inner = r.rank - 1;
    const int64_t length = r.size[inner], step = r.stride[inner];
    int64_t grain =
        std::max<int64_t>(1, kElementGrain / std::max<int64_t>(f.reducedCount, 1));
    forRange(f.count, grain, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        const S *x = f.x + f.kept.offsetOf(o);
        int64_t index[kMaxRank] = {}, offset = 0;
        T acc = f.identity();
        for (int64_t done = 0; done < f.reducedCount; done += length) {
          const S *line = x + offset;
          for (int64_t k = 0; k < length; ++k)
            acc = f.combine(acc, loadAs<T>(line[k * step]));
          for (int d = inner - 1; d >= 0; --d) {
            offset += r.stride[d];
            if (++index[d] < r.size[d])
              break;
            offset -= r.stride[d] * r.size[d];
            index[d] = 0;
          }
        }
        f.y[o] = storeAs<S>(f.finish(acc));
      }
    });
  }

  /// max_pool2d's gradient scattered per plane: each window's maximum is
  /// found once (the gather finds it again for every element the window
  /// reads), its gradient added where it is. Windows go in the order the
  /// gather sums them for an element (rows, then columns, from the last),
  /// so every element's sum is the same bits.
  template <typename T> void run(const MaxPool2dGrad<T> &f) const {
    if (gpuGroups) // the emulator runs the device's own functor
      return elements(f);
    const ConvGeometry &g = f.g;
    int64_t area = g.height * g.width, windows = g.columns();
    int64_t planes = f.count / std::max<int64_t>(area, 1);
    forRange(planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const T *in = f.x + p * area;
        const T *grad = f.dy + p * windows;
        T *dx = f.dx + p * area;
        for (int64_t i = 0; i < area; ++i)
          dx[i] = T(0.0);
        for (int64_t oh = g.outHeight - 1; oh >= 0; --oh)
          for (int64_t ow = g.outWidth - 1; ow >= 0; --ow) {
            int64_t at = windowArgmax(in, g, oh, ow);
            if (at >= 0)
              dx[at] += grad[oh * g.outWidth + ow];
          }
      }
    });
  }

  template <typename T, typename S>
  void run(const LayerNormGradColumns<T, S> &f) const {
    columnSums(f);
  }
  template <typename T, typename S>
  void run(const RmsNormGradColumns<T, S> &f) const {
    columnSums(f);
  }
  template <typename F> void columnSums(const F &f) const {
    if (gpuGroups)
      return groups(f);
    using T = std::remove_pointer_t<decltype(f.dgamma)>;
    int64_t grain =
        std::max<int64_t>(1, kElementGrain / std::max<int64_t>(f.rows, 1));
    forRange(f.width, grain, [&](int64_t begin, int64_t end) {
      T zero[F::kSums] = {};
      for (int64_t j = begin; j < end; ++j)
        f.store(j, zero);
      for (int64_t r = 0; r < f.rows; ++r)
        for (int64_t j = begin; j < end; ++j) {
          T sums[F::kSums];
          f.load(j, sums);
          f.addRow(r, j, sums);
          f.store(j, sums);
        }
    });
  }

  /// One thread's columns over the whole vocabulary: the GPU's slices only
  /// split the work (each element's sum is the same, in position order).
  template <typename T> void run(const EmbeddingGrad<T> &f) const {
    EmbeddingGrad<T> whole = f;
    whole.slices = 1;
    whole.count = f.width;
    forRange(whole.count, 1, [&](int64_t begin, int64_t end) {
      runElements(whole, begin, end, 1);
    });
  }

  /// One copy per outer index: the same moves as ConcatPart's operator(),
  /// without a division per element.
  void run(const ConcatPart &f) const {
    if (f.block <= 0 || f.count == 0)
      return;
    int64_t rows = f.count / f.block;
    size_t rowBytes = static_cast<size_t>(f.block) * f.bytes;
    const auto *x = static_cast<const char *>(f.x);
    auto *y = static_cast<char *>(f.y);
    forRange(rows, std::max<int64_t>(1, kElementGrain / f.block),
             [&](int64_t begin, int64_t end) {
               for (int64_t r = begin; r < end; ++r)
                 std::memcpy(y + (r * f.resultBlock + f.offset) * f.bytes,
                             x + r * f.block * f.bytes, rowBytes);
             });
  }

  /// Philox blocks a few at a time, word by word across the blocks (so the
  /// rounds vectorize), then their elements: the same words and elements
  /// as Dropout's operator().
  template <typename T, typename S> void run(const Dropout<T, S> &f) const {
    constexpr int64_t kBlocks = 16;
    PhiloxKey key = philoxKeyFromSeed(f.seed);
    auto step = static_cast<uint64_t>(*f.step);
    // A word is kept when it is at least the threshold (at most 2^32: then
    // none is); compared as 32-bit words, and the operands held in locals,
    // so the element loop vectorizes.
    bool none = f.threshold > 0xFFFFFFFFu;
    auto threshold = static_cast<uint32_t>(none ? 0 : f.threshold);
    T keep = f.keepProbability;
    int64_t elements = f.elements;
    forRange(f.count, kElementGrain / 4, [&](int64_t begin, int64_t end) {
      uint32_t words[4 * kBlocks]; // element 4 * first + i's is words[i]
      for (int64_t first = begin; first < end; first += kBlocks) {
        for (int64_t k = 0; k < kBlocks; ++k) {
          PhiloxBlock block = philox4x32_10(
              philoxCounter(static_cast<uint64_t>(first + k), step), key);
          for (int j = 0; j < 4; ++j)
            words[4 * k + j] = block.words[j];
        }
        const S *x = f.x + 4 * first;
        S *y = f.y + 4 * first;
        int64_t n =
            std::min(elements, 4 * std::min(end, first + kBlocks)) - 4 * first;
        if (none) {
          for (int64_t i = 0; i < n; ++i)
            y[i] = storeAs<S>(T(0.0));
          continue;
        }
        for (int64_t i = 0; i < n; ++i) {
          T scaled = loadAs<T>(x[i]) / keep;
          y[i] = storeAs<S>(words[i] >= threshold ? scaled : T(0.0));
        }
      }
    });
  }

  /// In place (the plan's usual form: the state's buffers are the
  /// outputs), each array through one unaliased pointer, so the loop
  /// vectorizes: Adamw's update, element by element.
  /// The emulator runs the GPU's runs.
  template <typename T> void run(const Adamw<T> &f) const {
    if (gpuGroups || f.newParam != f.param || f.newExpAvg != f.expAvg ||
        f.newExpAvgSq != f.expAvgSq || f.grad == f.param)
      return elements(f);
    if (f.gradBf16)
      adamwLoop(f, f.gradBf16);
    else
      adamwLoop(f, f.grad);
  }
  template <typename T, typename G>
  void adamwLoop(const Adamw<T> &f, const G *grad) const {
    typename Adamw<T>::Prepared c = f.prepare();
    forRange(f.count, kElementGrain, [&](int64_t begin, int64_t end) {
      T *__restrict p = f.newParam;
      T *__restrict m = f.newExpAvg;
      T *__restrict v = f.newExpAvgSq;
      const G *__restrict g = grad;
      const Adamw<T> k = f; // its constants in locals, not reloaded per store
      for (int64_t i = begin; i < end; ++i)
        k.update(p[i], loadAs<T>(g[i]), m[i], v[i], c);
    });
  }

  /// The output in row-major order with a running source offset: the same
  /// moves as StridedCopy's operator(), without a division per element.
  void run(const StridedCopy &f) const {
    if (f.bytes == 8)
      stridedCopy<uint64_t>(f);
    else if (f.bytes == 1)
      stridedCopy<uint8_t>(f);
    else if (f.bytes == 2)
      stridedCopy<uint16_t>(f);
    else
      stridedCopy<uint32_t>(f);
  }
  template <typename E> void stridedCopy(const StridedCopy &f) const {
    const StridedShape &shape = f.source;
    if (shape.rank == 0 || f.count == 0) {
      runElements(f, 0, f.count, 1);
      return;
    }
    const E *x = static_cast<const E *>(f.x);
    E *y = static_cast<E *>(f.y);
    int last = shape.rank - 1;
    int64_t inner = shape.size[last], innerStride = shape.stride[last];
    int64_t rows = f.count / inner;
    int64_t grain = std::max<int64_t>(1, kElementGrain / inner);
    forRange(rows, grain, [&](int64_t begin, int64_t end) {
      // The odometer of row `begin`: one division per range, not per element.
      int64_t index[kMaxRank] = {};
      int64_t rowOffset = f.offset;
      for (int64_t d = last - 1, rest = begin; d >= 0; --d) {
        index[d] = rest % shape.size[d];
        rest /= shape.size[d];
        rowOffset += index[d] * shape.stride[d];
      }
      for (int64_t row = begin; row < end; ++row) {
        E *out = y + row * inner;
        for (int64_t j = 0; j < inner; ++j)
          out[j] = x[rowOffset + j * innerStride];
        for (int d = last - 1; d >= 0; --d) {
          rowOffset += shape.stride[d];
          if (++index[d] < shape.size[d])
            break;
          rowOffset -= shape.stride[d] * shape.size[d];
          index[d] = 0;
        }
      }
    });
  }

  /// Products on the kernels' threads, BLAS itself single-threaded (one
  /// pool, nothing spinning between launches). The calls depend on the shape
  /// alone: a batch is one call per item; one large product is one call per
  /// panel of C's columns (BLAS's k order is the same in every panel), so
  /// the bits do not depend on the number of threads.
  template <typename T> void run(const GemmOf<T> &g) const {
    auto product = [&](int64_t i, int64_t column, int64_t columns) {
      const T *b = g.b + g.itemB(i) + column * (g.transB ? 1 : g.ldb);
      gemm(g.transA ? CblasTrans : CblasNoTrans,
           g.transB ? CblasTrans : CblasNoTrans, g.m, static_cast<int>(columns),
           g.k, g.a + g.itemA(i), g.lda, b, g.ldb, g.beta,
           g.c + g.itemC(i) + column * g.ldc, g.ldc);
    };
    double work = double(g.m) * g.n * g.k;
    if (g.items() > 1 || work < kGemmPanelWork) {
      int64_t grain = std::max<int64_t>(
          1, int64_t(kGemmPanelWork / std::max(work, 1.0)));
      forRange(g.items(), grain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          product(i, 0, g.n);
      });
      return;
    }
    int64_t width = gemmPanelWidth(g.n);
    int64_t panels = (g.n + width - 1) / width;
    forRange(panels, 1, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p)
        product(0, p * width, std::min<int64_t>(width, g.n - p * width));
    });
  }
  /// Blocks of C, each summed over blocks of k in order into f32 scratch
  /// (sgemm on the widened operands), then stored: the bits do not depend on
  /// the number of threads, which take the blocks in turn.
  void run(const GemmBf16 &g) const {
    int64_t mBlocks = (g.m + kBlockM - 1) / kBlockM;
    int64_t nBlocks = (g.n + kBlockN - 1) / kBlockN;
    int64_t blocks = g.items() * mBlocks * nBlocks;
    auto work = [&](int64_t first, int64_t every, float *scratch) {
      for (int64_t blk = first; blk < blocks; blk += every) {
        int64_t item = blk / (mBlocks * nBlocks);
        int64_t i0 = blk / nBlocks % mBlocks * kBlockM;
        int64_t j0 = blk % nBlocks * kBlockN;
        bf16Block(g, item, i0, j0, scratch);
      }
    };
    size_t needed = bf16GemmScratchFloats();
    if (pool && pool->scratchSize() >= needed) {
      // One part per thread, each taking every parts-th block.
      int64_t parts = threads && blocks > 1 ? threads->size() : 1;
      forRange(parts, 1, [&](int64_t first, int64_t end) {
        for (int64_t t = first; t < end; ++t)
          work(t, parts, pool->scratch(static_cast<int>(t)));
      });
      return;
    }
    // Executors reserve the scratch at load; this is for direct callers.
    std::vector<float> scratch(needed);
    work(0, 1, scratch.data());
  }

  static void bf16Block(const GemmBf16 &g, int64_t item, int64_t i0, int64_t j0,
                        float *scratch) {
    int64_t mb = std::min<int64_t>(kBlockM, g.m - i0);
    int64_t nb = std::min<int64_t>(kBlockN, g.n - j0);
    float *ab = scratch, *bb = ab + kBlockM * kBlockK,
          *cb = bb + kBlockK * kBlockN;
    const BFloat16 *a = g.a + g.itemA(item);
    const BFloat16 *b = g.b + g.itemB(item);
    for (int64_t p0 = 0; p0 < g.k; p0 += kBlockK) {
      int64_t kb = std::min<int64_t>(kBlockK, g.k - p0);
      // op(A)[i0 + i, p0 + p] and op(B)[p0 + p, j0 + j], column-major.
      for (int64_t p = 0; p < kb; ++p)
        for (int64_t i = 0; i < mb; ++i)
          ab[i + p * mb] =
              bf16ToFloat(g.transA ? a[(p0 + p) + (i0 + i) * g.lda]
                                   : a[(i0 + i) + (p0 + p) * g.lda]);
      for (int64_t j = 0; j < nb; ++j)
        for (int64_t p = 0; p < kb; ++p)
          bb[p + j * kb] =
              bf16ToFloat(g.transB ? b[(j0 + j) + (p0 + p) * g.ldb]
                                   : b[(p0 + p) + (j0 + j) * g.ldb]);
      cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans,
                  static_cast<int>(mb), static_cast<int>(nb),
                  static_cast<int>(kb), 1.0f, ab, static_cast<int>(mb), bb,
                  static_cast<int>(kb), p0 == 0 ? 0.0f : 1.0f, cb,
                  static_cast<int>(mb));
    }
    int64_t c0 = g.itemC(item) + i0 + j0 * g.ldc;
    for (int64_t j = 0; j < nb; ++j)
      for (int64_t i = 0; i < mb; ++i) {
        int64_t at = c0 + i + j * g.ldc;
        float v = cb[i + j * mb];
        if (g.cBf16) {
          auto *c = static_cast<BFloat16 *>(g.c);
          if (g.beta != 0.0f)
            v += g.beta * bf16ToFloat(c[at]);
          c[at] = floatToBf16(v);
        } else {
          auto *c = static_cast<float *>(g.c);
          if (g.beta != 0.0f)
            v += g.beta * c[at];
          c[at] = v;
        }
      }
  }

  /// A backend's own call on the host (a backend that lowers to one and
  /// runs its program here); a call that fails leaves the reason in the
  /// launcher, as a kernel's data error would.
  void run(const BackendCall &c) const {
    Status issued = c.call->issue(nullptr);
    if (!issued.isOk() && failure->isOk())
      *failure = issued;
  }
  void run(const Memset &m) const { std::memset(m.data, m.value, m.bytes); }
  void run(const CopyIn &c) const { std::memcpy(c.device, c.host, c.bytes); }
  void run(const CopyOut &c) const { std::memcpy(c.host, c.device, c.bytes); }
  void run(const Collective &c) const {
    if (c.communicator) {
      c.communicator->finish(c.communicator->start(c.call));
      return;
    }
    // One rank: a sum or mean is its own values, a shard the whole.
    if (c.call.kind != CollectiveCall::Kind::AllReduce)
      std::memcpy(c.call.data, c.call.source, c.bytes());
  }
};

} // namespace

template <typename T>
Status zcc::runtime::device::runOnHost(const StepOf<T> *first,
                                       const StepOf<T> *last, bool gpuGroups,
                                       HostThreads *threads) {
  // Products run on the kernels' threads (HostLauncher::run(GemmOf)), BLAS
  // single-threaded: its own threads would spin between products against
  // the other kernels, and its split of a product may change its bits.
  static const bool blasSingleThreaded = (openblas_set_num_threads(1), true);
  (void)blasSingleThreaded;
  Status failure;
  HostLauncher launcher{gpuGroups, gpuGroups ? nullptr : threads, threads,
                        threads ? threads->isa() : bestHostIsa(), &failure};
  for (const StepOf<T> *step = first; step != last && failure.isOk(); ++step)
    std::visit(launcher, *step);
  return failure;
}

template Status zcc::runtime::device::runOnHost<float>(const StepOf<float> *,
                                                       const StepOf<float> *,
                                                       bool, HostThreads *);
template Status zcc::runtime::device::runOnHost<double>(
    const StepOf<double> *, const StepOf<double> *, bool, HostThreads *);

size_t zcc::runtime::device::bf16GemmScratchFloats() {
  return static_cast<size_t>(kBlockM * kBlockK + kBlockK * kBlockN +
                             kBlockM * kBlockN);
}
