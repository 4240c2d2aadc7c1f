//===- Launch.h - one kernel launch of a plan, decoded and typed -*- C++ -*-===//
//
// A plan file names a launch's kernel by a string and states its parameters
// by name (the zt op's attributes). The loader and the compiler decode both
// once, here, into a `Launch`: a KernelId and typed parameters. The rules
// (KernelRules.h) and every executor read only the typed form, so no kernel
// looks anything up by name and the runtime holds no defaults: the compiler
// states every parameter.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_LAUNCH_H
#define ZCC_RUNTIME_LAUNCH_H

#include "zcc/Runtime/Plan/ElementKernels.h"
#include "zcc/Runtime/Plan/OpTraits.h"
#include "zcc/Runtime/Status.h"
#include "zcc/Runtime/Plan/zplan_enums_generated.h"

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zcc::runtime {

// X(Id, "name", traits): the kernels that are not element rows, in the
// order of docs/zt-dialect.md, with their properties (OpTraits.h). The zt op
// of a kernel has its name; the passes read its traits (zt::traitsOf).
#define ZRT_OTHER_KERNEL_LIST(X)                                               \
  X(Constant, "constant", kNoTraits)                                           \
  X(CausalMask, "causal_mask", kNoTraits)                                      \
  X(BroadcastInDim, "broadcast_in_dim", kCheapToRecompute | kStoresBf16)       \
  X(Transpose, "transpose", kCheapToRecompute | kStoresBf16 | kView)           \
  X(Slice, "slice", kCheapToRecompute | kStoresBf16 | kView)                   \
  X(Concat, "concat", kStoresBf16)                                             \
  X(Sum, "sum", kNoTraits)                                                     \
  X(Mean, "mean", kNoTraits)                                                   \
  X(Max, "max", kNoTraits)                                                     \
  X(Matmul, "matmul", kNoTraits)                                               \
  X(Attention, "attention", kStoresBf16)                                       \
  X(Softmax, "softmax", kNoTraits)                                             \
  X(LogSoftmax, "log_softmax", kNoTraits)                                      \
  X(LayerNorm, "layer_norm", kCheapToRecompute | kStoresBf16 | kAffineF32)    \
  X(RmsNorm, "rms_norm", kCheapToRecompute | kStoresBf16 | kAffineF32)        \
  X(Embedding, "embedding", kNoTraits)                                         \
  X(SoftmaxCrossEntropy, "softmax_cross_entropy", kReadsBf16)                  \
  X(Mse, "mse", kNoTraits)                                                     \
  X(Dropout, "dropout", kInPlace | kCheapToRecompute | kStoresBf16)            \
  X(Scale, "scale",                                                            \
    kInPlace | kStridedReads | kCheapToRecompute | kStoresBf16)                \
  X(SoftmaxGrad, "softmax_grad", kNoTraits)                                    \
  X(LogSoftmaxGrad, "log_softmax_grad", kNoTraits)                             \
  X(MaxGrad, "max_grad", kNoTraits)                                            \
  X(SliceGrad, "slice_grad", kNoTraits)                                        \
  X(LayerNormGrad, "layer_norm_grad", kNoTraits)                               \
  X(RmsNormGrad, "rms_norm_grad", kNoTraits)                                   \
  X(EmbeddingGrad, "embedding_grad", kNoTraits)                                \
  X(AttentionGrad, "attention_grad", kNoTraits)                                \
  X(SoftmaxCrossEntropyGrad, "softmax_cross_entropy_grad", kInPlace)           \
  X(MseGrad, "mse_grad", kInPlace)                                             \
  X(Sgd, "sgd", kInPlace | kUpdate)                                            \
  X(Adamw, "adamw", kInPlace | kUpdate)                                        \
  X(SumSquares, "sum_squares", kUpdate)                                        \
  X(LrSchedule, "lr_schedule", kUpdate)                                        \
  X(AllReduce, "all_reduce", kInPlace | kCommunicates | kBucket)               \
  X(ReduceScatter, "reduce_scatter", kCommunicates | kSharded)                 \
  X(AllGather, "all_gather", kCommunicates | kSharded)                         \
  X(Shard, "shard", kSharded)                                                  \
  X(Pack, "pack", kInPlace | kBucket)                                          \
  X(Copy, "copy", kInPlace)                                                    \
  X(Convert, "convert", kCheapToRecompute)                                     \
  X(Cumsum, "cumsum", kNoTraits)                                               \
  X(Rotary, "rotary", kStoresBf16 | kAffineF32)                                \
  X(Conv2d, "conv2d", kNoTraits)                                               \
  X(Conv2dInputGrad, "conv2d_input_grad", kNoTraits)                           \
  X(Conv2dWeightGrad, "conv2d_weight_grad", kNoTraits)                         \
  X(MaxPool2d, "max_pool2d", kNoTraits)                                        \
  X(MaxPool2dGrad, "max_pool2d_grad", kNoTraits)                              \
  X(BatchNormStats, "batch_norm_stats", kNoTraits)                             \
  X(BatchNormStatsGrad, "batch_norm_stats_grad", kInPlace)                     \
  X(BatchNorm, "batch_norm", kInPlace | kCheapToRecompute)                     \
  X(BatchNormGrad, "batch_norm_grad", kInPlace)                               \
  X(Fused, "fused", kInPlace | kStridedReads)                                  \
  X(SoftmaxCrossEntropyFused, "softmax_cross_entropy_fused",                   \
    kInPlace | kReadsBf16)

// X(Id, "name", ...): every kernel: the element kernels (ElementKernels.h,
// whose rows also pass their arity), then the others.
#define ZRT_KERNEL_LIST(X)                                                     \
  ZRT_ELEMENT_KERNEL_LIST(X)                                                   \
  ZRT_OTHER_KERNEL_LIST(X)

enum class KernelId : uint16_t {
#define ZRT_KERNEL_ENUM(id, ...) id,
  ZRT_KERNEL_LIST(ZRT_KERNEL_ENUM)
#undef ZRT_KERNEL_ENUM
      NumKernels
};

const char *kernelName(KernelId id);

/// The properties of kernel `id` (OpTraits.h): its element row's, or its
/// entry's in ZRT_OTHER_KERNEL_LIST.
constexpr OpTraits kernelTraits(KernelId id) {
  constexpr OpTraits kOther[] = {
#define ZRT_KERNEL_TRAITS(id, name, traits) traits,
      ZRT_OTHER_KERNEL_LIST(ZRT_KERNEL_TRAITS)
#undef ZRT_KERNEL_TRAITS
  };
  size_t index = static_cast<size_t>(id);
  if (index < static_cast<size_t>(kElementRowCount))
    return kElementRows[index].traits;
  index -= kElementRowCount;
  // An id past the list (a corrupt launch the loader has yet to reject).
  return index < std::size(kOther) ? kOther[index] : kNoTraits;
}

/// Whether an output of `id` may be the very buffer of one of its inputs
/// (kInPlace: the element kernels, the optimizers' updates). The loader
/// rejects any other sharing between a launch's operands.
constexpr bool kernelAllowsInPlace(KernelId id) {
  return kernelTraits(id) & kInPlace;
}
/// Whether `id` may read its first two inputs through broadcast strides
/// (kStridedReads: the element kernels and scale; a fused element program
/// any of its inputs). No other kernel reads a strided tensor, and no
/// kernel writes one.
constexpr bool kernelReadsThroughStrides(KernelId id) {
  return kernelTraits(id) & kStridedReads;
}
/// Whether input `i` of `id` may be a broadcast read through strides
/// (rotary's cos and sin too, repeated over the heads).
constexpr bool kernelReadsInputThroughStrides(KernelId id, size_t i) {
  if (id == KernelId::Rotary)
    return i == 1 || i == 2;
  return kernelReadsThroughStrides(id) && (i < 2 || id == KernelId::Fused);
}
/// Whether input `i` (output `i` when `output`) of `id` may be a view: any
/// steps (headLayout's) from an offset into a buffer. Attention's queries,
/// keys, values, result and result gradient, and the gradients it writes:
/// heads read from a fused projection and written in the layout the next
/// product reads, with no copies between. Rotary's operand and result: the
/// heads of a projection rotated where they lie, a gradient written in the
/// projection's layout.
constexpr bool kernelTakesView(KernelId id, bool output, size_t i) {
  if (id == KernelId::Rotary)
    return i == 0;
  if (id == KernelId::Attention)
    return output ? i == 0 : i < 3;
  if (id == KernelId::AttentionGrad)
    return output ? i < 3 : i < 4 || i == 5;
  return false;
}
/// Whether `id` communicates between the ranks of a data-parallel job.
constexpr bool kernelCommunicates(KernelId id) {
  return kernelTraits(id) & kCommunicates;
}
/// ZeRO-1's kernels, whose `ranks` parameter is the plan's world size.
constexpr bool kernelIsSharded(KernelId id) {
  return kernelTraits(id) & kSharded;
}
std::optional<KernelId> findKernel(std::string_view name);

/// The row of element kernel `id` (ElementKernels.h: the element kernels
/// are the first KernelIds); null for the other kernels.
const ElementRow *elementRow(KernelId id);
/// The operands of element kernel `id`; none for the other kernels.
std::optional<ElementArity> elementArity(KernelId id);

// X(Kernel, "name", Kind, member): every parameter of every kernel, named
// as the zt op's attribute (ZTOps.td; zcc-dialect-tests checks that the two
// agree) and stored in LaunchParams::member. A Unit parameter is a flag,
// set when present; one whose member is a std::optional may be absent;
// every other one is required.
#define ZRT_KERNEL_PARAM_LIST(X)                                               \
  X(Scale, "factor", Float, factor)                                            \
  X(Constant, "value", Float, value)                                           \
  X(BroadcastInDim, "broadcast_dimensions", Ints, broadcastDimensions)         \
  X(Transpose, "permutation", Ints, permutation)                               \
  X(Slice, "start_indices", Ints, startIndices)                                \
  X(Slice, "limit_indices", Ints, limitIndices)                                \
  X(Slice, "strides", Ints, strides)                                           \
  X(SliceGrad, "start_indices", Ints, startIndices)                            \
  X(SliceGrad, "limit_indices", Ints, limitIndices)                            \
  X(SliceGrad, "strides", Ints, strides)                                       \
  X(Concat, "dimension", Int, dimension)                                       \
  X(Sum, "dims", Ints, dims)                                                   \
  X(Sum, "keep_dims", Unit, keepDims)                                          \
  X(Mean, "dims", Ints, dims)                                                  \
  X(Mean, "keep_dims", Unit, keepDims)                                         \
  X(Max, "dims", Ints, dims)                                                   \
  X(Max, "keep_dims", Unit, keepDims)                                          \
  X(MaxGrad, "dims", Ints, dims)                                               \
  X(MaxGrad, "keep_dims", Unit, keepDims)                                      \
  X(Matmul, "transpose_lhs", Unit, transposeLhs)                               \
  X(Matmul, "transpose_rhs", Unit, transposeRhs)                               \
  X(Matmul, "tf32", Unit, tf32)                                                \
  X(Attention, "scale", Float, scale)                                          \
  X(Attention, "causal", Unit, causal)                                         \
  X(Attention, "dropout", Float, dropout)                                      \
  X(Attention, "seed", Int, dropoutSeed)                                       \
  X(AttentionGrad, "scale", Float, scale)                                      \
  X(AttentionGrad, "causal", Unit, causal)                                     \
  X(AttentionGrad, "dropout", Float, dropout)                                  \
  X(AttentionGrad, "seed", Int, dropoutSeed)                                   \
  X(Softmax, "axis", Int, axis)                                                \
  X(LogSoftmax, "axis", Int, axis)                                             \
  X(SoftmaxGrad, "axis", Int, axis)                                            \
  X(LogSoftmaxGrad, "axis", Int, axis)                                         \
  X(LayerNorm, "epsilon", Float, epsilon)                                      \
  X(RmsNorm, "epsilon", Float, epsilon)                                        \
  X(LayerNormGrad, "epsilon", Float, epsilon)                                  \
  X(RmsNormGrad, "epsilon", Float, epsilon)                                    \
  X(Dropout, "rate", Float, rate)                                              \
  X(Dropout, "seed", Int, seed)                                                \
  X(Sgd, "lr", Float, lr)                                                      \
  X(Sgd, "momentum", Float, momentum)                                          \
  X(Sgd, "weight_decay", Float, weightDecay)                                   \
  X(Sgd, "nesterov", Unit, nesterov)                                           \
  X(Sgd, "max_grad_norm", Float, maxGradNorm)                                  \
  X(Adamw, "lr", Float, lr)                                                    \
  X(Adamw, "beta1", Float, beta1)                                              \
  X(Adamw, "beta2", Float, beta2)                                              \
  X(Adamw, "eps", Float, eps)                                                  \
  X(Adamw, "weight_decay", Float, weightDecay)                                 \
  X(Adamw, "max_grad_norm", Float, maxGradNorm)                                \
  X(LrSchedule, "warmup_steps", Int, warmupSteps)                              \
  X(LrSchedule, "decay_steps", Int, decaySteps)                                \
  X(LrSchedule, "min_factor", Float, minFactor)                                \
  X(LrSchedule, "cosine", Unit, cosine)                                        \
  X(LrSchedule, "linear", Unit, linear)                                        \
  X(AllReduce, "mean", Unit, mean)                                             \
  X(ReduceScatter, "ranks", Int, ranks)                                        \
  X(ReduceScatter, "mean", Unit, mean)                                         \
  X(AllGather, "ranks", Int, ranks)                                            \
  X(Shard, "ranks", Int, ranks)                                                \
  X(Cumsum, "dim", Int, axis)                                                  \
  X(Cumsum, "reverse", Unit, reverse)                                          \
  X(Rotary, "transposed", Unit, transposed)                                    \
  X(SoftmaxCrossEntropy, "ignore_index", Int, ignoreIndex)                     \
  X(MaxPool2d, "kernel_size", Ints, kernelSize)                                \
  X(MaxPool2d, "stride", Ints, strides)                                        \
  X(MaxPool2d, "padding", Ints, padding)                                       \
  X(MaxPool2d, "dilation", Ints, dilation)                                     \
  X(MaxPool2d, "ceil_mode", Unit, ceilMode)                                    \
  X(MaxPool2dGrad, "kernel_size", Ints, kernelSize)                            \
  X(MaxPool2dGrad, "stride", Ints, strides)                                    \
  X(MaxPool2dGrad, "padding", Ints, padding)                                   \
  X(MaxPool2dGrad, "dilation", Ints, dilation)                                 \
  X(MaxPool2dGrad, "ceil_mode", Unit, ceilMode)                                \
  X(Conv2d, "stride", Ints, strides)                                           \
  X(Conv2d, "padding", Ints, padding)                                          \
  X(Conv2d, "dilation", Ints, dilation)                                        \
  X(Conv2d, "groups", Int, groups)                                             \
  X(Conv2dInputGrad, "stride", Ints, strides)                                  \
  X(Conv2dInputGrad, "padding", Ints, padding)                                 \
  X(Conv2dInputGrad, "dilation", Ints, dilation)                               \
  X(Conv2dInputGrad, "groups", Int, groups)                                    \
  X(Conv2dWeightGrad, "stride", Ints, strides)                                 \
  X(Conv2dWeightGrad, "padding", Ints, padding)                                \
  X(Conv2dWeightGrad, "dilation", Ints, dilation)                              \
  X(Conv2dWeightGrad, "groups", Int, groups)                                   \
  X(SoftmaxCrossEntropyGrad, "ignore_index", Int, ignoreIndex)                 \
  X(SoftmaxCrossEntropy, "label_smoothing", Float, labelSmoothing)             \
  X(SoftmaxCrossEntropyGrad, "label_smoothing", Float, labelSmoothing)         \
  X(SoftmaxCrossEntropyFused, "ignore_index", Int, ignoreIndex)                \
  X(SoftmaxCrossEntropyFused, "label_smoothing", Float, labelSmoothing)        \
  X(BatchNorm, "epsilon", Float, epsilon)                                      \
  X(BatchNormGrad, "epsilon", Float, epsilon)                                  \
  X(Fused, "ops", Names, programOps)                                           \
  X(Fused, "args", Ints, programArgs)                                          \
  X(Fused, "numbers", Floats, programNumbers)                                  \
  X(Fused, "outputs", Ints, programOutputs)                                    \
  X(Fused, "seeds", Ints, programSeeds)

/// A launch's parameters, typed. Each kernel uses the members its rows of
/// ZRT_KERNEL_PARAM_LIST name; the others keep these zero values.
struct LaunchParams {
  double factor = 0, value = 0, epsilon = 0, rate = 0;
  double lr = 0, momentum = 0, weightDecay = 0, beta1 = 0, beta2 = 0, eps = 0;
  double scale = 0, maxGradNorm = 0, minFactor = 0;
  int64_t dimension = 0, axis = 0, seed = 0, ranks = 0;
  int64_t warmupSteps = 0, decaySteps = 0;
  bool keepDims = false, transposeLhs = false, transposeRhs = false;
  bool tf32 = false; // an f32 matmul may round its operands to TF32
  bool nesterov = false, causal = false, mean = false;
  bool cosine = false, linear = false, reverse = false;
  bool transposed = false; // rotary's transposed map (its gradient)
  bool ceilMode = false; // max_pool2d's output size rounded up
  std::optional<int64_t> ignoreIndex;
  std::optional<double> labelSmoothing;
  /// Attention's dropout of its probabilities and the draw's seed.
  std::optional<double> dropout;
  std::optional<int64_t> dropoutSeed;
  std::vector<int64_t> broadcastDimensions, permutation, dims;
  std::vector<int64_t> startIndices, limitIndices, strides;
  std::vector<int64_t> padding, dilation; // conv2d's (strides: its stride)
  std::vector<int64_t> kernelSize;         // max_pool2d's window
  int64_t groups = 0;
  /// An element kernel's params, in its row's order (ElementKernels.h).
  double elementParams[kMaxElementParams] = {};
  /// A fused element program (zt.fused): its steps' rows by name, their
  /// operands (the launch's float inputs, then the earlier steps' results),
  /// their numbers, in order, and the value each output is.
  std::vector<std::string> programOps;
  std::vector<int64_t> programArgs;
  std::vector<double> programNumbers;
  std::vector<int64_t> programOutputs;
  std::vector<int64_t> programSeeds; // its dropouts' seeds, in order

  /// Every member a row of ZRT_KERNEL_PARAM_LIST names is equal.
  bool operator==(const LaunchParams &other) const;
};

using Phase = fb::Phase;

struct Launch {
  KernelId kernel = KernelId::Copy;
  std::vector<uint32_t> inputs;  // tensor indices of the entry
  std::vector<uint32_t> outputs; // tensor indices of the entry
  LaunchParams params;
  /// The part of the step (forward, backward, update) and the op's source
  /// location ("file:line:col", or empty): what the memory timeline shows.
  Phase phase = Phase::Forward;
  std::string location;

  const char *name() const { return kernelName(kernel); }
};

using ParamKind = fb::ParamKind;

/// A parameter as a plan file (and the compiler) states it: a name and a
/// value of one kind: `transpose_lhs` (unit), `axis = -1` (int),
/// `eps = 1e-5` (float), `dims = [0, 1]` (ints), `numbers = [0.5]`
/// (floats), `ops = ["add", "gelu"]` (names).
struct Param {
  std::string name;
  ParamKind kind = ParamKind::Unit;
  int64_t intValue = 0;
  double floatValue = 0;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> names;

  static Param flag(std::string name) { return {std::move(name)}; }
  static Param integer(std::string name, int64_t value) {
    return {std::move(name), ParamKind::Int, value};
  }
  static Param real(std::string name, double value) {
    return {std::move(name), ParamKind::Float, 0, value};
  }
  static Param list(std::string name, std::vector<int64_t> values) {
    return {std::move(name), ParamKind::Ints, 0, 0, std::move(values)};
  }
};

/// A parameter kernel `kernel` takes: its name and kind.
struct ParamSpec {
  const char *name;
  ParamKind kind;
};
/// The parameters `kernel` takes, in its order (its rows of
/// ZRT_KERNEL_PARAM_LIST, or its element row's numbers).
std::vector<ParamSpec> kernelParamSpecs(KernelId kernel);

/// Decodes a launch as a file states it: an unknown kernel, or a parameter
/// missing, of the wrong kind, stated twice or not the kernel's, is an
/// InvalidPlan error whose message names it (the caller says which launch).
/// Values are checked later, with the operands (checkLaunch).
Status decodeLaunch(std::string_view kernel, const std::vector<Param> &params,
                    Launch &out);

/// The named parameters of `launch` in its kernel's order: what a file
/// states and decodeLaunch reads back (unit flags only when set).
std::vector<Param> encodeParams(const Launch &launch);

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_LAUNCH_H
