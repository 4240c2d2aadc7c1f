//===- zt-opt.cpp - the zt dialect's opt driver ---------------------------===//
//
// Parses, verifies, transforms and prints zt IR; the lit suite runs on it.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<zcc::zt::ZTDialect, zcc::zplan::ZPlanDialect,
                  mlir::func::FuncDialect>();
  // Generic cleanups (canonicalize, cse, ...) for tests and pipelines.
  mlir::registerTransformsPasses();
  zcc::registerZCCPasses();
  zcc::registerTrainStepPipeline();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "zt optimizer driver\n", registry));
}
