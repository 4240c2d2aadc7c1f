//===- TrainingLoop.cpp - steps of a trainer, reported --------------------===//

#include "zcc/Runtime/Training/TrainingLoop.h"

#include "zcc/Runtime/Plan/PlanFile.h"
#include "zcc/Runtime/Session/Session.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

using namespace zcc::runtime;

namespace {

/// Replays and checks a step whose loss or gradient norm was not finite
/// (LoopOptions::restore): the runs are deterministic, so the state after
/// the step before it is the last good state run forward again.
class NonFiniteReplay {
public:
  NonFiniteReplay(Session &session, Trainer &trainer, const DataSource &data,
                  Communicator *communicator, const LoopOptions &options)
      : session(session), trainer(trainer), data(data),
        communicator(communicator), options(options) {}

  /// Where a skipped step left the run: its data position and step
  /// counters moved on, its state did not.
  struct Position {
    int64_t batch = 0;
    std::vector<int64_t> counters;
  };
  Position position() const {
    Position p;
    p.batch = trainer.nextBatchNumber();
    for (size_t e = 0; e < session.plan().entries.size(); ++e)
      p.counters.push_back(session.stepCount(static_cast<int>(e)));
    return p;
  }
  void moveTo(const Position &p) {
    trainer.setNextBatchNumber(p.batch);
    for (size_t e = 0; e < p.counters.size(); ++e)
      session.setStepCount(static_cast<int>(e), p.counters[e]);
  }

  /// Skips step `step`, which left the run at `after` (the state after
  /// step - 1 restored by the caller); a replay through it skips it again.
  void skip(int64_t step, const Position &after) {
    moveTo(after);
    skipped[step] = after;
  }

  /// The state after step `to`: the newest good state at or before it,
  /// then the steps after it run again (the skipped ones skipped again).
  Status replayTo(int64_t to) {
    int64_t at = 0;
    ZRT_RETURN_IF_ERROR(options.restore(to, at));
    for (int64_t s = at + 1; s <= to; ++s) {
      if (auto it = skipped.find(s); it != skipped.end()) {
        moveTo(it->second);
        continue;
      }
      if (communicator)
        communicator->setStep(s);
      double loss = 0;
      ZRT_RETURN_IF_ERROR(trainer.step(data, loss));
    }
    return Status::ok();
  }

  /// Step `step` replayed and checked: the first op writing a NaN (or an
  /// infinity) in words. When the step began with non-finite state, the
  /// step before it wrote it (its update): that one is checked instead. In
  /// a job, `speaks` on the lowest rank whose own op (not a collective
  /// bringing another rank's) wrote it; the others' text names that rank.
  Status diagnose(int64_t step, std::string &text, bool &speaks) {
    speaks = true;
    NonFiniteFinding finding;
    ZRT_RETURN_IF_ERROR(replayTo(step - 1));
    ZRT_RETURN_IF_ERROR(checkStep(step, finding));
    // Non-finite state (not a fed batch) was written by an earlier step.
    double began = 0;
    for (const TensorRange &r : finding.before) {
      const Entry &e = session.plan().entries[finding.entry];
      if (e.buffers[e.tensors[r.tensor].buffer].region == Region::Persistent)
        began = 1;
    }
    if (communicator) // every rank replays the same steps
      communicator->allReduce(&began, 1, CollectiveType::F64, false);
    int64_t checked = step;
    std::string prefix;
    if (began > 0 && step > 1 && !skipped.count(step - 1)) {
      prefix = "replayed, step " + std::to_string(step) + ": " +
               describeNonFinite(session.plan(), finding) + "\n";
      checked = step - 1;
      ZRT_RETURN_IF_ERROR(replayTo(step - 2));
      ZRT_RETURN_IF_ERROR(checkStep(checked, finding));
    }
    text = prefix + "replayed" +
           (session.options().device == DeviceKind::Cpu
                ? ""
                : " on the CPU executor") +
           ", step " + std::to_string(checked) + ": " +
           describeNonFinite(session.plan(), finding);
    if (communicator && communicator->size() > 1) {
      const Plan &plan = session.plan();
      bool own = !finding.before.empty() ||
                 (finding.found &&
                  !kernelCommunicates(plan.entries[finding.entry]
                                          .launches[finding.launch]
                                          .kernel));
      std::vector<double> owners(communicator->size(), 0.0);
      owners[communicator->rank()] = own ? 1 : 0;
      communicator->allReduce(owners.data(), owners.size(),
                              CollectiveType::F64, false);
      int owner = static_cast<int>(
          std::find_if(owners.begin(), owners.end(),
                       [](double v) { return v > 0; }) -
          owners.begin());
      if (owner == communicator->rank() || owner == communicator->size()) {
        text = "rank " + std::to_string(communicator->rank()) + ": " + text;
      } else {
        speaks = false;
        text = "rank " + std::to_string(owner) + " names the op";
      }
    }
    return Status::ok();
  }

private:
  Status checkStep(int64_t step, NonFiniteFinding &finding) {
    if (communicator)
      communicator->setStep(step);
    double loss = 0;
    if (session.options().device == DeviceKind::Cpu)
      return trainer.step(data, loss, &finding);
    return checkOnCpu(finding);
  }

