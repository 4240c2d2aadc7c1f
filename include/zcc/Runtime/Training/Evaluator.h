//===- Evaluator.h - a plan's eval entry over held-out batches ---*- C++ -*-===//
//
// The validation loss of a plan compiled with an eval entry: the forward and
// loss with no gradient and no update (dropout off, BatchNorm on its running
// statistics), on the training entries' parameters and state. The eval
// entry writes no persistent tensor (the loader checks it), so evaluating
// between steps leaves training exactly where it was.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_TRAINING_EVALUATOR_H
#define ZCC_RUNTIME_TRAINING_EVALUATOR_H

#include "zcc/Runtime/Communicator.h"
#include "zcc/Runtime/Data/DataSource.h"
#include "zcc/Runtime/Training/Trainer.h"

#include <memory>

namespace zcc::runtime {

class Evaluator {
public:
  /// The plan's eval entry and its scalar loss; an error naming what the
  /// plan has when it has none.
  static Status create(Session &session, std::unique_ptr<Evaluator> &out);

  /// The mean loss over batches 0 .. batches-1 of `data` (the same
  /// held-out batches every time). With `communicator`, every rank runs
  /// it on its own share and the loss is the ranks' mean.
  Status evaluate(const DataSource &data, int64_t batches,
                  Communicator *communicator, double &loss);
  /// The same, batch b's inputs written by `feed(session, b, user)`.
  Status evaluate(Trainer::FeedFn feed, void *user, int64_t batches,
                  double &loss);

  /// The eval entry: its inputs are what a data source for it feeds.
  int entry() const { return evalEntry; }

private:
  explicit Evaluator(Session &session) : session(session) {}
  template <typename Feed>
  Status run(const Feed &feed, int64_t batches, double &loss);

  Session &session;
  int evalEntry = -1;
  TensorInfo loss;
};

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_TRAINING_EVALUATOR_H
