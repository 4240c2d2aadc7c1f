//===- Graph.cpp - capture a training step from code ----------------------===//
//
// Each op is built into a detached block (the function is made at finish(),
// when its argument list is final) and verified at once by the dialect's own
// verifier, so the rules users hit are the ones `zcc` applies to text. The
// result types computed here only have to be right for valid operands: for
// invalid ones the verifier's message is the error.
//
//===----------------------------------------------------------------------===//

#include "zcc/Capture/Graph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "zcc/Compiler/Compile.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Runtime/Plan/KernelRules.h"
#include "zcc/Runtime/Plan/ShapeRules.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

using namespace mlir;
using zcc::capture::DType;
using zcc::capture::Graph;
using zcc::capture::Init;
using zcc::capture::Tensor;
using zcc::capture::Where;
using zcc::runtime::Status;
using zcc::runtime::StatusCode;

namespace zt = zcc::zt;
namespace rt = zcc::runtime;

namespace {

/// The result shape that an op's rule (ShapeRules.h) gives, or when the
/// operands break it `fallback`: the op built then fails its verifier, which
/// applies the same rule and says what is wrong.
std::vector<int64_t> ruleShape(const Status &verdict, rt::Shape shape,
                               const std::vector<int64_t> &fallback) {
  return verdict.isOk() ? shape : fallback;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

} // namespace

struct Graph::Impl {
  explicit Impl(Graph *self, std::string name)
      : self(self), builder(&context), name(std::move(name)) {
    zcc::loadCompilerDialects(context);
    module = ModuleOp::create(UnknownLoc::get(&context));
    body = std::make_unique<Block>();
    builder.setInsertionPointToEnd(body.get());
  }

  Graph *self;
  MLIRContext context;
  OpBuilder builder;
  std::string name;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<Block> body; // the function's body until finish()
  bool finished = false;
  std::string entryKind; // after finish: "" (training), "eval", "predict"
  Status status;

  /// usable(), and `loss` a rank-0 f32 (else the error names `call`).
  bool usableLoss(const Where &where, const char *call, Tensor loss);
  /// Ends the program: `results` by name, as an `entry` ("" for the
  /// training step, whose results after the loss are state updates).
  Status finishWith(const std::vector<std::pair<std::string, Tensor>> &results,
                    const std::string &entry, const Where &where);

  struct ValueInfo {
    Value value;
    std::vector<int64_t> shape;
    DType dtype;
  };
  std::vector<ValueInfo> values;

  struct Argument {
    std::string name;
    zt::ArgRole role;
    NamedAttrList attrs;
  };
  std::vector<Argument> arguments;
  std::map<std::string, int32_t> argumentIds;
  int32_t stepId = -1;
  /// (state argument, the value the step writes over it), in call order.
  std::vector<std::pair<unsigned, int32_t>> updates;
  std::vector<std::string> scopes;
  int64_t nextSeed = 0;

  Location loc(const Where &where) {
    if (where.file.empty())
      return UnknownLoc::get(&context);
    return FileLineColLoc::get(&context, where.file, where.line, 0);
  }

  /// The graph's error from what `diagnostics` collected.
  Tensor failWith(const zcc::DiagnosticCollector &diagnostics) {
    std::string text = diagnostics.text();
    while (!text.empty() && text.back() == '\n')
      text.pop_back();
    status = Status(StatusCode::InvalidArgument, text);
    return {};
  }

  /// Records the first error; "file:line: error: message".
  Tensor fail(const Where &where, const std::string &message) {
    if (status.isOk()) {
      zcc::DiagnosticCollector diagnostics(context);
      emitError(loc(where)) << message;
      failWith(diagnostics);
    }
    return {};
  }

  /// False (recording why, unless an error is already recorded) when an
  /// op cannot be built: after finish, after an error, or on a foreign or
  /// invalid operand.
  bool usable(const Where &where, const char *op, ArrayRef<Tensor> operands) {
    if (!status.isOk())
      return false;
    if (finished) {
      fail(where, std::string(op) + ": the graph is finished; no op may be "
                                    "added after finish()");
      return false;
    }
    int index = 0;
    for (const Tensor &t : operands) {
      if (t.graph() != self || t.id() < 0 ||
          t.id() >= static_cast<int32_t>(values.size())) {
        fail(where, std::string(op) + ": operand #" + std::to_string(index) +
                        (t.graph() && t.graph() != self
                             ? " belongs to another graph"
                             : " is not a tensor of this graph"));
        return false;
      }
      ++index;
    }
    return true;
  }

  Type elementType(DType dtype) {
    switch (dtype) {
    case DType::F32:
      return Float32Type::get(&context);
    case DType::I32:
      return IntegerType::get(&context, 32);
    case DType::I64:
      return IntegerType::get(&context, 64);
    case DType::Bool:
      return IntegerType::get(&context, 1);
    case DType::BF16:
      return BFloat16Type::get(&context);
    default:
      return {};
    }
  }
  static DType dtypeOf(Type element) {
    if (auto integer = dyn_cast<IntegerType>(element))
      return integer.getWidth() == 64   ? DType::I64
             : integer.getWidth() == 1 ? DType::Bool
                                       : DType::I32;
    return DType::F32;
  }
  RankedTensorType tensorType(const std::vector<int64_t> &shape,
                              DType dtype) {
    return RankedTensorType::get(shape, elementType(dtype));
  }

  const ValueInfo &info(Tensor t) const { return values[t.id()]; }
  Value value(Tensor t) const { return values[t.id()].value; }
  const std::vector<int64_t> &shape(Tensor t) const {
    return values[t.id()].shape;
  }

