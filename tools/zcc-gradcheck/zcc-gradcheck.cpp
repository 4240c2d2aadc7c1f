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

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace zcc::runtime;

int main(int argc, char **argv) {
  std::string path;
  GradientCheckOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--eps" && i + 1 < argc) {
      options.eps = std::atof(argv[++i]);
    } else if ((arg == "--seed" || arg == "--samples") && i + 1 < argc) {
      long long v = std::atoll(argv[++i]);
      if (v < 1 && arg == "--samples") {
        std::fprintf(stderr, "zcc-gradcheck: error: --samples must be >= 1\n");
        return 2;
      }
      (arg == "--seed" ? reinterpret_cast<int64_t &>(options.seed)
                       : options.samples) = v;
    } else if (arg[0] != '-' && path.empty()) {
      path = arg;
    } else {
      std::fprintf(stderr, "usage: zcc-gradcheck PLAN.zplan [--seed S] "
                           "[--samples N] [--eps E]\n");
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: zcc-gradcheck PLAN.zplan [--seed S] "
                         "[--samples N] [--eps E]\n");
    return 2;
  }
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
