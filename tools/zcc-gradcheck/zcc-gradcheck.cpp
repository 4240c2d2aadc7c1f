//===- zcc-gradcheck.cpp - check a plan's gradients numerically -----------===//
//
//   zcc-gradcheck PLAN.zplan [--seed S] [--samples N] [--eps E]
//
// PLAN must come from `zcc --optimizer none` (gradients as outputs). Prints
// one line per parameter and exits 1 if any gradient disagrees with the
// finite-difference reference (GradientCheck.h).
//
//===----------------------------------------------------------------------===//

#include "zcc/Runtime/Testing/GradientCheck.h"
#include "zcc/Runtime/Plan/PlanFile.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

using namespace zcc::runtime;

int main(int argc, char **argv) {
  std::string path;
  GradientCheckOptions options;
  int64_t seed = static_cast<int64_t>(options.seed);
  CLI::App app("zcc-gradcheck: checks a plan's gradients (zcc --optimizer "
               "none) against finite differences in f64");
  app.add_option("plan", path, "the .zplan")->required();
  app.add_option("--seed", seed, "the inputs' and samples' seed (>= 0)");
  app.add_option("--samples", options.samples,
                 "elements checked per parameter (>= 1)");
  app.add_option("--eps", options.eps, "the finite differences' step (> 0)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  auto usage = [](const std::string &message) {
    std::fprintf(stderr, "zcc-gradcheck: error: %s\n", message.c_str());
    return 2;
  };
  if (seed < 0)
    return usage("--seed must be >= 0, got " + std::to_string(seed));
  if (options.samples < 1)
    return usage("--samples must be >= 1, got " +
                 std::to_string(options.samples));
  if (!(options.eps > 0))
    return usage("--eps must be > 0, got " + std::to_string(options.eps));
  options.seed = static_cast<uint64_t>(seed);
  auto plan = std::make_shared<Plan>();
  if (Status s = loadPlanFile(path, *plan); !s.isOk()) {
    std::fprintf(stderr, "zcc-gradcheck: error: %s\n", s.toString().c_str());
    return 1;
  }
  GradientCheckResult result;
  if (Status s = checkGradients(plan, options, result); !s.isOk()) {
    std::fprintf(stderr, "zcc-gradcheck: error: %s\n", s.toString().c_str());
    return 1;
  }
  std::printf("loss %.12g (f64)\n", result.loss);
  for (const ParameterCheck &p : result.parameters) {
    std::printf("%s %s: %lld of %lld elements, max |grad| %.3g, fd error "
                "%.3g of tolerance, f32 error %.3g of tolerance; worst %s\n",
                p.ok ? "ok  " : "FAIL", p.name.c_str(),
                static_cast<long long>(p.checked),
                static_cast<long long>(p.elements), p.maxAbsGradient,
                p.maxError, p.maxF32Error, p.worst.c_str());
  }
  std::printf("gradient check: %s\n", result.ok() ? "PASS" : "FAIL");
  return result.ok() ? 0 : 1;
}
