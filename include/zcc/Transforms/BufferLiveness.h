//===- BufferLiveness.h - buffers and lifetimes of a training step -*- C++
//-*-===//
//
// The zt-liveness analysis: which buffer holds each value of an entry point,
// of which memory kind, and over which half-open interval [first, last) of
// the op schedule it must hold it. Views (zt.reshape) share their source's
// buffer and extend its interval; tied results live in the persistent slot
// they overwrite. zt-plan-memory places the arena buffers; zt-print-liveness
// prints the result for tests.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_TRANSFORMS_BUFFERLIVENESS_H
#define ZCC_TRANSFORMS_BUFFERLIVENESS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace zcc {

enum class MemoryKind {
  /// Planned: bytes reused across the step by values with disjoint lifetimes.
  Arena,
  /// Parameters, optimizer state, accumulators: the whole run.
  Persistent,
  /// Inputs, labels, the step counter: a fixed slot written before a step.
  Input,
  /// Step results (the loss, returned gradients): a fixed slot read after.
  Output,
  /// Non-splat compile-time tensors: read-only data loaded with the plan.
  Constant,
  /// A part of an arena buffer: one tensor of a gradient bucket
  /// (zt.all_reduce, zt.pack), placed at a fixed offset in its bucket, which
  /// the
  /// planner places as a whole so the bucket is one contiguous range.
  ArenaPart,
};

llvm::StringRef stringifyMemoryKind(MemoryKind kind);

struct LiveBuffer {
  MemoryKind kind = MemoryKind::Arena;
  /// The value whose definition fills the buffer: an op result, or a block
  /// argument for inputs and persistent tensors. Output buffers filled by a
  /// copy at the return have none.
  mlir::Value root;
  int64_t bytes = 0;
  /// Live over schedule positions [first, last). Meaningful for the arena;
  /// the other kinds are live for the whole step (or run).
  int64_t first = 0;
  int64_t last = 0;
  /// Persistent, input and output buffers: the tensor's name.
  std::string name;
  /// Input and persistent buffers: the function argument.
  int argIndex = -1;
  /// Output buffers: the function result.
  int resultIndex = -1;
  /// ArenaPart: the bucket (an Arena buffer) it lies in, and where.
  int bucket = -1;
  int64_t bucketOffset = 0;
  /// A bucket: its parts, in the zt.all_reduce's operand order, each at an
  /// offset aligned to the analysis's alignment; with `dense` (zt.pack's),
  /// end to end with no gap. A bucket has no root: no value is the whole of
  /// it.
  llvm::SmallVector<unsigned> parts;
  bool dense = false;
};

/// Where a function result ends up, and whether it gets there by a copy at
/// the return (when its value could not be computed in place: a view, an
/// argument, a value returned twice, a tied update whose argument is still
/// read afterwards).
struct ResultPlacement {
  unsigned buffer = 0;
  /// The buffer the value is computed in, when a copy is needed.
  std::optional<unsigned> copyFrom;
};

/// A value attention's kernels read or write where it lies in another
/// value's buffer (runtime::kernelTakesView): its first element, in
/// elements from the buffer's start, and its step along each dimension.
struct ViewLayout {
  int64_t offset = 0;
  llvm::SmallVector<int64_t> strides;
};

class BufferLiveness {
public:
  /// Analyses `fn`, an entry point whose body is one block of zt ops.
  /// Emits an error and fails on anything else.
  /// `inPlace`: a result is written over an operand that dies at its op
  /// when both are arena buffers of one size and the kernel may run in
  /// place (runtime::kernelAllowsInPlace).
  /// `plantBug` (tests of the differential driver only) also writes over
  /// operands that are read again later.
  /// `alignment`: where a bucket's parts start (the plan's alignment).
  /// `attentionViews`: slices, reshapes and transposes that only feed
  /// attention's (and rotary's) operands are views of their source (no
  /// copy), a result of either that is transposed is written in the
  /// transposed value's buffer through strides, and attention_grad's
  /// results concatenated (the fused projection's gradient) are written
  /// where the concat puts them (the concat is no copy).
  static mlir::FailureOr<BufferLiveness> compute(mlir::func::FuncOp fn,
                                                 bool inPlace = true,
                                                 bool plantBug = false,
                                                 int64_t alignment = 1,
                                                 bool attentionViews = true);

  /// Buffers in a deterministic order: arguments, then op results in
  /// schedule order, then output slots filled by copies.
  llvm::ArrayRef<LiveBuffer> getBuffers() const { return buffers; }
  unsigned getBufferId(mlir::Value value) const {
    return bufferOf.lookup(value);
  }
  /// Ops in schedule order; the return is at position getSchedule().size().
  llvm::ArrayRef<mlir::Operation *> getSchedule() const { return schedule; }
  int64_t getPosition(mlir::Operation *op) const {
    return positionOf.lookup(op);
  }
  llvm::ArrayRef<ResultPlacement> getResults() const { return results; }
  /// A zt.broadcast_in_dim whose users read its operand through broadcast
  /// strides (element kernels): it has no buffer and no launch; its result
  /// is its operand's buffer, read with stride 0 along repeated dimensions.
  bool isBroadcastView(mlir::Operation *op) const {
    return broadcastViews.contains(op);
  }
  /// A slice, transpose or reshape that has no launch: its result is its
  /// operand's buffer (read through a view, or the very bytes).
  bool isStridedView(mlir::Operation *op) const {
    return stridedViews.contains(op);
  }
  /// Whether `op` has no launch and its result shares its operand's buffer.
  bool isView(mlir::Operation *op) const;
  /// How `value` lies in its buffer when not row-major from its start.
  const ViewLayout *viewLayout(mlir::Value value) const {
    auto found = layouts.find(value);
    return found == layouts.end() ? nullptr : &found->second;
  }
  /// Largest sum of live arena bytes at one position (no alignment): no
  /// arena can be smaller.
  int64_t getPeakArenaBytes() const;

private:
  llvm::SmallVector<LiveBuffer> buffers;
  llvm::DenseMap<mlir::Value, unsigned> bufferOf;
  llvm::SmallVector<mlir::Operation *> schedule;
  llvm::DenseMap<mlir::Operation *, int64_t> positionOf;
  llvm::SmallVector<ResultPlacement> results;
  llvm::DenseSet<mlir::Operation *> broadcastViews;
  llvm::DenseSet<mlir::Operation *> stridedViews;
  llvm::DenseMap<mlir::Value, ViewLayout> layouts;
  /// Attention gradients written into their concat's buffer: each result
  /// -> the concat's result, whose buffer they share.
  llvm::DenseMap<mlir::Value, mlir::Value> concatOf;
  void findAttentionViews();
  void findConcatViews();
};

/// Bytes of a statically shaped tensor type.
int64_t tensorBytes(mlir::Type type);

} // namespace zcc

#endif // ZCC_TRANSFORMS_BUFFERLIVENESS_H
