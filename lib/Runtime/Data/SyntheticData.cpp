//===- SyntheticData.cpp - learnable synthetic batches
//---------------------===//

#include "zcc/Runtime/Data/SyntheticData.h"

#include "zcc/Runtime/Kernels/Philox.h"

#include <cmath>

using namespace zcc::runtime;

namespace {

// Streams keep the draws of different purposes independent.
enum Stream : uint64_t {
  kPrototypes = 1,
  kLabels,
  kNoise,
  kBigram,
  kTokens,
  kTeacher,
  kOthers
};

PhiloxBlock draw(uint64_t seed, Stream stream, uint64_t a, uint64_t b) {
  return philox4x32_10(
      philoxCounter(a, b),
      philoxKeyFromSeed(seed * 0x9E3779B97F4A7C15ull + stream));
}

double normal(uint64_t seed, Stream stream, uint64_t a, uint64_t b) {
  PhiloxBlock w = draw(seed, stream, a, b);
  return std::sqrt(-2.0 * std::log(uniformOpenFromWord(w.words[0]))) *
         std::cos(6.283185307179586 * uniformFromWord(w.words[1]));
}

int64_t below(uint64_t seed, Stream stream, uint64_t a, uint64_t b, int64_t n) {
  PhiloxBlock w = draw(seed, stream, a, b);
  uint64_t bits = (static_cast<uint64_t>(w.words[0]) << 32) | w.words[1];
  return static_cast<int64_t>(bits % static_cast<uint64_t>(n));
}

void setFloat(void *data, bool wide, int64_t i, double v) {
  if (wide)
    static_cast<double *>(data)[i] = static_cast<double>(static_cast<float>(v));
  else
    static_cast<float *>(data)[i] = static_cast<float>(v);
}

double getFloat(const void *data, bool wide, int64_t i) {
  return wide ? static_cast<const double *>(data)[i]
              : static_cast<const float *>(data)[i];
}

void setInt(void *data, DType dtype, int64_t i, int64_t v) {
  if (dtype == DType::I64)
    static_cast<int64_t *>(data)[i] = v;
  else
    static_cast<int32_t *>(data)[i] = static_cast<int32_t>(v);
}

} // namespace

