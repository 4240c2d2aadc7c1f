//===- TrainingLoopTest.cpp - the training loop zrun runs -----------------===//

#include "zcc/Reports/PlanReport.h"
#include "zcc/Reports/Progress.h"
#include "zcc/Runtime/Data/DataSource.h"
#include "zcc/Runtime/Plan/PlanFile.h"
#include "zcc/Runtime/Session/Session.h"
#include "zcc/Runtime/Training/TrainingLoop.h"

#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <string>
#include <cstring>
#include <vector>

using namespace zcc::runtime;

namespace {

std::shared_ptr<Plan> loadPlan(const char *name) {
  auto plan = std::make_shared<Plan>();
  Status s = loadPlanFile(std::string(ZCC_TEST_PLANS_DIR) + "/" + name +
                              ".zplan",
                          *plan);
  EXPECT_TRUE(s.isOk()) << s.toString();
  return s.isOk() ? plan : nullptr;
}

struct Training {
  std::unique_ptr<Session> session;
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<DataSource> data;

  explicit Training(std::shared_ptr<Plan> plan) {
    EXPECT_TRUE(Session::create(plan, SessionOptions(), session).isOk());
    EXPECT_TRUE(Trainer::create(*session, 1, trainer).isOk());
    EXPECT_TRUE(
        makeDataSource(*session, trainer->entry(), "synthetic", 0, data)
            .isOk());
  }
};

/// Every input NaN (in batch `only`, or every batch): that step's loss is
/// not finite.
class NanData final : public DataSource {
public:
  explicit NanData(const DataSource &inner, int64_t only = -1)
      : inner(inner), only(only) {}
  void fill(Session &session, int64_t batch) const override {
    inner.fill(session, batch);
    if (only >= 0 && batch != only)
      return;
    const Entry &e = session.plan().entries[0];
    for (const Tensor &t : e.tensors) {
      TensorInfo info;
      if (t.role != TensorRole::Input ||
          !session.findTensor(0, t.name, info).isOk())
        continue;
      std::vector<double> nan(static_cast<size_t>(t.type.numElements()),
                              std::numeric_limits<double>::quiet_NaN());
      EXPECT_TRUE(session.writeValues(info, nan.data(), nan.size()).isOk());
    }
  }
  std::string describe() const override { return "NaN"; }
  int64_t batches() const override { return 0; }

private:
  const DataSource &inner;
  int64_t only;
};

} // namespace

TEST(TrainingLoop, StepsAsTheTrainerAndReportsWhatItIsAsked) {
  std::shared_ptr<Plan> plan = loadPlan("gpt_block_clip");
  ASSERT_TRUE(plan);
  Training looped(plan), stepped(plan);
  LoopOptions options;
  options.steps = 7;
  options.reportEvery = 3;
  std::vector<StepReport> reports;
  LoopResult result;
  Status ran = runTrainingLoop(
      *looped.session, *looped.trainer, *looped.data, nullptr, options,
      [&](const StepReport &r) { reports.push_back(r); }, result);
  ASSERT_TRUE(ran.isOk()) << ran.toString();
  // Steps 3 and 6, and the last.
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[0].step, 3);
  EXPECT_EQ(reports[1].step, 6);
  EXPECT_EQ(reports[2].step, 7);
  EXPECT_FALSE(reports[0].everyStep);
  // The plan clips: its grad_norm is reported.
  ASSERT_EQ(reports[0].metrics.size(), 1u);
  EXPECT_EQ(reports[0].metrics[0].first, "grad_norm");
  EXPECT_GT(reports[0].metrics[0].second, 0);
  // The same losses as the trainer stepped by hand, and the same weights.
  std::vector<double> losses;
  for (int step = 0; step < 7; ++step) {
    double loss = 0;
    ASSERT_TRUE(stepped.trainer->step(*stepped.data, loss).isOk());
    losses.push_back(loss);
  }
  EXPECT_EQ(result.stepsRun, 7);
  EXPECT_EQ(result.firstLoss, losses.front());
  EXPECT_EQ(result.lastLoss, losses.back());
  EXPECT_EQ(reports[1].loss, losses[5]);
  EXPECT_EQ(persistentHash(*looped.session), persistentHash(*stepped.session));
}

