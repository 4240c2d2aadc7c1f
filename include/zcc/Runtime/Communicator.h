//===- Communicator.h - the ranks of a data-parallel job --------*- C++ -*-===//
//
// What a session needs from a distributed engine to run a data-parallel
// plan (docs/distributed.md): its rank and the job's size, the reduction of
// a gradient bucket (zt.all_reduce), and a few collectives at load (the plan
// check, the parameters broadcast). The runtime does not depend on any
// engine: MPI's implementation (MpiCommunicator.h) is a separate library,
// and a session with no communicator is a job of one rank.
//
// Collectives are fatal when they fail: a rank that dies or hangs leaves
// the others nothing to do but stop, so an implementation reports which
// rank and which collective, and ends the job, instead of returning.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_SESSION_COMMUNICATOR_H
#define ZCC_RUNTIME_SESSION_COMMUNICATOR_H

#include "zcc/Runtime/Status.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace zcc::runtime {

/// The element types a bucket holds: f32, or f64 when the CPU executor runs
/// an f32 plan in its f64 reference precision.
enum class CollectiveType { F32, F64 };

/// One collective of a step. AllReduce: `count` elements at `data` become
/// their sum over the ranks (every rank gets the same bits). ReduceScatter
/// (ZeRO-1): `source` (`count` elements times the ranks) summed over the
/// ranks; this rank's `count` elements of the sum, from rank() * count on,
/// go to `data`. AllGather: every rank's `count` elements at `source`, in
/// rank order, into `data`. With `mean` a sum is divided by the ranks.
struct CollectiveCall {
  enum class Kind : uint8_t { AllReduce, ReduceScatter, AllGather };
  Kind kind = Kind::AllReduce;
  const void *source = nullptr;
  void *data = nullptr;
  uint64_t count = 0;
  CollectiveType type = CollectiveType::F32;
  bool mean = false;
};

class Communicator {
public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// This rank's place among the job's ranks on its host, and their number:
  /// a GPU job's rank takes its host's GPU of that number. An engine that
  /// does not know the hosts takes the job to be on one.
  virtual int localRank() const { return rank(); }
  virtual int localSize() const { return size(); }

  /// Begins `call` and returns at once: its bytes belong to the collective
  /// (nothing may write them, nor read `data`) until finish() of the ticket
  /// returns, with the mean divided in. Every rank starts the same calls in
  /// the same order; tickets may be finished in any order. The CPU executor
  /// starts a bucket's reduction when the bucket is complete and finishes
  /// it before the first step that touches it, so the rest of the backward
  /// runs meanwhile.
  virtual uint64_t start(const CollectiveCall &call) = 0;
  virtual void finish(uint64_t ticket) = 0;
  /// Lets started collectives advance (an MPI advances them only inside its
  /// calls); the CPU executor calls it between kernels.
  virtual void progress() {}
  /// Waits until `done()` is true: for a step whose collectives run on a
  /// device (NCCL in a CUDA graph), where a rank that hangs would leave the
  /// others blocked in the device forever. An engine with a deadline
  /// answers the other ranks meanwhile and, past it, names the ranks that
  /// did not come and ends the job, as in finish(). `what` names the wait.
  virtual void await(const std::function<bool()> &done, const char *what);

  /// Blocking forms: start and finish.
  void allReduce(void *data, uint64_t count, CollectiveType type, bool mean) {
    finish(start(
        {CollectiveCall::Kind::AllReduce, nullptr, data, count, type, mean}));
  }
  void reduceScatter(const void *source, void *data, uint64_t count,
                     CollectiveType type, bool mean) {
    finish(start({CollectiveCall::Kind::ReduceScatter, source, data, count,
                  type, mean}));
  }
  void allGather(const void *source, void *data, uint64_t count,
                 CollectiveType type) {
    finish(start(
        {CollectiveCall::Kind::AllGather, source, data, count, type, false}));
  }

  /// Rank 0's `bytes` at `data` replace every other rank's.
  virtual void broadcast(void *data, uint64_t bytes) = 0;
  /// Every rank's `value`, in rank order (an all_gather of one 8-byte
  /// element: bits, no arithmetic).
  std::vector<uint64_t> gather(uint64_t value);
  /// Fails unless every rank gives the same `value`; the message names the
  /// ranks that differ from rank 0, and `what` says what was compared.
  Status checkSame(uint64_t value, const std::string &what);
  /// Collectives run so far (a bucket reduction counts once per call).
  virtual uint64_t collectives() const = 0;
  /// Seconds this rank has spent blocked in finish(): the communication
  /// the computation did not hide.
  virtual double secondsBlocked() const = 0;
  /// "MPI (Open MPI 4.1.4), 2 ranks": for messages and stats.
  virtual std::string describe() const = 0;
  /// The training step the job is in (-1: none), for an engine that names
  /// it when a collective times out; set every step (no allocation).
  virtual void setStep(int64_t) {}

protected:
  /// A finished `call`'s sum divided by size(), when it asks for the mean:
  /// for engines that only sum.
  void divideForMean(const CollectiveCall &call) const;
};

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_SESSION_COMMUNICATOR_H