Status SyntheticTask::create(const Session &session, int entry, uint64_t seed,
                             std::unique_ptr<SyntheticTask> &out) {
  const Plan &plan = session.plan();
  if (entry < 0 || entry >= static_cast<int>(plan.entries.size()))
    return makeError(StatusCode::InvalidArgument, "no entry ", entry);
  const Entry &e = plan.entries[entry];
  std::unique_ptr<SyntheticTask> task(new SyntheticTask());
  task->entry = entry;
  task->seed = seed;

  // The named input tensor whose buffer a launch operand uses (operands
  // may be views of it).
  auto inputOf = [&](uint32_t t) -> int {
    uint32_t buffer = e.tensors[t].buffer;
    if (e.buffers[buffer].region != Region::Input)
      return -1;
    for (size_t i = 0; i < e.tensors.size(); ++i)
      if (e.tensors[i].buffer == buffer && !e.tensors[i].name.empty())
        return static_cast<int>(i);
    return -1;
  };
  std::vector<int64_t> range(e.tensors.size(), 0);
  int labelTensor = -1, tokenTensor = -1, targetTensor = -1;
  for (const Launch &launch : e.launches) {
    if (launch.kernel == KernelId::SoftmaxCrossEntropy ||
        launch.kernel == KernelId::SoftmaxCrossEntropyGrad ||
        launch.kernel == KernelId::SoftmaxCrossEntropyFused) {
      int t = inputOf(launch.inputs[1]);
      if (t >= 0) {
        labelTensor = t;
        range[t] = e.tensors[launch.inputs[0]].type.shape.back();
      }
    } else if (launch.kernel == KernelId::Embedding) {
      int t = inputOf(launch.inputs[1]);
      if (t >= 0) {
        tokenTensor = t;
        range[t] = e.tensors[launch.inputs[0]].type.shape[0];
      }
    } else if (launch.kernel == KernelId::Mse) {
      int t = inputOf(launch.inputs[1]);
      if (t >= 0)
        targetTensor = t;
    }
  }
  auto info = [&](int t) {
    return TensorInfo{entry, t, &e.tensors[t],
                      e.buffers[e.tensors[t].buffer].region};
  };
  // A float input with one row of `width` features per element of `n`.
  auto featuresFor = [&](int64_t n, int exclude) -> int {
    for (size_t i = 0; i < e.tensors.size(); ++i) {
      const Tensor &t = e.tensors[i];
      if (static_cast<int>(i) == exclude || t.role != TensorRole::Input ||
          t.type.dtype != DType::F32 || t.type.rank() < 1 ||
          e.buffers[t.buffer].region != Region::Input)
        continue;
      int64_t width = t.type.shape.back();
      if (width > 0 && t.type.numElements() == n * width)
        return static_cast<int>(i);
    }
    return -1;
  };

  std::vector<int> used;
  if (labelTensor >= 0 && tokenTensor >= 0 &&
      e.tensors[labelTensor].type.shape == e.tensors[tokenTensor].type.shape) {
    task->taskKind = Kind::Bigram;
    task->labels = info(labelTensor);
    task->tokens = info(tokenTensor);
    task->classes = range[labelTensor];
    task->vocabulary = range[tokenTensor];
    task->bigram.resize(static_cast<size_t>(task->vocabulary));
    for (int64_t v = 0; v < task->vocabulary; ++v)
      task->bigram[v] = static_cast<int32_t>(
          below(seed, kBigram, static_cast<uint64_t>(v), 0, task->classes));
    task->description = "bigram task: label '" + e.tensors[labelTensor].name +
                        "' is a fixed random function of token '" +
                        e.tensors[tokenTensor].name + "' (" +
                        std::to_string(task->vocabulary) + " tokens, " +
                        std::to_string(task->classes) + " classes)";
    used = {labelTensor, tokenTensor};
  } else if (labelTensor >= 0 &&
             featuresFor(e.tensors[labelTensor].type.numElements(), -1) >= 0) {
    int x = featuresFor(e.tensors[labelTensor].type.numElements(), -1);
    task->taskKind = Kind::Mixture;
    task->labels = info(labelTensor);
    task->features = info(x);
    task->classes = range[labelTensor];
    task->rows = e.tensors[labelTensor].type.numElements();
    task->width = e.tensors[x].type.shape.back();
    // Prototypes about 4 noise deviations apart: learnable, not instant.
    double scale = 3.0 / std::sqrt(static_cast<double>(task->width));
    task->prototypes.resize(static_cast<size_t>(task->classes * task->width));
    for (size_t i = 0; i < task->prototypes.size(); ++i)
      task->prototypes[i] =
          static_cast<float>(scale * normal(seed, kPrototypes, i, 0));
    task->description = "Gaussian mixture: '" + e.tensors[x].name +
                        "' rows are one of " + std::to_string(task->classes) +
                        " class prototypes plus unit noise, '" +
                        e.tensors[labelTensor].name + "' the class";
    used = {labelTensor, x};
  } else if (targetTensor >= 0 && e.tensors[targetTensor].type.rank() >= 1 &&
             featuresFor(e.tensors[targetTensor].type.numElements() /
                             std::max<int64_t>(
                                 1, e.tensors[targetTensor].type.shape.back()),
                         targetTensor) >= 0) {
    const TensorType &target = e.tensors[targetTensor].type;
    int64_t outputs = target.shape.back();
    int x = featuresFor(target.numElements() / std::max<int64_t>(1, outputs),
                        targetTensor);
    task->taskKind = Kind::Teacher;
    task->labels = info(targetTensor);
    task->features = info(x);
    task->classes = outputs;
    task->rows = target.numElements() / std::max<int64_t>(1, outputs);
    task->width = e.tensors[x].type.shape.back();
    double scale = 1.0 / std::sqrt(static_cast<double>(task->width));
    task->prototypes.resize(static_cast<size_t>(outputs * task->width));
    for (size_t i = 0; i < task->prototypes.size(); ++i)
      task->prototypes[i] =
          static_cast<float>(scale * normal(seed, kTeacher, i, 0));
    task->description = "linear teacher: '" + e.tensors[targetTensor].name +
                        "' = '" + e.tensors[x].name +
                        "' times a fixed random matrix";
    used = {targetTensor, x};
  } else {
    task->description = "independent random inputs (no learnable task "
                        "recognised: the loss is not expected to fall)";
  }
  for (size_t i = 0; i < e.tensors.size(); ++i) {
    const Tensor &t = e.tensors[i];
    bool fed = t.role == TensorRole::Input || t.role == TensorRole::Label;
    if (!fed || e.buffers[t.buffer].region != Region::Input)
      continue;
    bool isUsed = false;
    for (int u : used)
      isUsed |= u == static_cast<int>(i);
    if (isUsed)
      continue;
    task->others.push_back(info(static_cast<int>(i)));
    task->otherRanges.push_back(
        t.type.dtype == DType::F32 ? 0 : std::max<int64_t>(range[i], 2));
  }
  out = std::move(task);
  return Status::ok();
}

void SyntheticTask::fill(Session &session, int64_t step) const {
  bool wide = session.options().precision == Precision::F64;
  uint64_t s = static_cast<uint64_t>(step);
  switch (taskKind) {
  case Kind::Mixture: {
    void *y = session.data(labels);
    void *x = session.data(features);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t label = below(seed, kLabels, r, s, classes);
      setInt(y, labels.desc->type.dtype, r, label);
      for (int64_t j = 0; j < width; ++j)
        setFloat(x, wide, r * width + j,
                 prototypes[label * width + j] +
                     normal(seed, kNoise, r * width + j, s));
    }
    break;
  }
  case Kind::Bigram: {
    void *t = session.data(tokens);
    void *y = session.data(labels);
    int64_t n = tokens.desc->type.numElements();
    for (int64_t i = 0; i < n; ++i) {
      int64_t token = below(seed, kTokens, i, s, vocabulary);
      setInt(t, tokens.desc->type.dtype, i, token);
      setInt(y, labels.desc->type.dtype, i, bigram[token]);
    }
    break;
  }
  case Kind::Teacher: {
    void *x = session.data(features);
    void *y = session.data(labels);
    for (int64_t i = 0; i < rows * width; ++i)
      setFloat(x, wide, i, normal(seed, kNoise, i, s));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < classes; ++k) {
        double sum = 0;
        for (int64_t j = 0; j < width; ++j)
          sum += prototypes[k * width + j] * getFloat(x, wide, r * width + j);
        setFloat(y, wide, r * classes + k, sum);
      }
    break;
  }
  case Kind::Random:
    break;
  }
  for (size_t o = 0; o < others.size(); ++o) {
    const TensorInfo &t = others[o];
    void *data = session.data(t);
    int64_t n = t.desc->type.numElements();
    for (int64_t i = 0; i < n; ++i) {
      if (otherRanges[o] == 0)
        setFloat(data, wide, i, normal(seed, kOthers, i, s * 64 + o));
      else
        setInt(data, t.desc->type.dtype, i,
               below(seed, kOthers, i, s * 64 + o, otherRanges[o]));
    }
  }
}
