//===- DeviceProgram.h - an entry as a list of device steps ------*- C++
//-*-===//
//
// The device executors (CUDA, and the emulator that runs the same kernels on
// the host) run an entry as a fixed list of steps: copy the inputs in, clear
// the error record, run each launch's kernels, copy the outputs and the error
// record out. The list is built once at load, with every address resolved;
// the CUDA executor captures it into a graph, the emulator walks it.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_RUNTIME_DEVICE_DEVICEPROGRAM_H
#define ZCC_LIB_RUNTIME_DEVICE_DEVICEPROGRAM_H

#include "Kernels/DeviceKernels.h"

#include "zcc/Runtime/Plan/Plan.h"
#include "zcc/Runtime/Communicator.h"
#include "zcc/Runtime/Status.h"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace zcc::runtime::device {

/// The shape of a batch of column-major products C = op(A) op(B), with
/// BLAS's (and cuBLAS's) meaning of every field; a row-major matmul is
/// mapped onto it by Builder::product (C^T = op(B)^T op(A)^T).
struct GemmShape {
  bool transA = false, transB = false;
  int32_t m = 0, n = 0, k = 0;
  int32_t lda = 1, ldb = 1, ldc = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0;
  int32_t batch = 1;
  /// `outer` runs of `batch` items, outerA, outerB and outerC apart
  /// (attention's heads read through a view's steps: batch over the heads,
  /// outer over the dimensions before them).
  int32_t outer = 1;
  int64_t outerA = 0, outerB = 0, outerC = 0;
  int64_t items() const { return int64_t{outer} * batch; }
  int64_t itemA(int64_t i) const {
    return i / batch * outerA + i % batch * strideA;
  }
  int64_t itemB(int64_t i) const {
    return i / batch * outerB + i % batch * strideB;
  }
  int64_t itemC(int64_t i) const {
    return i / batch * outerC + i % batch * strideC;
  }
  /// f32 operands may be rounded to TF32 (a matmul's `tf32`): the CUDA
  /// executor asks cuBLAS for it; the host computes the f32 product.
  bool tf32 = false;
  /// The entry's workspace, given to cuBLAS.
  void *workspace = nullptr;
  uint64_t workspaceBytes = 0;
};

/// Products of T.
template <typename T> struct GemmOf : GemmShape {
  const T *a = nullptr, *b = nullptr;
  T *c = nullptr;
  /// C = op(A) op(B) + beta C: 0 or 1 (attention_grad sums its blocks).
  T beta = T(0.0);
};

/// Products of bf16 operands accumulated in f32 into an f32 or a bf16 C
/// (mixed precision): cuBLAS's GemmEx on the GPU; on the host, blocks of the
/// operands widened to f32 and multiplied by sgemm (HostRun.cpp).
struct GemmBf16 : GemmShape {
  const BFloat16 *a = nullptr, *b = nullptr;
  void *c = nullptr;
  bool cBf16 = false; // C holds bf16 (else f32)
  float beta = 0.0f;
};

struct Memset {
  void *data = nullptr;
  uint64_t bytes = 0;
  uint8_t value = 0;
};

struct CopyIn { // host (pinned staging) to device
  void *device = nullptr;
  const void *host = nullptr;
  uint64_t bytes = 0;
};

struct CopyOut { // device to host (pinned staging)
  void *host = nullptr;
  const void *device = nullptr;
  uint64_t bytes = 0;
};

/// Communication between the ranks of a data-parallel job (the call's
/// kinds: Communicator.h), f32 or the CPU's f64. AllReduce: a bucket, in
/// place. The host runs it through `communicator` (MPI); the CUDA executor
/// through NCCL in the step's graph. No communicator: a job of one rank,
/// where each is the identity.
struct Collective {
  CollectiveCall call;
  Communicator *communicator = nullptr;
  bool wide() const { return call.type == CollectiveType::F64; }
  uint64_t bytes() const { return call.count * (wide() ? 8 : 4); }
};

/// A step a backend lowered to a call of its own (a vendor library's fused
/// kernel, prepared at load: cuDNN's attention, a cuBLASLt product with an
/// epilogue) instead of the reference kernels: only `call` knows what it
/// runs. The backend that lowers to it owns `call`; the steps' access
/// (DeviceExecutor) are the launch's tensors, and the entry's workspace when
/// `usesWorkspace`.
class LibraryCall {
public:
  virtual ~LibraryCall() = default;
  /// Issues the call on `stream` (a cudaStream_t; null on the host), or
  /// returns the reason it cannot.
  virtual Status issue(void *stream) const = 0;
  /// What it is, for reports ("cuDNN SDPA (bf16, causal)").
  virtual std::string describe() const = 0;
};

struct BackendCall {
  const LibraryCall *call = nullptr;
  bool usesWorkspace = false;
};

#define ZRT_SELF_BUILT_STEP(id, functor) , functor<T>

