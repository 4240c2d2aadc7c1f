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
//===----------------------------------------------------------------------===//

#include "zcc/Planner/Algorithms.h"
#include "zcc/Planner/CsvFormat.h"
#include "zcc/Planner/Generators.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace zcc::planner;

struct Instance {
  std::string name;
  Problem problem;
};

int main(int argc, char **argv) {
  std::string dataDir, outPath;
  double timeLimit = 10.0, sweepLimit = 5.0;
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
  }

  std::vector<Instance> instances;
  if (!dataDir.empty()) {
    std::vector<std::filesystem::path> files;
    for (const auto &entry : std::filesystem::directory_iterator(dataDir))
      if (entry.path().extension() == ".csv")
        files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto &path : files) {
      std::ifstream in(path);
      CsvProblem csv;
      std::string error;
      if (!readProblemCsv(in, csv, error)) {
        std::fprintf(stderr, "%s: %s\n", path.c_str(), error.c_str());
        return 2;
      }
      instances.push_back({path.filename().string(), std::move(csv.problem)});
    }
  }
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