  Tensor record(Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    values.push_back({value, std::vector<int64_t>(type.getShape().begin(),
                                                  type.getShape().end()),
                      dtypeOf(type.getElementType())});
    return Tensor(self, static_cast<int32_t>(values.size() - 1));
  }

  /// Builds OpTy at the end of the body and verifies it; on failure the op
  /// is erased and its diagnostic becomes the graph's error.
  template <typename OpTy, typename... Args>
  Tensor build(const Where &where, Args &&...args) {
    builder.setInsertionPointToEnd(body.get());
    return verified(
        builder.create<OpTy>(loc(where), std::forward<Args>(args)...));
  }
  /// Verifies a newly built op: its result, or the graph's error (and the
  /// op erased).
  Tensor verified(Operation *op) {
    zcc::DiagnosticCollector diagnostics(context);
    if (failed(verify(op))) {
      op->erase();
      return failWith(diagnostics);
    }
    return record(op->getResult(0));
  }

  /// Adds a function argument with its attributes.
  Tensor argument(const Where &where, const std::string &argName,
                  zt::ArgRole role, const std::vector<int64_t> &argShape,
                  DType dtype, NamedAttrList attrs) {
    const char *what = zt::stringifyArgRole(role).data();
    if (!usable(where, what, {}))
      return {};
    if (argName.empty())
      return fail(where, std::string(what) + ": the name is empty");
    if (argumentIds.count(argName))
      return fail(where, std::string(what) + " '" + argName +
                             "': the name is already taken by another "
                             "argument");
    if (dtype != DType::F32 && dtype != DType::I32 && dtype != DType::I64)
      return fail(where, std::string(what) + " '" + argName + "': " +
                             dtypeName(dtype) +
                             " arguments are not supported (f32, i32 or i64; "
                             "a bool mask is made by comparing)");
    for (int64_t d : argShape)
      if (d <= 0)
        return fail(where, std::string(what) + " '" + argName + "': shape " +
                               formatShape(argShape) +
                               " has a dimension that is not positive");
    attrs.set(zt::ZTDialect::kNameAttrName,
              StringAttr::get(&context, argName));
    attrs.set(zt::ZTDialect::kRoleAttrName,
              zt::ArgRoleAttr::get(&context, role));
    BlockArgument arg =
        body->addArgument(tensorType(argShape, dtype), loc(where));
    arguments.push_back({argName, role, std::move(attrs)});
    Tensor t = record(arg);
    argumentIds[argName] = t.id();
    return t;
  }

  /// NumPy broadcasting of two shapes; false when they do not broadcast.
  static bool broadcastShapes(const std::vector<int64_t> &a,
                              const std::vector<int64_t> &b,
                              std::vector<int64_t> &out) {
    size_t rank = std::max(a.size(), b.size());
    out.assign(rank, 1);
    for (size_t i = 0; i < rank; ++i) {
      int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
      int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
      if (da != db && da != 1 && db != 1)
        return false;
      out[rank - 1 - i] = da == 1 ? db : da;
    }
    return true;
  }

  /// An element op from its row (ElementKernels.h), built by name: the
  /// row's params become its F64 attributes.
  Tensor element(int row, std::vector<Tensor> operands,
                 const std::vector<double> &params, const Where &where) {
    if (row < 0 || row >= runtime::kElementRowCount)
      return fail(where, "element: no element op " + std::to_string(row));
    const runtime::ElementRow &r = runtime::kElementRows[row];
    if (!usable(where, r.name, operands))
      return {};
    size_t arity = runtime::elementOperandCount(r.arity);
    if (operands.size() != arity)
      return fail(where, std::string(r.name) + ": takes " +
                             std::to_string(arity) + " operands, got " +
                             std::to_string(operands.size()));
    if (params.size() > static_cast<size_t>(r.paramCount)) {
      std::string names;
      for (int k = 0; k < r.paramCount; ++k)
        names += std::string(k ? ", " : "") + r.paramNames[k];
      return fail(where, std::string(r.name) + ": takes at most " +
                             std::to_string(r.paramCount) + " numbers (" +
                             names + "), got " +
                             std::to_string(params.size()));
    }
    // NumPy broadcasting over every operand.
    std::vector<int64_t> out = shape(operands[0]);
    for (size_t i = 1; i < arity; ++i) {
      std::vector<int64_t> both;
      if (!broadcastShapes(out, shape(operands[i]), both)) {
        std::string shapes;
        for (size_t k = 0; k < arity; ++k)
          shapes += (k ? (k + 1 == arity ? " and " : ", ") : "") +
                    formatShape(shape(operands[k]));
        return fail(where, std::string(r.name) + ": shapes " + shapes +
                               " do not broadcast");
      }
      out = both;
    }
    if (arity > 1)
      for (Tensor &t : operands)
        if (!(t = self->broadcastTo(t, out, where)))
          return {};
    SmallVector<Value, 3> values;
    for (Tensor t : operands)
      values.push_back(value(t));
    SmallVector<Attribute, 2> attrs;
    for (int k = 0; k < r.paramCount; ++k)
      attrs.push_back(builder.getF64FloatAttr(
          k < static_cast<int>(params.size()) ? params[k]
                                              : r.paramDefaults[k]));
    builder.setInsertionPointToEnd(body.get());
    return verified(
        zt::buildElementOp(builder, loc(where), row, values, attrs));
  }

  /// A dimension index in [0, rank), negative counting from the end.
  bool normalizeDim(int64_t &dim, int64_t rank, const Where &where,
                    const std::string &what) {
    if (dim < -rank || dim >= rank) {
      fail(where, what + ": dimension " + std::to_string(dim) +
                      " is out of range for rank " + std::to_string(rank));
      return false;
    }
    if (dim < 0)
      dim += rank;
    return true;
  }

