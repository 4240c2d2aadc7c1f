//===- RuntimeTest.cpp - plan files, sessions, modes, the C API -----------===//
//
// Plans come from the shipped examples, compiled by zcc at build time
// (ZCC_TEST_PLANS_DIR); in a runtime-only build there is no zcc and the
// tests that need them skip and say so.
//
//===----------------------------------------------------------------------===//

#include "Executors/Device/DeviceExecutor.h"
#include "Executors/Memory.h"

#include "zcc/Runtime/Data/DataSource.h"
#include "zcc/Runtime/Plan/PlanFile.h"
#include "zcc/Runtime/Communicator.h"
#include "zcc/Runtime/Session/Session.h"
#include "zcc/Runtime/zrt.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <new>

using namespace zcc::runtime;

//===----------------------------------------------------------------------===//
// Heap allocations while a step runs: every operator new is counted.
//===----------------------------------------------------------------------===//

namespace {
std::atomic<bool> countingNews{false};
std::atomic<uint64_t> newsCounted{0};
} // namespace

namespace {
void *countedMalloc(size_t size) {
  if (countingNews.load(std::memory_order_relaxed))
    newsCounted.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size ? size : 1);
}
} // namespace

// Every replaceable (non-aligned) form, so that new and delete always pair.
void *operator new(size_t size) {
  if (void *p = countedMalloc(size))
    return p;
  throw std::bad_alloc();
}
void *operator new[](size_t size) { return operator new(size); }
void *operator new(size_t size, const std::nothrow_t &) noexcept {
  return countedMalloc(size);
}
void *operator new[](size_t size, const std::nothrow_t &) noexcept {
  return countedMalloc(size);
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete[](void *p, size_t) noexcept { std::free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept {
  std::free(p);
}

namespace {

#ifdef ZCC_TEST_PLANS_DIR
std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}
#define REQUIRE_PLANS()                                                        \
  do {                                                                         \
  } while (0)
std::string planPath(const char *name) {
  return std::string(ZCC_TEST_PLANS_DIR) + "/" + name + ".zplan";
}
#else
#define REQUIRE_PLANS()                                                        \
  GTEST_SKIP() << "no example plans: this is a runtime-only build "            \
                  "(ZCC_BUILD_COMPILER=OFF), and zcc makes them"
std::string planPath(const char *) { return ""; }
std::vector<uint8_t> readBytes(const std::string &) { return {}; }
#endif

std::shared_ptr<Plan> loadExample(const char *name) {
  auto plan = std::make_shared<Plan>();
  Status s = loadPlanFile(planPath(name), *plan);
  EXPECT_TRUE(s.isOk()) << s.toString();
  return plan;
}

/// One training run: a session, its synthetic data, its loss tensor.
struct Trainer {
  std::unique_ptr<Session> session;
  std::unique_ptr<DataSource> data;
  int entry = -1;
  TensorInfo loss;

  Trainer(std::shared_ptr<const Plan> plan, ExecutionMode mode,
          Precision precision = Precision::F32,
          std::shared_ptr<Communicator> communicator = nullptr) {
    SessionOptions options;
    options.mode = mode;
    options.precision = precision;
    options.seed = 7;
    options.communicator = std::move(communicator);
    Status s = Session::create(plan, options, session);
    EXPECT_TRUE(s.isOk()) << s.toString();
    EXPECT_TRUE(session->findEntry("", entry).isOk());
    EXPECT_TRUE(session->findTensor(entry, "loss", loss).isOk());
    s = makeDataSource(*session, entry, "synthetic", 7, data);
    EXPECT_TRUE(s.isOk()) << s.toString();
  }

  float step(int64_t batch) {
    data->fill(*session, batch);
    Status s = session->run(entry);
    EXPECT_TRUE(s.isOk()) << s.toString();
    float value;
    std::memcpy(&value, session->data(loss), sizeof(float));
    return value;
  }

  /// Every persistent tensor's bytes, in plan order.
  std::vector<uint8_t> persistentBytes() const {
    std::vector<uint8_t> out;
    const Plan &plan = session->plan();
    for (const PersistentTensor &t : plan.persistent) {
      TensorInfo info;
      EXPECT_TRUE(session->findTensor(entry, t.name, info).isOk()) << t.name;
      const uint8_t *p = static_cast<const uint8_t *>(session->data(info));
      out.insert(out.end(), p, p + t.type.bytes());
    }
    return out;
  }
};

//===----------------------------------------------------------------------===//
// The plan file
//===----------------------------------------------------------------------===//

TEST(PlanFile, RoundTripIsByteIdentical) {
  REQUIRE_PLANS();
  for (const char *name : {"mlp", "gpt_block"}) {
    std::vector<uint8_t> file = readBytes(planPath(name));
    Plan plan;
    ASSERT_TRUE(parsePlan(file.data(), file.size(), plan).isOk());
    EXPECT_EQ(serializePlan(plan), file) << name;
    EXPECT_FALSE(plan.producer.empty());
  }
}

TEST(PlanFile, TruncationsAreErrorsNeverCrashes) {
  REQUIRE_PLANS();
  std::vector<uint8_t> file = readBytes(planPath("mlp"));
  ASSERT_GT(file.size(), 1000u);
  for (size_t size = 0; size < file.size(); ++size) {
    Plan plan;
    Status s = parsePlan(file.data(), size, plan);
    ASSERT_FALSE(s.isOk()) << "a " << size << "-byte prefix was accepted";
    ASSERT_EQ(s.code(), StatusCode::InvalidPlan) << s.toString();
  }
}

TEST(PlanFile, ByteFlipsAreErrorsNeverCrashes) {
  REQUIRE_PLANS();
  std::vector<uint8_t> file = readBytes(planPath("mlp"));
  size_t accepted = 0, checksum = 0;
  for (size_t at = 0; at < file.size(); ++at)
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> bad = file;
      bad[at] ^= mask;
      Plan plan;
      Status s = parsePlan(bad.data(), bad.size(), plan);
      if (s.isOk()) {
        // Only bytes outside what the verifier and checksum cover (padding)
        // may flip harmlessly, and then the plan must be the same plan.
        ++accepted;
        EXPECT_EQ(serializePlan(plan), file) << "flip at " << at;
        continue;
      }
      checksum += s.message().find("checksum") != std::string::npos;
      EXPECT_NE(s.message(), "");
    }
  // Flips inside the body are caught by the checksum.
  EXPECT_GT(checksum, file.size());
  std::printf("byte flips: %zu accepted (padding), %zu caught by the checksum, "
              "of %zu\n",
              accepted, checksum, 3 * file.size());
}

/// The envelope's checksum hides body corruption from the validator; these
/// mutate the body and re-seal it, as a buggy writer would, so every check
/// behind the checksum is exercised. A mutant that still validates must run.
TEST(PlanFile, ResealedBodyMutationsAreCaughtOrSafe) {
  REQUIRE_PLANS();
  std::vector<uint8_t> file = readBytes(planPath("mlp"));
  size_t offset = 0, size = 0;
  ASSERT_TRUE(locatePlanBody(file.data(), file.size(), offset, size).isOk());
  std::vector<uint8_t> body(file.begin() + offset,
                            file.begin() + offset + size);
  ASSERT_EQ(sealPlanBody(body.data(), body.size()), file);
  size_t rejected = 0, ran = 0;
  // Under ASan (4x slower) each byte takes one of the two masks, in turn.
#ifdef __SANITIZE_ADDRESS__
  constexpr bool sanitized = true;
#else
  constexpr bool sanitized = false;
#endif
  for (size_t at = 0; at < body.size(); ++at)
    for (uint8_t mask : {0x01, 0xff}) {
      if (sanitized && (mask == 0x01) != (at % 2 == 0))
        continue;
      std::vector<uint8_t> mutant = body;
      mutant[at] ^= mask;
      std::vector<uint8_t> bad = sealPlanBody(mutant.data(), mutant.size());
      auto plan = std::make_shared<Plan>();
      Status s = parsePlan(bad.data(), bad.size(), *plan);
      if (!s.isOk()) {
        ++rejected;
        continue;
      }
      // Valid after all (a float parameter, a name): it must run safely.
      std::unique_ptr<Session> session;
      SessionOptions options;
      options.mode = ExecutionMode::NoReuse;
      Status created = Session::create(plan, options, session);
      if (!created.isOk())
        continue; // e.g. an absurd but valid region size: out of memory
      int entry = 0;
      if (!session->findEntry("", entry).isOk())
        continue;
      Status ran1 = session->run(entry);
      (void)ran1; // errors (a label out of range) are fine; crashes are not
      ++ran;
    }
  EXPECT_GT(rejected, 0u);
  std::printf("resealed body mutations: %zu rejected by the validator, %zu "
              "valid and ran\n",
              rejected, ran);
}

/// The body with every occurrence of `from` replaced by `to` (same length),
/// resealed: a file whose launches name what this runtime does not know.
std::vector<uint8_t> withBodyText(const std::string &from,
                                  const std::string &to) {
  std::vector<uint8_t> file = readBytes(planPath("mlp"));
  size_t offset = 0, size = 0;
  EXPECT_TRUE(locatePlanBody(file.data(), file.size(), offset, size).isOk());
  std::string body(file.begin() + offset, file.begin() + offset + size);
  size_t replaced = 0;
  for (size_t at = body.find(from); at != std::string::npos;
       at = body.find(from, at + to.size()), ++replaced)
    body.replace(at, from.size(), to);
  EXPECT_GT(replaced, 0u) << from;
  return sealPlanBody(reinterpret_cast<const uint8_t *>(body.data()),
                      body.size());
}

// A launch's kernel and parameters are decoded once, at load: an unknown
// kernel or parameter, or a missing one, is named with its entry and launch.
TEST(PlanFile, LaunchesAreDecodedAtLoad) {
  REQUIRE_PLANS();
  struct Case {
    std::string from, to, message;
  } cases[] = {
      {"matmul", "matmux", ": unknown kernel 'matmux'"},
      {"transpose_lhs", "transpose_lhz",
       "(matmul): unknown parameter 'transpose_lhz' (matmul takes no such "
       "parameter)"},
      {"weight_decay", "weight_decoy", "missing parameter 'weight_decay' (a float)"},
  };
  for (const Case &c : cases) {
    std::vector<uint8_t> bytes = withBodyText(c.from, c.to);
    Plan plan;
    Status s = parsePlan(bytes.data(), bytes.size(), plan);
    EXPECT_EQ(s.code(), StatusCode::InvalidPlan) << c.from;
    EXPECT_EQ(s.message().rfind("entry '", 0), 0u) << s.message();
    EXPECT_NE(s.message().find("': launch "), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
  }
}

TEST(PlanFile, ForeignFilesAreNamed) {
  Plan plan;
  const char text[] = "module { func.func @f() { return } }";
  Status s =
      parsePlan(reinterpret_cast<const uint8_t *>(text), sizeof(text), plan);
  EXPECT_EQ(s.code(), StatusCode::InvalidPlan);
  EXPECT_NE(s.message().find("not a .zplan file"), std::string::npos)
      << s.message();
  s = loadPlanFile("/nonexistent/file.zplan", plan);
  EXPECT_EQ(s.code(), StatusCode::IoError);
}

TEST(PlanFile, ValidatorNamesTheBrokenRule) {
  REQUIRE_PLANS();
  std::shared_ptr<Plan> good = loadExample("mlp");
  {
    Plan bad = *good;
    bad.entries[0].launches[0].kernel = static_cast<KernelId>(999);
    EXPECT_NE(validatePlan(bad).message().find("launch 0: unknown kernel 999"),
              std::string::npos);
  }
  {
    Plan bad = *good;
    for (Buffer &b : bad.entries[0].buffers)
      if (b.region == Region::Arena) {
        b.offset = bad.entries[0].arenaSize;
        break;
      }
    Status s = validatePlan(bad);
    EXPECT_NE(s.message().find("but its buffers end at"), std::string::npos)
        << s.message();
  }
  {
    Plan bad = *good;
    bad.entries[0].launches[0].inputs[0] = 100000;
    Status s = validatePlan(bad);
    EXPECT_NE(s.message().find("operand tensor 100000"), std::string::npos)
        << s.message();
  }
  {
    Plan bad = *good;
    bad.persistent[0].init.second = bad.persistent[0].init.first;
    EXPECT_NE(validatePlan(bad).message().find("low < high"),
              std::string::npos);
  }
  // The MLP's bias broadcasts are strided views of the biases: steps that
  // reach past the bias, a wrong number of steps, and a view written or
  // read by a kernel that cannot read through strides are all refused.
  int view = -1;
  for (size_t t = 0; t < good->entries[0].tensors.size() && view < 0; ++t)
    if (good->entries[0].tensors[t].isStrided())
      view = static_cast<int>(t);
  ASSERT_GE(view, 0) << "the MLP plan has no broadcast view";
  {
    Plan bad = *good;
    bad.entries[0].tensors[view].strides.back() = 2;
    Status s = validatePlan(bad);
    EXPECT_NE(s.message().find("bytes, its buffer has"), std::string::npos)
        << s.message();
  }
  {
    Plan bad = *good;
    bad.entries[0].tensors[view].strides.pop_back();
    Status s = validatePlan(bad);
    EXPECT_NE(s.message().find("strides for rank"), std::string::npos)
        << s.message();
  }
  {
    Plan bad = *good;
    bad.entries[0].tensors[view].strides.back() = -1;
    Status s = validatePlan(bad);
    EXPECT_NE(s.message().find("out of range"), std::string::npos)
        << s.message();
  }
  {
    // The add reading the view writes its result over the view instead.
    Plan bad = *good;
    for (Launch &launch : bad.entries[0].launches)
      if (launch.inputs.size() == 2 &&
          static_cast<int>(launch.inputs[1]) == view) {
        launch.outputs[0] = static_cast<uint32_t>(view);
        break;
      }
    Status s = validatePlan(bad);
    EXPECT_NE(s.message().find("output #0 is a strided view"),
              std::string::npos)
        << s.message();
  }
  {
    // A strided view where the file is round-tripped keeps its steps.
    std::vector<uint8_t> bytes = serializePlan(*good);
    Plan back;
    ASSERT_TRUE(parsePlan(bytes.data(), bytes.size(), back).isOk());
    EXPECT_EQ(back.entries[0].tensors[view].strides,
              good->entries[0].tensors[view].strides);
  }
}

// The GPT example's attention reads its heads from the fused projection
// and writes its result where the transpose after it lived: views with an
// offset, refused where they would reach past their buffer, step
// sideways through a row, reach one written element twice, sit at an
// operand no kernel reads so, or come with an offset and no steps.
TEST(PlanFile, ValidatorChecksAttentionViews) {
  REQUIRE_PLANS();
  std::shared_ptr<Plan> good = loadExample("gpt_block");
  const Entry &entry = good->entries[0];
  int offsetView = -1, resultView = -1;
  for (size_t l = 0; l < entry.launches.size(); ++l)
    if (entry.launches[l].kernel == KernelId::Attention) {
      for (uint32_t t : entry.launches[l].inputs) // the keys
        if (entry.tensors[t].offset > 0 && offsetView < 0)
          offsetView = static_cast<int>(t);
      uint32_t y = entry.launches[l].outputs[0];
      if (entry.tensors[y].isStrided())
        resultView = static_cast<int>(y);
      break;
    }
  ASSERT_GE(offsetView, 0) << "no attention operand at an offset";
  ASSERT_GE(resultView, 0) << "attention's result is no view";
  ASSERT_TRUE(validatePlan(*good).isOk());
  auto refused = [&](auto &&change, const char *expected) {
    Plan bad = *good;
    change(bad.entries[0]);
    Status s = validatePlan(bad);
    EXPECT_NE(s.message().find(expected), std::string::npos) << s.message();
  };
  refused([&](Entry &e) { e.tensors[offsetView].offset += 1 << 20; },
          "bytes, its buffer has");
  refused([&](Entry &e) { e.tensors[offsetView].strides.back() = 2; },
          "attention reads rows of consecutive elements");
  refused(
      [&](Entry &e) {
        std::vector<int64_t> &steps = e.tensors[resultView].strides;
        steps[steps.size() - 2] = 1; // rows overlap
      },
      "reach one element twice");
  refused([&](Entry &e) { e.tensors[offsetView].strides.clear(); },
          "an offset without strides");
  // attention_grad writes q, k and v's gradients side by side into their
  // concat's buffer (the fused projection's gradient): disjoint views of
  // one buffer; moved to meet, refused.
  int gradLaunch = -1;
  for (size_t l = 0; l < entry.launches.size() && gradLaunch < 0; ++l)
    if (entry.launches[l].kernel == KernelId::AttentionGrad)
      gradLaunch = static_cast<int>(l);
  ASSERT_GE(gradLaunch, 0);
  const std::vector<uint32_t> &grads = entry.launches[gradLaunch].outputs;
  ASSERT_EQ(grads.size(), 3u);
  for (uint32_t t : grads) {
    EXPECT_EQ(entry.tensors[t].buffer, entry.tensors[grads[0]].buffer);
    EXPECT_TRUE(entry.tensors[t].isStrided());
  }
  refused(
      [&](Entry &e) {
        const std::vector<uint32_t> &out = e.launches[gradLaunch].outputs;
        e.tensors[out[1]].offset = e.tensors[out[0]].offset + 1;
      },
      "outputs 0 and 1 overlap");
  refused(
      [&](Entry &e) {
        // A view where a kernel other than attention reads.
        for (Launch &launch : e.launches)
          if (launch.kernel == KernelId::Matmul) {
            launch.inputs[0] = static_cast<uint32_t>(offsetView);
            break;
          }
      },
      "is a strided view, which only element kernels read");
  {
    // Round-tripped through the file, a view keeps its offset.
    std::vector<uint8_t> bytes = serializePlan(*good);
    Plan back;
    ASSERT_TRUE(parsePlan(bytes.data(), bytes.size(), back).isOk());
    EXPECT_EQ(back.entries[0].tensors[offsetView].offset,
              entry.tensors[offsetView].offset);
    EXPECT_EQ(back.entries[0].tensors[offsetView].strides,
              entry.tensors[offsetView].strides);
  }
}

//===----------------------------------------------------------------------===//
// Sessions
//===----------------------------------------------------------------------===//

TEST(Session, NoAllocationAfterLoad) {
  REQUIRE_PLANS();
  Trainer t(loadExample("gpt_block"), ExecutionMode::Planned);
  SessionStats before = t.session->stats();
  EXPECT_EQ(before.allocationsAfterLoad, 0u);
  EXPECT_EQ(before.arenaCapacity, before.arenaSize);
  t.step(0); // OpenBLAS sets up its buffers on the first product
  newsCounted = 0;
  countingNews = true;
  for (int64_t i = 1; i <= 50; ++i)
    t.step(i);
  countingNews = false;
  EXPECT_EQ(newsCounted.load(), 0u) << "operator new was called during steps";
  SessionStats after = t.session->stats();
  EXPECT_EQ(after.allocationsAfterLoad, 0u);
  EXPECT_EQ(after.allocationsAtLoad, before.allocationsAtLoad);
  EXPECT_EQ(after.stepsRun, 51u);
}

/// The arena-reset failure class, end to end: every mode computes the same
/// bits at every step, so no planned reuse ever touches a live value.
void expectModesAgree(const char *name, int steps) {
  std::shared_ptr<Plan> plan = loadExample(name);
  Trainer planned(plan, ExecutionMode::Planned);
  Trainer noReuse(plan, ExecutionMode::NoReuse);
  Trainer poison(plan, ExecutionMode::Poison);
  EXPECT_GT(noReuse.session->stats().arenaCapacity,
            planned.session->stats().arenaCapacity);
  float first = 0, last = 0;
  for (int i = 0; i < steps; ++i) {
    float a = planned.step(i), b = noReuse.step(i), c = poison.step(i);
    ASSERT_EQ(std::memcmp(&a, &b, 4), 0) << name << " step " << i;
    ASSERT_EQ(std::memcmp(&a, &c, 4), 0) << name << " step " << i;
    std::vector<uint8_t> p = planned.persistentBytes();
    ASSERT_EQ(p, noReuse.persistentBytes()) << name << " step " << i;
    ASSERT_EQ(p, poison.persistentBytes()) << name << " step " << i;
    if (i == 0)
      first = a;
    last = a;
  }
  EXPECT_LT(last, first) << name << ": training did not lower the loss";
}

TEST(Modes, MlpPlannedNoReusePoisonBitIdentical100Steps) {
  REQUIRE_PLANS();
  expectModesAgree("mlp", 100);
}

TEST(Modes, GptPlannedNoReusePoisonBitIdentical100Steps) {
  REQUIRE_PLANS();
  expectModesAgree("gpt_block", 100);
}

/// A planted planner bug: a saved activation shares bytes with a buffer
/// written while it is still needed (what the arena reset did). The loader
/// rejects the plan; run anyway, planned execution drifts from no-reuse,
/// which is what the differential test above would report.
TEST(Modes, PlantedOverlapIsRejectedAndWouldCorruptTraining) {
  REQUIRE_PLANS();
  std::shared_ptr<Plan> plan = loadExample("mlp");
  Entry &e = plan->entries[0];
  // The first relu's result is saved for relu_grad near the end (the
  // bias add's and the relu's program, its result).
  int saved = -1, clobber = -1;
  for (size_t i = 0; i < e.launches.size() && saved < 0; ++i) {
    const Launch &l = e.launches[i];
    if (l.kernel == KernelId::Relu ||
        (l.kernel == KernelId::Fused && l.params.programOps.back() == "relu"))
      saved = static_cast<int>(e.tensors[l.outputs[0]].buffer);
  }
  ASSERT_GE(saved, 0);
  // A buffer no larger, written later in the forward pass, by no launch
  // that reads the saved value's bytes (moved there, a launch would then
  // overlap its own operand, which an earlier rule rejects: only the
  // overlap checker can see this one).
  const Buffer &savedBuffer = e.buffers[saved];
  auto readsSavedBytes = [&](const Launch &launch) {
    for (uint32_t in : launch.inputs) {
      const Buffer &read = e.buffers[e.tensors[in].buffer];
      if (static_cast<int>(e.tensors[in].buffer) == saved ||
          (read.region == Region::Arena &&
           read.offset < savedBuffer.offset + savedBuffer.size &&
           savedBuffer.offset < read.offset + read.size))
        return true;
    }
    return false;
  };
  auto writtenBySavedReader = [&](uint32_t b) {
    for (const Launch &launch : e.launches)
      for (uint32_t out : launch.outputs)
        if (e.tensors[out].buffer == b && readsSavedBytes(launch))
          return true;
    return false;
  };
  bool afterSaved = false;
  for (size_t i = 0; i < e.launches.size() && clobber < 0; ++i) {
    const Launch &launch = e.launches[i];
    uint32_t b = e.tensors[launch.outputs[0]].buffer;
    if (afterSaved && static_cast<int>(b) != saved &&
        e.buffers[b].region == Region::Arena &&
        e.buffers[b].size <= savedBuffer.size && !writtenBySavedReader(b))
      clobber = static_cast<int>(b);
    afterSaved |= static_cast<int>(b) == saved;
  }
  ASSERT_GE(clobber, 0);
  e.buffers[clobber].offset = e.buffers[saved].offset;
  Status s = validatePlan(*plan);
  EXPECT_EQ(s.code(), StatusCode::InvalidPlan);
  EXPECT_NE(s.message().find("overlap checker"), std::string::npos)
      << s.message();

  Trainer planned(plan, ExecutionMode::Planned);
  Trainer noReuse(plan, ExecutionMode::NoReuse);
  planned.step(0);
  noReuse.step(0);
  EXPECT_NE(planned.persistentBytes(), noReuse.persistentBytes())
      << "the planted overlap went unnoticed by the differential check";
}

TEST(Session, PlanLargerThanTheMachineFailsAtLoadNamingTheBytes) {
  REQUIRE_PLANS();
  uint64_t available = 0;
  const char *source = "";
  ASSERT_TRUE(availableHostMemory(available, source));
  // The MLP's plan with its workspace (the arena's top buffer, live for the
  // whole entry) grown to twice what the machine has available: a valid
  // plan that cannot fit.
  auto plan = std::make_shared<Plan>(*loadExample("mlp"));
  Entry &e = plan->entries[0];
  ASSERT_GE(e.workspace, 0);
  Buffer &workspace = e.buffers[e.workspace];
  uint64_t align = plan->alignment;
  workspace.size = (2 * available + align - 1) / align * align;
  e.arenaSize = workspace.offset + workspace.size;
  plan->arenaSize = e.arenaSize;
  ASSERT_TRUE(validatePlan(*plan).isOk()) << validatePlan(*plan).message();
  std::unique_ptr<Session> session;
  Status s = Session::create(plan, SessionOptions(), session);
  EXPECT_EQ(s.code(), StatusCode::OutOfMemory) << s.toString();
  auto contains = [&](const std::string &text) {
    EXPECT_NE(s.message().find(text), std::string::npos)
        << "'" << s.message() << "' does not contain '" << text << "'";
  };
  contains("the plan needs ");
  contains("bytes of host memory (arena " + std::to_string(e.arenaSize));
  contains(" bytes available (" + std::string(source));
  contains("nothing was allocated and no step ran");
  EXPECT_FALSE(session);

  // Below what is available but above the share a session may hold.
  workspace.size = (available / 10 * 8 + align - 1) / align * align;
  e.arenaSize = workspace.offset + workspace.size;
  plan->arenaSize = e.arenaSize;
  s = Session::create(plan, SessionOptions(), session);
  EXPECT_EQ(s.code(), StatusCode::OutOfMemory) << s.toString();
  contains("of which a session may hold 75% (");
  EXPECT_FALSE(session);
  SessionOptions none;
  none.hostMemoryFraction = 0;
  s = Session::create(plan, none, session);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument) << s.toString();
  EXPECT_FALSE(session);
}

TEST(Session, F64PrecisionAgreesWithF32) {
  REQUIRE_PLANS();
  std::shared_ptr<Plan> plan = loadExample("mlp");
  Trainer narrow(plan, ExecutionMode::Planned, Precision::F32);
  Trainer wide(plan, ExecutionMode::Planned, Precision::F64);
  for (int i = 0; i < 5; ++i) {
    float a = narrow.step(i);
    wide.data->fill(*wide.session, i);
    ASSERT_TRUE(wide.session->run(wide.entry).isOk());
    double b;
    ASSERT_TRUE(wide.session->readValues(wide.loss, &b, 1).isOk());
    EXPECT_NEAR(a, b, 1e-4 * std::abs(b)) << "step " << i;
  }
}

/// One rank whose collectives do their work late, at finish(), and hold
/// NaN in the bytes they write from start() until then: a kernel that read
/// a bucket in flight, or overwrote a reduce_scatter's source before it was
/// read, would change the trained bits. It counts the launches that ran
/// while each collective was in flight (the executor calls progress() after
/// every launch).
class LateCommunicator final : public Communicator {
public:
  /// Any rank of any size, alone: its sums are its own values.
  explicit LateCommunicator(int rank = 0, int size = 1)
      : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  uint64_t start(const CollectiveCall &call) override {
    Flight f;
    f.call = call;
    f.startedAt = progressCalls;
    size_t bytes = call.count * (call.type == CollectiveType::F64 ? 8 : 4);
    if (call.kind == CollectiveCall::Kind::AllReduce) {
      auto *data = static_cast<const uint8_t *>(call.data);
      f.saved.assign(data, data + bytes);
    }
    std::memset(call.data, 0xff, bytes); // NaN in every float
    flights.push_back(std::move(f));
    ++count;
    return flights.size() - 1;
  }
  void finish(uint64_t ticket) override {
    Flight &f = flights.at(ticket);
    ASSERT_FALSE(f.done) << "ticket " << ticket << " finished twice";
    size_t bytes = f.call.count * (f.call.type == CollectiveType::F64 ? 8 : 4);
    auto *data = static_cast<uint8_t *>(f.call.data);
    if (f.call.kind == CollectiveCall::Kind::AllReduce)
      std::memcpy(data, f.saved.data(), bytes);
    else if (f.call.kind == CollectiveCall::Kind::ReduceScatter)
      std::memcpy(data, f.call.source, bytes); // alone: the whole
    else // every rank has this one's values
      for (int r = 0; r < size_; ++r)
        std::memcpy(data + r * bytes, f.call.source, bytes);
    f.done = true;
    mostInFlight = std::max(mostInFlight, progressCalls - f.startedAt);
  }
  void progress() override { ++progressCalls; }
  void broadcast(void *, uint64_t) override {}
  uint64_t collectives() const override { return count; }
  double secondsBlocked() const override { return 0; }
  std::string describe() const override { return "late, 1 rank"; }

  bool allDone() const {
    for (const Flight &f : flights)
      if (!f.done)
        return false;
    return true;
  }
  uint64_t mostInFlight = 0; // launches run while one collective was
  uint64_t count = 0;

private:
  struct Flight {
    CollectiveCall call;
    std::vector<uint8_t> saved;
    uint64_t startedAt = 0;
    bool done = false;
  };
  std::vector<Flight> flights;
  uint64_t progressCalls = 0;
  int rank_, size_;
};

/// The CPU executor overlaps a data-parallel step's collectives with the
/// kernels after them and finishes each before the first kernel that
/// touches its bytes: with the late communicator, plain data parallel and
/// ZeRO-1 (planned and poisoned) train to the single-device plan's bits.
TEST(DataParallel, CollectivesOverlapKernelsWithoutTouchingTheirBytes) {
  REQUIRE_PLANS();
  std::shared_ptr<Plan> plain = loadExample("gpt_block");
  for (const char *name : {"gpt_block_dp", "gpt_block_zero"})
    for (ExecutionMode mode : {ExecutionMode::Planned, ExecutionMode::Poison}) {
      SCOPED_TRACE(std::string(name) + " " + executionModeName(mode));
      auto late = std::make_shared<LateCommunicator>();
      Trainer base(plain, ExecutionMode::Planned);
      Trainer dp(loadExample(name), mode, Precision::F32, late);
      for (int i = 0; i < 8; ++i) {
        float a = base.step(i), b = dp.step(i);
        ASSERT_EQ(std::memcmp(&a, &b, 4), 0)
            << "step " << i << ": " << a << " " << b;
        ASSERT_TRUE(late->allDone()) << "a collective was not finished";
      }
      for (const PersistentTensor &t : plain->persistent) {
        TensorInfo x, y;
        if (!dp.session->findTensor(dp.entry, t.name, y).isOk())
          continue; // ZeRO-1's optimizer state is flattened
        ASSERT_TRUE(base.session->findTensor(base.entry, t.name, x).isOk());
        EXPECT_EQ(std::memcmp(base.session->data(x), dp.session->data(y),
                              t.type.bytes()),
                  0)
            << t.name;
      }
      EXPECT_GT(late->count, 0u);
      // A bucket is reduced while the next is computed (poisoning finishes
      // a collective early: its source dies at it).
      if (mode == ExecutionMode::Planned)
        EXPECT_GE(late->mostInFlight, 5u); // 1 without overlap
    }
}

/// Each rank draws its own dropout masks; rank 0 draws a single process's.
/// The GPT example has dropout; the same data on every rank isolates it.
TEST(DataParallel, EachRankDrawsItsOwnDropoutMasks) {
  REQUIRE_PLANS();
  std::shared_ptr<Plan> plan = loadExample("gpt_block_dp");
  Trainer alone(plan, ExecutionMode::Planned);
  Trainer rank0(plan, ExecutionMode::Planned, Precision::F32,
                std::make_shared<LateCommunicator>(0, 2));
  Trainer rank1(plan, ExecutionMode::Planned, Precision::F32,
                std::make_shared<LateCommunicator>(1, 2));
  Trainer rank1again(plan, ExecutionMode::Planned, Precision::F32,
                     std::make_shared<LateCommunicator>(1, 2));
  float a = alone.step(0), b = rank0.step(0), c = rank1.step(0),
        d = rank1again.step(0);
  EXPECT_EQ(std::memcmp(&a, &b, 4), 0) << a << " " << b;
  EXPECT_NE(std::memcmp(&b, &c, 4), 0) << "rank 1 drew rank 0's masks";
  EXPECT_EQ(std::memcmp(&c, &d, 4), 0) << c << " " << d;
}

/// One rank of a job whose other ranks are given: an all_gather of 8-byte
/// values returns theirs with this rank's in its place. For the checks a
/// session makes at load.
class GivenRanks final : public Communicator {
public:
  GivenRanks(int rank, std::vector<uint64_t> values, int localRank,
             int localSize)
      : rank_(rank), values(std::move(values)), localRank_(localRank),
        localSize_(localSize) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(values.size()); }
  int localRank() const override { return localRank_; }
  int localSize() const override { return localSize_; }
  uint64_t start(const CollectiveCall &call) override {
    EXPECT_EQ(call.kind, CollectiveCall::Kind::AllGather);
    EXPECT_EQ(call.count, 1u);
    std::vector<uint64_t> all = values;
    std::memcpy(&all[rank_], call.source, 8);
    std::memcpy(call.data, all.data(), all.size() * 8);
    return 0;
  }
  void finish(uint64_t) override {}
  void broadcast(void *, uint64_t) override {}
  uint64_t collectives() const override { return 0; }
  double secondsBlocked() const override { return 0; }
  std::string describe() const override { return "given ranks"; }

private:
  int rank_;
  std::vector<uint64_t> values;
  int localRank_, localSize_;
};

