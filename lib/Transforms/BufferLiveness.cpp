//===- BufferLiveness.cpp - the zt-liveness analysis ----------------------===//

#include "zcc/Transforms/BufferLiveness.h"

#include "EntryPoints.h"

#include "mlir/IR/BuiltinTypes.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Runtime/Plan/KernelRules.h"
#include "zcc/Runtime/Plan/Launch.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <map>

using namespace mlir;
using namespace zcc;
using namespace zcc::zt;

StringRef zcc::stringifyMemoryKind(MemoryKind kind) {
  switch (kind) {
  case MemoryKind::Arena:
    return "arena";
  case MemoryKind::Persistent:
    return "persistent";
  case MemoryKind::Input:
    return "input";
  case MemoryKind::Output:
    return "output";
  case MemoryKind::Constant:
    return "constant";
  case MemoryKind::ArenaPart:
    return "arena-part";
  }
  llvm_unreachable("unknown MemoryKind");
}

int64_t zcc::tensorBytes(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.getNumElements() * ((tensor.getElementTypeBitWidth() + 7) / 8);
}

/// Whether a result may take an operand's buffer: one shape and one element
/// size (a bool mask of as many bytes as a float operand, or a broadcast
/// view's source, is not its elements; nor is BatchNorm's [2, C] statistics
/// the [N, C] input of as many bytes, whose kernels pair their elements
/// one to one only with the input's).
static bool sameElements(Value a, Value b) {
  auto at = cast<RankedTensorType>(a.getType());
  auto bt = cast<RankedTensorType>(b.getType());
  return at.getElementTypeBitWidth() == bt.getElementTypeBitWidth() &&
         at.getShape() == bt.getShape();
}

/// A splat constant is filled by a kernel; any other constant is data the
/// plan carries.
static bool isDataConstant(Operation *op) {
  auto constant = dyn_cast<ConstantOp>(op);
  if (!constant)
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  return !dense || !dense.isSplat();
}

/// Operand `i` of `op` may be read through broadcast strides (operands 0
/// and 1 of the element kernels, any of zt.fused's: the rule the loader
/// checks).
static bool readsThroughStrides(Operation *op, unsigned i) {
  if (!isa<ZTDialect>(op->getDialect()))
    return false;
  std::optional<runtime::KernelId> kernel =
      runtime::findKernel(op->getName().stripDialect());
  return kernel && runtime::kernelReadsInputThroughStrides(*kernel, i);
}

/// A broadcast read through strides instead of materialized: it repeats
/// elements (more result elements than operand elements; an equal count is
/// a reshape and stays a copy), every use is operand 0 or 1 of an element
/// kernel (where's third operand is read contiguously) or an operand of
/// zt.fused, and the step does not return it (a return is no kernel).
static bool repeatsForElementKernels(BroadcastInDimOp op) {
  auto from = cast<RankedTensorType>(op.getOperand().getType());
  auto to = cast<RankedTensorType>(op.getResult().getType());
  if (to.getNumElements() <= from.getNumElements())
    return false;
  return llvm::all_of(op->getUses(), [](OpOperand &use) {
    Operation *user = use.getOwner();
    return readsThroughStrides(user, use.getOperandNumber());
  });
}

