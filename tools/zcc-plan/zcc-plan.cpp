//===- zcc-plan.cpp - plan buffer offsets from a MiniMalloc CSV -----------===//
//
// Exit codes: 0 planned; 1 no plan within --capacity was found in the time
// limit; 2 bad usage or bad input (message names the line); 3 internal error
// (a plan failed the independent checker: a planner bug, never written out).
//
//===----------------------------------------------------------------------===//

#include "zcc/Planner/Algorithms.h"
#include "zcc/Planner/CsvFormat.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

using namespace zcc::planner;

namespace {

const char *kUsage =
    "usage: zcc-plan IN.csv [-o OUT.csv] [--algorithm NAME] [--capacity "
    "BYTES]\n"
    "                [--time-limit SECONDS] [--node-limit NODES] "
    "[--minimize]\n"
    "       zcc-plan --list-algorithms\n"
    "Reads id,lower,upper,size[,alignment] rows (header-named, any order) and\n"
    "writes them with an offset column (to OUT.csv, or stdout). One summary\n"
    "line goes to stdout (stderr when the plan goes to stdout).\n"
    "  --algorithm NAME    default: auto (see --list-algorithms)\n"
    "  --capacity BYTES    exit 1 unless the plan fits in BYTES\n"
    "  --minimize          search for the smallest arena for the whole time\n"
    "                      limit (the default without --capacity) and print\n"
    "                      each improvement and the bound proven on the way\n"
    "  --time-limit SECS   search budget (default 10); when it cuts the "
    "search\n"
    "                      short, the best plan so far is used\n"
    "  --node-limit NODES  search budget in nodes: same plan on every "
    "machine\n"
    "                      (the time limit is then a guard; the summary's\n"
    "                      time_limited=yes says it ended the search first)\n";

int usageError(const std::string &message) {
  std::fprintf(stderr, "zcc-plan: %s\n%s", message.c_str(), kUsage);
  return 2;
}

std::optional<double> parseNumber(const std::string &text) {
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size())
    return std::nullopt;
  return value;
}

} // namespace

