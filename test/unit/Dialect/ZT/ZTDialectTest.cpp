//===- ZTDialectTest.cpp - the zt dialect through its C++ API -------------===//
//
// The JIT capture API builds zt IR with OpBuilder rather than text; these tests
// pin that path: built IR equals the textual examples, and the verifiers
// reject bad shapes with the same messages the lit suite checks.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Runtime/Plan/KernelRules.h"
#include "zcc/Runtime/Plan/Launch.h"
#include "Runtime/LaunchCase.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace mlir;
using namespace zcc::zt;

namespace {

class ZTDialectTest : public ::testing::Test {
protected:
  ZTDialectTest() {
    context.loadDialect<ZTDialect, func::FuncDialect>();
    // Collect diagnostics instead of printing them, so tests can check text.
    handler = std::make_unique<ScopedDiagnosticHandler>(
        &context, [this](Diagnostic &diag) {
          diagnostics.push_back(diag.str());
          return success();
        });
  }

  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, Float32Type::get(&context));
  }

  /// Verifies `op` and returns the first diagnostic, or "" if it verified.
  std::string verifyAndGetError(Operation *op) {
    diagnostics.clear();
    if (succeeded(verify(op)))
      return "";
    return diagnostics.empty() ? "<failure without diagnostic>"
                               : diagnostics.front();
  }

  static std::string print(Operation *op) {
    std::string text;
    llvm::raw_string_ostream os(text);
    op->print(os);
    return text;
  }

  MLIRContext context;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  std::vector<std::string> diagnostics;
};

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Building examples/mlp.mlir with OpBuilder gives the same IR, byte for byte
// once printed, as parsing the file.
TEST_F(ZTDialectTest, BuilderMatchesMlpExample) {
  std::string source = readFile(ZCC_EXAMPLES_DIR "/mlp.mlir");
  ASSERT_FALSE(source.empty()) << "cannot read examples/mlp.mlir";
  OwningOpRef<ModuleOp> parsed =
      parseSourceString<ModuleOp>(source, ParserConfig(&context));
  ASSERT_TRUE(parsed) << (diagnostics.empty() ? "" : diagnostics.front());

  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> built = ModuleOp::create(loc);
  b.setInsertionPointToEnd(built->getBody());

  auto i32 = b.getI32Type();
  const int64_t widths[] = {784, 256, 128, 10};
  const double bounds[] = {0.0357, 0.0625, 0.0884};
  SmallVector<Type> argTypes = {f32({32, 784}),
                                RankedTensorType::get({32}, i32)};
  for (int layer = 0; layer < 3; ++layer) {
    argTypes.push_back(f32({widths[layer], widths[layer + 1]}));
    argTypes.push_back(f32({widths[layer + 1]}));
  }
  auto fn = b.create<func::FuncOp>(
      loc, "mlp_loss",
      b.getFunctionType(argTypes, {RankedTensorType::get({}, b.getF32Type())}));
  auto role = [&](ArgRole r) { return ArgRoleAttr::get(&context, r); };
  fn.setArgAttr(0, ZTDialect::kRoleAttrName, role(ArgRole::Input));
  fn.setArgAttr(1, ZTDialect::kRoleAttrName, role(ArgRole::Label));
  const char *names[] = {"images", "labels", "w1", "b1",
                         "w2",     "b2",     "w3", "b3"};
  for (unsigned i = 0; i < 8; ++i)
    fn.setArgAttr(i, ZTDialect::kNameAttrName, b.getStringAttr(names[i]));
  for (int layer = 0; layer < 3; ++layer) {
    unsigned w = 2 + 2 * layer;
    fn.setArgAttr(w, ZTDialect::kInitAttrName,
                  InitAttr::get(&context, InitKind::Uniform,
                                llvm::APFloat(-bounds[layer]),
                                llvm::APFloat(bounds[layer])));
    fn.setArgAttr(w, ZTDialect::kRoleAttrName, role(ArgRole::Parameter));
    fn.setArgAttr(w + 1, ZTDialect::kInitAttrName,
                  InitAttr::getZeros(&context));
    fn.setArgAttr(w + 1, ZTDialect::kRoleAttrName, role(ArgRole::Parameter));
  }

  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value x = entry->getArgument(0);
  for (int layer = 0; layer < 3; ++layer) {
    auto outType = f32({32, widths[layer + 1]});
    Value h =
        b.create<MatmulOp>(loc, outType, x, entry->getArgument(2 + 2 * layer));
    Value bias = b.create<BroadcastInDimOp>(loc, outType,
                                            entry->getArgument(3 + 2 * layer),
                                            b.getDenseI64ArrayAttr({1}));
    x = b.create<AddOp>(loc, h, bias);
    if (layer < 2)
      x = b.create<ReluOp>(loc, x);
  }
  Value loss = b.create<SoftmaxCrossEntropyOp>(
      loc, RankedTensorType::get({}, b.getF32Type()), x, entry->getArgument(1),
      IntegerAttr(), FloatAttr());
  b.create<func::ReturnOp>(loc, loss);

  ASSERT_EQ(verifyAndGetError(*built), "");
  // Printing without locations or SSA name hints compares structure and
  // attributes, not the names chosen in the text.
  OpPrintingFlags flags;
  auto printPlain = [&](ModuleOp module) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os, flags);
    return text;
  };
  EXPECT_EQ(printPlain(*built), printPlain(*parsed));
}

