//===- LaunchCase.h - one-launch entries for kernel tests ------*- C++ -*-===//
//
// Shared by the kernel tests and the conformance suite: a one-launch entry
// with reproducible inputs, run as the CPU executor runs it
// (LaunchCase::run: the kernels' steps on the host, one lane per group), and
// one valid launch of every kernel (everyKernel).
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_TEST_UNIT_RUNTIME_LAUNCHCASE_H
#define ZCC_TEST_UNIT_RUNTIME_LAUNCHCASE_H

#include "Kernels/HostRun.h"

#include "zcc/Runtime/Kernels/BFloat16.h"
#include "zcc/Runtime/Plan/KernelRules.h"
#include "zcc/Runtime/Kernels/Philox.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace zcc::runtime::testing {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// Expects `text` to occur in `message`, printing both when it does not.
#define EXPECT_CONTAINS(message, text)                                         \
  EXPECT_NE(std::string(message).find(text), std::string::npos)                \
      << "'" << (message) << "' does not contain '" << (text) << "'"

//===----------------------------------------------------------------------===//
// Building launches
//===----------------------------------------------------------------------===//

inline Param unitParam(const std::string &name) { return Param::flag(name); }
inline Param intParam(const std::string &name, int64_t value) {
  return Param::integer(name, value);
}
inline Param floatParam(const std::string &name, double value) {
  return Param::real(name, value);
}
inline Param intsParam(const std::string &name, std::vector<int64_t> values) {
  return Param::list(name, std::move(values));
}
inline Param floatsParam(const std::string &name, std::vector<double> values) {
  Param p{name, ParamKind::Floats};
  p.floats = std::move(values);
  return p;
}
inline Param namesParam(const std::string &name,
                        std::vector<std::string> values) {
  Param p{name, ParamKind::Names};
  p.names = std::move(values);
  return p;
}

/// Reproducible values in [lo, hi) from Philox, so tests need no seeded
/// global generator.
inline std::vector<double> randomValues(int64_t n, uint64_t seed,
                                        double lo = -1, double hi = 1) {
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    PhiloxBlock block = philox4x32_10(
        philoxCounter(static_cast<uint64_t>(i), 0), philoxKeyFromSeed(seed));
    values[i] = lo + (hi - lo) * uniformFromWord(block.words[0]);
  }
  return values;
}

