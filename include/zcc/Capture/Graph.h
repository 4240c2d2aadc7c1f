//===- Graph.h - capture a training step from code --------------*- C++ -*-===//
//
// A builder for zt programs (docs/capture.md): declare the step's arguments
// by role, call ops that mirror the zt dialect (with NumPy-style broadcasting
// that emits explicit zt.broadcast_in_dim), and compile the result in process
// into a plan and a running session, without writing files:
//
//   zcc::capture::Graph g("mlp_loss");
//   auto x = g.input("images", {32, 784});
//   auto y = g.label("labels", {32});
//   auto w = g.parameter("w1", {784, 10}, Init::uniform(-0.03, 0.03));
//   auto loss = g.softmaxCrossEntropy(g.matmul(x, w), y);
//   Status done = g.finish(loss);       // the first error, with its file:line
//
// Every op records the caller's file:line as its location and is verified as
// it is built. Errors are values: the first one is kept, later ops on a graph
// that failed do nothing and return an invalid Tensor, and status() says
// what went wrong and where. Nothing aborts.
//
// The header is free of MLIR so that bindings (the Python package) compile
// quickly; the graph holds an MLIR module inside.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_CAPTURE_GRAPH_H
#define ZCC_CAPTURE_GRAPH_H

#include "zcc/Compiler/Fit.h"
#include "zcc/Runtime/Plan/ElementKernels.h"
#include "zcc/Runtime/Plan/Plan.h"
#include "zcc/Runtime/Status.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace zcc {
struct CompileOptions;
} // namespace zcc

namespace zcc::capture {

using runtime::Status;

/// Where an op was written. C++ callers get their own file:line through the
/// ZCC_HERE default argument; bindings pass the user's frame.
struct Where {
  std::string file;
  int line = 0;
  /// The caller's file:line when used as a default argument. (A braced
  /// `Where{__builtin_FILE(), __builtin_LINE()}` there gets the declaration's
  /// line from GCC 12; a call with defaulted parameters does not.)
  static Where here(const char *file = __builtin_FILE(),
                    int line = __builtin_LINE()) {
    return Where{file, line};
  }
};

#define ZCC_HERE ::zcc::capture::Where::here()

/// The plan's element types (F32, I32, I64) and their names ("f32").
using runtime::DType;
using runtime::dtypeName;

/// How a parameter starts: a counter-based draw keyed by the run seed and
/// the parameter's name (#zt.init), so initial weights are reproducible.
struct Init {
  /// The order of zt::InitKind. Given: the value comes at load (a
  /// checkpoint or a write); a step before it is an error.
  enum class Kind { Zeros, Ones, Constant, Normal, Uniform, Given };
  Kind kind = Kind::Zeros;
  double first = 0.0, second = 0.0; // (value), (mean, std) or (low, high)

  static Init zeros() { return {Kind::Zeros}; }
  static Init ones() { return {Kind::Ones}; }
  static Init constant(double value) { return {Kind::Constant, value}; }
  static Init normal(double mean, double std) {
    return {Kind::Normal, mean, std};
  }
  static Init uniform(double low, double high) {
    return {Kind::Uniform, low, high};
  }
  static Init given() { return {Kind::Given}; }
};

class Graph;

/// A value of the graph being built: a handle, cheap to copy. An invalid
/// Tensor comes from an op that failed; using it is not an error of its
/// own (the first error is already recorded).
class Tensor {
public:
  Tensor() = default;
  bool valid() const { return graph_ != nullptr && id_ >= 0; }
  explicit operator bool() const { return valid(); }
  const std::vector<int64_t> &shape() const;
  int64_t rank() const { return static_cast<int64_t>(shape().size()); }
  int64_t dim(int64_t index) const; // negative counts from the end
  int64_t numElements() const;
  DType dtype() const;
  Graph *graph() const { return graph_; }
  int32_t id() const { return id_; }

private:
  friend class Graph;
  Tensor(Graph *graph, int32_t id) : graph_(graph), id_(id) {}
  Graph *graph_ = nullptr;
  int32_t id_ = -1;
};

class Graph {
public:
  /// `name` becomes the function's symbol (`@name`).
  explicit Graph(std::string name = "step");
  ~Graph();
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  /// The first error, "file:line: error: message", or ok.
  const Status &status() const;
  bool ok() const { return status().isOk(); }