  template <typename OpTy>
  Tensor reduce(Tensor x, std::vector<int64_t> dims, bool keepDims,
                const Where &where, const char *what) {
    if (!usable(where, what, {x}))
      return {};
    int64_t rank = static_cast<int64_t>(shape(x).size());
    if (dims.empty())
      for (int64_t d = 0; d < rank; ++d)
        dims.push_back(d);
    for (int64_t &d : dims)
      if (!normalizeDim(d, rank, where, what))
        return {};
    rt::Shape out;
    Status verdict = rt::reductionShape(shape(x), dims, keepDims, out);
    return build<OpTy>(where,
                       tensorType(ruleShape(verdict, out, shape(x)),
                                  info(x).dtype),
                       value(x),
                       builder.getDenseI64ArrayAttr(dims),
                       keepDims ? builder.getUnitAttr() : UnitAttr());
  }

  template <typename OpTy>
  Tensor axisOp(Tensor x, int64_t axis, const Where &where, const char *what) {
    if (!usable(where, what, {x}))
      return {};
    if (!normalizeDim(axis, static_cast<int64_t>(shape(x).size()), where,
                      what))
      return {};
    return build<OpTy>(where, value(x).getType(), value(x),
                       builder.getI64IntegerAttr(axis));
  }

  template <typename OpTy, typename... Attrs>
  Tensor loss(Tensor a, Tensor b, const Where &where, const char *what,
              Attrs... attrs) {
    if (!usable(where, what, {a, b}))
      return {};
    Type element = cast<RankedTensorType>(value(a).getType()).getElementType();
    return build<OpTy>(where, RankedTensorType::get({}, element), value(a),
                       value(b), attrs...);
  }
};

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

const std::vector<int64_t> &Tensor::shape() const {
  static const std::vector<int64_t> none;
  if (!valid())
    return none;
  return graph_->impl_->values[id_].shape;
}

int64_t Tensor::dim(int64_t index) const {
  int64_t r = rank();
  if (index < 0)
    index += r;
  return index >= 0 && index < r ? shape()[index] : 0;
}

int64_t Tensor::numElements() const { return product(shape()); }

DType Tensor::dtype() const {
  return valid() ? graph_->impl_->values[id_].dtype : DType::F32;
}

//===----------------------------------------------------------------------===//
// Graph: arguments and scopes
//===----------------------------------------------------------------------===//

Graph::Graph(std::string name)
    : impl_(std::make_unique<Impl>(this, std::move(name))) {}

Graph::~Graph() = default;

const Status &Graph::status() const { return impl_->status; }

bool Graph::finished() const { return impl_->finished; }

Tensor Graph::input(const std::string &name, const std::vector<int64_t> &shape,
                    DType dtype, Where where) {
  return impl_->argument(where, name, zt::ArgRole::Input, shape, dtype, {});
}

Tensor Graph::label(const std::string &name, const std::vector<int64_t> &shape,
                    DType dtype, Where where) {
  return impl_->argument(where, name, zt::ArgRole::Label, shape, dtype, {});
}

/// A persistent argument with its initializer, named in the current scope.
static Tensor persistent(Graph &graph, Graph::Impl &g, const Where &where,
                         const std::string &name, zt::ArgRole role,
                         const std::vector<int64_t> &shape, const Init &init) {
  std::string full = graph.scopePrefix() + name;
  if (!g.usable(where, zt::stringifyArgRole(role).data(), {}))
    return {};
  // The dialect's own checks of the numbers (std > 0, low < high, finite).
  zcc::DiagnosticCollector diagnostics(g.context);
  auto attr = zt::InitAttr::getChecked(
      [&] { return emitError(g.loc(where)); }, &g.context,
      static_cast<zt::InitKind>(init.kind), llvm::APFloat(init.first),
      llvm::APFloat(init.second));
  if (!attr)
    return g.failWith(diagnostics);
  NamedAttrList attrs;
  attrs.set(zt::ZTDialect::kInitAttrName, attr);
  return g.argument(where, full, role, shape, DType::F32, std::move(attrs));
}

Tensor Graph::parameter(const std::string &name,
                        const std::vector<int64_t> &shape, Init init,
                        Where where) {
  return persistent(*this, *impl_, where, name, zt::ArgRole::Parameter, shape,
                    init);
}

Tensor Graph::state(const std::string &name, const std::vector<int64_t> &shape,
                    Init init, Where where) {
  return persistent(*this, *impl_, where, name, zt::ArgRole::State, shape,
                    init);
}

void Graph::update(Tensor state, Tensor value, Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "update", {state, value}))
    return;
  auto arg = dyn_cast<BlockArgument>(g.value(state));
  if (!arg || g.arguments[arg.getArgNumber()].role != zt::ArgRole::State) {
    g.fail(where, "update: operand #0 is not a state argument (made by "
                  "state())");
    return;
  }
  const std::string &name = g.arguments[arg.getArgNumber()].name;
  if (value.shape() != state.shape() || value.dtype() != DType::F32) {
    g.fail(where, "update: state '" + name + "' is f32 " +
                      formatShape(state.shape()) + ", its new value " +
                      dtypeName(value.dtype()) + " " +
                      formatShape(value.shape()));
    return;
  }
  for (const auto &[index, id] : g.updates)
    if (index == arg.getArgNumber()) {
      g.fail(where, "update: state '" + name + "' is already updated by this "
                    "step (once per step: update it with the last value)");
      return;
    }
  g.updates.push_back({arg.getArgNumber(), value.id()});
}

