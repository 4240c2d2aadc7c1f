//===- Module.cpp - zcc._zcc: the Python package's native part ------------===//
//
// Thin: the capture API (zcc/Capture/Graph.h), the in-process compiler
// (zcc/Compiler/Compile.h), sessions and the Trainer. The Python layer
// (python/zcc/*.py) adds tracers, operators and the user's file:line. Every
// failure is raised as zcc.Error with the library's message; nothing aborts.
//
//===----------------------------------------------------------------------===//

#include "zcc/Capture/Graph.h"
#include "zcc/Runtime/Plan/KernelRules.h"
#include "zcc/Compiler/Compile.h"
#include "zcc/Runtime/Plan/PlanFile.h"
#include "zcc/Reports/MemoryTimeline.h"
#include "zcc/Reports/PlanReport.h"
#include "zcc/Runtime/Session/Session.h"
#include "zcc/Runtime/Training/RunCheckpoints.h"
#include "zcc/Runtime/Training/TrainingLoop.h"
#include "zcc/Runtime/Training/Trainer.h"
#ifdef ZCC_HAVE_MPI
#include "zcc/Runtime/Distributed/MpiCommunicator.h"
#endif

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <csignal>
#include <memory>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace nb = nanobind;
using namespace nb::literals;
using zcc::capture::DType;
using zcc::capture::Graph;
using zcc::capture::Init;
using zcc::capture::Tensor;
using zcc::capture::Where;
namespace rt = zcc::runtime;

