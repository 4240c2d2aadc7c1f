//===- planner_bench.cpp - every planner algorithm on every instance ------===//
//
// Prints markdown tables and writes them to --out. First, every algorithm on
// every instance (buffers, lower bound, arena, ratio, proven optimal,
// producing heuristic, time): the real lifetime sets in --data (MiniMalloc
// CSV) and generated rectangle instances whose optimum is known to equal the
// lower bound. Then a sweep: `exact` and `auto` on 20 rectangle instances per
// size, how many each solves at the optimum within --sweep-limit seconds
// each, and how fast. Every plan is checked.
//
// With --challenging DIR instead: MiniMalloc's hard instances, each solved
// at 1,048,576 bytes by `auto` and `exact` (--time-limit each), then
// minimised by `auto` for --minimize-limit seconds from its heuristic start:
// when it first fits in 1,048,576, the smallest arena reached, and the
// bound below which every arena was proven infeasible.
//
//===----------------------------------------------------------------------===//

#include "zcc/Planner/Algorithms.h"
#include "zcc/Planner/CsvFormat.h"
#include "zcc/Planner/Generators.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace zcc::planner;

struct Instance {
  std::string name;
  Problem problem;
};

/// The CSVs in `dir`, by file name. False (after saying why) on a bad file.
bool readInstances(const std::string &dir, std::vector<Instance> &instances) {
  std::vector<std::filesystem::path> files;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".csv")
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto &path : files) {
    std::ifstream in(path);
    CsvProblem csv;
    std::string error;
    if (!readProblemCsv(in, csv, error)) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), error.c_str());
      return false;
    }
    instances.push_back({path.filename().string(), std::move(csv.problem)});
  }
  return true;
}

/// `run`, or nullopt after reporting an invalid plan.
std::optional<CheckedRun> checkedRun(const char *algorithm,
                                     const Instance &instance,
                                     const PlanOptions &options) {
  CheckedRun run =
      runChecked(*findPlannerAlgorithm(algorithm), instance.problem, options);
  if (!run.violation.empty()) {
    std::fprintf(stderr, "%s / %s: INVALID PLAN: %s\n", instance.name.c_str(),
                 algorithm, run.violation.c_str());
    return std::nullopt;
  }
  return run;
}

/// MiniMalloc's solver on these instances, from ../shared/bench/planner/
/// README.md: built from source and run on a machine of this project's kind
/// at 1,048,576 bytes (not run by this benchmark).
double miniMallocSeconds(const std::string &name) {
  const char *letters = "ABCDEFGHIJK";
  const double seconds[] = {5.71, 2.99, 0.61, 2.11, 3.14, 5.09,
                            1.01, 2.09, 2.71, 0.78, 0.58};
  for (int i = 0; letters[i]; ++i)
    if (name.size() > 1 && name[0] == letters[i] && name[1] == '.')
      return seconds[i];
  return 0;
}

int runChallenging(const std::string &dir, double timeLimit,
                   double minimizeLimit, const std::string &outPath) {
  std::vector<Instance> instances;
  if (!readInstances(dir, instances))
    return 2;
  const int64_t capacity = 1 << 20;
  std::ostringstream table;
  char header[1024];
  std::snprintf(
      header, sizeof(header),
      "| instance | buffers | lower bound | auto at 1,048,576 (s) | exact "
      "at 1,048,576 (s) | MiniMalloc reference (s) | minimize: start | fits "
      "1,048,576 after (s) | smallest in %g s | ratio | proven bound |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
      minimizeLimit);
  table << header;
  std::fputs(header, stdout);
  for (const Instance &instance : instances) {
    std::string atCapacity[2];
    for (int k = 0; k < 2; ++k) {
      PlanOptions options;
      options.capacity = capacity;
      options.timeLimitSeconds = timeLimit;
      std::optional<CheckedRun> run =
          checkedRun(k == 0 ? "auto" : "exact", instance, options);
      if (!run)
        return 3;
      char cell[64];
      std::snprintf(cell, sizeof(cell), "%.2f", run->seconds);
      atCapacity[k] = run->outcome.found ? cell : "not solved";
    }
    PlanOptions options;
    options.timeLimitSeconds = minimizeLimit;
    std::optional<CheckedRun> run = checkedRun("auto", instance, options);
    if (!run)
      return 3;
    const PlanOutcome &outcome = run->outcome;
    std::string fits = "-";
    for (const PlanOutcome::Improvement &step : outcome.improvements)
      if (step.arenaSize <= capacity) {
        char cell[64];
        std::snprintf(cell, sizeof(cell), "%.2f", step.seconds);
        fits = cell;
        break;
      }
    char row[1024];
    std::snprintf(
        row, sizeof(row),
        "| %s | %zu | %lld | %s | %s | %.2f | %lld (%s) | %s | %lld%s | %.4f "
        "| %lld |\n",
        instance.name.c_str(), instance.problem.buffers.size(),
        static_cast<long long>(outcome.lowerBound), atCapacity[0].c_str(),
        atCapacity[1].c_str(), miniMallocSeconds(instance.name),
        static_cast<long long>(outcome.improvements.front().arenaSize),
        outcome.improvements.front().producedBy.c_str(), fits.c_str(),
        static_cast<long long>(outcome.plan.arenaSize),
        outcome.optimal ? " (optimal)" : "",
        static_cast<double>(outcome.plan.arenaSize) / outcome.lowerBound,
        static_cast<long long>(outcome.provenBound));
    std::fputs(row, stdout);
    std::fflush(stdout);
    table << row;
  }
  if (!outPath.empty()) {
    std::ofstream out(outPath);
    out << table.str();
  }
  return 0;
}

