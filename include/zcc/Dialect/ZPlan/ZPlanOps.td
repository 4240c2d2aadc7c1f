//===- ZPlanOps.td - the planned form of a training step ---*- tablegen -*-===//
//
// What zt-plan-memory produces and the plan file serializes: every tensor a
// slot at a fixed offset in one of the plan's regions, and the step an
// ordered list of kernel launches over those slots. No value semantics are
// left: a launch writes its output slots.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_DIALECT_ZPLAN_ZPLANOPS_TD
#define ZCC_DIALECT_ZPLAN_ZPLANOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def ZPlan_Dialect : Dialect {
  let name = "zplan";
  let cppNamespace = "::zcc::zplan";
  let summary = "A training step with a static memory plan: slots and launches";
  let description = [{
    A module in the `zplan` dialect is a memory plan. Its attributes give
    the sizes of the regions (`zplan.arena_size`, `zplan.persistent_size`,
    `zplan.constant_size`) and their alignment (`zplan.alignment`). Each
    `zplan.entry` is one entry point (a training step, a microbatch, an
    apply): its slots say where each tensor lives, and its launches, in
    order, are the step.

    | region | holds | lives |
    | --- | --- | --- |
    | `arena` | activations, saved values, gradients, temporaries | planned per entry: offsets reused by values with disjoint lifetimes |
    | `persistent` | parameters, optimizer state, accumulators | the whole run; one layout shared by every entry (by name) |
    | `input` | inputs, labels, the step counter | written before each step |
    | `output` | the loss and returned gradients | read after each step |
    | `constant` | non-splat compile-time tensors | loaded with the plan, read-only |
  }];
  let hasOperationAttrVerify = 1;
}

// Region, EntryKind, TensorRole and Phase: generated from the runtime's
// lists (PlanEnums.h) by GenPlanEnums, so a keyword here is the name the
// runtime prints and its value the one the file stores.
include "ZPlanEnums.td"

class ZPlan_Op<string mnemonic, list<Trait> traits = []>
    : Op<ZPlan_Dialect, mnemonic, traits>;

def ZPlan_EntryOp : ZPlan_Op<"entry", [Symbol, IsolatedFromAbove, NoTerminator,
    SingleBlock]> {
  let summary = "one entry point of a plan";
  let description = [{
    `kind` is the zt entry kind (`train_step`, `microbatch`, `apply`,
    `eval`, `predict`); any
    other keyword is an error.
    `arena` is the bytes this entry's arena buffers need as planned,
    `lower_bound` the peak of live arena bytes (no plan can use less) and
    `no_reuse` the bytes they would need with no reuse at all.

    ```mlir
    zplan.entry @mlp_loss kind = train_step arena = 868352 lower_bound = 868352 no_reuse = 1233408 {
      %0 = zplan.slot input offset = 0 size = 100352 name = "images" : memref<32x784xf32>
      ...
      zplan.launch "matmul"(%0, %2) -> (%8) {} : (memref<32x784xf32>, memref<784x256xf32>) -> (memref<32x256xf32>)
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, ZPlan_EntryKind:$kind,
                       I64Attr:$arena, I64Attr:$lower_bound, I64Attr:$no_reuse);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `kind` `=` $kind `arena` `=` $arena `lower_bound` `=` $lower_bound
    `no_reuse` `=` $no_reuse attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
}

def ZPlan_SlotOp : ZPlan_Op<"slot", [HasParent<"EntryOp">]> {
  let summary = "a tensor's place: region, offset and size";
  let description = [{
    `size` bytes at `offset` in `region`. Arena slots carry their lifetime
    `live = [first, last]`, meaning the half-open interval of op positions
    `[first, last)` of the zt schedule; two arena slots whose lifetimes
    overlap never share a byte. Persistent slots carry their initializer
    (`init`, a `#zt.init`), constant slots their data (`init`, dense
    elements). `name` is the tensor's name where it has one. Input and
    output slots say what they hold with `role`: `input`, `label` or `step`
    (written by the runtime) for inputs, `loss` or `gradient` for outputs
    (`none` is no role: leave it out).

    ```mlir
    %3 = zplan.slot arena offset = 32768 size = 32768 live = [3, 22] : memref<32x256xf32>
    %1 = zplan.slot persistent offset = 0 size = 802816 name = "w1" {init = #zt.init<zeros>} : memref<784x256xf32>
    %2 = zplan.slot input offset = 0 size = 128 name = "labels" role = label : memref<32xi32>
    ```
  }];
  let arguments = (ins ZPlan_Region:$region, I64Attr:$offset, I64Attr:$size,
                       OptionalAttr<DenseI64ArrayAttr>:$live,
                       OptionalAttr<StrAttr>:$name,
                       OptionalAttr<ZPlan_TensorRole>:$role,
                       OptionalAttr<AnyAttr>:$init);
  let results = (outs AnyStaticShapeMemRef:$buffer);
  let assemblyFormat = [{
    $region `offset` `=` $offset `size` `=` $size (`live` `=` $live^)?
    (`name` `=` $name^)? (`role` `=` $role^)? attr-dict `:` type($buffer)
  }];
  let hasVerifier = 1;
}

