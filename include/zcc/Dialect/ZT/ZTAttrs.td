//===- ZTAttrs.td - zt attributes --------------------------*- tablegen -*-===//

#ifndef ZCC_DIALECT_ZT_ZTATTRS_TD
#define ZCC_DIALECT_ZT_ZTATTRS_TD

include "zcc/Dialect/ZT/ZTBase.td"

//===----------------------------------------------------------------------===//
// Argument roles
//===----------------------------------------------------------------------===//

def ZT_ArgRole : I32EnumAttr<"ArgRole", "role of a training-step function argument", [
  I32EnumAttrCase<"Input", 0, "input">,
  I32EnumAttrCase<"Label", 1, "label">,
  I32EnumAttrCase<"Parameter", 2, "parameter">,
  I32EnumAttrCase<"Step", 3, "step">,
  I32EnumAttrCase<"OptimizerState", 4, "optimizer_state">,
  I32EnumAttrCase<"Accumulator", 5, "accumulator">,
  I32EnumAttrCase<"State", 6, "state">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::zcc::zt";
}

def ZT_ArgRoleAttr : EnumAttr<ZT_Dialect, ZT_ArgRole, "role"> {
  let assemblyFormat = "`<` $value `>`";
  let summary = "Role of a training-step function argument";
  let description = [{
    Attached to function arguments as `zt.role`. The role decides the memory
    kind the planner gives the argument:

    | role | meaning | memory kind |
    | --- | --- | --- |
    | `input` | a batch tensor fed every step | step input slot |
    | `label` | targets fed every step (integer class ids or float targets) | step input slot |
    | `parameter` | a trained weight; needs `zt.init` | persistent region |
    | `step` | the step counter, `tensor<i64>`, written by the runtime | step input slot |
    | `optimizer_state` | momentum or Adam moments, added by `zt-optimizer`; needs `zt.init` | persistent region |
    | `accumulator` | a gradient accumulator, added by `zt-autodiff` with accumulation; needs `zt.init` | persistent region |
    | `state` | state the step reads and may write (BatchNorm's running statistics and counter): f32, needs `zt.init`; the step's new value is a result tied to it (`zt.tied`), computed without a gradient | persistent region, checkpointed |

    Example: `%w: tensor<784x128xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}`.
  }];
}

//===----------------------------------------------------------------------===//
// Parameter initializers
//===----------------------------------------------------------------------===//

def ZT_InitKind : I32EnumAttr<"InitKind", "how a parameter is initialised", [
  I32EnumAttrCase<"Zeros", 0, "zeros">,
  I32EnumAttrCase<"Ones", 1, "ones">,
  I32EnumAttrCase<"Constant", 2, "constant">,
  I32EnumAttrCase<"Normal", 3, "normal">,
  I32EnumAttrCase<"Uniform", 4, "uniform">,
  I32EnumAttrCase<"Given", 5, "given">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::zcc::zt";
}

def ZT_InitAttr : AttrDef<ZT_Dialect, "Init"> {
  let mnemonic = "init";
  let summary = "Initial value of a parameter";
  let description = [{
    Attached to persistent arguments (`parameter`, `optimizer_state`,
    `accumulator`) as `zt.init`. The runtime fills the
    persistent slot of the parameter once, before the first step, from a
    counter-based generator keyed by the run seed and the tensor's name,
    so initial weights are reproducible bit for bit.

    ```mlir
    #zt.init<zeros>
    #zt.init<ones>
    #zt.init<constant(value = 0.5)>
    #zt.init<normal(mean = 0.0, std = 0.02)>
    #zt.init<uniform(low = -0.1, high = 0.1)>
    #zt.init<given>
    ```

    `std` must be positive and `low < high`; all values must be finite.
    `given` means the value is supplied at load (a checkpoint, or a write
    through the runtime API, as the PyTorch importer does with a module's
    weights): a step run before it is written is an error, never a step on
    zeros.
  }];
  // `first`/`second` are the kind's two numbers: (value), (mean, std) or
  // (low, high). Accessors with meaningful names are in extraClassDeclaration.
  let parameters = (ins
    EnumParameter<ZT_InitKind>:$kind,
    "::llvm::APFloat":$first,
    "::llvm::APFloat":$second
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of values the kind takes (0, 1 or 2).
    static unsigned getNumValues(InitKind kind);
    /// Names of the values, in the order they are written.
    static ::llvm::ArrayRef<::llvm::StringRef> getValueNames(InitKind kind);
    static InitAttr getZeros(::mlir::MLIRContext *ctx);
    static InitAttr getNormal(::mlir::MLIRContext *ctx, double mean, double std);
  }];
}

#endif // ZCC_DIALECT_ZT_ZTATTRS_TD