int main(int argc, char **argv) {
  std::string dataDir, outPath, challengingDir;
  double timeLimit = 10.0, sweepLimit = 5.0, minimizeLimit = 30.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--data")
      dataDir = argv[i + 1];
    else if (flag == "--out")
      outPath = argv[i + 1];
    else if (flag == "--time-limit")
      timeLimit = std::stod(argv[i + 1]);
    else if (flag == "--sweep-limit")
      sweepLimit = std::stod(argv[i + 1]);
    else if (flag == "--challenging")
      challengingDir = argv[i + 1];
    else if (flag == "--minimize-limit")
      minimizeLimit = std::stod(argv[i + 1]);
  }
  if (!challengingDir.empty())
    return runChallenging(challengingDir, timeLimit, minimizeLimit, outPath);

  std::vector<Instance> instances;
  if (!dataDir.empty() && !readInstances(dataDir, instances))
    return 2;
  for (int count : {150, 200, 300, 500})
    for (uint64_t seed : {1, 2, 3})
      instances.push_back(
          {"rect-" + std::to_string(count) + "-s" + std::to_string(seed),
           generateRectangleProblem(seed, count, 1 << 20, 1000)});

  std::ostringstream table;
  table << "| instance | buffers | lower bound | algorithm | arena | ratio | "
           "optimal | produced by | time (s) |\n"
           "|---|---:|---:|---|---:|---:|---|---|---:|\n";
  std::fputs(table.str().c_str(), stdout);
  for (const Instance &instance : instances) {
    for (const PlannerAlgorithm &algorithm : plannerAlgorithms()) {
      PlanOptions options;
      options.timeLimitSeconds = timeLimit;
      CheckedRun run = runChecked(algorithm, instance.problem, options);
      if (!run.violation.empty()) {
        std::fprintf(stderr, "%s / %s: INVALID PLAN: %s\n",
                     instance.name.c_str(), algorithm.name,
                     run.violation.c_str());
        return 3;
      }
      const PlanOutcome &outcome = run.outcome;
      int64_t bound = outcome.lowerBound;
      char row[512];
      std::snprintf(row, sizeof(row),
                    "| %s | %zu | %lld | %s | %lld | %.4f | %s | %s | %.3f |\n",
                    instance.name.c_str(), instance.problem.buffers.size(),
                    static_cast<long long>(bound), algorithm.name,
                    static_cast<long long>(outcome.plan.arenaSize),
                    bound ? static_cast<double>(outcome.plan.arenaSize) / bound
                          : 1.0,
                    outcome.optimal ? "proven" : "-",
                    outcome.producedBy.c_str(), run.seconds);
      std::fputs(row, stdout);
      std::fflush(stdout);
      table << row;
    }
  }

  std::ostringstream sweep;
  sweep << "\n| buffers | algorithm | instances | solved at the optimum | "
           "median time (s) | slowest solved (s) |\n"
           "|---:|---|---:|---:|---:|---:|\n";
  std::fputs(sweep.str().c_str(), stdout);
  for (int count : {30, 100, 150, 200, 300, 500})
    for (const char *name : {"exact", "auto"}) {
      const int seeds = 20;
      int solved = 0;
      std::vector<double> times;
      double slowest = 0;
      for (uint64_t seed = 101; seed < 101 + seeds; ++seed) {
        Problem problem = generateRectangleProblem(seed, count, 1 << 20, 1000);
        PlanOptions options;
        options.timeLimitSeconds = sweepLimit;
        CheckedRun run =
            runChecked(*findPlannerAlgorithm(name), problem, options);
        if (!run.violation.empty()) {
          std::fprintf(stderr, "sweep %d/%llu: INVALID PLAN: %s\n", count,
                       static_cast<unsigned long long>(seed),
                       run.violation.c_str());
          return 3;
        }
        times.push_back(run.seconds);
        if (run.outcome.plan.arenaSize == run.outcome.lowerBound) {
          ++solved;
          slowest = std::max(slowest, run.seconds);
        }
      }
      std::sort(times.begin(), times.end());
      char row[256];
      std::snprintf(row, sizeof(row), "| %d | %s | %d | %d | %.3f | %.3f |\n",
                    count, name, seeds, solved, times[times.size() / 2],
                    slowest);
      std::fputs(row, stdout);
      std::fflush(stdout);
      sweep << row;
    }
  table << sweep.str();

  if (!outPath.empty()) {
    std::ofstream out(outPath);
    out << table.str();
  }
  return 0;
}
