//===- DeviceProgram.cpp - plan launches as device steps ------------------===//
//
// One function per kernel family turns a validated launch into functors
// with resolved addresses, mirroring the CPU kernels' index arithmetic
// (CpuKernels.cpp). Every launch has passed checkLaunch: operand counts,
// dtypes, shapes and parameters are trusted here.
//
//===----------------------------------------------------------------------===//

#include "Kernels/DeviceProgram.h"

#include "zcc/Runtime/Plan/KernelRules.h"

#include <algorithm>
#include <climits>
#include <cstring>

using namespace zcc::runtime;
using namespace zcc::runtime::device;

namespace {

static_assert(int(MixedStorage::Compute) == int(DType::F32) &&
                  int(MixedStorage::I32) == int(DType::I32) &&
                  int(MixedStorage::I64) == int(DType::I64) &&
                  int(MixedStorage::BF16) == int(DType::BF16) &&
                  int(MixedStorage::Bool) == int(DType::Bool),
              "MixedStorage is numbered as DType");

/// Bytes of one element as the executor stores it: float tensors hold T.
template <typename T> int32_t elementBytes(DType dtype) {
  return dtype == DType::F32 ? static_cast<int32_t>(sizeof(T))
                             : static_cast<int32_t>(dtypeBytes(dtype));
}

/// The same position -> offset map with fewer dimensions: size-1 dimensions
/// dropped, and a dimension merged into the next where their strides make
/// one run (offsetOf then divides less, or not at all at rank 1).
void simplify(StridedShape &shape) {
  StridedShape out;
  for (int d = 0; d < shape.rank; ++d) {
    if (shape.size[d] == 1)
      continue;
    if (out.rank > 0 &&
        out.stride[out.rank - 1] == shape.stride[d] * shape.size[d]) {
      out.size[out.rank - 1] *= shape.size[d];
      out.stride[out.rank - 1] = shape.stride[d];
      continue;
    }
    out.size[out.rank] = shape.size[d];
    out.stride[out.rank++] = shape.stride[d];
  }
  shape = out;
}

/// embedding_grad's threads (a thread per column and slice of rows): enough
/// to fill a GPU, however narrow the table.
constexpr int64_t kEmbeddingGradThreads = 32768;

/// Threads per group for rows of `work` elements: one warp up to
/// kWarpRowLength (the CUDA executor packs such groups several to a block,
/// and a warp reduces with shuffles alone: a norm's row of 768 no longer
/// holds 256 threads through four block barriers), else 256.
constexpr int64_t kWarpRowLength = 1024;
int32_t groupThreadsFor(int64_t work) {
  return work > kWarpRowLength ? 256 : 32;
}

/// A product over attention's heads: `heads` items in each of `runs` runs;
/// each operand's (L, R, C) step between items and between runs.
struct HeadSteps {
  int64_t runs = 1, heads = 1;
  int64_t itemL = 0, itemR = 0, itemC = 0;
  int64_t runL = 0, runR = 0, runC = 0;
};

template <typename T> class Builder {
public:
  Builder(const Entry &entry, size_t index, const EntryMemory &memory,
          std::vector<StepOf<T>> &out)
      : entry(entry), launch(entry.launches[index]), index(index),
        memory(memory), out(out) {
    for (uint32_t t : launch.outputs)
      guarded |=
          entry.buffers[entry.tensors[t].buffer].region == Region::Persistent;
  }

  Status build(KernelId id);

  // What a self-built functor's build(builder) reads (DeviceKernels.h's
  // ZRT_SELF_BUILT_KERNELS), as the cases below do.
  const TensorType &inType(size_t i) const {
    return entry.tensors[launch.inputs[i]].type;
  }
  const TensorType &outType(size_t i) const {
    return entry.tensors[launch.outputs[i]].type;
  }
  void *address(uint32_t tensor) const {
    const Tensor &t = entry.tensors[tensor];
    // A view's offset in elements as this executor stores them (f32 as T).
    uint64_t element = t.type.dtype == DType::F32
                           ? sizeof(T)
                           : static_cast<uint64_t>(dtypeBytes(t.type.dtype));
    return static_cast<uint8_t *>(memory.buffers[t.buffer]) +
           t.offset * element;
  }
  template <typename U = T> const U *in(size_t i) const {
    return static_cast<const U *>(address(launch.inputs[i]));
  }
  template <typename U = T> U *result(size_t i) const {
    return static_cast<U *>(address(launch.outputs[i]));
  }
  bool wideIndex(size_t input) const {
    return inType(input).dtype == DType::I64;
  }
  bool resultIsBf16(size_t i) const { return outType(i).dtype == DType::BF16; }
  bool inIsBf16(size_t i) const { return inType(i).dtype == DType::BF16; }

  /// Where the lines of the last dimension of input `i` (output `i` when
  /// `output`) start, over the line index: the view's or broadcast's steps
  /// of the dimensions before the last, simplified (rank 0 when it is
  /// row-major: line * length); `along` is the step within a line.
  StridedShape lineStarts(bool output, size_t i, int64_t &along) const {
    const Tensor &t =
        entry.tensors[output ? launch.outputs[i] : launch.inputs[i]];
    StridedShape starts;
    along = 1;
    if (!t.isStrided())
      return starts;
    size_t rank = t.type.shape.size();
    along = rank > 0 ? t.strides[rank - 1] : 1;
    for (size_t d = 0; d + 1 < rank; ++d) {
      starts.size[starts.rank] = t.type.shape[d];
      starts.stride[starts.rank++] = t.strides[d];
    }
    simplify(starts); // rank 0 only when there is one line
    return starts;
  }

  /// A fused program's steps (zt.fused, validated at load), with the
  /// executor's ElementOps and numbers in T, and its float operands;
  /// returns how many steps.
  int programSteps(ProgramStep<T> *steps, int32_t &operands) const {
    FusedProgram decoded;
    Status status = fusedProgram(launch.params, launch.inputs.size(),
                                 launch.outputs.size(), decoded);
    (void)status; // checkLaunch accepted the launch
    operands = static_cast<int32_t>(decoded.operands);
    for (size_t s = 0; s < decoded.steps.size(); ++s) {
      const FusedStep &d = decoded.steps[s];
      ProgramStep<T> &step = steps[s];
      step.op = d.kernel == KernelId::Scale     ? ElementOp::Scale
                : d.kernel == KernelId::Dropout ? ElementOp::Dropout
                                                : static_cast<ElementOp>(d.kernel);
      step.a = static_cast<int8_t>(d.args[0]);
      step.b = static_cast<int8_t>(d.operands > 1 ? d.args[1] : d.args[0]);
      step.p0 = static_cast<T>(d.numbers[0]);
      step.p1 = static_cast<T>(d.numbers[1]);
      if (d.kernel == KernelId::Dropout) { // as the Dropout kernel's build
        step.p0 = static_cast<T>(1.0 - d.numbers[0]);
        step.threshold = dropoutThreshold(d.numbers[0]);
        step.seed = rankDropoutSeed(
            d.seed, memory.communicator ? memory.communicator->rank() : 0);
      }
    }
    return static_cast<int>(decoded.steps.size());
  }

  /// The reads of operands 0 .. n-1 that are broadcasts through strides:
  /// over the result's dimensions, size-1 ones dropped and neighbours
  /// merged where every strided operand's steps allow (all reads keep the
  /// same dimensions, which the host's row loops need).
  void stridedReads(int n, bool *strided, StridedShape *reads) const {
    const TensorType &type = outType(0);
    bool any = false;
    for (int k = 0; k < n; ++k) {
      strided[k] = entry.tensors[launch.inputs[k]].isStrided();
      any = any || strided[k];
    }
    if (!any)
      return;
    for (size_t d = 0; d < type.shape.size(); ++d) {
      if (type.shape[d] == 1)
        continue;
      bool merge = reads[0].rank > 0;
      for (int k = 0; k < n; ++k)
        if (strided[k]) {
          const StridedShape &r = reads[k];
          merge = merge &&
                  r.stride[r.rank - 1] ==
                      entry.tensors[launch.inputs[k]].strides[d] *
                          type.shape[d];
        }
      for (int k = 0; k < n; ++k) {
        StridedShape &r = reads[k];
        int64_t step =
            strided[k] ? entry.tensors[launch.inputs[k]].strides[d] : 0;
        if (merge) {
          r.size[r.rank - 1] *= type.shape[d];
          r.stride[r.rank - 1] = step;
        } else {
          r.size[r.rank] = type.shape[d];
          r.stride[r.rank++] = step;
        }
      }
    }
  }

  /// Adds a functor: the error guard when the launch writes persistent
  /// state, and the group width for group kernels from their rows' length.
  template <typename F> void push(F f, int64_t rowLength = 0) {
    if (guarded)
      f.abort = &memory.error->flag;
    f.groupThreads = groupThreadsFor(rowLength);
    out.push_back(f);
  }

  Status scratch(uint64_t bytes, T *&at) const {
    if (bytes > 0 && (!memory.workspace || memory.workspaceBytes < bytes))
      return makeError(StatusCode::InvalidPlan, "entry '", entry.name,
                       "' launch ", index, " (", launch.name(), ") needs ",
                       bytes, " bytes of device workspace and the plan has ",
                       memory.workspaceBytes,
                       ": compile it again with this zcc");
    at = reinterpret_cast<T *>(memory.workspace);
    return Status::ok();
  }

  /// Scratch from the workspace's pinned end, which no product uses.
  Status pinnedScratch(uint64_t bytes, T *&at) const {
    if (bytes > memory.pinnedBytes || !memory.workspace)
      return makeError(StatusCode::InvalidPlan, "entry '", entry.name,
                       "' launch ", index, " (", launch.name(), ") needs ",
                       bytes,
                       " bytes of workspace beside cuBLAS's and the "
                       "plan has ",
                       memory.pinnedBytes, ": compile it again with this zcc");
    at = reinterpret_cast<T *>(memory.workspace + memory.workspaceBytes -
                               memory.pinnedBytes);
    return Status::ok();
  }

  /// Row-major C[m, n] = op(L)[m, k] op(R)[k, n] + beta C for `batch` items:
  /// L, R and C stored with rows of ldl, ldr and ldc elements, items
  /// strideL, strideR and strideC apart. As BLAS sees it (column-major),
  /// C^T = op(R)^T op(L)^T.
  /// G: GemmOf<T>, or GemmBf16 for bf16 operands (P) into C of type Q.
  template <typename G = GemmOf<T>, typename P, typename Q>
  G product(const P *l, int64_t ldl, bool transL, const P *r, int64_t ldr,
            bool transR, Q *c, int64_t ldc, int64_t m, int64_t n, int64_t k,
            int64_t batch, int64_t strideL, int64_t strideR, int64_t strideC,
            T beta) const {
    G g;
    g.transA = transR;
    g.transB = transL;
    g.m = static_cast<int32_t>(n);
    g.n = static_cast<int32_t>(m);
    g.k = static_cast<int32_t>(k);
    g.a = r;
    g.lda = static_cast<int32_t>(ldr);
    g.b = l;
    g.ldb = static_cast<int32_t>(ldl);
    g.c = c;
    g.ldc = static_cast<int32_t>(ldc);
    g.batch = static_cast<int32_t>(batch);
    g.strideA = strideR;
    g.strideB = strideL;
    g.strideC = strideC;
    g.beta = static_cast<decltype(g.beta)>(beta);
    g.workspace = memory.workspace;
    g.workspaceBytes = memory.workspaceBytes - memory.pinnedBytes;
    return g;
  }

  /// Query rows [first, first + rows) of every head: the keys they see.
  AttentionBlock attentionBlock(const AttentionShape &a, int64_t first,
                                int64_t rows) const {
    AttentionBlock block;
    block.rows = rows;
    block.first = first;
    block.queries = a.queries;
    block.keys = a.keys;
    block.causal = launch.params.causal;
    block.width = block.causal ? std::min(a.keys, first + rows) : a.keys;
    // The mask follows attention's 3 operands or the gradient's 6; the
    // step (with dropout) is the last input.
    size_t maskInput = launch.kernel == KernelId::Attention ? 3 : 6;
    bool dropout = launch.params.dropout.has_value();
    if (dropout) {
      double rate = *launch.params.dropout;
      block.step = in<int64_t>(launch.inputs.size() - 1);
      block.seed =
          rankDropoutSeed(static_cast<uint64_t>(*launch.params.dropoutSeed),
                          memory.communicator ? memory.communicator->rank()
                                              : 0);
      block.threshold = dropoutThreshold(rate);
      block.keep = 1.0 - rate;
    }
    if (launch.inputs.size() > maskInput + (dropout ? 1 : 0)) {
      block.mask = in<uint8_t>(maskInput);
      const std::vector<int64_t> &mask = inType(maskInput).shape;
      const std::vector<int64_t> &query = inType(0).shape;
      int rank = static_cast<int>(query.size());
      int64_t stride = 1;
      block.maskRead.rank = rank;
      for (int d = rank - 1; d >= 0; --d) {
        block.maskRead.size[d] = d == rank - 1 ? a.keys : query[d];
        block.maskRead.stride[d] = mask[d] == 1 ? 0 : stride;
        stride *= mask[d];
      }
      simplify(block.maskRead);
    }
    return block;
  }

  /// A product of attention's operands stored as S (T: GemmOf<T>; bf16:
  /// GemmBf16, summed in f32) into C of type Q, over `heads` items in each
  /// of `runs` runs (HeadSteps: each operand's step between items and
  /// between runs).
  template <typename S, typename Q>
  StepOf<T> attentionProduct(const S *l, int64_t ldl, bool transL, const S *r,
                             int64_t ldr, bool transR, Q *c, int64_t ldc,
                             int64_t m, int64_t n, int64_t k, HeadSteps steps,
                             T beta) const {
    auto over = [&](auto g) {
      g.outer = static_cast<int32_t>(steps.runs);
      g.outerA = steps.runR;
      g.outerB = steps.runL;
      g.outerC = steps.runC;
      // Runs that continue the items' steps are one batch (row-major
      // operands: one call on cuBLAS).
      if (g.outer > 1 && g.outerA == g.batch * g.strideA &&
          g.outerB == g.batch * g.strideB && g.outerC == g.batch * g.strideC) {
        g.batch *= g.outer;
        g.outer = 1;
      }
      return g;
    };
    if constexpr (std::is_same_v<S, BFloat16>) {
      GemmBf16 g = product<GemmBf16>(l, ldl, transL, r, ldr, transR, c, ldc, m,
                                     n, k, steps.heads, steps.itemL,
                                     steps.itemR, steps.itemC, beta);
      g.cBf16 = std::is_same_v<Q, BFloat16>;
      return over(g);
    } else {
      return over(product(l, ldl, transL, r, ldr, transR, c, ldc, m, n, k,
                          steps.heads, steps.itemL, steps.itemR, steps.itemC,
                          beta));
    }
  }

  /// Attention's operand `tensor` (validated at load: headLayout).
  HeadLayout layoutOf(uint32_t tensor) const {
    HeadLayout layout;
    (void)headLayout(entry.tensors[tensor], layout);
    return layout;
  }
  /// Its rows, `heads` per run, `rows` per head.
  HeadRows rowsOf(uint32_t tensor, int64_t heads, int64_t rows) const {
    HeadLayout l = layoutOf(tensor);
    HeadRows r;
    r.outer = l.outer;
    r.head = l.head;
    r.row = l.row;
    r.heads = heads;
    r.rows = rows;
    return r;
  }

  /// The query heads of one run (the last batch dimension; 1 below rank 3).
  int64_t queryHeads() const {
    const std::vector<int64_t> &q = inType(0).shape;
    return q.size() >= 3 ? q[q.size() - 3] : 1;
  }

  /// A block's scores, Q[first:first+rows] K[:width]^T, into `scores`
  /// ([heads][rows][width]): the products of the query heads `group` of
  /// each key head (grouped-query attention runs one per group, over the
  /// key heads; plain attention one, over every head).
  template <typename S>
  StepOf<T> attentionScores(const AttentionShape &a,
                            const AttentionBlock &block, T *scores,
                            int64_t group) const {
    int64_t d = a.head, g = a.groups, blockSize = block.rows * block.width;
    int64_t h = queryHeads(), keyHeads = h / g;
    HeadLayout q = layoutOf(launch.inputs[0]), k = layoutOf(launch.inputs[1]);
    HeadSteps steps{a.batch / h, keyHeads, g * q.head, k.head,
                    g * blockSize, q.outer, k.outer, h * blockSize};
    return attentionProduct(
        in<S>(0) + group * q.head + block.first * q.row, q.row, false,
        in<S>(1), k.row, true, scores + group * blockSize, block.width,
        block.rows, block.width, d, steps, T(0));
  }

  /// conv2d, conv2d_input_grad and conv2d_weight_grad: per image, its
  /// columns in the pinned scratch (im2col), then one product batched over
  /// the groups: y = W cols, dcols = W^T dy (then col2im), dW += dy cols^T.
  Status convolution() {
    const std::vector<int64_t> &w = inType(1).shape;
    ConvGeometry g = convGeometry(*this, w[2], w[3]);
    T *cols = nullptr;
    ZRT_RETURN_IF_ERROR(
        pinnedScratch(kernelScratchBytes(entry, launch), cols));
    int64_t images = inType(0).shape[0], groups = launch.params.groups;
    int64_t outs = w[0] / groups, k = w[1] * g.kh * g.kw, n = g.columns();
    int64_t image = g.channels * g.height * g.width, outSize = w[0] * n;
    KernelId id = launch.kernel;
    const T *x = in(0), *weight = in(1);
    if (id == KernelId::Conv2dWeightGrad)
      out.push_back(Memset{result(0),
                           uint64_t(outType(0).numElements()) * sizeof(T), 0});
    for (int64_t i = 0; i < images; ++i) {
      if (id != KernelId::Conv2dInputGrad) {
        Im2col<T> f;
        f.x = x + i * image;
        f.cols = cols;
        f.g = g;
        f.count = k * groups * g.outHeight; // a row of columns each
        push(f);
      }
      if (id == KernelId::Conv2d) // y[i] = W cols, per group
        out.push_back(product(weight, k, false, cols, n, false,
                              result(0) + i * outSize, n, outs, n, k, groups,
                              outs * k, k * n, outs * n, T(0)));
      else if (id == KernelId::Conv2dWeightGrad) // dW += dy[i] cols^T
        out.push_back(product(in(2) + i * outSize, n, false, cols, n, true,
                              result(0), k, outs, k, n, groups, outs * n,
                              k * n, outs * k, T(1)));
      else { // dcols = W^T dy[i], then gathered into dx[i]
        out.push_back(product(weight, k, true, in(2) + i * outSize, n, false,
                              cols, n, k, n, outs, groups, outs * k,
                              outs * n, k * n, T(0)));
        Col2im<T> f;
        f.cols = cols;
        f.dx = result(0) + i * image;
        f.g = g;
        f.count = g.channels * g.height; // an input row each
        push(f);
      }
    }
    return Status::ok();
  }

  /// attention and attention_grad: operands stored as T, or as bf16 (the
  /// scores and softmax computed in T, the products on bf16 operands).
  Status attentionBy(bool isGrad) {
    Status status;
    byStorage(inType(0).dtype, [&](auto s) {
      using S = typename decltype(s)::type;
      status = isGrad ? attentionGrad<S>() : attention<S>();
    });
    return status;
  }

  template <typename S> Status attention() {
    AttentionShape a = attentionShape(entry, launch);
    AttentionScratch room = attentionScratch(entry, launch);
    T *scores = nullptr;
    ZRT_RETURN_IF_ERROR(
        pinnedScratch(kernelScratchBytes(entry, launch), scores));
    // With bf16 storage the rounded probabilities are the product's operand.
    auto *rounded = reinterpret_cast<BFloat16 *>(scores + room.rounded);
    const S *p = nullptr;
    if constexpr (std::is_same_v<S, BFloat16>)
      p = rounded;
    else
      p = scores;
    int64_t dv = a.valueHead;
    for (int64_t first = 0; a.batch > 0 && first < a.queries;
         first += a.blockRows) {
      AttentionBlock block =
          attentionBlock(a, first, std::min(a.blockRows, a.queries - first));
      for (int64_t group = 0; group < a.groups; ++group)
        out.push_back(attentionScores<S>(a, block, scores, group));
      AttentionRows<T> rows;
      rows.scores = scores;
      rows.rounded = std::is_same_v<S, BFloat16> ? rounded : nullptr;
      rows.logsumexp = result(1);
      rows.block = block;
      rows.scale = static_cast<T>(launch.params.scale);
      rows.count = a.batch * block.rows;
      push(rows, block.width);
      // y[first:first+rows] = P V[:width]
      int64_t g = a.groups, blockSize = block.rows * block.width;
      int64_t h = queryHeads();
      HeadLayout v = layoutOf(launch.inputs[2]), y = layoutOf(launch.outputs[0]);
      HeadSteps steps{a.batch / h,   h / g,   g * blockSize, v.head,
                      g * y.head,    h * blockSize, v.outer, y.outer};
      for (int64_t group = 0; group < g; ++group)
        out.push_back(attentionProduct(
            p + group * blockSize, block.width, false, in<S>(2), v.row, false,
            result<S>(0) + group * y.head + first * y.row, y.row, block.rows,
            dv, block.width, steps, T(0)));
    }
    return Status::ok();
  }

  template <typename S> Status attentionGrad() {
    constexpr bool bf16 = std::is_same_v<S, BFloat16>;
    AttentionShape a = attentionShape(entry, launch);
    AttentionScratch room = attentionScratch(entry, launch);
    T *probs = nullptr;
    ZRT_RETURN_IF_ERROR(
        pinnedScratch(kernelScratchBytes(entry, launch), probs));
    T *grads = probs + room.grads, *delta = probs + room.delta;
    // With bf16 storage the products read the rounded probabilities and
    // gradients, and the key and value gradients are summed over the
    // blocks in T (then rounded once).
    auto *rounded = reinterpret_cast<BFloat16 *>(probs + room.rounded);
    int64_t blockSize = a.batch * a.blockRows * a.keys;
    const S *q = in<S>(0), *dy = in<S>(5), *pIn = nullptr, *dsIn = nullptr;
    S *dq = result<S>(0);
    int64_t d = a.head, dv = a.valueHead, g = a.groups;
    int64_t h = queryHeads(), runs = a.batch / h, keyHeads = h / g;
    HeadLayout lq = layoutOf(launch.inputs[0]), lk = layoutOf(launch.inputs[1]),
               lv = layoutOf(launch.inputs[2]), ldy = layoutOf(launch.inputs[5]),
               ldq = layoutOf(launch.outputs[0]);
    // dk and dv: the results themselves (their layouts), or the sums in T
    // (row-major).
    using Sum = std::conditional_t<bf16, T, S>;
    Sum *dk = nullptr, *dvalues = nullptr;
    HeadLayout ldk, ldv;
    if constexpr (bf16) {
      pIn = rounded;
      dsIn = rounded + blockSize;
      dk = probs + room.keySums;
      dvalues = probs + room.valueSums;
      ldk = {keyHeads * a.keys * d, a.keys * d, d};
      ldv = {keyHeads * a.keys * dv, a.keys * dv, dv};
    } else {
      pIn = probs;
      dsIn = grads;
      dk = result(1);
      dvalues = result(2);
      ldk = layoutOf(launch.outputs[1]);
      ldv = layoutOf(launch.outputs[2]);
    }
    // dk and dv are sums over the blocks: zeros first (through a view's
    // steps when a result is one).
    for (int o : {1, 2}) {
      Sum *sums = o == 1 ? dk : dvalues;
      uint64_t count = outType(o).numElements();
      if (bf16 || !entry.tensors[launch.outputs[o]].isStrided()) {
        out.push_back(Memset{sums, count * sizeof(Sum), 0});
        continue;
      }
      HeadStore<T> zero;
      zero.y = reinterpret_cast<T *>(sums);
      zero.width = o == 1 ? d : dv;
      zero.to = rowsOf(launch.outputs[o], keyHeads, a.keys);
      zero.count = static_cast<int64_t>(count) / std::max<int64_t>(zero.width, 1);
      push(zero, zero.width);
    }
    if (a.batch > 0) {
      AttentionGradDelta<T, S> rowsum;
      rowsum.y = in<S>(3);
      rowsum.dy = dy;
      rowsum.yRows = rowsOf(launch.inputs[3], h, a.queries);
      rowsum.dyRows = rowsOf(launch.inputs[5], h, a.queries);
      rowsum.delta = delta;
      rowsum.width = dv;
      rowsum.count = a.batch * a.queries;
      push(rowsum, dv);
    }
    for (int64_t first = 0; a.batch > 0 && first < a.queries;
         first += a.blockRows) {
      AttentionBlock block =
          attentionBlock(a, first, std::min(a.blockRows, a.queries - first));
      int64_t rows = block.rows, width = block.width;
      int64_t blockStride = rows * width;
      for (int64_t group = 0; group < g; ++group)
        out.push_back(attentionScores<S>(a, block, probs, group));
      // Per group of query heads (one group unless grouped-query): their
      // probabilities and gradients at `p`, [runs][key heads][g][rows]
      // [width]; the block's rows of a query head `group` of each key head.
      int64_t itemP = g * blockStride, runP = h * blockStride;
      for (int64_t group = 0; group < g; ++group) {
        int64_t p = group * blockStride;
        // dp = dy[first:first+rows] V[:width]^T
        out.push_back(attentionProduct(
            dy + group * ldy.head + first * ldy.row, ldy.row, false, in<S>(2),
            lv.row, true, grads + p, width, rows, width, dv,
            HeadSteps{runs, keyHeads, g * ldy.head, lv.head, itemP, ldy.outer,
                      lv.outer, runP},
            T(0)));
      }
      AttentionGradScores<T> scores;
      scores.scores = probs;
      scores.grad = grads;
      if (bf16) {
        scores.roundedScores = rounded;
        scores.roundedGrad = rounded + blockSize;
      }
      scores.logsumexp = in(4);
      scores.delta = delta;
      scores.block = block;
      scores.scale = static_cast<T>(launch.params.scale);
      scores.count = a.batch * blockStride;
      push(scores);
      for (int64_t group = 0; group < g; ++group) {
        int64_t p = group * blockStride;
        // dq[first:first+rows] = ds K[:width]
        out.push_back(attentionProduct(
            dsIn + p, width, false, in<S>(1), lk.row, false,
            dq + group * ldq.head + first * ldq.row, ldq.row, rows, d, width,
            HeadSteps{runs, keyHeads, itemP, lk.head, g * ldq.head, runP,
                      lk.outer, ldq.outer},
            T(0)));
        // sums[:width] += block^T x[first:first+rows] (summed over the
        // group's query heads too): dk from ds and q, dv from p and dy.
        auto addInto = [&](const S *block, const S *x, const HeadLayout &lx,
                           Sum *sums, const HeadLayout &ls, int64_t cols) {
          out.push_back(attentionProduct(
              block + p, width, true, x + group * lx.head + first * lx.row,
              lx.row, false, sums, ls.row, width, cols, rows,
              HeadSteps{runs, keyHeads, itemP, g * lx.head, ls.head, runP,
                        lx.outer, ls.outer},
              T(1)));
        };
        addInto(dsIn, q, lq, dk, ldk, d);
        addInto(pIn, dy, ldy, dvalues, ldv, dv);
      }
    }
    if constexpr (bf16) // the summed gradients, rounded once
      for (int o : {1, 2}) {
        HeadStore<T, BFloat16> f;
        f.sums = o == 1 ? dk : dvalues;
        f.y = result<BFloat16>(o);
        f.width = o == 1 ? d : dv;
        f.to = rowsOf(launch.outputs[o], keyHeads, a.keys);
        f.count = outType(o).numElements() / std::max<int64_t>(f.width, 1);
        push(f, f.width);
      }
    return Status::ok();
  }

  /// An element kernel's operands 0 and 1 read through strides.
  template <typename F> void broadcastReads(F &f) const {
    bool strided[2] = {};
    StridedShape reads[2];
    stridedReads(std::min<int>(2, static_cast<int>(launch.inputs.size())),
                 strided, reads);
    f.aStrided = strided[0];
    f.bStrided = strided[1];
    f.aRead = reads[0];
    f.bRead = reads[1];
  }

  template <typename S> struct Storage { using type = S; };
  /// Kernels whose float operands are stored as T, or as bf16 (computed in
  /// T): build(Storage<S>) for the launch's storage.
  template <typename Fn> void byStorage(DType dtype, Fn &&build) {
    if (dtype == DType::BF16)
      build(Storage<BFloat16>());
    else
      build(Storage<T>());
  }

  void elementwise(ElementOp op) {
    byStorage(inType(0).dtype,
              [&](auto s) { elementwiseOf<typename decltype(s)::type>(op); });
  }
  /// Elements stored as S, computed in T.
  template <typename S> void elementwiseOf(ElementOp op) {
    Elementwise<T, S> f;
    f.op = op;
    f.a = in<S>(0);
    f.b = launch.inputs.size() > 1 ? in<S>(1) : nullptr;
    f.y = result<S>(0);
    f.count = outType(0).numElements();
    broadcastReads(f);
    for (int k = 0; k < kMaxElementParams; ++k)
      f.param[k] = static_cast<T>(launch.params.elementParams[k]);
    if (op == ElementOp::Scale)
      f.factor = static_cast<T>(launch.params.factor);
    if (op == ElementOp::MseGrad) {
      f.lossGrad = in(2);
      f.elements = inType(0).numElements();
    }
    push(f);
  }

  /// An element kernel with bool operands or results (ElementMixed).
  void mixed(ElementOp op) {
    ElementMixed<T> f;
    f.op = op;
    f.a = in<void>(0);
    f.b = launch.inputs.size() > 1 ? in<void>(1) : nullptr;
    f.c = launch.inputs.size() > 2 ? in<void>(2) : nullptr;
    f.y = result<void>(0);
    f.count = outType(0).numElements();
    // Compared operands are a's type; mask's and select's values b's.
    f.storage = static_cast<MixedStorage>(
        launch.inputs.size() > 1 ? inType(1).dtype : inType(0).dtype);
    broadcastReads(f);
    push(f);
  }

  void constant() {
    const TensorType &type = outType(0);
    double value = launch.params.value;
    Fill f;
    f.y = result<void>(0);
    f.count = type.numElements();
    f.bytes = elementBytes<T>(type.dtype);
    // checkLaunch bounds the value to the element type's range.
    if (type.dtype == DType::F32) {
      T v = static_cast<T>(value);
      if constexpr (sizeof(T) == 8) {
        std::memcpy(&f.bits, &v, 8);
      } else {
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        f.bits = bits;
      }
    } else if (type.dtype == DType::BF16) {
      f.bits = floatToBf16(static_cast<float>(value)).bits;
    } else if (type.dtype == DType::I32) {
      f.bits = static_cast<uint32_t>(static_cast<int32_t>(value));
    } else if (type.dtype == DType::Bool) {
      f.bits = value != 0.0;
    } else {
      f.bits = static_cast<uint64_t>(static_cast<int64_t>(value));
    }
    push(f);
  }

  /// y = x at `offset` + `strides` of each output position.
  void stridedCopy(const int64_t *strides, int64_t offset) {
    const TensorType &type = outType(0);
    StridedCopy f;
    f.x = in<void>(0);
    f.y = result<void>(0);
    f.offset = offset;
    f.bytes = elementBytes<T>(type.dtype);
    f.count = type.numElements();
    f.source.rank = static_cast<int32_t>(type.rank());
    for (int d = 0; d < f.source.rank; ++d) {
      f.source.size[d] = type.shape[d];
      f.source.stride[d] = strides[d];
    }
    simplify(f.source);
    push(f);
  }

  void broadcast() {
    const TensorType &operand = inType(0);
    const std::vector<int64_t> &dims =
        launch.params.broadcastDimensions;
    int64_t operandStrides[kMaxRank], strides[kMaxRank] = {};
    rowMajorStrides(operand.shape, operandStrides);
    // A repeated (size 1) or new dimension reads with stride 0.
    for (size_t i = 0; i < dims.size(); ++i)
      if (operand.shape[i] != 1)
        strides[dims[i]] = operandStrides[i];
    stridedCopy(strides, 0);
  }

  void transpose() {
    const std::vector<int64_t> &perm = launch.params.permutation;
    int64_t operandStrides[kMaxRank], strides[kMaxRank] = {};
    rowMajorStrides(inType(0).shape, operandStrides);
    for (size_t i = 0; i < perm.size(); ++i)
      strides[i] = operandStrides[perm[i]];
    stridedCopy(strides, 0);
  }

  void slice() {
    const TensorType &whole = inType(0);
    const std::vector<int64_t> &starts = launch.params.startIndices;
    const std::vector<int64_t> &steps = launch.params.strides;
    int64_t wholeStrides[kMaxRank], strides[kMaxRank] = {};
    rowMajorStrides(whole.shape, wholeStrides);
    int64_t offset = 0;
    for (size_t d = 0; d < whole.shape.size(); ++d) {
      // A step past the size takes one element: clamped, as on the CPU, so
      // the stride product cannot overflow.
      int64_t step = std::min(steps[d], std::max<int64_t>(whole.shape[d], 1));
      strides[d] = wholeStrides[d] * step;
      offset += starts[d] * wholeStrides[d];
    }
    stridedCopy(strides, offset);
  }

  void copy() { copyElements(in<void>(0), result<void>(0), inType(0)); }

  /// `type`'s elements from `from` to `to`, in the executor's element size.
  void copyElements(const void *from, void *to, const TensorType &type) {
    copyElements(from, to, type.numElements(), elementBytes<T>(type.dtype));
  }

  /// `count` elements of `bytes` each.
  void copyElements(const void *from, void *to, int64_t count, uint64_t bytes) {
    StridedCopy f;
    f.x = from;
    f.y = to;
    f.bytes = bytes;
    f.count = count;
    f.source.rank = 1;
    f.source.size[0] = std::max<int64_t>(f.count, 1);
    f.source.stride[0] = 1;
    push(f);
  }

  /// Inputs not already in their outputs' bytes are copied in; then each
  /// run of outputs that lie end to end (a bucket's parts, as the planner
  /// placed them) is reduced with one collective call.
  void allReduce() {
    pack();
    size_t n = launch.inputs.size();
    // Bytes per plan byte: 2 when f32 elements are held as doubles.
    uint64_t scale = sizeof(T) / 4;
    auto *begin = static_cast<uint8_t *>(address(launch.outputs[0]));
    uint8_t *end = begin;
    auto flush = [&] {
      Collective c;
      c.call.data = begin;
      c.call.count = static_cast<uint64_t>(end - begin) / sizeof(T);
      c.call.type = collectiveType();
      c.call.mean = launch.params.mean;
      c.communicator = memory.communicator;
      if (c.call.count > 0)
        out.push_back(c);
    };
    for (size_t i = 0; i < n; ++i) {
      uint32_t t = launch.outputs[i];
      auto *at = static_cast<uint8_t *>(address(t));
      if (at != end) {
        flush();
        begin = at;
      }
      // The whole buffer: a part's padding up to the next part is its own.
      end = at + entry.buffers[entry.tensors[t].buffer].size * scale;
    }
    flush();
  }

  /// pack (and all_reduce's first part): inputs not already in their
  /// outputs' bytes are copied in.
  void pack() {
    for (size_t i = 0; i < launch.inputs.size(); ++i)
      if (address(launch.inputs[i]) != address(launch.outputs[i]))
        copyElements(in<void>(i), result<void>(i), inType(i));
  }

  /// reduce_scatter: its inputs (one tensor, or a zt.pack's parts as the
  /// planner places them) must lie end to end, one flat whole.
  Status reduceScatter() {
    const auto *end = static_cast<const uint8_t *>(in<void>(0));
    for (size_t i = 0; i < launch.inputs.size(); ++i) {
      if (in<void>(i) != end)
        return makeError(StatusCode::InvalidPlan, "entry '", entry.name,
                         "' launch ", index, " (reduce_scatter): input #", i,
                         " does not follow input #", i - 1,
                         " in memory; the inputs must lie end to end (a "
                         "zt.pack's parts)");
      end += inType(i).numElements() * elementBytes<T>(inType(i).dtype);
    }
    shardCollective(CollectiveCall::Kind::ReduceScatter);
    return Status::ok();
  }

  /// reduce_scatter and all_gather: one collective between the whole and
  /// this rank's shard.
  void shardCollective(CollectiveCall::Kind kind) {
    Collective c;
    c.call.kind = kind;
    c.call.source = in<void>(0);
    c.call.data = result<void>(0);
    const TensorType &shard =
        kind == CollectiveCall::Kind::ReduceScatter ? outType(0) : inType(0);
    c.call.count = static_cast<uint64_t>(shard.numElements());
    c.call.type = collectiveType();
    c.call.mean = launch.params.mean;
    c.communicator = memory.communicator;
    out.push_back(c);
  }

  static CollectiveType collectiveType() {
    return sizeof(T) == 8 ? CollectiveType::F64 : CollectiveType::F32;
  }

  /// shard: this rank's part of the inputs flattened end to end (the rank
  /// is known at load): a copy from each input it overlaps, then zeros for
  /// the padding past the last.
  void shard() {
    int rank = memory.communicator ? memory.communicator->rank() : 0;
    const TensorType &type = outType(0);
    uint64_t bytes = elementBytes<T>(type.dtype);
    int64_t begin = rank * type.numElements(), end = begin + type.numElements();
    int64_t at = 0; // the flat index of input k's first element
    auto *to = static_cast<uint8_t *>(result<void>(0));
    for (size_t k = 0; k < launch.inputs.size(); ++k) {
      int64_t count = inType(k).numElements();
      int64_t from = std::max(begin, at), until = std::min(end, at + count);
      if (from < until)
        copyElements(static_cast<const uint8_t *>(in<void>(k)) +
                         (from - at) * bytes,
                     to + (from - begin) * bytes, until - from, bytes);
      at += count;
    }
    if (end > std::max(begin, at)) {
      int64_t from = std::max(begin, at);
      out.push_back(Memset{to + (from - begin) * bytes,
                           static_cast<uint64_t>(end - from) * bytes, 0});
    }
  }

  void concat() {
    const TensorType &type = outType(0);
    size_t dim = static_cast<size_t>(launch.params.dimension);
    int64_t outer = shapeProduct(type.shape, 0, dim);
    int64_t inner = shapeProduct(type.shape, dim + 1, type.shape.size());
    int64_t resultBlock = type.shape[dim] * inner;
    int64_t offset = 0;
    for (size_t k = 0; k < launch.inputs.size(); ++k) {
      ConcatPart f;
      f.x = in<void>(k);
      f.y = result<void>(0);
      f.block = inType(k).shape[dim] * inner;
      f.resultBlock = resultBlock;
      f.offset = offset;
      f.bytes = elementBytes<T>(type.dtype);
      f.count = outer * f.block;
      offset += f.block;
      if (f.count > 0)
        push(f);
    }
  }

  void sliceGrad() {
    byStorage(outType(0).dtype,
              [&](auto s) { sliceGradOf<typename decltype(s)::type>(); });
  }
  template <typename S> void sliceGradOf() {
    const TensorType &grad = inType(0);
    const TensorType &type = outType(0);
    SliceGrad<T, S> f;
    f.grad = in<S>(0);
    f.y = result<S>(0);
    f.count = type.numElements();
    f.rank = static_cast<int32_t>(type.rank());
    const std::vector<int64_t> &starts = launch.params.startIndices;
    const std::vector<int64_t> &steps = launch.params.strides;
    int64_t gradStrides[kMaxRank];
    rowMajorStrides(grad.shape, gradStrides);
    for (int d = 0; d < f.rank; ++d) {
      f.shape[d] = type.shape[d];
      f.start[d] = starts[d];
      f.step[d] = steps[d];
      f.gradShape[d] = grad.shape[d];
      f.gradStride[d] = gradStrides[d];
    }
    push(f);
  }

  /// The kept and reduced dimensions of a reduction over `dims`.
  void reductionShapes(const TensorType &operand, StridedShape &kept,
                       StridedShape &reduced, int64_t &reducedCount) const {
    const std::vector<int64_t> &dims = launch.params.dims;
    int64_t strides[kMaxRank];
    rowMajorStrides(operand.shape, strides);
    reducedCount = 1;
    for (int d = 0; d < static_cast<int>(operand.rank()); ++d) {
      bool isReduced = std::find(dims.begin(), dims.end(), d) != dims.end();
      StridedShape &shape = isReduced ? reduced : kept;
      shape.size[shape.rank] = operand.shape[d];
      shape.stride[shape.rank++] = strides[d];
      if (isReduced)
        reducedCount *= operand.shape[d];
    }
    simplify(kept);
    simplify(reduced);
  }

  void reduce(ReduceKind kind) {
    byStorage(outType(0).dtype,
              [&](auto s) { reduceOf<typename decltype(s)::type>(kind); });
  }
  template <typename S> void reduceOf(ReduceKind kind) {
    ColumnSumShape shape;
    if (memory.forGpu && columnSumShape(entry, launch, shape)) {
      // The partials take the workspace's pinned end; a plan written before
      // it had room keeps a group per column.
      T *partials = nullptr;
      uint64_t bytes = columnSumPartialBytes(entry, launch);
      if (bytes == 0 || pinnedScratch(bytes, partials).isOk()) {
        ColumnValues<T, S> values;
        values.x = in<S>(0);
        values.y = result<S>(0);
        values.width = shape.columns;
        values.rows = shape.rows;
        values.mean = kind == ReduceKind::Mean;
        chunkedColumns(values, partials);
        return;
      }
    }
    Reduce<T, S> f;
    f.kind = kind;
    f.x = in<S>(0);
    f.y = result<S>(0);
    f.count = outType(0).numElements();
    reductionShapes(inType(0), f.kept, f.reduced, f.reducedCount);
    push(f, f.reducedCount);
  }

  void maxGrad() {
    MaxGrad<T> f;
    f.x = in(0);
    f.dy = in(1);
    f.dx = result(0);
    f.count = inType(1).numElements();
    reductionShapes(inType(0), f.kept, f.reduced, f.reducedCount);
    push(f, f.reducedCount);
  }

  Status matmul() {
    const TensorType &lhs = inType(0);
    const TensorType &rhs = inType(1);
    bool transposeLhs = launch.params.transposeLhs;
    bool transposeRhs = launch.params.transposeRhs;
    size_t lhsRank = lhs.shape.size(), rhsRank = rhs.shape.size();
    int64_t m = lhs.shape[lhsRank - (transposeLhs ? 1 : 2)];
    int64_t k = lhs.shape[lhsRank - (transposeLhs ? 2 : 1)];
    int64_t n = rhs.shape[rhsRank - (transposeRhs ? 2 : 1)];
    int64_t batch = shapeProduct(lhs.shape, 0, lhsRank - 2);
    if (batch == 0 || m == 0 || n == 0)
      return Status::ok();
    if (k == 0) { // an empty sum
      Fill f;
      f.y = result<void>(0);
      f.count = batch * m * n;
      f.bytes = elementBytes<T>(outType(0).dtype);
      push(f);
      return Status::ok();
    }
    if (batch > INT_MAX)
      return makeError(StatusCode::InvalidPlan, "matmul batch of ", batch,
                       " is more than cuBLAS takes");
    int64_t ldl = lhs.shape[lhsRank - 1], ldr = rhs.shape[rhsRank - 1];
    bool sharedRhs = rhsRank == 2;
    // A weight shared by untransposed items: one [batch * M, K] x [K, N]
    // product, as on the CPU; else one product per item.
    bool one = sharedRhs && !transposeLhs && batch * m <= INT_MAX;
    bool transL = one ? false : transposeLhs;
    int64_t rows = one ? batch * m : m, items = one ? 1 : batch;
    int64_t strideL = one ? 0 : m * k, strideC = one ? 0 : m * n;
    int64_t strideR = one || sharedRhs ? 0 : k * n;
    if (lhs.dtype == DType::BF16) {
      GemmBf16 g =
          product<GemmBf16>(in<BFloat16>(0), ldl, transL, in<BFloat16>(1), ldr,
                            transposeRhs, result<void>(0), n, rows, n, k, items,
                            strideL, strideR, strideC, T(0));
      g.cBf16 = outType(0).dtype == DType::BF16;
      out.push_back(g);
    } else {
      GemmOf<T> g = product(in(0), ldl, transL, in(1), ldr, transposeRhs,
                            result(0), n, rows, n, k, items, strideL, strideR,
                            strideC, T(0));
      g.tf32 = launch.params.tf32;
      out.push_back(g);
    }
    return Status::ok();
  }

  AxisLines axisLines(const TensorType &type, int64_t &lineCount) const {
    int64_t rank = type.rank();
    int64_t axis = launch.params.axis;
    size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    AxisLines lines;
    lines.size = type.shape[a];
    lines.inner = shapeProduct(type.shape, a + 1, type.shape.size());
    lineCount = shapeProduct(type.shape, 0, a) * lines.inner;
    return lines;
  }

  void softmax(bool isLog) {
    Softmax<T> f;
    f.isLog = isLog;
    f.x = in(0);
    f.y = result(0);
    f.lines = axisLines(inType(0), f.count);
    push(f, f.lines.size);
  }

  void softmaxGrad(bool isLog) {
    SoftmaxGrad<T> f;
    f.isLog = isLog;
    f.y = in(0);
    f.dy = in(1);
    f.dx = result(0);
    f.lines = axisLines(inType(0), f.count);
    push(f, f.lines.size);
  }

  /// Rows of the last dimension: width 0 means no rows.
  void lastDimRows(const TensorType &type, int64_t &rows,
                   int64_t &width) const {
    width = type.shape.back();
    rows = width ? type.numElements() / width : 0;
  }

  /// layer_norm and rms_norm: activations stored as T, or bf16 (computed in
  /// T); the affine parameters T.
  template <template <typename, typename> class Kernel> void norm() {
    byStorage(inType(0).dtype, [&](auto s) {
      using S = typename decltype(s)::type;
      Kernel<T, S> f;
      f.x = in<S>(0);
      f.gamma = in(1);
      if constexpr (std::is_same_v<Kernel<T, S>, LayerNorm<T, S>>)
        f.beta = in(2);
      f.y = result<S>(0);
      f.epsilon = static_cast<T>(launch.params.epsilon);
      lastDimRows(inType(0), f.count, f.width);
      push(f, f.width);
    });
  }

  /// layer_norm_grad and rms_norm_grad: the row kernel (dx, and each row's
  /// statistics into the workspace), then the column kernel (the affine
  /// parameters' gradients).
  template <template <typename, typename> class Rows,
            template <typename, typename> class Columns>
  Status normGrad() {
    T *stats = nullptr;
    ZRT_RETURN_IF_ERROR(scratch(kernelScratchBytes(entry, launch), stats));
    byStorage(inType(0).dtype, [&](auto s) {
      using S = typename decltype(s)::type;
      Rows<T, S> rows;
      rows.x = in<S>(0);
      rows.gamma = in(1);
      rows.dy = in<S>(2);
      rows.dx = result<S>(0);
      rows.stats = stats;
      rows.epsilon = static_cast<T>(launch.params.epsilon);
      lastDimRows(inType(0), rows.count, rows.width);
      push(rows, rows.width);
      Columns<T, S> columns;
      columns.x = in<S>(0);
      columns.dy = in<S>(2);
      columns.stats = stats;
      columns.dgamma = result(1);
      if constexpr (Columns<T, S>::kSums == 2)
        columns.dbeta = result(2);
      columns.width = rows.width;
      columns.rows = rows.count;
      columns.count = rows.width;
      ColumnSumShape shape;
      if (memory.forGpu && columnSumShape(entry, launch, shape))
        // The partials follow the statistics: the scratch less the partials
        // is the statistics' floats (kernelScratchBytes).
        chunkedColumns(columns,
                       stats + (kernelScratchBytes(entry, launch) -
                                columnSumPartialBytes(entry, launch)) /
                                   4);
      else
        push(columns, rows.count);
    });
    return Status::ok();
  }

  /// A column sum as the GPU runs it (ChunkedColumns): the chunks pass, and
  /// with more than one chunk the totals pass over `partials`.
  template <typename C> void chunkedColumns(const C &columns, T *partials) {
    ChunkedColumns<C> f;
    f.columns = columns;
    f.chunks = columnSumChunks(columns.rows, columns.width);
    f.chunkRows = (columns.rows + f.chunks - 1) / f.chunks;
    f.partials = partials;
    f.count = f.chunks * columns.width;
    push(f);
    if (f.chunks == 1)
      return;
    f.totals = true;
    f.count = columns.width;
    push(f);
  }

  void embedding() {
    const TensorType &table = inType(0);
    Embedding<T> f;
    f.table = in(0);
    f.indices = in<void>(1);
    f.wideIndices = wideIndex(1);
    f.y = result(0);
    f.vocabulary = table.shape[0];
    f.width = std::max<int64_t>(table.shape[1], 1);
    f.count = inType(1).numElements() * table.shape[1];
    f.error = memory.error;
    f.launch = static_cast<int32_t>(index);
    push(f);
  }

  void embeddingGrad() {
    const TensorType &table = outType(0);
    EmbeddingGrad<T> f;
    f.indices = in<void>(0);
    f.wideIndices = wideIndex(0);
    f.dy = in(1);
    f.table = result(0);
    f.vocabulary = table.shape[0];
    f.width = table.shape[1];
    f.positions = inType(0).numElements();
    int64_t width = std::max<int64_t>(f.width, 1);
    f.slices = std::clamp<int64_t>((kEmbeddingGradThreads + width - 1) / width,
                                   1, std::max<int64_t>(f.vocabulary, 1));
    f.count = f.slices * table.shape[1];
    f.error = memory.error;
    f.launch = static_cast<int32_t>(index);
    push(f);
  }

  /// softmax_cross_entropy (the rows' losses, then their mean),
  /// softmax_cross_entropy_grad (with ignore_index the rows kept first,
  /// then the rows' gradients) and softmax_cross_entropy_fused (both, each
  /// row's work done once), over the workspace's scratch: the losses, then
  /// the rows kept.
  Status crossEntropy(KernelId kind) {
    T *at = nullptr;
    ZRT_RETURN_IF_ERROR(scratch(kernelScratchBytes(entry, launch), at));
    byStorage(inType(0).dtype, [&](auto s) {
      crossEntropyOf<typename decltype(s)::type>(kind, at);
    });
    return Status::ok();
  }
  template <typename S> void crossEntropyOf(KernelId kind, T *at) {
    bool loss = kind != KernelId::SoftmaxCrossEntropyGrad;
    bool grad = kind != KernelId::SoftmaxCrossEntropy;
    LossLabels labels = lossLabels();
    int64_t rows = inType(1).numElements(), classes = inType(0).shape.back();
    T *losses = loss ? at : nullptr;
    T *kept = nullptr;
    if (grad && labels.ignores) { // the rows kept, counted first
      MeanOf<T> counted;
      counted.labels = labels;
      counted.y = kept = loss ? at + rows : at;
      counted.elements = rows;
      counted.count = 1;
      push(counted, rows);
    }
    auto common = [&](auto &f) {
      f.logits = in<S>(0);
      f.labels = labels;
      f.smoothing = static_cast<T>(launch.params.labelSmoothing.value_or(0));
      f.classes = classes;
      f.count = rows;
      f.error = memory.error;
      f.launch = static_cast<int32_t>(index);
    };
    if (!grad) {
      CrossEntropyRows<T, S> f;
      common(f);
      f.losses = losses;
      push(f, classes);
    } else { // the fused kernel's rows write their losses too
      CrossEntropyGradRows<T, S> f;
      common(f);
      f.lossGrad = in(2);
      f.dx = result<S>(loss ? 1 : 0);
      f.losses = losses;
      f.rowCount = static_cast<T>(rows);
      f.keptRows = kept;
      push(f, classes);
    }
    if (loss) {
      MeanOf<T> mean;
      mean.a = losses;
      mean.labels = labels;
      mean.y = result(0);
      mean.elements = rows;
      mean.divisor = static_cast<T>(rows);
      mean.count = 1;
      push(mean, rows);
    }
  }

  /// A loss's labels (input 1) and the value its launch ignores, if any.
  LossLabels lossLabels() const {
    LossLabels labels;
    labels.labels = in<void>(1);
    labels.wide = wideIndex(1);
    labels.ignores = launch.params.ignoreIndex.has_value();
    labels.ignoreIndex = launch.params.ignoreIndex.value_or(0);
    return labels;
  }

  void mse() {
    MeanOf<T> f;
    f.a = in(0);
    f.b = in(1);
    f.y = result(0);
    f.elements = inType(0).numElements();
    f.divisor = static_cast<T>(f.elements);
    f.count = 1;
    push(f, f.elements);
  }

  void dropout() {
    byStorage(outType(0).dtype,
              [&](auto s) { dropoutOf<typename decltype(s)::type>(); });
  }
  template <typename S> void dropoutOf() {
    double rate = launch.params.rate;
    Dropout<T, S> f;
    f.x = in<S>(0);
    f.step = in<int64_t>(1);
    f.y = result<S>(0);
    f.seed = rankDropoutSeed(static_cast<uint64_t>(launch.params.seed),
                             memory.communicator ? memory.communicator->rank()
                                                 : 0);
    f.rate = rate;
    f.keepProbability = static_cast<T>(1.0 - rate);
    f.threshold = dropoutThreshold(rate);
    f.elements = outType(0).numElements();
    f.count = (f.elements + 3) / 4;
    push(f);
  }

  void sgd() {
    Sgd<T> f;
    f.lr = static_cast<T>(launch.params.lr);
    f.momentum = static_cast<T>(launch.params.momentum);
    f.weightDecay = static_cast<T>(launch.params.weightDecay);
    f.nesterov = launch.params.nesterov;
    f.param = in(0);
    widenedInput(1, f.grad, f.gradBf16);
    f.newParam = result(0);
    if (launch.params.momentum != 0) {
      f.buffer = in(2);
      f.newBuffer = result(1);
    }
    updateInputs(f, launch.params.momentum != 0 ? 3 : 2);
    f.count = inType(0).numElements();
    push(f);
  }

  /// Input i as T, or as bf16 (mixed precision's gradients, which the
  /// updates and clipping's sums widen as they read them).
  void widenedInput(size_t i, const T *&wide, const BFloat16 *&narrow) const {
    if (inType(i).dtype == DType::BF16)
      narrow = in<BFloat16>(i);
    else
      wide = in(i);
  }

  /// An optimizer update's inputs after its `state` ones (KernelRules'
  /// updateInputs): the sum of squares when clipping by the global norm,
  /// then the schedule's factor when there is one more.
  template <typename F> void updateInputs(F &f, size_t state) {
    size_t next = state;
    if (launch.params.maxGradNorm != 0) {
      f.maxGradNorm = static_cast<T>(launch.params.maxGradNorm);
      f.gradSumSquares = in(next++);
    }
    if (launch.inputs.size() > next)
      f.lrFactor = in(next);
  }

  void lrSchedule() {
    LrSchedule<T> f;
    f.step = in<int64_t>(0);
    f.y = result(0);
    f.warmupSteps = launch.params.warmupSteps;
    f.decaySteps = launch.params.decaySteps;
    f.minFactor = launch.params.minFactor;
    f.cosine = launch.params.cosine;
    f.linear = launch.params.linear;
    f.count = 1;
    push(f);
  }

  /// One step for an operand of one chunk (most gradients); else the
  /// chunks' sums into the workspace, then their sum.
  Status sumSquares() {
    const T *partial = launch.inputs.size() == 2 ? in(1) : nullptr;
    SumSquaresChunks<T> chunks;
    widenedInput(0, chunks.x, chunks.xBf16);
    chunks.elements = inType(0).numElements();
    chunks.chunk = kSumSquaresChunk;
    chunks.count = sumSquaresChunks(chunks.elements);
    if (chunks.count == 1) {
      chunks.partial = partial;
      chunks.y = result(0);
      push(chunks, chunks.elements);
      return Status::ok();
    }
    T *scratchAt = nullptr;
    ZRT_RETURN_IF_ERROR(scratch(kernelScratchBytes(entry, launch), scratchAt));
    chunks.sums = reinterpret_cast<double *>(scratchAt);
    push(chunks, kSumSquaresChunk);
    SumSquares<T> f;
    f.sums = chunks.sums;
    f.partial = partial;
    f.y = result(0);
    f.chunks = chunks.count;
    f.count = 1;
    push(f, f.chunks);
    return Status::ok();
  }

  void adamw() {
    Adamw<T> f;
    f.beta1 = launch.params.beta1;
    f.beta2 = launch.params.beta2;
    f.lr = static_cast<T>(launch.params.lr);
    f.eps = static_cast<T>(launch.params.eps);
    f.weightDecay = static_cast<T>(launch.params.weightDecay);
    f.param = in(0);
    widenedInput(1, f.grad, f.gradBf16);
    f.expAvg = in(2);
    f.expAvgSq = in(3);
    f.step = in<int64_t>(4);
    f.newParam = result(0);
    f.newExpAvg = result(1);
    f.newExpAvgSq = result(2);
    updateInputs(f, 5);
    f.count = inType(0).numElements();
    push(f);
  }

  const Entry &entry;
  const Launch &launch;
  size_t index;
  const EntryMemory &memory;
  std::vector<StepOf<T>> &out;
  bool guarded = false;
};

template <typename T> Status Builder<T>::build(KernelId id) {
  switch (id) {
#define ZRT_ELEMENT_BUILD(id, name, arity, ...)                                \
  case KernelId::id:                                                           \
    if (elementIsFloat(ElementArity::arity) && !isIntegerDType(inType(0).dtype)) \
      elementwise(ElementOp::id);                                              \
    else                                                                       \
      mixed(ElementOp::id);                                                    \
    break;
    ZRT_ELEMENT_KERNEL_LIST(ZRT_ELEMENT_BUILD)
#undef ZRT_ELEMENT_BUILD
  case KernelId::Scale:
    elementwise(ElementOp::Scale);
    break;
  case KernelId::MseGrad:
    elementwise(ElementOp::MseGrad);
    break;
  case KernelId::Constant:
    constant();
    break;
  case KernelId::CausalMask: {
    CausalMask<T> f;
    f.y = result(0);
    f.size = outType(0).shape[0];
    f.count = f.size * f.size;
    push(f);
    break;
  }
  case KernelId::BroadcastInDim:
    broadcast();
    break;
  case KernelId::Transpose:
    transpose();
    break;
  case KernelId::Slice:
    slice();
    break;
  case KernelId::Concat:
    concat();
    break;
  case KernelId::Copy:
    copy();
    break;
  case KernelId::Convert: {
    Convert<T> f;
    f.x = in<void>(0);
    f.y = result<void>(0);
    f.from = static_cast<MixedStorage>(inType(0).dtype);
    f.to = static_cast<MixedStorage>(outType(0).dtype);
    f.count = outType(0).numElements();
    push(f);
    break;
  }
  case KernelId::SliceGrad:
    sliceGrad();
    break;
  case KernelId::Sum:
    reduce(ReduceKind::Sum);
    break;
  case KernelId::Mean:
    reduce(ReduceKind::Mean);
    break;
  case KernelId::Max:
    reduce(ReduceKind::Max);
    break;
  case KernelId::MaxGrad:
    maxGrad();
    break;
  case KernelId::Matmul:
    return matmul();
  case KernelId::Conv2d:
  case KernelId::Conv2dInputGrad:
  case KernelId::Conv2dWeightGrad:
    return convolution();
  case KernelId::Attention:
    return attentionBy(/*isGrad=*/false);
  case KernelId::AttentionGrad:
    return attentionBy(/*isGrad=*/true);
  case KernelId::Softmax:
    softmax(false);
    break;
  case KernelId::LogSoftmax:
    softmax(true);
    break;
  case KernelId::SoftmaxGrad:
    softmaxGrad(false);
    break;
  case KernelId::LogSoftmaxGrad:
    softmaxGrad(true);
    break;
  case KernelId::LayerNorm:
    norm<LayerNorm>();
    break;
  case KernelId::RmsNorm:
    norm<RmsNorm>();
    break;
  case KernelId::LayerNormGrad:
    return normGrad<LayerNormGradRows, LayerNormGradColumns>();
  case KernelId::RmsNormGrad:
    return normGrad<RmsNormGradRows, RmsNormGradColumns>();
  case KernelId::Embedding:
    embedding();
    break;
  case KernelId::EmbeddingGrad:
    embeddingGrad();
    break;
  case KernelId::SoftmaxCrossEntropy:
  case KernelId::SoftmaxCrossEntropyGrad:
  case KernelId::SoftmaxCrossEntropyFused:
    return crossEntropy(launch.kernel);
  case KernelId::Mse:
    mse();
    break;
  case KernelId::Dropout:
    dropout();
    break;
  case KernelId::Sgd:
    sgd();
    break;
  case KernelId::Adamw:
    adamw();
    break;
  case KernelId::SumSquares:
    return sumSquares();
  case KernelId::LrSchedule:
    lrSchedule();
    break;
  case KernelId::AllReduce:
    allReduce();
    break;
  case KernelId::ReduceScatter:
    return reduceScatter();
  case KernelId::Pack:
    pack();
    break;
  case KernelId::AllGather:
    shardCollective(CollectiveCall::Kind::AllGather);
    break;
  case KernelId::Shard:
    shard();
    break;
#define ZRT_SELF_BUILT_CASE(id, functor)                                       \
  case KernelId::id:                                                           \
    functor<T>::build(*this);                                                  \
    break;
    ZRT_SELF_BUILT_KERNELS(ZRT_SELF_BUILT_CASE)
#undef ZRT_SELF_BUILT_CASE
  case KernelId::NumKernels:
    return makeError(StatusCode::InvalidArgument, "no such kernel");
  }
  return Status::ok();
}

} // namespace

