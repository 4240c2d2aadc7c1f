//===- TrainingLoop.h - steps of a trainer, reported -------------*- C++ -*-===//
//
// The loop zrun runs (and the Python and C entry points can): optimizer
// steps of a Trainer on a DataSource, the job's loss (the mean of the ranks'
// in a data-parallel job), the plan's scalar metrics read after each
// reported step, and a stop, with the step named, on a non-finite loss.
// What is printed, and how, is the caller's (`report`).
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_TRAINING_TRAININGLOOP_H
#define ZCC_RUNTIME_TRAINING_TRAININGLOOP_H

#include "zcc/Runtime/Communicator.h"
#include "zcc/Runtime/Data/DataSource.h"
#include "zcc/Runtime/Training/Trainer.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace zcc::runtime {

/// What a step whose loss (or gradient norm) is not finite does.
enum class OnNonFinite {
  Stop,    // an error naming the step and, replayed, the op
  SkipStep // its update undone (as GradScaler skips); training goes on
};

struct LoopOptions {
  int64_t steps = 0;
  /// Report every this many steps, and the last; 0: every step up to 1000
  /// steps, else about a hundred reports.
  int64_t reportEvery = 0;
  /// Report every step with a hash of the persistent region (bit-exact
  /// traces to compare executors and modes).
  bool trace = false;
  /// Called after every `evalEvery`th step and after the last (a
  /// validation loss, zrun --eval-every); its error ends the loop.
  int64_t evalEvery = 0;
  std::function<Status(int64_t step)> evaluate;
  /// The first step's number: a resumed run continues at the step after
  /// its checkpoint's (the trainer and session are already there).
  int64_t firstStep = 1;
  /// Called after every `checkpointEvery`th step, the last, and the step at
  /// which a stop was asked for (zrun --checkpoint-every).
  int64_t checkpointEvery = 0;
  std::function<Status(int64_t step)> checkpoint;
  /// Nonzero (a signal's number, set by its handler): stop at the end of
  /// the step that is running, after its checkpoint. In a data-parallel
  /// job any rank's request stops every rank after the same step.
  const volatile int *stopRequested = nullptr;
  /// A step whose loss, or gradient norm where the plan computes one, is
  /// not finite is replayed from the last good state, checked launch by
  /// launch (Session::runChecked; on the CPU executor, or a CPU session of
  /// the plan for the others), to name the first op writing a NaN or an
  /// infinity. `restore` brings the session and the trainer back to the
  /// newest good state at step `atMost` or before (a checkpoint, or the
  /// start) and says its step; without it a non-finite step is an error
  /// naming the step only.
  OnNonFinite onNonFinite = OnNonFinite::Stop;
  std::function<Status(int64_t atMost, int64_t &step)> restore;
  /// Told of each skipped step, with the diagnosis.
  std::function<void(int64_t step, const std::string &text)> skipped;
};

/// LoopOptions::reportEvery's default for a run of `steps`: every step up
/// to 1000 steps, else about a hundred reports.
inline int64_t defaultReportEvery(int64_t steps) {
  return steps <= 1000 ? 1 : (steps / 100 > 1 ? steps / 100 : 1);
}

/// One reported step.
struct StepReport {
  int64_t step = 0, steps = 0;
  double loss = 0;
  /// The plan's scalar outputs besides the loss, where it has them:
  /// grad_norm (the norm before clipping), lr (a schedule's learning rate).
  std::vector<std::pair<std::string, double>> metrics;
  /// Since the first step began.
  double seconds = 0;
  /// With LoopOptions::trace: persistentHash after the step.
  uint64_t persistentHash = 0;
  /// Whether the report interval is one step (a line per step).
  bool everyStep = false;
};

struct LoopResult {
  int64_t stepsRun = 0; // the last step's number
  /// What stopped the run early (LoopOptions::stopRequested): the signal,
  /// -1 for another rank's, 0 when it ran every step.
  int stoppedBy = 0;
  int64_t stepsSkipped = 0; // OnNonFinite::SkipStep
  double firstLoss = NAN, lastLoss = NAN;
  double seconds = 0;
};

/// Runs `options.steps` steps of `trainer` on `data`, calling `report` for
/// each reported step. With `communicator`, every rank runs it and the loss
/// is the ranks' mean. A non-finite loss is an error naming the step (after
/// its report) and, with `options.restore`, the op; so is any step's
/// failure.
Status runTrainingLoop(Session &session, Trainer &trainer,
                       const DataSource &data, Communicator *communicator,
                       const LoopOptions &options,
                       const std::function<void(const StepReport &)> &report,
                       LoopResult &result);

/// A hash of every persistent tensor's bytes (FNV-1a): equal after equal
/// steps, bit for bit.
uint64_t persistentHash(const Session &session);

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_TRAINING_TRAININGLOOP_H
