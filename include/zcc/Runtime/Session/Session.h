//===- Session.h - a loaded plan with its memory, ready to run --*- C++ -*-===//
//
// A Session owns the memory of one plan: one arena, one persistent region,
// the input, output and constant regions, all allocated when it is created
// and never again. run() executes an entry's launch list over that memory;
// it allocates nothing, frees nothing and resets nothing, so the step after
// the millionth is the same as the first. The allocation counter is part of
// the stats so that tests (and users) can see it.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_SESSION_H
#define ZCC_RUNTIME_SESSION_H

#include "zcc/Runtime/Executors/NonFinite.h"
#include "zcc/Runtime/Executors/Options.h"
#include "zcc/Runtime/Plan/Plan.h"
#include "zcc/Runtime/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zcc::runtime {

/// How often one entry of the plan has run.
struct EntryRuns {
  std::string name;
  EntryKind kind = EntryKind::TrainStep;
  uint64_t runs = 0;
};

struct SessionStats {
  uint64_t arenaCapacity = 0; // bytes allocated for arena buffers
  uint64_t arenaSize = 0;     // the plan's arena (largest entry): its peak
  uint64_t lowerBound = 0;    // largest entry's peak of live arena bytes
  uint64_t noReuseSize = 0;   // largest entry's arena with no reuse
  uint64_t persistentSize = 0;
  uint64_t inputSize = 0;
  uint64_t outputSize = 0;
  uint64_t constantSize = 0;
  uint64_t stepsRun = 0; // entry runs, all entries
  uint64_t launchesRun = 0;
  std::vector<EntryRuns> entryRuns; // per entry, in plan order
  /// Microbatch runs since the last apply: a step boundary that is never
  /// driven shows here (it grows without bound).
  uint64_t microbatchesSinceApply = 0;
  uint64_t allocationsAtLoad = 0;
  uint64_t allocationsAfterLoad = 0; // must stay 0
  uint64_t bytesAllocated = 0;
  uint64_t deviceBytes = 0; // device memory (CUDA, emulator)
  double hostIssueSeconds = 0; // CUDA: host time issuing steps, not waiting
  std::string deviceName;   // "cpu", or the device in words
};

/// Runs of every entry of `kind`.
uint64_t runsOf(const SessionStats &stats, EntryKind kind);
/// The stats as versioned JSON (schema "zcc.stats/v1", docs/runtime.md).
std::string sessionStatsJson(const SessionStats &stats);

/// A tensor of an entry as the caller sees it.
struct TensorInfo {
  int entry = -1;
  int tensor = -1;
  const Tensor *desc = nullptr;
  Region region = Region::Arena;
};

class Session {
public:
  static Status create(std::shared_ptr<const Plan> plan,
                       const SessionOptions &options,
                       std::unique_ptr<Session> &out);
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  const Plan &plan() const;
  const SessionOptions &options() const;

  /// Refills every persistent tensor from its initializer (done once by
  /// create with options.seed) and resets the step counters.
  void initialize(uint64_t seed);

  /// The entry called `name` (or the only train_step/microbatch entry when
  /// `name` is empty).
  Status findEntry(std::string_view name, int &out) const;
  /// An input, output or persistent tensor of `entry` by name.
  Status findTensor(int entry, std::string_view name, TensorInfo &out) const;
  /// The entry's scalar loss output (role `loss`).
  Status findLoss(int entry, TensorInfo &out) const;

  /// Copies `bytes` bytes in the tensor's own dtype (f32, i32, i64) into an
  /// input tensor; the size must match exactly.
  Status setInput(int entry, std::string_view name, const void *data,
                  size_t bytes);
  /// Runs one step of `entry`: writes its step counter, then every launch.
  Status run(int entry);
  /// The same step, checking every launch's outputs for NaN and infinity
  /// as it goes: `finding` gets the first launch that wrote one (the step
  /// still runs to its end, so the ranks of a job stay together). Slower;
  /// the CPU executor only (others: Unimplemented).
  Status runChecked(int entry, NonFiniteFinding &finding);
  /// How many times `entry` has run; the value its next step input gets.
  int64_t stepCount(int entry) const;
  /// Sets that count: to replay a step (gradient checks hold it fixed so a
  /// dropout mask stays the same) or to resume a run.
  void setStepCount(int entry, int64_t steps);

  /// Element access in double, whatever the precision: for tests, gradient
  /// checks and checkpoints. `count` must be the tensor's element count.
  Status readValues(const TensorInfo &tensor, double *out, size_t count) const;
  Status writeValues(const TensorInfo &tensor, const double *in, size_t count);
  /// The same from f32 values (weights as they usually come), no copy.
  Status writeValues(const TensorInfo &tensor, const float *in, size_t count);
  /// The raw bytes of a tensor in the session's precision (f64 mode: float
  /// elements are doubles).
  void *data(const TensorInfo &tensor) const;
  /// The bytes of the plan's persistent tensor `index`, in the session's
  /// precision.
  const void *persistentData(size_t index) const;

  /// Persistent tensors in the plan's order, as f32 safetensors, with the
  /// entries' step counters and `metadata` (a run's position: keys must not
  /// start with "zcc.steps") in the header's metadata.
  using Metadata = std::vector<std::pair<std::string, std::string>>;
  Status saveCheckpoint(const std::string &path,
                        const Metadata &metadata = {}) const;
  /// Loads every persistent tensor by name; names, dtypes and shapes must
  /// match the plan, and nothing is changed unless all of them do. The
  /// file's metadata goes to `metadata` when it is not null.
  Status loadCheckpoint(const std::string &path, Metadata *metadata = nullptr);
  /// This session's persistent tensors and step counters made `source`'s:
  /// a session of the same plan and precision (another executor's, or this
  /// rank's of a data-parallel job: ZeRO-1 shards stay the rank's). No
  /// file and no collective.
  Status copyStateFrom(const Session &source);

  SessionStats stats() const;

  struct Impl;

private:
  explicit Session(std::unique_ptr<Impl> impl);
  Status runEntry(int entry, NonFiniteFinding *check);
  template <typename From>
  Status writeAs(const TensorInfo &tensor, const From *in, size_t count);
  std::unique_ptr<Impl> impl;
};

/// What a data-parallel session checks at load, on every rank together:
/// the same plan everywhere (a hash of its bytes), and one that averages
/// its gradients when there are several ranks.
Status checkDataParallel(const Plan &plan, Communicator &comm);

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_SESSION_H
