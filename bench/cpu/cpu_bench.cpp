//===- cpu_bench.cpp - the CPU executor's step time -----------------------===//
//
//   zcc-cpu-bench PLAN.zplan [--steps N] [--warmup N] [--threads T]
//
// The same loop as zcc-gpu-bench on the CPU executor: one synthetic batch,
// `warmup` untimed steps (first touches of the arena's pages), then `steps`
// timed ones, on T kernel threads (0: one per core). Prints `ms_per_step MEDIAN mean MEAN allocations_after_load K`.
//
//===----------------------------------------------------------------------===//

#include "../StepBench.h"

#include "zcc/Runtime/Plan/PlanFile.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace zcc::runtime;

int main(int argc, char **argv) {
  std::string path;
  int64_t steps = 20, warmup = 3, threads = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "--steps" || arg == "--warmup" || arg == "--threads") &&
        i + 1 < argc)
      (arg == "--steps" ? steps : arg == "--warmup" ? warmup : threads) =
          std::atoll(argv[++i]);
    else if (path.empty() && !arg.empty() && arg[0] != '-')
      path = arg;
    else
      path.clear(), steps = 0;
  }
  if (path.empty() || steps < 1 || warmup < 0 || threads < 0 ||
      threads > 1024) {
    std::fprintf(stderr, "usage: zcc-cpu-bench PLAN.zplan [--steps N] "
                         "[--warmup N] [--threads T]\n");
    return 2;
  }
  auto fail = [&](const Status &s) {
    std::fprintf(stderr, "zcc-cpu-bench: %s: %s\n", path.c_str(),
                 s.toString().c_str());
    return 1;
  };
  auto plan = std::make_shared<Plan>();
  if (Status s = loadPlanFile(path, *plan); !s.isOk())
    return fail(s);
  std::unique_ptr<Session> session;
  int entry = 0;
  std::vector<double> times;
  SessionOptions options;
  options.threads = static_cast<int>(threads);
  if (Status s = zcc::bench::openStepSession(plan, options, session, entry);
      !s.isOk())
    return fail(s);
  if (Status s = zcc::bench::runSteps(*session, entry, warmup); !s.isOk())
    return fail(s);
  if (Status s = zcc::bench::runSteps(*session, entry, steps, &times);
      !s.isOk())
    return fail(s);
  double median = 0, mean = 0;
  zcc::bench::summarize(times, median, mean);
  std::printf("ms_per_step %.3f mean %.3f allocations_after_load %llu\n",
              median / 1000, mean / 1000,
              static_cast<unsigned long long>(
                  session->stats().allocationsAfterLoad));
  return 0;
}
