//===- ConformanceTest.cpp - device executors against the CPU executor ----===//
//
// One suite, built twice. zcc-conformance-tests checks the device path on
// the host: the emulator with one lane per group must give the CPU
// executor's bits exactly, and with the GPU's lanes per group and reduction
// order it must meet the tolerances below. zcc-cuda-conformance-tests runs
// the same checks on a CUDA device (graph and eager launch), and exits 77
// (skipped) when there is none.
//
// Tolerances (f32, per element, `ref` the f64 CPU result, `cpu` the f32 CPU
// result, u = 2^-24, n the kernel's longest reduction):
//   exact kernels (copies, gathers, shape kernels, comparisons, one IEEE
//   operation per element: +, -, *, /, sqrt) must match the CPU bit for bit
//   (CUDA's +, -, *, / and sqrtf are correctly rounded);
//   every other kernel: |dev - ref| <= 4 |cpu - ref| + (16 + 2n) u max(1, |ref|)
//   - the device may be no less accurate than the CPU reference, up to a
//   factor of 4, plus a floor for where the CPU's own error is 0 by chance:
//   CUDA's expf/logf/tanhf are within 2 ulp (CUDA math API), an element
//   uses at most three of them and nvcc's FMA contraction rounds at most a
//   few more times differently (16 u); a sum of n terms in another order
//   differs by at most about n roundings of the running sum, whose size is
//   at most max(1, |ref|) for inputs in [-1, 1] (2n u).
//
//===----------------------------------------------------------------------===//

#include "LaunchCase.h"

#include "Executors/Device/DeviceExecutor.h"
#include "zcc/Runtime/Plan/PlanFile.h"
#include "zcc/Runtime/Session/Session.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <set>

using namespace zcc::runtime;
using namespace zcc::runtime::device;
using namespace zcc::runtime::testing;