/// `mpirun -np N zrun --device cuda` on a host of N GPUs: each rank takes
/// the GPU of its place on the host, not device 0 for all.
TEST(DataParallel, EachRankTakesTheGpuOfItsPlaceOnItsHost) {
  using device::chooseCudaDevice;
  int ordinal = -2;
  ASSERT_TRUE(chooseCudaDevice(-1, nullptr, 4, ordinal).isOk());
  EXPECT_EQ(ordinal, 0);                               // a process alone
  GivenRanks third(6, std::vector<uint64_t>(8), 2, 4); // host 2, place 2
  ASSERT_TRUE(chooseCudaDevice(-1, &third, 4, ordinal).isOk());
  EXPECT_EQ(ordinal, 2);
  // A launcher that shows each rank its own GPU alone (CUDA_VISIBLE_DEVICES).
  ASSERT_TRUE(chooseCudaDevice(-1, &third, 1, ordinal).isOk());
  EXPECT_EQ(ordinal, 0);
  // Fewer shown than the host's ranks: modulo (ranks that then meet on one
  // GPU fail the check below).
  ASSERT_TRUE(chooseCudaDevice(-1, &third, 2, ordinal).isOk());
  EXPECT_EQ(ordinal, 0);
  GivenRanks second(1, std::vector<uint64_t>(2), 1, 2);
  ASSERT_TRUE(chooseCudaDevice(-1, &second, 2, ordinal).isOk());
  EXPECT_EQ(ordinal, 1);
  // A device named is taken as named, and must be there.
  ASSERT_TRUE(chooseCudaDevice(3, &third, 4, ordinal).isOk());
  EXPECT_EQ(ordinal, 3);
  Status missing = chooseCudaDevice(5, &third, 2, ordinal);
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.message().find("no CUDA device 5; this machine has 2"),
            std::string::npos)
      << missing.message();
}