static SmallVector<int64_t> rowMajorSteps(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> steps(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    steps[d] = steps[d + 1] * shape[d + 1];
  return steps;
}

/// The steps that view a tensor of shape `from` (steps `steps`) as shape
/// `to` without moving an element, if there are any: each run of `from`'s
/// dimensions that step as one block is divided among `to`'s.
static std::optional<SmallVector<int64_t>>
reshapeSteps(ArrayRef<int64_t> from, ArrayRef<int64_t> steps,
             ArrayRef<int64_t> to) {
  if (from.empty() || to.empty())
    return std::nullopt;
  SmallVector<int64_t> out(to.size(), 0);
  int64_t v = static_cast<int64_t>(to.size()) - 1;
  int64_t base = steps.back(), fromCount = 1, toCount = 1;
  for (int64_t d = static_cast<int64_t>(from.size()) - 1; d >= 0; --d) {
    fromCount *= from[d];
    bool runEnds =
        d == 0 || (from[d - 1] != 1 && steps[d - 1] != fromCount * base);
    if (!runEnds)
      continue;
    while (v >= 0 && (toCount < fromCount || to[v] == 1)) {
      out[v] = toCount * base;
      toCount *= to[v];
      --v;
    }
    if (toCount != fromCount)
      return std::nullopt;
    if (d > 0) {
      base = steps[d - 1];
      fromCount = toCount = 1;
    }
  }
  if (v >= 0)
    return std::nullopt;
  return out;
}

/// Whether `use` is an operand attention's kernels read through a view.
static bool takesView(OpOperand &use) {
  Operation *user = use.getOwner();
  if (!isa<ZTDialect>(user->getDialect()))
    return false;
  std::optional<runtime::KernelId> kernel =
      runtime::findKernel(user->getName().stripDialect());
  return kernel &&
         runtime::kernelTakesView(*kernel, false, use.getOperandNumber());
}

bool BufferLiveness::isView(Operation *op) const {
  return isa<ReshapeOp>(op) || broadcastViews.contains(op) ||
         stridedViews.contains(op);
}

void BufferLiveness::findAttentionViews() {
  // Slices and transposes are views of their operand when every reader of
  // the result takes a view (attention's operands, or another such slice,
  // transpose or reshape); a reshape of a view is one when its steps allow.
  // Each round drops the ops that cannot be views, until none is dropped.
  llvm::SetVector<Operation *> candidates;
  for (Operation *op : schedule)
    if (traitsOf(op) & runtime::kView)
      candidates.insert(op);
  // The slice or transpose a view's layout starts at (through reshapes).
  auto originOf = [](Value v) {
    Operation *def = v.getDefiningOp();
    while (def && isa<ReshapeOp>(def))
      def = def->getOperand(0).getDefiningOp();
    return def;
  };
  // Every view starts at a candidate; were one not to, none is kept (each
  // round then ends).
  auto drop = [&](Operation *origin) {
    if (!candidates.remove(origin))
      candidates.clear();
  };
  for (bool changed = true; changed;) {
    changed = false;
    layouts.clear();
    for (Operation *op : schedule) {
      bool reshape = isa<ReshapeOp>(op);
      if (!reshape && !candidates.contains(op))
        continue;
      Value in = op->getOperand(0);
      ArrayRef<int64_t> inShape =
          cast<RankedTensorType>(in.getType()).getShape();
      ArrayRef<int64_t> outShape =
          cast<RankedTensorType>(op->getResult(0).getType()).getShape();
      auto found = layouts.find(in);
      if (reshape && found == layouts.end())
        continue; // a reshape of a row-major value: the same bytes
      ViewLayout layout = found != layouts.end()
                              ? found->second
                              : ViewLayout{0, rowMajorSteps(inShape)};
      if (auto slice = dyn_cast<SliceOp>(op)) {
        for (auto [d, start] : llvm::enumerate(slice.getStartIndices()))
          layout.offset += start * layout.strides[d];
        for (auto [d, step] : llvm::enumerate(slice.getStrides()))
          layout.strides[d] *= step;
      } else if (auto transpose = dyn_cast<TransposeOp>(op)) {
        SmallVector<int64_t> steps;
        for (int64_t d : transpose.getPermutation())
          steps.push_back(layout.strides[d]);
        layout.strides = std::move(steps);
      } else if (!reshape) { // a view op this analysis cannot place
        drop(op);
        changed = true;
        break;
      } else {
        std::optional<SmallVector<int64_t>> steps =
            reshapeSteps(inShape, layout.strides, outShape);
        if (!steps) {
          drop(originOf(in));
          changed = true;
          break;
        }
        layout.strides = std::move(*steps);
      }
      layouts[op->getResult(0)] = std::move(layout);
    }
    if (changed)
      continue;
    for (Operation *op : schedule) {
      if (op->getNumResults() != 1 || !layouts.count(op->getResult(0)))
        continue;
      Value result = op->getResult(0);
      for (OpOperand &use : result.getUses()) {
        Operation *user = use.getOwner();
        if (takesView(use) || isa<ReshapeOp>(user) ||
            candidates.contains(user))
          continue;
        drop(originOf(result));
        changed = true;
        break;
      }
    }
  }
  for (Operation *op : schedule)
    if (op->getNumResults() == 1 && layouts.count(op->getResult(0)))
      stridedViews.insert(op);

  // A result attention writes through a view (kernelTakesView) whose
  // readers are attention's operands and transposes of one permutation
  // lives in the transposed value's bytes: the transposes are that buffer
  // (no copy) and the result is written through the permuted steps.
  for (Operation *op : schedule) {
    if (!isa<ZTDialect>(op->getDialect()))
      continue;
    std::optional<runtime::KernelId> kernel =
        runtime::findKernel(op->getName().stripDialect());
    if (!kernel)
      continue;
    for (OpResult result : op->getResults()) {
      if (!runtime::kernelTakesView(*kernel, true, result.getResultNumber()))
        continue;
      SmallVector<TransposeOp> transposes;
      bool viewable = true;
      for (OpOperand &use : result.getUses()) {
        if (takesView(use))
          continue;
        auto transpose = dyn_cast<TransposeOp>(use.getOwner());
        if (!transpose || stridedViews.contains(transpose) ||
            (!transposes.empty() && transposes.front().getPermutation() !=
                                        transpose.getPermutation())) {
          viewable = false;
          break;
        }
        transposes.push_back(transpose);
      }
      if (!viewable || transposes.empty())
        continue;
      ArrayRef<int64_t> perm = transposes.front().getPermutation();
      SmallVector<int64_t> transposed = rowMajorSteps(
          cast<RankedTensorType>(transposes.front().getType()).getShape());
      ViewLayout layout;
      layout.strides.assign(perm.size(), 0);
      for (auto [d, from] : llvm::enumerate(perm))
        layout.strides[from] = transposed[d];
      layouts[result] = std::move(layout);
      for (TransposeOp transpose : transposes)
        stridedViews.insert(transpose);
    }
  }
}

void BufferLiveness::findConcatViews() {
  // A concat whose operands are each a result of one attention op written
  // through a view (transposed, then reshaped: q, k and v's gradients going
  // back into the fused projection's) is no copy: the results are written
  // straight into the concat's buffer, each at its place along the concat's
  // dimension, and the transposes, reshapes and the concat are views.
  for (Operation *op : schedule) {
    auto concat = dyn_cast<ConcatOp>(op);
    // A returned concat is the step's output, copied or not: left alone.
    if (!concat || llvm::any_of(concat->getUsers(), [](Operation *user) {
          return isa<func::ReturnOp>(user);
        }))
      continue;
    auto type = cast<RankedTensorType>(concat.getType());
    SmallVector<int64_t> whole = rowMajorSteps(type.getShape());
    int64_t dim = concat.getDimension();
    Operation *writer = nullptr;
    // Per operand: the values from the concat's operand back to the
    // result (reshapes, then the transpose), and the offset along `dim`.
    SmallVector<SmallVector<Value, 4>, 3> chains;
    SmallVector<int64_t> offsets;
    int64_t along = 0;
    bool viewable = true;
    for (Value operand : concat->getOperands()) {
      SmallVector<Value, 4> chain;
      Value v = operand;
      while (v.hasOneUse() && v.getDefiningOp<ReshapeOp>()) {
        chain.push_back(v);
        v = v.getDefiningOp()->getOperand(0);
      }
      auto transpose = v.getDefiningOp<TransposeOp>();
      if (!v.hasOneUse() || !transpose || !stridedViews.contains(transpose) ||
          !transpose.getOperand().hasOneUse() ||
          !layouts.count(transpose.getOperand())) {
        viewable = false;
        break;
      }
      chain.push_back(v);
      Value result = transpose.getOperand();
      chain.push_back(result);
      Operation *def = result.getDefiningOp();
      if ((writer && def != writer) ||
          llvm::any_of(chains, [&](auto &c) { return c.back() == result; })) {
        viewable = false;
        break;
      }
      writer = def;
      chains.push_back(std::move(chain));
      offsets.push_back(along * whole[dim]);
      along += cast<RankedTensorType>(operand.getType()).getDimSize(dim);
    }
    if (!viewable || chains.empty())
      continue;
    // Each value's steps: the concat's, then back through the reshapes
    // (the same elements, divided differently) and the transpose.
    SmallVector<SmallVector<ViewLayout, 4>, 3> found;
    for (auto [chain, offset] : llvm::zip(chains, offsets)) {
      SmallVector<ViewLayout, 4> steps;
      ViewLayout layout{offset, whole};
      for (size_t i = 0; i + 1 < chain.size() && viewable; ++i) {
        steps.push_back(layout);
        Value to = chain[i + 1];
        if (auto transpose = chain[i].getDefiningOp<TransposeOp>()) {
          SmallVector<int64_t> strides(layout.strides.size(), 0);
          for (auto [d, from] : llvm::enumerate(transpose.getPermutation()))
            strides[from] = layout.strides[d];
          layout.strides = std::move(strides);
          continue;
        }
        std::optional<SmallVector<int64_t>> reshaped = reshapeSteps(
            cast<RankedTensorType>(chain[i].getType()).getShape(),
            layout.strides, cast<RankedTensorType>(to.getType()).getShape());
        if (!reshaped)
          viewable = false;
        else
          layout.strides = std::move(*reshaped);
      }
      steps.push_back(layout);
      found.push_back(std::move(steps));
    }
    if (!viewable)
      continue;
    for (auto [chain, steps] : llvm::zip(chains, found)) {
      // The concat's operand itself is row-major in its place: a view too.
      for (auto [value, layout] : llvm::zip(chain, steps))
        layouts[value] = layout;
      concatOf[chain.back()] = concat.getResult();
    }
    stridedViews.insert(concat);
  }
}

FailureOr<BufferLiveness> BufferLiveness::compute(func::FuncOp fn, bool inPlace,
                                                  bool plantBug,
                                                  int64_t alignment,
                                                  bool attentionViews) {
  BufferLiveness live;
  if (!fn.getBody().hasOneBlock())
    return fn.emitOpError() << "liveness needs a single-block function";
  Block &body = fn.getBody().front();
  for (Operation &op : body.without_terminator()) {
    if (!isa<ZTDialect>(op.getDialect()))
      return op.emitOpError()
             << "is not a zt op: the liveness analysis (and the plan) cover "
                "zt ops only";
    if (op.getNumRegions() != 0)
      return op.emitOpError() << "has regions, which a plan cannot schedule";
    live.positionOf[&op] = live.schedule.size();
    live.schedule.push_back(&op);
  }
  int64_t returnPosition = live.schedule.size();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  live.positionOf[ret] = returnPosition;

  auto addBuffer = [&](LiveBuffer buffer) {
    live.buffers.push_back(std::move(buffer));
    return static_cast<unsigned>(live.buffers.size() - 1);
  };

  // Arguments: persistent tensors and per-step input slots.
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    std::optional<ArgRole> role = argRole(fn, i);
    if (!role)
      return fn.emitOpError()
             << "argument #" << i
             << " has no 'zt.role': every argument of an entry point needs "
                "one to get a memory kind";
    LiveBuffer buffer;
    buffer.kind =
        isPersistentRole(*role) ? MemoryKind::Persistent : MemoryKind::Input;
    buffer.root = arg;
    buffer.bytes = tensorBytes(arg.getType());
    buffer.first = 0;
    buffer.last = returnPosition + 1;
    buffer.name = argName(fn, i);
    buffer.argIndex = i;
    live.bufferOf[arg] = addBuffer(buffer);
  }

  // Op results: a view (a reshape, a broadcast read through strides, or
  // attention's operand where it lies) shares its source's buffer, anything
  // else gets its own, in the arena unless a result claims it below.
  if (attentionViews) {
    live.findAttentionViews();
    live.findConcatViews();
  }
  auto isView = [&](Operation *op) { return live.isView(op); };
  for (Operation *op : live.schedule) {
    if (auto broadcast = dyn_cast<BroadcastInDimOp>(op))
      if (repeatsForElementKernels(broadcast))
        live.broadcastViews.insert(op);
    if (isView(op)) {
      live.bufferOf[op->getResult(0)] = live.bufferOf.lookup(op->getOperand(0));
      continue;
    }
    for (Value result : op->getResults()) {
      // Results written into their concat share its buffer, made by the
      // first of them.
      Value concat = live.concatOf.lookup(result);
      if (concat && live.bufferOf.count(concat)) {
        live.bufferOf[result] = live.bufferOf.lookup(concat);
        continue;
      }
      LiveBuffer buffer;
      buffer.kind =
          isDataConstant(op) ? MemoryKind::Constant : MemoryKind::Arena;
      buffer.root = concat ? concat : result;
      buffer.bytes = tensorBytes(buffer.root.getType());
      buffer.first = live.positionOf[op];
      buffer.last = buffer.first + 1;
      live.bufferOf[result] = addBuffer(buffer);
      if (concat)
        live.bufferOf[concat] = live.bufferOf[result];
    }
  }

  // Every read extends the interval of the buffer read, views included.
  // lastRead[b] is the position of the last op other than the return that
  // reads buffer b (-1 when none).
  SmallVector<int64_t> lastRead(live.buffers.size(), -1);
  for (Operation *op : live.schedule) {
    if (isView(op))
      continue; // a view reads nothing; its users read the buffer
    int64_t pos = live.positionOf[op];
    for (Value operand : op->getOperands()) {
      unsigned b = live.bufferOf.lookup(operand);
      lastRead[b] = std::max(lastRead[b], pos);
      live.buffers[b].last = std::max(live.buffers[b].last, pos + 1);
    }
  }

  // Buffers whose values now live in another buffer, dropped below.
  SmallVector<bool> merged(live.buffers.size(), false);

  // In place in the arena: a result written over an operand whose value
  // dies at its op, when both are arena buffers of one size and the kernel
  // reads each element before writing it (kInPlace: kernelAllowsInPlace, the
  // rule the loader checks). Values the step returns keep their buffers.
  llvm::DenseSet<unsigned> returned;
  for (Value value : ret.getOperands())
    returned.insert(live.bufferOf.lookup(value));
  // A bucket's operands and results keep buffers of their own: an operand
  // becomes its part of the bucket, and a result is the part.
  llvm::DenseSet<unsigned> bucketValues;
  for (Operation *op : live.schedule)
    if (traitsOf(op) & runtime::kBucket) {
      for (Value v : op->getOperands())
        bucketValues.insert(live.bufferOf.lookup(v));
      for (Value v : op->getResults())
        bucketValues.insert(live.bufferOf.lookup(v));
    }
  for (Operation *op : inPlace ? ArrayRef<Operation *>(live.schedule)
                               : ArrayRef<Operation *>()) {
    if (isView(op) || !(traitsOf(op) & runtime::kInPlace))
      continue;
    // Each result (batch_norm_grad's input gradient, a fused program's
    // results) over an operand, never two over the same one.
    SmallVector<unsigned, 4> taken;
    for (Value value : op->getResults()) {
      unsigned r = live.bufferOf.lookup(value);
      LiveBuffer &result = live.buffers[r];
      int64_t pos = live.positionOf[op];
      if (result.kind != MemoryKind::Arena || returned.contains(r) ||
          bucketValues.contains(r))
        continue;
      for (Value operand : op->getOperands()) {
        unsigned o = live.bufferOf.lookup(operand);
        LiveBuffer &source = live.buffers[o];
        if (o == r || source.kind != MemoryKind::Arena || merged[o] ||
            llvm::is_contained(taken, o) || returned.contains(o) ||
            bucketValues.contains(o) ||
            (plantBug ? lastRead[o] < pos : lastRead[o] != pos) ||
            source.bytes != result.bytes || !sameElements(operand, value))
          continue;
        for (auto &[v, b] : live.bufferOf)
          if (b == r)
            b = o;
        source.last = std::max(source.last, result.last);
        lastRead[o] = std::max(lastRead[o], lastRead[r]);
        // The slot takes a named value's name (`loc("saved")`), so reports
        // and tests still find a value that now shares another's slot.
        if (!isa<NameLoc>(source.root.getLoc()) &&
            isa<NameLoc>(result.root.getLoc()))
          source.root = result.root;
        merged[r] = true;
        taken.push_back(o);
        break;
      }
    }
  }

  // Buckets: each zt.all_reduce's results become parts of one arena
  // buffer, side by side, so the runtime reduces them with one call. An
  // operand that dies at the reduction and is an arena buffer of its own
  // becomes its part (the gradient is computed in the bucket, as PyTorch
  // DDP's gradient_as_bucket_view); any other is copied in by the kernel.
  // A zt.pack's parts lie end to end with no gap (zt.reduce_scatter reads
  // them as one flat tensor): only a part at an aligned offset is computed
  // in place, since kernels may rely on their operands' alignment.
  for (Operation *op : live.schedule) {
    if (!(traitsOf(op) & runtime::kBucket))
      continue;
    bool dense = isa<PackOp>(op);
    int64_t pos = live.positionOf[op];
    LiveBuffer bucket;
    bucket.first = pos;
    bucket.last = pos + 1;
    bucket.dense = dense;
    unsigned id = addBuffer(bucket);
    merged.push_back(false);
    lastRead.push_back(-1);
    int64_t offset = 0;
    for (auto [in, out] : llvm::zip(op->getOperands(), op->getResults())) {
      unsigned part = live.bufferOf.lookup(out);
      unsigned o = live.bufferOf.lookup(in);
      const LiveBuffer &source = live.buffers[o];
      if (source.kind == MemoryKind::Arena && source.parts.empty() &&
          !merged[o] && !returned.contains(o) && lastRead[o] == pos &&
          source.bytes == live.buffers[part].bytes && offset % alignment == 0) {
        for (auto &[v, b] : live.bufferOf)
          if (b == part)
            b = o;
        live.buffers[o].last =
            std::max(live.buffers[o].last, live.buffers[part].last);
        lastRead[o] = std::max(lastRead[o], lastRead[part]);
        merged[part] = true;
        part = o;
      }
      LiveBuffer &p = live.buffers[part];
      p.kind = MemoryKind::ArenaPart;
      p.bucket = static_cast<int>(id);
      p.bucketOffset = offset;
      offset +=
          dense ? p.bytes : (p.bytes + alignment - 1) / alignment * alignment;
      live.buffers[id].parts.push_back(part);
    }
    live.buffers[id].bytes = offset;
  }

  // Results: computed in place where that is safe, else copied at the
  // return. `claimed` marks arena buffers that became another kind.
  SmallVector<bool> claimed(live.buffers.size(), false);
  SmallVector<bool> tiedArg(fn.getNumArguments(), false);
  unsigned numResults = ret.getNumOperands();
  live.results.resize(numResults);
  SmallVector<unsigned> copies;
  for (unsigned r = 0; r < numResults; ++r) {
    Value value = ret.getOperand(r);
    unsigned source = live.bufferOf.lookup(value);
    LiveBuffer &src = live.buffers[source];
    // A value owns its buffer when it is the buffer's root or a reshape of
    // it (ZeRO-1's gathered slices are reshaped back into the parameters).
    Value root = value;
    while (root != src.root && root.getDefiningOp<ReshapeOp>())
      root = root.getDefiningOp<ReshapeOp>().getOperand();
    bool ownsBuffer =
        src.kind == MemoryKind::Arena && !claimed[source] && src.root == root;
    std::optional<unsigned> tied =
        resultArgIndex(fn, r, ZTDialect::kTiedAttrName);
    if (tied) {
      if (tiedArg[*tied])
        return fn.emitOpError()
               << "result #" << r << " is tied to argument #" << *tied
               << ", which an earlier result already overwrites";
      tiedArg[*tied] = true;
      unsigned target = live.bufferOf.lookup(fn.getArgument(*tied));
      if (source == target) { // returned unchanged: nothing to write
        live.results[r].buffer = target;
        continue;
      }
      // In place when the target's old value is read no later than the
      // update, and at the update only by a kernel that may run in place.
      Operation *def = root.getDefiningOp();
      bool inPlace = ownsBuffer && def;
      if (inPlace) {
        int64_t pos = live.positionOf[def];
        bool readsTarget = llvm::any_of(def->getOperands(), [&](Value v) {
          return live.bufferOf.lookup(v) == target;
        });
        inPlace = lastRead[target] < pos ||
                  (lastRead[target] == pos && readsTarget &&
                   (traitsOf(def) & runtime::kInPlace));
      }
      if (inPlace) {
        for (auto &[v, b] : live.bufferOf)
          if (b == source)
            b = target;
        claimed[source] = true;
        merged[source] = true;
        live.results[r].buffer = target;
        continue;
      }
      live.results[r].buffer = target;
      live.results[r].copyFrom = source;
      copies.push_back(source);
      continue;
    }
    // A step output: computed straight into its slot when it owns its
    // buffer, else copied into a new slot at the return.
    if (ownsBuffer) {
      src.kind = MemoryKind::Output;
      src.name = resultName(fn, r);
      src.resultIndex = r;
      claimed[source] = true;
      live.results[r].buffer = source;
      continue;
    }
    LiveBuffer out;
    out.kind = MemoryKind::Output;
    out.bytes = tensorBytes(value.getType());
    out.first = returnPosition;
    out.last = returnPosition + 1;
    out.name = resultName(fn, r);
    out.resultIndex = r;
    live.results[r].buffer = addBuffer(out);
    live.results[r].copyFrom = source;
    copies.push_back(source);
  }
  // Buffers copied at the return live until it.
  for (unsigned b : copies)
    live.buffers[b].last = std::max(live.buffers[b].last, returnPosition + 1);
  // A bucket lives from its first part's first write to its last part's
  // last read.
  for (LiveBuffer &bucket : live.buffers)
    for (unsigned part : bucket.parts) {
      bucket.first = std::min(bucket.first, live.buffers[part].first);
      bucket.last = std::max(bucket.last, live.buffers[part].last);
    }

  // Drop the buffers orphaned by in-place updates, renumbering the rest.
  SmallVector<int> newId(live.buffers.size(), -1);
  SmallVector<LiveBuffer> kept;
  for (auto [i, buffer] : llvm::enumerate(live.buffers)) {
    if (i < merged.size() && merged[i])
      continue;
    newId[i] = kept.size();
    kept.push_back(std::move(buffer));
  }
  live.buffers = std::move(kept);
  for (auto &[v, b] : live.bufferOf)
    b = newId[b];
  for (LiveBuffer &buffer : live.buffers) {
    if (buffer.bucket >= 0)
      buffer.bucket = newId[buffer.bucket];
    for (unsigned &part : buffer.parts)
      part = newId[part];
  }
  for (ResultPlacement &placement : live.results) {
    placement.buffer = newId[placement.buffer];
    if (placement.copyFrom)
      placement.copyFrom = newId[*placement.copyFrom];
  }
  return live;
}

int64_t BufferLiveness::getPeakArenaBytes() const {
  // Sweep over interval ends; an end at p frees before a start at p uses.
  std::map<int64_t, int64_t> delta;
  for (const LiveBuffer &buffer : buffers) {
    if (buffer.kind != MemoryKind::Arena)
      continue;
    delta[buffer.first] += buffer.bytes;
    delta[buffer.last] -= buffer.bytes;
  }
  int64_t current = 0, peak = 0;
  for (auto [position, change] : delta) {
    current += change;
    peak = std::max(peak, current);
  }
  return peak;
}
