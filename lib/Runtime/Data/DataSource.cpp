//===- DataSource.cpp - synthetic and .npz batches ------------------------===//

#include "zcc/Runtime/Data/DataSource.h"

#include "zcc/Runtime/IO/HostTensor.h"
#include "zcc/Runtime/IO/Npz.h"
#include "zcc/Runtime/Data/SyntheticData.h"
#include "zcc/Runtime/Data/TokenData.h"

#include <algorithm>
#include <cstring>

using namespace zcc::runtime;

namespace {

class SyntheticSource : public DataSource {
public:
  SyntheticSource(std::unique_ptr<SyntheticTask> task, int64_t firstBatch)
      : task(std::move(task)), firstBatch(firstBatch) {}
  void fill(Session &session, int64_t batch) const override {
    task->fill(session, firstBatch + batch);
  }
  std::string describe() const override {
    return "synthetic data: " + task->describe();
  }
  int64_t batches() const override { return 0; }

private:
  std::unique_ptr<SyntheticTask> task;
  int64_t firstBatch;
};

/// One input fed from one array of the file.
struct Feed {
  TensorInfo input;
  HostTensor array;
  int64_t rowsPerBatch = 0; // rows of the array one batch takes
  int64_t rowBytes = 0;     // bytes of one row in the file
  int64_t examples = 0;     // rows in the file
};

class NpzSource : public DataSource {
public:
  NpzSource(std::string path, std::vector<Feed> feeds)
      : path(std::move(path)), feeds(std::move(feeds)) {}

  void fill(Session &session, int64_t batch) const override {
    bool wide = session.options().precision == Precision::F64;
    for (const Feed &feed : feeds) {
      uint8_t *to = static_cast<uint8_t *>(session.data(feed.input));
      const TensorType &type = feed.input.desc->type;
      int64_t elementsPerRow = feed.rowBytes / dtypeBytes(feed.array.dtype);
      for (int64_t r = 0; r < feed.rowsPerBatch; ++r) {
        int64_t row = (batch * feed.rowsPerBatch + r) % feed.examples;
        const uint8_t *from = feed.array.bytes.data() + row * feed.rowBytes;
        for (int64_t k = 0; k < elementsPerRow; ++k) {
          int64_t i = r * elementsPerRow + k;
          switch (type.dtype) {
          case DType::F32: {
            float v;
            std::memcpy(&v, from + 4 * k, 4);
            if (wide)
              reinterpret_cast<double *>(to)[i] = v;
            else
              reinterpret_cast<float *>(to)[i] = v;
            break;
          }
          case DType::I32:
          case DType::I64: {
            int64_t v;
            if (feed.array.dtype == DType::I64) {
              std::memcpy(&v, from + 8 * k, 8);
            } else {
              int32_t w;
              std::memcpy(&w, from + 4 * k, 4);
              v = w;
            }
            if (type.dtype == DType::I64)
              reinterpret_cast<int64_t *>(to)[i] = v;
            else
              reinterpret_cast<int32_t *>(to)[i] = static_cast<int32_t>(v);
            break;
          }
          }
        }
      }
    }
  }

  std::string describe() const override {
    std::string s = path + ":";
    for (const Feed &feed : feeds)
      s += " " + feed.array.name + " (" + std::to_string(feed.examples) +
           " rows)";
    return s;
  }