/// NCCL cannot run two ranks on one GPU: every rank fails at load alike,
/// naming the ranks that share one, instead of NCCL's error at init.
TEST(DataParallel, RanksOnOneGpuFailAtLoadNamingThem) {
  using device::checkOneRankPerDevice;
  const uint64_t a = 0xa, b = 0xb, c = 0xc;
  GivenRanks apart(1, {a, b, c}, 1, 3);
  EXPECT_TRUE(checkOneRankPerDevice(apart, b, 3, "B").isOk());

  // Four ranks on a host showing each of them both of its GPUs, placed by
  // a launcher that gave ranks 0 and 2 the first.
  GivenRanks pairs(2, {a, b, a, b}, 2, 4);
  Status s = checkOneRankPerDevice(pairs, a, 2, "NVIDIA H100 (device 0)");
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("ranks 0 and 2; ranks 1 and 3 run on one GPU "
                             "(this rank's: NVIDIA H100 (device 0)), and "
                             "NCCL needs a GPU per rank: rank 2's host runs "
                             "4 of the job's 4 ranks and shows it 2 CUDA "
                             "devices"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("--device-ordinal"), std::string::npos);

  // Rank 1 apart from the three that share: it fails too, with no device
  // of its own named.
  GivenRanks three(1, {a, b, a, a}, 1, 4);
  s = checkOneRankPerDevice(three, b, 1, "B");
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("ranks 0, 2 and 3 run on one GPU, and"),
            std::string::npos)
      << s.message();
}

