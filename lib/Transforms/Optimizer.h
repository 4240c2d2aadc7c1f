//===- Optimizer.h - the parts zt-optimizer builds updates from -*- C++ -*-===//
//
// zt-optimizer (Optimizer.cpp) replaces the gradients an entry returns with
// parameter updates. Its parts: the updates themselves, with their
// learning-rate schedule, weight decay and clipping by the global norm
// (OptimizerUpdates.cpp); data parallelism's buckets, the gradients'
// all-reduce and ZeRO-1's sharded steps (OptimizerBuckets.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_TRANSFORMS_OPTIMIZER_H
#define ZCC_LIB_TRANSFORMS_OPTIMIZER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "zcc/Compiler/CompileOptions.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "llvm/Support/GlobPattern.h"

#include <string>
#include <tuple>
#include <utility>

namespace zcc::optimizer {

/// (parameter, gradient) pairs, the gradient of the parameter argument.
using Gradient = std::pair<mlir::BlockArgument, mlir::Value>;

/// A function under construction: its argument list grows as state is
/// added, and its results are collected with their attributes.
struct StepSignature {
  mlir::func::FuncOp fn;
  llvm::SmallVector<mlir::Value> results;
  llvm::SmallVector<mlir::NamedAttrList> resultAttrs;
  /// The learning-rate schedule's factor per parameter element type, made
  /// once per entry (UpdateBuilder::lrFactor).
  llvm::SmallVector<std::pair<mlir::Type, mlir::Value>, 1> lrFactors;

  /// Appends a persistent, zero-initialised argument.
  mlir::BlockArgument addState(zt::ArgRole role, mlir::Type type,
                               llvm::StringRef name);
  mlir::BlockArgument addArgument(mlir::Type type,
                                  const mlir::NamedAttrList &attrs);
  /// Returns `value` as the new content of persistent argument `arg`.
  void addTied(mlir::Value value, mlir::BlockArgument arg);
  /// Replaces the terminator with a return of the collected results.
  void finish(mlir::OpBuilder &builder);
};

/// The optimizer's updates (SGD or AdamW) as its options ask for them.
class UpdateBuilder {
public:
  explicit UpdateBuilder(CompileOptions options) : o(std::move(options)) {}

  /// Reads no-weight-decay's patterns; an error on `where` names a bad one.
  mlir::LogicalResult readPatterns(mlir::Operation *where);
  /// An error on `where` for a pattern that named no parameter (a typo,
  /// not a choice).
  mlir::LogicalResult checkPatternsUsed(mlir::Operation *where) const;

  const CompileOptions &options() const { return o; }

  /// The weight decay of parameter `param` (an argument of its entry):
  /// none below weight-decay-min-rank dimensions or when a no-weight-decay
  /// pattern matches its name (PyTorch's parameter groups, as nanoGPT's
  /// configure_optimizers makes them), else weight-decay.
  double weightDecayOf(mlir::BlockArgument param);

  /// `grad` times grad-scale, negated to maximize (as torch.optim negates
  /// the gradient first; the norm clipping reads is the same).
  mlir::Value scaled(mlir::OpBuilder &b, mlir::Value grad) const;
  /// `partial` (null: none) plus the sum of `grad`'s squares: the next link
  /// of clipping's chain.
  static mlir::Value sumSquares(mlir::OpBuilder &b, mlir::Value grad,
                                mlir::Value partial);
  /// A sum of squares of gradients as that of the scaled gradients: times
  /// grad-scale squared, so that no scaled copy of every gradient has to
  /// live until the norm is known.
  mlir::Value scaledSquares(mlir::OpBuilder &b, mlir::Value sum) const;

  /// An optimizer step's results: the new parameter and each state's new
  /// value with its argument (and name suffix).
  struct Update {
    mlir::Value param;
    llvm::SmallVector<std::tuple<mlir::Value, mlir::BlockArgument, std::string>>
        states;

    /// Returns them tied: the parameter first, then its state.
    void tie(StepSignature &sig, mlir::BlockArgument to) const;
  };

  /// The optimizer's step on `param` (an argument, or a shard of several)
  /// from `grad` (scaled), its state added as arguments named `name` +
  /// ".momentum" or ".exp_avg" / ".exp_avg_sq", with weight decay `decay`;
  /// clipped by the global norm when `sumSquares` (the sum of every
  /// gradient's squares) is given.
  mlir::FailureOr<Update> emitStep(mlir::OpBuilder &b, StepSignature &sig,
                                   mlir::Value param, mlir::Value grad,
                                   const std::string &name, double decay,
                                   mlir::Value sumSquares);
  /// Emits the update of `param` from `grad`: the new parameter and state,
  /// each tied to its argument.
  mlir::LogicalResult emitUpdate(mlir::OpBuilder &b, StepSignature &sig,
                                 mlir::BlockArgument param, mlir::Value grad,
                                 mlir::Value sumSquares = {});
  /// Clipping by the global norm, at `b`: the squares of every gradient
  /// summed in the list's order, then every update, clipped.
  mlir::LogicalResult clippedUpdates(mlir::OpBuilder &b, StepSignature &sig,
                                     llvm::ArrayRef<Gradient> gradients);
  /// Returns the gradients' global norm before clipping (what
  /// clip_grad_norm_ returns, for logging) as the entry's `grad_norm`.
  mlir::LogicalResult returnGradNorm(mlir::OpBuilder &b, StepSignature &sig,
                                     mlir::Value sumOfSquares);

private:
  bool scheduled() const { return o.lrWarmupSteps > 0 || o.lrDecay != "none"; }
  mlir::FailureOr<mlir::Value> lrFactor(StepSignature &sig,
                                        mlir::Type element);
  mlir::FailureOr<mlir::Value> stepCounter(StepSignature &sig);

  CompileOptions o;
  llvm::SmallVector<llvm::GlobPattern> noDecayPatterns;
  llvm::SmallVector<bool> noDecayUsed;
};

/// Replaces each gradient of `gradients` by its mean over the ranks: each
/// bucket one zt.all_reduce, each distinct gradient once. Buckets follow
/// the order the gradients are computed in (`inProductionOrder`), or the
/// list's (an apply entry's accumulators).
void averageOverRanks(const CompileOptions &options, mlir::OpBuilder &b,
                      mlir::func::FuncOp fn,
                      llvm::SmallVectorImpl<Gradient> &gradients,
                      bool inProductionOrder);

/// ZeRO-1's updates of `gradients`' parameters: per bucket, the gradients
/// reduce-scattered, this rank's shard stepped, the shards all-gathered back
/// into the parameters. Each state tensor is added to `shardedStates` for
/// the plan, so checkpoints can hold it per parameter.
mlir::LogicalResult
shardedUpdates(UpdateBuilder &updates, mlir::OpBuilder &b, StepSignature &sig,
               llvm::ArrayRef<Gradient> gradients, bool inProductionOrder,
               llvm::SmallVectorImpl<mlir::Attribute> &shardedStates);

} // namespace zcc::optimizer

#endif // ZCC_LIB_TRANSFORMS_OPTIMIZER_H
