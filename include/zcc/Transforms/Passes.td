//===- Passes.td - zcc compiler passes ---------------------*- tablegen -*-===//

#ifndef ZCC_TRANSFORMS_PASSES_TD
#define ZCC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"
include "PassOptions.td"

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

def ZTMixedPrecision : Pass<"zt-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "bf16 activations: products, element ops and moves store bf16 (bf16 mixed precision)";
  let description = [{
    With `precision=bf16`, every f32 `zt.matmul` of every function reads bf16
    operands and writes a bf16 result (summed in f32, rounded once). bf16
    then flows through the ops that store their result in their operands'
    type: add, sub, mul, scale, the activations (tanh, sigmoid, relu, GELU,
    SiLU, neg), dropout, reshape, transpose, slice, broadcast, concat,
    `zt.attention` (scores and softmax in f32, the probabilities rounded to
    bf16 for the product with the values, the logsumexp f32) and
    `zt.layer_norm` / `zt.rms_norm` (statistics in f32; `gamma` and `beta`
    stay f32). Every other op reads f32, through one `zt.convert` back per
    value: softmax, reductions, exp, log, sqrt, rsqrt, div, the embedding,
    mse. `zt.softmax_cross_entropy` reads bf16 logits directly and computes
    the loss in f32. An op with a bf16 operand takes its f32 operands in
    bf16 too: a broadcast (a bias) is broadcast from its source's bf16 copy,
    anything else gets one conversion, so the residual stream is bf16 from
    its first bf16 branch on (as in llm.c; PyTorch's autocast keeps it
    f32). Parameters stay f32 (master weights): each gets one bf16 copy,
    before its first product.

    It runs before zt-autodiff, whose rules do the rest: a gradient has its
    value's type and a conversion's gradient converts back, so the
    backward's products, activation gradients and bias sums run on bf16, and
    each parameter's gradient reaches the optimizer in f32. zcc runs it with
    `--precision bf16`; `precision=f32` (the default) changes nothing.

    Before:

    ```mlir
    %y = zt.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %a = zt.gelu %y : tensor<4x16xf32>
    %n = zt.layer_norm %a, %g, %b, eps = 1.0e-5 : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    ```

    After:

    ```mlir
    %0 = zt.convert %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    %1 = zt.convert %w : tensor<8x16xf32> -> tensor<8x16xbf16>
    %y = zt.matmul %0, %1 : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
    %a = zt.gelu %y : tensor<4x16xbf16>
    %2 = zt.convert %a : tensor<4x16xbf16> -> tensor<4x16xf32>
    %n = zt.layer_norm %2, %g, %b, eps = 1.0e-5 : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    ```
  }];
  // The rows of zcc/Compiler/OptionList.h (PassOptions.td is generated).
  let options = ZTMixedPrecisionOptionList;
}

