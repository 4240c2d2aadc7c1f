//===- KernelRules.h - the kernels a plan may launch, their rules -*- C++
//-*-===//
//
// One entry per zt op (its name without the `zt.` prefix) plus `copy`. The
// loader checks every launch against its kernel's rules (operand counts,
// dtypes, shapes, parameters) before anything runs, so an executor never
// sees a launch that could read or write out of bounds: a corrupt plan is an
// error at load, never a crash in a kernel. Executors (CPU, CUDA) implement
// the kernels; the rules are shared.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_KERNELRULES_H
#define ZCC_RUNTIME_KERNELRULES_H

#include "zcc/Runtime/Plan/Plan.h"
#include "zcc/Runtime/Status.h"

#include <optional>
#include <string>
#include <string_view>

namespace zcc::runtime {

/// The largest rank any kernel accepts: executors size their index arrays
/// by it, and checkLaunch rejects anything above.
inline constexpr int kMaxKernelRank = 8;

/// The bytes from a tensor's start to the end of its last element: its
/// size, or for a strided one the reach of its steps (0 when empty).
uint64_t tensorReachBytes(const Tensor &tensor);

/// Checks one launch of `entry` (decoded: Launch.h) against its kernel's
/// rules: operand counts, dtypes, shapes and parameter values, as the zt
/// verifiers state them. The message names the launch index, the kernel and
/// the rule broken.
Status checkLaunch(const Entry &entry, size_t launchIndex);

/// The same rules over types: a launch of `kernel` with `params` reading
/// `inputs` and writing `outputs` (the verifier of a zt op with the
/// ZT_KernelRules trait). The message states the rule, unprefixed.
Status checkKernelTypes(KernelId kernel, const LaunchParams &params,
                        const std::vector<TensorType> &inputs,
                        const std::vector<TensorType> &outputs);

/// Whether `kernel`'s rule gives its results' types from its inputs and
/// parameters (KernelRules.cpp's ZRT_INFERRED_KERNELS): the ops the capture
/// API builds by name (Graph::op) and the zt verifier checks with these
/// rules.
bool kernelInfersResults(KernelId kernel);

/// The result types of `kernel` reading `inputs` with `params`, or the rule
/// the inputs break (unprefixed).
Status inferKernelResults(KernelId kernel, const LaunchParams &params,
                          const std::vector<TensorType> &inputs,
                          std::vector<TensorType> &outputs);

/// Floating-point operations of one launch of `kernel` reading `inputs` and
/// writing `outputs` (their types, in operand order) with `params`, as
/// usually counted: 2MNK per matrix product, 2ST(D+Dv) per attention head
/// (its gradient 2.5 times that), one per result element for every other
/// kernel. The one cost model: the plan report's and the
/// rematerialization's (zt-remat's bytes freed per FLOP).
double kernelFlops(KernelId kernel, const std::vector<TensorType> &inputs,
                   const std::vector<TensorType> &outputs,
                   const LaunchParams &params);

/// One step of a fused element program (zt.fused), decoded: a float
/// element row's kernel, Scale or Dropout, the values it reads (the
/// launch's float operands, then the earlier steps' results), its numbers
/// (scale's factor, dropout's rate first) and dropout's seed.
struct FusedStep {
  KernelId kernel = KernelId::Scale;
  int operands = 1;
  int args[2] = {0, 0};
  double numbers[kMaxElementParams] = {};
  uint64_t seed = 0;
};
struct FusedProgram {
  std::vector<FusedStep> steps;
  /// The float operands: the launch's inputs, but the step counter that
  /// follows them when a step is a dropout.
  size_t operands = 0;
  bool readsStep = false;
};

/// The program of a zt.fused launch with `inputs` inputs and `outputs`
/// results, or the rule its parameters break (unprefixed): at most
/// kMaxFusedSteps steps of known float rows, `scale` or `dropout`, each
/// reading earlier values only, every operand read, every number a number
/// (scale's finite, a rate in [0, 1)), a seed per dropout, nothing left
/// over; each output a distinct step's value, the last step's among them.
Status fusedProgram(const LaunchParams &params, size_t inputs, size_t outputs,
                    FusedProgram &program);

/// Row-major element strides of `shape` into `strides` (shape.size()
/// entries), for the executors' index arithmetic.
void rowMajorStrides(const std::vector<int64_t> &shape, int64_t *strides);
/// The product of shape[begin, end).
int64_t shapeProduct(const std::vector<int64_t> &shape, size_t begin,
                     size_t end);

/// "[1, 3]": the multi-index of flat position `position` in `shape`, for
/// the executors' messages about a bad index or label.
std::string formatIndexPosition(const std::vector<int64_t> &shape,
                                int64_t position);

/// attention and attention_grad's sizes: `batch` (the product of the batch
/// dimensions) heads of `queries` x `head` queries against `keys` x `head`
/// keys and `keys` x `valueHead` values, computed `blockRows` query rows at a
/// time (so the probabilities' workspace is `batch * blockRows * keys`).
struct AttentionShape {
  /// batch: the query's heads (B...); groups: query heads per key and value
  /// head (grouped-query attention; 1 when they have the query's heads).
  int64_t batch = 0, queries = 0, keys = 0, head = 0, valueHead = 0;
  int64_t blockRows = 0, groups = 1;
};
/// Of a launch that passed checkLaunch: at most 64 query rows per block,
/// fewer where a block's probabilities would pass 2^24 elements.
AttentionShape attentionShape(const Entry &entry, const Launch &launch);
/// Where attention's kernels find an operand `[B..., H, S, D]` (rank 2:
/// one head; rank 3: `[H, S, D]`): element (b, h, s, d) at
/// `b * outer + h * head + s * row + d` from the tensor's first element,
/// `b` running over the dimensions before `H` taken as one. Row-major, or a
/// view's strides (kernelTakesView): the heads of a fused projection read
/// in place, a result written in the layout the next product reads.
struct HeadLayout {
  int64_t outer = 0, head = 0, row = 0;
};
/// The layout of `tensor`, or why its strides cannot be read so (the last
/// step must be 1 and the dimensions before `H` must be one run).
Status headLayout(const Tensor &tensor, HeadLayout &layout);
/// The elements of one image's im2col columns, [C KH KW, OH OW], of a
/// conv2d launch (or its gradients') that passed checkLaunch.
int64_t conv2dColumns(const Entry &entry, const Launch &launch);
/// Whether `kernel` runs matrix products (GEMM steps given the workspace).
bool kernelRunsProducts(KernelId kernel);
/// Where attention's and attention_grad's scratch keeps what, in elements
/// of the executor's float type from its start: a block's scores (then
/// probabilities) first; the gradient's their gradients (`grads`), rowsum(dy
/// * y) per query row (`delta`) and, with bf16 operands, the key and value
/// gradients summed over the blocks (`keySums`, `valueSums`); then, with
/// bf16 operands, `roundedCount` bf16 elements at `rounded`: the
/// probabilities (and the gradients) rounded for the products.
struct AttentionScratch {
  int64_t grads = 0, delta = 0, keySums = 0, valueSums = 0, rounded = 0;
  int64_t roundedCount = 0;
};
AttentionScratch attentionScratch(const Entry &entry, const Launch &launch);

//===----------------------------------------------------------------------===//
// Device workspaces (Entry::workspace)
//===----------------------------------------------------------------------===//

/// Bytes of scratch the device executors' version of a launch needs from the
/// entry's workspace: per-row statistics (layer_norm_grad, rms_norm_grad,
/// then their column sums' partials on a GPU)
/// and per-row losses (softmax_cross_entropy), so that their column sums run
/// in a fixed order without atomics; one f64 sum per chunk (sum_squares of
/// more than one chunk); a block of attention probabilities (attention;
/// twice, and one number per query row, for attention_grad). 0 for every
/// other kernel. cuBLAS never gets these bytes while the launch's products
/// run (they hold the block between them).
uint64_t kernelScratchBytes(const Entry &entry, const Launch &launch);
/// The largest kernelScratchBytes of the entry's launches.
uint64_t entryScratchBytes(const Entry &entry);

/// The largest scratch of the entry's launches whose products run while the
/// scratch holds data (attention, attention_grad), and of the column sums'
/// partials on a GPU (columnSumPartialBytes of sum and mean): it takes the
/// workspace's last bytes, which cuBLAS is never given, so a bias gradient
/// may run beside the weight gradient's product.
uint64_t pinnedScratchBytes(const Entry &entry);

/// Column sums: sum and mean over a [rows, columns] operand's leading
/// dimensions (bias gradients), and layer_norm_grad's and rms_norm_grad's
/// affine gradients. On a GPU one block per column would read one element
/// per 32-byte sector; instead adjacent threads read adjacent columns, and
/// for enough threads each sums one chunk of a column's rows in order,
/// then one thread per column adds its chunks in order (the partials: in
/// the workspace). `sums` is the number of sums per column (2 for
/// layer_norm_grad). False for every other launch, and for fewer than
/// kMinSumColumns columns (a warp's reads would not fill its sectors).
struct ColumnSumShape {
  int64_t rows = 0, columns = 0, sums = 1;
};
bool columnSumShape(const Entry &entry, const Launch &launch,
                    ColumnSumShape &shape);
inline constexpr int64_t kMinSumColumns = 32;
/// The chunks of a column sum: enough for about kColumnSumThreads threads
/// (an H100's resident threads, about), each summing at least
/// kMinChunkRows rows; 1 (no partials) for many columns or few rows.
inline constexpr int64_t kColumnSumThreads = int64_t{1} << 17;
inline constexpr int64_t kMinChunkRows = 32;
int64_t columnSumChunks(int64_t rows, int64_t columns);
/// The f32 partials of a column sum split into chunks (0 for one chunk, and
/// for every launch that is not a column sum).
uint64_t columnSumPartialBytes(const Entry &entry, const Launch &launch);

/// sum_squares reads its operand in chunks of this many elements, one group
/// each, whose f64 sums (scratch) one group then adds in order: every
/// device sums in the same chunks, and a large gradient is read by many
/// threads (blocks) at once.
inline constexpr int64_t kSumSquaresChunk = int64_t{1} << 16;
inline int64_t sumSquaresChunks(int64_t elements) {
  return elements <= 0 ? 1
                       : (elements + kSumSquaresChunk - 1) / kSumSquaresChunk;
}

/// cuBLAS's share of a workspace when the compiler picks it: room for the
/// split-K partial products of the entry's largest need, one output per 128
/// of the summed dimension, at most 16, and at most 32 MiB in all (NVIDIA's
/// recommendation for Hopper); 0 with no matmul. cuBLAS only chooses
/// algorithms that fit, so any size is correct; a bigger one may be faster.
uint64_t autoMatmulWorkspaceBytes(const Entry &entry);

inline constexpr int64_t kAutoMatmulWorkspace = -1;

/// Gives every entry that needs one a workspace of max(scratch, matmul share
/// + pinned scratch) bytes (the share is `matmulBytes`, or the automatic
/// size), placed above the entry's
/// other arena buffers: it lives for the whole entry, so no plan could share
/// its bytes. Arena size, lower bound and no-reuse size grow by its size.
Status addWorkspaces(Plan &plan, int64_t matmulBytes = kAutoMatmulWorkspace);

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_KERNELRULES_H
