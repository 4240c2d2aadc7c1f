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
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace zcc::bench {

/// Writes the parameters whose values come at load (an imported model's,
/// initialized 'given') as a fresh model's would be, from a fixed seed: 1
/// for a vector (a norm's gain), else uniform in [-0.02, 0.02]. A step's
/// time does not depend on them, and a benchmark carries no weights.
inline runtime::Status writeGivenParameters(runtime::Session &session,
                                            int entry) {
  using namespace runtime;
  std::mt19937_64 random(1);
  std::uniform_real_distribution<float> uniform(-0.02f, 0.02f);
  for (const PersistentTensor &p : session.plan().persistent) {
    if (p.init.kind != InitKind::Given)
      continue;
    TensorInfo info;
    ZRT_RETURN_IF_ERROR(session.findTensor(entry, p.name, info));
    std::vector<float> values(static_cast<size_t>(p.type.numElements()));
    for (float &v : values)
      v = p.type.rank() == 1 ? 1.0f : uniform(random);
    ZRT_RETURN_IF_ERROR(session.writeValues(info, values.data(), values.size()));
  }
  return Status::ok();
}

/// A session of `plan` on its training entry, its inputs filled once (and
/// its given parameters: writeGivenParameters).
inline runtime::Status
openStepSession(std::shared_ptr<const runtime::Plan> plan,
                const runtime::SessionOptions &options,
                std::unique_ptr<runtime::Session> &session, int &entry) {
  using namespace runtime;
  ZRT_RETURN_IF_ERROR(Session::create(std::move(plan), options, session));
  ZRT_RETURN_IF_ERROR(session->findEntry("", entry));
  ZRT_RETURN_IF_ERROR(writeGivenParameters(*session, entry));
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