namespace {

constexpr double kUnit = 1.0 / 16777216.0; // 2^-24

/// A device to test: how to make its backend and session options.
struct Target {
  std::string name;
  std::function<Status(std::unique_ptr<Backend> &)> backend;
  SessionOptions options;
  bool bitExact; // must match the CPU executor's bits everywhere
};

void PrintTo(const Target &target, std::ostream *os) { *os << target.name; }

std::vector<Target> targets() {
  std::vector<Target> list;
#ifdef ZCC_CONFORMANCE_CUDA
  for (LaunchMode mode : {LaunchMode::Graph, LaunchMode::Eager}) {
    Target t;
    t.name = std::string("cuda-") + launchModeName(mode);
    t.backend = [mode](std::unique_ptr<Backend> &out) {
      // No NCCL communicator: all_reduce is one rank's (identity).
      return createCudaBackend(0, mode, false, nullptr, out);
    };
    t.options.device = DeviceKind::Cuda;
    t.options.launch = mode;
    t.bitExact = false;
    list.push_back(t);
  }
#else
  for (bool gpuGroups : {false, true}) {
    Target t;
    t.name = gpuGroups ? "emulator-gpu-groups" : "emulator";
    t.backend = [gpuGroups](std::unique_ptr<Backend> &out) {
      out = createEmulatorBackend(gpuGroups);
      return Status::ok();
    };
    t.options.device = DeviceKind::Emulator;
    t.options.emulateGpuGroups = gpuGroups;
    t.bitExact = !gpuGroups;
    list.push_back(t);
  }
#endif
  return list;
}

const std::set<std::string> kExactKernels = {
    "add",       "sub",      "mul",          "div",
    "neg",       "relu",     "sqrt",         "rsqrt",
    "scale",     "constant", "causal_mask",  "broadcast_in_dim",
    "transpose", "slice",    "concat",       "copy",
    "slice_grad", "embedding", "embedding_grad", "max",
    "max_grad",  "relu_grad", "sqrt_grad",   "rsqrt_grad",
    "dropout"};

/// The longest reduction of a launch: the largest dimension of its inputs
/// (an upper bound for every kernel here).
int64_t reductionLength(const LaunchCase &c) {
  int64_t n = 0;
  for (uint32_t t : c.launch().inputs)
    for (int64_t d : c.entry.tensors[t].type.shape)
      n = std::max(n, d);
  return n;
}

// The device holds float tensors in f32, as the CPU's f32 executor does.
std::vector<uint8_t> packValues(const TensorType &type,
                                const std::vector<double> &values) {
  std::vector<unsigned char> bytes = LaunchCase::pack<float>(type, values);
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

std::vector<double> unpackValues(const TensorType &type,
                                 const std::vector<uint8_t> &bytes) {
  return LaunchCase::unpack<float>(
      type, std::vector<unsigned char>(bytes.begin(), bytes.end()));
}

/// Runs the case's launch on a device backend, every tensor in a device
/// allocation of its own (outputs start as the 777 sentinel), and returns
/// the outputs.
Status runOnDevice(const Target &target, const LaunchCase &c,
                   std::vector<std::vector<double>> &results) {
  std::unique_ptr<Backend> backend;
  ZRT_RETURN_IF_ERROR(target.backend(backend));
  Entry entry;
  ZRT_RETURN_IF_ERROR(c.decoded(entry));
  entry.buffers.clear();
  EntryMemory memory;
  for (size_t t = 0; t < entry.tensors.size(); ++t) {
    Tensor &tensor = entry.tensors[t];
    tensor.buffer = static_cast<uint32_t>(t);
    entry.buffers.push_back(
        {Region::Arena, 0, static_cast<uint64_t>(tensor.type.bytes())});
    uint8_t *address = nullptr;
    ZRT_RETURN_IF_ERROR(backend->allocateDevice(
        std::max<int64_t>(tensor.type.bytes(), 8), "tensor", address));
    std::vector<double> values = c.values[t];
    if (values.empty() || values[0] == 777.0)
      values.assign(static_cast<size_t>(tensor.type.numElements()), 777.0);
    std::vector<uint8_t> bytes = packValues(tensor.type, values);
    ZRT_RETURN_IF_ERROR(
        backend->copyToDevice(address, bytes.data(), bytes.size()));
    memory.buffers.push_back(address);
  }
  uint8_t *scratch = nullptr, *error = nullptr;
  // cuBLAS's share first, the pinned scratch (attention's blocks) last.
  uint64_t scratchBytes =
      entryScratchBytes(entry) + pinnedScratchBytes(entry) + 256;
  ZRT_RETURN_IF_ERROR(backend->allocateDevice(scratchBytes, "workspace", scratch));
  ZRT_RETURN_IF_ERROR(
      backend->allocateDevice(sizeof(DeviceError), "error record", error));
  memory.workspace = scratch;
  memory.workspaceBytes = scratchBytes;
  memory.pinnedBytes = pinnedScratchBytes(entry);
  memory.forGpu = backend->forGpu();
  memory.error = reinterpret_cast<DeviceError *>(error);
  std::vector<Step> steps;
  // Through the backend's lowering hook, as the executor does: on CUDA,
  // bf16 attention runs on cuDNN where cuDNN takes the launch.
  ZRT_RETURN_IF_ERROR(backend->lower(entry, 0, memory, steps));
  // One launch's steps run in order: each as if it wrote the same byte.
  std::vector<StepAccess> chain(steps.size(), StepAccess{{}, {{0, 1}}});
  ZRT_RETURN_IF_ERROR(
      backend->prepare(0, std::move(steps), stepDependencies(chain)));
  if (c.kernel.rfind("attention", 0) == 0) // which path the log shows
    std::printf("[ lowered  ] %s %s on %s\n", c.kernel.c_str(),
                typeString(entry.tensors[0].type).c_str(),
                backend->name().c_str());
  ZRT_RETURN_IF_ERROR(backend->run(0));
  DeviceError record{};
  ZRT_RETURN_IF_ERROR(backend->copyToHost(&record, error, sizeof(record)));
  if (record.flag)
    return makeError(StatusCode::ExecutionError, "data error at position ",
                     record.position);
  results.clear();
  for (uint32_t t : c.launch().outputs) {
    const TensorType &type = entry.tensors[t].type;
    std::vector<uint8_t> bytes(static_cast<size_t>(type.bytes()));
    ZRT_RETURN_IF_ERROR(
        backend->copyToHost(bytes.data(), memory.buffers[t], bytes.size()));
    results.push_back(unpackValues(type, bytes));
  }
  return Status::ok();
}

bool sameBits(double a, double b) {
  float fa = static_cast<float>(a), fb = static_cast<float>(b);
  return std::memcmp(&fa, &fb, 4) == 0 || (std::isnan(a) && std::isnan(b));
}

/// Compares one output against the CPU's f32 and f64 results by the rule
/// at the top of this file; returns how many elements broke it.
/// `slack`: a further allowance relative to |ref| (a bf16 result may round
/// to the neighbour of the CPU's).
int compare(const std::string &what, const std::vector<double> &device,
            const std::vector<double> &cpu, const std::vector<double> &ref,
            bool exact, int64_t n, double slack = 0) {
  int bad = 0;
  for (size_t i = 0; i < device.size(); ++i) {
    bool ok;
    double tolerance = 0;
    if (exact) {
      ok = sameBits(device[i], cpu[i]);
    } else if (std::isnan(ref[i]) || std::isinf(ref[i])) {
      ok = sameBits(device[i], cpu[i]) ||
           (std::isnan(device[i]) && std::isnan(ref[i]));
    } else {
      tolerance = 4 * std::fabs(cpu[i] - ref[i]) +
                  (16 + 2 * n) * kUnit * std::max(1.0, std::fabs(ref[i])) +
                  slack * std::fabs(ref[i]);
      ok = std::fabs(device[i] - ref[i]) <= tolerance;
    }
    if (!ok && ++bad <= 3)
      ADD_FAILURE() << what << " element " << i << ": device " << device[i]
                    << ", cpu f32 " << cpu[i] << ", cpu f64 " << ref[i]
                    << (exact ? " (must be bit-identical)"
                              : ", tolerance " + std::to_string(tolerance));
  }
  return bad;
}

/// Rows long enough that every lane of a GPU group has work, and NaN and
/// infinities where the kernels treat them specially.
std::vector<LaunchCase> wideCases() {
  std::vector<LaunchCase> cases;
  auto add = [&](const char *kernel) -> LaunchCase & {
    cases.emplace_back(kernel);
    return cases.back();
  };
  for (const char *name : {"softmax", "log_softmax"}) {
    add(name).input({3, 700}).output({3, 700}).param(intParam("axis", 1));
    add(name).input({300, 3}).output({300, 3}).param(intParam("axis", 0));
  }
  for (const char *name : {"softmax_grad", "log_softmax_grad"})
    add(name).input({4, 333}).input({4, 333}).output({4, 333}).param(
        intParam("axis", -1));
  for (const char *name : {"sum", "mean", "max"}) {
    add(name).input({5, 600}).output({5}).param(intsParam("dims", {1}));
    add(name).input({7, 40, 9}).output({40}).param(intsParam("dims", {0, 2}));
    // Column sums (bias gradients): on a GPU in chunks of rows, then totals.
    add(name).input({300, 40}).output({40}).param(intsParam("dims", {0}));
    add(name)
        .input({3, 70, 1, 40})
        .output({1, 40})
        .param(intsParam("dims", {0, 1}));
  }
  std::vector<double> withNaN = randomValues(2 * 500, 5);
  withNaN[700] = std::nan("");
  withNaN[300] = 1.5; // the first maximum of row 0
  withNaN[400] = 1.5;
  add("max_grad")
      .input({2, 500}, withNaN)
      .input({2})
      .output({2, 500})
      .param(intsParam("dims", {1}));
  add("max").input({2, 500}, withNaN).output({2}).param(intsParam("dims", {1}));
  add("layer_norm")
      .input({6, 1000})
      .input({1000})
      .input({1000})
      .output({6, 1000})
      .param(floatParam("epsilon", 1e-5));
  add("rms_norm")
      .input({6, 513})
      .input({513})
      .output({6, 513})
      .param(floatParam("epsilon", 1e-6));
  add("layer_norm_grad")
      .input({37, 300})
      .input({300})
      .input({37, 300})
      .output({37, 300})
      .output({300})
      .output({300})
      .param(floatParam("epsilon", 1e-5));
  add("rms_norm_grad")
      .input({37, 300})
      .input({300})
      .input({37, 300})
      .output({37, 300})
      .output({300})
      .param(floatParam("epsilon", 1e-5));
  // Columns summed over more rows than a group has lanes.
  add("layer_norm_grad")
      .input({600, 40})
      .input({40})
      .input({600, 40})
      .output({600, 40})
      .output({40})
      .output({40})
      .param(floatParam("epsilon", 1e-5));
  add("rms_norm_grad")
      .input({600, 40})
      .input({40})
      .input({600, 40})
      .output({600, 40})
      .output({40})
      .param(floatParam("epsilon", 1e-5));
  std::vector<double> labels;
  for (int i = 0; i < 40; ++i)
    labels.push_back((i * 37) % 500);
  add("softmax_cross_entropy")
      .input({40, 500})
      .typedInput(DType::I32, {40}, labels)
      .output({});
  add("softmax_cross_entropy_grad")
      .input({40, 500})
      .typedInput(DType::I32, {40}, labels)
      .input({}, {0.75})
      .output({40, 500});
  add("mse").input({3000}).input({3000}).output({});
  add("matmul").input({4, 33, 300}).input({4, 300, 17}).output({4, 33, 17});
  add("matmul")
      .input({64, 40})
      .input({50, 40})
      .output({64, 50})
      .param(unitParam("transpose_rhs"));
  add("matmul")
      .input({3, 40, 64})
      .input({40, 50})
      .output({3, 64, 50})
      .param(unitParam("transpose_lhs"));
  std::vector<double> tokens;
  for (int i = 0; i < 200; ++i)
    tokens.push_back((i * 7) % 50);
  add("embedding")
      .input({50, 64})
      .typedInput(DType::I64, {8, 25}, tokens)
      .output({8, 25, 64});
  add("embedding_grad")
      .typedInput(DType::I64, {8, 25}, tokens)
      .input({8, 25, 64})
      .output({50, 64});
  // A vocabulary split into slices of rows, each index repeated.
  std::vector<double> manyTokens;
  for (int i = 0; i < 1200; ++i)
    manyTokens.push_back((i * 131) % 500);
  add("embedding_grad")
      .typedInput(DType::I32, {4, 300}, manyTokens)
      .input({4, 300, 96})
      .output({500, 96});
  add("concat")
      .input({3, 5, 7})
      .input({3, 2, 7})
      .input({3, 9, 7})
      .output({3, 16, 7})
      .param(intParam("dimension", 1));
  return cases;
}

void checkCases(const Target &target, std::vector<LaunchCase> cases) {
  for (LaunchCase &c : cases) {
    SCOPED_TRACE(target.name + ": " + c.kernel);
    ASSERT_TRUE(c.run<double>().isOk());
    std::vector<std::vector<double>> ref = c.results;
    ASSERT_TRUE(c.run<float>().isOk());
    std::vector<std::vector<double>> device;
    Status status = runOnDevice(target, c, device);
    ASSERT_TRUE(status.isOk()) << status.toString();
    bool exact = target.bitExact || kExactKernels.count(c.kernel);
    for (size_t o = 0; o < device.size(); ++o)
      compare("output " + std::to_string(o), device[o], c.results[o], ref[o],
              exact, reductionLength(c));
  }
}

class Conformance : public ::testing::TestWithParam<Target> {};

TEST_P(Conformance, EveryKernelMatchesTheCpuExecutor) {
  checkCases(GetParam(), everyKernel());
}

// bf16 kernels against the CPU executor's f32 run: conversions and one-
// operation element kernels bit for bit (one rounding of the same f32
// value); products of bf16 operands (exact in f32) and the normalizations'
// row sums differ only in the order of their f32 sums, by at most
// (16 + 2k) u max(1, |cpu|), and other element
// kernels by the f32 rule's 16 u, plus one bf16 unit (at most 2^-7 |cpu|:
// two f32 values that close may round to neighbouring bf16 values) when the
// result is stored in bf16.
TEST_P(Conformance, Bf16KernelsMatchTheCpuExecutor) {
  for (LaunchCase c : bf16Kernels()) {
    SCOPED_TRACE(c.kernel + " " + typeString(c.entry.tensors[0].type));
    ASSERT_TRUE(c.run<float>().isOk());
    std::vector<std::vector<double>> device;
    Status status = runOnDevice(GetParam(), c, device);
    ASSERT_TRUE(status.isOk()) << status.toString();
    // Sums (products, reductions, the loss's rows) may take another order.
    bool sums = c.kernel == "matmul" || c.kernel == "sum" ||
                c.kernel.rfind("softmax_cross_entropy", 0) == 0 ||
                c.kernel.find("norm") != std::string::npos;
    bool exact = GetParam().bitExact ||
                 (!sums && c.kernel != "gelu" && c.kernel != "dropout");
    int64_t k = sums ? reductionLength(c) : 0;
    ASSERT_EQ(device.size(), c.results.size());
    // Attention rounds probabilities computed in f32 to bf16: on a GPU one
    // may round to the neighbour of the CPU's, so there the vendor tier's
    // bf16 rule (1e-2 of the largest magnitude) applies.
    if (!GetParam().bitExact && c.kernel.rfind("attention", 0) == 0) {
      for (size_t o = 0; o < device.size(); ++o) {
        double largest = 0, worst = 0;
        size_t at = 0, wrong = 0;
        for (size_t i = 0; i < device[o].size(); ++i) {
          largest = std::max(largest, std::fabs(c.results[o][i]));
          double error = std::fabs(device[o][i] - c.results[o][i]);
          if (error > worst)
            at = i;
          worst = std::max(worst, error);
        }
        for (size_t i = 0; i < device[o].size(); ++i)
          wrong += std::fabs(device[o][i] - c.results[o][i]) > 1e-2 * largest;
        // Where (the element, and how many are off) says which block,
        // row or head a GPU failure is in.
        EXPECT_LE(worst, 1e-2 * largest)
            << "output " << o << ": element " << at << " is "
            << device[o][at] << " against the CPU's " << c.results[o][at]
            << "; " << wrong << " of " << device[o].size() << " off";
      }
      continue;
    }
    // The CPU's f32 run is the reference (f64 sessions refuse bf16).
    for (size_t o = 0; o < device.size(); ++o) {
      bool bf16Out =
          c.entry.tensors[c.launch().outputs[o]].type.dtype == DType::BF16;
      compare("output " + std::to_string(o), device[o], c.results[o],
              c.results[o], exact, k, bf16Out ? 1.0 / 128 : 0);
    }
  }
}

// f32 products marked tf32 (zcc --matmul-precision tf32): the host, the
// reference, computes the f32 product, so the emulator (either way it runs
// groups) gives the CPU's bits; a GPU rounds the operands to TF32 (10 mantissa bits: each operand
// off by at most 2^-11 of itself rounded, 2^-10 truncated) and sums in f32,
// so each element is within 2^-9 sum_k |a_ik| |b_kj| of the f64 product
// (the vendor tier's tf32 rule, per element) plus the f32 rule; and some
// element must be off by more than the f32 rule alone, or the products did
// not run in TF32.
TEST_P(Conformance, Tf32ProductsMatchTheCpuExecutorWithinTheTf32Tier) {
  std::vector<LaunchCase> cases;
  cases.emplace_back("matmul");
  cases.back().input({256, 192}).input({192, 128}).output({256, 128});
  cases.emplace_back("matmul");
  cases.back()
      .input({3, 64, 300})
      .input({3, 80, 300})
      .output({3, 64, 80})
      .param(unitParam("transpose_rhs"));
  for (LaunchCase &c : cases) {
    c.param(unitParam("tf32"));
    SCOPED_TRACE(GetParam().name + ": " + typeString(c.entry.tensors[0].type));
    // sum_k |a_ik| |b_kj|: the same product of the magnitudes, in f64.
    LaunchCase magnitudes = c;
    for (std::vector<double> &v : magnitudes.values)
      for (double &x : v)
        x = std::fabs(x);
    ASSERT_TRUE(magnitudes.run<double>().isOk());
    ASSERT_TRUE(c.run<double>().isOk());
    std::vector<double> ref = c.results[0];
    ASSERT_TRUE(c.run<float>().isOk());
    std::vector<std::vector<double>> device;
    Status status = runOnDevice(GetParam(), c, device);
    ASSERT_TRUE(status.isOk()) << status.toString();
    if (GetParam().options.device != DeviceKind::Cuda) { // host products
      compare("product", device[0], c.results[0], ref, true, 0);
      continue;
    }
    const int64_t k = reductionLength(c);
    int bad = 0, beyondF32 = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      double f32Rule = 4 * std::fabs(c.results[0][i] - ref[i]) +
                       (16 + 2 * k) * kUnit * std::max(1.0, std::fabs(ref[i]));
      double error = std::fabs(device[0][i] - ref[i]);
      beyondF32 += error > f32Rule;
      if (error > f32Rule + std::ldexp(magnitudes.results[0][i], -9) &&
          ++bad <= 3)
        ADD_FAILURE() << "element " << i << ": device " << device[0][i]
                      << ", f64 " << ref[i] << ", sum |a||b| "
                      << magnitudes.results[0][i];
    }
    EXPECT_GT(beyondF32, 0) << "no element shows TF32's rounding";
  }
}

TEST_P(Conformance, WideRowsNaNAndLargeProductsMatchTheCpuExecutor) {
  checkCases(GetParam(), wideCases());
}

TEST_P(Conformance, BadIndicesAndLabelsAreReportedNotRead) {
  LaunchCase embedding("embedding");
  embedding.input({5, 3})
      .typedInput(DType::I32, {2, 2}, {4, 0, 5, 2})
      .output({2, 2, 3});
  std::vector<std::vector<double>> out;
  Status status = runOnDevice(GetParam(), embedding, out);
  EXPECT_EQ(status.code(), StatusCode::ExecutionError) << status.toString();
  EXPECT_CONTAINS(status.message(), "position 2");
  LaunchCase loss("softmax_cross_entropy");
  loss.input({3, 4}).typedInput(DType::I64, {3}, {3, -1, 1}).output({});
  status = runOnDevice(GetParam(), loss, out);
  EXPECT_EQ(status.code(), StatusCode::ExecutionError) << status.toString();
  EXPECT_CONTAINS(status.message(), "position 1");
}

//===----------------------------------------------------------------------===//
// Whole plans through sessions
//===----------------------------------------------------------------------===//

std::string plansDir() {
  if (const char *dir = std::getenv("ZCC_PLANS_DIR"))
    return dir;
#ifdef ZCC_TEST_PLANS_DIR
  return ZCC_TEST_PLANS_DIR;
#else
  return "";
#endif
}

std::shared_ptr<Plan> loadTestPlan(const std::string &name) {
  auto plan = std::make_shared<Plan>();
  std::string path = plansDir() + "/" + name + ".zplan";
  Status status = loadPlanFile(path, *plan);
  EXPECT_TRUE(status.isOk()) << "set ZCC_PLANS_DIR to the folder with the "
                                "test plans: "
                             << status.toString();
  return status.isOk() ? plan : nullptr;
}

/// Fills every input of the entry with reproducible data the plan accepts
/// (labels and indices below the size of the axis they index).
void fillInputs(Session &session, int entry, uint64_t seed) {
  const Entry &e = session.plan().entries[entry];
  for (const Tensor &t : e.tensors) {
    if (t.name.empty() || e.buffers[t.buffer].region != Region::Input ||
        t.role == TensorRole::Step)
      continue;
    TensorInfo info;
    ASSERT_TRUE(session.findTensor(entry, t.name, info).isOk());
    std::vector<double> values = randomValues(t.type.numElements(), seed, -1, 1);
    if (!isFloat(t.type.dtype))
      for (size_t i = 0; i < values.size(); ++i)
        values[i] = static_cast<double>(i * 7 % 10); // < every class count here
    ASSERT_TRUE(session.writeValues(info, values.data(), values.size()).isOk());
  }
}

/// Every output and persistent tensor of the entry, after one run.
std::vector<std::vector<double>> runOnce(Session &session, int entry) {
  fillInputs(session, entry, 3);
  Status status = session.run(entry);
  EXPECT_TRUE(status.isOk()) << status.toString();
  std::vector<std::vector<double>> all;
  const Entry &e = session.plan().entries[entry];
  for (const Tensor &t : e.tensors) {
    Region region = e.buffers[t.buffer].region;
    if (t.name.empty() ||
        (region != Region::Output && region != Region::Persistent))
      continue;
    TensorInfo info;
    EXPECT_TRUE(session.findTensor(entry, t.name, info).isOk());
    std::vector<double> values(static_cast<size_t>(t.type.numElements()));
    EXPECT_TRUE(session.readValues(info, values.data(), values.size()).isOk());
    all.push_back(std::move(values));
  }
  return all;
}

std::unique_ptr<Session> makeSession(std::shared_ptr<Plan> plan,
                                     SessionOptions options) {
  std::unique_ptr<Session> session;
  Status status = Session::create(std::move(plan), options, session);
  EXPECT_TRUE(status.isOk()) << status.toString();
  return session;
}

/// One step of a plan compiled with --optimizer none: the gradients (the
/// outputs) and the loss against the CPU's f32 and f64 runs. n is the
/// model's longest reduction (MLP: the 784-wide input layer).
void checkGradients(const Target &target, const std::string &name,
                    int64_t n) {
  std::shared_ptr<Plan> plan = loadTestPlan(name);
  ASSERT_TRUE(plan);
  SessionOptions f64;
  f64.precision = Precision::F64;
  auto ref = makeSession(plan, f64);
  auto cpu = makeSession(plan, SessionOptions{});
  auto device = makeSession(plan, target.options);
  ASSERT_TRUE(ref && cpu && device);
  int entry = 0;
  ASSERT_TRUE(cpu->findEntry("", entry).isOk());
  std::vector<std::vector<double>> r = runOnce(*ref, entry);
  std::vector<std::vector<double>> c = runOnce(*cpu, entry);
  std::vector<std::vector<double>> d = runOnce(*device, entry);
  ASSERT_EQ(d.size(), c.size());
  for (size_t i = 0; i < d.size(); ++i)
    compare(name + " tensor " + std::to_string(i), d[i], c[i], r[i],
            target.bitExact, n);
  EXPECT_EQ(device->stats().allocationsAfterLoad, 0u);
}

TEST_P(Conformance, MlpGradientsMatchTheCpuExecutor) {
  checkGradients(GetParam(), "mlp_none", 784);
}

TEST_P(Conformance, GptBlockGradientsMatchTheCpuExecutor) {
  checkGradients(GetParam(), "gpt_block_none", 256);
}

/// 30 AdamW steps: the losses stay together (bit for bit where the target
/// is exact), and nothing is allocated after load.
TEST_P(Conformance, TrainingLossesTrackTheCpuExecutor) {
  for (const char *name :
       {"mlp", "gpt_block", "mlp_sgd", "gpt_block_clip", "gpt_block_zero_clip",
        "gpt_block_schedule", "gpt_block_zero_schedule"}) {
    SCOPED_TRACE(name);
    std::shared_ptr<Plan> plan = loadTestPlan(name);
    ASSERT_TRUE(plan);
    auto cpu = makeSession(plan, SessionOptions{});
    auto device = makeSession(plan, GetParam().options);
    ASSERT_TRUE(cpu && device);
    int entry = 0;
    ASSERT_TRUE(cpu->findEntry("", entry).isOk());
    TensorInfo loss;
    ASSERT_TRUE(cpu->findLoss(entry, loss).isOk());
    for (int step = 0; step < 30; ++step) {
      fillInputs(*cpu, entry, 100 + step);
      fillInputs(*device, entry, 100 + step);
      ASSERT_TRUE(cpu->run(entry).isOk());
      Status status = device->run(entry);
      ASSERT_TRUE(status.isOk()) << status.toString();
      double a = 0, b = 0;
      ASSERT_TRUE(cpu->readValues(loss, &a, 1).isOk());
      ASSERT_TRUE(device->readValues(loss, &b, 1).isOk());
      if (GetParam().bitExact)
        ASSERT_TRUE(sameBits(a, b)) << "step " << step << ": " << a << " " << b;
      else // f32 training drifts apart slowly; 1e-3 after 30 steps
        ASSERT_NEAR(a, b, 1e-3 * std::max(1.0, std::fabs(a))) << "step " << step;
    }
    SessionStats stats = device->stats();
    EXPECT_EQ(stats.allocationsAfterLoad, 0u);
    EXPECT_EQ(stats.stepsRun, 30u);
  }
}

/// Data-parallel plans on one rank (docs/distributed.md): each bucket's
/// all_reduce, and ZeRO-1's reduce_scatter, shard and all_gather, are
/// identities, so 12 steps on the target give the plain plan's losses and
/// parameters bit for bit. On CUDA the collectives go through a one-rank
/// NCCL communicator inside the graph; ZCC_REQUIRE_NCCL=1 (bench/gpu/run.sh)
/// fails the test where NCCL did not load and the copies stood in.
TEST_P(Conformance, DataParallelPlansOnOneRankTrainAsThePlainPlan) {
  std::shared_ptr<Plan> plain = loadTestPlan("gpt_block");
  ASSERT_TRUE(plain);
  for (const char *name : {"gpt_block_dp", "gpt_block_zero"}) {
    SCOPED_TRACE(name);
    std::shared_ptr<Plan> plan = loadTestPlan(name);
    ASSERT_TRUE(plan);
    ASSERT_TRUE(plan->communicates());
    auto base = makeSession(plain, GetParam().options);
    auto dp = makeSession(plan, GetParam().options);
    ASSERT_TRUE(base && dp);
    const char *require = std::getenv("ZCC_REQUIRE_NCCL");
    if (GetParam().options.device == DeviceKind::Cuda && require &&
        std::string(require) == "1")
      EXPECT_NE(dp->stats().deviceName.find("NCCL"), std::string::npos)
          << dp->stats().deviceName;
    int entry = 0;
    ASSERT_TRUE(base->findEntry("", entry).isOk());
    TensorInfo baseLoss, dpLoss;
    ASSERT_TRUE(base->findLoss(entry, baseLoss).isOk());
    ASSERT_TRUE(dp->findLoss(entry, dpLoss).isOk());
    for (int step = 0; step < 12; ++step) {
      fillInputs(*base, entry, 200 + step);
      fillInputs(*dp, entry, 200 + step);
      ASSERT_TRUE(base->run(entry).isOk());
      Status status = dp->run(entry);
      ASSERT_TRUE(status.isOk()) << status.toString();
      double a = 0, b = 0;
      ASSERT_TRUE(base->readValues(baseLoss, &a, 1).isOk());
      ASSERT_TRUE(dp->readValues(dpLoss, &b, 1).isOk());
      ASSERT_TRUE(sameBits(a, b)) << "step " << step << ": " << a << " " << b;
    }
    // Every persistent tensor of the plain plan the other has too: the
    // parameters (ZeRO-1's optimizer state is flattened under other names).
    const Entry &e = plain->entries[entry];
    int compared = 0;
    for (const Tensor &t : e.tensors) {
      TensorInfo x, y;
      if (t.name.empty() || e.buffers[t.buffer].region != Region::Persistent ||
          !dp->findTensor(entry, t.name, y).isOk())
        continue;
      ASSERT_TRUE(base->findTensor(entry, t.name, x).isOk());
      size_t n = static_cast<size_t>(t.type.numElements());
      std::vector<double> u(n), v(n);
      ASSERT_TRUE(base->readValues(x, u.data(), n).isOk());
      ASSERT_TRUE(dp->readValues(y, v.data(), n).isOk());
      for (size_t i = 0; i < n; ++i)
        ASSERT_TRUE(sameBits(u[i], v[i])) << t.name << "[" << i << "]";
      ++compared;
    }
    EXPECT_GE(compared, 16); // the GPT example's parameters
    EXPECT_EQ(dp->stats().allocationsAfterLoad, 0u);
  }
}

// The CUDA graph's edges: a step follows exactly the steps it conflicts
// with, less those implied through others.
#ifndef ZCC_CONFORMANCE_CUDA
/// A backend that lowers every matmul launch to a call of its own, as one
/// with a vendor library would (Backend::lower); the call runs the
/// reference steps it stands for, so the results must be the emulator's,
/// bit for bit. Memory and programs are the emulator's.
class LoweringBackend final : public Backend {
public:
  struct HostCall final : LibraryCall {
    std::vector<Step> steps;
    mutable int issued = 0;
    Status issue(void *stream) const override {
      ++issued;
      if (stream)
        return makeError(StatusCode::Unsupported, "a host call on a stream");
      return runOnHost(steps.data(), steps.data() + steps.size());
    }
    std::string describe() const override { return "the test's matmul"; }
  };

