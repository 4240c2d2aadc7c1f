//===- ZTBase.td - zt dialect definition and type constraints -*- tablegen -*-===//
//
// The zt dialect: value-semantic tensor ops of a training step. Every tensor is
// ranked and statically shaped, because a plan fixes every buffer's size.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_DIALECT_ZT_ZTBASE_TD
#define ZCC_DIALECT_ZT_ZTBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def ZT_Dialect : Dialect {
  let name = "zt";
  let cppNamespace = "::zcc::zt";
  let summary = "Value-semantic tensor ops of a training step, planned statically by zcc";
  let description = [{
    The `zt` dialect holds the forward and loss of a training step, and after
    `zt-autodiff` and `zt-optimizer` the whole step. Its ops are pure
    functions of statically shaped tensors: no op mutates memory, so
    liveness, buffer sharing and offsets are decided later by the planner.

    Broadcasting is always explicit (`zt.broadcast_in_dim`): elementwise ops
    take operands of one type. This keeps gradients simple (the gradient of a
    broadcast is a sum over the broadcast dimensions) and keeps every shape
    visible in the IR.

    Function arguments carry a role (`zt.role`) that later passes turn into a
    memory kind: `input`, `label` and `step` are per-step slots, `parameter`
    lives in the persistent region and needs an initializer (`zt.init`).
    `zt.name` names an argument or result in plans and checkpoints.

    After `zt-autodiff` a function is an entry point (`zt.entry`): its
    results say what they are, `zt.gradient_of` (the gradient of an
    argument, returned) or `zt.tied` (the new value of a persistent
    argument, written over it in place).
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Name of the function-argument attribute holding an ArgRoleAttr.
    static constexpr ::llvm::StringLiteral kRoleAttrName = "zt.role";
    /// Name of the function-argument attribute holding an InitAttr.
    static constexpr ::llvm::StringLiteral kInitAttrName = "zt.init";
    /// Argument or result attribute: a StringAttr naming the tensor in plans
    /// and checkpoints.
    static constexpr ::llvm::StringLiteral kNameAttrName = "zt.name";
    /// Result attribute: the index of the persistent argument the result
    /// overwrites in place.
    static constexpr ::llvm::StringLiteral kTiedAttrName = "zt.tied";
    /// Result attribute: the index of the argument the result is the
    /// gradient of.
    static constexpr ::llvm::StringLiteral kGradientOfAttrName = "zt.gradient_of";
    /// Function attribute: what kind of entry point the function is
    /// ("train_step", "microbatch" or "apply").
    static constexpr ::llvm::StringLiteral kEntryAttrName = "zt.entry";
    /// Function attribute (zt-autodiff): the position of the first op of
    /// the backward in the body; the ops before it are the forward.
    static constexpr ::llvm::StringLiteral kBackwardStartAttrName =
        "zt.backward_start";
    /// Unit attribute on an op of the backward: a copy of a forward op,
    /// computing a value again instead of keeping it (zt-autodiff's cheap
    /// recomputation, zt-remat).
    static constexpr ::llvm::StringLiteral kRecomputeAttrName = "zt.recompute";
    /// Unit attribute on the module (zt-remat): some entry has nothing left
    /// to recompute and is still above the memory budget.
    static constexpr ::llvm::StringLiteral kRematExhaustedAttrName =
        "zt.remat_exhausted";
    /// Module attribute (zt-optimizer with shard-optimizer-state): one
    /// dictionary per sharded optimizer-state tensor: its persistent `name`,
    /// the `suffix` its parameters' state takes in checkpoints, `ranks`,
    /// the `params` it covers and their element `offsets` in it.
    static constexpr ::llvm::StringLiteral kShardedStatesAttrName =
        "zt.sharded_states";

    void registerAttributes();
  }];
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// Floating-point element types. Kernels are f32 in v1; bf16/f16 are admitted
// by the type rules so that mixed precision needs no dialect change.
def ZT_FloatElement : AnyTypeOf<[F32, F16, BF16], "f32, f16 or bf16">;
// Integer element types for labels and embedding indices.
def ZT_IndexElement : AnyTypeOf<[I32, I64], "i32 or i64">;

def ZT_FloatTensor : StaticShapeTensorOf<[F32, F16, BF16]>;
def ZT_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def ZT_AnyTensor : StaticShapeTensorOf<[F32, F16, BF16, I32, I64, I1]>;
// Float or integer: the element rows that compute on integers too.
def ZT_NumericTensor : StaticShapeTensorOf<[F32, F16, BF16, I32, I64]>;
// Comparisons' results, conditions and masks (one byte per element in a plan).
def ZT_BoolTensor : StaticShapeTensorOf<[I1]>;
def ZT_FloatScalar : 0DTensorOf<[F32, F16, BF16]>;
// The step counter: a rank-0 i64 tensor provided by the runtime every step.
def ZT_StepScalar : 0DTensorOf<[I64]>;

// An op checked by its kernel's rules (KernelRules.cpp): the rules the plan
// loader applies to its launch (and, for the kernels whose rule infers their
// results, the one the capture API builds the op from), so the op needs no
// verifier of its own.
def ZT_KernelRules : NativeOpTrait<"KernelRules"> {
  let cppNamespace = "::zcc::zt";
}
// An op whose kernel's rule also infers its results (ZRT_INFERRED_KERNELS):
// checked by it, built by name from it (Graph::op, zcc.ops), and tested on
// its kernel case by construction (round trip, gradient check).
def ZT_BuiltByName : NativeOpTrait<"BuiltByName"> {
  let cppNamespace = "::zcc::zt";
}

class ZT_Op<string mnemonic, list<Trait> traits = []>
    : Op<ZT_Dialect, mnemonic, traits>;

#endif // ZCC_DIALECT_ZT_ZTBASE_TD
