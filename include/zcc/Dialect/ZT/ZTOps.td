//===- ZTOps.td - zt dialect ops ---------------------------*- tablegen -*-===//
//
// The v1 op set (ARCHITECTURE.md). The exact numerical meaning of each op is in
// docs/zt-dialect.md; descriptions here say what an op computes and its rules.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_DIALECT_ZT_ZTOPS_TD
#define ZCC_DIALECT_ZT_ZTOPS_TD

include "zcc/Dialect/ZT/ZTBase.td"
include "zcc/Dialect/ZT/ZTAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

// Binary elementwise ops take two operands of one type: broadcasting is done
// beforehand by zt.broadcast_in_dim, so the gradient of every elementwise op
// has the shape of its operands.
// The element ops' defs are generated from their rows (ElementKernels.h) into
// ZTElementOps.td, included below; `params` are the row's numbers.
class ZT_BinaryOp<string mnemonic, string formula, dag params,
                  list<Trait> traits = [], bit integers = 0>
    : ZT_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType,
                                           Elementwise])> {
  let summary = "elementwise " # formula;
  let description = [{
    Computes `result[i] = }] # formula # [{` for every element `i`. Both
    operands and the result have the same type; broadcast first with
    `zt.broadcast_in_dim`.}] # !if(integers, [{ Also on
    i32 and i64 tensors, wrapping around on overflow as PyTorch's integers
    do (no gradient).}], "") # [{

    ```mlir
    %r = zt.}] # mnemonic # [{ %a, %b : tensor<4x8xf32>
    ```
  }];
  defvar tensor = !if(integers, ZT_NumericTensor, ZT_FloatTensor);
  let arguments = !con((ins tensor:$lhs, tensor:$rhs), params);
  let results = (outs tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

class ZT_UnaryOp<string mnemonic, string formula, dag params>
    : ZT_Op<mnemonic, [Pure, SameOperandsAndResultType, Elementwise]> {
  let summary = "elementwise " # formula;
  let description = [{
    Computes `result[i] = }] # formula # [{` for every element `i`
    (IEEE-754 single precision for f32; see docs/zt-dialect.md for the exact
    formula and its derivative).

    ```mlir
    %r = zt.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```
  }];
  let arguments = !con((ins ZT_FloatTensor:$operand), params);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}


//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def ZT_ConstantOp : ZT_Op<"constant", [Pure, ConstantLike,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "a constant tensor";
  let description = [{
    A tensor whose value is known at compile time (scales, masks). A splat
    constant of rank 0 broadcast with `zt.broadcast_in_dim` is the usual way
    to scale by a number.

    ```mlir
    %c = zt.constant dense<0.125> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs ZT_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def ZT_CausalMaskOp : ZT_Op<"causal_mask", [Pure, ZT_KernelRules]> {
  let summary = "additive causal attention mask";
  let description = [{
    Produces a square `SxS` tensor with `result[q][k] = 0` for `k <= q` and
    `-inf` for `k > q`. Added to attention scores before `zt.softmax`, it lets
    query `q` attend to keys `0..q` only. It has no operands and no gradient,
    and costs no memory traffic in a fused kernel, unlike a stored constant.

    ```mlir
    %m = zt.causal_mask : tensor<16x16xf32>
    ```
  }];
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

def ZT_BroadcastInDimOp : ZT_Op<"broadcast_in_dim", [Pure, ZT_KernelRules,
    AllElementTypesMatch<["operand", "result"]>]> {
  let summary = "broadcast a tensor to a larger shape";
  let description = [{
    Operand dimension `i` maps to result dimension `broadcast_dimensions[i]`;
    result dimensions not named are new. A mapped operand dimension must have
    size 1 (it is repeated) or the size of its result dimension.
    `broadcast_dimensions` has one entry per operand dimension and is strictly
    increasing (reordering is `zt.transpose`'s job).

    `result[j0..jn] = operand[k0..km]` with `ki = operand_dim(i) == 1 ? 0 : j[broadcast_dimensions[i]]`.

    ```mlir
    %b = zt.broadcast_in_dim %bias, dims = [1] : (tensor<128xf32>) -> tensor<32x128xf32>
    ```
  }];
  let arguments = (ins ZT_AnyTensor:$operand, DenseI64ArrayAttr:$broadcast_dimensions);
  let results = (outs ZT_AnyTensor:$result);
  let assemblyFormat = [{
    $operand `,` `dims` `=` $broadcast_dimensions attr-dict `:` functional-type(operands, results)
  }];
}

def ZT_ReshapeOp : ZT_Op<"reshape", [Pure,
    AllElementTypesMatch<["operand", "result"]>]> {
  let summary = "reinterpret a tensor with a new shape";
  let description = [{
    Same elements in row-major order, new shape; the element count must not
    change. A reshape is a view: the planner gives it its operand's buffer.

    ```mlir
    %r = zt.reshape %x : (tensor<4x8x16xf32>) -> tensor<32x16xf32>
    ```
  }];
  let arguments = (ins ZT_AnyTensor:$operand);
  let results = (outs ZT_AnyTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def ZT_TransposeOp : ZT_Op<"transpose", [Pure, ZT_KernelRules,
    AllElementTypesMatch<["operand", "result"]>]> {
  let summary = "permute the dimensions of a tensor";
  let description = [{
    `result.shape[i] = operand.shape[permutation[i]]` and
    `result[j0..jn] = operand[k]` with `k[permutation[i]] = j[i]`.

    ```mlir
    %t = zt.transpose %x, perm = [0, 2, 1] : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
    ```
  }];
  let arguments = (ins ZT_AnyTensor:$operand, DenseI64ArrayAttr:$permutation);
  let results = (outs ZT_AnyTensor:$result);
  let assemblyFormat = [{
    $operand `,` `perm` `=` $permutation attr-dict `:` functional-type(operands, results)
  }];
}

def ZT_SliceOp : ZT_Op<"slice", [Pure, ZT_KernelRules,
    AllElementTypesMatch<["operand", "result"]>]> {
  let summary = "a strided rectangular part of a tensor";
  let description = [{
    For each dimension `d`, takes indices `start[d], start[d] + strides[d], ...`
    below `limit[d]`, so `result.shape[d] = ceil((limit[d] - start[d]) / strides[d])`.
    Bounds satisfy `0 <= start[d] <= limit[d] <= operand.shape[d]` and
    `strides[d] >= 1`.

    ```mlir
    %q = zt.slice %qkv [0:4, 0:64, 0:128:1] : (tensor<4x64x384xf32>) -> tensor<4x64x128xf32>
    ```
  }];
  let arguments = (ins ZT_AnyTensor:$operand, DenseI64ArrayAttr:$start_indices,
                       DenseI64ArrayAttr:$limit_indices, DenseI64ArrayAttr:$strides);
  let results = (outs ZT_AnyTensor:$result);
  let hasCustomAssemblyFormat = 1;
}

def ZT_ConcatOp : ZT_Op<"concat", [Pure, ZT_KernelRules]> {
  let summary = "join tensors along one dimension";
  let description = [{
    All operands have the same rank and element type, and the same size in
    every dimension but `dimension`; the result's size there is the sum.

    ```mlir
    %c = zt.concat(%a, %b) dim = 1 : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x10xf32>
    ```
  }];
  let arguments = (ins Variadic<ZT_AnyTensor>:$inputs, I64Attr:$dimension);
  let results = (outs ZT_AnyTensor:$result);
  let assemblyFormat = [{
    `(` $inputs `)` `dim` `=` $dimension attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class ZT_ReduceOp<string mnemonic, string what> : ZT_Op<mnemonic, [Pure, ZT_KernelRules,
    AllElementTypesMatch<["operand", "result"]>]> {
  let summary = what # " over dimensions";
  let description = [{
    Reduces `operand` over `dims` (strictly increasing, in range, at least
    one) to the }] # what # [{ of the elements. With `keep_dims` the reduced
    dimensions stay with size 1, otherwise they are dropped.

    ```mlir
    %s = zt.}] # mnemonic # [{ %x, dims = [1] : (tensor<32x10xf32>) -> tensor<32xf32>
    %k = zt.}] # mnemonic # [{ %x, dims = [1] {keep_dims} : (tensor<32x10xf32>) -> tensor<32x1xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$operand, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keep_dims);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `,` `dims` `=` $dims attr-dict `:` functional-type(operands, results)
  }];
}