def ZTAutodiff : Pass<"zt-autodiff", "::mlir::ModuleOp"> {
  let summary = "Append the backward pass to a forward + loss function";
  let description = [{
    Differentiates every function whose arguments carry `zt.role` and that
    returns one rank-0 loss, with respect to its `parameter` arguments
    (reverse mode). The forward ops stay; after them, in reverse order, come
    the vector-Jacobian products of every op on a path from a parameter to the
    loss, and the gradient of a value used several times is the sum of its
    contributions. Forward values the backward reads (saved tensors) are
    plain SSA uses, so `zt-liveness` sees how long each must live. Dropout's
    mask is recomputed from its seed and the step counter, never saved.

    The function becomes an entry point (`zt.entry = "train_step"`) that
    returns the loss and one gradient per parameter (`zt.gradient_of`), and
    every argument gets a `zt.name` (`arg<N>` when it had none).
    `zt.backward_start` records where the backward begins (the position of
    its first op): the plan's launches carry their phase from it. Each
    backward op carries the location of the forward op it differentiates.

    With `recompute` (the default), a forward value the backward reads is
    computed again just before its first backward use when its op is cheap
    (elementwise, a view or copy, a broadcast, dropout, layer_norm, rms_norm)
    and its operands are kept for the backward anyway: GELU's output is
    recomputed from the input its gradient keeps, so only one of the two
    lives across the forward/backward boundary. The copy gives the same bits.

    With `accumulate`, each parameter gets a persistent `accumulator`
    argument instead, the gradient is added into it and the sum is returned
    tied to it (`zt.tied`): the entry is a `"microbatch"` whose gradients
    add up across calls without growing memory.

    Before:

    ```mlir
    func.func @f(%x: tensor<4x8xf32> {zt.role = #zt.role<input>},
                 %w: tensor<8x2xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
      %y = zt.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
      %l = zt.sum %y, dims = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
      return %l : tensor<f32>
    }
    ```

    After:

    ```mlir
    func.func @f(%x: tensor<4x8xf32> {zt.name = "arg0", zt.role = #zt.role<input>},
                 %w: tensor<8x2xf32> {zt.init = #zt.init<zeros>, zt.name = "arg1", zt.role = #zt.role<parameter>})
        -> (tensor<f32> {zt.name = "loss"}, tensor<8x2xf32> {zt.gradient_of = 1 : i64, zt.name = "arg1.grad"})
        attributes {zt.backward_start = 2 : i64, zt.entry = "train_step"} {
      %y = zt.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
      %l = zt.sum %y, dims = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
      %one = zt.constant dense<1.000000e+00> : tensor<f32>
      %dy = zt.broadcast_in_dim %one, dims = [] : (tensor<f32>) -> tensor<4x2xf32>
      %dw = zt.matmul %x, %dy {transpose_lhs} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
      return %l, %dw : tensor<f32>, tensor<8x2xf32>
    }
    ```

    The rules are in docs/passes.md; ops without one (optimizer updates,
    backward ops, other dialects) are an error when the loss depends on them
    through a parameter.
  }];
  // The rows of zcc/Compiler/OptionList.h (PassOptions.td is generated).
  let options = ZTAutodiffOptionList;
}

def ZTOptimizer : Pass<"zt-optimizer", "::mlir::ModuleOp"> {
  let summary = "Append SGD (momentum) or AdamW updates, in place on persistent state";
  let description = [{
    For every `"train_step"` entry, replaces each returned parameter
    gradient (`zt.gradient_of`) with a `zt.sgd` or `zt.adamw` update. Its
    results are returned tied (`zt.tied`) to the parameter and to the
    optimizer state they overwrite, so the plan updates them in place. The
    state (`<name>.momentum`, or `<name>.exp_avg` and `<name>.exp_avg_sq`) is
    added as `optimizer_state` arguments initialised to zeros; AdamW also
    needs the `step` argument and adds one if there is none.

    For every `"microbatch"` entry (zt-autodiff with `accumulate`), adds a
    separate `"apply"` entry, `@<name>_apply`. It takes the same parameters
    and accumulators (same names, so both entries address the same
    persistent slots), updates each parameter from its accumulator times
    `grad-scale`, and then zeroes the accumulators for the next microbatches.

    Before:

    ```mlir
    func.func @f(%w: tensor<8xf32> {zt.init = #zt.init<zeros>, zt.name = "w", zt.role = #zt.role<parameter>}, ...)
        -> (tensor<f32> {zt.name = "loss"}, tensor<8xf32> {zt.gradient_of = 0 : i64, zt.name = "w.grad"})
        attributes {zt.entry = "train_step"} {
      ...
      return %loss, %dw : tensor<f32>, tensor<8xf32>
    }
    ```

    After `zt-optimizer{optimizer=sgd lr=0.1 momentum=0.9}`:

    ```mlir
    func.func @f(%w: tensor<8xf32> {..., zt.name = "w", zt.role = #zt.role<parameter>}, ...,
                 %m: tensor<8xf32> {zt.init = #zt.init<zeros>, zt.name = "w.momentum", zt.role = #zt.role<optimizer_state>})
        -> (tensor<f32> {zt.name = "loss"}, tensor<8xf32> {zt.name = "w", zt.tied = 0 : i64},
            tensor<8xf32> {zt.name = "w.momentum", zt.tied = 2 : i64})
        attributes {zt.entry = "train_step"} {
      ...
      %w1, %m1 = zt.sgd %w, %dw, %m {lr = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, ...}
          : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
      return %loss, %w1, %m1 : tensor<f32>, tensor<8xf32>, tensor<8xf32>
    }
    ```

    With `data-parallel`, the gradients are averaged over the ranks of the job
    first: they are grouped in the order the step produces them into buckets
    of about `bucket-bytes`, each bucket is one `zt.all_reduce {mean}` placed
    right after its last gradient (so it overlaps the rest of the backward),
    and each update follows its bucket. In an apply entry the accumulators
    are averaged, in the same buckets, before the updates.

    With `shard-optimizer-state` (ZeRO-1) and `world-size`, each bucket's
    gradients are flattened into one tensor, zero padded to `world-size` equal
    shards, and reduce-scattered (`zt.reduce_scatter {mean}`); this rank's
    shard of the flattened parameters (`zt.shard`) takes the optimizer's
    step with state of one shard's size (`zero.<bucket>.exp_avg`, ...), and
    the shards are all-gathered (`zt.all_gather`) back into the parameters.
    The module's `zt.sharded_states` says which parameters each state
    tensor covers, so that checkpoints hold it per parameter.

    `weight-decay-min-rank` and `no-weight-decay` leave some parameters
    undecayed (PyTorch's parameter groups: nanoGPT decays only parameters of
    2 or more dimensions). ZeRO-1 keeps the two groups in separate buckets,
    since a shard takes one step.

    With `clip-grad-norm` > 0 the gradients (averaged over the ranks, and
    scaled) are clipped by their global norm, as
    `torch.nn.utils.clip_grad_norm_`: a chain of `zt.sum_squares` sums the
    squares of every gradient (ZeRO-1: of this rank's shards, then one
    `zt.all_reduce` of the sum), and every update, placed after it, takes
    the sum and `max_grad_norm`. The norm before clipping is returned as
    `grad_norm`.

    With `lr-warmup-steps` > 0 or `lr-decay` `cosine` / `linear`, the
    learning rate follows a schedule: one `zt.lr_schedule` of the step
    counter at the top of the entry that updates (linear warmup over
    `lr-warmup-steps`, then a decay to `min-lr` at step `lr-decay-steps`),
    whose factor every update takes as its `lr_factor` operand; the
    learning rate used is returned as `lr`.

    Out-of-range options are an error naming the option.
  }];
  // The rows of zcc/Compiler/OptionList.h (PassOptions.td is generated).
  let options = ZTOptimizerOptionList;
}