  Status lower(const Entry &entry, size_t index, const EntryMemory &memory,
               std::vector<Step> &out) override {
    if (entry.launches[index].kernel != KernelId::Matmul)
      return Backend::lower(entry, index, memory, out);
    auto call = std::make_unique<HostCall>();
    ZRT_RETURN_IF_ERROR(appendLaunch(entry, index, memory, call->steps));
    out.push_back(BackendCall{call.get(), true});
    calls.push_back(std::move(call));
    return Status::ok();
  }
  std::string name() const override { return "lowering test"; }
  bool forGpu() const override { return inner->forGpu(); }
  Status memoryInfo(uint64_t &free, uint64_t &total) override {
    return inner->memoryInfo(free, total);
  }
  Status allocateDevice(uint64_t bytes, const char *what,
                        uint8_t *&out) override {
    return inner->allocateDevice(bytes, what, out);
  }
  Status allocateHost(uint64_t bytes, const char *what,
                      uint8_t *&out) override {
    return inner->allocateHost(bytes, what, out);
  }
  Status copyToDevice(void *device, const void *host, uint64_t bytes) override {
    return inner->copyToDevice(device, host, bytes);
  }
  Status copyToHost(void *host, const void *device, uint64_t bytes) override {
    return inner->copyToHost(host, device, bytes);
  }
  Status prepare(size_t entry, std::vector<Step> steps,
                 const StepOrder &order) override {
    return inner->prepare(entry, std::move(steps), order);
  }
  Status run(size_t entry) override { return inner->run(entry); }
  uint64_t allocations() const override { return inner->allocations(); }
  uint64_t bytesAllocated() const override { return inner->bytesAllocated(); }
  uint64_t deviceBytes() const override { return inner->deviceBytes(); }

