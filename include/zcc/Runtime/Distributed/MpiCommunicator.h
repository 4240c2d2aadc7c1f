//===- MpiCommunicator.h - a data-parallel job over MPI ---------*- C++ -*-===//
//
// The Communicator of a job started by `mpirun -np N zrun ...`: MPI's
// collectives on a duplicate of MPI_COMM_WORLD (docs/distributed.md). Each
// collective is issued non-blocking (a step's run on while the kernels
// compute) and waited for with a deadline, so a rank that hangs or dies
// cannot stall the others silently: past the deadline a rank asks every
// other where it is, waits a short grace for the answers, names the ranks
// that did not answer (or that are elsewhere), and ends the job
// (MPI_Abort).
//
// A separate library (ZCCRuntimeMPI): the runtime itself links no MPI.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_DISTRIBUTED_MPICOMMUNICATOR_H
#define ZCC_RUNTIME_DISTRIBUTED_MPICOMMUNICATOR_H

#include "zcc/Runtime/Communicator.h"

#include <memory>
#include <string>
#include <vector>

namespace zcc::runtime {

class MpiCommunicator final : public Communicator {
public:
  struct Options {
    /// A collective not complete after this long ends the job.
    double timeoutSeconds = 300;
    /// How long a rank that timed out waits for the others' answers.
    double graceSeconds = 5;
  };

  /// Whether an MPI launcher (mpirun, mpiexec) started this process: its
  /// environment names the job's size.
  static bool launchedByMpi();

  /// Initializes MPI (unless the program already did) and joins the job.
  static Status create(const Options &options,
                       std::shared_ptr<MpiCommunicator> &out);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int localRank() const override { return localRank_; }
  int localSize() const override { return localSize_; }
  uint64_t start(const CollectiveCall &call) override;
  void finish(uint64_t ticket) override;
  void progress() override;
  void await(const std::function<bool()> &done, const char *what) override;
  void broadcast(void *data, uint64_t bytes) override;
  uint64_t collectives() const override { return sequence; }
  double secondsBlocked() const override { return blocked; }
  std::string describe() const override;

  /// The step the job is in, named when a collective times out (set every
  /// step: a number, no allocation).
  void setStep(int64_t value) override { step = value; }

  /// Prints `message` as this rank's error and ends every rank of the job:
  /// for an error on one rank, which would leave the others waiting.
  [[noreturn]] void abortJob(const std::string &message, int code = 1);

private:
  MpiCommunicator() = default;
  /// Waits for `count` MPI_Requests at `requests` until the deadline;
  /// `number` is the first one's collective number.
  void wait(void *requests, int count, const char *what, uint64_t number);
  /// Polls `done` until the deadline, answering the other ranks' questions
  /// meanwhile: spins for `spin` seconds, then sleeps between polls so a
  /// waiting rank leaves the core to the others. Past the deadline it
  /// names `what` and collective `number` (0: none of this rank's), and
  /// ends the job.
  void poll(const std::function<bool()> &done, double spin, const char *what,
            uint64_t number);
  void serviceControl();
  /// `count` as MPI's int, or the job ends naming `what`.
  int shardCount(uint64_t count, const char *what);
  [[noreturn]] void timedOut(const char *what, uint64_t number);

  Options options;
  /// MPI_Comm handles, as integers or pointers depending on the MPI.
  struct Handles;
  std::unique_ptr<Handles> handles;
  int rank_ = 0, size_ = 1;
  int localRank_ = 0, localSize_ = 1; // among the ranks on this host
  bool initializedHere = false;
  /// Collectives started by this rank: the number of the one waited for.
  uint64_t sequence = 0;
  /// Per rank, where it last said it was (collective -1: no word).
  struct Word {
    int64_t collective = -1, step = -1;
  };
  std::vector<Word> heard;
  int64_t step = -1; // -1: not in a step (load, checkpoints)
  double blocked = 0; // seconds in finish()
};

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_DISTRIBUTED_MPICOMMUNICATOR_H