Tensor Graph::step(Where where) {
  Impl &g = *impl_;
  if (g.stepId >= 0)
    return Tensor(this, g.stepId);
  Tensor t = g.argument(where, "step", zt::ArgRole::Step, {}, DType::I64, {});
  if (t)
    g.stepId = t.id();
  return t;
}

Graph::Scope::Scope(Scope &&other) noexcept : graph_(other.graph_) {
  other.graph_ = nullptr;
}

Graph::Scope::~Scope() {
  if (graph_ && !graph_->impl_->scopes.empty())
    graph_->impl_->scopes.pop_back();
}

Graph::Scope Graph::scope(const std::string &name) {
  impl_->scopes.push_back(name);
  return Scope(this);
}

std::string Graph::scopePrefix() const {
  std::string prefix;
  for (const std::string &s : impl_->scopes)
    if (!s.empty())
      prefix += s + ".";
  return prefix;
}

//===----------------------------------------------------------------------===//
// Graph: elementwise
//===----------------------------------------------------------------------===//

Tensor Graph::element(int row, const std::vector<Tensor> &operands,
                      const std::vector<double> &params, Where where) {
  return impl_->element(row, operands, params, where);
}

std::vector<Tensor> Graph::op(const std::string &name,
                              const std::vector<Tensor> &operands,
                              const std::vector<runtime::Param> &params,
                              Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, name.c_str(), operands))
    return {};
  std::optional<rt::KernelId> kernel = rt::findKernel(name);
  if (!kernel || !rt::kernelInfersResults(*kernel)) {
    std::string known;
    for (int k = 0; k < static_cast<int>(rt::KernelId::NumKernels); ++k)
      if (rt::kernelInfersResults(static_cast<rt::KernelId>(k)))
        known += std::string(known.empty() ? "" : ", ") +
                 rt::kernelName(static_cast<rt::KernelId>(k));
    g.fail(where, "op: no op '" + name + "' is built by name (these are: " +
                      known + ")");
    return {};
  }
  // The parameters decoded and the results inferred as the loader and the
  // verifier check them: one rule.
  rt::Launch launch;
  Status status = rt::decodeLaunch(name, params, launch);
  std::vector<rt::TensorType> inputs, outputs;
  for (Tensor t : operands)
    inputs.push_back(rt::TensorType{g.info(t).dtype, g.shape(t)});
  if (status.isOk())
    status = rt::inferKernelResults(*kernel, launch.params, inputs, outputs);
  if (!status.isOk()) {
    g.fail(where, name + ": " + status.message());
    return {};
  }
  SmallVector<Value, 4> values;
  for (Tensor t : operands)
    values.push_back(g.value(t));
  SmallVector<Type, 2> types;
  for (const rt::TensorType &t : outputs)
    types.push_back(g.tensorType(t.shape, t.dtype));
  g.builder.setInsertionPointToEnd(g.body.get());
  Operation *built = zt::buildKernelOp(g.builder, g.loc(where), name, values,
                                       params, types);
  if (!built) {
    g.fail(where, "op: '" + name + "' is a kernel but no zt op");
    return {};
  }
  Tensor first = g.verified(built);
  if (!first)
    return {};
  std::vector<Tensor> results{first};
  for (Value v : built->getResults().drop_front())
    results.push_back(g.record(v));
  return results;
}

// A float's number is a parameter (zt.add_scalar), kept exact in the f64
// reference precision; an f32 constant would round it (1e-3 by 5e-8).
Tensor Graph::add(Tensor a, double b, Where where) {
  if (!impl_->usable(where, "add", {a}))
    return {};
  if (a.dtype() == DType::F32)
    return addScalar(a, b, where);
  return add(a, full({}, b, a.dtype(), where), where);
}
Tensor Graph::sub(Tensor a, double b, Where where) {
  if (!impl_->usable(where, "sub", {a}))
    return {};
  if (a.dtype() == DType::F32)
    return addScalar(a, -b, where);
  return sub(a, full({}, b, a.dtype(), where), where);
}
Tensor Graph::mul(Tensor a, double b, Where where) {
  return scale(a, b, where);
}
Tensor Graph::div(Tensor a, double b, Where where) {
  if (b == 0.0 || !std::isfinite(b))
    return impl_->fail(where, "div: dividing by the number " +
                                  std::to_string(b));
  return scale(a, 1.0 / b, where);
}

Tensor Graph::scale(Tensor x, double factor, Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "scale", {x}))
    return {};
  return g.build<zt::ScaleOp>(where, g.value(x).getType(), g.value(x),
                              g.builder.getF64FloatAttr(factor));
}

//===----------------------------------------------------------------------===//
// Graph: constants
//===----------------------------------------------------------------------===//

Tensor Graph::constant(const std::vector<int64_t> &shape,
                       const std::vector<double> &values, DType dtype,
                       Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "constant", {}))
    return {};
  for (int64_t d : shape)
    if (d <= 0)
      return g.fail(where, "constant: shape " + formatShape(shape) +
                               " has a dimension that is not positive");
  if (static_cast<int64_t>(values.size()) != product(shape))
    return g.fail(where, "constant: " + std::to_string(values.size()) +
                             " values for shape " + formatShape(shape) +
                             " (" + std::to_string(product(shape)) +
                             " elements)");
  RankedTensorType type = g.tensorType(shape, dtype);
  DenseElementsAttr data;
  if (dtype == DType::Bool) {
    // One value (a kernel fills it); bool data would need a packed format.
    for (double v : values)
      if ((v != 0.0 && v != 1.0) || v != values.front())
        return g.fail(where, "constant: a bool constant is one value, 0 or 1 "
                             "(full); make a mask by comparing instead");
    data = DenseElementsAttr::get(type, values.front() != 0.0);
  } else if (dtype == DType::F32) {
    std::vector<float> v(values.begin(), values.end());
    data = DenseElementsAttr::get(type, llvm::ArrayRef<float>(v));
  } else if (dtype == DType::I32) {
    std::vector<int32_t> v(values.begin(), values.end());
    data = DenseElementsAttr::get(type, llvm::ArrayRef<int32_t>(v));
  } else {
    std::vector<int64_t> v(values.begin(), values.end());
    data = DenseElementsAttr::get(type, llvm::ArrayRef<int64_t>(v));
  }
  return g.build<zt::ConstantOp>(where, type, data);
}

