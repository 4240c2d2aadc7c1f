//===- GradientCheck.h - analytic gradients vs finite differences -*- C++
//-*-===//
//
// The independent reference for every backward rule: a plan compiled with
// `zcc --optimizer none` returns the loss and each parameter's gradient;
// this runs it in f64 precision, perturbs parameter elements by +-eps and
// compares the central difference of the loss with the plan's gradient.
// The step counter is held fixed, so dropout masks do not move.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_GRADIENTCHECK_H
#define ZCC_RUNTIME_GRADIENTCHECK_H

#include "zcc/Runtime/Plan/Plan.h"
#include "zcc/Runtime/Status.h"

#include <memory>
#include <string>
#include <vector>

namespace zcc::runtime {

struct GradientCheckOptions {
  uint64_t seed = 0;
  /// Elements checked per parameter (all of them when it has fewer).
  int64_t samples = 64;
  /// Central-difference step in f64: the truncation error is about
  /// eps^2 |f'''| / 6 and the rounding error about 1e-16 |loss| / eps; at
  /// 1e-5 both are near 1e-10 on the examples (1e-6 and 1e-4 measurably
  /// worse: rounding and truncation respectively).
  double eps = 1e-5;
  /// |fd - g| <= atol + rtol * max(|fd|, |g|), in f64.
  double rtol = 1e-6;
  double atol = 1e-9;
  /// The f32 execution's gradient against the f64 one: f32 rounding
  /// (2^-24 per operation, accumulated over a reduction) bounds it.
  double f32Rtol = 2e-3;
  double f32Atol = 1e-5;
};

struct ParameterCheck {
  std::string name;
  int64_t elements = 0;
  int64_t checked = 0;
  double maxError = 0;    // worst |fd - g| / (atol + rtol * scale), <= 1 ok
  double maxF32Error = 0; // same for f32 vs f64
  double maxAbsGradient = 0;
  bool ok = false;
  std::string worst; // where the worst element is, in words
};

struct GradientCheckResult {
  double loss = 0;
  std::vector<ParameterCheck> parameters;
  bool ok() const;
};

Status checkGradients(std::shared_ptr<const Plan> plan,
                      const GradientCheckOptions &options,
                      GradientCheckResult &out);

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_GRADIENTCHECK_H
