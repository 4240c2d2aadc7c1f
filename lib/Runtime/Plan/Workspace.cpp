//===- Workspace.cpp - sizing and placing the entries' device workspaces --===//

#include "zcc/Runtime/Plan/KernelRules.h"
#include "zcc/Runtime/Plan/ShapeRules.h"

#include <algorithm>

using namespace zcc::runtime;

namespace {

uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

/// Rows of the last dimension of a launch's first input.
uint64_t rowsOf(const Entry &entry, const Launch &launch) {
  const TensorType &type = entry.tensors[launch.inputs[0]].type;
  int64_t width = type.shape.empty() ? 1 : type.shape.back();
  return width ? static_cast<uint64_t>(type.numElements() / width) : 0;
}

// Split-K keeps one partial product per split: at most kMaxSplits, and a
// split is not worth less than kSplitChunk of the summed dimension.
constexpr uint64_t kSplitChunk = 128;
constexpr uint64_t kMaxSplits = 16;
constexpr uint64_t kMaxAutoMatmulWorkspace = uint64_t(32) << 20;

/// The probabilities of one block of attention rows at most (64 MiB in f32).
constexpr int64_t kMaxAttentionBlock = int64_t(1) << 24;
constexpr int64_t kAttentionBlockRows = 64;

} // namespace

AttentionShape zcc::runtime::attentionShape(const Entry &entry,
                                            const Launch &launch) {
  const TensorType &query = entry.tensors[launch.inputs[0]].type;
  const TensorType &value = entry.tensors[launch.inputs[2]].type;
  size_t rank = query.shape.size();
  AttentionShape shape;
  shape.batch = shapeProduct(query.shape, 0, rank - 2);
  shape.queries = query.shape[rank - 2];
  shape.head = query.shape[rank - 1];
  shape.keys = value.shape[rank - 2];
  shape.valueHead = value.shape[rank - 1];
  int64_t kvBatch = shapeProduct(value.shape, 0, rank - 2);
  shape.groups = kvBatch > 0 ? shape.batch / kvBatch : 1;
  int64_t rows = std::min(shape.queries, kAttentionBlockRows);
  int64_t perRow = std::max<int64_t>(shape.batch * shape.keys, 1);
  while (rows > 1 && rows * perRow > kMaxAttentionBlock)
    rows /= 2;
  shape.blockRows = rows;
  return shape;
}

Status zcc::runtime::headLayout(const Tensor &tensor, HeadLayout &layout) {
  const std::vector<int64_t> &shape = tensor.type.shape;
  size_t rank = shape.size();
  std::vector<int64_t> steps = tensor.strides;
  if (steps.empty()) {
    steps.resize(rank);
    rowMajorStrides(shape, steps.data());
  }
  if (rank < 2 || steps.size() != rank)
    return makeError(StatusCode::InvalidPlan, "attention reads rank >= 2");
  if (shape[rank - 1] > 1 && steps[rank - 1] != 1)
    return makeError(StatusCode::InvalidPlan,
                     "a view whose last dimension steps by ", steps[rank - 1],
                     "; attention reads rows of consecutive elements");
  layout.row = steps[rank - 2];
  layout.head = rank >= 3 ? steps[rank - 3] : 0;
  layout.outer = rank >= 4 ? steps[rank - 4] : 0;
  // The dimensions before the heads step as one: each is the next's run.
  for (size_t d = 0; d + 4 < rank; ++d)
    if (shape[d] > 1 && steps[d] != steps[d + 1] * shape[d + 1])
      return makeError(StatusCode::InvalidPlan, "a view whose dimension ", d,
                       " steps by ", steps[d], ", not ",
                       steps[d + 1] * shape[d + 1],
                       ": attention takes the dimensions before the heads as "
                       "one");
  return Status::ok();
}

AttentionScratch zcc::runtime::attentionScratch(const Entry &entry,
                                                const Launch &launch) {
  AttentionShape a = attentionShape(entry, launch);
  bool bf16 = entry.tensors[launch.inputs[0]].type.dtype == DType::BF16;
  int64_t block = a.batch * a.blockRows * a.keys;
  // bf16's parts start at multiples of 256 bytes (the products' operands).
  auto aligned = [&](int64_t n) { return bf16 ? (n + 63) / 64 * 64 : n; };
  AttentionScratch room;
  if (launch.kernel == KernelId::Attention) {
    room.rounded = aligned(block);
    room.roundedCount = bf16 ? block : 0;
    return room;
  }
  room.grads = aligned(block);
  room.delta = room.grads + aligned(block);
  room.keySums = room.delta + aligned(a.batch * a.queries);
  auto sums = [&](size_t o) {
    return bf16 ? aligned(entry.tensors[launch.outputs[o]].type.numElements())
                : 0;
  };
  room.valueSums = room.keySums + sums(1);
  room.rounded = room.valueSums + sums(2);
  room.roundedCount = bf16 ? 2 * block : 0;
  return room;
}

