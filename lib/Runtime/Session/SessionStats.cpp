//===- SessionStats.cpp - what a session ran and allocated, as JSON -------===//

#include "Session/SessionImpl.h"

#include <nlohmann/json.hpp>

#include <algorithm>

using namespace zcc::runtime;

SessionStats Session::stats() const {
  const Plan &p = *impl->plan;
  const Executor &executor = *impl->executor;
  SessionStats s;
  s.arenaCapacity = executor.arenaCapacity();
  s.arenaSize = p.arenaSize;
  for (const Entry &e : p.entries) {
    s.lowerBound = std::max(s.lowerBound, e.lowerBound);
    s.noReuseSize = std::max(s.noReuseSize, e.noReuseSize);
    s.inputSize = std::max(s.inputSize, e.inputSize);
    s.outputSize = std::max(s.outputSize, e.outputSize);
  }
  s.persistentSize = p.persistentSize;
  s.constantSize = p.constantSize;
  s.stepsRun = impl->stepsRun;
  s.launchesRun = impl->launchesRun;
  for (size_t i = 0; i < p.entries.size(); ++i)
    s.entryRuns.push_back(
        {p.entries[i].name, p.entries[i].kind, impl->entries[i].runs});
  s.microbatchesSinceApply = impl->microbatchesSinceApply;
  s.allocationsAtLoad = impl->allocationsAtLoad;
  s.allocationsAfterLoad = executor.allocations() - impl->allocationsAtLoad;
  s.bytesAllocated = executor.bytesAllocated();
  s.deviceBytes = executor.deviceBytes();
  s.hostIssueSeconds = executor.issueSeconds();
  s.deviceName = executor.deviceName();
  return s;
}

uint64_t zcc::runtime::runsOf(const SessionStats &stats, EntryKind kind) {
  uint64_t runs = 0;
  for (const EntryRuns &e : stats.entryRuns)
    if (e.kind == kind)
      runs += e.runs;
  return runs;
}

std::string zcc::runtime::sessionStatsJson(const SessionStats &s) {
  using json = nlohmann::ordered_json;
  json entries = json::array();
  for (const EntryRuns &e : s.entryRuns)
    entries.push_back(
        {{"name", e.name}, {"kind", entryKindName(e.kind)}, {"runs", e.runs}});
  json runsByKind = json::object();
  for (const auto &kind : kEntryKindNames)
    runsByKind[kind.name] = runsOf(s, kind.value);
  json out = {{"schema", "zcc.stats/v1"},
              {"device", s.deviceName},
              {"arena_capacity_bytes", s.arenaCapacity},
              {"planned_peak_bytes", s.arenaSize},
              {"lower_bound_bytes", s.lowerBound},
              {"no_reuse_bytes", s.noReuseSize},
              {"region_bytes",
               {{"arena", s.arenaCapacity},
                {"persistent", s.persistentSize},
                {"input", s.inputSize},
                {"output", s.outputSize},
                {"constant", s.constantSize}}},
              {"allocations_at_load", s.allocationsAtLoad},
              {"allocations_after_load", s.allocationsAfterLoad},
              {"bytes_allocated", s.bytesAllocated},
              {"device_bytes", s.deviceBytes},
              {"entries_run", s.stepsRun},
              {"launches_run", s.launchesRun},
              {"runs_by_kind", std::move(runsByKind)},
              {"runs_by_entry", std::move(entries)},
              {"microbatches_since_apply", s.microbatchesSinceApply},
              {"host_issue_seconds", s.hostIssueSeconds}};
  return out.dump(2) + "\n";
}
