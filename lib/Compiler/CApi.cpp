//===- CApi.cpp - zcc.h over the in-process compiler ----------------------===//

#include "zcc/zcc.h"

#include "zcc/Compiler/Compile.h"
#include "zcc/Runtime/Plan/PlanFile.h"

#include <string>

extern "C" {

void zcc_compile_options_init(zcc_compile_options *options) {
  if (!options)
    return;
  zcc::CompileOptions defaults;
  options->optimizer = "sgd";
  options->lr = defaults.lr;
  options->momentum = defaults.momentum;
  options->nesterov = defaults.nesterov;
  options->weight_decay = defaults.weightDecay;
  options->beta1 = defaults.beta1;
  options->beta2 = defaults.beta2;
  options->eps = defaults.eps;
  options->accumulate = defaults.accumulate;
  options->grad_scale = defaults.gradScale;
}

zrt_status zcc_compile(const char *source, size_t size, const char *name,
                       const zcc_compile_options *options,
                       zrt_plan **out_plan) {
  if (!source || !options || !out_plan || !options->optimizer)
    return zrt_status_create(ZRT_INVALID_ARGUMENT, "zcc_compile: null argument");
  zcc::CompileOptions compile;
  compile.optimizer = options->optimizer;
  compile.lr = options->lr;
  compile.momentum = options->momentum;
  compile.nesterov = options->nesterov != 0;
  compile.weightDecay = options->weight_decay;
  compile.beta1 = options->beta1;
  compile.beta2 = options->beta2;
  compile.eps = options->eps;
  compile.accumulate = options->accumulate != 0;
  compile.gradScale = options->grad_scale;
  zcc::runtime::Plan plan;
  zcc::runtime::Status status = zcc::compileSource(
      std::string_view(source, size), name ? name : "<source>", compile, plan);
  if (!status.isOk())
    return zrt_status_create(static_cast<zrt_status_code>(status.code()),
                             status.toString().c_str());
  // Through the runtime's own reader: the C plan object is the one
  // zrt_plan_load_* makes, and the bytes are checked once more.
  std::vector<uint8_t> bytes = zcc::runtime::serializePlan(plan);
  return zrt_plan_load_bytes(bytes.data(), bytes.size(), out_plan);
}

} // extern "C"
