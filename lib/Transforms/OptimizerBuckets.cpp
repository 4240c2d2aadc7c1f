//===- OptimizerBuckets.cpp - data parallel updates: all-reduce, ZeRO-1 ---===//
//
// Data parallelism's part of zt-optimizer (Optimizer.h): gradients grouped
// into buckets of about bucket-bytes in the order they are computed, each
// bucket averaged over the ranks by one zt.all_reduce, or (ZeRO-1) reduce-
// scattered, this rank's shard stepped and the shards all-gathered back.
//
//===----------------------------------------------------------------------===//

#include "Optimizer.h"

#include "EntryPoints.h"
#include "zcc/Transforms/BufferLiveness.h"
#include "zcc/Transforms/Passes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>

using namespace mlir;
using namespace zcc::zt;
using namespace zcc::optimizer;

namespace {

/// Groups `gradients` into buckets of about bucket-bytes and calls
/// `emit(members)` (indices into `gradients`) for each, with `b` placed
/// right after the last gradient the bucket holds, so that a bucket's
/// communication overlaps the computing of the next. Buckets follow the
/// order the gradients are computed in (`inProductionOrder`; the backward
/// yields them in reverse, as PyTorch DDP's buckets), or the list's order
/// (an apply entry's accumulators, all there from its start: those
/// buckets go first, one after the other).
///
/// With `decayClass` (ZeRO-1), parameters of its two classes never share
/// a bucket.
template <typename Emit>
void forEachBucket(int64_t bucketBytes, OpBuilder &b, func::FuncOp fn,
                   ArrayRef<Gradient> gradients, bool inProductionOrder,
                   Emit emit,
                   function_ref<int(BlockArgument)> decayClass = {}) {
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < gradients.size(); ++i)
    order.push_back(i);
  auto def = [&](unsigned i) { return gradients[i].second.getDefiningOp(); };
  if (inProductionOrder)
    llvm::stable_sort(order, [&](unsigned x, unsigned y) {
      Operation *a = def(x), *c = def(y);
      if (!a || !c)
        return !a && c; // arguments first
      return a->isBeforeInBlock(c);
    });
  Block &body = fn.getBody().front();
  Operation *lastOfArguments = nullptr;
  // The latest gradient a bucket was placed after: buckets are placed in
  // the order they are emitted (ZeRO-1's stages chain them), so one whose
  // gradients were all done earlier (a class's last) goes after the ops
  // the previous bucket placed, where the builder was left.
  Operation *latest = nullptr;
  // The op computing a bucket's last gradient; null: all arguments.
  auto lastDef = [&](ArrayRef<unsigned> members) -> Operation * {
    Operation *last = nullptr;
    for (unsigned i : members)
      if (Operation *d = def(i))
        if (!last || last->isBeforeInBlock(d))
          last = d;
    return last;
  };
  auto flush = [&](ArrayRef<unsigned> bucket) {
    if (bucket.empty())
      return;
    Operation *last = lastDef(bucket);
    if (last && latest && last->isBeforeInBlock(latest)) {
      emit(bucket);
      return;
    }
    if (last) {
      latest = last;
      b.setInsertionPointAfter(last);
    } else if (lastOfArguments) {
      b.setInsertionPointAfter(lastOfArguments);
    } else {
      b.setInsertionPointToStart(&body);
    }
    emit(bucket);
    if (!last)
      lastOfArguments = &*std::prev(b.getInsertionPoint());
  };
  int64_t cap = bucketBytes;
  if (cap == 0) {
    int64_t total = 0;
    llvm::DenseSet<Value> seen;
    for (const auto &g : gradients)
      if (seen.insert(g.second).second)
        total += zcc::tensorBytes(g.second.getType());
    cap = zcc::autoBucketBytes(total);
  }
  // One open bucket per class (ZeRO-1: parameters with and without
  // weight decay, whose shards take different steps); each closes at the
  // cap, right after its last gradient.
  SmallVector<unsigned> bucket[2];
  int64_t bytes[2] = {0, 0};
  for (unsigned i : order) {
    int c = decayClass ? decayClass(gradients[i].first) : 0;
    bucket[c].push_back(i);
    bytes[c] += zcc::tensorBytes(gradients[i].second.getType());
    if (bytes[c] >= cap) {
      flush(bucket[c]);
      bucket[c].clear();
      bytes[c] = 0;
    }
  }
  // The last ones in the order their gradients complete.
  Operation *last0 = lastDef(bucket[0]), *last1 = lastDef(bucket[1]);
  bool oneFirst = last1 && (!last0 || last1->isBeforeInBlock(last0));
  flush(bucket[oneFirst ? 1 : 0]);
  flush(bucket[oneFirst ? 0 : 1]);
}