TEST_F(ZTDialectTest, MatmulContractionMismatchIsReported) {
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto fn = b.create<func::FuncOp>(
      loc, "f", b.getFunctionType({f32({4, 8}), f32({4, 8})}, {}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  b.create<MatmulOp>(loc, f32({4, 8}), entry->getArgument(0),
                     entry->getArgument(1));
  b.create<func::ReturnOp>(loc);
  EXPECT_EQ(verifyAndGetError(*module),
            "'zt.matmul' op contraction dimensions differ: lhs has K = 8, rhs "
            "has K = 4 (transpose_lhs = 0, transpose_rhs = 0)");

  // Reading the rhs transposed fixes the contraction; the result shape rule
  // then asks for [4, 4], and the op verifies once it has it.
  MatmulOp matmul;
  module->walk([&](MatmulOp op) { matmul = op; });
  matmul.setTransposeRhs(true);
  EXPECT_EQ(
      verifyAndGetError(*module),
      "'zt.matmul' op expected result shape [4, 4], got 'tensor<4x8xf32>'");
  matmul.getResult().setType(f32({4, 4}));
  EXPECT_EQ(verifyAndGetError(*module), "");
}

TEST_F(ZTDialectTest, BroadcastRuleIsReported) {
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto fn = b.create<func::FuncOp>(loc, "f", b.getFunctionType({f32({3})}, {}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto op = b.create<BroadcastInDimOp>(loc, f32({4, 8}), entry->getArgument(0),
                                       b.getDenseI64ArrayAttr({1}));
  b.create<func::ReturnOp>(loc);
  EXPECT_EQ(verifyAndGetError(op),
            "'zt.broadcast_in_dim' op operand dimension 0 (size 3) cannot "
            "broadcast to result dimension 1 (size 8): it must be 1 or 8");
}

TEST_F(ZTDialectTest, InitAttrRejectsBadValuesThroughGetChecked) {
  auto emit = [&]() { return emitError(UnknownLoc::get(&context)); };
  diagnostics.clear();
  EXPECT_FALSE(InitAttr::getChecked(emit, &context, InitKind::Normal,
                                    llvm::APFloat(0.0), llvm::APFloat(-1.0)));
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0],
            "initializer normal: 'std' must be positive, got -1");

  diagnostics.clear();
  EXPECT_FALSE(InitAttr::getChecked(
      emit, &context, InitKind::Constant,
      llvm::APFloat(std::numeric_limits<double>::infinity()),
      llvm::APFloat(0.0)));
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0], "initializer constant: 'value' must be finite");

  // Kinds with fewer values keep the unused slots zero, so equal initializers
  // are one uniqued attribute.
  diagnostics.clear();
  EXPECT_FALSE(InitAttr::getChecked(emit, &context, InitKind::Zeros,
                                    llvm::APFloat(1.0), llvm::APFloat(0.0)));
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0], "initializer zeros takes 0 value(s)");
  EXPECT_EQ(InitAttr::getZeros(&context), InitAttr::getZeros(&context));

  InitAttr ok = InitAttr::getNormal(&context, 0.0, 0.02);
  EXPECT_EQ(ok.getKind(), InitKind::Normal);
  EXPECT_EQ(ok.getSecond().convertToDouble(), 0.02);
  EXPECT_EQ(InitAttr::getNumValues(InitKind::Uniform), 2u);
  EXPECT_EQ(InitAttr::getNumValues(InitKind::Zeros), 0u);
}