def ZTRemat : Pass<"zt-remat", "::mlir::ModuleOp"> {
  let summary = "Recompute forward values in the backward until the step fits a memory budget";
  let description = [{
    For every entry point with a backward (`zt.backward_start`), while the
    peak of live arena bytes (each buffer rounded up to `alignment`, as the
    planner places them) is above `memory-budget`: among the forward values live
    at the peak only because the backward reads them later, the one that
    frees the most bytes per FLOP of recomputation is computed again just
    before its first backward use, and its backward uses read the copy.
    Operands that are no longer live there are recomputed too, back to
    values that are (arguments, constants, values the step reads later
    anyway). A choice that would raise the peak somewhere else is undone and
    not tried again. Copies carry `zt.recompute`; they are the same ops on
    the same operands, so they compute the same bits, dropout included (its
    mask comes from its seed and the step counter).

    When nothing is left to recompute and the peak is still above the
    budget, the module gets `zt.remat_exhausted`: zcc then reports the
    smallest arena recomputation reaches. `memory-budget = 0` turns the pass off.
    zcc runs it between zt-optimizer and zt-plan-memory with
    `--memory-budget`, and compiles again with a smaller budget when the
    planned arena and its workspace end up above it.

    Before (`memory-budget` below the two saved matmul results):

    ```mlir
    %h = zt.matmul %x, %w1 ...            // saved for the backward
    %a = zt.relu %h ...
    ...                                   // the backward starts
    %dh = zt.relu_grad %a, %da ...
    ```

    After:

    ```mlir
    %h = zt.matmul %x, %w1 ...
    %a = zt.relu %h ...
    ...
    %h2 = zt.matmul %x, %w1 {zt.recompute} ...
    %a2 = zt.relu %h2 {zt.recompute} ...
    %dh = zt.relu_grad %a2, %da ...
    ```
  }];
  // The rows of zcc/Compiler/OptionList.h (PassOptions.td is generated).
  let options = ZTRematOptionList;
}

