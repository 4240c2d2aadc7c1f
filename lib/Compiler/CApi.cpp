//===- CApi.cpp - zcc.h over the in-process compiler ----------------------===//

#include "zcc/zcc.h"

#include "zcc/Compiler/Compile.h"
#include "zcc/Runtime/Plan/PlanFile.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>

namespace {

/// One message per warning: notes are indented under theirs.
void report(std::string_view warnings, const zcc_compile_options &options) {
  std::string message;
  auto flush = [&] {
    if (message.empty())
      return;
    if (options.warning)
      options.warning(options.warning_context, message.c_str());
    else
      std::fprintf(stderr, "%s\n", message.c_str());
    message.clear();
  };
  while (!warnings.empty()) {
    size_t end = warnings.find('\n');
    std::string_view line = warnings.substr(0, end);
    warnings.remove_prefix(end == std::string_view::npos ? warnings.size()
                                                         : end + 1);
    if (!line.empty() && line[0] == ' ' && !message.empty()) {
      message.append("\n").append(line);
      continue;
    }
    flush();
    message = line;
  }
  flush();
}

} // namespace

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
  options->clip_grad_norm = defaults.clipGradNorm;
  options->lr_warmup_steps = defaults.lrWarmupSteps;
  options->lr_decay = "none";
  options->lr_decay_steps = defaults.lrDecaySteps;
  options->min_lr = defaults.minLr;
  options->weight_decay_min_rank = defaults.weightDecayMinRank;
  options->no_weight_decay = nullptr;
  options->recompute = defaults.recompute;
  options->memory_budget = defaults.memoryBudget;
  options->remat_problem = nullptr;
  options->precision = "f32";
  options->data_parallel = defaults.dataParallel;
  options->bucket_bytes = defaults.bucketBytes;
  options->shard_optimizer_state = defaults.shardOptimizerState;
  options->world_size = defaults.ranks;
  options->alignment = defaults.alignment;
  options->algorithm = "auto";
  options->planner_node_limit = defaults.plannerNodeLimit;
  options->planner_time_limit = defaults.plannerTimeLimit;
  options->matmul_workspace = defaults.matmulWorkspace;
  options->warning = nullptr;
  options->warning_context = nullptr;
}

zrt_status zcc_compile(const char *source, size_t size, const char *name,
                       const zcc_compile_options *options,
                       zrt_plan **out_plan) {
  if (!source || !options || !out_plan || !options->optimizer ||
      !options->precision || !options->algorithm)
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
  compile.clipGradNorm = options->clip_grad_norm;
  compile.lrWarmupSteps = options->lr_warmup_steps;
  compile.lrDecay = options->lr_decay ? options->lr_decay : "none";
  compile.lrDecaySteps = options->lr_decay_steps;
  compile.minLr = options->min_lr;
  compile.weightDecayMinRank = options->weight_decay_min_rank;
  if (options->no_weight_decay && *options->no_weight_decay) {
    std::string names = options->no_weight_decay;
    for (size_t at = 0; at <= names.size();) {
      size_t comma = std::min(names.find(',', at), names.size());
      compile.noWeightDecay.push_back(names.substr(at, comma - at));
      at = comma + 1;
    }
  }
  compile.recompute = options->recompute != 0;
  compile.memoryBudget = options->memory_budget;
  compile.rematProblem = options->remat_problem ? options->remat_problem : "";
  compile.precision = options->precision;
  compile.dataParallel = options->data_parallel != 0;
  compile.bucketBytes = options->bucket_bytes;
  compile.shardOptimizerState = options->shard_optimizer_state != 0;
  compile.ranks = options->world_size;
  compile.alignment = options->alignment;
  compile.algorithm = options->algorithm;
  compile.plannerNodeLimit = options->planner_node_limit;
  compile.plannerTimeLimit = options->planner_time_limit;
  compile.matmulWorkspace = options->matmul_workspace;
  zcc::runtime::Plan plan;
  std::string warnings;
  zcc::runtime::Status status =
      zcc::compileSource(std::string_view(source, size),
                         name ? name : "<source>", compile, plan, &warnings);
  if (!status.isOk())
    return zrt_status_create(static_cast<zrt_status_code>(status.code()),
                             status.toString().c_str());
  // Through the runtime's own reader: the C plan object is the one
  // zrt_plan_load_* makes, and the bytes are checked once more.
  std::vector<uint8_t> bytes = zcc::runtime::serializePlan(plan);
  if (zrt_status s = zrt_plan_load_bytes(bytes.data(), bytes.size(), out_plan))
    return s;
  report(warnings, *options);
  return nullptr;
}

} // extern "C"