Tensor Graph::full(const std::vector<int64_t> &shape, double value,
                   DType dtype, Where where) {
  Tensor scalar = constant({}, {value}, dtype, where);
  if (!scalar || shape.empty())
    return scalar;
  return broadcastTo(scalar, shape, where);
}

Tensor Graph::convert(Tensor x, DType dtype, Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "convert", {x}))
    return {};
  if (x.dtype() == dtype)
    return x;
  return g.build<zt::ConvertOp>(where, g.tensorType(g.shape(x), dtype),
                                g.value(x));
}

Tensor Graph::causalMask(int64_t size, Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "causal_mask", {}))
    return {};
  if (size <= 0)
    return g.fail(where, "causal_mask: the size must be positive, got " +
                             std::to_string(size));
  return g.build<zt::CausalMaskOp>(where,
                                   g.tensorType({size, size}, DType::F32));
}

//===----------------------------------------------------------------------===//
// Graph: shapes
//===----------------------------------------------------------------------===//

Tensor Graph::broadcastInDim(Tensor x, const std::vector<int64_t> &shape,
                             const std::vector<int64_t> &dims, Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "broadcast_in_dim", {x}))
    return {};
  return g.build<zt::BroadcastInDimOp>(
      where, g.tensorType(shape, x.dtype()), g.value(x),
      g.builder.getDenseI64ArrayAttr(dims));
}

Tensor Graph::broadcastTo(Tensor x, const std::vector<int64_t> &shape,
                          Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "broadcast_to", {x}))
    return {};
  const std::vector<int64_t> &from = g.shape(x);
  if (from == shape)
    return x;
  if (from.size() > shape.size())
    return g.fail(where, "broadcast_to: cannot broadcast shape " +
                             formatShape(from) + " to the smaller rank of " +
                             formatShape(shape));
  std::vector<int64_t> dims;
  size_t offset = shape.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    dims.push_back(static_cast<int64_t>(offset + i));
  return broadcastInDim(x, shape, dims, where);
}

Tensor Graph::reshape(Tensor x, const std::vector<int64_t> &shape,
                      Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "reshape", {x}))
    return {};
  std::vector<int64_t> out = shape;
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1 && inferred < 0) {
      inferred = static_cast<int64_t>(i);
      continue;
    }
    if (out[i] <= 0)
      return g.fail(where, "reshape: shape " + formatShape(shape) +
                               " may hold one -1 and otherwise positive "
                               "sizes");
    known *= out[i];
  }
  if (inferred >= 0) {
    if (x.numElements() % known != 0)
      return g.fail(where, "reshape: cannot reshape " +
                               formatShape(g.shape(x)) + " into " +
                               formatShape(shape));
    out[inferred] = x.numElements() / known;
  }
  if (out == g.shape(x))
    return x;
  return g.build<zt::ReshapeOp>(where, g.tensorType(out, x.dtype()),
                                g.value(x));
}

Tensor Graph::transpose(Tensor x, const std::vector<int64_t> &perm,
                        Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "transpose", {x}))
    return {};
  int64_t rank = x.rank();
  std::vector<int64_t> dims = perm;
  for (int64_t &d : dims)
    if (!g.normalizeDim(d, rank, where, "transpose"))
      return {};
  rt::Shape out;
  Status verdict = rt::transposeShape(g.shape(x), dims, out);
  return g.build<zt::TransposeOp>(
      where, g.tensorType(ruleShape(verdict, out, g.shape(x)), x.dtype()),
      g.value(x),
                                  g.builder.getDenseI64ArrayAttr(dims));
}

Tensor Graph::swapAxes(Tensor x, int64_t a, int64_t b, Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "transpose", {x}))
    return {};
  if (!g.normalizeDim(a, x.rank(), where, "transpose") ||
      !g.normalizeDim(b, x.rank(), where, "transpose"))
    return {};
  if (a == b)
    return x;
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < x.rank(); ++d)
    perm.push_back(d == a ? b : d == b ? a : d);
  return transpose(x, perm, where);
}

Tensor Graph::slice(Tensor x, const std::vector<int64_t> &start,
                    const std::vector<int64_t> &limit,
                    const std::vector<int64_t> &strides, Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "slice", {x}))
    return {};
  std::vector<int64_t> steps =
      strides.empty() ? std::vector<int64_t>(start.size(), 1) : strides;
  rt::Shape out;
  Status verdict = rt::sliceShape(g.shape(x), start, limit, steps, out);
  return g.build<zt::SliceOp>(
      where, g.tensorType(ruleShape(verdict, out, g.shape(x)), x.dtype()),
      g.value(x),
                              g.builder.getDenseI64ArrayAttr(start),
                              g.builder.getDenseI64ArrayAttr(limit),
                              g.builder.getDenseI64ArrayAttr(steps));
}