int main(int argc, char **argv) {
  std::string inputPath, outputPath,
      algorithmName = plannerAlgorithms()[0].name;
  PlanOptions options;
  bool minimize = false, listAlgorithms = false;
  std::string capacity, timeLimit, nodeLimit;
  CLI::App app("zcc-plan");
  app.set_help_flag(); // the usage text below is the help
  bool help = false;
  app.add_flag("-h,--help", help);
  app.add_flag("--list-algorithms", listAlgorithms);
  app.add_flag("--minimize", minimize);
  app.add_option("-o", outputPath);
  app.add_option("--algorithm", algorithmName);
  app.add_option("--capacity", capacity);
  app.add_option("--time-limit", timeLimit);
  app.add_option("--node-limit", nodeLimit);
  app.add_option("input", inputPath);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return usageError(e.what());
  }
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (listAlgorithms) {
    for (const PlannerAlgorithm &algorithm : plannerAlgorithms())
      std::printf("%-12s %s\n", algorithm.name, algorithm.summary);
    return 0;
  }
  if (!capacity.empty()) {
    std::optional<double> bytes = parseNumber(capacity);
    if (!bytes || *bytes < 0 || *bytes != static_cast<int64_t>(*bytes))
      return usageError("--capacity needs a non-negative integer, got '" +
                        capacity + "'");
    options.capacity = static_cast<int64_t>(*bytes);
  }
  if (!nodeLimit.empty()) {
    std::optional<double> nodes = parseNumber(nodeLimit);
    if (!nodes || !(*nodes >= 1) || *nodes != static_cast<uint64_t>(*nodes))
      return usageError("--node-limit needs a positive integer, got '" +
                        nodeLimit + "'");
    options.nodeLimit = static_cast<uint64_t>(*nodes);
  }
  if (!timeLimit.empty()) {
    std::optional<double> seconds = parseNumber(timeLimit);
    if (!seconds || !(*seconds > 0))
      return usageError("--time-limit needs a positive number, got '" +
                        timeLimit + "'");
    options.timeLimitSeconds = *seconds;
  }
  if (inputPath.empty())
    return usageError("no input file");
  if (minimize && options.capacity)
    return usageError("--minimize and --capacity exclude each other: a "
                      "capacity stops the search at the first plan within it");
  const PlannerAlgorithm *algorithm = findPlannerAlgorithm(algorithmName);
  if (!algorithm) {
    std::string names;
    for (const PlannerAlgorithm &a : plannerAlgorithms())
      names += std::string(names.empty() ? "" : ", ") + a.name;
    return usageError("unknown algorithm '" + algorithmName +
                      "'; available: " + names);
  }

  CsvProblem input;
  std::string error;
  {
    std::ifstream file;
    std::istream *in = &std::cin;
    if (inputPath != "-") {
      file.open(inputPath);
      if (!file) {
        std::fprintf(stderr, "zcc-plan: cannot open '%s'\n", inputPath.c_str());
        return 2;
      }
      in = &file;
    }
    if (!readProblemCsv(*in, input, error)) {
      std::fprintf(stderr, "zcc-plan: %s: %s\n", inputPath.c_str(),
                   error.c_str());
      return 2;
    }
  }

  CheckedRun run = runChecked(*algorithm, input.problem, options);
  if (!run.violation.empty()) {
    std::fprintf(stderr,
                 "zcc-plan: internal error: the %s plan failed the checker: "
                 "%s\n",
                 algorithm->name, run.violation.c_str());
    return 3;
  }
  const PlanOutcome &outcome = run.outcome;
  if (minimize) {
    for (const PlanOutcome::Improvement &step : outcome.improvements)
      std::fprintf(
          stderr, "improved: arena=%lld after %.3fs, %llu nodes (%s)\n",
          static_cast<long long>(step.arenaSize), step.seconds,
          static_cast<unsigned long long>(step.nodes), step.producedBy.c_str());
  }
  int64_t bound = outcome.lowerBound;
  double ratio =
      bound > 0 ? static_cast<double>(outcome.plan.arenaSize) / bound : 1.0;
  char summary[512];
  std::snprintf(summary, sizeof(summary),
                "buffers=%zu lower_bound=%lld arena=%lld ratio=%.4f "
                "optimal=%s algorithm=%s produced_by=%s time=%.3fs "
                "proven_bound=%lld time_limited=%s",
                input.problem.buffers.size(), static_cast<long long>(bound),
                static_cast<long long>(outcome.plan.arenaSize), ratio,
                outcome.optimal ? "proven" : "unknown", algorithm->name,
                outcome.producedBy.c_str(), run.seconds,
                static_cast<long long>(outcome.provenBound),
                outcome.timeLimited ? "yes" : "no");

  if (!outcome.found) {
    if (outcome.provenInfeasible)
      std::fprintf(stderr,
                   "zcc-plan: no plan fits within the capacity of %lld bytes: "
                   "proven infeasible (best: %lld bytes; lower bound: "
                   "%lld)\n%s\n",
                   static_cast<long long>(*options.capacity),
                   static_cast<long long>(outcome.plan.arenaSize),
                   static_cast<long long>(bound), summary);
    else
      std::fprintf(stderr,
                   "zcc-plan: no plan within the capacity of %lld bytes was "
                   "found in the limits (%.3g s%s; best: %lld bytes; lower "
                   "bound: %lld)\n%s\n",
                   static_cast<long long>(*options.capacity),
                   options.timeLimitSeconds,
                   options.nodeLimit ? ", node limit" : "",
                   static_cast<long long>(outcome.plan.arenaSize),
                   static_cast<long long>(bound), summary);
    return 1;
  }

  if (outputPath.empty()) {
    writePlanCsv(std::cout, input, outcome.plan);
    std::cout.flush();
    std::fprintf(stderr, "%s\n", summary);
    return std::cout ? 0 : 2;
  }
  // Write beside the target and rename, so a failed write never leaves a
  // truncated plan where a good one was.
  std::string temporary = outputPath + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    writePlanCsv(out, input, outcome.plan);
    out.flush();
    if (!out) {
      std::remove(temporary.c_str());
      std::fprintf(stderr, "zcc-plan: cannot write '%s'\n", outputPath.c_str());
      return 2;
    }
  }
  if (std::rename(temporary.c_str(), outputPath.c_str()) != 0) {
    std::remove(temporary.c_str());
    std::fprintf(stderr, "zcc-plan: cannot write '%s'\n", outputPath.c_str());
    return 2;
  }
  std::printf("%s\n", summary);
  return 0;
}