// Printing is a fixed point: text -> IR -> text -> IR -> text is stable, the
// determinism later stages (byte-identical plans) build on.
TEST_F(ZTDialectTest, GptExamplePrintsDeterministically) {
  std::string source = readFile(ZCC_EXAMPLES_DIR "/gpt_block.mlir");
  ASSERT_FALSE(source.empty());
  OwningOpRef<ModuleOp> first =
      parseSourceString<ModuleOp>(source, ParserConfig(&context));
  ASSERT_TRUE(first);
  std::string once = print(*first);
  OwningOpRef<ModuleOp> second =
      parseSourceString<ModuleOp>(once, ParserConfig(&context));
  ASSERT_TRUE(second);
  EXPECT_EQ(print(*second), once);
  int attentions = 0;
  (*second)->walk([&](AttentionOp op) { attentions += op.getCausal(); });
  EXPECT_EQ(attentions, 2) << "one causal attention per transformer block";
}

} // namespace

namespace {

// Every element row's zt op (generated from the row) parses, verifies and
// prints back to the same text, its params included; a missing param is a
// verifier error. (The round-trip test's coverage check leaves the rows'
// ops to this test.)
// Every op built by name (its kernel's rule infers its results and checks
// it: ZT_KernelRules), on its kernel case's types and parameters
// (LaunchCase.h): parsed in MLIR's generic form, printed in its own, parsed
// back the same; without a parameter it takes, it fails to verify.
// round-trip-covers-every-op leaves these ops to this test.
TEST_F(ZTDialectTest, EveryInferredOpRoundTrips) {
  namespace rt = zcc::runtime;
  auto typeText = [](const rt::TensorType &t) {
    std::string text = "tensor<";
    for (int64_t d : t.shape)
      text += std::to_string(d) + "x";
    static const std::map<rt::DType, const char *> names = {
        {rt::DType::F32, "f32"}, {rt::DType::BF16, "bf16"}, {rt::DType::I32, "i32"},
        {rt::DType::I64, "i64"}, {rt::DType::Bool, "i1"}};
    return text + names.at(t.dtype) + ">";
  };
  int covered = 0;
  for (zcc::runtime::testing::LaunchCase &c :
       zcc::runtime::testing::everyKernel()) {
    std::optional<rt::KernelId> kernel = rt::findKernel(c.kernel);
    if (!kernel || !rt::kernelInfersResults(*kernel))
      continue;
    SCOPED_TRACE(c.kernel);
    rt::Entry decoded;
    ASSERT_TRUE(c.decoded(decoded).isOk());
    const rt::Launch &launch = decoded.launches[0];
    std::string args, operands, inTypes, outTypes, attrs;
    for (size_t i = 0; i < launch.inputs.size(); ++i) {
      std::string type = typeText(decoded.tensors[launch.inputs[i]].type);
      args += (i ? ", %a" : "%a") + std::to_string(i) + ": " + type;
      operands += (i ? ", %a" : "%a") + std::to_string(i);
      inTypes += (i ? ", " : "") + type;
    }
    for (size_t i = 0; i < launch.outputs.size(); ++i)
      outTypes += (i ? ", " : "") +
                  typeText(decoded.tensors[launch.outputs[i]].type);
    for (const rt::Param &p : c.params) {
      attrs += attrs.empty() ? " {" : ", ";
      attrs += p.name;
      if (p.kind == rt::ParamKind::Int)
        attrs += " = " + std::to_string(p.intValue) + " : i64";
      else if (p.kind == rt::ParamKind::Float)
        attrs += " = " + std::to_string(p.floatValue) + " : f64";
      else if (p.kind == rt::ParamKind::Ints) {
        attrs += " = array<i64";
        for (size_t k = 0; k < p.ints.size(); ++k)
          attrs += (k ? ", " : ": ") + std::to_string(p.ints[k]);
        attrs += ">";
      }
    }
    attrs += attrs.empty() ? "" : "}";
    std::string results = launch.outputs.size() > 1
                              ? ":" + std::to_string(launch.outputs.size())
                              : "";
    std::string source = "func.func @f(" + args + ") {\n  %r" + results +
                         " = \"zt." +
                         c.kernel + "\"(" + operands + ")" + attrs + " : (" +
                         inTypes + ") -> (" + outTypes + ")\n  return\n}\n";
    OwningOpRef<ModuleOp> first =
        parseSourceString<ModuleOp>(source, ParserConfig(&context));
    ASSERT_TRUE(first) << source;
    std::string once = print(*first);
    EXPECT_EQ(once.find("\"zt."), std::string::npos) << once;
    OwningOpRef<ModuleOp> second =
        parseSourceString<ModuleOp>(once, ParserConfig(&context));
    ASSERT_TRUE(second) << once;
    EXPECT_EQ(print(*second), once);
    for (const rt::Param &p : c.params) {
      if (p.kind == rt::ParamKind::Unit)
        continue;
      std::string missing = source;
      size_t at = missing.find(p.name + " = ");
      size_t end = missing.find_first_of(",}", at);
      missing.erase(at, end - at + (missing[end] == ',' ? 2 : 0));
      ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) {
        return success();
      });
      EXPECT_FALSE(parseSourceString<ModuleOp>(missing, ParserConfig(&context)))
          << missing;
    }
    ++covered;
  }
  EXPECT_GT(covered, 0);
}