TEST(TrainingLoop, TracesEveryStepWithTheWeightsHash) {
  std::shared_ptr<Plan> plan = loadPlan("mlp");
  ASSERT_TRUE(plan);
  Training run(plan);
  LoopOptions options;
  options.steps = 3;
  options.trace = true;
  options.reportEvery = 100;
  std::vector<uint64_t> hashes;
  LoopResult result;
  ASSERT_TRUE(runTrainingLoop(
                  *run.session, *run.trainer, *run.data, nullptr, options,
                  [&](const StepReport &r) { hashes.push_back(r.persistentHash); },
                  result)
                  .isOk());
  ASSERT_EQ(hashes.size(), 3u);
  EXPECT_NE(hashes[0], hashes[1]); // the weights moved
  EXPECT_EQ(hashes[2], persistentHash(*run.session));
}

TEST(TrainingLoop, ANonFiniteLossStopsNamingTheStep) {
  std::shared_ptr<Plan> plan = loadPlan("mlp");
  ASSERT_TRUE(plan);
  Training run(plan);
  NanData nan(*run.data);
  LoopOptions options;
  options.steps = 5;
  int reported = 0;
  LoopResult result;
  Status ran = runTrainingLoop(
      *run.session, *run.trainer, nan, nullptr, options,
      [&](const StepReport &) { ++reported; }, result);
  ASSERT_FALSE(ran.isOk());
  EXPECT_NE(ran.message().find("the loss is NaN at step 1"), std::string::npos)
      << ran.message();
  EXPECT_EQ(reported, 1); // the step is reported, then the loop stops
  EXPECT_EQ(result.stepsRun, 1);
}

// With a way back to the last good state, the non-finite step is replayed
// checked: it began with NaN inputs (the data's). Stop names them; skip-step
// leaves the weights as they were before it and goes on.
TEST(TrainingLoop, ANonFiniteStepIsReplayedCheckedAndSkipped) {
  std::shared_ptr<Plan> plan = loadPlan("mlp");
  ASSERT_TRUE(plan);
  for (OnNonFinite mode : {OnNonFinite::Stop, OnNonFinite::SkipStep}) {
    Training run(plan);
    NanData nan(*run.data, 2); // step 3's batch
    LoopOptions options;
    options.steps = 5;
    options.trace = true;
    options.onNonFinite = mode;
    int restores = 0;
    options.restore = [&](int64_t atMost, int64_t &at) {
      EXPECT_EQ(atMost, 2);
      ++restores;
      run.session->initialize(0);
      run.trainer->setNextBatchNumber(0);
      at = 0;
      return Status::ok();
    };
    std::vector<std::string> skipped;
    options.skipped = [&](int64_t step, const std::string &text) {
      EXPECT_EQ(step, 3);
      skipped.push_back(text);
    };
    std::vector<uint64_t> hashes;
    LoopResult result;
    Status ran = runTrainingLoop(
        *run.session, *run.trainer, nan, nullptr, options,
        [&](const StepReport &r) { hashes.push_back(r.persistentHash); },
        result);
    const char *named = "replayed, step 3: entry 'mlp_loss' began with "
                        "non-finite values in 'images' 32x784xf32, 25088 NaN";
    if (mode == OnNonFinite::Stop) {
      ASSERT_FALSE(ran.isOk());
      EXPECT_NE(ran.message().find(named), std::string::npos)
          << ran.message();
      EXPECT_EQ(restores, 1);
      continue;
    }
    ASSERT_TRUE(ran.isOk()) << ran.message();
    EXPECT_EQ(result.stepsSkipped, 1);
    EXPECT_EQ(restores, 2); // to check it, then to undo it
    ASSERT_EQ(skipped.size(), 1u);
    EXPECT_NE(skipped[0].find(named), std::string::npos) << skipped[0];
    ASSERT_EQ(hashes.size(), 5u);
    EXPECT_EQ(hashes[2], hashes[1]); // step 3's update not applied
    EXPECT_NE(hashes[3], hashes[2]); // training goes on
    EXPECT_EQ(run.trainer->nextBatchNumber(), 5);
  }
}