bool zcc::runtime::columnSumShape(const Entry &entry, const Launch &launch,
                                  ColumnSumShape &shape) {
  shape = ColumnSumShape();
  switch (launch.kernel) {
  case KernelId::LayerNormGrad:
  case KernelId::RmsNormGrad: {
    const TensorType &x = entry.tensors[launch.inputs[0]].type;
    shape.columns = x.shape.empty() ? 1 : x.shape.back();
    shape.rows = static_cast<int64_t>(rowsOf(entry, launch));
    shape.sums = launch.kernel == KernelId::LayerNormGrad ? 2 : 1;
    break;
  }
  case KernelId::Sum:
  case KernelId::Mean: {
    // The reduced dimensions (those of extent 1 aside) must all come before
    // the kept ones: then each result is a column of a row-major matrix.
    const TensorType &x = entry.tensors[launch.inputs[0]].type;
    const std::vector<int64_t> &dims = launch.params.dims;
    shape.rows = shape.columns = 1;
    bool kept = false;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      if (x.shape[d] == 1)
        continue;
      bool reduced = std::find(dims.begin(), dims.end(),
                               static_cast<int64_t>(d)) != dims.end();
      if (reduced && kept)
        return false;
      kept |= !reduced;
      (reduced ? shape.rows : shape.columns) *= x.shape[d];
    }
    break;
  }
  default:
    return false;
  }
  return shape.columns >= kMinSumColumns;
}

int64_t zcc::runtime::columnSumChunks(int64_t rows, int64_t columns) {
  int64_t wanted =
      (kColumnSumThreads + std::max<int64_t>(columns, 1) - 1) /
      std::max<int64_t>(columns, 1);
  return std::max<int64_t>(1, std::min(wanted, rows / kMinChunkRows));
}

uint64_t zcc::runtime::columnSumPartialBytes(const Entry &entry,
                                             const Launch &launch) {
  ColumnSumShape shape;
  if (!columnSumShape(entry, launch, shape))
    return 0;
  int64_t chunks = columnSumChunks(shape.rows, shape.columns);
  return chunks > 1 ? 4 * static_cast<uint64_t>(chunks * shape.sums *
                                                shape.columns)
                    : 0;
}

uint64_t zcc::runtime::kernelScratchBytes(const Entry &entry,
                                          const Launch &launch) {
  constexpr uint64_t kFloat = 4;
  switch (launch.kernel) {
  case KernelId::SoftmaxCrossEntropy: // one loss per label
    return kFloat * static_cast<uint64_t>(
                        entry.tensors[launch.inputs[1]].type.numElements());
  case KernelId::SoftmaxCrossEntropyGrad: // the rows kept, when some are not
    return launch.params.ignoreIndex ? kFloat : 0;
  case KernelId::SoftmaxCrossEntropyFused: // both
    return kFloat *
           (static_cast<uint64_t>(
                entry.tensors[launch.inputs[1]].type.numElements()) +
            (launch.params.ignoreIndex ? 1 : 0));
  case KernelId::Conv2d:
  case KernelId::Conv2dInputGrad:
  case KernelId::Conv2dWeightGrad: // one image's columns (im2col)
    return kFloat * static_cast<uint64_t>(conv2dColumns(entry, launch));
  case KernelId::LayerNormGrad: // mean and 1/std per row, then partials
    return 2 * kFloat * rowsOf(entry, launch) +
           columnSumPartialBytes(entry, launch);
  case KernelId::RmsNormGrad: // 1/rms per row, then partials
    return kFloat * rowsOf(entry, launch) +
           columnSumPartialBytes(entry, launch);
  case KernelId::SumSquares: { // one f64 sum per chunk, when several
    int64_t chunks =
        sumSquaresChunks(entry.tensors[launch.inputs[0]].type.numElements());
    return chunks > 1 ? 8 * static_cast<uint64_t>(chunks) : 0;
  }
  case KernelId::Attention:
  case KernelId::AttentionGrad: {
    AttentionScratch room = attentionScratch(entry, launch);
    return kFloat * static_cast<uint64_t>(room.rounded) +
           2 * static_cast<uint64_t>(room.roundedCount);
  }
  default:
    return 0;
  }
}