template <typename T>
Status zcc::runtime::device::appendLaunch(const Entry &entry, size_t index,
                                          const EntryMemory &memory,
                                          std::vector<StepOf<T>> &out) {
  return Builder<T>(entry, index, memory, out)
      .build(entry.launches[index].kernel);
}

template Status zcc::runtime::device::appendLaunch<float>(
    const Entry &, size_t, const EntryMemory &, std::vector<StepOf<float>> &);
template Status zcc::runtime::device::appendLaunch<double>(
    const Entry &, size_t, const EntryMemory &, std::vector<StepOf<double>> &);

namespace {

bool overlaps(const std::vector<AddressRange> &a,
              const std::vector<AddressRange> &b) {
  for (const AddressRange &x : a)
    for (const AddressRange &y : b)
      if (x.begin < y.end && y.begin < x.end)
        return true;
  return false;
}

} // namespace

StepOrder zcc::runtime::device::stepDependencies(
    const std::vector<StepAccess> &access) {
  size_t n = access.size();
  size_t words = (n + 63) / 64;
  StepOrder order;
  order.ancestors.assign(n, std::vector<uint64_t>(words, 0));
  order.after.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const StepAccess &step = access[i];
    std::vector<uint64_t> &mine = order.ancestors[i];
    // Nearest first: a conflict already implied by a later one adds no edge.
    for (size_t j = i; j-- > 0;) {
      if (order.follows(i, j))
        continue;
      const StepAccess &before = access[j];
      if (!overlaps(before.writes, step.reads) &&
          !overlaps(before.writes, step.writes) &&
          !overlaps(before.reads, step.writes))
        continue;
      order.after[i].push_back(static_cast<uint32_t>(j));
      mine[j / 64] |= uint64_t{1} << (j % 64);
      for (size_t w = 0; w < words; ++w)
        mine[w] |= order.ancestors[j][w];
    }
  }
  return order;
}