  /// A device session's step checked on a CPU session of the same plan,
  /// from the same state: the CPU's bits are not the device's, but a NaN
  /// of the model's own (a division by zero, a diverging learning rate)
  /// comes back. In a data-parallel job every rank replays its share, the
  /// CPU sessions' collectives going through the job's communicator.
  Status checkOnCpu(NonFiniteFinding &finding) {
    SessionOptions cpu = session.options();
    cpu.device = DeviceKind::Cpu;
    std::unique_ptr<Session> checker;
    ZRT_RETURN_IF_ERROR(Session::create(
        std::make_shared<Plan>(session.plan()), cpu, checker));
    ZRT_RETURN_IF_ERROR(checker->copyStateFrom(session));
    std::unique_ptr<Trainer> replay;
    ZRT_RETURN_IF_ERROR(
        Trainer::create(*checker, trainer.microbatches(), replay));
    replay->setNextBatchNumber(trainer.nextBatchNumber());
    double loss = 0;
    ZRT_RETURN_IF_ERROR(replay->step(data, loss, &finding));
    if (!finding.found && finding.before.empty())
      return makeError(StatusCode::ExecutionError,
                       "the step replayed on the CPU executor stays finite: "
                       "the non-finite value is the ",
                       session.stats().deviceName,
                       "'s own (its kernels, or TF32/bf16 rounding)");
    return Status::ok();
  }

  Session &session;
  Trainer &trainer;
  const DataSource &data;
  Communicator *communicator;
  const LoopOptions &options;
  std::map<int64_t, Position> skipped;
};

} // namespace

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
    every = defaultReportEvery(steps);
  // The scalar outputs a report carries, found once.
  std::vector<std::pair<std::string, TensorInfo>> metrics;
  for (const char *name : {"grad_norm", "lr"}) {
    TensorInfo tensor;
    if (trainer.findTensor(name, tensor).isOk() &&
        tensor.region == Region::Output)
      metrics.emplace_back(name, tensor);
  }
  // The gradient norm, where the plan computes it (clipping), is checked
  // with the loss: a NaN gradient shows in it before it reaches a weight.
  const TensorInfo *gradNorm = nullptr;
  for (const auto &[name, tensor] : metrics)
    if (name == "grad_norm")
      gradNorm = &tensor;
  NonFiniteReplay replay(session, trainer, data, communicator, options);
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
    // The report is of the step as it ran (its outputs), and of the state
    // after it: a skipped step's is the state before it.
    const bool reported = options.trace || step % every == 0 || step == steps;
    StepReport r;
    if (reported) {
      r.step = step;
      r.steps = steps;
      r.loss = loss;
      r.seconds = elapsed();
      r.everyStep = every == 1;
      if (!options.trace)
        for (const auto &[name, tensor] : metrics) {
          double value = 0;
          ZRT_RETURN_IF_ERROR(session.readValues(tensor, &value, 1));
          r.metrics.emplace_back(name, value);
        }
    }
    auto reportStep = [&] {
      if (!reported)
        return;
      if (options.trace)
        r.persistentHash = persistentHash(session);
      report(r);
    };
    double norm = 0;
    if (gradNorm)
      ZRT_RETURN_IF_ERROR(session.readValues(*gradNorm, &norm, 1));
    if (!std::isfinite(loss) || !std::isfinite(norm)) {
      auto word = [](double v) {
        return std::string(std::isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf");
      };
      std::string what = std::isfinite(loss)
                             ? "the gradient norm is " + word(norm)
                             : "the loss is " + word(loss);
      what += " at step " + std::to_string(step);
      if (!options.restore || options.onNonFinite == OnNonFinite::Stop)
        reportStep();
      if (!options.restore)
        return makeError(StatusCode::ExecutionError, what,
                         " (diverged, or poison mode caught a read of a "
                         "dead buffer)");
      // Where the step leaves the run, for a skip: its data and step
      // counters move on; its state does not.
      auto after = replay.position();
      std::string diagnosis;
      bool speaks = true;
      if (Status s = replay.diagnose(step, diagnosis, speaks); !s.isOk())
        diagnosis = "the replay could not check it: " + s.message();
      if (options.onNonFinite == OnNonFinite::Stop)
        return makeError(StatusCode::ExecutionError, what, "; ", diagnosis);
      ZRT_RETURN_IF_ERROR(replay.replayTo(step - 1));
      replay.skip(step, after);
      ++result.stepsSkipped;
      if (options.skipped && speaks)
        options.skipped(step, what + ": skipped (its update is not applied); " +
                                  diagnosis);
    }
    reportStep();
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