def ZPlan_ViewOp : ZPlan_Op<"view", [Pure]> {
  let summary = "the same bytes with another shape (zt.reshape)";
  let description = [{
    ```mlir
    %4 = zplan.view %3 : memref<32x256xf32> to memref<8192xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeMemRef:$source);
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `to` type($result)";
  let hasVerifier = 1;
}

def ZPlan_StridedViewOp : ZPlan_Op<"strided_view", [Pure]> {
  let summary = "attention's operand where it lies in another value's bytes";
  let description = [{
    The source's elements from `offset` on, `strides` giving each result
    dimension's step in source elements: a slice or transpose that feeds
    only attention (the heads of a fused projection, read in place), or an
    attention result written where its transpose lives. Only attention's
    kernels read or write such a view; it has no slot and no launch.

    ```mlir
    %6 = zplan.strided_view %5 offset = 64 strides = [3072, 16, 192, 1] : memref<2x16x192xf32> to memref<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeMemRef:$source, I64Attr:$offset,
                       DenseI64ArrayAttr:$strides);
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = "$source `offset` `=` $offset `strides` `=` $strides attr-dict `:` type($source) `to` type($result)";
  let hasVerifier = 1;
}

def ZPlan_BroadcastViewOp : ZPlan_Op<"broadcast_view", [Pure]> {
  let summary = "a broadcast read through strides (zt.broadcast_in_dim)";
  let description = [{
    The source's bytes seen with a larger shape: `strides` gives each result
    dimension's step in source elements, 0 along a repeated or new
    dimension. Only element kernels read such a view; it has no slot and no
    launch of its own.

    ```mlir
    %5 = zplan.broadcast_view %4 strides = [0, 0, 1] : memref<768xf32> to memref<8x1024x768xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeMemRef:$source, DenseI64ArrayAttr:$strides);
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = "$source `strides` `=` $strides attr-dict `:` type($source) `to` type($result)";
  let hasVerifier = 1;
}

def ZPlan_LaunchOp : ZPlan_Op<"launch", [AttrSizedOperandSegments,
    HasParent<"EntryOp">]> {
  let summary = "run one kernel over slots";
  let description = [{
    Runs `kernel` (a zt op's name without the prefix, or `copy`) reading
    `inputs` and writing `outputs`; `params` are the zt op's attributes.
    Launches run in the order they appear. `phase` is the part of the step
    the launch belongs to, for the memory timeline: `backward`, `update`
    (the optimizer), `recompute` (a forward op run again in the backward);
    the forward when absent.

    ```mlir
    zplan.launch "matmul"(%3, %4) -> (%5) {transpose_rhs} : (memref<32x10xf32>, memref<128x10xf32>) -> (memref<32x128xf32>)
    ```
  }];
  let arguments = (ins StrAttr:$kernel, Variadic<AnyStaticShapeMemRef>:$inputs,
                       Variadic<AnyStaticShapeMemRef>:$outputs,
                       DictionaryAttr:$params,
                       OptionalAttr<ZPlan_Phase>:$phase);
  let assemblyFormat = [{
    $kernel `(` $inputs `)` `->` `(` $outputs `)` $params
    (`phase` `=` $phase^)? attr-dict `:`
    `(` type($inputs) `)` `->` `(` type($outputs) `)`
  }];
  let hasVerifier = 1;
}

#endif // ZCC_DIALECT_ZPLAN_ZPLANOPS_TD