namespace {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A plan or budget that does not fit its memory (zcc.OutOfMemoryError, a
/// zcc.Error): compile(fit=...) tells a size that does not fit by it.
struct OutOfMemory : Error {
  using Error::Error;
};

void check(const rt::Status &status) {
  if (status.isOk())
    return;
  if (status.code() == rt::StatusCode::OutOfMemory)
    throw OutOfMemory(status.message());
  throw Error(status.message());
}

/// An op's result, or its error raised.
Tensor checked(Graph &g, Tensor t) {
  if (!g.ok())
    throw Error(g.status().message());
  return t;
}

Where at(const std::string &file, int line) { return Where{file, line}; }

std::vector<Tensor> checkedAll(Graph &g, std::vector<Tensor> results) {
  if (!g.ok())
    throw Error(g.status().message());
  return results;
}

/// Python keyword arguments as kernel `name`'s parameters, each converted to
/// the kind the kernel takes it as (a flag is set when true). An unknown
/// kernel passes none: Graph::op names the problem.
std::vector<rt::Param> paramsFromPython(const std::string &name,
                                       nb::dict given) {
  std::vector<rt::Param> params;
  std::optional<rt::KernelId> kernel = rt::findKernel(name);
  if (!kernel)
    return params;
  std::vector<rt::ParamSpec> specs = rt::kernelParamSpecs(*kernel);
  for (auto [key, value] : given) {
    std::string param = nb::cast<std::string>(key);
    const rt::ParamSpec *spec = nullptr;
    std::string names;
    for (const rt::ParamSpec &s : specs) {
      names += (names.empty() ? "" : ", ") + std::string(s.name);
      if (param == s.name)
        spec = &s;
    }
    if (!spec)
      throw Error(name + ": no parameter '" + param + "' (it takes " +
                  (names.empty() ? std::string("none") : names) + ")");
    bool isBool = nb::isinstance<nb::bool_>(value);
    try {
      switch (spec->kind) {
      case rt::ParamKind::Unit:
        if (!isBool)
          throw nb::cast_error();
        if (nb::cast<bool>(value))
          params.push_back(rt::Param::flag(param));
        break;
      case rt::ParamKind::Int:
        if (isBool || !nb::isinstance<nb::int_>(value))
          throw nb::cast_error();
        params.push_back(rt::Param::integer(param, nb::cast<int64_t>(value)));
        break;
      case rt::ParamKind::Float:
        if (isBool)
          throw nb::cast_error();
        params.push_back(rt::Param::real(param, nb::cast<double>(value)));
        break;
      case rt::ParamKind::Ints:
        params.push_back(
            rt::Param::list(param, nb::cast<std::vector<int64_t>>(value)));
        break;
      case rt::ParamKind::Floats: {
        rt::Param p{param, rt::ParamKind::Floats};
        p.floats = nb::cast<std::vector<double>>(value);
        params.push_back(std::move(p));
        break;
      }
      case rt::ParamKind::Names: {
        rt::Param p{param, rt::ParamKind::Names};
        p.names = nb::cast<std::vector<std::string>>(value);
        params.push_back(std::move(p));
        break;
      }
      }
    } catch (const nb::cast_error &) {
      static const char *const kinds[] = {"a bool", "an int", "a float",
                                          "a list of ints", "a list of floats",
                                          "a list of names"};
      throw Error(name + ": parameter '" + param + "' must be " +
                  kinds[static_cast<int>(spec->kind)] + ", got " +
                  nb::cast<std::string>(nb::repr(value)));
    }
  }
  return params;
}

using Dims = std::vector<int64_t>;

//===----------------------------------------------------------------------===//
// Plans and sessions
//===----------------------------------------------------------------------===//

struct PyPlan {
  std::shared_ptr<rt::Plan> plan;
};

nb::dict memoryAnalysis(const rt::Plan &plan) {
  uint64_t lowerBound = 0, noReuse = 0, inputs = 0, outputs = 0;
  for (const rt::Entry &e : plan.entries) {
    lowerBound = std::max(lowerBound, e.lowerBound);
    noReuse = std::max(noReuse, e.noReuseSize);
    inputs = std::max(inputs, e.inputSize);
    outputs = std::max(outputs, e.outputSize);
  }
  nb::dict d;
  d["arena"] = plan.arenaSize;
  d["lower_bound"] = lowerBound;
  d["no_reuse"] = noReuse;
  d["persistent"] = plan.persistentSize;
  d["inputs"] = inputs;
  d["outputs"] = outputs;
  d["constants"] = plan.constantSize;
  // FLOPs of every launch, and of those recomputing forward values.
  double flops = 0, recomputed = 0;
  for (const rt::Entry &e : plan.entries) {
    rt::EntryFlops f = rt::entryFlops(e);
    flops += f.total;
    recomputed += f.recomputed;
  }
  d["flops"] = flops;
  d["recomputed_flops"] = recomputed;
  // Each entry's own, by kind (an optimizer step runs `microbatch` K
  // times).
  nb::dict entries;
  for (const rt::Entry &e : plan.entries) {
    rt::EntryFlops f = rt::entryFlops(e);
    nb::dict one;
    one["arena"] = e.arenaSize;
    one["flops"] = f.total;
    one["recomputed_flops"] = f.recomputed;
    entries[nb::str(rt::entryKindName(e.kind))] = one;
  }
  d["entries"] = entries;
  return d;
}

/// A fit row's result as Python's fit_report writes it.
const char *fitResultName(zcc::FitRow::Result result) {
  return result == zcc::FitRow::AsIs          ? "as is"
         : result == zcc::FitRow::Recomputing ? "recomputing"
                                              : "no";
}

const char *numpyName(rt::DType dtype) {
  switch (dtype) {
  case rt::DType::F32:
    return "float32";
  case rt::DType::I32:
    return "int32";
  case rt::DType::I64:
    return "int64";
  }
  return "?";
}

std::string shapeText(const int64_t *shape, size_t rank) {
  std::string text = "(";
  for (size_t i = 0; i < rank; ++i)
    text += std::to_string(shape[i]) + (rank == 1 || i + 1 < rank ? "," : "") +
            (i + 1 < rank ? " " : "");
  return text + ")";
}

bool sameDType(const nb::dlpack::dtype &given, rt::DType expected) {
  switch (expected) {
  case rt::DType::F32:
    return given == nb::dtype<float>();
  case rt::DType::I32:
    return given == nb::dtype<int32_t>();
  case rt::DType::I64:
    return given == nb::dtype<int64_t>();
  }
  return false;
}

std::string dlpackName(const nb::dlpack::dtype &d) {
  const char *kind = d.code == uint8_t(nb::dlpack::dtype_code::Float) ? "float"
                     : d.code == uint8_t(nb::dlpack::dtype_code::Int) ? "int"
                     : d.code == uint8_t(nb::dlpack::dtype_code::UInt)
                         ? "uint"
                     : d.code == uint8_t(nb::dlpack::dtype_code::Bool)
                         ? "bool"
                         : "other";
  return std::string(kind) + std::to_string(d.bits);
}

using Array = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

/// `values` as a new NumPy array of E that owns its copy.
template <typename E>
nb::object toNumpy(const std::vector<double> &values,
                   const std::vector<size_t> &shape) {
  auto *data = new E[values.size()];
  std::copy(values.begin(), values.end(), data);
  nb::capsule owner(data,
                    [](void *p) noexcept { delete[] static_cast<E *>(p); });
  return nb::cast(
      nb::ndarray<nb::numpy, E>(data, shape.size(), shape.data(), owner));
}

class PySession {
public:
  PySession(const PyPlan &plan, const std::string &device,
            const std::string &mode, const std::string &precision,
            uint64_t seed, int threads, int64_t microbatches,
            double hostMemoryFraction, bool distributed,
            double collectiveTimeout, int deviceOrdinal)
      : plan_(plan.plan), microbatches_(microbatches) {
    rt::SessionOptions options;
    options.deviceOrdinal = deviceOrdinal;
    if (distributed) {
#ifdef ZCC_HAVE_MPI
      // One MPI job per process, shared by every distributed session.
      static std::shared_ptr<rt::MpiCommunicator> job;
      if (!job) {
        rt::MpiCommunicator::Options mpi;
        mpi.timeoutSeconds = collectiveTimeout;
        check(rt::MpiCommunicator::create(mpi, job));
      }
      options.communicator = job;
#else
      (void)collectiveTimeout;
      throw Error("session(distributed=True) needs MPI, and this zcc was "
                  "built without it (install libopenmpi-dev and rebuild)");
#endif
    }
    options.seed = seed;
    options.threads = threads;
    options.hostMemoryFraction = hostMemoryFraction;
    if (!rt::parseDeviceKind(device, options.device))
      throw Error("device must be 'cpu', 'cuda' or 'emulator', got '" +
                  device + "'");
    if (!rt::parseExecutionMode(mode, options.mode))
      throw Error("mode must be 'planned', 'no-reuse' or 'poison', got '" +
                  mode + "'");
    if (!rt::parsePrecision(precision, options.precision))
      throw Error("precision must be 'f32' or 'f64', got '" + precision + "'");
    check(rt::Session::create(plan_, options, session_));
    check(rt::Trainer::create(*session_, microbatches, trainer_));
    feeds_ = feedsOf(trainer_->entry());
  }

  /// (name, shape, numpy dtype, role) of what step() takes, in plan order.
  std::vector<std::tuple<std::string, Dims, std::string, std::string>>
  feeds() const {
    std::vector<std::tuple<std::string, Dims, std::string, std::string>> out;
    for (const rt::Tensor *t : feeds_)
      out.emplace_back(t->name, t->type.shape, numpyName(t->type.dtype),
                       rt::tensorRoleName(t->role));
    return out;
  }

  /// (name, shape, numpy dtype, role) of what `kind`'s entry takes
  /// ("eval", "predict"), in plan order.
  std::vector<std::tuple<std::string, Dims, std::string, std::string>>
  entryFeeds(const std::string &kind) const {
    std::vector<std::tuple<std::string, Dims, std::string, std::string>> out;
    for (const rt::Tensor *t : feedsOf(entryOf(kind)))
      out.emplace_back(t->name, t->type.shape, numpyName(t->type.dtype),
                       rt::tensorRoleName(t->role));
    return out;
  }

  /// One optimizer step on `arrays` (by feed name); the step's loss.
  double step(nb::dict arrays) { return stepOn(arrays, nullptr); }

  /// The same step checked launch by launch (Session::runChecked): its
  /// loss, and the first op that wrote a NaN or an infinity in words
  /// (empty when none did).
  std::pair<double, std::string> checkedStep(nb::dict arrays) {
    rt::NonFiniteFinding finding;
    double loss = stepOn(arrays, &finding);
    if (!finding.found && finding.before.empty())
      return {loss, ""};
    return {loss, rt::describeNonFinite(*plan_, finding)};
  }

  /// The eval entry's loss on one batch (no gradient, no update).
  double evaluate(nb::dict arrays) {
    int entry = entryOf("eval");
    rt::TensorInfo loss;
    check(session_->findLoss(entry, loss));
    runEntry("eval", entry, arrays);
    double value = 0;
    check(session_->readValues(loss, &value, 1));
    return value;
  }

  /// The predict entry's outputs on one batch, by name.
  nb::dict predict(nb::dict arrays) {
    int entry = entryOf("predict");
    runEntry("predict", entry, arrays);
    const rt::Entry &e = plan_->entries[entry];
    nb::dict out;
    for (size_t i = 0; i < e.tensors.size(); ++i)
      if (e.tensors[i].role == rt::TensorRole::Output)
        out[e.tensors[i].name.c_str()] = readTensor(
            {entry, static_cast<int>(i), &e.tensors[i], rt::Region::Output});
    return out;
  }

  nb::object read(const std::string &name) const {
    return readTensor(find(name));
  }

  nb::object readTensor(const rt::TensorInfo &info) const {
    const rt::TensorType &type = info.desc->type;
    size_t count = static_cast<size_t>(type.numElements());
    std::vector<double> values(count);
    check(session_->readValues(info, values.data(), count));
    std::vector<size_t> shape(type.shape.begin(), type.shape.end());
    if (!rt::isFloat(type.dtype))
      return toNumpy<int64_t>(values, shape);
    if (session_->options().precision == rt::Precision::F64)
      return toNumpy<double>(values, shape);
    return toNumpy<float>(values, shape);
  }

  void write(const std::string &name, Array a) {
    rt::TensorInfo info = find(name);
    const rt::TensorType &type = info.desc->type;
    Dims given(a.ndim());
    for (size_t d = 0; d < a.ndim(); ++d)
      given[d] = static_cast<int64_t>(a.shape(d));
    if (given != type.shape)
      throw Error("write: '" + name + "' has shape " +
                  shapeText(type.shape.data(), type.shape.size()) + ", got " +
                  shapeText(given.data(), given.size()));
    if (a.dtype() == nb::dtype<float>())
      check(session_->writeValues(info, static_cast<const float *>(a.data()),
                                  a.size()));
    else if (a.dtype() == nb::dtype<double>())
      check(session_->writeValues(info, static_cast<const double *>(a.data()),
                                  a.size()));
    else
      throw Error("write: '" + name + "' takes float32 or float64 values, got " +
                  dlpackName(a.dtype()));
  }

  void save(const std::string &path) const {
    check(session_->saveCheckpoint(path));
  }
  void load(const std::string &path) { check(session_->loadCheckpoint(path)); }
  /// A run's checkpoint in `dir` (RunCheckpoints.h): the file written.
  std::string checkpoint(const std::string &dir, int64_t keep) {
    std::unique_ptr<rt::RunCheckpoints> checkpoints;
    check(rt::RunCheckpoints::open(dir, keep, checkpoints));
    std::string path;
    check(checkpoints->saveRun(*trainer_, rt::kFedData, &path));
    return path;
  }
  /// Resumes the run in `dir`: (steps done, the file, why newer ones were
  /// passed over).
  std::tuple<int64_t, std::string, std::vector<std::string>>
  resume(const std::string &dir) {
    std::unique_ptr<rt::RunCheckpoints> checkpoints;
    check(rt::RunCheckpoints::open(dir, 1, checkpoints));
    int64_t done = 0;
    std::vector<std::string> notes;
    std::string path;
    check(checkpoints->resumeRun(*trainer_, rt::kFedData, done, notes, &path));
    return {done, path, notes};
  }
  /// zrun's training loop over `batches(n)` (microbatch n's feeds by
  /// name): resumed from and checkpointed to `dir` when given, stopped at
  /// a step boundary by SIGTERM/SIGINT, non-finite steps named (replayed
  /// from `dir`'s newest good checkpoint) and stopped at or skipped;
  /// `report(step, loss, metrics)` every `reportEvery` steps.
  nb::dict fit(nb::callable batches, int64_t steps, const std::string &dir,
               int64_t every, int64_t keep, const std::string &onNonFinite,
               nb::object report, int64_t reportEvery) {
    /// The caller's batches; a Python error ends the step before its
    /// entry runs, and is raised again after the loop.
    class Batches final : public rt::DataSource {
    public:
      Batches(PySession &owner, nb::callable fn) : owner(owner), fn(fn) {}
      void fill(rt::Session &, int64_t batch) const override {
        failed = rt::Status::ok();
        nb::gil_scoped_acquire gil;
        try {
          nb::dict arrays = nb::cast<nb::dict>(fn(batch));
          std::vector<PySession::Feed> feeds;
          std::vector<Array> held;
          owner.gather("fit", owner.feeds_, arrays, 1, feeds, held);
          for (const PySession::Feed &f : feeds) {
            failed = owner.session_->setInput(owner.trainer_->entry(),
                                              f.tensor->name, f.data, f.bytes);
            if (!failed.isOk())
              return;
          }
        } catch (nb::python_error &e) {
          error = std::make_unique<nb::python_error>(std::move(e));
          failed = rt::makeError(rt::StatusCode::InvalidArgument,
                                 "fit: the batches function raised");
        } catch (std::exception &e) {
          failed = rt::makeError(rt::StatusCode::InvalidArgument, e.what());
        }
      }
      rt::Status fillStatus() const override { return failed; }
      std::string describe() const override { return "the caller's batches"; }
      int64_t batches() const override { return 0; }
      PySession &owner;
      nb::callable fn;
      mutable rt::Status failed;
      mutable std::unique_ptr<nb::python_error> error;
    } feed(*this, batches);


    std::unique_ptr<rt::RunCheckpoints> checkpoints;
    std::vector<std::string> notes;
    int64_t done = 0;
    if (!dir.empty()) {
      check(rt::RunCheckpoints::open(dir, keep, checkpoints));
      check(checkpoints->resumeRun(*trainer_, rt::kFedData, done, notes));
      // The start, kept: a non-finite step replays from a checkpoint.
      if (done == 0)
        check(checkpoints->saveRun(*trainer_, rt::kFedData));
    }
    rt::LoopOptions loop;
    loop.steps = steps;
    loop.firstStep = done + 1;
    loop.reportEvery = reportEvery;
    static volatile int stop = 0;
    stop = 0;
    std::unique_ptr<nb::python_error> reportError;
    if (checkpoints) {
      loop.checkpointEvery = every;
      loop.checkpoint = [&](int64_t) {
        return checkpoints->saveRun(*trainer_, rt::kFedData);
      };
      loop.restore = [&](int64_t atMost, int64_t &at) {
        return checkpoints->resumeRun(*trainer_, rt::kFedData, at, notes,
                                      nullptr, atMost);
      };
    }
    loop.stopRequested = &stop;
    if (onNonFinite != "stop" && onNonFinite != "skip-step")
      throw Error("fit: on_nonfinite must be 'stop' or 'skip-step', got '" +
                  onNonFinite + "'");
    loop.onNonFinite = onNonFinite == "stop" ? rt::OnNonFinite::Stop
                                             : rt::OnNonFinite::SkipStep;
    std::vector<std::string> skipped;
    loop.skipped = [&](int64_t, const std::string &text) {
      skipped.push_back(text);
    };
    auto reported = [&](const rt::StepReport &r) {
      if (report.is_none() || reportError)
        return;
      nb::gil_scoped_acquire gil;
      try {
        nb::dict metrics;
        for (const auto &[name, value] : r.metrics)
          metrics[nb::str(name.c_str())] = value;
        report(r.step, r.loss, metrics);
      } catch (nb::python_error &e) {
        reportError = std::make_unique<nb::python_error>(std::move(e));
        stop = -1; // after this step (and its checkpoint)
      }
    };
    rt::LoopResult result;
    rt::Status status;
    {
      // Python's own handlers wait for the interpreter, which waits for
      // the loop: these stop it at the next step boundary instead.
      struct Handlers {
        void (*term)(int), (*interrupt)(int);
        Handlers()
            : term(std::signal(SIGTERM, askToStop)),
              interrupt(std::signal(SIGINT, askToStop)) {}
        ~Handlers() {
          std::signal(SIGTERM, term);
          std::signal(SIGINT, interrupt);
        }
        static void askToStop(int signal) {
          stop = signal;
          std::signal(signal, SIG_DFL);
        }
      } handlers;
      nb::gil_scoped_release release;
      status = rt::runTrainingLoop(*session_, *trainer_, feed,
                                   session_->options().communicator.get(),
                                   loop, reported, result);
    }
    if (feed.error)
      throw std::move(*feed.error);
    if (reportError)
      throw std::move(*reportError);
    check(status);
    nb::dict d;
    d["steps_run"] = result.stepsRun;
    d["first_step"] = loop.firstStep;
    d["first_loss"] = result.firstLoss;
    d["last_loss"] = result.lastLoss;
    d["steps_skipped"] = result.stepsSkipped;
    d["stopped_by"] = result.stoppedBy;
    d["seconds"] = result.seconds;
    d["notes"] = notes;
    d["skipped"] = skipped;
    return d;
  }
  int64_t stepsDone() const { return trainer_->stepsDone(); }
  void initialize(uint64_t seed) { session_->initialize(seed); }

  nb::dict stats() const {
    rt::SessionStats s = session_->stats();
    nb::dict d;
    d["arena_capacity"] = s.arenaCapacity;
    d["arena"] = s.arenaSize;
    d["lower_bound"] = s.lowerBound;
    d["no_reuse"] = s.noReuseSize;
    d["persistent"] = s.persistentSize;
    d["inputs"] = s.inputSize;
    d["outputs"] = s.outputSize;
    d["constants"] = s.constantSize;
    d["steps_run"] = s.stepsRun;
    d["launches_run"] = s.launchesRun;
    d["allocations_at_load"] = s.allocationsAtLoad;
    d["allocations_after_load"] = s.allocationsAfterLoad;
    d["bytes_allocated"] = s.bytesAllocated;
    d["device_bytes"] = s.deviceBytes;
    d["device"] = s.deviceName;
    nb::dict byKind, byEntry;
    for (const auto &kind : rt::kEntryKindNames)
      byKind[kind.name] = rt::runsOf(s, kind.value);
    for (const rt::EntryRuns &e : s.entryRuns)
      byEntry[e.name.c_str()] = e.runs;
    d["runs_by_kind"] = byKind;
    d["runs_by_entry"] = byEntry;
    d["microbatches_since_apply"] = s.microbatchesSinceApply;
    return d;
  }

  int64_t microbatches() const { return microbatches_; }
  /// The data-parallel job's rank and size (0 and 1 alone).
  int rank() const {
    const auto &comm = session_->options().communicator;
    return comm ? comm->rank() : 0;
  }
  int worldSize() const {
    const auto &comm = session_->options().communicator;
    return comm ? comm->size() : 1;
  }
  /// The data entry's step counter: what its next step's dropout masks and
  /// AdamW's bias correction see (gradient checks hold it fixed).
  int64_t stepCount() const { return session_->stepCount(trainer_->entry()); }
  void setStepCount(int64_t steps) {
    session_->setStepCount(trainer_->entry(), steps);
  }

private:
  struct Feed {
    const rt::Tensor *tensor;
    const uint8_t *data;
    size_t bytes;
  };

  int entryOf(const std::string &kind) const {
    int entry = -1;
    check(session_->findEntry(kind, entry));
    return entry;
  }

  std::vector<const rt::Tensor *> feedsOf(int entry) const {
    std::vector<const rt::Tensor *> feeds;
    const rt::Entry &e = plan_->entries[entry];
    for (const rt::Tensor &t : e.tensors)
      if (e.buffers[t.buffer].region == rt::Region::Input &&
          (t.role == rt::TensorRole::Input || t.role == rt::TensorRole::Label))
        feeds.push_back(&t);
    return feeds;
  }

  /// `arrays` checked against `feeds` (each stacked `stack` deep when
  /// more than 1): every feed given, the shape and dtype exact, no extra.
  static void gather(const std::string &call,
                     const std::vector<const rt::Tensor *> &feeds,
                     nb::dict arrays, int64_t stack, std::vector<Feed> &out,
                     std::vector<Array> &held) {
    for (const rt::Tensor *t : feeds) {
      nb::str key(t->name.c_str());
      std::string what =
          call + ": " + rt::tensorRoleName(t->role) + " '" + t->name + "'";
      if (!arrays.contains(key))
        throw Error(call + ": no value for " + rt::tensorRoleName(t->role) +
                    " '" + t->name + "' (expected shape " +
                    shapeText(t->type.shape.data(), t->type.shape.size()) +
                    " " + numpyName(t->type.dtype) + ")");
      Array a;
      if (!nb::try_cast(arrays[key], a))
        throw Error(what + " must be a NumPy array (or a buffer on the CPU)");
      Dims expected = t->type.shape;
      if (stack > 1)
        expected.insert(expected.begin(), stack);
      Dims given(a.ndim());
      for (size_t d = 0; d < a.ndim(); ++d)
        given[d] = static_cast<int64_t>(a.shape(d));
      if (given != expected || !sameDType(a.dtype(), t->type.dtype))
        throw Error(what + " expects shape " +
                    shapeText(expected.data(), expected.size()) + " " +
                    numpyName(t->type.dtype) +
                    (stack > 1 ? " (the microbatches stacked)" : "") +
                    ", got " + shapeText(given.data(), given.size()) + " " +
                    dlpackName(a.dtype()));
      out.push_back({t, static_cast<const uint8_t *>(a.data()),
                     static_cast<size_t>(t->type.bytes())});
      held.push_back(a);
    }
    for (auto item : arrays) {
      std::string name = nb::cast<std::string>(nb::str(item.first));
      bool known = false;
      for (const rt::Tensor *t : feeds)
        known = known || t->name == name;
      if (!known)
        throw Error(call + ": '" + name + "' is not an input" +
                    (call == "predict" ? "" : " or label") +
                    " of this plan's " +
                    (call == "step" ? "training" : call) + " entry");
    }
  }

  /// Writes `arrays` into `entry`'s inputs and runs it once.
  void runEntry(const std::string &call, int entry, nb::dict arrays) {
    std::vector<Feed> feeds;
    std::vector<Array> held;
    gather(call, feedsOf(entry), arrays, 1, feeds, held);
    rt::Status status;
    {
      nb::gil_scoped_release release;
      for (const Feed &f : feeds) {
        status = session_->setInput(entry, f.tensor->name, f.data, f.bytes);
        if (!status.isOk())
          break;
      }
      if (status.isOk())
        status = session_->run(entry);
    }
    check(status);
  }

  template <typename FeedList>
  rt::Status runStep(const FeedList &feeds, double &loss,
                     rt::NonFiniteFinding *check = nullptr) {
    struct Context {
      const FeedList *feeds;
      int entry;
      int64_t slice;
    } context{&feeds, trainer_->entry(), 0};
    auto feed = [](rt::Session &session, int64_t, void *user) -> rt::Status {
      auto *c = static_cast<Context *>(user);
      for (const auto &f : *c->feeds)
        ZRT_RETURN_IF_ERROR(session.setInput(c->entry, f.tensor->name,
                                             f.data + f.bytes * c->slice,
                                             f.bytes));
      ++c->slice;
      return rt::Status::ok();
    };
    return trainer_->step(feed, &context, loss, check);
  }

  double stepOn(nb::dict arrays, rt::NonFiniteFinding *checked) {
    std::vector<Feed> plan;
    std::vector<Array> held;
    gather("step", feeds_, arrays, microbatches_, plan, held);
    double loss = 0;
    rt::Status status;
    {
      nb::gil_scoped_release release;
      status = runStep(plan, loss, checked);
    }
    check(status);
    return loss;
  }

  rt::TensorInfo find(const std::string &name) const {
    rt::TensorInfo info;
    check(trainer_->findTensor(name, info));
    return info;
  }

  std::shared_ptr<rt::Plan> plan_;
  std::unique_ptr<rt::Session> session_;
  std::unique_ptr<rt::Trainer> trainer_;
  std::vector<const rt::Tensor *> feeds_;
  int64_t microbatches_;
};

} // namespace

/// A Graph method `Tensor m(A..., Where)` as a Python callable
/// `(graph, a..., file, line)` that raises the graph's error.
template <typename... A, size_t... I>
auto bindOp(Tensor (Graph::*method)(A...), std::index_sequence<I...>) {
  using Args = std::tuple<A...>;
  return [method](Graph &g, std::tuple_element_t<I, Args>... args,
                  const std::string &file, int line) {
    return checked(g, (g.*method)(args..., at(file, line)));
  };
}
template <typename... A> auto op(Tensor (Graph::*method)(A...)) {
  return bindOp(method, std::make_index_sequence<sizeof...(A) - 1>());
}
/// The overload of an op that takes these operands.
template <typename... A>
constexpr auto overload(Tensor (Graph::*method)(A...)) {
  return method;
}

NB_MODULE(_zcc, m) {
  m.doc() = "zcc's native part: capture, compile, sessions";
  nb::exception<Error> error(m, "Error", PyExc_ValueError);
  // After Error's: the translator registered last is tried first.
  nb::exception<OutOfMemory>(m, "OutOfMemoryError", error);

  nb::enum_<DType>(m, "DType")
      .value("f32", DType::F32)
      .value("i32", DType::I32)
      .value("i64", DType::I64)
      .value("bool", DType::Bool);

  // The element ops' rows (ElementKernels.h), from which zcc.ops defines
  // its element functions and zcc.from_torch its ATen mappings.
  m.def("element_rows", [] {
    nb::list rows;
    for (int i = 0; i < rt::kElementRowCount; ++i) {
      const rt::ElementRow &r = rt::kElementRows[i];
      static const char *const arities[] = {
          "unary",      "binary", "grad", "compare", "bool_unary",
          "bool_binary", "mask",  "select"};
      nb::list params;
      for (int k = 0; k < r.paramCount; ++k)
        params.append(nb::make_tuple(r.paramNames[k], r.paramDefaults[k]));
      rows.append(nb::make_tuple(i, r.name, arities[int(r.arity)], params,
                                 r.torch));
    }
    return rows;
  });

  // The ops built by name (Graph::op: their kernels' rules infer their
  // results), with their parameters' names and kinds: zcc.ops defines a
  // function for each.
  m.def("inferred_ops", [] {
    static const char *const kinds[] = {"bool", "int", "float", "ints"};
    nb::list ops;
    for (int k = 0; k < static_cast<int>(rt::KernelId::NumKernels); ++k) {
      auto kernel = static_cast<rt::KernelId>(k);
      if (!rt::kernelInfersResults(kernel))
        continue;
      nb::list params;
      for (const rt::ParamSpec &p : rt::kernelParamSpecs(kernel))
        params.append(nb::make_tuple(p.name, kinds[static_cast<int>(p.kind)]));
      ops.append(nb::make_tuple(rt::kernelName(kernel), params));
    }
    return ops;
  });

  nb::class_<Init>(m, "Init")
      .def_static("zeros", &Init::zeros)
      .def_static("ones", &Init::ones)
      .def_static("constant", &Init::constant, "value"_a)
      .def_static("normal", &Init::normal, "mean"_a, "std"_a)
      .def_static("uniform", &Init::uniform, "low"_a, "high"_a)
      .def_static("given", &Init::given)
      .def("__repr__", [](const Init &i) {
        static const char *names[] = {"zeros", "ones",    "constant",
                                      "normal", "uniform", "given"};
        return std::string("Init.") + names[int(i.kind)] + "(" +
               std::to_string(i.first) + ", " + std::to_string(i.second) + ")";
      });

  nb::class_<Tensor>(m, "Tensor")
      .def_prop_ro("shape",
                   [](const Tensor &t) {
                     nb::list dims;
                     for (int64_t d : t.shape())
                       dims.append(d);
                     return nb::tuple(dims);
                   })
      .def_prop_ro("dtype", &Tensor::dtype)
      .def_prop_ro("id", &Tensor::id);

  const auto keep = nb::keep_alive<0, 1>();
  nb::class_<Graph>(m, "Graph")
      .def(nb::init<std::string>(), "name"_a)
      .def_prop_ro("ok", &Graph::ok)
      .def_prop_ro("error", [](const Graph &g) { return g.status().message(); })
      // Every op: (graph, operands..., file, line) -> Tensor; the result
      // keeps the graph alive.
      .def("input", op(&Graph::input), nb::keep_alive<0, 1>())
      .def("label", op(&Graph::label), nb::keep_alive<0, 1>())
      .def("parameter", op(&Graph::parameter), nb::keep_alive<0, 1>())
      .def("state", op(&Graph::state), nb::keep_alive<0, 1>())
      .def(
          "update",
          [](Graph &g, Tensor state, Tensor value, const std::string &file,
             int line) {
            g.update(state, value, at(file, line));
            checked(g, state);
          },
          "state"_a, "value"_a, "file"_a, "line"_a)
      .def("step", op(&Graph::step), nb::keep_alive<0, 1>())
      .def("push_scope",
           [](Graph &g, const std::string &name) {
             // The Scope guard would pop at once; Python pairs the calls.
             auto *scope = new Graph::Scope(g.scope(name));
             return reinterpret_cast<uintptr_t>(scope);
           })
      .def("pop_scope",
           [](Graph &, uintptr_t handle) {
             delete reinterpret_cast<Graph::Scope *>(handle);
           })
      .def_prop_ro("scope_prefix", &Graph::scopePrefix)
      .def(
          "element",
          [](Graph &g, int row, const std::vector<Tensor> &operands,
             const std::vector<double> &params, const std::string &file,
             int line) {
            return checked(g, g.element(row, operands, params, at(file, line)));
          },
          keep)
      .def(
          "op",
          [](Graph &g, const std::string &name,
             const std::vector<Tensor> &operands, nb::dict params,
             const std::string &file, int line) {
            return checkedAll(g, g.op(name, operands,
                                      paramsFromPython(name, params),
                                      at(file, line)));
          },
          // A list cannot keep the graph alive: zcc.ops wraps each result
          // with its trace, which does.
          "name"_a, "operands"_a, "params"_a, "file"_a, "line"_a)
      .def("add_scalar", op(overload<Tensor, double, Where>(&Graph::add)), keep)
      .def("sub_scalar", op(overload<Tensor, double, Where>(&Graph::sub)), keep)
      .def("mul_scalar", op(overload<Tensor, double, Where>(&Graph::mul)), keep)
      .def("div_scalar", op(overload<Tensor, double, Where>(&Graph::div)), keep)
      .def("scale", op(&Graph::scale), keep)
      .def("full", op(&Graph::full), keep)
      .def("convert", op(&Graph::convert), keep)
      .def("constant", op(&Graph::constant), keep)
      .def("causal_mask", op(&Graph::causalMask), keep)
      .def("broadcast_in_dim", op(&Graph::broadcastInDim), keep)
      .def("broadcast_to", op(&Graph::broadcastTo), keep)
      .def("reshape", op(&Graph::reshape), keep)
      .def("transpose", op(&Graph::transpose), keep)
      .def("swap_axes", op(&Graph::swapAxes), keep)
      .def("slice", op(&Graph::slice), keep)
      .def("slice_dim", op(&Graph::sliceDim), keep)
      .def("concat", op(&Graph::concat), keep)
      .def("sum", op(&Graph::sum), keep)
      .def("mean", op(&Graph::mean), keep)
      .def("max", op(&Graph::max), keep)
      .def("matmul", op(&Graph::matmul), keep)
      .def("attention", op(&Graph::attention), keep)
      .def("masked_attention", op(&Graph::maskedAttention), keep)
      .def("softmax", op(&Graph::softmax), keep)
      .def("log_softmax", op(&Graph::logSoftmax), keep)
      .def("layer_norm", op(&Graph::layerNorm), keep)
      .def("rms_norm", op(&Graph::rmsNorm), keep)
      .def("embedding", op(&Graph::embedding), keep)
      .def("softmax_cross_entropy", op(&Graph::softmaxCrossEntropy), keep)
      .def("softmax_cross_entropy_with",
           op(&Graph::softmaxCrossEntropyWith), keep)
      .def("mse", op(&Graph::mse), keep)
      .def("dropout", op(&Graph::dropout), keep)
      .def(
          "finish",
          [](Graph &g, Tensor loss, const std::string &file, int line) {
            check(g.finish(loss, at(file, line)));
          },
          "loss"_a, "file"_a, "line"_a)
      .def(
          "finish_eval",
          [](Graph &g, Tensor loss, const std::string &file, int line) {
            check(g.finishEval(loss, at(file, line)));
          },
          "loss"_a, "file"_a, "line"_a)
      .def(
          "finish_predict",
          [](Graph &g, const std::vector<std::pair<std::string, Tensor>> &outs,
             const std::string &file, int line) {
            check(g.finishPredict(outs, at(file, line)));
          },
          "outputs"_a, "file"_a, "line"_a)
      .def("add_entry",
           [](Graph &g, const Graph &other) { check(g.addEntry(other)); })
      .def_prop_ro("finished", &Graph::finished)
      .def("str", &Graph::str, "locations"_a = false)
      .def("input_names", &Graph::inputNames)
      .def("label_names", &Graph::labelNames)
      .def("parameter_names", &Graph::parameterNames)
      .def("state_names", &Graph::stateNames)
      .def(
          "compile",
          [](const Graph &g, const zcc::CompileOptions &options, bool ir) {
            PyPlan plan{std::make_shared<rt::Plan>()};
            std::string planned, warnings;
            {
              nb::gil_scoped_release release;
              check(g.compile(options, *plan.plan, ir ? &planned : nullptr,
                              &warnings));
            }
            return std::make_tuple(plan, planned, warnings);
          },
          "options"_a, "planned_ir"_a = false)
      .def(
          "fit_candidate",
          [](const Graph &g, const zcc::CompileOptions &options,
             int64_t microbatches) {
            PyPlan plan{std::make_shared<rt::Plan>()};
            zcc::FitRow row;
            std::string warnings;
            {
              nb::gil_scoped_release release;
              check(g.fitCandidate(options, microbatches, row, *plan.plan,
                                   &warnings));
            }
            nb::dict r;
            r["result"] = fitResultName(row.result);
            r["arena"] = row.arena;
            r["other"] = row.other;
            r["extra_flops"] = row.extraFlops;
            r["extra_share"] = row.extraShare;
            r["why"] = row.why;
            return std::make_tuple(r, plan, warnings);
          },
          "options"_a, "microbatches"_a);

  // One attribute per row of zcc/Compiler/OptionList.h, by its name.
  nb::class_<zcc::CompileOptions> options(m, "CompileOptions");
  options.def(nb::init<>());
#define ZCC_PY_OPTION(kind, member, name, init, rule, help)                    \
  options.def_rw(#name, &zcc::CompileOptions::member, help);
  ZCC_COMPILE_OPTIONS(ZCC_PY_OPTION)
#undef ZCC_PY_OPTION
  options.def(
      "set",
      [](zcc::CompileOptions &o, const std::string &name,
         const std::string &text) {
        const zcc::options::Info *option = zcc::options::find(name);
        if (!option)
          throw std::invalid_argument("unknown compile option '" + name + "'");
        if (std::string bad = zcc::options::setFromText(o, *option, text);
            !bad.empty())
          throw std::invalid_argument(bad);
      },
      "name"_a, "text"_a,
      "Sets an option from text, as zcc's flag reads it (\"64MiB\").");
  // (name, kind, default as text, help, the pass that reads it) per option.
  // compile(fit=...)'s rule and table, zcc --microbatch's: rows as
  // (microbatch, microbatches, result, arena, other, extra_flops,
  // extra_share, why), largest microbatch first.
  m.def(
      "fit_choice",
      [](int64_t fit, int64_t reserve, int64_t batch,
         const std::vector<std::tuple<int64_t, int64_t, std::string, uint64_t,
                                      uint64_t, double, double, std::string>>
             &rows) {
        zcc::FitChoice choice;
        choice.fit = fit;
        choice.reserve = reserve;
        choice.batch = batch;
        for (const auto &[b, k, result, arena, other, extra, share, why] :
             rows) {
          zcc::FitRow r;
          r.microbatch = b;
          r.microbatches = k;
          r.result = zcc::FitRow::No;
          for (auto kind : {zcc::FitRow::AsIs, zcc::FitRow::Recomputing})
            if (result == fitResultName(kind))
              r.result = kind;
          r.arena = arena;
          r.other = other;
          r.extraFlops = extra;
          r.extraShare = share;
          r.why = why;
          choice.rows.push_back(r);
        }
        choice.chosen = zcc::pickFitRow(choice.rows);
        return std::make_pair(choice.chosen, zcc::formatFitChoice(choice));
      },
      "fit"_a, "reserve"_a, "batch"_a, "rows"_a);

  m.def("compile_option_table", [] {
    std::vector<std::tuple<std::string, std::string, std::string, std::string,
                           std::string>>
        rows;
    const zcc::CompileOptions defaults;
    for (const zcc::options::Info &o : zcc::options::table())
      rows.emplace_back(o.name, zcc::options::kindName(o.kind),
                        zcc::options::textOf(defaults, o), o.help, o.pass);
    return rows;
  });

  m.def(
      "compile_source",
      [](const std::string &text, const std::string &name,
         const zcc::CompileOptions &options) {
        PyPlan plan{std::make_shared<rt::Plan>()};
        std::string warnings;
        {
          nb::gil_scoped_release release;
          check(zcc::compileSource(text, name, options, *plan.plan, &warnings));
        }
        return std::make_pair(plan, warnings);
      },
      "text"_a, "name"_a, "options"_a);

  nb::class_<PyPlan>(m, "Plan")
      .def("report",
           [](const PyPlan &p) { return rt::formatPlanReport(*p.plan); })
      .def("memory_timeline",
           [](const PyPlan &p) { return rt::memoryTimelineJson(*p.plan); })
      .def("memory_html",
           [](const PyPlan &p) { return rt::memoryTimelineHtml(*p.plan); })
      .def("memory_torch_snapshot",
           [](const PyPlan &p) {
             std::string pickle = rt::memoryTorchSnapshot(*p.plan);
             return nb::bytes(pickle.data(), pickle.size());
           })
      .def("memory_analysis",
           [](const PyPlan &p) { return memoryAnalysis(*p.plan); })
      .def(
          "step_flops",
          [](const PyPlan &p, int64_t microbatches) {
            return zcc::stepFlops(*p.plan, microbatches);
          },
          "microbatches"_a,
          "(all, recomputed) FLOPs of one optimizer step of `microbatches`")
      .def(
          "fixed_device_bytes",
          [](const PyPlan &p, int64_t reserve) {
            return zcc::fixedDeviceBytes(*p.plan, reserve);
          },
          "reserve"_a,
          "Device bytes beside the arena: the persistent, constant, input "
          "and output regions and `reserve` (what compile(fit=) counts)")
      .def("save",
           [](const PyPlan &p, const std::string &path) {
             check(rt::savePlanFile(path, *p.plan));
           })
      .def("to_bytes",
           [](const PyPlan &p) {
             std::vector<uint8_t> bytes = rt::serializePlan(*p.plan);
             return nb::bytes(reinterpret_cast<const char *>(bytes.data()),
                              bytes.size());
           })
      .def_static("load",
                  [](const std::string &path) {
                    PyPlan plan{std::make_shared<rt::Plan>()};
                    check(rt::loadPlanFile(path, *plan.plan));
                    return plan;
                  })
      .def_prop_ro("producer", [](const PyPlan &p) { return p.plan->producer; })
      .def_prop_ro("accumulates",
                   [](const PyPlan &p) {
                     for (const rt::Entry &e : p.plan->entries)
                       if (e.kind == rt::EntryKind::Apply)
                         return true;
                     return false;
                   })
      .def_prop_ro("entries", [](const PyPlan &p) {
        std::vector<std::string> names;
        for (const rt::Entry &e : p.plan->entries)
          names.push_back(e.name);
        return names;
      });

  nb::class_<PySession>(m, "Session")
      .def(nb::init<const PyPlan &, const std::string &, const std::string &,
                    const std::string &, uint64_t, int, int64_t, double, bool,
                    double, int>(),
           "plan"_a, "device"_a, "mode"_a, "precision"_a, "seed"_a, "threads"_a,
           "microbatches"_a, "host_memory_fraction"_a, "distributed"_a,
           "collective_timeout"_a, "device_ordinal"_a)
      .def("entry_feeds", &PySession::entryFeeds, "kind"_a)
      .def("evaluate", &PySession::evaluate, "arrays"_a)
      .def("predict", &PySession::predict, "arrays"_a)
      .def_prop_ro("rank", &PySession::rank)
      .def_prop_ro("world_size", &PySession::worldSize)
      .def("feeds", &PySession::feeds)
      .def("step", &PySession::step, "arrays"_a)
      .def("checked_step", &PySession::checkedStep, "arrays"_a)
      .def("read", &PySession::read, "name"_a)
      .def("write", &PySession::write, "name"_a, "array"_a)
      .def("save", &PySession::save, "path"_a)
      .def("load", &PySession::load, "path"_a)
      .def("checkpoint", &PySession::checkpoint, "directory"_a, "keep"_a)
      .def("resume", &PySession::resume, "directory"_a)
      .def("fit", &PySession::fit, "batches"_a, "steps"_a, "directory"_a,
           "every"_a, "keep"_a, "on_nonfinite"_a, "report"_a.none(),
           "report_every"_a)
      .def_prop_ro("steps_done", &PySession::stepsDone)
      .def("initialize", &PySession::initialize, "seed"_a)
      .def("stats", &PySession::stats)
      .def_prop_ro("microbatches", &PySession::microbatches)
      .def_prop_rw("step_count", &PySession::stepCount,
                   &PySession::setStepCount);
}