/// An entry's steps with float tensors held as T: float for plans run in
/// their f32, double for the CPU executor's f64 reference precision.
template <typename T>
using StepOf = std::variant<
    Elementwise<T>, Fill, CausalMask<T>, StridedCopy, ConcatPart, SliceGrad<T>,
    Embedding<T>, EmbeddingGrad<T>, Dropout<T>, Sgd<T>, Adamw<T>,
    SumSquaresChunks<T>, SumSquares<T>, LrSchedule<T>, Reduce<T>, MaxGrad<T>,
    Softmax<T>, SoftmaxGrad<T>, LayerNorm<T>, RmsNorm<T>, LayerNormGradRows<T>,
    LayerNormGradColumns<T>, RmsNormGradRows<T>, RmsNormGradColumns<T>,
    CrossEntropyRows<T>, MeanOf<T>, CrossEntropyGradRows<T>, AttentionRows<T>,
    AttentionGradDelta<T>, AttentionGradScores<T>, GemmOf<T>, Memset, CopyIn,
    CopyOut, Elementwise<T, BFloat16>, ElementMixed<T>, Convert<T>, GemmBf16,
    SliceGrad<T, BFloat16>, Dropout<T, BFloat16>, Reduce<T, BFloat16>,
    CrossEntropyRows<T, BFloat16>, CrossEntropyGradRows<T, BFloat16>,
    AttentionGradDelta<T, BFloat16>, LayerNorm<T, BFloat16>,
    RmsNorm<T, BFloat16>, LayerNormGradRows<T, BFloat16>,
    LayerNormGradColumns<T, BFloat16>, RmsNormGradRows<T, BFloat16>,
    RmsNormGradColumns<T, BFloat16>, Collective, Im2col<T>, Col2im<T>,
    HeadStore<T>, HeadStore<T, BFloat16>, ChunkedColumns<ColumnValues<T>>,
    ChunkedColumns<ColumnValues<T, BFloat16>>,
    ChunkedColumns<LayerNormGradColumns<T>>,
    ChunkedColumns<LayerNormGradColumns<T, BFloat16>>,
    ChunkedColumns<RmsNormGradColumns<T>>,
    ChunkedColumns<RmsNormGradColumns<T, BFloat16>>, BackendCall ZRT_SELF_BUILT_KERNELS(ZRT_SELF_BUILT_STEP)>;

/// The product a step runs (either kind), or null.
template <typename T> const GemmShape *productOf(const StepOf<T> &step) {
  if (const auto *g = std::get_if<GemmOf<T>>(&step))
    return g;
  return std::get_if<GemmBf16>(&step);
}

/// The GPU's: f32.
using Gemm = GemmOf<float>;
using Step = StepOf<float>;

/// Where an entry's bytes are: each buffer's device address, the workspace
/// (null when the entry has none) and the error record.
struct EntryMemory {
  std::vector<uint8_t *> buffers;
  uint8_t *workspace = nullptr;
  uint64_t workspaceBytes = 0;
  /// The workspace's last bytes, never given to cuBLAS (pinnedScratchBytes,
  /// in the executor's element size).
  uint64_t pinnedBytes = 0;
  DeviceError *error = nullptr;
  /// The data-parallel job's ranks (all_reduce), or null for one rank.
  Communicator *communicator = nullptr;
  /// Lowered for a GPU's threads (CUDA, and the emulator's GPU mode): column
  /// sums as ChunkedColumns, reading coalesced, instead of a group per
  /// column.
  bool forGpu = false;
};

/// Appends the steps of launch `index` of `entry` (already validated).
/// Fails only when the entry lacks scratch the launch needs (a plan written
/// without workspaces).
template <typename T>
Status appendLaunch(const Entry &entry, size_t index, const EntryMemory &memory,
                    std::vector<StepOf<T>> &out);

/// A span of device addresses, [begin, end).
struct AddressRange {
  uintptr_t begin = 0, end = 0;
};

/// What one step reads and writes. Steps of one launch share the launch's
/// sets, so they stay in order among themselves.
struct StepAccess {
  std::vector<AddressRange> reads, writes;
};

/// The order steps must keep: for each step, the earlier steps that write
/// bytes it reads or writes, or read bytes it writes. Running the steps in
/// any order that keeps it gives the bits of running them in list order.
/// The CUDA executor makes it its graph's edges, so that independent work
/// (an update beside the rest of backward) overlaps.
struct StepOrder {
  /// The steps step i must follow directly, nearest first: the transitive
  /// reduction (a conflict already implied through another step is left
  /// out).
  std::vector<std::vector<uint32_t>> after;
  /// Bit j of ancestors[i]: step i follows step j, directly or not.
  std::vector<std::vector<uint64_t>> ancestors;

  bool follows(size_t i, size_t j) const {
    return ancestors[i][j / 64] >> (j % 64) & 1;
  }
};

StepOrder stepDependencies(const std::vector<StepAccess> &access);

/// Runs every step with launcher `L`, which has an overload per step kind
/// (or a template for the functors).
template <typename S, typename L>
void runSteps(const std::vector<S> &steps, L &launcher) {
  for (const S &step : steps)
    std::visit(launcher, step);
}

} // namespace zcc::runtime::device

#endif // ZCC_LIB_RUNTIME_DEVICE_DEVICEPROGRAM_H