Tensor Graph::sliceDim(Tensor x, int64_t dim, int64_t begin, int64_t end,
                       Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "slice", {x}) ||
      !g.normalizeDim(dim, x.rank(), where, "slice"))
    return {};
  int64_t size = g.shape(x)[dim];
  // Python's rules: negative counts from the end, out of range clamps.
  auto clamp = [&](int64_t i) {
    if (i < 0)
      i += size;
    return std::min(std::max<int64_t>(i, 0), size);
  };
  begin = clamp(begin);
  end = std::max(clamp(end), begin);
  if (begin == 0 && end == size)
    return x;
  std::vector<int64_t> start(x.rank(), 0), limit = g.shape(x);
  start[dim] = begin;
  limit[dim] = end;
  return slice(x, start, limit, {}, where);
}

Tensor Graph::concat(const std::vector<Tensor> &inputs, int64_t dim,
                     Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "concat", {}))
    return {};
  if (inputs.empty())
    return g.fail(where, "concat: needs at least one operand");
  for (const Tensor &t : inputs)
    if (!g.usable(where, "concat", {t}))
      return {};
  if (!g.normalizeDim(dim, inputs[0].rank(), where, "concat"))
    return {};
  SmallVector<Value> operands;
  std::vector<rt::Shape> shapes;
  for (const Tensor &t : inputs) {
    operands.push_back(g.value(t));
    shapes.push_back(g.shape(t));
  }
  rt::Shape out;
  Status verdict = rt::concatShape(shapes, dim, out);
  return g.build<zt::ConcatOp>(
      where,
      g.tensorType(ruleShape(verdict, out, shapes[0]), inputs[0].dtype()),
      operands, g.builder.getI64IntegerAttr(dim));
}

//===----------------------------------------------------------------------===//
// Graph: reductions, products, normalization, losses
//===----------------------------------------------------------------------===//

Tensor Graph::sum(Tensor x, const std::vector<int64_t> &dims, bool keepDims,
                  Where where) {
  return impl_->reduce<zt::SumOp>(x, dims, keepDims, where, "sum");
}
Tensor Graph::mean(Tensor x, const std::vector<int64_t> &dims, bool keepDims,
                   Where where) {
  return impl_->reduce<zt::MeanOp>(x, dims, keepDims, where, "mean");
}
Tensor Graph::max(Tensor x, const std::vector<int64_t> &dims, bool keepDims,
                  Where where) {
  return impl_->reduce<zt::MaxOp>(x, dims, keepDims, where, "max");
}

Tensor Graph::matmul(Tensor a, Tensor b, bool transposeA, bool transposeB,
                     Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "matmul", {a, b}))
    return {};
  rt::Shape out;
  Status verdict =
      rt::matmulShape(g.shape(a), g.shape(b), transposeA, transposeB, out);
  return g.build<zt::MatmulOp>(
      where, g.tensorType(ruleShape(verdict, out, g.shape(a)), a.dtype()),
      g.value(a), g.value(b),
      transposeA ? g.builder.getUnitAttr() : UnitAttr(),
      transposeB ? g.builder.getUnitAttr() : UnitAttr());
}

Tensor Graph::attention(Tensor q, Tensor k, Tensor v, bool causal, double scale,
                        double dropout, int64_t seed, Where where) {
  return maskedAttention(q, k, v, Tensor(), causal, scale, dropout, seed,
                         where);
}

Tensor Graph::maskedAttention(Tensor q, Tensor k, Tensor v, Tensor mask,
                              bool causal, double scale, double dropout,
                              int64_t seed, Where where) {
  Impl &g = *impl_;
  bool masked = mask.graph() != nullptr;
  if (!g.usable(where, "attention", {q, k, v}) ||
      (masked && !g.usable(where, "attention's mask", {mask})))
    return {};
  if (!(dropout >= 0.0 && dropout < 1.0))
    return g.fail(where, "attention: dropout must be in [0, 1), got " +
                             std::to_string(dropout));
  // A dropout site of its own, numbered as dropout()'s; rate 0 draws none.
  int64_t site = seed >= 0 ? seed : g.nextSeed;
  Tensor counter;
  if (dropout > 0.0) {
    g.nextSeed = std::max(g.nextSeed, site + 1);
    counter = step(where);
    if (!counter)
      return {};
  }
  const std::vector<int64_t> &sq = g.shape(q), &sv = g.shape(v);
  if (sq.size() < 2 || sv.size() < 2)
    return g.fail(where, "attention: query and value must have rank >= 2 "
                         "([B..., S, D]), got " +
                             formatShape(sq) + " and " + formatShape(sv));
  if (std::isnan(scale))
    scale =
        1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(sq.back(), 1)));
  rt::Shape out, rows;
  Status verdict =
      rt::attentionShapes(sq, g.shape(k), sv, scale, out, rows);
  return g.build<zt::AttentionOp>(
      where,
      TypeRange{g.tensorType(ruleShape(verdict, out, sq), q.dtype()),
                g.tensorType(ruleShape(verdict, rows, sq), q.dtype())},
      g.value(q), g.value(k), g.value(v),
      masked ? g.value(mask) : mlir::Value(),
      counter ? g.value(counter) : mlir::Value(),
      g.builder.getF64FloatAttr(scale),
      causal ? g.builder.getUnitAttr() : UnitAttr(),
      counter ? g.builder.getF64FloatAttr(dropout) : FloatAttr(),
      counter ? g.builder.getI64IntegerAttr(site) : IntegerAttr());
}

Tensor Graph::softmax(Tensor x, int64_t axis, Where where) {
  return impl_->axisOp<zt::SoftmaxOp>(x, axis, where, "softmax");
}
Tensor Graph::logSoftmax(Tensor x, int64_t axis, Where where) {
  return impl_->axisOp<zt::LogSoftmaxOp>(x, axis, where, "log_softmax");
}

