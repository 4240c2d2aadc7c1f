//===- Pipeline.cpp - the zcc-train-step pass pipeline --------------------===//

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "zcc/Transforms/Passes.h"

using namespace mlir;

namespace {

/// A pass's generated options from its rows of `options`.
#define ZCC_COPY_OPTION(kind, member, name, init, rule, help)                  \
  pass.member = options.member;
template <class PassOptions, class Fill>
PassOptions passOptions(Fill fill) {
  PassOptions pass;
  fill(pass);
  return pass;
}

} // namespace

void zcc::buildTrainStepPipeline(OpPassManager &pm,
                                 const CompileOptions &options) {
  if (options.precision != "f32")
    pm.addPass(createZTMixedPrecision(
        passOptions<ZTMixedPrecisionOptions>([&](auto &pass) {
          ZCC_ZT_MIXED_PRECISION_PASS_OPTIONS(ZCC_COPY_OPTION)
        })));
  pm.addPass(createZTAutodiff(passOptions<ZTAutodiffOptions>(
      [&](auto &pass) { ZCC_ZT_AUTODIFF_PASS_OPTIONS(ZCC_COPY_OPTION) })));
  // "none" keeps the gradients as step outputs (gradient checks, custom
  // optimizers outside the plan).
  if (options.optimizer != "none")
    pm.addPass(createZTOptimizer(passOptions<ZTOptimizerOptions>(
        [&](auto &pass) { ZCC_ZT_OPTIMIZER_PASS_OPTIONS(ZCC_COPY_OPTION) })));
  if (options.memoryBudget > 0)
    pm.addPass(createZTRemat(passOptions<ZTRematOptions>(
        [&](auto &pass) { ZCC_ZT_REMAT_PASS_OPTIONS(ZCC_COPY_OPTION) })));
  if (options.matmulPrecision == "tf32")
    pm.addPass(createZTAllowTF32());
  if (options.fuseClassifier)
    pm.addPass(createZTFuseClassifier());
  if (options.fuseElementwise)
    pm.addPass(createZTFuseElementwise());
  pm.addPass(createZTPlanMemory(passOptions<ZTPlanMemoryOptions>(
      [&](auto &pass) { ZCC_ZT_PLAN_MEMORY_PASS_OPTIONS(ZCC_COPY_OPTION) })));
}

void zcc::registerTrainStepPipeline() {
  registerPassPipeline(
      "zcc-train-step",
      "The whole training step: zt-mixed-precision (with bf16), "
      "zt-autodiff, zt-optimizer, zt-remat (with a memory budget), "
      "zt-allow-tf32 (with matmul-precision=tf32), "
      "zt-fuse-classifier (unless fuse-classifier=false), "
      "zt-fuse-elementwise (unless fuse-elementwise=false), "
      "zt-plan-memory; options: every compile option by its flag name "
      "(docs/generated/CompileOptions.md)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        CompileOptions compile;
        std::string bad = options::setFromString(
            compile, std::string_view(text.data(), text.size()));
        if (bad.empty())
          bad = options::check(compile);
        if (!bad.empty())
          return errorHandler("zcc-train-step: " + bad);
        buildTrainStepPipeline(pm, compile);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)>) {});
}
