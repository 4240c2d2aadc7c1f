//===- Launch.h - one kernel launch of a plan, decoded and typed -*- C++ -*-===//
//
// A plan file names a launch's kernel by a string and states its parameters
// by name (the zt op's attributes). The loader and the compiler decode both
// once, here, into a `Launch`: a KernelId and typed parameters. The rules
// (Kernels.h) and every executor read only the typed form, so no kernel
// looks anything up by name and the runtime holds no defaults: the compiler
// states every parameter.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_LAUNCH_H
#define ZCC_RUNTIME_LAUNCH_H

#include "zcc/Runtime/Kernels/ElementKernels.h"
#include "zcc/Runtime/Status.h"
#include "zcc/Runtime/Plan/zplan_enums_generated.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zcc::runtime {

// X(Id, "name", ...): every kernel: the element kernels (ElementKernels.h,
// whose rows also pass their arity), then the others in the order of
// docs/zt-dialect.md.
#define ZRT_KERNEL_LIST(X)                                                     \
  ZRT_ELEMENT_KERNEL_LIST(X)                                                   \
  X(Constant, "constant")                                                      \
  X(CausalMask, "causal_mask")                                                 \
  X(BroadcastInDim, "broadcast_in_dim")                                        \
  X(Transpose, "transpose")                                                    \
  X(Slice, "slice")                                                            \
  X(Concat, "concat")                                                          \
  X(Sum, "sum")                                                                \
  X(Mean, "mean")                                                              \
  X(Max, "max")                                                                \
  X(Matmul, "matmul")                                                          \
  X(Attention, "attention")                                                    \
  X(Softmax, "softmax")                                                        \
  X(LogSoftmax, "log_softmax")                                                 \
  X(LayerNorm, "layer_norm")                                                   \
  X(RmsNorm, "rms_norm")                                                       \
  X(Embedding, "embedding")                                                    \
  X(SoftmaxCrossEntropy, "softmax_cross_entropy")                              \
  X(Mse, "mse")                                                                \
  X(Dropout, "dropout")                                                        \
  X(Scale, "scale")                                                            \
  X(SoftmaxGrad, "softmax_grad")                                               \
  X(LogSoftmaxGrad, "log_softmax_grad")                                        \
  X(MaxGrad, "max_grad")                                                       \
  X(SliceGrad, "slice_grad")                                                   \
  X(LayerNormGrad, "layer_norm_grad")                                          \
  X(RmsNormGrad, "rms_norm_grad")                                              \
  X(EmbeddingGrad, "embedding_grad")                                           \
  X(AttentionGrad, "attention_grad")                                           \
  X(SoftmaxCrossEntropyGrad, "softmax_cross_entropy_grad")                     \
  X(MseGrad, "mse_grad")                                                       \
  X(Sgd, "sgd")                                                                \
  X(Adamw, "adamw")                                                            \
  X(SumSquares, "sum_squares")                                                 \
  X(LrSchedule, "lr_schedule")                                                 \
  X(AllReduce, "all_reduce")                                                   \
  X(ReduceScatter, "reduce_scatter")                                           \
  X(AllGather, "all_gather")                                                   \
  X(Shard, "shard")                                                            \
  X(Pack, "pack")                                                              \
  X(Copy, "copy")                                                              \
  X(Convert, "convert")

enum class KernelId : uint16_t {
#define ZRT_KERNEL_ENUM(id, ...) id,
  ZRT_KERNEL_LIST(ZRT_KERNEL_ENUM)
#undef ZRT_KERNEL_ENUM
      NumKernels
};

const char *kernelName(KernelId id);

/// Whether `id` communicates between the ranks of a data-parallel job.
constexpr bool kernelCommunicates(KernelId id) {
  return id == KernelId::AllReduce || id == KernelId::ReduceScatter ||
         id == KernelId::AllGather;
}
/// ZeRO-1's kernels, whose `ranks` parameter is the plan's world size.
constexpr bool kernelIsSharded(KernelId id) {
  return id == KernelId::ReduceScatter || id == KernelId::AllGather ||
         id == KernelId::Shard;
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
// set when present; every other one is required.
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
  X(Attention, "scale", Float, scale)                                          \
  X(Attention, "causal", Unit, causal)                                         \
  X(AttentionGrad, "scale", Float, scale)                                      \
  X(AttentionGrad, "causal", Unit, causal)                                     \
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
  X(Shard, "ranks", Int, ranks)

/// A launch's parameters, typed. Each kernel uses the members its rows of
/// ZRT_KERNEL_PARAM_LIST name; the others keep these zero values.
struct LaunchParams {
  double factor = 0, value = 0, epsilon = 0, rate = 0;
  double lr = 0, momentum = 0, weightDecay = 0, beta1 = 0, beta2 = 0, eps = 0;
  double scale = 0, maxGradNorm = 0, minFactor = 0;
  int64_t dimension = 0, axis = 0, seed = 0, ranks = 0;
  int64_t warmupSteps = 0, decaySteps = 0;
  bool keepDims = false, transposeLhs = false, transposeRhs = false;
  bool nesterov = false, causal = false, mean = false;
  bool cosine = false, linear = false;
  std::vector<int64_t> broadcastDimensions, permutation, dims;
  std::vector<int64_t> startIndices, limitIndices, strides;
  /// An element kernel's params, in its row's order (ElementKernels.h).
  double elementParams[kMaxElementParams] = {};

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
/// `eps = 1e-5` (float), `dims = [0, 1]` (ints).
struct Param {
  std::string name;
  ParamKind kind = ParamKind::Unit;
  int64_t intValue = 0;
  double floatValue = 0;
  std::vector<int64_t> ints;
};

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