// What a progress line reports beside the loss (Reports/Progress.h): the
// tokens or examples a step reads, its model FLOPs, a device's peak by the
// plan's precision, durations in words.
TEST(Progress, StepWorkCountsTokensExamplesAndModelFlops) {
  std::shared_ptr<Plan> gpt = loadPlan("gpt_block");
  StepWork one = stepWork(*gpt, 0, -1, 1), two = stepWork(*gpt, 0, -1, 2);
  EXPECT_TRUE(one.tokens);
  EXPECT_EQ(one.items, 2 * 16); // [2, 16] tokens
  EXPECT_EQ(two.items, 2 * one.items);
  EntryFlops f = entryFlops(gpt->entries[0]);
  EXPECT_GT(f.total, 0);
  EXPECT_DOUBLE_EQ(one.flops, f.total - f.recomputed);
  EXPECT_DOUBLE_EQ(two.flops, 2 * one.flops);
  std::shared_ptr<Plan> mlp = loadPlan("mlp");
  StepWork rows = stepWork(*mlp, 0, -1, 1);
  EXPECT_FALSE(rows.tokens);
  EXPECT_EQ(rows.items, 32); // the batch's rows
}

TEST(Progress, PeaksFollowTheDeviceAndThePlansPrecision) {
  Plan plan = *loadPlan("mlp");
  const std::string h200 = "NVIDIA H200 (device 0, sm_90)";
  EXPECT_DOUBLE_EQ(devicePeakTflops(h200, plan, 0), 66.9);
  EXPECT_DOUBLE_EQ(devicePeakTflops("NVIDIA A100-SXM4-80GB", plan, 0), 19.5);
  EXPECT_EQ(devicePeakTflops("NVIDIA GeForce RTX 4090", plan, 0), 0);
  EXPECT_EQ(devicePeakTflops("the CPU", plan, 0), 0);
  for (Launch &l : plan.entries[0].launches)
    if (l.kernel == KernelId::Matmul)
      l.params.tf32 = true;
  EXPECT_DOUBLE_EQ(devicePeakTflops(h200, plan, 0), 494.7);
  plan.entries[0].tensors.back().type.dtype = DType::BF16;
  EXPECT_DOUBLE_EQ(devicePeakTflops(h200, plan, 0), 989.4);
}

TEST(Progress, DurationsInWords) {
  EXPECT_EQ(formatDuration(42), "42s");
  EXPECT_EQ(formatDuration(501), "8m21s");
  EXPECT_EQ(formatDuration(11220), "3h07m");
  EXPECT_EQ(formatDuration(std::numeric_limits<double>::quiet_NaN()), "?");
}

// A session made another's by copyStateFrom goes on with the same bits (the
// device check's CPU session starts so); another plan's state is refused.
TEST(TrainingLoop, CopiedStateGoesOnWithTheSameBits) {
  std::shared_ptr<Plan> plan = loadPlan("gpt_block_clip");
  ASSERT_TRUE(plan);
  Training ahead(plan), copy(plan);
  double loss = 0;
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(ahead.trainer->step(*ahead.data, loss).isOk());
  ASSERT_NE(persistentHash(*ahead.session), persistentHash(*copy.session));
  ASSERT_TRUE(copy.session->copyStateFrom(*ahead.session).isOk());
  EXPECT_EQ(persistentHash(*copy.session), persistentHash(*ahead.session));
  copy.trainer->setNextBatchNumber(ahead.trainer->nextBatchNumber());
  double next = 0, copied = 0;
  ASSERT_TRUE(ahead.trainer->step(*ahead.data, next).isOk());
  ASSERT_TRUE(copy.trainer->step(*copy.data, copied).isOk());
  // The step counters came too: AdamW's bias correction, the schedule.
  EXPECT_EQ(std::memcmp(&next, &copied, sizeof next), 0) << next << " " << copied;
  EXPECT_EQ(persistentHash(*copy.session), persistentHash(*ahead.session));

  std::shared_ptr<Plan> other = loadPlan("mlp");
  ASSERT_TRUE(other);
  Training mlp(other);
  Status refused = mlp.session->copyStateFrom(*ahead.session);
  EXPECT_EQ(refused.code(), StatusCode::InvalidArgument);
  EXPECT_NE(refused.message().find("another plan"), std::string::npos)
      << refused.message();
}
