//===- SessionImpl.h - the session's state, for its parts -------*- C++ -*-===//
//
// Session::Impl, shared by the session's files: Session.cpp (tensors, runs),
// Checkpoint.cpp and SessionStats.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_RUNTIME_SESSION_SESSIONIMPL_H
#define ZCC_LIB_RUNTIME_SESSION_SESSIONIMPL_H

#include "Executors/Executor.h"
#include "zcc/Runtime/Session/Session.h"

#include <memory>
#include <vector>

namespace zcc::runtime {

struct EntryState {
  /// Host addresses of the entry's input, output and persistent buffers.
  std::vector<uint8_t *> bufferAddress;
  int stepTensor = -1;
  int64_t steps = 0;
  uint64_t runs = 0; // not reset: what ran in this session
};

struct Session::Impl {
  std::shared_ptr<const Plan> plan;
  SessionOptions options;
  /// Bytes per byte of the plan: 2 in f64 precision (float elements double).
  uint64_t scale = 1;
  std::unique_ptr<Executor> executor;
  std::vector<EntryState> entries;
  uint64_t allocationsAtLoad = 0;
  uint64_t stepsRun = 0, launchesRun = 0, microbatchesSinceApply = 0;
  /// Per persistent tensor: initialized `given` and not written since.
  std::vector<char> awaitingValue;
  size_t awaiting = 0;

  void markWritten(size_t persistent) {
    if (awaitingValue[persistent]) {
      awaitingValue[persistent] = 0;
      --awaiting;
    }
  }

  bool wide() const { return options.precision == Precision::F64; }
  uint8_t *persistentData(const PersistentTensor &t) const {
    return executor->hostRegions().persistent + t.offset * scale;
  }
};

} // namespace zcc::runtime

#endif // ZCC_LIB_RUNTIME_SESSION_SESSIONIMPL_H