def ZTPrintLiveness : Pass<"zt-print-liveness", "::mlir::ModuleOp"> {
  let summary = "Print the zt-liveness analysis: buffers, kinds and lifetimes";
  let description = [{
    A test pass for the `BufferLiveness` analysis (zt-liveness), which
    zt-plan-memory runs. For every entry point (`zt.entry`) it prints:

    - each buffer: its memory kind, and for the arena its lifetime
      `[first, last)` over op positions, its bytes and the op defining it.
      Inputs (`input`, `label`, `step`) get fixed input slots; parameters,
      optimizer state and accumulators are persistent; results that are not
      tied are output slots; non-splat constants are plan data.
    - the schedule: each op's position and the buffers it reads and writes.
      A `zt.reshape` is a view: its result is its operand's buffer, and every
      use of the view extends that buffer's interval.
    - where each result ends up. A result tied to a persistent argument is
      computed in its slot when the argument's old value is read no later
      than the update (at the update only by an elementwise op), else copied
      there at the return.

    Example (a ReLU saved for the backward of a matmul):

    ```
    zt-print-liveness @f: 9 ops, 5 arena buffers, peak 384 live arena bytes
      buffers:
        #0 input "x" 128 bytes
        #1 persistent "w" 32 bytes
        #3 arena [1, 7) 128 bytes: zt.relu at 1
        ...
      schedule:
        0 zt.matmul (#0, #1) -> (#2)
        1 zt.relu (#2) -> (#3)
        ...
        6 zt.relu_grad (#3, #8) -> (#9)
        9 return
      results:
        #0 "loss" in #4
        #1 "w" in #1
    ```
  }];
}

def ZTAllowTF32 : Pass<"zt-allow-tf32", "::mlir::ModuleOp"> {
  let summary = "Let every f32 matrix product round its operands to TF32";
  let description = [{
    Marks every `zt.matmul` of f32 operands `tf32`: on the GPU the product
    runs on tensor cores with its operands rounded to TF32 (10 mantissa
    bits) and summed in f32, as PyTorch's
    `torch.set_float32_matmul_precision("high")`; the CPU and the emulator,
    the reference, compute the f32 product. Products of bf16 operands are
    left alone (tensor cores already), and so are attention's own products.
    zcc runs it after zt-optimizer (so the gradients' products are marked
    too) with `--matmul-precision tf32`; off by default, as in PyTorch.

    ```mlir
    %y = zt.matmul %x, %w : (tensor<32x64xf32>, tensor<64x16xf32>) -> tensor<32x16xf32>
    // becomes
    %y = zt.matmul %x, %w {tf32} : (tensor<32x64xf32>, tensor<64x16xf32>) -> tensor<32x16xf32>
    ```
  }];
}

def ZTFuseElementwise : Pass<"zt-fuse-elementwise", "::mlir::ModuleOp"> {
  let summary = "Run chains of element ops as one kernel each (zt.fused)";
  let description = [{
    A float element op (a unary, binary or gradient row, `zt.scale` or
    `zt.dropout`) that another such op reads is merged into that op, and so on up the
    chain: the merged tree becomes one `zt.fused`, a program of at most 16
    steps over at most 8 operands (broadcasts among them, read through
    strides) with at most 4 results, computed per element in one pass. A
    value other ops also read (after the program) is a further result; the
    others get no buffer and are never written or read back. Each step's
    value is rounded to the element type as the op stored it, so plans with
    and without fusion give bit-identical results on every executor.

    Left alone: a value read before the program would compute it; a
    forward op with a backward op (its operands would live into the backward), a copy recomputed in
    the backward with an op that is not; the learning rate's scale; and a
    merge that would keep an operand alive past the op where it dies while
    other ops run in between (so no peak grows). It runs after zt-remat and
    before zt-plan-memory (on by default; zcc's `--fuse-elementwise=false`
    leaves every op its own kernel).

    Before:

    ```mlir
    %a = zt.add %h, %bias : tensor<4x16xf32>
    %g = zt.gelu %a : tensor<4x16xf32>
    ```

    After:

    ```mlir
    %g = zt.fused(%h, %bias) {args = array<i64: 0, 1, 2>, numbers = array<f64>, ops = ["add", "gelu"], outputs = array<i64: 3>, seeds = array<i64>} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    ```
  }];
}