/// ZeRO-1: per bucket, the gradients packed side by side into one buffer
/// (zero padded to `world-size` equal shards) are reduce-scattered (mean), this
/// rank's shard of the flattened parameters takes the optimizer's step
/// with state of one shard's size, and the shards are all-gathered back
/// into the parameters. Each state tensor is recorded in `sharded` for
/// the plan, so checkpoints can hold it per parameter.
///
/// Three stages per bucket, each deferred past the next bucket's
/// collective so communication overlaps computation (as the plain
/// all_reduce's updates): the reduce_scatter where the bucket is
/// complete; the step and all_gather after the next bucket's
/// reduce_scatter; the parameters' slices after the next all_gather.
struct ShardedBucket {
  SmallVector<unsigned> members;
  SmallVector<int64_t> offsets, counts;
  int64_t total = 0, shard = 0;
  double weightDecay = 0; // its members' (one class of forEachBucket)
  Type element;
  Operation *reduceScatter = nullptr;
  Operation *allGather = nullptr;
};

} // namespace

void zcc::optimizer::averageOverRanks(const CompileOptions &options,
                                     OpBuilder &b, func::FuncOp fn,
                                     SmallVectorImpl<Gradient> &gradients,
                                     bool inProductionOrder) {
  llvm::DenseMap<Value, Value> reduced;
  forEachBucket(options.bucketBytes, b, fn, gradients, inProductionOrder,
                [&](ArrayRef<unsigned> members) {
                  SmallVector<Value> values;
                  SmallVector<Type> types;
                  for (unsigned i : members)
                    if (reduced.try_emplace(gradients[i].second).second) {
                      values.push_back(gradients[i].second);
                      types.push_back(gradients[i].second.getType());
                    }
                  auto op = b.create<AllReduceOp>(fn.getLoc(), types, values,
                                                  b.getUnitAttr());
                  for (auto [from, to] : llvm::zip(values, op.getResults()))
                    reduced[from] = to;
                });
  for (auto &entry : gradients)
    entry.second = reduced.lookup(entry.second);
}

