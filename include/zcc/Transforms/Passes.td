//===- Passes.td - zcc compiler passes ---------------------*- tablegen -*-===//

#ifndef ZCC_TRANSFORMS_PASSES_TD
#define ZCC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def ZTPrintArgRoles : Pass<"zt-print-arg-roles", "::mlir::ModuleOp"> {
  let summary = "Print each training-step argument's role, size and initializer";
  let description = [{
    An analysis printer: for every function whose arguments carry `zt.role`,
    prints one line per argument (role, type, bytes, initializer) and the
    total bytes per role. Parameters are what the persistent region will
    hold; inputs, labels and the step counter are the per-step slots.

    It also checks the rule later passes rely on: once any argument of a
    function has a role, every argument has one.

    Example output:

    ```
    zt-print-arg-roles @mlp_loss
      arg #0 input tensor<32x784xf32> 100352 bytes
      arg #2 parameter tensor<784x256xf32> 802816 bytes init uniform(low = -0.0357, high = 0.0357)
      ...
      total parameter: 6 tensors, 940584 bytes
    ```
  }];
}

#endif // ZCC_TRANSFORMS_PASSES_TD
