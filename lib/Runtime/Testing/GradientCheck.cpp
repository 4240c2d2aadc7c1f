//===- GradientCheck.cpp - finite-difference gradient checks
//---------------===//

#include "zcc/Runtime/Testing/GradientCheck.h"

#include "zcc/Runtime/Data/DataSource.h"
#include "zcc/Runtime/Session/Session.h"

#include <algorithm>
#include <cmath>
#include <sstream>

using namespace zcc::runtime;

bool GradientCheckResult::ok() const {
  if (parameters.empty())
    return false;
  for (const ParameterCheck &p : parameters)
    if (!p.ok)
      return false;
  return true;
}

namespace {

struct Run {
  std::unique_ptr<Session> session;
  std::unique_ptr<DataSource> data;
  int entry = -1;
  TensorInfo loss;
};

Status makeRun(std::shared_ptr<const Plan> plan, Precision precision,
               uint64_t seed, Run &run) {
  // Planned: the check covers the arena reuse as well as the rules.
  SessionOptions options;
  options.mode = ExecutionMode::Planned;
  options.precision = precision;
  options.seed = seed;
  ZRT_RETURN_IF_ERROR(Session::create(plan, options, run.session));
  ZRT_RETURN_IF_ERROR(run.session->findEntry("", run.entry));
  ZRT_RETURN_IF_ERROR(run.session->findLoss(run.entry, run.loss));
  ZRT_RETURN_IF_ERROR(
      makeDataSource(*run.session, run.entry, "synthetic", seed, run.data));
  run.data->fill(*run.session, 0);
  return Status::ok();
}

Status lossOf(Run &run, double &loss) {
  run.session->setStepCount(run.entry, 0);
  ZRT_RETURN_IF_ERROR(run.session->run(run.entry));
  return run.session->readValues(run.loss, &loss, 1);
}

} // namespace

Status zcc::runtime::checkGradients(std::shared_ptr<const Plan> plan,
                                    const GradientCheckOptions &options,
                                    GradientCheckResult &out) {
  Run wide, narrow;
  ZRT_RETURN_IF_ERROR(makeRun(plan, Precision::F64, options.seed, wide));
  ZRT_RETURN_IF_ERROR(makeRun(plan, Precision::F32, options.seed, narrow));
  ZRT_RETURN_IF_ERROR(lossOf(wide, out.loss));
  double narrowLoss = 0;
  ZRT_RETURN_IF_ERROR(lossOf(narrow, narrowLoss));

  const Entry &e = plan->entries[wide.entry];
  const std::string suffix = ".grad";
  for (size_t t = 0; t < e.tensors.size(); ++t) {
    const Tensor &gradient = e.tensors[t];
    if (gradient.role != TensorRole::Gradient)
      continue;
    if (gradient.name.size() <= suffix.size() ||
        gradient.name.compare(gradient.name.size() - suffix.size(),
                              suffix.size(), suffix) != 0)
      return makeError(StatusCode::InvalidArgument, "gradient output '",
                       gradient.name, "' is not named '<parameter>.grad'");
    std::string name =
        gradient.name.substr(0, gradient.name.size() - suffix.size());
    TensorInfo param,
        grad{wide.entry, static_cast<int>(t), &gradient, Region::Output};
    ZRT_RETURN_IF_ERROR(wide.session->findTensor(wide.entry, name, param));
    size_t n = static_cast<size_t>(param.desc->type.numElements());
    std::vector<double> analytic(n), narrowGrad(n), values(n);
    // Gradients of the unperturbed step: run it again, since the previous
    // parameter's last perturbed run overwrote the outputs.
    double loss = 0;
    ZRT_RETURN_IF_ERROR(lossOf(wide, loss));
    ZRT_RETURN_IF_ERROR(wide.session->readValues(grad, analytic.data(), n));
    ZRT_RETURN_IF_ERROR(narrow.session->readValues(grad, narrowGrad.data(), n));
    ZRT_RETURN_IF_ERROR(wide.session->readValues(param, values.data(), n));

    ParameterCheck check;
    check.name = name;
    check.elements = static_cast<int64_t>(n);
    std::vector<size_t> picks;
    if (static_cast<int64_t>(n) <= options.samples) {
      for (size_t i = 0; i < n; ++i)
        picks.push_back(i);
    } else { // evenly spread, the last element included
      for (int64_t k = 0; k < options.samples; ++k)
        picks.push_back(static_cast<size_t>(
            (static_cast<double>(k) / (options.samples - 1)) * (n - 1)));
    }
    for (size_t i = 0; i < n; ++i) {
      check.maxAbsGradient =
          std::max(check.maxAbsGradient, std::fabs(analytic[i]));
      double scale = std::max(std::fabs(analytic[i]), std::fabs(narrowGrad[i]));
      double err = std::fabs(analytic[i] - narrowGrad[i]) /
                   (options.f32Atol + options.f32Rtol * scale);
      check.maxF32Error = std::max(check.maxF32Error, err);
    }
    for (size_t i : picks) {
      double original = values[i];
      double plus = 0, minus = 0;
      values[i] = original + options.eps;
      ZRT_RETURN_IF_ERROR(wide.session->writeValues(param, values.data(), n));
      ZRT_RETURN_IF_ERROR(lossOf(wide, plus));
      values[i] = original - options.eps;
      ZRT_RETURN_IF_ERROR(wide.session->writeValues(param, values.data(), n));
      ZRT_RETURN_IF_ERROR(lossOf(wide, minus));
      values[i] = original;
      double fd = (plus - minus) / (2 * options.eps);
      double scale = std::max(std::fabs(fd), std::fabs(analytic[i]));
      double err =
          std::fabs(fd - analytic[i]) / (options.atol + options.rtol * scale);
      if (err > check.maxError || check.checked == 0) {
        std::ostringstream os;
        os.precision(10);
        os << "element " << i << ": finite difference " << fd
           << ", plan gradient " << analytic[i];
        check.worst = os.str();
      }
      check.maxError = std::max(check.maxError, err);
      ++check.checked;
    }
    ZRT_RETURN_IF_ERROR(wide.session->writeValues(param, values.data(), n));
    check.ok = check.maxError <= 1.0 && check.maxF32Error <= 1.0 &&
               std::isfinite(check.maxError) &&
               std::isfinite(check.maxF32Error);
    out.parameters.push_back(std::move(check));
  }
  if (out.parameters.empty())
    return makeError(StatusCode::InvalidArgument, "entry '", e.name,
                     "' returns no gradients: compile it with "
                     "`zcc --optimizer none`");
  return Status::ok();
}