TEST_F(ZTDialectTest, EveryElementRowRoundTrips) {
  for (int row = 0; row < zcc::runtime::kElementRowCount; ++row) {
    const zcc::runtime::ElementRow &r = zcc::runtime::kElementRows[row];
    SCOPED_TRACE(r.name);
    std::string attrs;
    for (int k = 0; k < r.paramCount; ++k)
      attrs += std::string(k ? ", " : " {") + r.paramNames[k] + " = " +
               std::to_string(k + 0.5) + " : f64";
    attrs += r.paramCount ? "}" : "";
    // The op in MLIR's generic form, from the row's operand kinds; printed,
    // it takes its own assembly format, which must parse back.
    const char *f32 = "tensor<2x3xf32>", *i1 = "tensor<2x3xi1>";
    bool boolResult = zcc::runtime::elementResultIsBool(r.arity);
    std::string operands, types;
    for (int i = 0; i < zcc::runtime::elementOperandCount(r.arity); ++i) {
      bool condition = r.arity == zcc::runtime::ElementArity::BoolUnary ||
                       r.arity == zcc::runtime::ElementArity::BoolBinary ||
                       (i == 0 && (r.arity == zcc::runtime::ElementArity::Mask ||
                                   r.arity == zcc::runtime::ElementArity::Select));
      operands += std::string(i ? ", " : "") + (condition ? "%m" : "%a");
      types += std::string(i ? ", " : "") + (condition ? i1 : f32);
    }
    const char *result = boolResult ? i1 : f32;
    std::string source = std::string("func.func @f(%a: ") + f32 + ", %m: " +
                         i1 + ") -> " + result + " {\n  %r = \"zt." + r.name +
                         "\"(" + operands + ")" + attrs + " : (" + types +
                         ") -> " + result + "\n  return %r : " + result +
                         "\n}\n";
    OwningOpRef<ModuleOp> first =
        parseSourceString<ModuleOp>(source, ParserConfig(&context));
    ASSERT_TRUE(first) << source;
    std::string once = print(*first);
    EXPECT_NE(once.find(std::string("zt.") + r.name), std::string::npos);
    OwningOpRef<ModuleOp> second =
        parseSourceString<ModuleOp>(once, ParserConfig(&context));
    ASSERT_TRUE(second) << once;
    EXPECT_EQ(print(*second), once);
    if (r.paramCount > 0) {
      std::string missing = source;
      missing.replace(missing.find(attrs), attrs.size(), "");
      EXPECT_FALSE(parseSourceString<ModuleOp>(missing, ParserConfig(&context)))
          << "a row's params are required";
    }
  }
}