inline int64_t elementCount(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// A one-launch entry: the tensors it names, their input values, and after
/// run<T>() the values of its outputs.
class LaunchCase {
public:
  explicit LaunchCase(const std::string &kernel) : kernel(kernel) {
    entry.launches.emplace_back();
  }

  /// The launch's operands; its kernel and parameters are decoded from
  /// `kernel` and `params` (decoded()).
  Launch &launch() { return entry.launches[0]; }
  const Launch &launch() const { return entry.launches[0]; }

  /// An input tensor; without values it holds reproducible random ones.
  LaunchCase &typedInput(DType dtype, std::vector<int64_t> shape,
                         std::vector<double> data = {}) {
    if (data.empty())
      data = randomValues(elementCount(shape), 17 + entry.tensors.size());
    launch().inputs.push_back(addTensor(dtype, std::move(shape), data));
    return *this;
  }
  LaunchCase &input(std::vector<int64_t> shape, std::vector<double> data = {}) {
    return typedInput(DType::F32, std::move(shape), std::move(data));
  }

  /// An input read through strides (a broadcast view): `data` is its
  /// buffer, as many elements as the steps reach.
  LaunchCase &stridedInput(std::vector<int64_t> shape,
                           std::vector<int64_t> strides,
                           std::vector<double> data) {
    return typedStridedInput(DType::F32, std::move(shape), std::move(strides),
                             std::move(data));
  }
  LaunchCase &typedStridedInput(DType dtype, std::vector<int64_t> shape,
                                std::vector<int64_t> strides,
                                std::vector<double> data) {
    uint32_t t = addTensor(dtype, std::move(shape), std::move(data));
    entry.tensors[t].strides = std::move(strides);
    launch().inputs.push_back(t);
    return *this;
  }

  LaunchCase &typedOutput(DType dtype, std::vector<int64_t> shape) {
    launch().outputs.push_back(addTensor(dtype, std::move(shape), {}));
    return *this;
  }
  LaunchCase &output(std::vector<int64_t> shape) {
    return typedOutput(DType::F32, std::move(shape));
  }

  /// An output written over input `inputIndex`'s buffer.
  LaunchCase &outputInPlace(size_t inputIndex) {
    launch().outputs.push_back(launch().inputs[inputIndex]);
    return *this;
  }

  LaunchCase &param(Param p) {
    params.push_back(std::move(p));
    return *this;
  }

  const Param *findParam(const std::string &name) const {
    for (const Param &p : params)
      if (p.name == name)
        return &p;
    return nullptr;
  }

  /// States the params of an element kernel's row the case left out, at the
  /// row's defaults (as the capture API and zcc.ops do).
  LaunchCase &rowParams() {
    std::optional<KernelId> id = findKernel(kernel);
    if (const ElementRow *row = id ? elementRow(*id) : nullptr)
      for (int k = 0; k < row->paramCount; ++k)
        if (!findParam(row->paramNames[k]))
          param(floatParam(row->paramNames[k], row->paramDefaults[k]));
    return *this;
  }

  /// States the optimizer parameters the case left out, as zcc always
  /// states them (PyTorch's defaults; the runtime has none of its own):
  /// sgd momentum 0 and weight_decay 0; adamw betas 0.9, 0.999, eps 1e-8,
  /// weight_decay 0.01; neither clipping (max_grad_norm 0).
  LaunchCase &stateOptimizerParams() {
    std::vector<std::pair<const char *, double>> stated;
    if (kernel == "sgd")
      stated = {
          {"momentum", 0.0}, {"weight_decay", 0.0}, {"max_grad_norm", 0.0}};
    else if (kernel == "adamw")
      stated = {{"beta1", 0.9},
                {"beta2", 0.999},
                {"eps", 1e-8},
                {"weight_decay", 0.01},
                {"max_grad_norm", 0.0}};
    for (const auto &[name, value] : stated)
      if (!findParam(name))
        param(floatParam(name, value));
    return *this;
  }

  /// The entry with its launch decoded from `kernel` and `params`, as the
  /// loader decodes a plan file's.
  Status decoded(Entry &out) const {
    out = entry;
    Status status = decodeLaunch(kernel, params, out.launches[0]);
    if (!status.isOk())
      return makeError(StatusCode::InvalidPlan, "launch 0 (", kernel,
                       "): ", status.message());
    return Status::ok();
  }

  /// Decodes and checks the launch, as the loader does.
  Status check() const {
    Entry e;
    ZRT_RETURN_IF_ERROR(decoded(e));
    return checkLaunch(e, 0);
  }

  /// Checks the launch, then runs it in precision T over fresh buffers
  /// sized by the tensor types (outputs start as a sentinel, so an unwritten
  /// element shows). Output buffers are fenced by canary bytes: a kernel that
  /// writes outside them fails the test. Read-only buffers are exactly their
  /// size, so a sanitizer build catches a read past them.
  template <typename T> Status run() {
    Entry e;
    ZRT_RETURN_IF_ERROR(decoded(e));
    ZRT_RETURN_IF_ERROR(checkLaunch(e, 0));
    std::vector<size_t> fences(entry.tensors.size(), 0);
    for (uint32_t t : launch().outputs)
      fences[t] = kCanaryBytes;
    std::vector<std::vector<unsigned char>> storage;
    for (size_t t = 0; t < entry.tensors.size(); ++t) {
      const Tensor &tensor = entry.tensors[t];
      TensorType stored = tensor.type;
      if (tensor.isStrided()) // its buffer: the elements its steps reach
        stored.shape = {static_cast<int64_t>(tensorReachBytes(tensor) /
                                             dtypeBytes(tensor.type.dtype))};
      std::vector<unsigned char> bytes = pack<T>(stored, values[t]);
      std::vector<unsigned char> fenced(bytes.size() + 2 * fences[t], kCanary);
      std::copy(bytes.begin(), bytes.end(), fenced.begin() + fences[t]);
      storage.push_back(std::move(fenced));
    }
    // A buffer per tensor; the workspace and the error record beside.
    e.buffers.clear();
    device::EntryMemory memory;
    for (size_t t = 0; t < e.tensors.size(); ++t) {
      e.tensors[t].buffer = static_cast<uint32_t>(t);
      e.buffers.push_back({Region::Arena, 0, tensorReachBytes(e.tensors[t])});
      memory.buffers.push_back(storage[t].data() + fences[t]);
    }
    // No cuBLAS share: the pinned scratch is the whole workspace.
    std::vector<T> scratch(
        std::max(entryScratchBytes(e), pinnedScratchBytes(e)) / 4 + 1);
    memory.workspace = reinterpret_cast<uint8_t *>(scratch.data());
    memory.workspaceBytes = scratch.size() * sizeof(T);
    memory.pinnedBytes = pinnedScratchBytes(e) / 4 * sizeof(T);
    memory.forGpu = gpuGroups;
    device::DeviceError record{};
    memory.error = &record;
    memory.communicator = communicator;
    std::vector<device::StepOf<T>> steps;
    Status status = device::appendLaunch(e, 0, memory, steps);
    if (status.isOk()) {
      if (isa) {
        device::HostThreads threads(2, *isa);
        status = device::runOnHost<T>(steps.data(), steps.data() + steps.size(),
                                      false, &threads);
      } else {
        status = device::runOnHost<T>(steps.data(), steps.data() + steps.size(),
                                      gpuGroups);
      }
      if (record.flag)
        status = makeError(StatusCode::ExecutionError,
                           device::describeDataError(e, record));
    }
    for (size_t t = 0; t < storage.size(); ++t) {
      const std::vector<unsigned char> &fenced = storage[t];
      size_t end = fenced.size() - fences[t];
      for (size_t b = 0; b < fences[t]; ++b)
        if (fenced[b] != kCanary || fenced[end + b] != kCanary) {
          ADD_FAILURE() << kernel << " wrote outside tensor " << t
                        << " (" << typeString(entry.tensors[t].type) << ")";
          break;
        }
    }
    results.clear();
    for (uint32_t t : launch().outputs)
      results.push_back(
          unpack<T>(entry.tensors[t].type,
                    std::vector<unsigned char>(storage[t].begin() + fences[t],
                                               storage[t].end() - fences[t])));
    return status;
  }

  const std::vector<double> &result(size_t i = 0) const { return results[i]; }

  std::string kernel;        // as a plan file names it
  std::vector<Param> params; // as a plan file states them
  Entry entry;
  std::vector<std::vector<double>> values;  // per tensor
  std::vector<std::vector<double>> results; // per output, after run
  /// The rank's communicator for the collectives and shard (null: one rank).
  Communicator *communicator = nullptr;
  /// Set: run on two host threads with these loops; otherwise on the caller
  /// with the best the CPU has.
  std::optional<device::HostIsa> isa;
  /// Group kernels with the GPU's lanes, replayed in its reduction order
  /// (the emulator's), instead of one lane per group.
  bool gpuGroups = false;

private:
  uint32_t addTensor(DType dtype, std::vector<int64_t> shape,
                     std::vector<double> data) {
    Tensor tensor;
    tensor.type.dtype = dtype;
    tensor.type.shape = std::move(shape);
    if (data.empty())
      data.assign(static_cast<size_t>(tensor.type.numElements()), 777.0);
    entry.tensors.push_back(tensor);
    values.push_back(std::move(data));
    return static_cast<uint32_t>(entry.tensors.size() - 1);
  }

  static constexpr size_t kCanaryBytes = 64;
  static constexpr unsigned char kCanary = 0xA5;

  /// The tensor's bytes: `data` converted to E, cut or zero-padded to the
  /// element count (a test may change a shape after giving values).
  template <typename E>
  static void store(std::vector<unsigned char> &bytes, int64_t count,
                    const std::vector<double> &data) {
    bytes.assign(static_cast<size_t>(count) * sizeof(E), 0);
    for (size_t i = 0; i < data.size() && i < static_cast<size_t>(count); ++i) {
      E value = static_cast<E>(data[i]);
      std::memcpy(bytes.data() + i * sizeof(E), &value, sizeof(E));
    }
  }

  template <typename E>
  static std::vector<double> load(const std::vector<unsigned char> &bytes) {
    std::vector<double> data(bytes.size() / sizeof(E));
    for (size_t i = 0; i < data.size(); ++i) {
      E value;
      std::memcpy(&value, bytes.data() + i * sizeof(E), sizeof(E));
      data[i] = static_cast<double>(value);
    }
    return data;
  }

public:
  /// A tensor's values as bytes of its dtype (float tensors as T), and back.
  template <typename T>
  static std::vector<unsigned char> pack(const TensorType &type,
                                         const std::vector<double> &data) {
    std::vector<unsigned char> bytes;
    int64_t count = type.numElements();
    if (type.dtype == DType::F32)
      store<T>(bytes, count, data);
    else if (type.dtype == DType::BF16)
      storeBf16(bytes, count, data);
    else if (type.dtype == DType::I32)
      store<int32_t>(bytes, count, data);
    else if (type.dtype == DType::Bool)
      storeBool(bytes, count, data);
    else
      store<int64_t>(bytes, count, data);
    return bytes;
  }

  template <typename T>
  static std::vector<double> unpack(const TensorType &type,
                                    const std::vector<unsigned char> &bytes) {
    if (type.dtype == DType::F32)
      return load<T>(bytes);
    if (type.dtype == DType::BF16)
      return loadBf16(bytes);
    if (type.dtype == DType::I32)
      return load<int32_t>(bytes);
    if (type.dtype == DType::Bool)
      return load<uint8_t>(bytes);
    return load<int64_t>(bytes);
  }

private:
  /// bool tensors: 1 for a positive value, else 0 (random values make
  /// random masks).
  static void storeBool(std::vector<unsigned char> &bytes, int64_t count,
                        const std::vector<double> &data) {
    bytes.assign(static_cast<size_t>(count), 0);
    for (int64_t i = 0; i < count && i < static_cast<int64_t>(data.size()); ++i)
      bytes[i] = data[i] > 0 ? 1 : 0;
  }

public:
  /// bf16 tensors: values rounded to bf16 (to nearest even) and back.
  static void storeBf16(std::vector<unsigned char> &bytes, int64_t count,
                        const std::vector<double> &data) {
    bytes.assign(static_cast<size_t>(count) * 2, 0);
    for (size_t i = 0; i < data.size() && i < static_cast<size_t>(count); ++i) {
      BFloat16 value = floatToBf16(static_cast<float>(data[i]));
      std::memcpy(bytes.data() + i * 2, &value.bits, 2);
    }
  }
  static std::vector<double> loadBf16(const std::vector<unsigned char> &bytes) {
    std::vector<double> data(bytes.size() / 2);
    for (size_t i = 0; i < data.size(); ++i) {
      BFloat16 value;
      std::memcpy(&value.bits, bytes.data() + i * 2, 2);
      data[i] = bf16ToFloat(value);
    }
    return data;
  }
};

/// attention and attention_grad's shapes: q [B..., S, D] over k [B'...,
/// T, D] and v [B'..., T, Dv] (B' the key heads: B, or fewer for
/// grouped-query).
struct AttentionCase {
  std::vector<int64_t> queries, keys;
  int64_t s, t, d, dv;
};

/// Adds attention and attention_grad cases of operands of `dtype` (the
/// logsumexp f32), with an optional bool mask [B0, 1..., 1, T] and dropout (a
/// step input, its rate and seed); the gradient causal when `gradCausal`.
inline void addAttention(std::vector<LaunchCase> &cases, DType dtype,
                         const AttentionCase &a, bool causal, bool gradCausal,
                         const std::vector<double> *mask, double dropout) {
  auto shape = [](std::vector<int64_t> batch,
                  std::initializer_list<int64_t> tail) {
    batch.insert(batch.end(), tail);
    return batch;
  };
  for (bool grad : {false, true}) {
    cases.emplace_back(grad ? "attention_grad" : "attention");
    LaunchCase &c = cases.back();
    c.typedInput(dtype, shape(a.queries, {a.s, a.d}))
        .typedInput(dtype, shape(a.keys, {a.t, a.d}))
        .typedInput(dtype, shape(a.keys, {a.t, a.dv}));
    if (grad)
      c.typedInput(dtype, shape(a.queries, {a.s, a.dv}))
          .input(shape(a.queries, {a.s}))
          .typedInput(dtype, shape(a.queries, {a.s, a.dv}));
    if (mask) { // [B0, 1..., 1, T]: per entry of the first batch dimension
      std::vector<int64_t> maskShape(a.queries.size() + 2, 1);
      maskShape[0] = a.queries[0];
      maskShape.back() = a.t;
      c.typedInput(DType::Bool, maskShape, *mask);
    }
    if (dropout > 0)
      c.typedInput(DType::I64, {}, {3});
    if (grad)
      c.typedOutput(dtype, shape(a.queries, {a.s, a.d}))
          .typedOutput(dtype, shape(a.keys, {a.t, a.d}))
          .typedOutput(dtype, shape(a.keys, {a.t, a.dv}));
    else
      c.typedOutput(dtype, shape(a.queries, {a.s, a.dv}))
          .output(shape(a.queries, {a.s}));
    c.param(floatParam("scale", 0.5));
    if (grad ? gradCausal : causal)
      c.param(unitParam("causal"));
    if (dropout > 0)
      c.param(floatParam("dropout", dropout)).param(intParam("seed", 7));
  }
}

/// The bf16 kernels (mixed precision): conversions both ways, products of
/// bf16 operands into f32 and bf16 results, plain and transposed, batched,
/// with a shared weight, and larger than the host's 256 x 256 x 512 blocks;
/// element kernels on bf16. Run in f32 only (f64 sessions refuse bf16).
inline std::vector<LaunchCase> bf16Kernels() {
  std::vector<LaunchCase> cases;
  auto add = [&](const char *kernel) -> LaunchCase & {
    cases.emplace_back(kernel);
    return cases.back();
  };
  const DType bf = DType::BF16, f32 = DType::F32;
  add("convert").input({3, 5}).typedOutput(bf, {3, 5});
  add("convert").typedInput(bf, {3, 5}).output({3, 5});
  // Rounding edges: halfway cases (ties to even), overflow, NaN, tiny.
  add("convert")
      .input({8},
             {1.0 + 1.0 / 256, 1.0 + 3.0 / 256, -(1.0 + 1.0 / 128 + 1.0 / 256),
              3.4e38, -3.4e38, std::nan(""), 1e-40, 0.0})
      .typedOutput(bf, {8});
  for (DType out : {f32, bf}) {
    add("matmul")
        .typedInput(bf, {2, 3, 4})
        .typedInput(bf, {4, 5})
        .typedOutput(out, {2, 3, 5});
    add("matmul")
        .typedInput(bf, {3, 7, 4})
        .typedInput(bf, {3, 6, 4})
        .typedOutput(out, {3, 7, 6})
        .param(unitParam("transpose_rhs"));
    add("matmul")
        .typedInput(bf, {2, 4, 7})
        .typedInput(bf, {2, 4, 6})
        .typedOutput(out, {2, 7, 6})
        .param(unitParam("transpose_lhs"));
    add("matmul")
        .typedInput(bf, {300, 600})
        .typedInput(bf, {270, 600})
        .typedOutput(out, {300, 270})
        .param(unitParam("transpose_rhs"));
  }
  add("matmul")
      .typedInput(bf, {520, 40})
      .typedInput(bf, {520, 33})
      .typedOutput(f32, {40, 33})
      .param(unitParam("transpose_lhs"));
  add("add")
      .typedInput(bf, {4, 5})
      .typedInput(bf, {4, 5})
      .typedOutput(bf, {4, 5});
  add("gelu").typedInput(bf, {4, 5}).typedOutput(bf, {4, 5});
  add("scale")
      .typedInput(bf, {2, 3})
      .typedOutput(bf, {2, 3})
      .param(floatParam("factor", 3));
  // What bf16 activations pass through: moves (2-byte elements), dropout,
  // bias-gradient sums, the loss on bf16 logits, zeros.
  add("transpose")
      .typedInput(bf, {2, 3, 5})
      .typedOutput(bf, {5, 2, 3})
      .param(intsParam("permutation", {2, 0, 1}));
  add("broadcast_in_dim")
      .typedInput(bf, {3})
      .typedOutput(bf, {4, 3})
      .param(intsParam("broadcast_dimensions", {1}));
  add("slice")
      .typedInput(bf, {4, 5})
      .typedOutput(bf, {2, 2})
      .param(intsParam("start_indices", {1, 0}))
      .param(intsParam("limit_indices", {4, 5}))
      .param(intsParam("strides", {2, 3}));
  add("concat")
      .typedInput(bf, {2, 2})
      .typedInput(bf, {2, 1})
      .typedOutput(bf, {2, 3})
      .param(intParam("dimension", 1));
  add("copy").typedInput(bf, {7}).typedOutput(bf, {7});
  add("slice_grad")
      .typedInput(bf, {2, 2})
      .typedOutput(bf, {4, 5})
      .param(intsParam("start_indices", {1, 0}))
      .param(intsParam("limit_indices", {4, 5}))
      .param(intsParam("strides", {2, 3}));
  add("constant").typedOutput(bf, {3}).param(floatParam("value", 1.0 / 3));
  add("dropout")
      .typedInput(bf, {10})
      .typedInput(DType::I64, {}, {3})
      .typedOutput(bf, {10})
      .param(floatParam("rate", 0.5))
      .param(intParam("seed", 1));
  // A bias gradient's rows (the host's column blocks, more than one) and a
  // general reduction.
  add("sum")
      .typedInput(bf, {70, 300})
      .typedOutput(bf, {300})
      .param(intsParam("dims", {0}));
  add("sum")
      .typedInput(bf, {2, 3, 4})
      .typedOutput(bf, {3})
      .param(intsParam("dims", {0, 2}));
  add("sum") // a GPU's column sum in 6 chunks of 35 rows
      .typedInput(bf, {3, 70, 40})
      .typedOutput(bf, {40})
      .param(intsParam("dims", {0, 1}));
  add("softmax_cross_entropy")
      .typedInput(bf, {3, 40})
      .typedInput(DType::I64, {3}, {3, 0, 39})
      .output({});
  add("softmax_cross_entropy_grad")
      .typedInput(bf, {3, 40})
      .typedInput(DType::I64, {3}, {3, 0, 39})
      .input({}, {1})
      .typedOutput(bf, {3, 40});
  add("softmax_cross_entropy_fused") // the gradient over the logits
      .typedInput(bf, {3, 40})
      .typedInput(DType::I64, {3}, {3, 0, 39})
      .input({}, {1})
      .output({})
      .outputInPlace(0);
  // Normalizations of bf16 rows (f32 statistics and affine parameters);
  // rows wide enough for several lanes of a GPU group.
  add("layer_norm")
      .typedInput(bf, {3, 300})
      .input({300})
      .input({300})
      .typedOutput(bf, {3, 300})
      .param(floatParam("epsilon", 1e-5));
  add("rms_norm")
      .typedInput(bf, {3, 300})
      .input({300})
      .typedOutput(bf, {3, 300})
      .param(floatParam("epsilon", 1e-6));
  add("layer_norm_grad")
      .typedInput(bf, {5, 300})
      .input({300})
      .typedInput(bf, {5, 300})
      .typedOutput(bf, {5, 300})
      .output({300})
      .output({300})
      .param(floatParam("epsilon", 1e-5));
  add("rms_norm_grad")
      .typedInput(bf, {5, 300})
      .input({300})
      .typedInput(bf, {5, 300})
      .typedOutput(bf, {5, 300})
      .output({300})
      .param(floatParam("epsilon", 1e-6));
  // Enough rows for a GPU's column sums in chunks (3 of 34 rows).
  add("layer_norm_grad")
      .typedInput(bf, {100, 64})
      .input({64})
      .typedInput(bf, {100, 64})
      .typedOutput(bf, {100, 64})
      .output({64})
      .output({64})
      .param(floatParam("epsilon", 1e-5));
  // Attention over bf16 operands, in two blocks of query rows (the key and
  // value gradients summed over them): causal; a padding mask (the second
  // entry's last 30 keys hidden) with the gradient not causal; grouped-
  // query; dropout.
  std::vector<double> padding(2 * 90, 1.0), shortPadding(2 * 70, 1.0);
  std::fill(padding.begin() + 150, padding.end(), 0.0);
  std::fill(shortPadding.begin() + 120, shortPadding.end(), 0.0);
  addAttention(cases, bf, AttentionCase{{2, 2}, {2, 2}, 70, 90, 16, 8}, true,
               true, nullptr, 0.0);
  addAttention(cases, bf, AttentionCase{{2, 2}, {2, 2}, 70, 90, 16, 8}, false,
               false, &padding, 0.0);
  addAttention(cases, bf, AttentionCase{{2, 4}, {2, 2}, 70, 70, 8, 8}, true,
               true, nullptr, 0.0);
  addAttention(cases, bf, AttentionCase{{2, 2}, {2, 2}, 70, 70, 8, 8}, true,
               true, &shortPadding, 0.3);
  return cases;
}

inline void expectNear(const std::vector<double> &actual,
                       const std::vector<double> &expected, double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isinf(expected[i]) || std::isnan(expected[i])) {
      EXPECT_EQ(std::isnan(actual[i]), std::isnan(expected[i])) << "at " << i;
      if (std::isinf(expected[i])) {
        EXPECT_EQ(actual[i], expected[i]) << "at " << i;
      }
      continue;
    }
    EXPECT_NEAR(actual[i], expected[i],
                tolerance * std::max(1.0, std::fabs(expected[i])))
        << "at " << i;
  }
}