def ZT_SumOp : ZT_ReduceOp<"sum", "sum">;
def ZT_MeanOp : ZT_ReduceOp<"mean", "arithmetic mean">;
def ZT_MaxOp : ZT_ReduceOp<"max", "maximum">;

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def ZT_MatmulOp : ZT_Op<"matmul", [Pure,
    AllElementTypesMatch<["lhs", "rhs"]>]> {
  let summary = "batched matrix product with transpose flags";
  let description = [{
    The last two dimensions of each operand are the matrix; the ones before
    are batch dimensions. With the flags applied, `lhs` is `[B..., M, K]` and
    `rhs` is `[B..., K, N]` or `[K, N]` (a weight shared by every batch
    entry); the result is `[B..., M, N]`:
    `result[b, m, n] = sum_k op(lhs)[b, m, k] * op(rhs)[b, k, n]`, where
    `op` transposes the last two dimensions when its flag is set.

    The result has the operands' element type; bf16 operands may also give
    an f32 result (mixed precision: products are summed in f32 either way,
    and an f32 result is not rounded to bf16).

    `tf32` (f32 operands only; set by zt-allow-tf32, zcc's `--matmul-precision
    tf32`) lets the product round its operands to TF32 (10 mantissa bits) on
    tensor cores and sum in f32, as PyTorch's
    `torch.set_float32_matmul_precision("high")`: the CUDA executor asks
    cuBLAS for `CUBLAS_COMPUTE_32F_FAST_TF32`; the CPU and the emulator, the
    reference, compute the f32 product either way.

    ```mlir
    %y = zt.matmul %x, %w : (tensor<32x784xf32>, tensor<784x128xf32>) -> tensor<32x128xf32>
    %s = zt.matmul %q, %k {transpose_rhs} : (tensor<4x64x32xf32>, tensor<4x64x32xf32>) -> tensor<4x64x64xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$lhs, ZT_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs,
                       UnitAttr:$tf32);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def ZT_AttentionOp : ZT_Op<"attention", [Pure, ZT_KernelRules,
    AttrSizedOperandSegments,
    AllElementTypesMatch<["query", "key", "value", "result"]>]> {
  let summary = "fused scaled dot-product attention (flash-attention scheme)";
  let description = [{
    `query` is `[B..., S, D]`, `key` `[B..., T, D]`, `value` `[B..., T, Dv]`
    (the same batch dimensions `B...`, `S, T, D, Dv >= 1`; or grouped-query
    attention: `query` `[B..., H, S, D]` and `key`, `value` with `Hkv` heads,
    a divisor of `H`, query head `h` reading key and value head
    `h / (H / Hkv)` as PyTorch's `enable_gqa`, so the repeated keys and
    values are never stored). For each query
    row `q`, with `s[k] = scale * sum_d query[q, d] * key[k, d]` over the
    keys it sees (every `k < T`, or `k <= q` when `causal`, PyTorch's
    `is_causal` alignment; of those, with a `mask`, the keys where the mask
    is true: a bool tensor of the query's rank whose dimensions are those of
    the scores `[B..., S, T]` or 1, broadcast, such as a padding mask
    `[B, 1, 1, T]`):
    `logsumexp[q] = log(sum_k exp(s[k]))`,
    `result[q, :] = sum_k exp(s[k] - logsumexp[q]) * value[k, :]`.

    Operands and result are f32, or bf16 (mixed precision: the scores and
    the softmax computed in f32, the probabilities rounded to bf16 for the
    product with `value`, as FlashAttention and cuDNN do); `logsumexp` is
    always f32.

    A query that sees no key has the result 0 and the logsumexp `-inf`
    (PyTorch's `scaled_dot_product_attention` gives 0 there too), and no
    gradient.

    With `dropout = p` (`0 <= p < 1`, PyTorch's `dropout_p`), a `step`
    operand and a `seed`, the probabilities are dropped out before the
    product with `value`: probability `[..., q, k]` is kept, divided by
    `1 - p`, exactly where `zt.dropout` at this seed and step would keep
    element `[..., q, k]` of the `[B..., S, T]` probabilities (the same
    Philox draw), else 0; `logsumexp` is the undropped one. The backward
    draws the same mask again: nothing more is stored.

    The `[S, T]` probabilities are never stored: the kernels compute them a
    block of query rows at a time into a workspace, and `zt.attention_grad`
    recomputes them from `logsumexp`, so the memory saved for the backward
    grows linearly with the sequence (the output and one number per row).
    The unfused form (`zt.matmul`, `zt.scale`, `zt.causal_mask`,
    `zt.softmax`) computes the same function.

    ```mlir
    %y, %lse = zt.attention %q, %k, %v, scale = 1.250000e-01 causal : (tensor<2x4x64x8xf32>, tensor<2x4x64x8xf32>, tensor<2x4x64x8xf32>) -> (tensor<2x4x64x8xf32>, tensor<2x4x64xf32>)
    %z, %lse2 = zt.attention %q, %k, %v mask %pad, scale = 1.250000e-01 causal : (tensor<2x4x64x8xf32>, tensor<2x4x64x8xf32>, tensor<2x4x64x8xf32>, tensor<2x1x1x64xi1>) -> (tensor<2x4x64x8xf32>, tensor<2x4x64xf32>)
    %g, %lse3 = zt.attention %q, %k2, %v2, scale = 1.250000e-01 causal : (tensor<2x4x64x8xf32>, tensor<2x2x64x8xf32>, tensor<2x2x64x8xf32>) -> (tensor<2x4x64x8xf32>, tensor<2x4x64xf32>)
    %d, %lse4 = zt.attention %q, %k, %v step %step, scale = 1.250000e-01 causal dropout = 1.000000e-01 seed = 3 : (tensor<2x4x64x8xf32>, tensor<2x4x64x8xf32>, tensor<2x4x64x8xf32>, tensor<i64>) -> (tensor<2x4x64x8xf32>, tensor<2x4x64xf32>)
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$query, ZT_FloatTensor:$key,
                       ZT_FloatTensor:$value, Optional<ZT_BoolTensor>:$mask,
                       Optional<ZT_StepScalar>:$step,
                       F64Attr:$scale, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$dropout,
                       OptionalAttr<I64Attr>:$seed);
  let results = (outs ZT_FloatTensor:$result, ZT_FloatTensor:$logsumexp);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? (`step` $step^)? `,` `scale` `=` $scale (`causal` $causal^)? (`dropout` `=` $dropout^ `seed` `=` $seed)? attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Normalisation and activation over an axis
//===----------------------------------------------------------------------===//

class ZT_AxisOp<string mnemonic, string formula> : ZT_Op<mnemonic, [Pure, ZT_KernelRules,
    SameOperandsAndResultType]> {
  let summary = mnemonic # " along one axis";
  let description = [{
    Along `axis` (negative counts from the end): `}] # formula # [{`,
    computed stably by subtracting the maximum along the axis first.

    ```mlir
    %p = zt.}] # mnemonic # [{ %x, axis = -1 : tensor<32x10xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$operand, I64Attr:$axis);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = "$operand `,` `axis` `=` $axis attr-dict `:` type($result)";
  let extraClassDeclaration = [{
    /// `axis` as a non-negative dimension index.
    int64_t getNormalizedAxis() {
      int64_t rank = getOperand().getType().getRank();
      return getAxis() < 0 ? getAxis() + rank : getAxis();
    }
  }];
}

def ZT_SoftmaxOp : ZT_AxisOp<"softmax", "result[i] = exp(x[i]) / sum_j exp(x[j])">;
def ZT_LogSoftmaxOp : ZT_AxisOp<"log_softmax", "result[i] = x[i] - log(sum_j exp(x[j]))">;

def ZT_CumsumOp : ZT_Op<"cumsum", [Pure, SameOperandsAndResultType,
                                    ZT_BuiltByName]> {
  let summary = "running sums along a dimension";
  let description = [{
    `result[..., i, ...] = sum_{j <= i} operand[..., j, ...]` along `dim`
    (negative counts from the end); with `reverse`, from the end
    (`j >= i`), which is the gradient of the forward sums. Each line is
    summed in order, so every executor gives the same bits. On i32 and i64
    too (wrapping around on overflow, no gradient).

    ```mlir
    %s = zt.cumsum %x {dim = 1 : i64} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins ZT_NumericTensor:$operand, I64Attr:$dim,
                       UnitAttr:$reverse);
  let results = (outs ZT_NumericTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

def ZT_RotaryOp : ZT_Op<"rotary", [Pure, ZT_BuiltByName]> {
  let summary = "rotary position embeddings (RoPE) over the last dimension";
  let description = [{
    `result = x * cos + rotate_half(x) * sin`, where `rotate_half(x)` is
    `concat(-x[..., D/2:], x[..., :D/2])` over the last dimension `D`
    (even): Llama's, Qwen2's and Mistral's `apply_rotary_pos_emb`. `cos`
    and `sin` have `x`'s shape (a broadcast over the heads is read through
    strides, not copied) and its type, or f32 beside bf16 `x` (mixed
    precision keeps the tables f32 and rounds them to bf16 as they are
    read, as `zt.convert` would). Each product and the sum round as the separate
    `mul`, `neg`, `concat` and `add` would store them, so the op gives their
    bits. With `transposed`, the transposed map, which is the gradient:
    `result = x * cos + rotate_half^T(x * sin)`, with `rotate_half^T(z) =
    concat(z[..., D/2:], -z[..., :D/2])`. `x` may be read, and the result
    written, through a view's steps (the heads of a projection where they
    lie), so the transposes around it copy nothing.

    ```mlir
    %q = zt.rotary %x, %cos, %sin : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$x, ZT_FloatTensor:$cos,
                       ZT_FloatTensor:$sin, UnitAttr:$transposed);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

class ZT_ConvOp<string mnemonic, dag operands, string opSummary,
                string opText> : ZT_Op<mnemonic, [Pure, ZT_BuiltByName]> {
  let summary = opSummary;
  let description = opText;
  let arguments = !con(operands, (ins DenseI64ArrayAttr:$stride,
      DenseI64ArrayAttr:$padding, DenseI64ArrayAttr:$dilation,
      I64Attr:$groups));
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def ZT_Conv2dOp : ZT_ConvOp<"conv2d",
    (ins ZT_FloatTensor:$input, ZT_FloatTensor:$weight),
    "2-D convolution (PyTorch's conv2d, NCHW)", [{
    `input` `[N, C, H, W]`, `weight` `[O, C / groups, KH, KW]`; `stride`,
    `padding` (zeros on both sides) and `dilation` give two numbers each,
    `groups` divides `C` and `O` (`groups = C` is a depthwise convolution).
    `result[n, o, i, j] = sum_{c, r, s} weight[o, c, r, s] *
    input[n, g C/groups + c, i sh - ph + r dh, j sw - pw + s dw]` with `g`
    the group of output channel `o`, `[N, O, OH, OW]`,
    `OH = (H + 2 ph - dh (KH - 1) - 1) / sh + 1` (likewise `OW`). A bias is
    an add. The kernels lay one image's patches out as columns (im2col, in
    the workspace) and multiply them by the weight, a product per group.

    ```mlir
    %y = zt.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x32x32xf32>
    ```
  }]>;

def ZT_Conv2dInputGradOp : ZT_ConvOp<"conv2d_input_grad",
    (ins ZT_FloatTensor:$input, ZT_FloatTensor:$weight,
         ZT_FloatTensor:$result_grad),
    "gradient of zt.conv2d with respect to its input", [{
    From the forward's operands (the input for its shape) and the result's
    gradient: `weight^T result_grad` per group as columns, gathered back to
    the input's positions (col2im, summed in a fixed order: the same bits on
    every executor). Attributes as the forward's.
  }]>;

def ZT_Conv2dWeightGradOp : ZT_ConvOp<"conv2d_weight_grad",
    (ins ZT_FloatTensor:$input, ZT_FloatTensor:$weight,
         ZT_FloatTensor:$result_grad),
    "gradient of zt.conv2d with respect to its weight", [{
    `sum_n result_grad[n] columns(input[n])^T` per group, the images in
    order (the weight is read for its shape). Attributes as the forward's.
  }]>;

class ZT_PoolOp<string mnemonic, dag operands, string opSummary,
                string opText> : ZT_Op<mnemonic, [Pure, ZT_BuiltByName]> {
  let summary = opSummary;
  let description = opText;
  let arguments = !con(operands, (ins DenseI64ArrayAttr:$kernel_size,
      DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding,
      DenseI64ArrayAttr:$dilation, UnitAttr:$ceil_mode));
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def ZT_MaxPool2dOp : ZT_PoolOp<"max_pool2d", (ins ZT_FloatTensor:$input),
    "2-D max pooling (PyTorch's max_pool2d, NCHW)", [{
    Each output element is the maximum of its `kernel_size` window of its
    channel's plane, the windows placed as a convolution's (`stride`,
    `padding` read as -inf, at most half the window, `dilation`). With
    `ceil_mode` the output size rounds up, as PyTorch's: a last window may
    hang over the input's end (its part inside counts), but starts inside
    the input or its left padding. A NaN in a window is its maximum, as in
    PyTorch. No indices are stored: the
    gradient finds each window's first maximum again from the input.

    ```mlir
    %y = zt.max_pool2d %x {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>} : (tensor<8x64x16x16xf32>) -> tensor<8x64x8x8xf32>
    ```
  }]>;

def ZT_MaxPool2dGradOp : ZT_PoolOp<"max_pool2d_grad",
    (ins ZT_FloatTensor:$input, ZT_FloatTensor:$result_grad),
    "gradient of zt.max_pool2d", [{
    Each input element gets the sum of the result gradients of the windows
    whose first maximum (in row-major order) it is, as PyTorch routes it
    through its indices; gathered in a fixed order, the same bits on every
    executor. Attributes as the forward's.
  }]>;

def ZT_BatchNormStatsOp : ZT_Op<"batch_norm_stats", [Pure, ZT_BuiltByName]> {
  let summary = "a batch's per-channel mean and variance (BatchNorm in training)";
  let description = [{
    `input` `[N, C, ...]`; for each channel `c`, over every other dimension
    (`M` elements): `result[0, c] = mean`, `result[1, c] = mean((x - mean)^2)`
    (biased, as BatchNorm normalizes by; the running variance's unbiased one
    is `M / (M - 1)` of it). Summed in a fixed order: the same bits on the
    CPU and the emulator.

    ```mlir
    %s = zt.batch_norm_stats %x : (tensor<8x16x4x4xf32>) -> tensor<2x16xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$input);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def ZT_BatchNormStatsGradOp : ZT_Op<"batch_norm_stats_grad", [Pure, ZT_BuiltByName]> {
  let summary = "gradient of zt.batch_norm_stats";
  let description = [{
    `input_grad = (stats_grad[0, c] + 2 stats_grad[1, c] (x - mean)) / M`
    per element of channel `c`.
  }];
  let arguments = (ins ZT_FloatTensor:$input, ZT_FloatTensor:$stats,
                       ZT_FloatTensor:$stats_grad);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def ZT_BatchNormOp : ZT_Op<"batch_norm", [Pure, ZT_BuiltByName]> {
  let summary = "BatchNorm in training: a batch normalized by its own statistics";
  let description = [{
    `input` `[N, C, ...]`, `stats` its `zt.batch_norm_stats`, `gamma` and
    `beta` `[C]`: `result = (x - mean[c]) / sqrt(var[c] + epsilon) *
    gamma[c] + beta[c]` per element of channel `c`: one pass over the input,
    cheap to compute again in the backward. Its gradient
    (`zt.batch_norm_grad`) is training-mode BatchNorm's, which counts the
    statistics' dependence on the input; so zt-autodiff requires `stats`
    to be `zt.batch_norm_stats` of this very `input` (gradients through the
    statistics' other uses add to it as usual).

    ```mlir
    %y = zt.batch_norm %x, %s, %g, %b {epsilon = 1.0e-05 : f64} : (tensor<8x16x4x4xf32>, tensor<2x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x16x4x4xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$input, ZT_FloatTensor:$stats,
                       ZT_FloatTensor:$gamma, ZT_FloatTensor:$beta,
                       F64Attr:$epsilon);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def ZT_BatchNormGradOp : ZT_Op<"batch_norm_grad", [Pure, ZT_BuiltByName]> {
  let summary = "gradient of zt.batch_norm in training";
  let description = [{
    Per channel, from the input, its statistics, `gamma` and the result's
    gradient `dy` (`M` elements, `rstd = 1 / sqrt(var + epsilon)`):
    `beta_grad = sum(dy)`, `gamma_grad = sum(dy (x - mean)) rstd`,
    `input_grad = (dy - sum(dy) / M - (x - mean) rstd^2 sum(dy (x - mean)) /
    M) rstd gamma`: PyTorch's training-mode gradient, in two passes over the
    channel.
  }];
  let arguments = (ins ZT_FloatTensor:$input, ZT_FloatTensor:$stats,
                       ZT_FloatTensor:$gamma, ZT_FloatTensor:$result_grad,
                       F64Attr:$epsilon);
  let results = (outs ZT_FloatTensor:$input_grad, ZT_FloatTensor:$gamma_grad,
                      ZT_FloatTensor:$beta_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def ZT_LayerNormOp : ZT_Op<"layer_norm", [Pure, ZT_KernelRules,
    AllTypesMatch<["operand", "result"]>,
    AllElementTypesMatch<["gamma", "beta"]>]> {
  let summary = "layer normalisation over the last dimension";
  let description = [{
    For each row `x` along the last dimension (size `D`):
    `mu = mean(x)`, `var = mean((x - mu)^2)` (biased),
    `result = (x - mu) / sqrt(var + epsilon) * gamma + beta`.
    `gamma` and `beta` have shape `[D]`; `epsilon > 0`. The operand and
    result are f32, or bf16 (mixed precision: the statistics computed in
    f32); `gamma` and `beta` are f32.

    ```mlir
    %y = zt.layer_norm %x, %g, %b, eps = 1.0e-05 : (tensor<4x64x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<4x64x128xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$operand, ZT_FloatTensor:$gamma,
                       ZT_FloatTensor:$beta, F64Attr:$epsilon);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `,` $gamma `,` $beta `,` `eps` `=` $epsilon attr-dict `:` functional-type(operands, results)
  }];
}

def ZT_RmsNormOp : ZT_Op<"rms_norm", [Pure, ZT_KernelRules,
    AllTypesMatch<["operand", "result"]>]> {
  let summary = "RMS normalisation over the last dimension";
  let description = [{
    For each row `x` along the last dimension (size `D`):
    `result = x / sqrt(mean(x^2) + epsilon) * gamma`, `gamma` of shape `[D]`,
    `epsilon > 0`. The operand and result are f32, or bf16 (mixed
    precision, computed in f32); `gamma` is f32.

    ```mlir
    %y = zt.rms_norm %x, %g, eps = 1.0e-06 : (tensor<4x64x128xf32>, tensor<128xf32>) -> tensor<4x64x128xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$operand, ZT_FloatTensor:$gamma, F64Attr:$epsilon);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `,` $gamma `,` `eps` `=` $epsilon attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Lookup
//===----------------------------------------------------------------------===//

def ZT_EmbeddingOp : ZT_Op<"embedding", [Pure, ZT_KernelRules,
    AllElementTypesMatch<["table", "result"]>]> {
  let summary = "gather rows of an embedding table";
  let description = [{
    `table` is `[V, D]`, `indices` any integer tensor of shape `[S...]`;
    `result[s..., d] = table[indices[s...], d]`, of shape `[S..., D]`.
    An index outside `[0, V)` is a runtime error reported by the executor,
    never an out-of-bounds read.

    ```mlir
    %e = zt.embedding %table, %tokens : (tensor<512x128xf32>, tensor<4x64xi32>) -> tensor<4x64x128xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$table, ZT_IndexTensor:$indices);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = "$table `,` $indices attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def ZT_SoftmaxCrossEntropyOp : ZT_Op<"softmax_cross_entropy", [Pure]> {
  let summary = "mean cross-entropy of logits against integer labels";
  let description = [{
    `logits` is `[N..., C]`, `labels` an integer tensor of shape `[N...]`
    with class ids in `[0, C)`. The result is the rank-0 batch mean over all
    `N...` rows of `-log_softmax(logits)[row, labels[row]]`, computed as
    `logsumexp(row) - row[label]` with the row maximum subtracted first, so
    it never overflows. The result has the logits' element type, except that
    bf16 logits (mixed precision) give an f32 loss, computed in f32.

    With `ignore_index` (PyTorch's, -100 by default there), rows whose label
    is that value add nothing and the mean is over the other rows (NaN when
    every row is ignored, as in PyTorch): padding in a batch of sequences.
    With `label_smoothing` `e` in [0, 1] (PyTorch's), a row's loss is
    `logsumexp(row) - (1 - e) row[label] - e mean_c row[c]`: the target puts
    `e / C` on every class besides `1 - e` on the label.

    ```mlir
    %loss = zt.softmax_cross_entropy %logits, %labels : (tensor<32x10xf32>, tensor<32xi32>) -> tensor<f32>
    %masked = zt.softmax_cross_entropy %logits, %labels {ignore_index = -100 : i64} : (tensor<32x10xf32>, tensor<32xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$logits, ZT_IndexTensor:$labels,
                       OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<F64Attr>:$label_smoothing);
  let results = (outs ZT_FloatScalar:$result);
  let assemblyFormat = "$logits `,` $labels attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def ZT_MseOp : ZT_Op<"mse", [Pure, ZT_KernelRules, AllTypesMatch<["prediction", "target"]>,
    AllElementTypesMatch<["prediction", "result"]>]> {
  let summary = "mean squared error";
  let description = [{
    `result = mean_i (prediction[i] - target[i])^2` over every element, a
    rank-0 tensor.

    ```mlir
    %loss = zt.mse %pred, %target : (tensor<32x1xf32>, tensor<32x1xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$prediction, ZT_FloatTensor:$target);
  let results = (outs ZT_FloatScalar:$result);
  let assemblyFormat = "$prediction `,` $target attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Randomness
//===----------------------------------------------------------------------===//

def ZT_DropoutOp : ZT_Op<"dropout", [Pure, ZT_KernelRules,
    AllTypesMatch<["operand", "result"]>]> {
  let summary = "inverted dropout with a counter-based mask";
  let description = [{
    `result[i] = keep(i) ? x[i] / (1 - rate) : 0`. Whether element `i` is
    kept is a pure function of `(seed, step, i)`: a Philox-4x32-10 draw keyed
    by `seed` at counter `(i, step)`, kept when its uniform value in `[0, 1)`
    is at least `rate`. The backward pass recomputes the mask from the same
    three numbers, so it is never stored. `step` is the step counter (a
    `step` argument), `seed` distinguishes dropout sites; `0 <= rate < 1`.

    ```mlir
    %d = zt.dropout %x, %step, rate = 1.000000e-01, seed = 7 : (tensor<4x64x128xf32>, tensor<i64>) -> tensor<4x64x128xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$operand, ZT_StepScalar:$step,
                       F64Attr:$rate, I64Attr:$seed);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `,` $step `,` `rate` `=` $rate `,` `seed` `=` $seed attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Backward ops
//
// zt-autodiff emits these for the vector-Jacobian products that are not a
// short composition of forward ops. Each is one fused kernel that reads what
// the forward saved (the operand or the result, whichever lets the other die
// earlier) and the incoming gradient, so the backward never materialises a
// Jacobian-sized intermediate.
//===----------------------------------------------------------------------===//

def ZT_ConvertOp : ZT_Op<"convert", [Pure, SameOperandsAndResultShape]> {
  let summary = "convert between element types";
  let description = [{
    `result[i] = operand[i]` in the result's element type, any of f32, bf16,
    i32, i64 and i1 to another: f32 to bf16 rounds to nearest, ties to even
    (NaN stays NaN); bf16 to f32 and integers and bools to wider types are
    exact; an integer or bool to f32 or bf16 rounds to nearest; a float to
    an integer truncates toward zero (PyTorch's `.long()`), NaN giving 0
    and values beyond the type's range its nearest end; i64 to i32 keeps the
    low 32 bits (wraps, as PyTorch); to i1 is `!= 0`, from i1 0 or 1.
    `zt-mixed-precision` places f32/bf16 conversions around the matrix
    products; the gradient of a conversion between floats is the conversion
    back (a conversion from or to an integer or bool has none).

    ```mlir
    %h = zt.convert %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    %n = zt.convert %m : tensor<4x8xi1> -> tensor<4x8xi32>
    ```
  }];
  let arguments = (ins ZT_AnyTensor:$operand);
  let results = (outs ZT_AnyTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
  let hasVerifier = 1;
}

def ZT_ScaleOp : ZT_Op<"scale", [Pure, ZT_KernelRules, SameOperandsAndResultType,
                                  Elementwise]> {
  let summary = "multiply by a compile-time number";
  let description = [{
    `result[i] = operand[i] * factor`. The gradients of `mean` and `sqrt`
    scale by a number known at compile time; a rank-0 constant broadcast to
    the full shape would cost a full-size buffer instead.

    ```mlir
    %r = zt.scale %x, factor = 5.000000e-01 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$operand, F64Attr:$factor);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = "$operand `,` `factor` `=` $factor attr-dict `:` type($result)";
}

def ZT_FusedOp : ZT_Op<"fused", [Pure, ZT_KernelRules]> {
  let summary = "a chain of element ops run as one kernel";
  let description = [{
    zt-fuse-elementwise's result: a short program of float element rows
    (unary, binary and gradient rows, `scale` and `dropout`) computed per
    element in one pass, so the values between the steps never reach
    memory. Step `k` is the row `ops[k]`; its operands are the next entries
    of `args` (one per operand of the row): `0 .. n-1` name the op's `n`
    float operands, `n + j` the result of step `j < k`. Its numbers (the
    row's, in its order; `scale`'s factor; `dropout`'s rate) are the next
    entries of `numbers`; a dropout's seed is the next of `seeds`, and its
    step counter the op's last operand (after the `n`), as `zt.dropout`
    draws its mask. Result `r` is the
    value `outputs[r]` names (a step's; the last step's among them): a
    value the rest of the function also reads is written out as well.
    Every operand and result has one float type and shape; operands may be
    broadcasts read through strides. Each step's value is rounded to the
    element type before the next reads it, as the unfused ops store it, so
    the results have the bits of the chain.

    ```mlir
    // a = x + bias, also a result; gelu(a) - y
    %a, %r = zt.fused(%x, %bias, %y) {ops = ["add", "gelu", "sub"], args = array<i64: 0, 1, 3, 4, 2>, numbers = array<f64>, outputs = array<i64: 3, 5>, seeds = array<i64>} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
    ```
  }];
  let arguments = (ins Variadic<ZT_AnyTensor>:$inputs, StrArrayAttr:$ops,
                       DenseI64ArrayAttr:$args, DenseF64ArrayAttr:$numbers,
                       DenseI64ArrayAttr:$outputs, DenseI64ArrayAttr:$seeds);
  let results = (outs Variadic<ZT_FloatTensor>:$results);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type(operands, results)
  }];
}

// `saved` is the forward value the derivative is computed from: the operand
// `x` or the result `y` of the forward op, as the formula says.
class ZT_UnaryGradOp<string forward, string savedName, string formula,
                     dag params>
    : ZT_Op<forward # "_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "gradient of zt." # forward;
  let description = [{
    The vector-Jacobian product of `zt.}] # forward # [{`:
    `result[i] = }] # formula # [{`, where `saved` is the forward op's
    }] # savedName # [{ and `grad` the gradient of its result.

    ```mlir
    %dx = zt.}] # forward # [{_grad %saved, %dy : tensor<4x8xf32>
    ```
  }];
  let arguments = !con((ins ZT_FloatTensor:$saved, ZT_FloatTensor:$grad),
                       params);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = "$saved `,` $grad attr-dict `:` type($result)";
}

// Comparisons: operands of one type (float, integer or bool), a bool result.
class ZT_CompareOp<string mnemonic, string formula, dag params,
                   list<Trait> traits = []>
    : ZT_Op<mnemonic, !listconcat(traits, [Pure, SameTypeOperands,
          AllShapesMatch<["lhs", "rhs", "result"]>, Elementwise])> {
  let summary = "elementwise " # formula;
  let description = [{
    `result[i] = }] # formula # [{`, a bool, for every element `i`. Both
    operands have one type (float, integer or bool); broadcast first with
    `zt.broadcast_in_dim`.

    ```mlir
    %m = zt.}] # mnemonic # [{ %a, %b : tensor<4x8xf32> -> tensor<4x8xi1>
    ```
  }];
  let arguments = !con((ins ZT_AnyTensor:$lhs, ZT_AnyTensor:$rhs), params);
  let results = (outs ZT_BoolTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)";
}

// Logical ops on bool tensors.
class ZT_BoolUnaryOp<string mnemonic, string formula, dag params>
    : ZT_Op<mnemonic, [Pure, SameOperandsAndResultType, Elementwise]> {
  let summary = "elementwise " # formula;
  let description = [{
    `result[i] = }] # formula # [{` for every element `i` of a bool tensor.

    ```mlir
    %r = zt.}] # mnemonic # [{ %m : tensor<4x8xi1>
    ```
  }];
  let arguments = !con((ins ZT_BoolTensor:$operand), params);
  let results = (outs ZT_BoolTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

class ZT_BoolBinaryOp<string mnemonic, string formula, dag params,
                      list<Trait> traits = []>
    : ZT_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType,
                                           Elementwise])> {
  let summary = "elementwise " # formula;
  let description = [{
    `result[i] = }] # formula # [{` for every element `i` of two bool
    tensors.

    ```mlir
    %r = zt.}] # mnemonic # [{ %m, %n : tensor<4x8xi1>
    ```
  }];
  let arguments = !con((ins ZT_BoolTensor:$lhs, ZT_BoolTensor:$rhs), params);
  let results = (outs ZT_BoolTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

// A float tensor kept where a bool condition holds, zero elsewhere.
class ZT_MaskOp<string mnemonic, string formula, dag params>
    : ZT_Op<mnemonic, [Pure, AllTypesMatch<["operand", "result"]>,
                       AllShapesMatch<["condition", "operand"]>, Elementwise]> {
  let summary = "elementwise " # formula;
  let description = [{
    `result[i] = }] # formula # [{` for every element `i`.

    ```mlir
    %r = zt.}] # mnemonic # [{ %m, %x : tensor<4x8xi1>, tensor<4x8xf32>
    ```
  }];
  let arguments = !con((ins ZT_BoolTensor:$condition,
                            ZT_FloatTensor:$operand), params);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat =
      "$condition `,` $operand attr-dict `:` type($condition) `,` type($result)";
}

// One of two tensors of one type, element by element, by a bool condition.
class ZT_SelectOp<string mnemonic, string formula, dag params>
    : ZT_Op<mnemonic, [Pure, AllTypesMatch<["on_true", "on_false", "result"]>,
                       AllShapesMatch<["condition", "on_true"]>, Elementwise]> {
  let summary = "elementwise " # formula;
  let description = [{
    `result[i] = }] # formula # [{` for every element `i`; the two
    choices have one type (float, integer or bool). Its gradient reaches
    each choice where it was taken (`zt.mask`).

    ```mlir
    %r = zt.}] # mnemonic # [{ %m, %a, %b : tensor<4x8xi1>, tensor<4x8xf32>
    ```
  }];
  let arguments = !con((ins ZT_BoolTensor:$condition, ZT_AnyTensor:$on_true,
                            ZT_AnyTensor:$on_false), params);
  let results = (outs ZT_AnyTensor:$result);
  let assemblyFormat = "$condition `,` $on_true `,` $on_false attr-dict `:` "
                       "type($condition) `,` type($result)";
}

include "ZTElementOps.td"

class ZT_AxisGradOp<string forward, string formula> : ZT_Op<forward # "_grad",
    [Pure, ZT_KernelRules, SameOperandsAndResultType]> {
  let summary = "gradient of zt." # forward;
  let description = [{
    The vector-Jacobian product of `zt.}] # forward # [{` along `axis`, from
    its result `y` and the gradient `grad` of that result:
    `}] # formula # [{`, the sum taken along the axis.

    ```mlir
    %dx = zt.}] # forward # [{_grad %y, %dy, axis = -1 : tensor<32x10xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$result_value, ZT_FloatTensor:$grad,
                       I64Attr:$axis);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = [{
    $result_value `,` $grad `,` `axis` `=` $axis attr-dict `:` type($result)
  }];
}

def ZT_SoftmaxGradOp : ZT_AxisGradOp<"softmax",
    "result[i] = y[i] * (grad[i] - sum_j grad[j] * y[j])">;
def ZT_LogSoftmaxGradOp : ZT_AxisGradOp<"log_softmax",
    "result[i] = grad[i] - exp(y[i]) * sum_j grad[j]">;

def ZT_MaxGradOp : ZT_Op<"max_grad", [Pure, ZT_KernelRules,
    AllTypesMatch<["operand", "result"]>]> {
  let summary = "gradient of zt.max";
  let description = [{
    Routes each reduced row's gradient to the first maximal element of the
    row in row-major order (recomputed from `operand`); every other element
    gets 0. `dims` and `keep_dims` are the forward `zt.max`'s, and `grad` has
    the forward result's shape.

    ```mlir
    %dx = zt.max_grad %x, %dy, dims = [1] : (tensor<32x10xf32>, tensor<32xf32>) -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$operand, ZT_FloatTensor:$grad,
                       DenseI64ArrayAttr:$dims, UnitAttr:$keep_dims);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `,` $grad `,` `dims` `=` $dims attr-dict `:` functional-type(operands, results)
  }];
}

def ZT_SliceGradOp : ZT_Op<"slice_grad", [Pure, ZT_KernelRules,
    AllElementTypesMatch<["grad", "result"]>]> {
  let summary = "gradient of zt.slice: scatter into zeros";
  let description = [{
    The result has the forward slice's operand shape: the elements the slice
    took receive `grad`, every other element is 0. The indices are the
    forward slice's.

    ```mlir
    %dx = zt.slice_grad %dy [0:4, 2:8:2] : (tensor<4x3xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$grad, DenseI64ArrayAttr:$start_indices,
                       DenseI64ArrayAttr:$limit_indices, DenseI64ArrayAttr:$strides);
  let results = (outs ZT_FloatTensor:$result);
  let hasCustomAssemblyFormat = 1;
}

def ZT_LayerNormGradOp : ZT_Op<"layer_norm_grad", [Pure, ZT_KernelRules,
    AllTypesMatch<["operand", "grad", "operand_grad"]>,
    AllTypesMatch<["gamma", "gamma_grad", "beta_grad"]>]> {
  let summary = "gradient of zt.layer_norm";
  let description = [{
    Recomputes each row's mean and `rstd = 1/sqrt(var + epsilon)` from the
    saved operand `x` (two numbers per row, cheaper than saving them), then,
    with `xhat = (x - mu) * rstd` and `g = grad * gamma`:
    `operand_grad = rstd * (g - mean(g) - xhat * mean(g * xhat))` per row,
    `gamma_grad = sum over rows of grad * xhat`, `beta_grad = sum over rows of grad`.

    ```mlir
    %dx, %dg, %db = zt.layer_norm_grad %x, %g, %dy, eps = 1.0e-05 : (tensor<4x16xf32>, tensor<16xf32>, tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$operand, ZT_FloatTensor:$gamma,
                       ZT_FloatTensor:$grad, F64Attr:$epsilon);
  let results = (outs ZT_FloatTensor:$operand_grad, ZT_FloatTensor:$gamma_grad,
                      ZT_FloatTensor:$beta_grad);
  let assemblyFormat = [{
    $operand `,` $gamma `,` $grad `,` `eps` `=` $epsilon attr-dict `:` functional-type(operands, results)
  }];
}

def ZT_RmsNormGradOp : ZT_Op<"rms_norm_grad", [Pure, ZT_KernelRules,
    AllTypesMatch<["operand", "grad", "operand_grad"]>,
    AllTypesMatch<["gamma", "gamma_grad"]>]> {
  let summary = "gradient of zt.rms_norm";
  let description = [{
    Recomputes each row's `r = 1/sqrt(mean(x^2) + epsilon)` from the saved
    operand `x`; with `g = grad * gamma`:
    `operand_grad = r * g - x * r^3 * mean(g * x)` per row,
    `gamma_grad = sum over rows of grad * x * r`.

    ```mlir
    %dx, %dg = zt.rms_norm_grad %x, %g, %dy, eps = 1.0e-06 : (tensor<4x16xf32>, tensor<16xf32>, tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$operand, ZT_FloatTensor:$gamma,
                       ZT_FloatTensor:$grad, F64Attr:$epsilon);
  let results = (outs ZT_FloatTensor:$operand_grad, ZT_FloatTensor:$gamma_grad);
  let assemblyFormat = [{
    $operand `,` $gamma `,` $grad `,` `eps` `=` $epsilon attr-dict `:` functional-type(operands, results)
  }];
}

def ZT_EmbeddingGradOp : ZT_Op<"embedding_grad", [Pure, ZT_KernelRules,
    AllElementTypesMatch<["grad", "result"]>]> {
  let summary = "gradient of zt.embedding: scatter-add rows";
  let description = [{
    The result is a `[V, D]` table, zero except that row `indices[s...]`
    accumulates `grad[s..., :]` for every position `s`, in row-major order of
    the positions (deterministic, no atomics). `V` comes from the result
    type; an index outside `[0, V)` is a runtime error.

    ```mlir
    %dt = zt.embedding_grad %tokens, %dy : (tensor<4x64xi32>, tensor<4x64x128xf32>) -> tensor<512x128xf32>
    ```
  }];
  let arguments = (ins ZT_IndexTensor:$indices, ZT_FloatTensor:$grad);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = "$indices `,` $grad attr-dict `:` functional-type(operands, results)";
}

def ZT_AttentionGradOp : ZT_Op<"attention_grad", [Pure, ZT_KernelRules,
    AttrSizedOperandSegments, AllTypesMatch<["query", "query_grad"]>, AllTypesMatch<["key", "key_grad"]>,
    AllTypesMatch<["value", "value_grad"]>,
    AllTypesMatch<["result", "result_grad"]>]> {
  let summary = "gradient of zt.attention";
  let description = [{
    From the forward's operands, its `result` and `logsumexp`, and the
    result's gradient `dy`, a block of query rows at a time: the
    probabilities `p[q, k] = exp(s[q, k] - logsumexp[q])` are recomputed,
    `dp = dy value^T`, `ds = p * (dp - rowsum(dy * result))`, and
    `query_grad = scale * ds key`, `key_grad = scale * ds^T query`,
    `value_grad = p^T dy` (the flash-attention backward), with the
    forward's `mask` when it had one; with grouped-query attention the key
    and value gradients sum over the query heads reading each. With the
    forward's `dropout`, `step` and `seed`, the same mask is drawn again:
    `value_grad = p'^T dy` with the dropped probabilities `p'`, and `dp` is
    dropped out the same way before `ds`. With bf16 operands (the
    forward's), `p` and `ds` are computed in f32 and rounded to bf16 for the
    products, and the key and value gradients are summed in f32 over the
    blocks and rounded once.

    ```mlir
    %dq, %dk, %dv = zt.attention_grad %q, %k, %v, %y, %lse, %dy, scale = 1.250000e-01 causal : (tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>, tensor<4x16x8xf32>) -> (tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>)
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$query, ZT_FloatTensor:$key,
                       ZT_FloatTensor:$value, ZT_FloatTensor:$result,
                       ZT_FloatTensor:$logsumexp, ZT_FloatTensor:$result_grad,
                       Optional<ZT_BoolTensor>:$mask,
                       Optional<ZT_StepScalar>:$step,
                       F64Attr:$scale, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$dropout,
                       OptionalAttr<I64Attr>:$seed);
  let results = (outs ZT_FloatTensor:$query_grad, ZT_FloatTensor:$key_grad,
                      ZT_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $result `,` $logsumexp `,` $result_grad (`mask` $mask^)? (`step` $step^)? `,` `scale` `=` $scale (`causal` $causal^)? (`dropout` `=` $dropout^ `seed` `=` $seed)? attr-dict `:` functional-type(operands, results)
  }];
}

def ZT_SoftmaxCrossEntropyGradOp : ZT_Op<"softmax_cross_entropy_grad", [Pure,
    AllTypesMatch<["logits", "result"]>]> {
  let summary = "gradient of zt.softmax_cross_entropy";
  let description = [{
    `result[row, c] = loss_grad * (softmax(logits[row])[c] - (c == labels[row])) / rows`,
    with `rows` the number of label positions (with `ignore_index`: of the
    labels not ignored; an ignored row's gradient is 0); with
    `label_smoothing` `e`, the one-hot is `(1 - e) onehot + e / C`. The probabilities
    are recomputed from the logits, so the forward stores none. `loss_grad`
    has the loss's element type (f32 for bf16 logits).

    ```mlir
    %dl = zt.softmax_cross_entropy_grad %logits, %labels, %dloss : (tensor<32x10xf32>, tensor<32xi32>, tensor<f32>) -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$logits, ZT_IndexTensor:$labels,
                       ZT_FloatScalar:$loss_grad,
                       OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<F64Attr>:$label_smoothing);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $loss_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def ZT_SoftmaxCrossEntropyFusedOp : ZT_Op<"softmax_cross_entropy_fused", [Pure,
    ZT_KernelRules]> {
  let summary = "the loss and the logits' gradient in one pass (zt-fuse-classifier)";
  let description = [{
    `zt.softmax_cross_entropy` and `zt.softmax_cross_entropy_grad` of the
    same logits, labels and attributes as one kernel, made by
    zt-fuse-classifier: each row's max and exp-sum are computed once, and
    the row's loss and its gradient (scaled by `loss_grad`, known before
    the loss) written from them, with the same bits as the two ops. The
    logits die here, so the gradient is usually written over them: the full
    softmax is never stored and the logits are read once in the step
    instead of twice (llm.c's fused classifier). `loss` is the mean loss as
    `zt.softmax_cross_entropy` gives it.

    ```mlir
    %loss, %dlogits = zt.softmax_cross_entropy_fused %logits, %labels, %dloss : (tensor<32x10xf32>, tensor<32xi32>, tensor<f32>) -> (tensor<f32>, tensor<32x10xf32>)
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$logits, ZT_IndexTensor:$labels,
                       ZT_FloatScalar:$loss_grad,
                       OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<F64Attr>:$label_smoothing);
  let results = (outs ZT_FloatScalar:$loss, ZT_FloatTensor:$logits_grad);
  let assemblyFormat = [{
    $logits `,` $labels `,` $loss_grad attr-dict `:` functional-type(operands, results)
  }];
}

def ZT_MseGradOp : ZT_Op<"mse_grad", [Pure, ZT_KernelRules,
    AllTypesMatch<["prediction", "target", "result"]>,
    AllElementTypesMatch<["prediction", "loss_grad"]>]> {
  let summary = "gradient of zt.mse with respect to the prediction";
  let description = [{
    `result[i] = loss_grad * 2 * (prediction[i] - target[i]) / n`, `n` the
    element count. The target's gradient is its negation.

    ```mlir
    %dp = zt.mse_grad %pred, %target, %dloss : (tensor<32x1xf32>, tensor<32x1xf32>, tensor<f32>) -> tensor<32x1xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$prediction, ZT_FloatTensor:$target,
                       ZT_FloatScalar:$loss_grad);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = [{
    $prediction `,` $target `,` $loss_grad attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

def ZT_SgdOp : ZT_Op<"sgd", [Pure, AttrSizedOperandSegments]> {
  let summary = "one SGD step, with optional momentum and weight decay";
  let description = [{
    With `g = grad + weight_decay * param`:
    without momentum (`momentum = 0`, no buffer),
    `new_param = param - lr * g`; with momentum,
    `new_buf = momentum * buf + g` and `new_param = param - lr * new_buf`
    (`nesterov`: `param - lr * (g + momentum * new_buf)`).

    The updated values are new SSA values; `zt-optimizer` ties them to the
    persistent slots of `param` and `buf` so the update happens in place.
    `momentum_buffer` and `new_momentum_buffer` are present exactly when
    `momentum != 0`.

    With `max_grad_norm > 0` (gradient clipping by the global norm, as
    `torch.nn.utils.clip_grad_norm_`), `grad_sum_squares` is the sum of the
    squares of every gradient of the step (`zt.sum_squares`) and `grad` is
    first multiplied by `min(1, max_grad_norm / (sqrt(grad_sum_squares) +
    1e-6))`.

    With an `lr_factor` operand (a learning-rate schedule, `zt.lr_schedule`),
    the step uses `lr * lr_factor` wherever it says `lr`.

    An f32 parameter's `grad` may be bf16 (mixed precision's gradient,
    widened exactly as it is read: `zt-optimizer` drops a conversion only
    the update reads).

    ```mlir
    %p1 = zt.sgd %p, %g {lr = 1.000000e-01 : f64} : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
    %p2, %b2 = zt.sgd %p, %g, %b {lr = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64} : (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>) -> (tensor<10xf32>, tensor<10xf32>)
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$param, ZT_FloatTensor:$grad,
                       Optional<ZT_FloatTensor>:$momentum_buffer,
                       Optional<ZT_FloatScalar>:$grad_sum_squares,
                       F64Attr:$lr,
                       DefaultValuedAttr<F64Attr, "0.0">:$momentum,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       UnitAttr:$nesterov,
                       DefaultValuedAttr<F64Attr, "0.0">:$max_grad_norm,
                       Optional<ZT_FloatScalar>:$lr_factor);
  let results = (outs ZT_FloatTensor:$new_param,
                      Optional<ZT_FloatTensor>:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad (`,` $momentum_buffer^)? (`clip` $grad_sum_squares^)? (`lr_factor` $lr_factor^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def ZT_AdamwOp : ZT_Op<"adamw", [Pure, AttrSizedOperandSegments]> {
  let summary = "one AdamW step (decoupled weight decay)";
  let description = [{
    With `t = step + 1` (the step counter counts from 0):
    `m' = beta1 * m + (1 - beta1) * grad`,
    `v' = beta2 * v + (1 - beta2) * grad^2`,
    `mhat = m' / (1 - beta1^t)`, `vhat = v' / (1 - beta2^t)`,
    `param' = param - lr * (mhat / (sqrt(vhat) + eps) + weight_decay * param)`.
    Results are `(param', m', v')`, tied in place by `zt-optimizer`.
    `0 <= beta1, beta2 < 1`, `eps > 0`, `lr >= 0`, `weight_decay >= 0`.
    With `max_grad_norm > 0`, `grad` is first clipped by the global norm
    from `grad_sum_squares`, as in `zt.sgd`. With an `lr_factor` operand
    (`zt.lr_schedule`), `lr * lr_factor` replaces `lr`, in the weight decay
    too (as a PyTorch scheduler sets the group's lr). An f32 parameter's
    `grad` may be bf16 (mixed precision's gradient, widened exactly as it is
    read: `zt-optimizer` drops a conversion only the update reads).

    ```mlir
    %p1, %m1, %v1 = zt.adamw %p, %g, %m, %v, %step {lr = 1.000000e-03 : f64} : (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<i64>) -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>)
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$param, ZT_FloatTensor:$grad,
                       ZT_FloatTensor:$exp_avg, ZT_FloatTensor:$exp_avg_sq,
                       ZT_StepScalar:$step,
                       F64Attr:$lr,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.01">:$weight_decay,
                       Optional<ZT_FloatScalar>:$grad_sum_squares,
                       DefaultValuedAttr<F64Attr, "0.0">:$max_grad_norm,
                       Optional<ZT_FloatScalar>:$lr_factor);
  let results = (outs ZT_FloatTensor:$new_param, ZT_FloatTensor:$new_exp_avg,
                      ZT_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step (`clip` $grad_sum_squares^)? (`lr_factor` $lr_factor^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def ZT_SumSquaresOp : ZT_Op<"sum_squares", [Pure]> {
  let summary = "sum of the squares of every element, plus a running total";
  let description = [{
    `result = partial + sum_i operand[i]^2` (`partial` 0 when absent), a
    rank-0 tensor, summed in f64 and rounded once to the element type (f32
    for a bf16 operand: mixed precision's gradients, widened exactly).
    `zt-optimizer` chains one per gradient, in a fixed order, for clipping
    by the global norm (`max_grad_norm` of `zt.sgd` and `zt.adamw`).

    ```mlir
    %s0 = zt.sum_squares %g0 : (tensor<8x4xf32>) -> tensor<f32>
    %s1 = zt.sum_squares %g1, %s0 : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$operand,
                       Optional<ZT_FloatScalar>:$partial);
  let results = (outs ZT_FloatScalar:$result);
  let assemblyFormat = [{
    $operand (`,` $partial^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def ZT_LrScheduleOp : ZT_Op<"lr_schedule", [Pure]> {
  let summary = "the learning rate's factor at a step: warmup, then decay";
  let description = [{
    The factor `f` that `zt.sgd` and `zt.adamw` multiply their `lr` by
    (their `lr_factor` operand), at `k = step`, the number of optimizer
    steps taken before this one (the step counter counts from 0), with
    `W = warmup_steps` and `D = decay_steps`:

    - `k < W`: `f = (k + 1) / (W + 1)` (linear warmup);
    - neither `cosine` nor `linear`: `f = 1` after the warmup;
    - `k >= D`: `f = min_factor`;
    - else, with `r = (k - W) / (D - W)`: `f = min_factor + c * (1 -
      min_factor)`, `c = (1 + cos(pi r)) / 2` with `cosine`, `1 - r` with
      `linear`.

    That is nanoGPT's schedule (`min_factor = min_lr / lr`); `D` counts
    from step 0, warmup included. `W >= 0`; with a decay `D > W`;
    `0 <= min_factor <= 1`. Computed in f64, rounded once to the result's
    element type.

    ```mlir
    %f = zt.lr_schedule %step {warmup_steps = 100 : i64, decay_steps = 2000 : i64, min_factor = 1.000000e-01 : f64, cosine} : (tensor<i64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins ZT_StepScalar:$step,
                       DefaultValuedAttr<I64Attr, "0">:$warmup_steps,
                       DefaultValuedAttr<I64Attr, "0">:$decay_steps,
                       DefaultValuedAttr<F64Attr, "0.0">:$min_factor,
                       UnitAttr:$cosine, UnitAttr:$linear);
  let results = (outs ZT_FloatScalar:$result);
  let assemblyFormat = [{
    $step attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives (data-parallel training)
//===----------------------------------------------------------------------===//

def ZT_AllReduceOp : ZT_Op<"all_reduce"> {
  let summary = "sum (or mean) of each operand over the ranks of a data-parallel job";
  let description = [{
    Result `i` is operand `i` summed element by element over every rank of
    the job, divided by the number of ranks with `mean`. One op is one
    bucket: the plan places its results side by side in one arena buffer,
    so that the runtime reduces the bucket with one collective call (MPI
    on the CPU, NCCL on a GPU); an operand that dies here is computed in
    its place. With one rank it is the identity. `zt-optimizer` with
    `data-parallel` adds these ops; they have no gradient.

    The op communicates, so it is not `Pure`: it is never folded, merged or
    removed.

    ```mlir
    %r:2 = zt.all_reduce %g0, %g1 {mean} : (tensor<8x4xf32>, tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>)
    ```
  }];
  let arguments = (ins Variadic<ZT_FloatTensor>:$inputs, UnitAttr:$mean);
  let results = (outs Variadic<ZT_FloatTensor>:$results);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def ZT_PackOp : ZT_Op<"pack", [Pure]> {
  let summary = "its operands, placed side by side in one buffer";
  let description = [{
    Result `i` is operand `i`. The plan places the results end to end, with
    no gap, in one arena buffer (a bucket, as `zt.all_reduce`'s), so that
    `zt.reduce_scatter` reads them as one flat tensor; an operand that dies
    here, is an arena buffer of its own and lands at an aligned offset is
    computed in its place, any other is copied in. ZeRO-1's gradients
    (`zt-optimizer` with `shard-optimizer-state`); no gradient.

    ```mlir
    %p:2 = zt.pack %g0, %g1 : (tensor<8x4xf32>, tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>)
    ```
  }];
  let arguments = (ins Variadic<ZT_FloatTensor>:$inputs);
  let results = (outs Variadic<ZT_FloatTensor>:$results);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def ZT_ReduceScatterOp : ZT_Op<"reduce_scatter"> {
  let summary = "this rank's shard of tensors summed (or averaged) over the ranks";
  let description = [{
    ZeRO-1 (`zt-optimizer` with `shard-optimizer-state`): the `inputs`
    (any shapes, one element type, `ranks` x S elements in all), flattened
    end to end, are summed element by element over the `ranks` ranks of the
    job (divided by their number with `mean`), and rank r gets elements
    [r S, (r + 1) S) of the sum. The inputs must lie end to end in memory:
    one tensor (a gradient larger than a bucket is a bucket of its own), or
    the results of one `zt.pack`. The plan runs on
    exactly `ranks` ranks. Not `Pure`: it communicates.

    ```mlir
    %s = zt.reduce_scatter %flat {mean, ranks = 2 : i64} : (tensor<1024xf32>) -> tensor<512xf32>
    %t = zt.reduce_scatter %p#0, %p#1 {mean, ranks = 2 : i64} : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<18xf32>
    ```
  }];
  let arguments = (ins Variadic<ZT_FloatTensor>:$inputs, I64Attr:$ranks,
                       UnitAttr:$mean);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def ZT_AllGatherOp : ZT_Op<"all_gather"> {
  let summary = "every rank's shard, concatenated in rank order";
  let description = [{
    The inverse of `zt.shard`: `operand` (rank 1, S elements) from each of
    the `ranks` ranks, concatenated in rank order (`ranks` x S elements), on
    every rank. Not `Pure`: it communicates.

    ```mlir
    %flat = zt.all_gather %s {ranks = 2 : i64} : (tensor<512xf32>) -> tensor<1024xf32>
    ```
  }];
  let arguments = (ins ZT_FloatTensor:$operand, I64Attr:$ranks);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = [{
    $operand attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def ZT_ShardOp : ZT_Op<"shard", [Pure]> {
  let summary = "this rank's shard of tensors flattened end to end";
  let description = [{
    The `inputs` (any shapes, one element type) flattened and concatenated
    in order, zero padded to `ranks` x S elements, S = ceil(total / ranks);
    on rank r, elements [r S, (r + 1) S): the part of the parameters whose
    optimizer state this rank holds (ZeRO-1). Reads the parameters where
    they are, so the flat whole is never built. No communication.

    ```mlir
    %s = zt.shard %w, %b {ranks = 2 : i64} : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<36xf32>
    ```
  }];
  let arguments = (ins Variadic<ZT_FloatTensor>:$inputs, I64Attr:$ranks);
  let results = (outs ZT_FloatTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // ZCC_DIALECT_ZT_ZTOPS_TD