Tensor Graph::layerNorm(Tensor x, Tensor gamma, Tensor beta, double eps,
                        Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "layer_norm", {x, gamma, beta}))
    return {};
  return g.build<zt::LayerNormOp>(where, g.value(x).getType(), g.value(x),
                                  g.value(gamma), g.value(beta),
                                  g.builder.getF64FloatAttr(eps));
}

Tensor Graph::rmsNorm(Tensor x, Tensor gamma, double eps, Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "rms_norm", {x, gamma}))
    return {};
  return g.build<zt::RmsNormOp>(where, g.value(x).getType(), g.value(x),
                                g.value(gamma),
                                g.builder.getF64FloatAttr(eps));
}

Tensor Graph::embedding(Tensor table, Tensor indices, Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "embedding", {table, indices}))
    return {};
  rt::Shape out;
  Status verdict = rt::embeddingShape(g.shape(table), g.shape(indices), out);
  return g.build<zt::EmbeddingOp>(
      where,
      g.tensorType(ruleShape(verdict, out, g.shape(indices)), table.dtype()),
      g.value(table), g.value(indices));
}

Tensor Graph::softmaxCrossEntropy(Tensor logits, Tensor labels, Where where) {
  return impl_->loss<zt::SoftmaxCrossEntropyOp>(
      logits, labels, where, "softmax_cross_entropy", IntegerAttr(),
      FloatAttr());
}

Tensor Graph::softmaxCrossEntropyWith(Tensor logits, Tensor labels,
                                      bool ignores, int64_t ignoreIndex,
                                      double labelSmoothing, Where where) {
  auto &b = impl_->builder;
  return impl_->loss<zt::SoftmaxCrossEntropyOp>(
      logits, labels, where, "softmax_cross_entropy",
      ignores ? b.getI64IntegerAttr(ignoreIndex) : IntegerAttr(),
      labelSmoothing != 0.0 ? b.getF64FloatAttr(labelSmoothing) : FloatAttr());
}

Tensor Graph::mse(Tensor prediction, Tensor target, Where where) {
  return impl_->loss<zt::MseOp>(prediction, target, where, "mse");
}

Tensor Graph::dropout(Tensor x, double rate, int64_t seed, Where where) {
  Impl &g = *impl_;
  if (!g.usable(where, "dropout", {x}))
    return {};
  if (!(rate >= 0.0 && rate < 1.0))
    return g.fail(where, "dropout: the rate must be in [0, 1), got " +
                             std::to_string(rate));
  int64_t site = seed >= 0 ? seed : g.nextSeed;
  g.nextSeed = std::max(g.nextSeed, site + 1);
  // Rate 0 keeps every element: no op, no step counter.
  if (rate == 0.0)
    return x;
  Tensor counter = step(where);
  if (!counter)
    return {};
  return g.build<zt::DropoutOp>(where, g.value(x).getType(), g.value(x),
                                g.value(counter),
                                g.builder.getF64FloatAttr(rate),
                                g.builder.getI64IntegerAttr(site));
}

//===----------------------------------------------------------------------===//
// Graph: the function
//===----------------------------------------------------------------------===//

bool Graph::Impl::usableLoss(const Where &where, const char *call,
                             Tensor loss) {
  if (!usable(where, call, {loss}))
    return false;
  if (loss.rank() == 0 && loss.dtype() == DType::F32)
    return true;
  fail(where, std::string(call) + ": the loss must be a rank-0 f32 tensor, "
                                  "got shape " +
                  formatShape(loss.shape()) + " of " + dtypeName(loss.dtype()));
  return false;
}

Status Graph::finish(Tensor loss, Where where) {
  Impl &g = *impl_;
  if (!g.usableLoss(where, "finish", loss))
    return g.status;
  // The loss, then the state updates tied to their arguments.
  std::vector<std::pair<std::string, Tensor>> results{{"", loss}};
  for (const auto &[index, id] : g.updates)
    results.emplace_back("", Tensor(this, id));
  return g.finishWith(results, "", where);
}

Status Graph::finishEval(Tensor loss, Where where) {
  Impl &g = *impl_;
  if (!g.usableLoss(where, "finishEval", loss))
    return g.status;
  return g.finishWith({{"loss", loss}}, "eval", where);
}

Status Graph::finishPredict(
    const std::vector<std::pair<std::string, Tensor>> &outputs, Where where) {
  Impl &g = *impl_;
  std::vector<Tensor> tensors;
  for (const auto &[name, t] : outputs)
    tensors.push_back(t);
  if (!g.usable(where, "finishPredict", tensors))
    return g.status;
  if (outputs.empty()) {
    g.fail(where, "finishPredict: a predict program returns at least one "
                  "output");
    return g.status;
  }
  std::set<std::string> names;
  for (const auto &[name, t] : outputs) {
    if (name.empty() || !names.insert(name).second) {
      g.fail(where, "finishPredict: output names must be unique and not "
                    "empty; got '" + name + "' twice or empty");
      return g.status;
    }
    if (t.dtype() != DType::F32) {
      g.fail(where, "finishPredict: output '" + name + "' is " +
                        dtypeName(t.dtype()) + "; predictions are f32");
      return g.status;
    }
  }
  return g.finishWith(outputs, "predict", where);
}