  // Arguments. Names must be unique; parameters take the current scope's
  // prefix ("h0.attn.w_q").
  Tensor input(const std::string &name, const std::vector<int64_t> &shape,
               DType dtype = DType::F32, Where where = ZCC_HERE);
  Tensor label(const std::string &name, const std::vector<int64_t> &shape,
               DType dtype = DType::I32, Where where = ZCC_HERE);
  Tensor parameter(const std::string &name, const std::vector<int64_t> &shape,
                   Init init, Where where = ZCC_HERE);
  /// State the step reads and may write (BatchNorm's running statistics):
  /// f32, persistent and checkpointed like parameters, never trained.
  Tensor state(const std::string &name, const std::vector<int64_t> &shape,
               Init init, Where where = ZCC_HERE);
  /// The step writes `value` over `state` in place, after every read of its
  /// old value; no gradient flows through it. Once per state.
  void update(Tensor state, Tensor value, Where where = ZCC_HERE);
  /// The step counter (tensor<i64>, written by the runtime), created on
  /// first use; dropout uses it.
  Tensor step(Where where = ZCC_HERE);

  /// Prefixes parameter names while alive: `auto s = g.scope("h0");`.
  class Scope {
  public:
    Scope(Scope &&other) noexcept;
    ~Scope();

  private:
    friend class Graph;
    explicit Scope(Graph *graph) : graph_(graph) {}
    Graph *graph_;
  };
  [[nodiscard]] Scope scope(const std::string &name);
  /// "h0.attn." inside scopes h0 and attn; "" at top level.
  std::string scopePrefix() const;

  /// An element op by its row (ElementKernels.h; element_row::Tanh): the
  /// operands broadcast NumPy-style (explicit zt.broadcast_in_dim), the
  /// params in the row's order (those left out take the row's defaults).
  /// Comparisons and logical ops give bool tensors (DType::Bool), which
  /// where(condition, a, b) and the logical ops take.
  Tensor element(int row, const std::vector<Tensor> &operands,
                 const std::vector<double> &params = {},
                 Where where = ZCC_HERE);

  /// The op of kernel `name` whose rule infers its results
  /// (runtime::kernelInfersResults: `zt.cumsum`, ...), built by name: its
  /// parameters as a plan states them, every one but the unit flags
  /// required, and its results as its rule gives them:
  ///   g.op("cumsum", {x}, {Param::integer("dim", 1)})[0]
  std::vector<Tensor> op(const std::string &name,
                         const std::vector<Tensor> &operands,
                         const std::vector<runtime::Param> &params = {},
                         Where where = ZCC_HERE);

