//===- RunCheckpoints.h - a run's periodic checkpoints, and resume -*- C++ -*-===//
//
// A directory of checkpoints of one training run (zrun --checkpoint-dir):
// step-NNNNNNNNN.safetensors files, each the session's persistent tensors and
// step counters (Session::saveCheckpoint) with the run's position in its
// metadata, and manifest.json, rewritten last, listing the newest `keep` of
// them with their sizes and CRC-32s. Every file is written to a temporary
// name, flushed and renamed, so a kill at any moment leaves the previous
// checkpoints and a manifest naming only complete ones. Resume takes the
// newest listed checkpoint whose bytes verify, saying why it passed over
// any newer one (docs/runtime.md, "Checkpoints and resume").
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_TRAINING_RUNCHECKPOINTS_H
#define ZCC_RUNTIME_TRAINING_RUNCHECKPOINTS_H

#include "zcc/Runtime/Session/Session.h"
#include "zcc/Runtime/Training/Trainer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zcc::runtime {

/// Where a run is, besides the session's tensors and step counters (which
/// also drive dropout's random numbers and the learning-rate schedule):
/// what it takes to continue it exactly.
struct RunPosition {
  int64_t step = 0;      // optimizer steps done
  int64_t nextBatch = 0; // the batch number the next step reads first
  int64_t microbatches = 1;
  int64_t world = 1; // ranks of the data-parallel job
  uint64_t seed = 0; // initialization and synthetic data
  std::string data;  // the data's spec: "synthetic" or the file
};

/// The data of a run whose batches the caller feeds (the C API's feed
/// function, Python's step arrays): its position is the batch number.
inline constexpr const char *kFedData = "fed by the caller";

/// The first difference between the run a checkpoint holds and the one
/// about to continue it (its data, seed, microbatches or ranks), as an
/// error naming both values; ok when they are the same run.
Status checkSameRun(const RunPosition &saved, const RunPosition &now,
                    const std::string &path);

class RunCheckpoints {
public:
  /// The checkpoints in `dir` (created when missing, with its parents),
  /// keeping the newest `keep` (>= 1) when writing.
  static Status open(const std::string &dir, int64_t keep,
                     std::unique_ptr<RunCheckpoints> &out);

  /// Writes a checkpoint of `session` at `position`, then the manifest,
  /// then removes what the manifest no longer lists (older checkpoints,
  /// files a kill left half written). In a data-parallel job every rank
  /// calls it (ZeRO-1's state is gathered) and rank 0 writes. `path` gets
  /// the file written.
  Status save(const Session &session, const RunPosition &position,
              std::string *path = nullptr);

  /// Loads the newest checkpoint whose size and CRC-32 match the manifest
  /// into `session`, and its position. A newer one that does not verify or
  /// load is passed over with a line in `notes` saying why. `found` is
  /// false (and nothing changes) when the directory holds no checkpoint
  /// yet; an error when it holds some and none of them loads.
  Status resume(Session &session, RunPosition &position, bool &found,
                std::vector<std::string> &notes, std::string *path = nullptr,
                int64_t atMost = INT64_MAX);

  /// The same for a trainer's run, after its steps so far: its session,
  /// its data position, and `data` naming its data.
  Status saveRun(const Trainer &trainer, const std::string &data,
                 std::string *path = nullptr);
  /// Resumes a trainer's run: its session's state and its data position
  /// from the newest valid checkpoint, which must be of the same run (the
  /// same `data`, seed, microbatches and ranks). `stepsDone` is its step,
  /// 0 when the directory holds none (nothing changed).
  /// `atMost`: the newest at that step or before (a replay to it).
  Status resumeRun(Trainer &trainer, const std::string &data,
                   int64_t &stepsDone, std::vector<std::string> &notes,
                   std::string *path = nullptr, int64_t atMost = INT64_MAX);

  const std::string &directory() const { return dir; }

private:
  RunCheckpoints(std::string dir, int64_t keep)
      : dir(std::move(dir)), keep(keep) {}
  std::string dir;
  int64_t keep;
};

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_TRAINING_RUNCHECKPOINTS_H