  int64_t batches() const override {
    if (feeds.empty())
      return 1;
    const Feed &f = feeds.front(); // every feed has as many (checked)
    return std::max<int64_t>(1, f.examples / f.rowsPerBatch);
  }

private:
  std::string path;
  std::vector<Feed> feeds;
};

Status makeNpzSource(const Session &session, int entry, const std::string &path,
                     std::unique_ptr<DataSource> &out) {
  std::vector<HostTensor> arrays;
  ZRT_RETURN_IF_ERROR(readNpz(path, arrays));
  const Entry &e = session.plan().entries[entry];
  std::vector<Feed> feeds;
  for (size_t t = 0; t < e.tensors.size(); ++t) {
    const Tensor &tensor = e.tensors[t];
    if (tensor.role != TensorRole::Input && tensor.role != TensorRole::Label)
      continue;
    HostTensor *array = nullptr;
    for (HostTensor &a : arrays)
      if (a.name == tensor.name)
        array = &a;
    if (!array)
      return makeError(StatusCode::InvalidArgument, path, ": no array '",
                       tensor.name, "' for the input of that name (",
                       typeString(tensor.type), ")");
    bool floatWanted = tensor.type.dtype == DType::F32;
    bool floatGiven = array->dtype == DType::F32;
    if (floatWanted != floatGiven)
      return makeError(StatusCode::InvalidArgument, path, ": array '",
                       array->name, "' is ", dtypeName(array->dtype),
                       ", the input is ", typeString(tensor.type));
    const std::vector<int64_t> &want = tensor.type.shape;
    const std::vector<int64_t> &have = array->shape;
    Feed feed;
    feed.input = TensorInfo{entry, static_cast<int>(t), &tensor, Region::Input};
    int64_t elementBytes = dtypeBytes(array->dtype);
    if (have == want) { // one batch, used every step
      feed.rowsPerBatch = 1;
      feed.examples = 1;
      feed.rowBytes = tensor.type.numElements() * elementBytes;
    } else if (!want.empty() && have.size() == want.size() &&
               std::equal(want.begin() + 1, want.end(), have.begin() + 1) &&
               have[0] >= want[0] && want[0] > 0) {
      feed.rowsPerBatch = want[0];
      feed.examples = have[0];
      feed.rowBytes = tensor.type.numElements() / want[0] * elementBytes;
    } else {
      return makeError(
          StatusCode::InvalidArgument, path, ": array '", array->name,
          "' has shape ", typeString(TensorType{array->dtype, have}),
          "; the input needs ", typeString(tensor.type),
          " or N rows of its row shape with N >= ", want.empty() ? 1 : want[0]);
    }
    feed.array = std::move(*array); // each array feeds one input
    feeds.push_back(std::move(feed));
  }
  // Every fed array must advance in step with the others.
  for (const Feed &f : feeds)
    if (f.examples != feeds.front().examples ||
        f.rowsPerBatch != feeds.front().rowsPerBatch)
      return makeError(StatusCode::InvalidArgument, path,
                       ": arrays have different numbers of examples (",
                       feeds.front().array.name, ": ", feeds.front().examples,
                       ", ", f.array.name, ": ", f.examples, ")");
  out = std::make_unique<NpzSource>(path, std::move(feeds));
  return Status::ok();
}

} // namespace

Status zcc::runtime::makeDataSource(const Session &session, int entry,
                                    const std::string &spec, uint64_t seed,
                                    std::unique_ptr<DataSource> &out) {
  if (spec == "synthetic") {
    std::unique_ptr<SyntheticTask> task;
    ZRT_RETURN_IF_ERROR(SyntheticTask::create(session, entry, seed, task));
    // An evaluation's batches are the same task's, held out from any run's
    // training batches.
    bool heldOut = session.plan().entries[entry].kind == EntryKind::Eval;
    out = std::make_unique<SyntheticSource>(std::move(task),
                                            heldOut ? int64_t(1) << 40 : 0);
    return Status::ok();
  }
  if (spec.rfind("tokens:", 0) == 0)
    return makeTokenSource(session, entry, spec.substr(7), seed, out);
  return makeNpzSource(session, entry, spec, out);
}

namespace {

/// Rank `rank` of `size`: the job's batch b is the file's (or the task's)
/// batches b*size .. b*size+size-1, one per rank, so N ranks at batch B see
/// exactly the rows one rank at batch N*B would.
class ShardSource final : public DataSource {
public:
  ShardSource(std::unique_ptr<DataSource> inner, int rank, int size)
      : inner(std::move(inner)), rank(rank), size(size) {}
  void fill(Session &session, int64_t batch) const override {
    inner->fill(session, batch * size + rank);
  }
  std::string describe() const override {
    return inner->describe() + "; rank " + std::to_string(rank) + " of " +
           std::to_string(size) + " reads batch b*" + std::to_string(size) +
           "+" + std::to_string(rank);
  }
  int64_t batches() const override { return inner->batches() / size; }

private:
  std::unique_ptr<DataSource> inner;
  int rank, size;
};

} // namespace

std::unique_ptr<DataSource>
zcc::runtime::shardDataSource(std::unique_ptr<DataSource> inner, int rank,
                              int size) {
  if (size <= 1)
    return inner;
  return std::make_unique<ShardSource>(std::move(inner), rank, size);
}