uint64_t zcc::runtime::entryScratchBytes(const Entry &entry) {
  uint64_t bytes = 0;
  for (const Launch &launch : entry.launches)
    bytes = std::max(bytes, kernelScratchBytes(entry, launch));
  return bytes;
}

uint64_t zcc::runtime::pinnedScratchBytes(const Entry &entry) {
  uint64_t bytes = 0;
  for (const Launch &launch : entry.launches) {
    if (kernelRunsProducts(launch.kernel) && launch.kernel != KernelId::Matmul)
      bytes = std::max(bytes, kernelScratchBytes(entry, launch));
    if (launch.kernel == KernelId::Sum || launch.kernel == KernelId::Mean)
      bytes = std::max(bytes, columnSumPartialBytes(entry, launch));
  }
  return bytes;
}

bool zcc::runtime::kernelRunsProducts(KernelId kernel) {
  switch (kernel) {
  case KernelId::Matmul:
  case KernelId::Attention:
  case KernelId::AttentionGrad:
  case KernelId::Conv2d:
  case KernelId::Conv2dInputGrad:
  case KernelId::Conv2dWeightGrad:
    return true;
  default:
    return false;
  }
}

int64_t zcc::runtime::conv2dColumns(const Entry &entry, const Launch &launch) {
  const TensorType &input = entry.tensors[launch.inputs[0]].type;
  const TensorType &weight = entry.tensors[launch.inputs[1]].type;
  Shape y;
  if (!conv2dShape(input.shape, weight.shape, launch.params.strides,
                   launch.params.padding, launch.params.dilation,
                   launch.params.groups, y)
           .isOk())
    return 0;
  // [C KH KW, OH OW]: every channel's patches (all groups) of one image.
  return input.shape[1] * weight.shape[2] * weight.shape[3] * y[2] * y[3];
}

uint64_t zcc::runtime::autoMatmulWorkspaceBytes(const Entry &entry) {
  uint64_t bytes = 0;
  for (const Launch &launch : entry.launches) {
    if (launch.kernel != KernelId::Matmul)
      continue;
    // The summed dimension: the lhs's last, or its second last if transposed.
    const TensorType &lhs = entry.tensors[launch.inputs[0]].type;
    bool transposed = launch.params.transposeLhs;
    uint64_t k = static_cast<uint64_t>(
        lhs.shape[lhs.shape.size() - (transposed ? 2 : 1)]);
    uint64_t splits = std::min<uint64_t>(k / kSplitChunk, kMaxSplits);
    uint64_t output = static_cast<uint64_t>(
        entry.tensors[launch.outputs[0]].type.bytes());
    bytes = std::max(bytes, splits * output);
  }
  return std::min(bytes, kMaxAutoMatmulWorkspace);
}

Status zcc::runtime::addWorkspaces(Plan &plan, int64_t matmulBytes) {
  uint64_t alignment = std::max<uint64_t>(plan.alignment, 1);
  plan.arenaSize = 0;
  for (Entry &entry : plan.entries) {
    if (entry.workspace >= 0)
      return makeError(StatusCode::InvalidArgument, "entry '", entry.name,
                       "' already has a workspace");
    bool hasMatmul = std::any_of(entry.launches.begin(), entry.launches.end(),
                                 [](const Launch &l) {
                                   return kernelRunsProducts(l.kernel);
                                 });
    uint64_t matmul = !hasMatmul ? 0
                      : matmulBytes < 0
                          ? autoMatmulWorkspaceBytes(entry)
                          : static_cast<uint64_t>(matmulBytes);
    uint64_t size = alignUp(
        std::max(entryScratchBytes(entry), matmul + pinnedScratchBytes(entry)),
        alignment);
    if (size > 0) {
      Buffer buffer;
      buffer.region = Region::Arena;
      buffer.offset = alignUp(entry.arenaSize, alignment);
      buffer.size = size;
      entry.workspace = static_cast<int32_t>(entry.buffers.size());
      entry.buffers.push_back(buffer);
      entry.arenaSize = buffer.offset + size;
      entry.lowerBound += size;
      entry.noReuseSize += size;
    }
    plan.arenaSize = std::max(plan.arenaSize, entry.arenaSize);
  }
  return Status::ok();
}
