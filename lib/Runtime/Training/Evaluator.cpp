//===- Evaluator.cpp - a plan's eval entry over held-out batches ----------===//

#include "zcc/Runtime/Training/Evaluator.h"

using namespace zcc::runtime;

Status Evaluator::create(Session &session, std::unique_ptr<Evaluator> &out) {
  std::unique_ptr<Evaluator> evaluator(new Evaluator(session));
  ZRT_RETURN_IF_ERROR(session.findEntry("eval", evaluator->evalEntry));
  ZRT_RETURN_IF_ERROR(
      session.findLoss(evaluator->evalEntry, evaluator->loss));
  out = std::move(evaluator);
  return Status::ok();
}

template <typename Feed>
Status Evaluator::run(const Feed &feed, int64_t batches, double &lossOut) {
  if (batches < 1)
    return makeError(StatusCode::InvalidArgument,
                     "evaluation needs at least one batch; got ", batches);
  double sum = 0;
  for (int64_t b = 0; b < batches; ++b) {
    ZRT_RETURN_IF_ERROR(feed(b));
    ZRT_RETURN_IF_ERROR(session.run(evalEntry));
    double value = 0;
    ZRT_RETURN_IF_ERROR(session.readValues(loss, &value, 1));
    sum += value;
  }
  lossOut = sum / static_cast<double>(batches);
  return Status::ok();
}

Status Evaluator::evaluate(const DataSource &data, int64_t batches,
                           Communicator *communicator, double &loss) {
  ZRT_RETURN_IF_ERROR(run(
      [&](int64_t batch) {
        data.fill(session, batch);
        return Status::ok();
      },
      batches, loss));
  if (communicator)
    communicator->allReduce(&loss, 1, CollectiveType::F64, true);
  return Status::ok();
}

Status Evaluator::evaluate(Trainer::FeedFn feed, void *user, int64_t batches,
                           double &loss) {
  if (!feed)
    return makeError(StatusCode::InvalidArgument, "no feed function");
  return run([&](int64_t batch) { return feed(session, batch, user); },
             batches, loss);
}