/// Expects the launch to be rejected with a message containing `text`.
inline void expectRejected(const LaunchCase &c, const std::string &text) {
  Status status = c.check();
  EXPECT_EQ(status.code(), StatusCode::InvalidPlan) << status.toString();
  EXPECT_CONTAINS(status.message(), text);
  EXPECT_CONTAINS(status.message(), "launch 0 (" + c.kernel + "): ");
}

inline void expectAccepted(const LaunchCase &c) {
  Status status = c.check();
  EXPECT_TRUE(status.isOk()) << status.toString();
}

/// Row `row`'s operands and result for values of `dtype` (f32 or bf16):
/// bool conditions and comparison results, random data, the row's params.
inline LaunchCase &elementRowCase(LaunchCase &c, int row, DType dtype,
                                  const std::vector<int64_t> &shape,
                                  uint64_t seed = 1) {
  const ElementArity arity = kElementRows[row].arity;
  const int64_t n = elementCount(shape);
  for (int i = 0; i < elementOperandCount(arity); ++i) {
    bool condition = arity == ElementArity::BoolUnary ||
                     arity == ElementArity::BoolBinary ||
                     (i == 0 && (arity == ElementArity::Mask ||
                                 arity == ElementArity::Select));
    c.typedInput(condition ? DType::Bool : dtype, shape,
                 randomValues(n, seed + 31 * i));
  }
  c.typedOutput(elementResultIsBool(arity) ? DType::Bool : dtype, shape);
  return c.rowParams();
}

