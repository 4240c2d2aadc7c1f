//===- mpi_await.cpp - MpiCommunicator::await under mpirun ----------------===//
//
// The wait a CUDA step with NCCL collectives ends with, without a GPU: each
// rank of `mpirun -np 2 zcc-mpi-await MODE` awaits a condition standing for
// its device's step, with a 2 s deadline.
//   done  both ranks' steps end after a while: await returns, exit 0;
//   hang  rank 1 stops answering (it sleeps): rank 0 names it and ends the
//         job;
//   steps both wait forever, rank r in step 5 + r: the one that times out
//         names the other's step.
//
//===----------------------------------------------------------------------===//

#include "zcc/Runtime/Distributed/MpiCommunicator.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

using namespace zcc::runtime;

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (std::strcmp(mode, "done") && std::strcmp(mode, "hang") &&
      std::strcmp(mode, "steps")) {
    std::fprintf(stderr, "usage: zcc-mpi-await done|hang|steps\n");
    return 2;
  }
  MpiCommunicator::Options options;
  options.timeoutSeconds = 2;
  options.graceSeconds = 2;
  std::shared_ptr<MpiCommunicator> job;
  if (Status s = MpiCommunicator::create(options, job); !s.isOk()) {
    std::fprintf(stderr, "%s\n", s.toString().c_str());
    return 1;
  }
  int rank = job->rank();
  job->setStep(5 + rank);
  auto start = std::chrono::steady_clock::now();
  if (!std::strcmp(mode, "done")) {
    // Ends within the deadline.
    job->await(
        [&] {
          return std::chrono::steady_clock::now() - start >
                 std::chrono::milliseconds(500);
        },
        "a device step");
    std::printf("rank %d: the step ended\n", rank);
    return 0;
  }
  if (!std::strcmp(mode, "hang") && rank == 1)
    std::this_thread::sleep_for(std::chrono::seconds(120));
  job->await([] { return false; }, "a device step");
  std::printf("rank %d: await returned from a step that never ends\n", rank);
  return 0;
}