def ZTFuseClassifier : Pass<"zt-fuse-classifier", "::mlir::ModuleOp"> {
  let summary = "The loss and the logits' gradient in one kernel";
  let description = [{
    A `zt.softmax_cross_entropy` and the `zt.softmax_cross_entropy_grad`
    of the same logits, labels and attributes become one
    `zt.softmax_cross_entropy_fused` at the loss's place: each row's max
    and exp-sum are computed once, and the row's loss and gradient written
    from them (llm.c's fused classifier). The gradient's scale (the seed
    zt-autodiff puts after the forward) is moved before the loss, with the
    ops it is computed from; a scale computed from the loss itself leaves
    the pair alone, as do logits some other op reads (they could not die
    at the fused op). The logits then die where the loss is computed and
    the gradient is written over them: the logits are read once in the
    step instead of twice, and nothing else changes (the same bits on
    every executor, the same arena). It runs after zt-remat; zcc's
    `--fuse-classifier=false` keeps the two ops.

    ```mlir
    %loss = zt.softmax_cross_entropy %logits, %labels : (tensor<32x10xf32>, tensor<32xi32>) -> tensor<f32>
    %seed = zt.constant dense<1.0> : tensor<f32>
    %dlogits = zt.softmax_cross_entropy_grad %logits, %labels, %seed : (tensor<32x10xf32>, tensor<32xi32>, tensor<f32>) -> tensor<32x10xf32>
    // becomes
    %seed = zt.constant dense<1.0> : tensor<f32>
    %loss, %dlogits = zt.softmax_cross_entropy_fused %logits, %labels, %seed : (tensor<32x10xf32>, tensor<32xi32>, tensor<f32>) -> (tensor<f32>, tensor<32x10xf32>)
    ```
  }];
}

def ZTPlanMemory : Pass<"zt-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Plan every buffer's offset and lower entry points to zplan";
  let description = [{
    Runs the liveness analysis on every entry point (`zt.entry`), gives the
    arena buffers to the static memory planner (an algorithm from its
    registry, `auto` by default), checks the plan with the planner's
    independent checker, and rewrites each entry to a `zplan.entry`: one
    `zplan.slot` per buffer (region, offset, size, and for the arena the
    lifetime), `zplan.view`s for reshapes, and one `zplan.launch` per op in
    schedule order, with `copy` launches at the end for results that could
    not be computed in place. A plan the checker rejects is an error, never
    output.

    Persistent tensors are laid out once for the whole module, by name, so
    a microbatch entry and its apply entry share parameters and
    accumulators; inputs and outputs get per-entry slots in their regions;
    the module records the region sizes (`zplan.arena_size` is the largest
    entry's arena: entries never run at the same time).

    Before (after zt-autodiff and zt-optimizer):

    ```mlir
    func.func @f(%x: tensor<4x8xf32> {zt.name = "x", zt.role = #zt.role<input>},
                 %w: tensor<8x2xf32> {zt.init = #zt.init<zeros>, zt.name = "w", zt.role = #zt.role<parameter>})
        -> (tensor<f32> {zt.name = "loss"}, tensor<8x2xf32> {zt.name = "w", zt.tied = 1 : i64})
        attributes {zt.entry = "train_step"} {
      %y = zt.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
      ...
    }
    ```

    After:

    ```mlir
    module attributes {zplan.alignment = 256 : i64, zplan.arena_size = 512 : i64, zplan.constant_size = 0 : i64, zplan.persistent_size = 256 : i64} {
      zplan.entry @f kind = "train_step" arena = 512 lower_bound = 512 no_reuse = 1024 {
        %0 = zplan.slot input offset = 0 size = 128 name = "x" : memref<4x8xf32>
        %1 = zplan.slot persistent offset = 0 size = 64 name = "w" {init = #zt.init<zeros>} : memref<8x2xf32>
        %2 = zplan.slot arena offset = 0 size = 32 live = [0, 3] : memref<4x2xf32>
        ...
        zplan.launch "matmul"(%0, %1) -> (%2) {} : (memref<4x8xf32>, memref<8x2xf32>) -> (memref<4x2xf32>)
        ...
      }
    }
    ```
  }];
  let dependentDialects = ["::zcc::zplan::ZPlanDialect"];
  // The rows of zcc/Compiler/OptionList.h (PassOptions.td is generated).
  let options = ZTPlanMemoryOptionList;
}

#endif // ZCC_TRANSFORMS_PASSES_TD