LogicalResult zcc::optimizer::shardedUpdates(
    UpdateBuilder &updates, OpBuilder &b, StepSignature &sig,
    ArrayRef<Gradient> gradients, bool inProductionOrder,
    SmallVectorImpl<Attribute> &shardedStates) {
  const int64_t worldSize = updates.options().worldSize;
  const double clipGradNorm = updates.options().clipGradNorm;
  func::FuncOp fn = sig.fn;
  Location loc = fn.getLoc();
  MLIRContext *ctx = fn.getContext();
  auto ranksAttr = b.getI64IntegerAttr(worldSize);
  int bucketIndex = 0;
  LogicalResult result = success();

  // Clipping: the sum of the squares of every rank's shards, all reduced
  // (sum) once every bucket is; null without clipping.
  Value sumOfSquares;
  // The step on this rank's shard, then the all_gather; the states'
  // records for the plan.
  auto step = [&](ShardedBucket &k) -> LogicalResult {
    auto shardType = RankedTensorType::get({k.shard}, k.element);
    // Read where the parameters are: the flat whole is never built.
    SmallVector<Value> members;
    for (unsigned i : k.members)
      members.push_back(gradients[i].first);
    Value params = b.create<ShardOp>(loc, shardType, members, ranksAttr);
    std::string name = "zero." + std::to_string(bucketIndex++);
    Value grad = updates.scaled(b, k.reduceScatter->getResult(0));
    FailureOr<UpdateBuilder::Update> update =
        updates.emitStep(b, sig, params, grad, name, k.weightDecay, sumOfSquares);
    if (failed(update))
      return failure();
    for (auto &[value, arg, suffix] : update->states)
      sig.addTied(value, arg);
    k.allGather = b.create<AllGatherOp>(
        loc, RankedTensorType::get({k.shard * worldSize}, k.element),
        update->param, ranksAttr);
    SmallVector<Attribute> names;
    for (unsigned i : k.members)
      names.push_back(StringAttr::get(
          ctx, argName(fn, gradients[i].first.getArgNumber())));
    for (auto &[value, arg, suffix] : update->states) {
      NamedAttrList entry;
      entry.set("name", StringAttr::get(ctx, name + suffix));
      entry.set("suffix", StringAttr::get(ctx, suffix));
      entry.set("ranks", ranksAttr);
      entry.set("params", ArrayAttr::get(ctx, names));
      entry.set("offsets", b.getDenseI64ArrayAttr(k.offsets));
      shardedStates.push_back(entry.getDictionary(ctx));
    }
    return success();
  };
  // The gathered parameters back into their own tensors.
  auto slices = [&](const ShardedBucket &k) {
    Value gathered = k.allGather->getResult(0);
    for (auto [j, i] : llvm::enumerate(k.members)) {
      BlockArgument param = gradients[i].first;
      Value slice = b.create<SliceOp>(
          loc, RankedTensorType::get({k.counts[j]}, k.element), gathered,
          b.getDenseI64ArrayAttr({k.offsets[j]}),
          b.getDenseI64ArrayAttr({k.offsets[j] + k.counts[j]}),
          b.getDenseI64ArrayAttr({1}));
      sig.addTied(b.create<ReshapeOp>(loc, param.getType(), slice), param);
    }
  };

  // Buckets whose step, or whose slices, wait for the next collective.
  std::optional<ShardedBucket> stepPending, slicesPending;
  // Clipping: every bucket, reduced, and this rank's sum of squares.
  SmallVector<ShardedBucket> clipped;
  Value partialSum;
  // Runs the stages due after `rs`, the reduce_scatter just placed (null
  // after the last bucket: then what is still pending, after the last op
  // placed).
  auto advance = [&](Operation *rs) {
    if (!stepPending)
      return;
    if (rs) // else where the last bucket's stages left it
      b.setInsertionPointAfter(rs);
    if (failed(step(*stepPending))) {
      result = failure();
      return;
    }
    if (slicesPending) {
      b.setInsertionPointAfter(stepPending->allGather);
      slices(*slicesPending);
    }
    slicesPending = std::move(stepPending);
    stepPending.reset();
  };
  forEachBucket(
      updates.options().bucketBytes, b, fn, gradients, inProductionOrder,
      [&](ArrayRef<unsigned> members) {
        if (failed(result))
          return;
        ShardedBucket k;
        k.members.assign(members.begin(), members.end());
        k.element =
            cast<RankedTensorType>(gradients[members[0]].first.getType())
                .getElementType();
        k.weightDecay = updates.weightDecayOf(gradients[members[0]].first);
        for (unsigned i : members) {
          auto type = cast<RankedTensorType>(gradients[i].first.getType());
          k.offsets.push_back(k.total);
          k.counts.push_back(type.getNumElements());
          k.total += type.getNumElements();
        }
        k.shard = (k.total + worldSize - 1) / worldSize;
        // The gradients side by side in one bucket (computed there where
        // the plan can), zero padded to `world-size` equal shards.
        SmallVector<Value> parts;
        for (unsigned i : members)
          parts.push_back(gradients[i].second);
        if (k.shard * worldSize > k.total) {
          auto padType =
              RankedTensorType::get({k.shard * worldSize - k.total}, k.element);
          parts.push_back(b.create<ConstantOp>(
              loc, DenseElementsAttr::get(padType,
                                          b.getFloatAttr(k.element, 0.0))));
        }
        auto packed =
            b.create<PackOp>(loc, ValueRange(parts).getTypes(), parts);
        k.reduceScatter = b.create<ReduceScatterOp>(
            loc, RankedTensorType::get({k.shard}, k.element),
            packed.getResults(), ranksAttr, b.getUnitAttr());
        if (clipGradNorm > 0) {
          // Every step waits for the norm: the buckets' steps come after
          // the last one, each shard's squares summed as it arrives.
          partialSum =
              UpdateBuilder::sumSquares(b, k.reduceScatter->getResult(0), partialSum);
          clipped.push_back(std::move(k));
          return;
        }
        Operation *rs = k.reduceScatter;
        advance(rs);
        stepPending = std::move(k);
        // The insertion point is left after the last op placed, where
        // forEachBucket puts a next bucket of arguments (the apply
        // entry's accumulators).
      },
      [&](BlockArgument param) { return updates.weightDecayOf(param) > 0 ? 1 : 0; });
  if (failed(result))
    return failure();
  if (clipGradNorm > 0) {
    // This rank's shards' squares summed over the ranks (one number), then
    // each bucket's step and all_gather, the previous bucket's slices
    // after it.
    sumOfSquares =
        updates.scaledSquares(b, b.create<AllReduceOp>(loc, partialSum.getType(),
                                               partialSum, UnitAttr())
                             .getResult(0));
    if (failed(updates.returnGradNorm(b, sig, sumOfSquares)))
      return failure();
    std::optional<ShardedBucket> previous;
    for (ShardedBucket &k : clipped) {
      if (failed(step(k)))
        return failure();
      if (previous)
        slices(*previous);
      previous = std::move(k);
    }
    slices(*previous);
  } else {
    advance(nullptr);
  }
  if (failed(result))
    return failure();
  if (slicesPending) {
    b.setInsertionPointAfter(slicesPending->allGather);
    slices(*slicesPending);
  }
  return success();
}
