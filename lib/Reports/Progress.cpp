//===- Progress.cpp - what a training step does, per second ---------------===//

#include "zcc/Reports/Progress.h"

#include "zcc/Reports/PlanReport.h"

#include <cmath>
#include <cstdio>

using namespace zcc::runtime;

StepWork zcc::runtime::stepWork(const Plan &plan, int dataEntry,
                                int applyEntry, int64_t microbatches) {
  StepWork work;
  auto modelFlops = [&](int entry) {
    if (entry < 0 || entry >= static_cast<int>(plan.entries.size()))
      return 0.0;
    EntryFlops f = entryFlops(plan.entries[entry]);
    return f.total - f.recomputed;
  };
  work.flops = static_cast<double>(microbatches) * modelFlops(dataEntry) +
               modelFlops(applyEntry);
  if (dataEntry < 0 || dataEntry >= static_cast<int>(plan.entries.size()))
    return work;
  const Entry &e = plan.entries[dataEntry];
  int64_t examples = 0;
  for (const Tensor &t : e.tensors) {
    if (t.role != TensorRole::Input)
      continue;
    bool integer = t.type.dtype == DType::I32 || t.type.dtype == DType::I64;
    if (integer && t.type.shape.size() >= 2) {
      work.tokens = true;
      work.items = t.type.numElements() * microbatches;
      return work;
    }
    if (!examples && !t.type.shape.empty())
      examples = t.type.shape[0];
  }
  work.items = examples * microbatches;
  return work;
}

double zcc::runtime::devicePeakTflops(const std::string &deviceName,
                                      const Plan &plan, int dataEntry) {
  // Dense peaks of the SXM parts (NVIDIA's datasheets): bf16, TF32, f32.
  struct Peak {
    const char *name;
    double bf16, tf32, f32;
  };
  static const Peak kPeaks[] = {{"H200", 989.4, 494.7, 66.9},
                                {"H100", 989.4, 494.7, 66.9},
                                {"A100", 312.0, 156.0, 19.5}};
  const Peak *peak = nullptr;
  for (const Peak &p : kPeaks)
    if (deviceName.find(p.name) != std::string::npos) {
      peak = &p;
      break;
    }
  if (!peak || dataEntry < 0 ||
      dataEntry >= static_cast<int>(plan.entries.size()))
    return 0;
  const Entry &e = plan.entries[dataEntry];
  for (const Tensor &t : e.tensors)
    if (t.type.dtype == DType::BF16)
      return peak->bf16;
  for (const Launch &l : e.launches)
    if (l.kernel == KernelId::Matmul && l.params.tf32)
      return peak->tf32;
  return peak->f32;
}

std::string zcc::runtime::formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "?";
  auto s = static_cast<int64_t>(std::llround(seconds));
  char text[32];
  if (s < 60)
    std::snprintf(text, sizeof text, "%llds", static_cast<long long>(s));
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%lldm%02llds",
                  static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  else
    std::snprintf(text, sizeof text, "%lldh%02lldm",
                  static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  return text;
}
