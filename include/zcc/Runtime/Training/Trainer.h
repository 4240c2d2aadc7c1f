//===- Trainer.h - the training protocol over a session ----------*- C++ -*-===//
//
// One optimizer step of a plan: a train_step entry run once, or (plans
// compiled with --accumulate) the microbatch entry run K times, each on its
// own batch, then the apply entry. The loss of a step is the mean of its
// microbatches' losses. zrun, the C API and the bindings train through it.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_TRAINER_H
#define ZCC_RUNTIME_TRAINER_H

#include "zcc/Runtime/Data/DataSource.h"
#include "zcc/Runtime/Session/Session.h"

#include <memory>

namespace zcc::runtime {

class Trainer {
public:
  /// Finds the step's entries and its scalar loss. `microbatches` > 1 needs
  /// a plan compiled with --accumulate.
  static Status create(Session &session, int64_t microbatches,
                       std::unique_ptr<Trainer> &out);

  /// One optimizer step; each microbatch's inputs come from `data`, batch
  /// numbers counting on from the last step. `loss` is the step's loss.
  /// With `check`, every entry runs checked (Session::runChecked) and
  /// `check` gets the step's first launch that wrote a NaN or an infinity
  /// (or the first entry that began with one).
  Status step(const DataSource &data, double &loss,
              NonFiniteFinding *check = nullptr);

  /// The same, each microbatch's inputs written by `feed(session, batch,
  /// user)` (the C API's callback); an error from it ends the step before
  /// that microbatch runs, and is returned.
  using FeedFn = Status (*)(Session &session, int64_t batch, void *user);
  Status step(FeedFn feed, void *user, double &loss,
              NonFiniteFinding *check = nullptr);

  Session &session() const { return owner; }
  /// The entry that reads the data (train_step or microbatch).
  int entry() const { return dataEntry; }
  /// The entry that applies the accumulated update once a step, or -1
  /// (the train_step entry does it).
  int applyEntry() const { return apply; }
  /// Batches per step.
  int64_t microbatches() const { return perStep; }
  /// The batch number the next step's first microbatch reads: the data
  /// position a run's checkpoint records, set again to resume it.
  int64_t nextBatchNumber() const { return nextBatch; }
  void setNextBatchNumber(int64_t batch) { nextBatch = batch; }
  /// Optimizer steps run, counting those before a resume.
  int64_t stepsDone() const { return nextBatch / perStep; }

  /// A tensor of the step by name: the data entry's, else the apply
  /// entry's (an output of the update, as `grad_norm` with clipping).
  Status findTensor(std::string_view name, TensorInfo &out) const;

private:
  Trainer(Session &session) : owner(session) {}
  template <typename Feed>
  Status run(const Feed &feed, double &loss, NonFiniteFinding *check);
  Status runEntry(int entry, NonFiniteFinding *check);

  Session &owner;
  int dataEntry = -1, apply = -1;
  int64_t perStep = 1, nextBatch = 0;
  TensorInfo loss;
};

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_TRAINER_H