/// One valid launch of every kernel.
inline std::vector<LaunchCase> everyKernel() {
  std::vector<LaunchCase> cases;
  auto add = [&](const char *kernel) -> LaunchCase & {
    cases.emplace_back(kernel);
    return cases.back();
  };
  // Every row of ElementKernels.h.
  for (int row = 0; row < kElementRowCount; ++row)
    elementRowCase(add(kElementRows[row].name), row, DType::F32, {2, 3});
  add("constant").output({2, 2}).param(floatParam("value", 1.5));
  add("causal_mask").output({3, 3});
  add("broadcast_in_dim")
      .input({3})
      .output({2, 3})
      .param(intsParam("broadcast_dimensions", {1}));
  add("transpose")
      .input({2, 3, 4})
      .output({4, 2, 3})
      .param(intsParam("permutation", {2, 0, 1}));
  add("slice")
      .input({4, 5})
      .output({2, 2})
      .param(intsParam("start_indices", {1, 0}))
      .param(intsParam("limit_indices", {4, 5}))
      .param(intsParam("strides", {2, 3}));
  add("concat").input({2, 2}).input({2, 1}).output({2, 3}).param(
      intParam("dimension", 1));
  for (const char *name : {"sum", "mean", "max"})
    add(name).input({2, 3, 4}).output({3}).param(intsParam("dims", {0, 2}));
  add("matmul").input({2, 3, 4}).input({4, 5}).output({2, 3, 5});
  auto attention = [&](std::vector<int64_t> queries, std::vector<int64_t> keys,
                       int64_t t, bool causal, bool gradCausal,
                       const std::vector<double> *mask, double dropout) {
    addAttention(cases, DType::F32, AttentionCase{queries, keys, 5, t, 3, 2},
                 causal, gradCausal, mask, dropout);
  };
  attention({2}, {2}, 4, true, false, nullptr, 0.0);
  // A padding mask per batch entry, broadcast over queries: with causal,
  // the second entry's first query sees no key.
  const std::vector<double> padding = {1, 1, 1, 0, 0, 1, 1, 1};
  attention({2}, {2}, 4, true, true, &padding, 0.0);
  // Grouped-query: 4 query heads on 2 key and value heads.
  attention({2, 4}, {2, 2}, 6, true, true, nullptr, 0.0);
  // Dropout of the probabilities, with a padding mask.
  attention({2}, {2}, 4, true, true, &padding, 0.4);
  // 70 causal queries: two blocks of query rows (64, then 6 seeing 70
  // keys), which on the GPU bf16 failed at (2026-11-28, reference kernels).
  addAttention(cases, DType::F32, AttentionCase{{2, 2}, {2, 2}, 70, 70, 8, 8},
               true, true, nullptr, 0.0);
  // Convolutions: padded and strided; grouped and dilated; depthwise.
  struct Conv {
    std::vector<int64_t> x, w, y, stride, padding, dilation;
    int64_t groups;
  };
  for (const Conv &c : {Conv{{2, 3, 6, 5}, {4, 3, 3, 3}, {2, 4, 3, 3},
                             {2, 2}, {1, 1}, {1, 1}, 1},
                        Conv{{1, 4, 7, 7}, {6, 2, 2, 3}, {1, 6, 5, 3},
                             {1, 1}, {0, 0}, {2, 2}, 2},
                        Conv{{2, 3, 5, 5}, {3, 1, 3, 3}, {2, 3, 5, 5},
                             {1, 1}, {1, 1}, {1, 1}, 3}}) {
    auto params = [&](LaunchCase &l) -> LaunchCase & {
      return l.param(intsParam("stride", c.stride))
          .param(intsParam("padding", c.padding))
          .param(intsParam("dilation", c.dilation))
          .param(intParam("groups", c.groups));
    };
    params(add("conv2d").input(c.x).input(c.w).output(c.y));
    params(add("conv2d_input_grad").input(c.x).input(c.w).input(c.y).output(c.x));
    params(add("conv2d_weight_grad").input(c.x).input(c.w).input(c.y).output(c.w));
  }
  // BatchNorm in training: 4 images of 3 channels of 2x3, and [N, C]
  // (BatchNorm1d); statistics given with positive variances.
  const std::vector<double> stats = {0.1, -0.2, 0.3, 0.5, 1.5, 0.8};
  for (std::vector<int64_t> x : {std::vector<int64_t>{4, 3, 2, 3},
                                 std::vector<int64_t>{5, 3}}) {
    add("batch_norm_stats").input(x).output({2, 3});
    add("batch_norm_stats_grad").input(x).input({2, 3}, stats).input({2, 3})
        .output(x);
    add("batch_norm").input(x).input({2, 3}, stats).input({3}).input({3})
        .output(x).param(floatParam("epsilon", 1e-5));
    add("batch_norm_grad").input(x).input({2, 3}, stats).input({3}).input(x)
        .output(x).output({3}).output({3}).param(floatParam("epsilon", 1e-5));
  }
  // Max pooling: ResNet's (3x3, stride 2, padded) and a dilated window.
  for (bool dilated : {false, true}) {
    std::vector<int64_t> y = dilated ? std::vector<int64_t>{2, 3, 3, 2}
                                     : std::vector<int64_t>{2, 3, 3, 3};
    auto params = [&](LaunchCase &l) -> LaunchCase & {
      return l.param(intsParam("kernel_size", {3, dilated ? 2 : 3}))
          .param(intsParam("stride", {2, 2}))
          .param(intsParam("padding", {1, dilated ? 0 : 1}))
          .param(intsParam("dilation", {1, dilated ? 2 : 1}));
    };
    params(add("max_pool2d").input({2, 3, 5, 6}).output(y));
    params(add("max_pool2d_grad").input({2, 3, 5, 6}).input(y).output(
        {2, 3, 5, 6}));
  }
  // SqueezeNet's: ceil_mode, a last row of windows hanging over the end
  // (height 6: 3 windows where the floor gives 2; width 7: 3 either way).
  for (bool grad : {false, true}) {
    LaunchCase &l = add(grad ? "max_pool2d_grad" : "max_pool2d")
                        .input({2, 3, 6, 7});
    if (grad)
      l.input({2, 3, 3, 3});
    l.output(grad ? std::vector<int64_t>{2, 3, 6, 7}
                  : std::vector<int64_t>{2, 3, 3, 3})
        .param(intsParam("kernel_size", {3, 3}))
        .param(intsParam("stride", {2, 2}))
        .param(intsParam("padding", {0, 0}))
        .param(intsParam("dilation", {1, 1}))
        .param(unitParam("ceil_mode"));
  }
  // Cross-entropy leaving out the rows labelled ignore_index.
  add("softmax_cross_entropy")
      .input({3, 4})
      .typedInput(DType::I64, {3}, {2, -100, 0})
      .output({})
      .param(intParam("ignore_index", -100));
  add("softmax_cross_entropy_grad")
      .input({3, 4})
      .typedInput(DType::I64, {3}, {2, -100, 0})
      .input({}, {1})
      .output({3, 4})
      .param(intParam("ignore_index", -100));
  for (const char *name : {"softmax", "log_softmax"})
    add(name).input({2, 3}).output({2, 3}).param(intParam("axis", 1));
  add("layer_norm")
      .input({2, 4})
      .input({4})
      .input({4})
      .output({2, 4})
      .param(floatParam("epsilon", 1e-5));
  add("rms_norm")
      .input({2, 4})
      .input({4})
      .output({2, 4})
      .param(floatParam("epsilon", 1e-5));
  add("embedding")
      .input({5, 3})
      .typedInput(DType::I32, {2, 2}, {4, 0, 1, 2})
      .output({2, 2, 3});
  add("softmax_cross_entropy")
      .input({3, 4})
      .typedInput(DType::I64, {3}, {3, 0, 1})
      .output({});
  add("mse").input({2, 3}).input({2, 3}).output({});
  add("dropout")
      .input({6})
      .typedInput(DType::I64, {}, {3})
      .output({6})
      .param(floatParam("rate", 0.5))
      .param(intParam("seed", 1));
  add("scale").input({2, 3}).output({2, 3}).param(floatParam("factor", 3));
  for (const char *name : {"softmax_grad", "log_softmax_grad"})
    add(name).input({2, 3}).input({2, 3}).output({2, 3}).param(
        intParam("axis", 0));
  add("max_grad")
      .input({2, 3})
      .input({2})
      .output({2, 3})
      .param(intsParam("dims", {1}));
  add("slice_grad")
      .input({2, 2})
      .output({4, 5})
      .param(intsParam("start_indices", {1, 0}))
      .param(intsParam("limit_indices", {4, 5}))
      .param(intsParam("strides", {2, 3}));
  add("layer_norm_grad")
      .input({2, 4})
      .input({4})
      .input({2, 4})
      .output({2, 4})
      .output({4})
      .output({4})
      .param(floatParam("epsilon", 1e-5));
  add("rms_norm_grad")
      .input({2, 4})
      .input({4})
      .input({2, 4})
      .output({2, 4})
      .output({4})
      .param(floatParam("epsilon", 1e-5));
  add("embedding_grad")
      .typedInput(DType::I32, {2, 2}, {4, 0, 4, 2})
      .input({2, 2, 3})
      .output({5, 3});
  add("softmax_cross_entropy_grad")
      .input({3, 4})
      .typedInput(DType::I64, {3}, {3, 0, 1})
      .input({}, {1})
      .output({3, 4});
  add("softmax_cross_entropy_fused")
      .input({3, 4})
      .typedInput(DType::I64, {3}, {3, 0, 1})
      .input({}, {0.5})
      .output({})
      .output({3, 4});
  // Ignored rows and smoothed labels, the gradient over the logits.
  add("softmax_cross_entropy_fused")
      .input({3, 5})
      .typedInput(DType::I64, {3}, {4, -100, 1})
      .input({}, {1})
      .output({})
      .outputInPlace(0)
      .param(intParam("ignore_index", -100))
      .param(floatParam("label_smoothing", 0.1));
  add("mse_grad").input({2, 3}).input({2, 3}).input({}, {1}).output({2, 3});
  // Clipped by the global norm (sqrt 16: a factor of about 1/4).
  add("sgd")
      .input({4})
      .input({4})
      .input({4})
      .input({}, {16})
      .outputInPlace(0)
      .outputInPlace(2)
      .param(floatParam("lr", 0.1))
      .param(floatParam("momentum", 0.9))
      .param(unitParam("nesterov"))
      .param(floatParam("max_grad_norm", 1.0))
      .stateOptimizerParams();
  add("adamw")
      .input({4})
      .input({4})
      .input({4})
      .input({4}, {0.1, 0.2, 0.3, 0.4})
      .typedInput(DType::I64, {}, {0})
      .outputInPlace(0)
      .outputInPlace(2)
      .outputInPlace(3)
      .input({}, {0.5}) // a learning-rate schedule's factor
      .param(floatParam("lr", 1e-3))
      .stateOptimizerParams();
  add("sum_squares").input({2, 3}).input({}, {0.5}).output({});
  add("lr_schedule")
      .typedInput(DType::I64, {}, {7})
      .output({})
      .param(intParam("warmup_steps", 2))
      .param(intParam("decay_steps", 20))
      .param(floatParam("min_factor", 0.1))
      .param(unitParam("cosine"));
  // One part reduced in place, one copied in first (one rank: the mean is
  // the value itself).
  add("all_reduce")
      .input({2, 3})
      .input({4})
      .outputInPlace(0)
      .output({4})
      .param(unitParam("mean"));
  // ZeRO-1's kernels on one rank: the shard is the whole.
  add("reduce_scatter")
      .input({6})
      .output({6})
      .param(intParam("ranks", 1))
      .param(unitParam("mean"));
  add("all_gather").input({6}).output({6}).param(intParam("ranks", 1));
  add("shard").input({6}).output({6}).param(intParam("ranks", 1));
  add("pack").input({2, 3}).input({4}).outputInPlace(0).output({4});
  add("copy").input({2, 3}).output({6});
  add("convert").input({2, 3}).typedOutput(DType::BF16, {2, 3});
  add("cumsum").input({2, 3, 4}).output({2, 3, 4}).param(intParam("dim", 1));
  add("cumsum")
      .input({3, 5})
      .output({3, 5})
      .param(intParam("dim", -1))
      .param(unitParam("reverse"));
  // Rotary embeddings of heads read where they lie ([2, 3, 4, 16] stored
  // as [2, 4, 3, 16]: a projection's), cos and sin repeated over the heads;
  // halves of 8 (runs).
  add("rotary")
      .stridedInput({2, 3, 4, 16}, {192, 16, 48, 1}, randomValues(384, 31))
      .stridedInput({2, 3, 4, 16}, {64, 0, 16, 1}, randomValues(128, 32))
      .stridedInput({2, 3, 4, 16}, {64, 0, 16, 1}, randomValues(128, 33))
      .output({2, 3, 4, 16});
  // Under mixed precision: bf16 heads with f32 tables (rounded to bf16 as
  // they are read), or with bf16 ones.
  add("rotary")
      .typedInput(DType::BF16, {3, 16})
      .input({3, 16})
      .input({3, 16})
      .typedOutput(DType::BF16, {3, 16});
  add("rotary")
      .typedInput(DType::BF16, {2, 2, 6})
      .typedInput(DType::BF16, {2, 2, 6})
      .typedInput(DType::BF16, {2, 2, 6})
      .typedOutput(DType::BF16, {2, 2, 6})
      .param(unitParam("transposed"));
  // The transposed map (the gradient's) on halves of 3, element by element.
  add("rotary")
      .input({5, 6})
      .input({5, 6})
      .input({5, 6})
      .output({5, 6})
      .param(unitParam("transposed"));
  // (clamp(gelu(x + bias), -0.5, 0.75) - y) * 2 and gelu's result: a
  // strided operand (the bias), numbers, a second output.
  add("fused")
      .input({3, 4})
      .stridedInput({3, 4}, {0, 1}, randomValues(4, 5))
      .input({3, 4})
      .output({3, 4})
      .output({3, 4})
      .param(namesParam("ops", {"add", "gelu", "clamp", "sub", "scale"}))
      .param(intsParam("args", {0, 1, 3, 4, 5, 2, 6}))
      .param(floatsParam("numbers", {-0.5, 0.75, 2.0}))
      .param(intsParam("outputs", {7, 4}))
      .param(intsParam("seeds", {}));
  // Residual dropout: x + dropout(h + bias), the step counter last.
  add("fused")
      .input({3, 5})
      .stridedInput({3, 5}, {0, 1}, randomValues(5, 6))
      .input({3, 5})
      .typedInput(DType::I64, {}, {3})
      .output({3, 5})
      .param(namesParam("ops", {"add", "dropout", "add"}))
      .param(intsParam("args", {0, 1, 3, 2, 4}))
      .param(floatsParam("numbers", {0.25}))
      .param(intsParam("outputs", {5}))
      .param(intsParam("seeds", {9}));
  return cases;
}

} // namespace zcc::runtime::testing

#endif // ZCC_TEST_UNIT_RUNTIME_LAUNCHCASE_H