TEST(Session, CheckpointRoundTripAndResume) {
  REQUIRE_PLANS();
  std::shared_ptr<Plan> plan = loadExample("gpt_block");
  std::string path = ::testing::TempDir() + "/zcc-checkpoint.safetensors";
  Trainer a(plan, ExecutionMode::Planned);
  for (int i = 0; i < 5; ++i)
    a.step(i);
  ASSERT_TRUE(a.session->saveCheckpoint(path).isOk());
  Trainer b(plan, ExecutionMode::Planned);
  EXPECT_NE(a.persistentBytes(), b.persistentBytes());
  Status s = b.session->loadCheckpoint(path);
  ASSERT_TRUE(s.isOk()) << s.toString();
  EXPECT_EQ(a.persistentBytes(), b.persistentBytes());
  EXPECT_EQ(b.session->stepCount(b.entry), 5);
  for (int i = 5; i < 10; ++i) {
    float x = a.step(i), y = b.step(i);
    ASSERT_EQ(std::memcmp(&x, &y, 4), 0) << "resumed run differs at " << i;
  }
  // A checkpoint of another model is refused, and nothing changes.
  std::shared_ptr<Plan> mlp = loadExample("mlp");
  Trainer c(mlp, ExecutionMode::Planned);
  std::vector<uint8_t> before = c.persistentBytes();
  s = c.session->loadCheckpoint(path);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("is not a persistent tensor of this plan"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(before, c.persistentBytes());
  std::remove(path.c_str());
}

TEST(Session, BadLabelIsAnErrorNamingIt) {
  REQUIRE_PLANS();
  Trainer t(loadExample("mlp"), ExecutionMode::Planned);
  t.data->fill(*t.session, 0);
  std::vector<int32_t> labels(32, 3);
  labels[5] = 10; // 10 classes: 0..9
  ASSERT_TRUE(t.session
                  ->setInput(t.entry, "labels", labels.data(),
                             labels.size() * sizeof(int32_t))
                  .isOk());
  Status s = t.session->run(t.entry);
  EXPECT_EQ(s.code(), StatusCode::ExecutionError);
  EXPECT_NE(s.message().find("10"), std::string::npos) << s.message();
  // Wrong sizes and names are refused before anything runs.
  EXPECT_EQ(t.session->setInput(t.entry, "labels", labels.data(), 12).code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(t.session->setInput(t.entry, "nope", labels.data(), 128).code(),
            StatusCode::InvalidArgument);
}

//===----------------------------------------------------------------------===//
// The C API
//===----------------------------------------------------------------------===//

/// Rank 0 of two whose other rank computes the same gradients: sums are
/// twice the values, shards the first half. The work is done at finish.
struct TwinJob {
  struct Call {
    zrt_collective_kind kind;
    const void *source;
    void *data;
    uint64_t count;
    bool f64; // the plan check's gather of one 64-bit value
  };
  std::vector<Call> calls;
  int finished = 0, broadcasts = 0, progressed = 0;

  static int start(void *self, zrt_collective_kind kind, const void *source,
                   void *data, uint64_t count, int f64, uint64_t *ticket) {
    auto &job = *static_cast<TwinJob *>(self);
    *ticket = job.calls.size();
    job.calls.push_back({kind, source, data, count, f64 != 0});
    return 0;
  }
  static int finish(void *self, uint64_t ticket) {
    auto &job = *static_cast<TwinJob *>(self);
    const Call &c = job.calls.at(ticket);
    if (c.f64)
      twice<double>(c);
    else
      twice<float>(c);
    ++job.finished;
    return 0;
  }
  template <typename T> static void twice(const Call &c) {
    auto *data = static_cast<T *>(c.data);
    const auto *source = static_cast<const T *>(c.source);
    for (uint64_t i = 0; i < c.count; ++i)
      switch (c.kind) {
      case ZRT_COLLECTIVE_ALL_REDUCE:
        data[i] *= 2;
        break;
      case ZRT_COLLECTIVE_REDUCE_SCATTER:
        data[i] = 2 * source[i];
        break;
      case ZRT_COLLECTIVE_ALL_GATHER:
        data[i] = data[i + c.count] = source[i];
        break;
      }
  }
  static int broadcast(void *self, void *, uint64_t) {
    ++static_cast<TwinJob *>(self)->broadcasts;
    return 0;
  }
  static void progress(void *self) {
    ++static_cast<TwinJob *>(self)->progressed;
  }

  zrt_communicator communicator() {
    return {0, 2, this, start, finish, broadcast, progress};
  }
};

/// The C API's communicator: a data-parallel plan on rank 0 of a job whose
/// other rank has the same gradients trains as the plain plan, bit for bit
/// (the mean of two equal values is the value); a communicator that cannot
/// be one is refused.
TEST(CApi, DistributedSessionReducesThroughTheCallersCommunicator) {
  REQUIRE_PLANS();
  zrt_plan *plain = nullptr, *dp = nullptr;
  ASSERT_EQ(zrt_plan_load_file(planPath("gpt_block").c_str(), &plain), nullptr);
  ASSERT_EQ(zrt_plan_load_file(planPath("gpt_block_dp").c_str(), &dp), nullptr);
  TwinJob job;
  zrt_communicator comm = job.communicator();
  zrt_session *a = nullptr, *b = nullptr;
  ASSERT_EQ(zrt_session_create(plain, nullptr, &a), nullptr);
  zrt_status s = zrt_session_create_distributed(dp, nullptr, &comm, &b);
  ASSERT_EQ(s, nullptr) << zrt_status_message(s);
  EXPECT_GE(job.broadcasts, 1); // rank 0's parameters
  std::vector<int32_t> tokens(32), targets(32);
  for (int step = 0; step < 5; ++step) {
    for (int i = 0; i < 32; ++i) {
      tokens[i] = (i * 7 + step) % 128;
      targets[i] = (i * 5 + 3 * step) % 128;
    }
    float la = 0, lb = 0;
    for (auto [session, loss] : {std::pair{a, &la}, std::pair{b, &lb}}) {
      ASSERT_EQ(
          zrt_session_set_input(session, nullptr, "tokens", tokens.data(), 128),
          nullptr);
      ASSERT_EQ(zrt_session_set_input(session, nullptr, "targets",
                                      targets.data(), 128),
                nullptr);
      ASSERT_EQ(zrt_session_run(session, nullptr), nullptr);
      ASSERT_EQ(zrt_session_read_f32(session, nullptr, "loss", loss, 1),
                nullptr);
    }
    ASSERT_EQ(std::memcmp(&la, &lb, 4), 0)
        << "step " << step << ": " << la << " " << lb;
  }
  std::vector<float> wa(128 * 64), wb(128 * 64);
  ASSERT_EQ(zrt_session_read_f32(a, nullptr, "wte", wa.data(), wa.size()),
            nullptr);
  ASSERT_EQ(zrt_session_read_f32(b, nullptr, "wte", wb.data(), wb.size()),
            nullptr);
  EXPECT_EQ(std::memcmp(wa.data(), wb.data(), wa.size() * 4), 0);
  EXPECT_GT(job.calls.size(), 5u); // buckets of 50 KiB: several per step
  EXPECT_EQ(job.finished, static_cast<int>(job.calls.size()));
  EXPECT_GT(job.progressed, 0);
  zrt_session_free(a);
  zrt_session_free(b);

  zrt_session *bad = nullptr;
  zrt_communicator wrong = comm;
  wrong.rank = 2;
  s = zrt_session_create_distributed(dp, nullptr, &wrong, &bad);
  ASSERT_NE(s, nullptr);
  EXPECT_NE(std::string(zrt_status_message(s)).find("rank 2 of 2 ranks"),
            std::string::npos)
      << zrt_status_message(s);
  zrt_status_free(s);
  wrong = comm;
  wrong.finish = nullptr;
  s = zrt_session_create_distributed(dp, nullptr, &wrong, &bad);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(zrt_status_get_code(s), ZRT_INVALID_ARGUMENT);
  zrt_status_free(s);
  // A plan that communicates nothing, on two ranks: refused at load.
  s = zrt_session_create_distributed(plain, nullptr, &comm, &bad);
  ASSERT_NE(s, nullptr);
  EXPECT_NE(std::string(zrt_status_message(s)).find("data-parallel"),
            std::string::npos)
      << zrt_status_message(s);
  zrt_status_free(s);
  zrt_plan_free(plain);
  zrt_plan_free(dp);
}

/// A plan's bytes from the C API are the file it was loaded from, load
/// again, and save to a file of the same bytes; bad calls are refused.
TEST(CApi, PlanBytesRoundTrip) {
  REQUIRE_PLANS();
  std::string path = planPath("gpt_block_zero");
  std::ifstream in(path, std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  zrt_plan *plan = nullptr;
  ASSERT_EQ(zrt_plan_load_file(path.c_str(), &plan), nullptr);
  size_t size = 0;
  ASSERT_EQ(zrt_plan_to_bytes(plan, nullptr, 0, &size), nullptr);
  ASSERT_EQ(size, file.size());
  std::string bytes(size, '\0');
  ASSERT_EQ(zrt_plan_to_bytes(plan, bytes.data(), bytes.size(), &size),
            nullptr);
  EXPECT_TRUE(bytes == file);
  zrt_plan *again = nullptr;
  ASSERT_EQ(zrt_plan_load_bytes(bytes.data(), bytes.size(), &again), nullptr);
  std::string saved = ::testing::TempDir() + "zrt-plan-bytes.zplan";
  ASSERT_EQ(zrt_plan_save_file(again, saved.c_str()), nullptr);
  std::ifstream back(saved, std::ios::binary);
  EXPECT_TRUE(std::string((std::istreambuf_iterator<char>(back)),
                          std::istreambuf_iterator<char>()) == file);
  std::remove(saved.c_str());
  zrt_status s = zrt_plan_to_bytes(plan, bytes.data(), 16, &size);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(size, file.size()); // the size needed, still
  zrt_status_free(s);
  for (zrt_status bad :
       {zrt_plan_to_bytes(nullptr, nullptr, 0, &size),
        zrt_plan_to_bytes(plan, nullptr, 16, &size),
        zrt_plan_to_bytes(plan, nullptr, 0, nullptr),
        zrt_plan_save_file(plan, nullptr),
        zrt_plan_save_file(plan, "/nonexistent-dir/x.zplan")}) {
    ASSERT_NE(bad, nullptr);
    zrt_status_free(bad);
  }
  zrt_plan_free(plan);
  zrt_plan_free(again);
}

TEST(CApi, TrainsAndReportsErrors) {
  REQUIRE_PLANS();
  zrt_plan *plan = nullptr;
  zrt_status s = zrt_plan_load_file(planPath("mlp").c_str(), &plan);
  ASSERT_EQ(s, nullptr) << zrt_status_message(s);
  zrt_session_options options;
  zrt_session_options_init(&options);
  zrt_session *session = nullptr;
  ASSERT_EQ(zrt_session_create(plan, &options, &session), nullptr);
  zrt_plan_free(plan); // the session keeps it alive
  std::vector<float> images(32 * 784, 0.5f);
  std::vector<int32_t> labels(32, 1);
  float first = 0, loss = 0;
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(zrt_session_set_input(session, nullptr, "images", images.data(),
                                    images.size() * 4),
              nullptr);
    ASSERT_EQ(zrt_session_set_input(session, "", "labels", labels.data(),
                                    labels.size() * 4),
              nullptr);
    ASSERT_EQ(zrt_session_run(session, nullptr), nullptr);
    ASSERT_EQ(zrt_session_read_f32(session, nullptr, "loss", &loss, 1),
              nullptr);
    if (i == 0)
      first = loss;
  }
  EXPECT_LT(loss, first);
  zrt_stats stats;
  ASSERT_EQ(zrt_session_get_stats(session, &stats), nullptr);
  EXPECT_EQ(stats.steps_run, 20u);
  EXPECT_EQ(stats.train_step_runs, 20u);
  EXPECT_EQ(stats.microbatch_runs + stats.apply_runs, 0u);
  EXPECT_EQ(stats.allocations_after_load, 0u);

  s = zrt_session_run(session, "no_such_entry");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(zrt_status_get_code(s), ZRT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zrt_status_message(s)).find("no entry 'no_such_entry'"),
            std::string::npos);
  zrt_status_free(s);
  zrt_session_free(session);

  const uint8_t junk[16] = {1, 2, 3};
  s = zrt_plan_load_bytes(junk, sizeof(junk), &plan);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(zrt_status_get_code(s), ZRT_INVALID_PLAN);
  zrt_status_free(s);
}


/// The C API's feed: the same batch as TrainsAndReportsErrors, or an error
/// on batch `failAt`.
struct CFeed {
  std::vector<float> images = std::vector<float>(32 * 784, 0.5f);
  std::vector<int32_t> labels = std::vector<int32_t>(32, 1);
  int64_t failAt = -1;
  std::vector<int64_t> batches;

  static zrt_status feed(zrt_session *session, const char *entry,
                         int64_t batch, void *self) {
    CFeed &f = *static_cast<CFeed *>(self);
    f.batches.push_back(batch);
    if (batch == f.failAt)
      return zrt_session_set_input(session, entry, "no_such_input",
                                   f.images.data(), 4);
    if (zrt_status s = zrt_session_set_input(session, entry, "images",
                                             f.images.data(),
                                             f.images.size() * 4))
      return s;
    return zrt_session_set_input(session, entry, "labels", f.labels.data(),
                                 f.labels.size() * 4);
  }
};

// The trainer through C: the same losses as running the entry by hand, the
// batches numbered on across steps, and a feed's error returned.
TEST(CApi, TrainerStepsAndReportsFeedErrors) {
  REQUIRE_PLANS();
  zrt_plan *plan = nullptr;
  ASSERT_EQ(zrt_plan_load_file(planPath("mlp").c_str(), &plan), nullptr);
  zrt_session_options options;
  zrt_session_options_init(&options);
  zrt_session *byHand = nullptr, *trained = nullptr;
  ASSERT_EQ(zrt_session_create(plan, &options, &byHand), nullptr);
  ASSERT_EQ(zrt_session_create(plan, &options, &trained), nullptr);
  zrt_plan_free(plan);
  zrt_trainer *trainer = nullptr;
  zrt_status s = zrt_trainer_create(trained, 4, &trainer);
  ASSERT_NE(s, nullptr); // microbatches > 1 needs --accumulate
  EXPECT_NE(std::string(zrt_status_message(s)).find("--accumulate"),
            std::string::npos);
  zrt_status_free(s);
  ASSERT_EQ(zrt_trainer_create(trained, 1, &trainer), nullptr);
  CFeed feed;
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(CFeed::feed(byHand, nullptr, i, &feed), nullptr);
    ASSERT_EQ(zrt_session_run(byHand, nullptr), nullptr);
    float expected = 0;
    ASSERT_EQ(zrt_session_read_f32(byHand, nullptr, "loss", &expected, 1),
              nullptr);
    double loss = 0;
    ASSERT_EQ(zrt_trainer_step(trainer, CFeed::feed, &feed, &loss), nullptr);
    EXPECT_EQ(static_cast<float>(loss), expected) << "step " << i;
  }
  EXPECT_EQ(feed.batches,
            (std::vector<int64_t>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4}));
  feed.failAt = 5;
  s = zrt_trainer_step(trainer, CFeed::feed, &feed, nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(zrt_status_get_code(s), ZRT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zrt_status_message(s))
                .find("the feed function failed on batch 5"),
            std::string::npos)
      << zrt_status_message(s);
  zrt_status_free(s);
  zrt_stats stats;
  ASSERT_EQ(zrt_session_get_stats(trained, &stats), nullptr);
  EXPECT_EQ(stats.steps_run, 5u); // the failed step ran nothing
  EXPECT_EQ(stats.allocations_after_load, 0u);
  zrt_trainer_free(trainer);
  zrt_session_free(trained);
  zrt_session_free(byHand);
}