  std::unique_ptr<Backend> inner = createEmulatorBackend();
  std::vector<std::unique_ptr<HostCall>> calls;
};

/// One step of `plan`'s first entry on `executor` from the same parameters
/// and inputs: the output bytes.
std::vector<uint8_t> outputsOfOneStep(const Plan &plan,
                                      DeviceExecutor &executor) {
  const Entry &e = plan.entries[0];
  const RegionBases &host = executor.hostRegions();
  executor.beforeHostWrite();
  std::mt19937 random(11);
  std::uniform_real_distribution<float> uniform(-0.1f, 0.1f);
  for (const Tensor &t : e.tensors) {
    const Buffer &buffer = e.buffers[t.buffer];
    // Views read through strides (broadcasts) fill nothing of their own.
    if ((buffer.region != Region::Persistent &&
         buffer.region != Region::Input) ||
        t.isStrided())
      continue;
    uint8_t *at = host.address(buffer);
    for (int64_t i = 0; i < t.type.numElements(); ++i) {
      if (t.type.dtype == DType::F32) {
        float v = uniform(random);
        std::memcpy(at + 4 * i, &v, 4);
      } else if (t.type.dtype == DType::I32) {
        int32_t v = static_cast<int32_t>(i % 10);
        std::memcpy(at + 4 * i, &v, 4);
      }
    }
  }
  Status status = executor.run(0, 0);
  EXPECT_TRUE(status.isOk()) << status.toString();
  return std::vector<uint8_t>(host.output, host.output + e.outputSize);
}

TEST(LoweringHook, ABackendsOwnCallsRunInsteadOfTheReferenceKernels) {
  std::shared_ptr<Plan> plan = loadTestPlan("mlp_none");
  ASSERT_TRUE(plan);
  SessionOptions options;
  options.device = DeviceKind::Emulator;
  std::unique_ptr<DeviceExecutor> reference, lowered;
  ASSERT_TRUE(DeviceExecutor::create(plan, options, createEmulatorBackend(),
                                     reference)
                  .isOk());
  auto backend = std::make_unique<LoweringBackend>();
  LoweringBackend *hook = backend.get();
  Status created =
      DeviceExecutor::create(plan, options, std::move(backend), lowered);
  ASSERT_TRUE(created.isOk()) << created.toString();
  size_t matmuls = 0;
  for (const Launch &l : plan->entries[0].launches)
    matmuls += l.kernel == KernelId::Matmul;
  ASSERT_GT(matmuls, 0u);
  EXPECT_EQ(hook->calls.size(), matmuls);
  std::vector<uint8_t> want = outputsOfOneStep(*plan, *reference);
  std::vector<uint8_t> got = outputsOfOneStep(*plan, *lowered);
  for (const auto &call : hook->calls)
    EXPECT_EQ(call->issued, 1);
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(got, want);
}
#endif

TEST(StepDependencies, FollowOnlyConflictingSteps) {
  auto r = [](uintptr_t begin, uintptr_t end) {
    return AddressRange{begin, end};
  };
  const AddressRange a = r(0, 64), b = r(64, 128), c = r(128, 192),
                     d = r(192, 256), e = r(256, 320);
  std::vector<StepAccess> steps = {
      {{}, {a}},                  // 0: writes a
      {{}, {b}},                  // 1: writes b
      {{a}, {c}},                 // 2: a -> c
      {{b}, {d}},                 // 3: b -> d
      {{c, d}, {e}},              // 4: c, d -> e
      {{}, {a}},                  // 5: writes a again: after 2 read it
      {{r(260, 320)}, {}},        // 6: reads part of e
      {{}, {r(320, 384)}},        // 7: touches e's end, overlaps nothing
      {{r(330, 340)}, {r(0, 8)}}, // 8: reads 7's bytes, writes a's start
  };
  std::vector<std::vector<uint32_t>> expected = {
      {}, {}, {0}, {1}, {3, 2}, {2}, {4}, {}, {7, 5}};
  EXPECT_EQ(stepDependencies(steps).after, expected);
}

// On random programs: every conflicting pair is ordered through the edges,
// and every edge is a conflict that no other path implies.
TEST(StepDependencies, RandomProgramsKeepEveryConflictOrdered) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<StepAccess> steps(40);
    auto range = [&] {
      uintptr_t begin = rng() % 1000;
      return AddressRange{begin, begin + 1 + rng() % 60};
    };
    for (StepAccess &step : steps) {
      for (unsigned k = rng() % 3; k > 0; --k)
        step.reads.push_back(range());
      for (unsigned k = rng() % 2 + (step.reads.empty() ? 1 : 0); k > 0; --k)
        step.writes.push_back(range());
    }
    auto hit = [](const std::vector<AddressRange> &x,
                  const std::vector<AddressRange> &y) {
      for (const AddressRange &p : x)
        for (const AddressRange &q : y)
          if (p.begin < q.end && q.begin < p.end)
            return true;
      return false;
    };
    auto conflict = [&](size_t j, size_t i) {
      return hit(steps[j].writes, steps[i].reads) ||
             hit(steps[j].writes, steps[i].writes) ||
             hit(steps[j].reads, steps[i].writes);
    };
    std::vector<std::vector<uint32_t>> after = stepDependencies(steps).after;
    std::vector<std::vector<char>> reach(steps.size(),
                                         std::vector<char>(steps.size(), 0));
    for (size_t i = 0; i < steps.size(); ++i)
      for (uint32_t j : after[i]) {
        ASSERT_LT(j, i);
        ASSERT_TRUE(conflict(j, i)) << "edge " << j << " -> " << i;
        reach[i][j] = 1;
        for (size_t k = 0; k < steps.size(); ++k)
          reach[i][k] |= reach[j][k];
      }
    for (size_t i = 0; i < steps.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (conflict(j, i))
          EXPECT_TRUE(reach[i][j]) << "round " << round << ": step " << i
                                   << " does not follow step " << j;
    // Reduced: no edge j -> i where another edge k -> i already reaches j.
    for (size_t i = 0; i < steps.size(); ++i)
      for (uint32_t j : after[i])
        for (uint32_t k : after[i])
          EXPECT_FALSE(k != j && reach[k][j])
              << "edge " << j << " -> " << i << " is implied through " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, Conformance, ::testing::ValuesIn(targets()),
                         [](const ::testing::TestParamInfo<Target> &info) {
                           std::string name = info.param.name;
                           for (char &ch : name)
                             if (ch == '-')
                               ch = '_';
                           return name;
                         });

} // namespace

#ifdef ZCC_CONFORMANCE_CUDA
/// Exits 77 (ctest: skipped) when no CUDA device can run the kernels.
int main(int argc, char **argv) {
  std::unique_ptr<Backend> backend;
  Status status =
      createCudaBackend(0, LaunchMode::Eager, false, nullptr, backend);
  if (!status.isOk()) {
    std::printf("SKIPPED: no CUDA device for the conformance suite: %s\n",
                status.toString().c_str());
    return 77;
  }
  backend.reset();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
#endif
