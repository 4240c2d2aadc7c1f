//===- Trainer.cpp - the training protocol over a session -----------------===//

#include "zcc/Runtime/Training/Trainer.h"

using namespace zcc::runtime;

Status Trainer::create(Session &session, int64_t microbatches,
                       std::unique_ptr<Trainer> &out) {
  if (microbatches < 1)
    return makeError(StatusCode::InvalidArgument,
                     "microbatches must be at least 1; got ", microbatches);
  std::unique_ptr<Trainer> trainer(new Trainer(session));
  const Plan &plan = session.plan();
  ZRT_RETURN_IF_ERROR(session.findEntry("", trainer->dataEntry));
  if (plan.entries[trainer->dataEntry].kind == EntryKind::Microbatch) {
    for (size_t i = 0; i < plan.entries.size(); ++i)
      if (plan.entries[i].kind == EntryKind::Apply)
        trainer->apply = static_cast<int>(i);
    if (trainer->apply < 0)
      return makeError(StatusCode::InvalidArgument,
                       "the plan has a microbatch entry but no apply entry");
  } else if (microbatches != 1) {
    return makeError(StatusCode::InvalidArgument,
                     "microbatches > 1 needs a plan compiled with "
                     "--accumulate; this plan's entry '",
                     plan.entries[trainer->dataEntry].name,
                     "' is a whole train_step");
  }
  trainer->perStep = microbatches;
  ZRT_RETURN_IF_ERROR(session.findLoss(trainer->dataEntry, trainer->loss));
  out = std::move(trainer);
  return Status::ok();
}

Status Trainer::runEntry(int entry, NonFiniteFinding *check) {
  if (!check)
    return owner.run(entry);
  NonFiniteFinding found;
  ZRT_RETURN_IF_ERROR(owner.runChecked(entry, found));
  // The step's first: an entry that began non-finite, or its first launch.
  bool first = !check->found && check->before.empty() &&
               (found.found || !found.before.empty());
  bool nanAfterInfinity = check->found && !check->nan && found.nan;
  if (first || nanAfterInfinity)
    *check = std::move(found);
  return Status::ok();
}

template <typename Feed>
Status Trainer::run(const Feed &feed, double &lossOut,
                    NonFiniteFinding *check) {
  if (check)
    *check = NonFiniteFinding();
  double sum = 0;
  for (int64_t m = 0; m < perStep; ++m) {
    ZRT_RETURN_IF_ERROR(feed(nextBatch++));
    ZRT_RETURN_IF_ERROR(runEntry(dataEntry, check));
    double value = 0;
    ZRT_RETURN_IF_ERROR(owner.readValues(loss, &value, 1));
    sum += value;
  }
  if (apply >= 0)
    ZRT_RETURN_IF_ERROR(runEntry(apply, check));
  lossOut = sum / static_cast<double>(perStep);
  return Status::ok();
}

Status Trainer::findTensor(std::string_view name, TensorInfo &out) const {
  Status status = owner.findTensor(dataEntry, name, out);
  if (status.isOk() || apply < 0)
    return status;
  if (owner.findTensor(apply, name, out).isOk())
    return Status::ok();
  return status;
}

Status Trainer::step(const DataSource &data, double &loss,
                     NonFiniteFinding *check) {
  return run(
      [&](int64_t batch) {
        data.fill(owner, batch);
        return data.fillStatus();
      },
      loss, check);
}

Status Trainer::step(FeedFn feed, void *user, double &loss,
                     NonFiniteFinding *check) {
  if (!feed)
    return makeError(StatusCode::InvalidArgument, "no feed function");
  return run([&](int64_t batch) { return feed(owner, batch, user); }, loss,
             check);
}