Status Graph::Impl::finishWith(
    const std::vector<std::pair<std::string, Tensor>> &results,
    const std::string &entry, const Where &where) {
  if (!entry.empty() && !updates.empty()) {
    fail(where, "finish" + std::string(entry == "eval" ? "Eval" : "Predict") +
                    ": an " + entry + " program writes no state; update() "
                    "belongs to the training step");
    return status;
  }
  OpBuilder builder(&context);
  builder.setInsertionPointToEnd(module->getBody());
  SmallVector<Type> argTypes(body->getArgumentTypes());
  SmallVector<Value> values;
  for (const auto &[name, t] : results)
    values.push_back(value(t));
  auto func = builder.create<func::FuncOp>(
      loc(where), this->name,
      builder.getFunctionType(argTypes, ValueRange(values).getTypes()));
  func.getBody().push_back(body.release());
  builder.setInsertionPointToEnd(&func.getBody().front());
  builder.create<func::ReturnOp>(loc(where), values);
  for (size_t i = 0; i < arguments.size(); ++i)
    func.setArgAttrs(static_cast<unsigned>(i),
                     arguments[i].attrs.getDictionary(&context));
  if (entry.empty()) {
    for (size_t r = 0; r < updates.size(); ++r)
      func.setResultAttr(static_cast<unsigned>(r + 1),
                         zt::ZTDialect::kTiedAttrName,
                         builder.getI64IntegerAttr(updates[r].first));
  } else {
    func->setAttr(zt::ZTDialect::kEntryAttrName, builder.getStringAttr(entry));
    for (size_t r = 0; r < results.size(); ++r)
      func.setResultAttr(static_cast<unsigned>(r),
                         zt::ZTDialect::kNameAttrName,
                         builder.getStringAttr(results[r].first));
  }
  finished = true;
  entryKind = entry;
  zcc::DiagnosticCollector diagnostics(context);
  if (failed(verify(*module)))
    failWith(diagnostics);
  return status;
}

Status Graph::addEntry(const Graph &other) {
  Impl &g = *impl_;
  const Impl &o = *other.impl_;
  if (!g.status.isOk())
    return g.status;
  if (!o.status.isOk())
    return o.status;
  if (&other == this || !g.finished || !g.entryKind.empty())
    return Status(StatusCode::InvalidArgument,
                  "addEntry: entries are added to a finished training graph "
                  "(finish(loss))");
  if (!o.finished || (o.entryKind != "eval" && o.entryKind != "predict"))
    return Status(StatusCode::InvalidArgument,
                  "addEntry: the added graph must be finished with "
                  "finishEval or finishPredict");
  for (auto fn : g.module->getOps<func::FuncOp>()) {
    if (fn.getSymName() == o.name)
      return Status(StatusCode::InvalidArgument,
                    "addEntry: this program already has a function '" +
                        o.name + "'; give each graph its own name");
    if (!o.entryKind.empty() &&
        fn->getAttrOfType<StringAttr>(zt::ZTDialect::kEntryAttrName) &&
        fn->getAttrOfType<StringAttr>(zt::ZTDialect::kEntryAttrName)
                .getValue() == o.entryKind)
      return Status(StatusCode::InvalidArgument,
                    "addEntry: this program already has an " + o.entryKind +
                        " entry ('" + fn.getSymName().str() + "')");
  }
  // The other graph lives in its own context: carried over as text, with
  // its source locations.
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  ModuleOp source = o.module.get();
  source.print(os, flags);
  zcc::DiagnosticCollector diagnostics(g.context);
  OwningOpRef<ModuleOp> parsed =
      parseSourceString<ModuleOp>(text, ParserConfig(&g.context));
  if (!parsed)
    return Status(StatusCode::InvalidArgument,
                  "addEntry: the added program did not read back: " +
                      diagnostics.text());
  for (auto fn :
       llvm::make_early_inc_range(parsed->getOps<func::FuncOp>())) {
    fn->remove();
    g.module->getBody()->push_back(fn);
  }
  if (failed(verify(*g.module)))
    g.failWith(diagnostics);
  return g.status;
}

std::string Graph::str(bool locations) const {
  if (!impl_->finished)
    return "";
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  if (locations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  impl_->module->print(os, flags);
  return text;
}

namespace {
/// Why the graph cannot be compiled yet, else ok.
Status compilable(const Graph::Impl &g) {
  if (!g.status.isOk())
    return g.status;
  if (!g.finished)
    return Status(StatusCode::InvalidArgument,
                  "compile: the graph has no loss yet; call finish(loss)");
  return Status::ok();
}
} // namespace

Status Graph::compile(const CompileOptions &options, runtime::Plan &out,
                      std::string *plannedIR, std::string *warnings) const {
  Impl &g = *impl_;
  ZRT_RETURN_IF_ERROR(compilable(g));
  OwningOpRef<ModuleOp> copy = g.module->clone();
  return zcc::compileModule(*copy, options, out, plannedIR, warnings);
}

Status Graph::fitCandidate(const CompileOptions &options,
                          int64_t microbatches, FitRow &row, runtime::Plan &out,
                          std::string *warnings) const {
  Impl &g = *impl_;
  ZRT_RETURN_IF_ERROR(compilable(g));
  return zcc::fitCandidate(*g.module, options, microbatches, row, out,
                           warnings);
}

namespace {
std::vector<std::string> namesWithRole(const Graph::Impl &g,
                                       zt::ArgRole role) {
  std::vector<std::string> names;
  for (const auto &arg : g.arguments)
    if (arg.role == role)
      names.push_back(arg.name);
  return names;
}
} // namespace

std::vector<std::string> Graph::inputNames() const {
  return namesWithRole(*impl_, zt::ArgRole::Input);
}
std::vector<std::string> Graph::labelNames() const {
  return namesWithRole(*impl_, zt::ArgRole::Label);
}
std::vector<std::string> Graph::parameterNames() const {
  return namesWithRole(*impl_, zt::ArgRole::Parameter);
}
std::vector<std::string> Graph::stateNames() const {
  return namesWithRole(*impl_, zt::ArgRole::State);
}