/// The parameters the runtime decodes for `kernel` (Launch.h), by name.
std::set<std::string> kernelParams(zcc::runtime::KernelId kernel) {
  std::set<std::string> names;
#define ZRT_PARAM_NAME(k, name, kind, member)                                  \
  if (kernel == zcc::runtime::KernelId::k)                                     \
    names.insert(name);
  ZRT_KERNEL_PARAM_LIST(ZRT_PARAM_NAME)
#undef ZRT_PARAM_NAME
  if (const zcc::runtime::ElementRow *row = zcc::runtime::elementRow(kernel))
    for (int k = 0; k < row->paramCount; ++k)
      names.insert(row->paramNames[k]);
  return names;
}

// The compiler states every attribute of a zt op as its launch's parameters
// and the runtime decodes exactly the parameters of its table: the two must
// name the same attributes, or a plan would fail to load (or lose one).
TEST_F(ZTDialectTest, EveryOpsAttributesAreItsKernelsParameters) {
  int kernels = 0;
  for (RegisteredOperationName op : context.getRegisteredOperations()) {
    if (op.getDialectNamespace() != ZTDialect::getDialectNamespace())
      continue;
    std::string name = op.getStringRef().drop_front(3).str(); // "zt."
    std::optional<zcc::runtime::KernelId> kernel =
        zcc::runtime::findKernel(name);
    if (!kernel) {
      // A view: no launch of its own.
      EXPECT_EQ(name, "reshape") << "zt." << name << " has no kernel";
      continue;
    }
    ++kernels;
    std::set<std::string> attributes;
    for (StringAttr attr : op.getAttributeNames())
      if (zcc::zt::isKernelParameter(attr.strref()))
        attributes.insert(attr.str());
    EXPECT_EQ(attributes, kernelParams(*kernel)) << "zt." << name;
  }
  // Every kernel but `copy` (planner-made) is a zt op.
  EXPECT_EQ(kernels, static_cast<int>(zcc::runtime::KernelId::NumKernels) - 1);
}

// The passes read an op's properties from its table entry (zt::traitsOf),
// ODS from its traits: the two agree. An element op (ODS Elementwise) runs
// in place, reads broadcast views and is cheap to recompute; ODS
// Commutative is the row's kCommutative; nothing but zt.reshape (a view) has
// traits without a kernel.
TEST_F(ZTDialectTest, OpTraitsAgreeWithODS) {
  using namespace zcc::runtime;
  OpBuilder b(&context);
  int elementwise = 0;
  for (RegisteredOperationName info : context.getRegisteredOperations()) {
    if (info.getDialectNamespace() != ZTDialect::getDialectNamespace())
      continue;
    // An op of this name, unverified: enough to ask for its traits.
    OperationState state(b.getUnknownLoc(), info);
    Operation *op = Operation::create(state);
    uint32_t traits = zcc::zt::traitsOf(op);
    bool element = op->hasTrait<OpTrait::Elementwise>();
    elementwise += element;
    if (element) {
      uint32_t expected = kInPlace | kStridedReads | kCheapToRecompute;
      EXPECT_EQ(traits & expected, expected) << info.getStringRef().str();
    }
    EXPECT_EQ(op->hasTrait<OpTrait::IsCommutative>(),
              (traits & kCommutative) != 0)
        << info.getStringRef().str();
    // Built by name exactly when its kernel's rule infers its results.
    std::optional<KernelId> kernel =
        findKernel(info.getStringRef().drop_front(3).str());
    EXPECT_EQ(op->hasTrait<zcc::zt::BuiltByName>(),
              kernel && kernelInfersResults(*kernel))
        << info.getStringRef().str();
    // Checked by its kernel's rules: it has a kernel.
    if (op->hasTrait<zcc::zt::KernelRules>() ||
        op->hasTrait<zcc::zt::BuiltByName>())
      EXPECT_TRUE(kernel.has_value()) << info.getStringRef().str();
    if (!findKernel(info.getStringRef().drop_front(3).str()))
      EXPECT_EQ(traits != 0, info.getStringRef() == "zt.reshape")
          << info.getStringRef().str();
    op->destroy();
  }
  EXPECT_GT(elementwise, 40); // the rows and zt.scale
  // Not an element op, yet bf16 in keeps bf16 out: the views.
  EXPECT_TRUE(kernelTraits(KernelId::Transpose) & kStoresBf16);
  EXPECT_FALSE(kernelTraits(KernelId::Exp) & kStoresBf16);
  EXPECT_TRUE(kernelTraits(KernelId::Sgd) & kUpdate);
}

} // namespace
