//===- CaptureTest.cpp - the C++ capture API ------------------------------===//
//
// The captured programs are checked against the hand-written examples (the
// same text and the same plan bytes), trained in process, and every kind of
// bad program must come back as an error naming this file and the line.
//
//===----------------------------------------------------------------------===//

#include "zcc/Capture/Graph.h"
#include "zcc/Compiler/Compile.h"
#include "zcc/zcc.h"
#include "zcc/Runtime/Data/DataSource.h"
#include "zcc/Runtime/Plan/PlanFile.h"
#include "zcc/Runtime/Session/Session.h"
#include "zcc/Runtime/Training/Evaluator.h"
#include "zcc/Runtime/Training/Trainer.h"
#include "zcc/Runtime/Testing/GradientCheck.h"

#include "../ElementTestRows.h"
#include "../Runtime/LaunchCase.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <vector>

using namespace zcc;
using capture::DType;
using runtime::Status;
using capture::Graph;
using capture::Init;
using capture::Tensor;

namespace {

std::string readExample(const std::string &name) {
  std::ifstream in(std::string(ZCC_EXAMPLES_DIR) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The example parsed and printed again: the form str() prints.
std::string canonicalExample(const std::string &name) {
  mlir::MLIRContext context;
  loadCompilerDialects(context);
  auto module =
      mlir::parseSourceString<mlir::ModuleOp>(readExample(name), &context);
  EXPECT_TRUE(module) << name;
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  return text;
}

/// examples/mlp.mlir, captured.
void captureMlp(Graph &g) {
  Tensor images = g.input("images", {32, 784});
  Tensor labels = g.label("labels", {32});
  Tensor w1 = g.parameter("w1", {784, 256}, Init::uniform(-0.0357, 0.0357));
  Tensor b1 = g.parameter("b1", {256}, Init::zeros());
  Tensor w2 = g.parameter("w2", {256, 128}, Init::uniform(-0.0625, 0.0625));
  Tensor b2 = g.parameter("b2", {128}, Init::zeros());
  Tensor w3 = g.parameter("w3", {128, 10}, Init::uniform(-0.0884, 0.0884));
  Tensor b3 = g.parameter("b3", {10}, Init::zeros());
  Tensor a1 = g.relu(g.add(g.matmul(images, w1), b1));
  Tensor a2 = g.relu(g.add(g.matmul(a1, w2), b2));
  Tensor logits = g.add(g.matmul(a2, w3), b3);
  ASSERT_TRUE(g.finish(g.softmaxCrossEntropy(logits, labels)).isOk())
      << g.status().message();
}

TEST(Capture, MlpPrintsTheExamplesProgram) {
  Graph g("mlp_loss");
  captureMlp(g);
  EXPECT_EQ(g.str(), canonicalExample("mlp.mlir"));
  EXPECT_EQ(g.inputNames(), std::vector<std::string>{"images"});
  EXPECT_EQ(g.labelNames(), std::vector<std::string>{"labels"});
  EXPECT_EQ(g.parameterNames().size(), 6u);
}

TEST(Capture, LocationsAreTheCallersLines) {
  Graph g("f");
  Tensor x = g.input("x", {4, 8});
  int line = __LINE__ + 1;
  Tensor y = g.relu(x);
  ASSERT_TRUE(g.finish(g.sum(y)).isOk()) << g.status().message();
  std::string text = g.str(/*locations=*/true);
  std::string expected = "CaptureTest.cpp\":" + std::to_string(line) + ":0";
  EXPECT_NE(text.find(expected), std::string::npos) << text;
}

TEST(Capture, MlpCompilesToTheSamePlanAsTheExample) {
  Graph g("mlp_loss");
  captureMlp(g);
  CompileOptions options;
  options.optimizer = "adamw";
  options.lr = 0.001;
  runtime::Plan captured, fromText;
  ASSERT_TRUE(g.compile(options, captured).isOk());
  ASSERT_TRUE(compileSource(readExample("mlp.mlir"), "mlp.mlir", options,
                            fromText)
                  .isOk());
  // The same plan but for the launches' source locations (this file's
  // lines, the example's).
  EXPECT_NE(captured.entries[0].launches[0].location.find("CaptureTest.cpp:"),
            std::string::npos);
  for (runtime::Plan *plan : {&captured, &fromText})
    for (runtime::Entry &entry : plan->entries)
      for (runtime::Launch &launch : entry.launches)
        launch.location.clear();
  EXPECT_EQ(runtime::serializePlan(captured), runtime::serializePlan(fromText));
  // The graph compiles again, unchanged, with other options.
  runtime::Plan sgd;
  options.optimizer = "sgd";
  ASSERT_TRUE(g.compile(options, sgd).isOk());
  EXPECT_NE(runtime::serializePlan(sgd), runtime::serializePlan(captured));
}

/// Compiles the graph and loads its plan in a one-thread CPU session.
void compileAndLoad(Graph &g, const CompileOptions &options,
                    std::shared_ptr<runtime::Plan> &plan,
                    std::unique_ptr<runtime::Session> &session) {
  ASSERT_TRUE(g.compile(options, *plan).isOk());
  runtime::SessionOptions sessionOptions;
  sessionOptions.threads = 1;
  ASSERT_TRUE(runtime::Session::create(plan, sessionOptions, session).isOk());
}

TEST(Capture, CapturedMlpTrainsInProcess) {
  Graph g("mlp_loss");
  captureMlp(g);
  CompileOptions options;
  options.optimizer = "adamw";
  options.lr = 0.001;
  auto plan = std::make_shared<runtime::Plan>();
  std::unique_ptr<runtime::Session> session;
  ASSERT_NO_FATAL_FAILURE(compileAndLoad(g, options, plan, session));
  std::unique_ptr<runtime::Trainer> trainer;
  ASSERT_TRUE(runtime::Trainer::create(*session, 1, trainer).isOk());
  std::unique_ptr<runtime::DataSource> data;
  ASSERT_TRUE(runtime::makeDataSource(*session, trainer->entry(), "synthetic",
                                      1, data)
                  .isOk());
  double first = 0, loss = 0;
  for (int step = 0; step < 200; ++step) {
    ASSERT_TRUE(trainer->step(*data, loss).isOk());
    if (step == 0)
      first = loss;
  }
  EXPECT_LT(loss, 0.5 * first) << "first " << first << ", last " << loss;
}

TEST(Capture, StatsShowAStepBoundaryThatIsNotDriven) {
  // Microbatches run without their apply: the stats say so, per entry kind.
  Graph g("mlp_loss");
  captureMlp(g);
  CompileOptions options;
  options.optimizer = "sgd";
  options.accumulate = true;
  auto plan = std::make_shared<runtime::Plan>();
  std::unique_ptr<runtime::Session> session;
  ASSERT_NO_FATAL_FAILURE(compileAndLoad(g, options, plan, session));
  int microbatch = -1, apply = -1;
  for (size_t i = 0; i < plan->entries.size(); ++i)
    (plan->entries[i].kind == runtime::EntryKind::Apply ? apply : microbatch) =
        static_cast<int>(i);
  ASSERT_GE(microbatch, 0);
  ASSERT_GE(apply, 0);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(session->run(microbatch).isOk());
  runtime::SessionStats stats = session->stats();
  EXPECT_EQ(stats.microbatchesSinceApply, 3u);
  EXPECT_EQ(runtime::runsOf(stats, runtime::EntryKind::Microbatch), 3u);
  EXPECT_EQ(runtime::runsOf(stats, runtime::EntryKind::Apply), 0u);
  std::string json = runtime::sessionStatsJson(stats);
  EXPECT_NE(json.find("\"microbatches_since_apply\": 3"), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"apply\": 0"), std::string::npos) << json;
  ASSERT_TRUE(session->run(apply).isOk());
  stats = session->stats();
  EXPECT_EQ(stats.microbatchesSinceApply, 0u);
  EXPECT_EQ(runtime::runsOf(stats, runtime::EntryKind::Apply), 1u);
  EXPECT_EQ(stats.entryRuns[microbatch].runs, 3u);
  EXPECT_EQ(stats.allocationsAfterLoad, 0u);
}

/// examples/gpt_block.mlir, captured: every kind of op the GPT uses.
void captureGptBlock(Graph &g) {
  const int64_t B = 2, S = 16, D = 64, H = 4, V = 128, F = 256;
  Tensor tokens = g.input("tokens", {B, S}, DType::I32);
  Tensor targets = g.label("targets", {B, S}, DType::I32);
  g.step();
  Init normal = Init::normal(0.0, 0.02);
  Tensor wte = g.parameter("wte", {V, D}, normal);
  Tensor wpe = g.parameter("wpe", {S, D}, normal);
  struct Block {
    Tensor ln1g, ln1b, wqkv, bqkv, wo, bo, ln2g, ln2b, wfc, bfc, wproj, bproj;
  } blocks[2];
  for (int l = 0; l < 2; ++l) {
    auto scope = g.scope("h" + std::to_string(l));
    Block &b = blocks[l];
    b.ln1g = g.parameter("ln1_g", {D}, Init::ones());
    b.ln1b = g.parameter("ln1_b", {D}, Init::zeros());
    b.wqkv = g.parameter("w_qkv", {D, 3 * D}, normal);
    b.bqkv = g.parameter("b_qkv", {3 * D}, Init::zeros());
    b.wo = g.parameter("w_o", {D, D}, normal);
    b.bo = g.parameter("b_o", {D}, Init::zeros());
    b.ln2g = g.parameter("ln2_g", {D}, Init::ones());
    b.ln2b = g.parameter("ln2_b", {D}, Init::zeros());
    b.wfc = g.parameter("w_fc", {D, F}, normal);
    b.bfc = g.parameter("b_fc", {F}, Init::zeros());
    b.wproj = g.parameter("w_proj", {F, D}, normal);
    b.bproj = g.parameter("b_proj", {D}, Init::zeros());
  }
  Tensor lnfg = g.parameter("lnf_g", {D}, Init::ones());
  Tensor lnfb = g.parameter("lnf_b", {D}, Init::zeros());

  Tensor x = g.add(g.embedding(wte, tokens), wpe);
  int64_t seed = 0;
  for (int l = 0; l < 2; ++l) {
    const Block &b = blocks[l];
    Tensor qkv = g.add(g.matmul(g.layerNorm(x, b.ln1g, b.ln1b), b.wqkv), b.bqkv);
    auto heads = [&](int64_t part) {
      Tensor t = g.sliceDim(qkv, 2, part * D, (part + 1) * D);
      return g.transpose(g.reshape(t, {B, S, H, D / H}), {0, 2, 1, 3});
    };
    Tensor q = heads(0), k = heads(1), v = heads(2);
    Tensor attn = g.attention(q, k, v, /*causal=*/true, 0.25);
    Tensor merged =
        g.reshape(g.transpose(attn, {0, 2, 1, 3}), {B, S, D});
    Tensor out = g.add(g.matmul(merged, b.wo), b.bo);
    x = g.add(x, g.dropout(out, 0.1, seed++));
    Tensor h = g.add(g.matmul(g.layerNorm(x, b.ln2g, b.ln2b), b.wfc), b.bfc);
    Tensor mlp = g.add(g.matmul(g.gelu(h), b.wproj), b.bproj);
    x = g.add(x, g.dropout(mlp, 0.1, seed++));
  }
  Tensor logits = g.matmul(g.layerNorm(x, lnfg, lnfb), wte, false, true);
  ASSERT_TRUE(g.finish(g.softmaxCrossEntropy(logits, targets)).isOk())
      << g.status().message();
}

TEST(Capture, GptBlockCompilesLikeTheExample) {
  Graph g("gpt_loss");
  captureGptBlock(g);
  CompileOptions options;
  options.optimizer = "adamw";
  options.lr = 0.001;
  runtime::Plan captured, fromText;
  ASSERT_TRUE(g.compile(options, captured).isOk());
  ASSERT_TRUE(compileSource(readExample("gpt_block.mlir"), "gpt_block.mlir",
                            options, fromText)
                  .isOk());
  EXPECT_EQ(captured.entries.size(), fromText.entries.size());
  for (size_t e = 0; e < captured.entries.size(); ++e) {
    EXPECT_EQ(captured.entries[e].arenaSize, fromText.entries[e].arenaSize);
    EXPECT_EQ(captured.entries[e].launches.size(),
              fromText.entries[e].launches.size());
  }
  EXPECT_EQ(captured.persistentSize, fromText.persistentSize);
}

//===----------------------------------------------------------------------===//
// Errors: the first one, with this file's name and the line.
//===----------------------------------------------------------------------===//

std::string here(int line) {
  return std::string("CaptureTest.cpp:") + std::to_string(line) + ": error: ";
}

TEST(CaptureErrors, MatmulShapesNameTheLine) {
  Graph g;
  Tensor a = g.input("a", {4, 8});
  Tensor b = g.parameter("b", {9, 3}, Init::zeros());
  int line = __LINE__ + 1;
  Tensor c = g.matmul(a, b);
  EXPECT_FALSE(c.valid());
  ASSERT_FALSE(g.ok());
  const std::string &message = g.status().message();
  EXPECT_NE(message.find(here(line) +
                         "'zt.matmul' op contraction dimensions differ"),
            std::string::npos)
      << message;
  // Later ops do nothing and keep the first error.
  Tensor d = g.relu(c);
  EXPECT_FALSE(d.valid());
  EXPECT_EQ(g.status().message(), message);
  EXPECT_FALSE(g.finish(d).isOk());
  EXPECT_EQ(g.str(), "");
}

TEST(CaptureErrors, ShapesThatDoNotBroadcast) {
  Graph g;
  Tensor a = g.input("a", {4, 8});
  Tensor b = g.input("b", {4});
  int line = __LINE__ + 1;
  g.add(a, b);
  EXPECT_NE(g.status().message().find(
                here(line) + "add: shapes [4, 8] and [4] do not broadcast"),
            std::string::npos)
      << g.status().message();
}

TEST(CaptureErrors, DtypesAreCheckedByTheDialect) {
  Graph g;
  Tensor a = g.input("a", {4}, DType::F32);
  Tensor b = g.input("b", {4}, DType::I32);
  int line = __LINE__ + 1;
  g.add(a, b);
  EXPECT_NE(g.status().message().find(here(line) + "'zt.add' op"),
            std::string::npos)
      << g.status().message();
}

TEST(CaptureErrors, ArgumentsAndNumbers) {
  {
    Graph g;
    g.input("x", {2});
    int line = __LINE__ + 1;
    g.label("x", {2});
    EXPECT_NE(g.status().message().find(
                  here(line) + "label 'x': the name is already taken"),
              std::string::npos)
        << g.status().message();
  }
  {
    Graph g;
    int line = __LINE__ + 1;
    g.parameter("w", {2}, Init::normal(0.0, -1.0));
    EXPECT_NE(g.status().message().find(here(line)), std::string::npos)
        << g.status().message();
    EXPECT_NE(g.status().message().find("std"), std::string::npos);
  }
  {
    Graph g;
    Tensor x = g.input("x", {2, 3});
    int line = __LINE__ + 1;
    g.reshape(x, {4, -1});
    EXPECT_NE(g.status().message().find(
                  here(line) + "reshape: cannot reshape [2, 3] into [4, -1]"),
              std::string::npos)
        << g.status().message();
  }
  {
    Graph g;
    Tensor x = g.input("x", {2, 3});
    int line = __LINE__ + 1;
    g.softmax(x, 2);
    EXPECT_NE(g.status().message().find(
                  here(line) + "softmax: dimension 2 is out of range"),
              std::string::npos)
        << g.status().message();
  }
  {
    Graph g;
    Tensor x = g.input("x", {2, 3});
    int line = __LINE__ + 1;
    g.dropout(x, 1.0);
    EXPECT_NE(g.status().message().find(
                  here(line) + "dropout: the rate must be in [0, 1)"),
              std::string::npos)
        << g.status().message();
  }
}

TEST(CaptureErrors, TheLossMustBeAScalar) {
  Graph g;
  Tensor x = g.input("x", {2, 3});
  int line = __LINE__ + 1;
  Status done = g.finish(g.relu(x));
  EXPECT_NE(done.message().find(here(line) +
                                "finish: the loss must be a rank-0 f32"),
            std::string::npos)
      << done.message();
  runtime::Plan plan;
  EXPECT_FALSE(g.compile(CompileOptions(), plan).isOk());
}

TEST(CaptureErrors, ForeignAndInvalidTensors) {
  Graph g, other;
  Tensor x = other.input("x", {2});
  g.relu(x);
  EXPECT_NE(g.status().message().find("belongs to another graph"),
            std::string::npos)
      << g.status().message();
  Graph h;
  h.relu(Tensor());
  EXPECT_NE(h.status().message().find("is not a tensor of this graph"),
            std::string::npos)
      << h.status().message();
}

TEST(CaptureErrors, NothingAfterFinish) {
  Graph g;
  Tensor x = g.input("x", {2});
  ASSERT_TRUE(g.finish(g.sum(x)).isOk());
  g.relu(x);
  EXPECT_NE(g.status().message().find("no op may be added after finish"),
            std::string::npos);
}

TEST(Capture, ScopesStepAndDropout) {
  Graph g;
  Tensor x = g.input("x", {4, 8});
  {
    auto outer = g.scope("h0");
    auto inner = g.scope("attn");
    g.parameter("w", {8}, Init::ones());
    EXPECT_EQ(g.scopePrefix(), "h0.attn.");
  }
  g.parameter("w", {8}, Init::ones());
  EXPECT_EQ(g.parameterNames(),
            (std::vector<std::string>{"h0.attn.w", "w"}));
  Tensor same = g.dropout(x, 0.0);
  EXPECT_EQ(same.id(), x.id()) << "rate 0 is the identity";
  Tensor a = g.dropout(x, 0.5);
  Tensor b = g.dropout(a, 0.5);
  ASSERT_TRUE(g.finish(g.sum(b)).isOk()) << g.status().message();
  std::string text = g.str();
  // One step argument, shared; each call its own seed.
  EXPECT_EQ(text.find("zt.role = #zt.role<step>"),
            text.rfind("zt.role = #zt.role<step>"));
  EXPECT_NE(text.find("seed = 1"), std::string::npos) << text;
  EXPECT_NE(text.find("seed = 2"), std::string::npos) << text;
}

TEST(Capture, StateIsUpdatedThroughATiedResult) {
  Graph g;
  Tensor x = g.input("x", {4, 2});
  Tensor w = g.parameter("w", {2}, Init::ones());
  auto bn = g.scope("bn");
  Tensor mean = g.state("running_mean", {2}, Init::zeros());
  Tensor h = g.mul(x, w);
  g.update(mean, g.add(g.scale(mean, 0.9), g.scale(g.mean(h, {0}), 0.1)));
  EXPECT_EQ(g.stateNames(), std::vector<std::string>{"bn.running_mean"});
  EXPECT_EQ(g.parameterNames(), std::vector<std::string>{"w"});
  ASSERT_TRUE(g.finish(g.sum(h)).isOk()) << g.status().message();
  std::string text = g.str();
  EXPECT_NE(text.find("zt.name = \"bn.running_mean\", zt.role = "
                      "#zt.role<state>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("-> (tensor<f32>, tensor<2xf32> {zt.tied = 2 : i64})"),
            std::string::npos)
      << text;
  // It compiles: the update is written over the state in place.
  CompileOptions options;
  options.optimizer = "sgd";
  runtime::Plan plan;
  std::string planned;
  ASSERT_TRUE(g.compile(options, plan, &planned).isOk());
  EXPECT_GE(plan.findPersistent("bn.running_mean"), 0);
}

TEST(CaptureErrors, UpdatesOfState) {
  auto failure = [](auto build) {
    Graph g;
    build(g);
    return g.status().message();
  };
  EXPECT_NE(failure([](Graph &g) {
              Tensor w = g.parameter("w", {2}, Init::ones());
              g.update(w, g.relu(w));
            }).find("update: operand #0 is not a state argument"),
            std::string::npos);
  EXPECT_NE(failure([](Graph &g) {
              Tensor s = g.state("s", {2}, Init::zeros());
              g.update(s, g.sum(s));
            }).find("update: state 's' is f32 [2], its new value f32 []"),
            std::string::npos);
  EXPECT_NE(failure([](Graph &g) {
              Tensor s = g.state("s", {2}, Init::zeros());
              g.update(s, g.relu(s));
              g.update(s, g.relu(s));
            }).find("update: state 's' is already updated by this step"),
            std::string::npos);
}

/// A scaled linear model and its running mean: the step trains `w` and
/// updates the mean; evaluation reads both (the centered inputs), and
/// prediction gives the scores. `entry`: "" (the step), "eval", "predict".
void buildScaled(Graph &g, const std::string &entry) {
  Tensor x = g.input("x", {4, 2});
  Tensor w = g.parameter("w", {2}, Init::constant(0.5));
  Tensor mean = g.state("running_mean", {2}, Init::zeros());
  if (entry == "predict") {
    ASSERT_TRUE(g.finishPredict({{"scores", g.mul(x, w)}}).isOk())
        << g.status().message();
    return;
  }
  Tensor y = g.label("y", {4, 2}, DType::F32);
  if (entry == "eval") {
    ASSERT_TRUE(g.finishEval(g.mse(g.mul(g.sub(x, mean), w), y)).isOk())
        << g.status().message();
    return;
  }
  Tensor h = g.mul(x, w);
  g.update(mean, g.add(g.scale(mean, 0.5), g.scale(g.mean(x, {0}), 0.5)));
  ASSERT_TRUE(g.finish(g.mse(h, y)).isOk()) << g.status().message();
}

std::vector<double> readAll(const runtime::Session &session, int entry,
                            const std::string &name) {
  runtime::TensorInfo info;
  EXPECT_TRUE(session.findTensor(entry, name, info).isOk()) << name;
  std::vector<double> values(info.desc->type.numElements());
  EXPECT_TRUE(session.readValues(info, values.data(), values.size()).isOk());
  return values;
}

TEST(Capture, EvalAndPredictEntriesReadTheStepsParametersAndState) {
  Graph step("step"), eval("step_eval"), predict("step_predict");
  buildScaled(step, "");
  buildScaled(eval, "eval");
  buildScaled(predict, "predict");
  ASSERT_TRUE(step.addEntry(eval).isOk()) << step.status().message();
  ASSERT_TRUE(step.addEntry(predict).isOk()) << step.status().message();
  CompileOptions options;
  options.optimizer = "sgd";
  options.lr = 0.25;
  auto plan = std::make_shared<runtime::Plan>();
  std::unique_ptr<runtime::Session> session;
  compileAndLoad(step, options, plan, session);
  ASSERT_EQ(plan->entries.size(), 3u);
  EXPECT_EQ(plan->entries[1].kind, runtime::EntryKind::Eval);
  EXPECT_EQ(plan->entries[2].kind, runtime::EntryKind::Predict);
  EXPECT_EQ(plan->persistent.size(), 2u); // w and the mean, once each

  const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const float y[8] = {1, 0, 2, 1, 3, 2, 4, 3};
  int train = -1, ev = -1, pr = -1;
  ASSERT_TRUE(session->findEntry("", train).isOk());
  ASSERT_TRUE(session->findEntry("eval", ev).isOk());
  ASSERT_TRUE(session->findEntry("predict", pr).isOk());
  for (int entry : {train, ev})
    for (auto [name, data] : {std::pair{"x", x}, std::pair{"y", y}})
      ASSERT_TRUE(session->setInput(entry, name, data, sizeof x).isOk());
  ASSERT_TRUE(session->setInput(pr, "x", x, sizeof x).isOk());
  ASSERT_TRUE(session->run(train).isOk());
  std::vector<double> w = readAll(*session, train, "w");
  std::vector<double> mean = readAll(*session, train, "running_mean");
  EXPECT_DOUBLE_EQ(mean[0], 0.5 * 4.0); // 0.5 * 0 + 0.5 * mean(1, 3, 5, 7)
  EXPECT_NE(w[0], 0.5);                   // trained

  // Eval: the loss from the trained w and the updated mean, in f64.
  ASSERT_TRUE(session->run(ev).isOk());
  double expected = 0;
  for (int i = 0; i < 8; ++i) {
    double d = (x[i] - mean[i % 2]) * w[i % 2] - y[i];
    expected += d * d / 8;
  }
  runtime::TensorInfo loss;
  ASSERT_TRUE(session->findLoss(ev, loss).isOk());
  double got = 0;
  ASSERT_TRUE(session->readValues(loss, &got, 1).isOk());
  EXPECT_NEAR(got, expected, 1e-5 * expected);
  // Nothing persistent moved.
  EXPECT_EQ(readAll(*session, train, "w"), w);
  EXPECT_EQ(readAll(*session, train, "running_mean"), mean);

  // The mean over batches, through the evaluator's feed.
  std::unique_ptr<runtime::Evaluator> evaluator;
  ASSERT_TRUE(runtime::Evaluator::create(*session, evaluator).isOk());
  EXPECT_EQ(evaluator->entry(), ev);
  double mean2 = 0;
  ASSERT_TRUE(evaluator
                  ->evaluate([](runtime::Session &, int64_t, void *) {
                    return Status::ok();
                  },
                             nullptr, 2, mean2)
                  .isOk());
  EXPECT_DOUBLE_EQ(mean2, got);

  ASSERT_TRUE(session->run(pr).isOk());
  std::vector<double> scores = readAll(*session, pr, "scores");
  for (int i = 0; i < 8; ++i)
    EXPECT_NEAR(scores[i], x[i] * w[i % 2], 1e-6);
  runtime::SessionStats stats = session->stats();
  EXPECT_EQ(runtime::runsOf(stats, runtime::EntryKind::Eval), 3u);
  EXPECT_EQ(runtime::runsOf(stats, runtime::EntryKind::Predict), 1u);
  EXPECT_EQ(stats.allocationsAfterLoad, 0u);

  // The C API reaches the same entries by kind.
  std::string text = step.str();
  zcc_compile_options c;
  zcc_compile_options_init(&c);
  zrt_plan *cplan = nullptr;
  ASSERT_EQ(zcc_compile(text.data(), text.size(), "scaled.mlir", &c, &cplan),
            nullptr);
  zrt_session_options sessionOptions;
  zrt_session_options_init(&sessionOptions);
  zrt_session *cs = nullptr;
  ASSERT_EQ(zrt_session_create(cplan, &sessionOptions, &cs), nullptr);
  zrt_plan_free(cplan);
  struct Batch {
    const float *x, *y;
  } batch{x, y};
  auto feed = [](zrt_session *s, const char *entry, int64_t,
                 void *user) -> zrt_status {
    auto *b = static_cast<Batch *>(user);
    if (zrt_status st = zrt_session_set_input(s, entry, "x", b->x, 32))
      return st;
    return zrt_session_set_input(s, entry, "y", b->y, 32);
  };
  double cLoss = 0;
  ASSERT_EQ(zrt_session_evaluate(cs, feed, &batch, 3, &cLoss), nullptr);
  double initial = 0; // w = 0.5, mean = 0: nothing trained yet
  for (int i = 0; i < 8; ++i)
    initial += (x[i] * 0.5 - y[i]) * (x[i] * 0.5 - y[i]) / 8;
  EXPECT_NEAR(cLoss, initial, 1e-5 * initial);
  ASSERT_EQ(zrt_session_set_input(cs, "predict", "x", x, 32), nullptr);
  ASSERT_EQ(zrt_session_run(cs, "predict"), nullptr);
  float cScores[8];
  ASSERT_EQ(zrt_session_read_f32(cs, "predict", "scores", cScores, 8),
            nullptr);
  EXPECT_FLOAT_EQ(cScores[7], 4.0f);
  zrt_stats cStats;
  ASSERT_EQ(zrt_session_get_stats(cs, &cStats), nullptr);
  EXPECT_EQ(cStats.eval_runs, 3u);
  EXPECT_EQ(cStats.predict_runs, 1u);
  EXPECT_EQ(cStats.train_step_runs, 0u);
  zrt_session_free(cs);
}

TEST(CaptureErrors, EvalAndPredictEntries) {
  Graph step("step"), eval("step_eval"), again("step_eval");
  buildScaled(step, "");
  buildScaled(eval, "eval");
  buildScaled(again, "eval");
  Graph open("open");
  open.input("x", {2});
  auto message = [](const Status &s) { return s.message(); };
  EXPECT_NE(message(step.addEntry(open)).find("must be finished with "
                                              "finishEval or finishPredict"),
            std::string::npos);
  EXPECT_NE(message(eval.addEntry(step)).find("added to a finished training "
                                              "graph"),
            std::string::npos);
  ASSERT_TRUE(step.addEntry(eval).isOk());
  EXPECT_NE(message(step.addEntry(again)).find("already has a function "
                                               "'step_eval'"),
            std::string::npos);
  // Evaluating writes no state.
  Graph writes("w");
  Tensor s = writes.state("s", {2}, Init::zeros());
  writes.update(s, writes.relu(s));
  EXPECT_NE(message(writes.finishEval(writes.sum(s)))
                .find("an eval program writes no state"),
            std::string::npos);
  Graph twice("t");
  Tensor x = twice.input("x", {2});
  EXPECT_NE(message(twice.finishPredict({{"a", x}, {"a", x}}))
                .find("output names must be unique"),
            std::string::npos);
  // A parameter shared by name must be the same tensor.
  Graph other("step_predict");
  Tensor x2 = other.input("x", {4, 2});
  Tensor w2 = other.parameter("w", {2}, Init::ones());
  ASSERT_TRUE(other.finishPredict({{"scores", other.mul(x2, w2)}}).isOk());
  ASSERT_TRUE(step.addEntry(other).isOk());
  CompileOptions options;
  options.optimizer = "sgd";
  runtime::Plan plan;
  EXPECT_NE(message(step.compile(options, plan))
                .find("('w') differs in type or initializer from the "
                      "persistent tensor of that name"),
            std::string::npos);
  // A plan with no eval entry says so.
  Graph plain("plain");
  buildScaled(plain, "");
  auto p = std::make_shared<runtime::Plan>();
  std::unique_ptr<runtime::Session> session;
  compileAndLoad(plain, options, p, session);
  int entry = -1;
  EXPECT_NE(message(session->findEntry("eval", entry))
                .find("the plan has no eval entry"),
            std::string::npos);
}

TEST(Capture, CompileErrorsComeBackAsValues) {
  // Valid ops, but a loss that does not depend on any parameter is fine;
  // a plan option that is not: the optimizer name.
  Graph g;
  Tensor x = g.input("x", {2});
  Tensor w = g.parameter("w", {2}, Init::ones());
  ASSERT_TRUE(g.finish(g.sum(g.mul(x, w))).isOk());
  CompileOptions options;
  options.optimizer = "lion";
  runtime::Plan plan;
  Status status = g.compile(options, plan);
  EXPECT_NE(status.message().find(
                "option 'optimizer' must be 'sgd', 'adamw' or 'none'"),
            std::string::npos)
      << status.message();
}

} // namespace

//===----------------------------------------------------------------------===//
// The compiler's C API (zcc.h) with the runtime's (zrt.h).
//===----------------------------------------------------------------------===//

#include "zcc/zcc.h"

namespace {

TEST(CompilerCApi, CompilesRunsAndReportsErrors) {
  zcc_compile_options options;
  zcc_compile_options_init(&options);
  EXPECT_STREQ(options.optimizer, "sgd");
  std::string text = readExample("mlp.mlir");
  // w1 is given at load: a step before it is written fails, then runs.
  std::string given = text;
  size_t at = given.find("zt.init = #zt.init<uniform(low = -0.0357");
  ASSERT_NE(at, std::string::npos);
  given.replace(at, given.find('>', at) + 1 - at, "zt.init = #zt.init<given>");
  zrt_plan *plan = nullptr;
  ASSERT_EQ(zcc_compile(given.data(), given.size(), "given.mlir", &options,
                        &plan),
            nullptr);
  zrt_session_options sessionOptions;
  zrt_session_options_init(&sessionOptions);
  zrt_session *session = nullptr;
  ASSERT_EQ(zrt_session_create(plan, &sessionOptions, &session), nullptr);
  zrt_plan_free(plan);
  std::vector<float> images(32 * 784, 0.5f);
  std::vector<int32_t> labels(32, 3);
  ASSERT_EQ(zrt_session_set_input(session, nullptr, "images", images.data(),
                                  images.size() * sizeof(float)),
            nullptr);
  ASSERT_EQ(zrt_session_set_input(session, nullptr, "labels", labels.data(),
                                  labels.size() * sizeof(int32_t)),
            nullptr);
  zrt_status s = zrt_session_run(session, nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_NE(std::string(zrt_status_message(s)).find("parameter 'w1'"),
            std::string::npos)
      << zrt_status_message(s);
  zrt_status_free(s);
  std::vector<float> w1(784 * 256, 0.01f);
  ASSERT_EQ(zrt_session_write_f32(session, nullptr, "w1", w1.data(),
                                  w1.size()),
            nullptr);
  EXPECT_EQ(zrt_session_run(session, nullptr), nullptr);
  // Inputs are not written this way; sizes must match.
  s = zrt_session_write_f32(session, nullptr, "images", images.data(),
                            images.size());
  ASSERT_NE(s, nullptr);
  EXPECT_NE(std::string(zrt_status_message(s)).find("not a persistent"),
            std::string::npos);
  zrt_status_free(s);
  s = zrt_session_write_f32(session, nullptr, "w1", w1.data(), 3);
  ASSERT_NE(s, nullptr);
  zrt_status_free(s);
  zrt_session_free(session);

  // A program error names the buffer, line and rule.
  std::string bad = "func.func @f(%x: tensor<2x3xf32> {zt.name = \"x\", "
                    "zt.role = #zt.role<input>}) -> tensor<f32> {\n"
                    "  %s = zt.sum %x, dims = [5] : (tensor<2x3xf32>) -> "
                    "tensor<f32>\n  return %s : tensor<f32>\n}\n";
  plan = nullptr;
  s = zcc_compile(bad.data(), bad.size(), "bad.mlir", &options, &plan);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(plan, nullptr);
  EXPECT_EQ(zrt_status_get_code(s), ZRT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zrt_status_message(s)).find("bad.mlir:2:"),
            std::string::npos)
      << zrt_status_message(s);
  zrt_status_free(s);
  options.optimizer = "lion";
  s = zcc_compile(text.data(), text.size(), "mlp.mlir", &options, &plan);
  ASSERT_NE(s, nullptr);
  EXPECT_NE(std::string(zrt_status_message(s)).find("'optimizer' must be"),
            std::string::npos);
  zrt_status_free(s);
  s = zrt_status_create(ZRT_OK, "returned");
  EXPECT_EQ(zrt_status_get_code(s), ZRT_INVALID_ARGUMENT);
  EXPECT_STREQ(zrt_status_message(s), "returned");
  zrt_status_free(s);
}

/// Every option of `zcc` reaches the compile through zcc.h: a data-parallel
/// plan, and a ZeRO-1 one, are byte for byte the plans `zcc` made at build
/// time from the same options, and zrt_plan_to_bytes / zrt_plan_save_file
/// give those bytes back.
TEST(CompilerCApi, DataParallelPlansAreZccsBytes) {
  std::string text = readExample("gpt_block.mlir");
  // The name zcc was given: it is in the plan's locations.
  std::string name = std::string(ZCC_EXAMPLES_DIR) + "/gpt_block.mlir";
  struct Case {
    const char *plan;
    bool zero;
    double clip;
    bool schedule; // gpt_block_zero_schedule's (test/unit/CMakeLists.txt)
  };
  for (Case c : {Case{"gpt_block_dp", false, 0.0, false},
                 Case{"gpt_block_zero", true, 0.0, false},
                 Case{"gpt_block_zero_clip", true, 0.5, false},
                 Case{"gpt_block_zero_schedule", true, 0.5, true}}) {
    SCOPED_TRACE(c.plan);
    bool zero = c.zero;
    zcc_compile_options options;
    zcc_compile_options_init(&options);
    options.optimizer = "adamw";
    options.lr = 0.001;
    options.data_parallel = 1;
    options.bucket_bytes = static_cast<int64_t>(0.05 * (1 << 20)); // 0.05 MiB
    options.shard_optimizer_state = zero;
    options.world_size = zero ? 1 : 0;
    options.clip_grad_norm = c.clip;
    if (c.schedule) {
      options.lr_warmup_steps = 3;
      options.lr_decay = "linear";
      options.lr_decay_steps = 20;
      options.weight_decay = 0.1;
      options.weight_decay_min_rank = 2;
      options.no_weight_decay = "wpe";
    }
    zrt_plan *plan = nullptr;
    zrt_status s =
        zcc_compile(text.data(), text.size(), name.c_str(), &options, &plan);
    ASSERT_EQ(s, nullptr) << zrt_status_message(s);
    std::string path =
        std::string(ZCC_TEST_PLANS_DIR) + "/" + c.plan + ".zplan";
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << path;
    std::string expected((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
    size_t size = 0;
    ASSERT_EQ(zrt_plan_to_bytes(plan, nullptr, 0, &size), nullptr);
    ASSERT_EQ(size, expected.size());
    std::string bytes(size, '\0');
    // Too small a buffer: refused, nothing written.
    s = zrt_plan_to_bytes(plan, bytes.data(), size - 1, &size);
    ASSERT_NE(s, nullptr);
    EXPECT_NE(std::string(zrt_status_message(s)).find("takes"),
              std::string::npos)
        << zrt_status_message(s);
    zrt_status_free(s);
    EXPECT_EQ(bytes, std::string(size, '\0'));
    ASSERT_EQ(zrt_plan_to_bytes(plan, bytes.data(), size, &size), nullptr);
    EXPECT_TRUE(bytes == expected) << "the C API's plan differs from zcc's";
    std::string saved = ::testing::TempDir() + "zcc-capi-saved.zplan";
    ASSERT_EQ(zrt_plan_save_file(plan, saved.c_str()), nullptr);
    std::ifstream back(saved, std::ios::binary);
    EXPECT_TRUE(std::string((std::istreambuf_iterator<char>(back)),
                            std::istreambuf_iterator<char>()) == expected);
    std::remove(saved.c_str());
    zrt_plan_free(plan);
  }
}

/// A C plan's bytes (zrt_plan_to_bytes).
std::vector<uint8_t> planBytes(const zrt_plan *plan) {
  size_t size = 0;
  if (zrt_status s = zrt_plan_to_bytes(plan, nullptr, 0, &size)) {
    zrt_status_free(s);
    return {};
  }
  std::vector<uint8_t> bytes(size);
  if (zrt_status s = zrt_plan_to_bytes(plan, bytes.data(), size, &size)) {
    zrt_status_free(s);
    return {};
  }
  return bytes;
}

/// A successful compile's warnings reach the caller's function, one call
/// each; bad options are errors naming the option, with no plan.
TEST(CompilerCApi, WarningsReachTheCallerAndBadOptionsAreErrors) {
  const std::string unused =
      "func.func @unused_loss(%x: tensor<4xf32> {zt.name = \"x\", zt.role = "
      "#zt.role<input>},\n"
      "    %w: tensor<4xf32> {zt.name = \"w\", zt.role = #zt.role<parameter>, "
      "zt.init = #zt.init<zeros>},\n"
      "    %u: tensor<3xf32> {zt.name = \"unused\", zt.role = "
      "#zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {\n"
      "  %p = zt.mul %x, %w : tensor<4xf32>\n"
      "  %l = zt.sum %p, dims = [0] : (tensor<4xf32>) -> tensor<f32>\n"
      "  return %l : tensor<f32>\n}\n";
  std::vector<std::string> heard;
  zcc_compile_options options;
  zcc_compile_options_init(&options);
  options.warning = [](void *context, const char *message) {
    static_cast<std::vector<std::string> *>(context)->push_back(message);
  };
  options.warning_context = &heard;
  zrt_plan *plan = nullptr;
  zrt_status s =
      zcc_compile(unused.data(), unused.size(), "unused.mlir", &options, &plan);
  ASSERT_EQ(s, nullptr) << zrt_status_message(s);
  zrt_plan_free(plan);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0], "unused.mlir:1:1: warning: parameter 'unused' does not "
                      "affect the loss; its gradient is zero");

  // The planner's clock ends the search before its nodes: a warning (the
  // MLP's ZeRO-1 step on two ranks has a search to cut).
  heard.clear();
  std::string text = readExample("mlp.mlir");
  options.optimizer = "adamw";
  options.data_parallel = 1;
  options.shard_optimizer_state = 1;
  options.world_size = 2;
  options.planner_time_limit = 1e-9;
  s = zcc_compile(text.data(), text.size(), "mlp.mlir", &options, &plan);
  ASSERT_EQ(s, nullptr) << zrt_status_message(s);
  zrt_plan_free(plan);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_NE(heard[0].find("stopped at its time limit"), std::string::npos)
      << heard[0];

  // Bad options: named, and no plan.
  struct Bad {
    void (*set)(zcc_compile_options &);
    const char *says;
  };
  for (Bad bad : {
           Bad{[](zcc_compile_options &o) { o.planner_time_limit = 0; },
               "option 'planner-time-limit' must be > 0, got 0"},
           Bad{[](zcc_compile_options &o) { o.planner_node_limit = -1; },
               "option 'planner-node-limit' must be >= 0, got -1"},
           Bad{[](zcc_compile_options &o) { o.precision = "f16"; },
               "option 'precision' must be 'f32' or 'bf16', got 'f16'"},
           Bad{[](zcc_compile_options &o) { o.data_parallel = 0; },
               "for data-parallel jobs"},
           Bad{[](zcc_compile_options &o) { o.alignment = 3; },
               "option 'alignment' must be a power of two, got 3"},
           Bad{[](zcc_compile_options &o) { o.no_weight_decay = "wpe,,b"; },
               "option 'no-weight-decay' must be names or patterns"},
       }) {
    zcc_compile_options o = options;
    o.planner_time_limit = 60;
    bad.set(o);
    plan = nullptr;
    s = zcc_compile(text.data(), text.size(), "mlp.mlir", &o, &plan);
    ASSERT_NE(s, nullptr) << bad.says;
    EXPECT_EQ(plan, nullptr);
    EXPECT_EQ(zrt_status_get_code(s), ZRT_INVALID_ARGUMENT);
    EXPECT_NE(std::string(zrt_status_message(s)).find(bad.says),
              std::string::npos)
        << zrt_status_message(s);
    zrt_status_free(s);
  }
  // NULL text is the option's default: the same plan as zcc's.
  zcc_compile_options defaults;
  zcc_compile_options_init(&defaults);
  zcc_compile_options nulls = defaults;
  nulls.optimizer = nullptr;
  nulls.algorithm = nullptr;
  nulls.lr_decay = nullptr;
  zrt_plan *withDefaults = nullptr, *withNulls = nullptr;
  ASSERT_EQ(zcc_compile(text.data(), text.size(), "mlp.mlir", &defaults,
                        &withDefaults),
            nullptr);
  ASSERT_EQ(zcc_compile(text.data(), text.size(), "mlp.mlir", &nulls,
                        &withNulls),
            nullptr);
  EXPECT_EQ(planBytes(withDefaults), planBytes(withNulls));
  zrt_plan_free(withDefaults);
  zrt_plan_free(withNulls);
}

// Every element row but the gradients, captured through Graph::element with
// the row's test params, compiled by the whole pipeline (zt-autodiff builds
// the row's Vjp) and checked against finite differences of the loss (f64).
// w (and v) are also added to the loss, so that a row whose gradient is zero
// (max_weight) still leaves a gradient to check.
runtime::GradientCheckOptions gradientCheck() {
  runtime::GradientCheckOptions check;
  check.samples = 24;
  return check;
}

/// Compiles `g` (finished) for gradients only and checks every parameter's
/// gradient against finite differences; the plan, for a tampering check.
std::shared_ptr<runtime::Plan> expectGradientsCheck(Graph &g,
                                                    size_t parameters) {
  CompileOptions options;
  options.optimizer = "none";
  auto plan = std::make_shared<runtime::Plan>();
  EXPECT_TRUE(g.compile(options, *plan).isOk()) << g.status().message();
  runtime::GradientCheckResult result;
  EXPECT_TRUE(runtime::checkGradients(plan, gradientCheck(), result).isOk());
  for (const runtime::ParameterCheck &p : result.parameters) {
    EXPECT_TRUE(p.ok) << p.name << ": " << p.worst << " (error "
                      << p.maxError << ", f32 " << p.maxF32Error << ")";
    EXPECT_GT(p.checked, 0) << p.name;
  }
  EXPECT_EQ(result.parameters.size(), parameters);
  return plan;
}

/// The check can fail: `change` applied to every launch `pick` selects
/// (at least one) makes a gradient the check must catch.
template <typename Pick, typename Change>
void expectTamperingCaught(const std::shared_ptr<runtime::Plan> &plan,
                           Pick pick, Change change, const char *what) {
  bool tampered = false;
  for (runtime::Entry &entry : plan->entries)
    for (runtime::Launch &launch : entry.launches)
      if (pick(launch)) {
        change(launch);
        tampered = true;
      }
  ASSERT_TRUE(tampered) << what;
  runtime::GradientCheckResult result;
  ASSERT_TRUE(runtime::checkGradients(plan, gradientCheck(), result).isOk());
  EXPECT_FALSE(result.ok()) << what << " passed";
}

/// Where a fused program (zt-fuse-elementwise) keeps leaky_relu_grad's
/// slope among its numbers, or -1.
int slopeOfLeakyReluGrad(const runtime::Launch &l) {
  int number = 0;
  for (const std::string &op : l.params.programOps) {
    if (op == "leaky_relu_grad")
      return number;
    int row = runtime::findElementRow(op.data(), op.size());
    number += row >= 0 ? runtime::kElementRows[row].paramCount : 1;
  }
  return -1;
}

TEST(ElementRows, EveryRowCapturesAndPassesAGradientCheck) {
  int checked = 0;
  for (int row = 0; row < runtime::kElementRowCount; ++row) {
    const runtime::ElementRow &r = runtime::kElementRows[row];
    // Gradients have no gradient; bool results have none either.
    if (r.arity == runtime::ElementArity::Grad ||
        runtime::elementResultIsBool(r.arity))
      continue;
    SCOPED_TRACE(r.name);
    runtime::testing::ElementTestRow test =
        runtime::testing::elementTestRow(r.name);
    if (test.zeroGradient)
      continue; // no finite difference to match (test_torch_import: detach)
    Graph g(std::string(r.name) + "_step");
    Tensor x = g.input("x", {4, 6});
    Tensor t = g.label("target", {4, 6}, DType::F32);
    std::vector<Tensor> operands, parameters;
    // A condition (mask, where) is a comparison of the input: a mask that
    // changes with the batch; the other operands are parameters (the second
    // broadcast from [6]).
    bool conditional = r.arity == runtime::ElementArity::Mask ||
                       r.arity == runtime::ElementArity::Select;
    if (conditional)
      operands.push_back(g.gt(x, g.full({}, 0.0)));
    const char *names[] = {"w", "v"};
    for (int i = conditional; i < runtime::elementOperandCount(r.arity); ++i) {
      std::vector<int64_t> shape =
          parameters.empty() ? std::vector<int64_t>{4, 6}
                             : std::vector<int64_t>{6};
      parameters.push_back(g.parameter(names[parameters.size()], shape,
                                       Init::uniform(test.low, test.high)));
      operands.push_back(parameters.back());
    }
    Tensor y = g.mul(g.element(row, operands, test.params), x);
    for (Tensor p : parameters)
      y = g.add(y, p);
    ASSERT_TRUE(g.finish(g.mse(y, t)).isOk()) << g.status().message();
    EXPECT_NE(g.str().find(std::string("zt.") + r.name + " "),
              std::string::npos);
    std::shared_ptr<runtime::Plan> plan =
        expectGradientsCheck(g, parameters.size());
    ++checked;
    if (row == runtime::element_row::LeakyRelu) // another slope is wrong
      expectTamperingCaught(
          plan,
          [](const runtime::Launch &l) {
            return l.kernel == runtime::KernelId::LeakyReluGrad ||
                   (l.kernel == runtime::KernelId::Fused &&
                    slopeOfLeakyReluGrad(l) >= 0);
          },
          [](runtime::Launch &l) {
            if (l.kernel == runtime::KernelId::Fused)
              l.params.programNumbers[slopeOfLeakyReluGrad(l)] += 0.5;
            else
              l.params.elementParams[0] += 0.5;
          },
          "a wrong slope in leaky_relu_grad");
  }
  EXPECT_GE(checked, 30);
}

// Every op built by name (its kernel's rule infers its results), on the
// operands and parameters of its kernel case (LaunchCase.h's everyKernel):
// captured through Graph::op, compiled with the whole pipeline, and its
// parameters' gradients checked against finite differences. A forward op
// added to the rules is checked here without a test of its own.
TEST(InferredOps, EveryForwardOpCapturesAndPassesAGradientCheck) {
  int checked = 0;
  std::set<runtime::KernelId> checkedKernels;
  for (runtime::testing::LaunchCase &c : runtime::testing::everyKernel()) {
    std::optional<runtime::KernelId> kernel = runtime::findKernel(c.kernel);
    ASSERT_TRUE(kernel.has_value()) << c.kernel;
    if (!runtime::kernelInfersResults(*kernel) ||
        (runtime::kernelTraits(*kernel) &
         (runtime::kUpdate | runtime::kCommunicates)) ||
        c.kernel.size() > 5 &&
            c.kernel.compare(c.kernel.size() - 5, 5, "_grad") == 0)
      continue;
    runtime::Entry decoded;
    ASSERT_TRUE(c.decoded(decoded).isOk()) << c.kernel;
    SCOPED_TRACE(c.kernel);
    // Cases with bf16 operands (mixed precision's) are the conformance
    // suite's; every kernel has an f32 case here (checked below).
    if (llvm::any_of(decoded.launches[0].inputs, [&](uint32_t t) {
          return decoded.tensors[t].type.dtype == DType::BF16;
        }))
      continue;
    checkedKernels.insert(*kernel);
    Graph g(c.kernel + "_step");
    std::vector<Tensor> operands;
    size_t parameters = 0;
    for (uint32_t t : decoded.launches[0].inputs) {
      // batch_norm's gradient is training-mode BatchNorm's: its statistics
      // are its input's own.
      if (*kernel == runtime::KernelId::BatchNorm && operands.size() == 1) {
        operands.push_back(g.op("batch_norm_stats", {operands[0]})[0]);
        continue;
      }
      const runtime::TensorType &type = decoded.tensors[t].type;
      ASSERT_EQ(type.dtype, DType::F32) << "an operand the test cannot make";
      operands.push_back(g.parameter("p" + std::to_string(operands.size()),
                                     type.shape, Init::uniform(-1, 1)));
      ++parameters;
    }
    std::vector<Tensor> results = g.op(c.kernel, operands, c.params);
    ASSERT_TRUE(g.ok()) << g.status().message();
    ASSERT_EQ(results.size(), decoded.launches[0].outputs.size());
    Tensor loss;
    for (size_t i = 0; i < results.size(); ++i) {
      Tensor target = g.label("target" + std::to_string(i), results[i].shape(),
                              DType::F32);
      Tensor term = g.mse(results[i], target);
      loss = i ? g.add(loss, term) : term;
    }
    ASSERT_TRUE(g.finish(loss).isOk()) << g.status().message();
    std::shared_ptr<runtime::Plan> plan = expectGradientsCheck(g, parameters);
    ++checked;
    if (*kernel == runtime::KernelId::BatchNorm) // epsilon off in the backward
      expectTamperingCaught(
          plan,
          [](const runtime::Launch &l) {
            return l.kernel == runtime::KernelId::BatchNormGrad;
          },
          [](runtime::Launch &l) { l.params.epsilon += 0.5; },
          "batch_norm_grad with another epsilon");
    if (*kernel == runtime::KernelId::Cumsum) // the sums the wrong way
      expectTamperingCaught(
          plan,
          [](const runtime::Launch &l) {
            return l.kernel == runtime::KernelId::Cumsum &&
                   l.phase == runtime::Phase::Backward;
          },
          [](runtime::Launch &l) { l.params.reverse = !l.params.reverse; },
          "cumsum's gradient summed forward");
    if (*kernel == runtime::KernelId::Rotary) // the forward map backward
      expectTamperingCaught(
          plan,
          [](const runtime::Launch &l) {
            return l.kernel == runtime::KernelId::Rotary &&
                   l.phase == runtime::Phase::Backward;
          },
          [](runtime::Launch &l) { l.params.transposed = !l.params.transposed; },
          "rotary's gradient through the forward map");
  }
  EXPECT_GE(checked, 2);
  EXPECT_TRUE(checkedKernels.count(runtime::KernelId::Rotary));
  EXPECT_TRUE(checkedKernels.count(runtime::KernelId::Cumsum));
}

// Graph::op names what is wrong: an op not built by name, a parameter
// missing, unknown or of the wrong kind, and the rule's own words.
TEST(InferredOps, ErrorsNameTheProblem) {
  using runtime::Param;
  auto error = [](auto build) {
    Graph g("bad");
    Tensor x = g.input("x", {2, 3});
    build(g, x);
    EXPECT_FALSE(g.ok());
    return g.status().message();
  };
  EXPECT_CONTAINS(error([](Graph &g, Tensor x) { g.op("matmul", {x, x}); }),
                  "no op 'matmul' is built by name (these are: cumsum, rotary, conv2d");
  EXPECT_CONTAINS(error([](Graph &g, Tensor x) { g.op("cumsum", {x}); }),
                  "cumsum: missing parameter 'dim' (an int)");
  EXPECT_CONTAINS(error([](Graph &g, Tensor x) {
                    g.op("cumsum", {x}, {Param::integer("dim", 0),
                                         Param::integer("axis", 0)});
                  }),
                  "unknown parameter 'axis'");
  EXPECT_CONTAINS(error([](Graph &g, Tensor x) {
                    g.op("cumsum", {x}, {Param::real("dim", 1)});
                  }),
                  "parameter 'dim' must be an int, got a float");
  EXPECT_CONTAINS(error([](Graph &g, Tensor x) {
                    g.op("cumsum", {x}, {Param::integer("dim", 2)});
                  }),
                  "cumsum: dim 2 is out of range for rank 2");
  EXPECT_CONTAINS(error([](Graph &g, Tensor x) {
                    g.op("cumsum", {x, x}, {Param::integer("dim", 0)});
                  }),
                  "cumsum: expected 1 input, got 2");
  // Integers sum (wrapping); bools do not.
  EXPECT_CONTAINS(error([](Graph &g, Tensor) {
                    Tensor i = g.input("i", {2}, DType::I32);
                    g.op("cumsum", {g.ne(i, i)}, {Param::integer("dim", 0)});
                  }),
                  "operand must be an f32 tensor, got");
}

// Comparisons and logical ops make bool masks that where and the logical
// ops take; a mask built from the input selects per element, and the step's
// loss is NumPy's on the same numbers.
TEST(ElementRows, MasksSelectLikeNumPy) {
  Graph g("masked");
  Tensor x = g.input("x", {2, 3});
  Tensor w = g.parameter("w", {3}, Init::constant(0.5));
  Tensor zero = g.full({}, 0.0);
  Tensor inside = g.logicalAnd(g.gt(x, g.full({}, -1.0)), g.le(x, g.full({}, 1.0)));
  Tensor picked = g.where(g.logicalOr(g.logicalNot(inside), g.eq(x, zero)), x,
                          g.mul(x, w));
  Tensor ne = g.where(g.ne(x, zero), g.full({}, 1.0), zero);
  Tensor y = g.add(picked, g.add(ne, g.where(g.lt(x, zero), zero, w)));
  EXPECT_EQ(inside.dtype(), DType::Bool);
  EXPECT_EQ(picked.dtype(), DType::F32);
  ASSERT_TRUE(g.finish(g.sum(y)).isOk()) << g.status().message();
  CompileOptions options;
  options.optimizer = "none";
  auto plan = std::make_shared<runtime::Plan>();
  std::unique_ptr<runtime::Session> session;
  ASSERT_NO_FATAL_FAILURE(compileAndLoad(g, options, plan, session));
  std::vector<float> values = {-2.0f, -0.5f, 0.0f, 0.75f, 1.0f, 3.0f};
  int entry = -1;
  ASSERT_TRUE(session->findEntry("", entry).isOk());
  ASSERT_TRUE(session->setInput(entry, "x", values.data(),
                                values.size() * sizeof(float))
                  .isOk());
  ASSERT_TRUE(session->run(entry).isOk());
  runtime::TensorInfo lossInfo;
  ASSERT_TRUE(session->findLoss(entry, lossInfo).isOk());
  double loss = 0;
  ASSERT_TRUE(session->readValues(lossInfo, &loss, 1).isOk());
  double expected = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    double v = values[i];
    bool in = v > -1 && v <= 1;
    expected += (!in || v == 0) ? v : v * 0.5;
    expected += v != 0 ? 1 : 0;
    expected += v < 0 ? 0 : 0.5;
  }
  EXPECT_NEAR(loss, expected, 1e-6);
}

// The capture API's element methods come from the rows, params included.
TEST(ElementRows, NamedMethodsTakeTheRowsParams) {
  Graph g("step");
  Tensor x = g.input("x", {3});
  Tensor y = g.add(g.leakyRelu(x, 0.25), g.clamp(x, -1.0));
  y = g.add(y, g.maximum(x, g.softplus(x)));
  ASSERT_TRUE(g.finish(g.sum(y)).isOk()) << g.status().message();
  std::string text = g.str();
  EXPECT_NE(text.find("zt.leaky_relu %arg0 {negative_slope = 2.500000e-01 : f64}"),
            std::string::npos) << text;
  EXPECT_NE(text.find("zt.clamp %arg0 {max = 0x7FF0000000000000 : f64, min = -1.000000e+00 : f64}"),
            std::string::npos) << text;
  EXPECT_NE(text.find("zt.softplus %arg0 {beta = 1.000000e+00 : f64, threshold = 2.000000e+01 : f64}"),
            std::string::npos) << text;
  // A wrong operand count or too many numbers is the graph's error.
  Graph bad("step");
  Tensor z = bad.input("z", {3});
  EXPECT_FALSE(bad.element(runtime::element_row::LeakyRelu, {z}, {0.1, 0.2}));
  EXPECT_NE(bad.status().message().find(
                "leaky_relu: takes at most 1 numbers (negative_slope), got 2"),
            std::string::npos) << bad.status().message();
}

} // namespace