  // One method per row but the gradients, named by the row's method column:
  // add(a, b), tanh(x), geluErf(x) (PyTorch's nn.GELU() default; gelu(x) is
  // the tanh approximation), with the row's params after the operands.
#define ZCC_CAPTURE_PARAMS_P0
#define ZCC_CAPTURE_PARAMS_P1(n0, d0) , double n0 = d0
#define ZCC_CAPTURE_PARAMS_P2(n0, d0, n1, d1) , double n0 = d0, double n1 = d1
#define ZCC_CAPTURE_VALUES_P0 {}
#define ZCC_CAPTURE_VALUES_P1(n0, d0) {n0}
#define ZCC_CAPTURE_VALUES_P2(n0, d0, n1, d1) {n0, n1}
#define ZCC_CAPTURE_Unary(id, method, params)                                  \
  Tensor method(Tensor x ZCC_CAPTURE_PARAMS_##params,                          \
                Where where = ZCC_HERE) {                                      \
    return element(runtime::element_row::id, {x},                              \
                   ZCC_CAPTURE_VALUES_##params, where);                        \
  }
#define ZCC_CAPTURE_Binary(id, method, params)                                 \
  Tensor method(Tensor a, Tensor b ZCC_CAPTURE_PARAMS_##params,                \
                Where where = ZCC_HERE) {                                      \
    return element(runtime::element_row::id, {a, b},                           \
                   ZCC_CAPTURE_VALUES_##params, where);                        \
  }
#define ZCC_CAPTURE_Grad(id, method, params)
#define ZCC_CAPTURE_Compare(id, method, params)                                \
  ZCC_CAPTURE_Binary(id, method, params)
#define ZCC_CAPTURE_BoolUnary(id, method, params)                              \
  ZCC_CAPTURE_Unary(id, method, params)
#define ZCC_CAPTURE_BoolBinary(id, method, params)                             \
  ZCC_CAPTURE_Binary(id, method, params)
#define ZCC_CAPTURE_Mask(id, method, params)                                   \
  ZCC_CAPTURE_Binary(id, method, params)
#define ZCC_CAPTURE_Select(id, method, params)                                 \
  Tensor method(Tensor condition, Tensor a, Tensor b                           \
                    ZCC_CAPTURE_PARAMS_##params,                               \
                Where where = ZCC_HERE) {                                      \
    return element(runtime::element_row::id, {condition, a, b},                \
                   ZCC_CAPTURE_VALUES_##params, where);                        \
  }
#define ZCC_CAPTURE_ROW(id, name, arity, method, params, ...)                  \
  ZCC_CAPTURE_##arity(id, method, params)
  ZRT_ELEMENT_KERNEL_LIST(ZCC_CAPTURE_ROW)
#undef ZCC_CAPTURE_ROW
#undef ZCC_CAPTURE_Grad
#undef ZCC_CAPTURE_Compare
#undef ZCC_CAPTURE_BoolUnary
#undef ZCC_CAPTURE_BoolBinary
#undef ZCC_CAPTURE_Mask
#undef ZCC_CAPTURE_Select
#undef ZCC_CAPTURE_Binary
#undef ZCC_CAPTURE_Unary
#undef ZCC_CAPTURE_VALUES_P2
#undef ZCC_CAPTURE_VALUES_P1
#undef ZCC_CAPTURE_VALUES_P0
#undef ZCC_CAPTURE_PARAMS_P2
#undef ZCC_CAPTURE_PARAMS_P1
#undef ZCC_CAPTURE_PARAMS_P0

  /// With a number: `mul` is zt.scale (no buffer for the number); the others
  /// broadcast a rank-0 constant.
  Tensor add(Tensor a, double b, Where where = ZCC_HERE);
  Tensor sub(Tensor a, double b, Where where = ZCC_HERE);
  Tensor mul(Tensor a, double b, Where where = ZCC_HERE);
  Tensor div(Tensor a, double b, Where where = ZCC_HERE);
  Tensor scale(Tensor x, double factor, Where where = ZCC_HERE);
  /// x in another element type (zt.convert: between f32, bf16, i32, i64
  /// and bool; floats to integers truncate; no gradient through integers);
  /// x itself when it has that type.
  Tensor convert(Tensor x, DType dtype, Where where = ZCC_HERE);
  /// A constant of `shape` filled with `value` (a rank-0 constant broadcast
  /// when the shape has elements beyond one).
  Tensor full(const std::vector<int64_t> &shape, double value,
              DType dtype = DType::F32, Where where = ZCC_HERE);
  /// A constant from row-major values (converted to `dtype`).
  Tensor constant(const std::vector<int64_t> &shape,
                  const std::vector<double> &values, DType dtype = DType::F32,
                  Where where = ZCC_HERE);
  /// [size, size]: 0 on and below the diagonal, -inf above.
  Tensor causalMask(int64_t size, Where where = ZCC_HERE);

  // Shapes. Negative dimensions count from the end.
  Tensor broadcastInDim(Tensor x, const std::vector<int64_t> &shape,
                        const std::vector<int64_t> &dims,
                        Where where = ZCC_HERE);
  /// NumPy broadcast_to: trailing dimensions aligned.
  Tensor broadcastTo(Tensor x, const std::vector<int64_t> &shape,
                     Where where = ZCC_HERE);
  /// One dimension may be -1 (inferred).
  Tensor reshape(Tensor x, const std::vector<int64_t> &shape,
                 Where where = ZCC_HERE);
  Tensor transpose(Tensor x, const std::vector<int64_t> &perm,
                   Where where = ZCC_HERE);
  /// Swaps two dimensions (PyTorch's x.transpose(a, b)).
  Tensor swapAxes(Tensor x, int64_t a, int64_t b, Where where = ZCC_HERE);
  /// Empty `strides` means 1 everywhere.
  Tensor slice(Tensor x, const std::vector<int64_t> &start,
               const std::vector<int64_t> &limit,
               const std::vector<int64_t> &strides = {},
               Where where = ZCC_HERE);
  /// x[..., begin:end] along `dim` (PyTorch's narrow/slice).
  Tensor sliceDim(Tensor x, int64_t dim, int64_t begin, int64_t end,
                  Where where = ZCC_HERE);
  Tensor concat(const std::vector<Tensor> &inputs, int64_t dim,
                Where where = ZCC_HERE);

  // Reductions over `dims` (empty: every dimension).
  Tensor sum(Tensor x, const std::vector<int64_t> &dims = {},
             bool keepDims = false, Where where = ZCC_HERE);
  Tensor mean(Tensor x, const std::vector<int64_t> &dims = {},
              bool keepDims = false, Where where = ZCC_HERE);
  Tensor max(Tensor x, const std::vector<int64_t> &dims = {},
             bool keepDims = false, Where where = ZCC_HERE);

  /// [B..., M, K] x [K, N] or [B..., K, N]; transposes swap the last two.
  Tensor matmul(Tensor a, Tensor b, bool transposeA = false,
                bool transposeB = false, Where where = ZCC_HERE);
  /// Fused scaled dot-product attention (zt.attention): q [B..., S, D],
  /// k [B..., T, D], v [B..., T, Dv] -> [B..., S, Dv]; `causal` lets query
  /// i see keys 0..i (PyTorch's is_causal). `scale` defaults (NaN) to
  /// 1/sqrt(D). Saves only the output and a logsumexp per query row.
  /// k and v may have fewer heads (dimension -3, a divisor of q's:
  /// grouped-query attention). `dropout` drops the probabilities out
  /// (PyTorch's dropout_p) with dropout's draw at `seed` (-1: the next
  /// site's, as dropout()).
  Tensor attention(Tensor q, Tensor k, Tensor v, bool causal = false,
                   double scale = std::numeric_limits<double>::quiet_NaN(),
                   double dropout = 0.0, int64_t seed = -1,
                   Where where = ZCC_HERE);
  /// attention where query i also sees only the keys `mask` (bool, of
  /// q's rank, each dimension that of [B..., S, T] or 1) allows: a padding
  /// mask [B, 1, 1, T], or a mask per query; a query that sees no key gives
  /// 0 (as PyTorch's scaled_dot_product_attention).
  Tensor maskedAttention(
      Tensor q, Tensor k, Tensor v, Tensor mask, bool causal = false,
      double scale = std::numeric_limits<double>::quiet_NaN(),
      double dropout = 0.0, int64_t seed = -1, Where where = ZCC_HERE);
  Tensor softmax(Tensor x, int64_t axis = -1, Where where = ZCC_HERE);
  Tensor logSoftmax(Tensor x, int64_t axis = -1, Where where = ZCC_HERE);
  /// Over the last dimension.
  Tensor layerNorm(Tensor x, Tensor gamma, Tensor beta, double eps = 1e-5,
                   Where where = ZCC_HERE);
  Tensor rmsNorm(Tensor x, Tensor gamma, double eps = 1e-6,
                 Where where = ZCC_HERE);
  /// table [V, D], integer indices [...] -> [..., D].
  Tensor embedding(Tensor table, Tensor indices, Where where = ZCC_HERE);
  /// Mean over rows of logits [..., C] with integer labels [...].
  Tensor softmaxCrossEntropy(Tensor logits, Tensor labels,
                             Where where = ZCC_HERE);
  /// The same as PyTorch's cross_entropy options state it: with `ignores`,
  /// the rows labelled `ignoreIndex` left out (PyTorch's ignore_index,
  /// -100 there by default: they add nothing to the mean and get no
  /// gradient); `labelSmoothing` in [0, 1] (0: none).
  Tensor softmaxCrossEntropyWith(Tensor logits, Tensor labels, bool ignores,
                                 int64_t ignoreIndex, double labelSmoothing,
                                 Where where = ZCC_HERE);
  Tensor mse(Tensor prediction, Tensor target, Where where = ZCC_HERE);
  /// Inverted dropout keyed by (seed, step, index); seed -1 gives each call
  /// its own (0, 1, 2, ... in program order). Rate 0 is the identity.
  Tensor dropout(Tensor x, double rate, int64_t seed = -1,
                 Where where = ZCC_HERE);

  /// Ends the program with `loss` (a rank-0 f32) as its result and verifies
  /// the whole function. After it no op may be added.
  Status finish(Tensor loss, Where where = ZCC_HERE);
  /// Ends an evaluation program instead: a graph built like the step's
  /// forward with dropout off and BatchNorm on its running statistics,
  /// `loss` its only result (the plan's eval entry; addEntry).
  Status finishEval(Tensor loss, Where where = ZCC_HERE);
  /// Ends a prediction program: the model's outputs by name (f32), with
  /// inputs and no labels (the plan's predict entry; addEntry).
  Status finishPredict(
      const std::vector<std::pair<std::string, Tensor>> &outputs,
      Where where = ZCC_HERE);
  bool finished() const;
  /// Adds a graph finished with finishEval or finishPredict to this
  /// finished training step's program: one plan, one arena, the
  /// parameters and state shared by name (same shape and initializer; the
  /// compiler checks). Functions need distinct names (Graph("eval")).
  Status addEntry(const Graph &other);

  /// The program as zt text, the form `zcc` reads (with `loc(...)` of every
  /// op's file:line when `locations` is set). Needs finish().
  std::string str(bool locations = false) const;

  /// The whole compiler in process (zcc/Compiler/Compile.h): the plan the
  /// runtime runs. Needs finish(); the graph is unchanged and may be
  /// compiled again with other options. `warnings` as compileModule's.
  Status compile(const CompileOptions &options, runtime::Plan &out,
                 std::string *plannedIR = nullptr,
                 std::string *warnings = nullptr) const;

  /// This program as one microbatch size of compile(fit=...)'s (Python):
  /// zcc::fitCandidate (zcc/Compiler/Compile.h) on it.
  Status fitCandidate(const CompileOptions &options, int64_t microbatches,
                      FitRow &row, runtime::Plan &out,
                      std::string *warnings = nullptr) const;

  /// Names of the arguments in declaration order, by role.
  std::vector<std::string> inputNames() const;
  std::vector<std::string> labelNames() const;
  std::vector<std::string> parameterNames() const;
  std::vector<std::string> stateNames() const;

  struct Impl;

private:
  friend class Tensor;
  std::unique_ptr<Impl> impl_;
};

} // namespace zcc::capture

#endif // ZCC_CAPTURE_GRAPH_H
