//===- gpu_bench.cpp - CUDA graph replay against eager launch -------------===//
//
//   zcc-gpu-bench PLAN.zplan... [--steps N] [--warmup N]
//
// For each plan, a CUDA session per launch mode (graph, eager): the same
// synthetic batch every step, `warmup` steps, then `steps` timed steps, each
// waited for (as zrun does). Prints a Markdown table: per-step wall time,
// host time spent issuing a step, device memory in use (cudaMemGetInfo: the
// plan's allocation plus cuBLAS and the graphs), how much that grew over the
// timed steps (it must not), the runtime's allocations after load, and the
// MFU: the plan's model FLOPs a step (recomputation not counted) at the
// median step time over the device's dense peak for the plan's precision
// (zcc::runtime::devicePeakTflops; "-" for a device it does not know).
//
//===----------------------------------------------------------------------===//

#include "../StepBench.h"

#include "zcc/Reports/Progress.h"
#include "zcc/Runtime/Plan/PlanFile.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace zcc::runtime;

namespace {

int64_t usedBytes() {
  size_t freeBytes = 0, totalBytes = 0;
  if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess)
    return -1;
  return static_cast<int64_t>(totalBytes - freeBytes);
}

int fail(const std::string &what, const Status &status) {
  std::fprintf(stderr, "zcc-gpu-bench: %s: %s\n", what.c_str(),
               status.toString().c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> plans;
  int64_t steps = 1000, warmup = 50;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "--steps" || arg == "--warmup") && i + 1 < argc) {
      (arg == "--steps" ? steps : warmup) = std::atoll(argv[++i]);
    } else if (!arg.empty() && arg[0] != '-') {
      plans.push_back(arg);
    } else {
      std::fprintf(stderr,
                   "usage: zcc-gpu-bench PLAN.zplan... [--steps N] "
                   "[--warmup N]\n");
      return 2;
    }
  }
  if (plans.empty() || steps < 1 || warmup < 0) {
    std::fprintf(stderr, "usage: zcc-gpu-bench PLAN.zplan... [--steps N] "
                         "[--warmup N]\n");
    return 2;
  }
  bool header = false;
  for (const std::string &path : plans) {
    auto plan = std::make_shared<Plan>();
    if (Status s = loadPlanFile(path, *plan); !s.isOk())
      return fail(path, s);
    for (LaunchMode mode : {LaunchMode::Graph, LaunchMode::Eager}) {
      SessionOptions options;
      options.device = DeviceKind::Cuda;
      options.launch = mode;
      int64_t before = usedBytes();
      std::unique_ptr<Session> session;
      int entry = 0;
      if (Status s = zcc::bench::openStepSession(plan, options, session, entry);
          !s.isOk())
        return fail(path, s);
      if (Status s = zcc::bench::runSteps(*session, entry, warmup); !s.isOk())
        return fail(path, s);
      if (!header) {
        std::printf("device: %s\n\n", session->stats().deviceName.c_str());
        std::printf("| plan | launch | step mean (us) | step median (us) | "
                    "host issue per step (us) | device memory used (MiB) | "
                    "plan regions (MiB) | growth over the run (bytes) | "
                    "allocations after load | MFU |\n");
        std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
        header = true;
      }
      int64_t start = usedBytes();
      double issuedBefore = session->stats().hostIssueSeconds;
      std::vector<double> times;
      times.reserve(static_cast<size_t>(steps));
      if (Status s = zcc::bench::runSteps(*session, entry, steps, &times);
          !s.isOk())
        return fail(path, s);
      int64_t end = usedBytes();
      SessionStats stats = session->stats();
      double median = 0, mean = 0;
      zcc::bench::summarize(times, median, mean);
      double issue = 1e6 * (stats.hostIssueSeconds - issuedBefore) /
                     static_cast<double>(steps);
      std::string name = path.substr(path.find_last_of('/') + 1);
      double peak = devicePeakTflops(stats.deviceName, *plan, entry);
      double flops = stepWork(*plan, entry, -1, 1).flops;
      std::string mfu = "-";
      if (peak > 0 && median > 0) {
        char text[32];
        std::snprintf(text, sizeof text, "%.1f%%",
                      100.0 * flops / (median * 1e-6) / (peak * 1e12));
        mfu = text;
      }
      std::printf("| %s | %s | %.1f | %.1f | %.1f | %.2f | %.2f | %lld | "
                  "%llu | %s |\n",
                  name.c_str(), launchModeName(mode), mean, median, issue,
                  (end - before) / 1048576.0, stats.deviceBytes / 1048576.0,
                  static_cast<long long>(end - start),
                  static_cast<unsigned long long>(stats.allocationsAfterLoad),
                  mfu.c_str());
    }
  }
  return 0;
}