// A run's checkpoints through C: resumed in a new session, the trainer
// continues at the saved step, its feed's batch numbers where they were,
// with the uninterrupted run's losses; an empty directory changes nothing.
TEST(CApi, TrainerResumesFromItsCheckpointDirectory) {
  REQUIRE_PLANS();
  std::string dir = ::testing::TempDir() + "/zrt-run-checkpoints";
  std::remove((dir + "/manifest.json").c_str());
  zrt_plan *plan = nullptr;
  ASSERT_EQ(zrt_plan_load_file(planPath("mlp").c_str(), &plan), nullptr);
  zrt_session_options options;
  zrt_session_options_init(&options);
  zrt_session *first = nullptr, *second = nullptr;
  ASSERT_EQ(zrt_session_create(plan, &options, &first), nullptr);
  ASSERT_EQ(zrt_session_create(plan, &options, &second), nullptr);
  zrt_plan_free(plan);
  zrt_trainer *a = nullptr, *b = nullptr;
  ASSERT_EQ(zrt_trainer_create(first, 1, &a), nullptr);
  ASSERT_EQ(zrt_trainer_create(second, 1, &b), nullptr);
  int64_t done = -1;
  ASSERT_EQ(zrt_trainer_resume(b, (dir + "/none").c_str(), &done), nullptr);
  EXPECT_EQ(done, 0);
  CFeed feedA, feedB;
  std::vector<double> losses;
  for (int i = 0; i < 5; ++i) {
    double loss = 0;
    ASSERT_EQ(zrt_trainer_step(a, CFeed::feed, &feedA, &loss), nullptr);
    losses.push_back(loss);
    if (i == 2)
      ASSERT_EQ(zrt_trainer_save_checkpoint(a, dir.c_str(), 2), nullptr);
  }
  ASSERT_EQ(zrt_trainer_resume(b, dir.c_str(), &done), nullptr);
  EXPECT_EQ(done, 3);
  for (int i = 3; i < 5; ++i) {
    double loss = 0;
    ASSERT_EQ(zrt_trainer_step(b, CFeed::feed, &feedB, &loss), nullptr);
    EXPECT_EQ(loss, losses[i]) << "step " << i + 1;
  }
  EXPECT_EQ(feedB.batches, (std::vector<int64_t>{3, 4}));
  zrt_status s = zrt_trainer_save_checkpoint(b, dir.c_str(), 0);
  ASSERT_NE(s, nullptr);
  EXPECT_NE(std::string(zrt_status_message(s)).find("at least 1"),
            std::string::npos);
  zrt_status_free(s);
  zrt_trainer_free(a);
  zrt_trainer_free(b);
  zrt_session_free(first);
  zrt_session_free(second);
}

} // namespace
