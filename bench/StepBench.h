//===- StepBench.h - the step benchmarks' shared loop -----------*- C++ -*-===//
//
// zcc-gpu-bench and zcc-cpu-bench: a session on one synthetic batch, steps
// run untimed, then timed one by one (each waited for, as zrun does).
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_BENCH_STEPBENCH_H
#define ZCC_BENCH_STEPBENCH_H

#include "zcc/Runtime/Data/DataSource.h"
#include "zcc/Runtime/Session/Session.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

namespace zcc::bench {

/// A session of `plan` on its training entry, its inputs filled once.
inline runtime::Status
openStepSession(std::shared_ptr<const runtime::Plan> plan,
                const runtime::SessionOptions &options,
                std::unique_ptr<runtime::Session> &session, int &entry) {
  using namespace runtime;
  ZRT_RETURN_IF_ERROR(Session::create(std::move(plan), options, session));
  ZRT_RETURN_IF_ERROR(session->findEntry("", entry));
  std::unique_ptr<DataSource> data;
  ZRT_RETURN_IF_ERROR(makeDataSource(*session, entry, "synthetic", 1, data));
  data->fill(*session, 0);
  return Status::ok();
}

/// Runs `steps` steps; with `times`, appends each one's wall time in us.
inline runtime::Status runSteps(runtime::Session &session, int entry,
                                int64_t steps,
                                std::vector<double> *times = nullptr) {
  for (int64_t i = 0; i < steps; ++i) {
    auto start = std::chrono::steady_clock::now();
    ZRT_RETURN_IF_ERROR(session.run(entry));
    if (times)
      times->push_back(std::chrono::duration<double, std::micro>(
                           std::chrono::steady_clock::now() - start)
                           .count());
  }
  return runtime::Status::ok();
}

/// The median and mean of `times` (sorted in place).
inline void summarize(std::vector<double> &times, double &median,
                      double &mean) {
  mean = 0;
  for (double t : times)
    mean += t / static_cast<double>(times.size());
  std::sort(times.begin(), times.end());
  median = times.empty() ? 0 : times[times.size() / 2];
}

} // namespace zcc::bench

#endif // ZCC_BENCH_STEPBENCH_H
