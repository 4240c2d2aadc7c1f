//===- TrainingLoop.cpp - steps of a trainer, reported --------------------===//

#include "zcc/Runtime/Training/TrainingLoop.h"

#include "zcc/Runtime/Plan/PlanFile.h"
#include "zcc/Runtime/Session/Session.h"

#include <algorithm>
#include <chrono>

using namespace zcc::runtime;

uint64_t zcc::runtime::persistentHash(const Session &session) {
  uint64_t hash = 0xcbf29ce484222325ull;
  const Plan &plan = session.plan();
  size_t scale = session.options().precision == Precision::F64 ? 2 : 1;
  for (size_t i = 0; i < plan.persistent.size(); ++i) {
    size_t bytes = static_cast<size_t>(plan.persistent[i].type.bytes()) * scale;
    hash ^=
        fnv1a64(static_cast<const uint8_t *>(session.persistentData(i)), bytes);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

Status zcc::runtime::runTrainingLoop(
    Session &session, Trainer &trainer, const DataSource &data,
    Communicator *communicator, const LoopOptions &options,
    const std::function<void(const StepReport &)> &report,
    LoopResult &result) {
  const int64_t steps = options.steps;
  int64_t every = options.reportEvery;
  if (every <= 0)
    every = steps <= 1000 ? 1 : std::max<int64_t>(1, steps / 100);
  // The scalar outputs a report carries, found once.
  std::vector<std::pair<std::string, TensorInfo>> metrics;
  for (const char *name : {"grad_norm", "lr"}) {
    TensorInfo tensor;
    if (trainer.findTensor(name, tensor).isOk() &&
        tensor.region == Region::Output)
      metrics.emplace_back(name, tensor);
  }
  result = LoopResult();
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  for (int64_t step = options.firstStep; step <= steps; ++step) {
    double loss = 0;
    if (communicator)
      communicator->setStep(step);
    ZRT_RETURN_IF_ERROR(trainer.step(data, loss));
    // A stop asked for on any rank stops every rank after this step.
    int stop = options.stopRequested ? *options.stopRequested : 0;
    // The job's loss: the mean of the ranks' (each its own share's mean),
    // with the stop request alongside (positive on any rank: positive).
    if (communicator) {
      double shared[2] = {loss, static_cast<double>(stop)};
      communicator->allReduce(shared, options.stopRequested ? 2 : 1,
                              CollectiveType::F64, true);
      loss = shared[0];
      if (shared[1] > 0 && !stop)
        stop = -1; // asked of another rank
    }
    if (step == options.firstStep)
      result.firstLoss = loss;
    result.lastLoss = loss;
    result.stepsRun = step;
    if (options.trace || step % every == 0 || step == steps) {
      StepReport r;
      r.step = step;
      r.steps = steps;
      r.loss = loss;
      r.seconds = elapsed();
      r.everyStep = every == 1;
      if (options.trace)
        r.persistentHash = persistentHash(session);
      else
        for (const auto &[name, tensor] : metrics) {
          double value = 0;
          ZRT_RETURN_IF_ERROR(session.readValues(tensor, &value, 1));
          r.metrics.emplace_back(name, value);
        }
      report(r);
    }
    if (!std::isfinite(loss))
      return makeError(StatusCode::ExecutionError, "the loss is ", loss,
                       " at step ", step,
                       " (diverged, or poison mode caught a read of a dead "
                       "buffer)");
    if (options.evaluate && options.evalEvery > 0 &&
        (step % options.evalEvery == 0 || step == steps))
      ZRT_RETURN_IF_ERROR(options.evaluate(step));
    if (options.checkpoint &&
        ((options.checkpointEvery > 0 && step % options.checkpointEvery == 0) ||
         step == steps || stop))
      ZRT_RETURN_IF_ERROR(options.checkpoint(step));
    if (stop && step < steps) {
      result.stoppedBy = stop;
      break;
    }
  }
  if (communicator)
    communicator->setStep(-1);
  result.seconds = elapsed();
  return Status::ok();
}
