//===- Module.cpp - zcc._zcc: the Python package's native part ------------===//
//
// Thin: the capture API (zcc/Capture/Graph.h), the in-process compiler
// (zcc/Compiler/Compile.h), sessions and the Trainer. The Python layer
// (python/zcc/*.py) adds tracers, operators and the user's file:line. Every
// failure is raised as zcc.Error with the library's message; nothing aborts.
//
//===----------------------------------------------------------------------===//

#include "zcc/Capture/Graph.h"
#include "zcc/Compiler/Compile.h"
#include "zcc/Runtime/Plan/PlanFile.h"
#include "zcc/Runtime/Plan/PlanReport.h"
#include "zcc/Runtime/Session/Session.h"
#include "zcc/Runtime/Session/Trainer.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <stdexcept>

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

void check(const rt::Status &status) {
  if (!status.isOk())
    throw Error(status.message());
}

/// An op's result, or its error raised.
Tensor checked(Graph &g, Tensor t) {
  if (!g.ok())
    throw Error(g.status().message());
  return t;
}

Where at(const std::string &file, int line) { return Where{file, line}; }

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
  return d;
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

class PySession {
public:
  PySession(const PyPlan &plan, const std::string &device,
            const std::string &mode, const std::string &precision,
            uint64_t seed, int threads, int64_t microbatches)
      : plan_(plan.plan), microbatches_(microbatches) {
    rt::SessionOptions options;
    options.seed = seed;
    options.threads = threads;
    if (device == "cpu")
      options.device = rt::DeviceKind::Cpu;
    else if (device == "cuda")
      options.device = rt::DeviceKind::Cuda;
    else if (device == "emulator")
      options.device = rt::DeviceKind::Emulator;
    else
      throw Error("device must be 'cpu', 'cuda' or 'emulator', got '" +
                  device + "'");
    if (mode == "planned")
      options.mode = rt::ExecutionMode::Planned;
    else if (mode == "no-reuse")
      options.mode = rt::ExecutionMode::NoReuse;
    else if (mode == "poison")
      options.mode = rt::ExecutionMode::Poison;
    else
      throw Error("mode must be 'planned', 'no-reuse' or 'poison', got '" +
                  mode + "'");
    if (precision == "f32")
      options.precision = rt::Precision::F32;
    else if (precision == "f64")
      options.precision = rt::Precision::F64;
    else
      throw Error("precision must be 'f32' or 'f64', got '" + precision + "'");
    check(rt::Session::create(plan_, options, session_));
    check(rt::Trainer::create(*session_, microbatches, trainer_));
    const rt::Entry &entry = plan_->entries[trainer_->entry()];
    for (size_t i = 0; i < entry.tensors.size(); ++i) {
      const rt::Tensor &t = entry.tensors[i];
      const rt::Buffer &buffer = entry.buffers[t.buffer];
      if (buffer.region == rt::Region::Input &&
          (t.role == rt::TensorRole::Input || t.role == rt::TensorRole::Label))
        feeds_.push_back(&t);
    }
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

  /// One optimizer step on `arrays` (by feed name); the step's loss.
  double step(nb::dict arrays) {
    struct Feed {
      const rt::Tensor *tensor;
      const uint8_t *data;
      size_t bytes;
    };
    std::vector<Feed> plan;
    std::vector<Array> held;
    for (const rt::Tensor *t : feeds_) {
      nb::str key(t->name.c_str());
      if (!arrays.contains(key))
        throw Error("step: no value for " +
                    std::string(rt::tensorRoleName(t->role)) + " '" +
                    t->name + "' (expected shape " +
                    shapeText(t->type.shape.data(), t->type.shape.size()) +
                    " " + numpyName(t->type.dtype) + ")");
      Array a;
      if (!nb::try_cast(arrays[key], a))
        throw Error("step: " + std::string(rt::tensorRoleName(t->role)) +
                    " '" + t->name + "' must be a NumPy array (or a buffer "
                    "on the CPU)");
      Dims expected = t->type.shape;
      if (microbatches_ > 1)
        expected.insert(expected.begin(), microbatches_);
      Dims given(a.ndim());
      for (size_t d = 0; d < a.ndim(); ++d)
        given[d] = static_cast<int64_t>(a.shape(d));
      if (given != expected || !sameDType(a.dtype(), t->type.dtype))
        throw Error(
            "step: " + std::string(rt::tensorRoleName(t->role)) + " '" +
            t->name + "' expects shape " +
            shapeText(expected.data(), expected.size()) + " " +
            numpyName(t->type.dtype) +
            (microbatches_ > 1 ? " (the microbatches stacked)" : "") +
            ", got " + shapeText(given.data(), given.size()) + " " +
            dlpackName(a.dtype()));
      plan.push_back({t, static_cast<const uint8_t *>(a.data()),
                      static_cast<size_t>(t->type.bytes())});
      held.push_back(a);
    }
    for (auto item : arrays) {
      std::string name = nb::cast<std::string>(nb::str(item.first));
      bool known = false;
      for (const rt::Tensor *t : feeds_)
        known = known || t->name == name;
      if (!known)
        throw Error("step: '" + name + "' is not an input or label of "
                    "this plan");
    }
    double loss = 0;
    rt::Status status;
    {
      nb::gil_scoped_release release;
      status = runStep(plan, loss);
    }
    check(status);
    return loss;
  }

  nb::object read(const std::string &name) const {
    rt::TensorInfo info = find(name);
    const rt::TensorType &type = info.desc->type;
    size_t count = static_cast<size_t>(type.numElements());
    std::vector<double> values(count);
    check(session_->readValues(info, values.data(), count));
    std::vector<size_t> shape(type.shape.begin(), type.shape.end());
    bool f64 = session_->options().precision == rt::Precision::F64 &&
               rt::isFloat(type.dtype);
    if (f64) {
      auto *data = new double[count];
      std::copy(values.begin(), values.end(), data);
      nb::capsule owner(data, [](void *p) noexcept {
        delete[] static_cast<double *>(p);
      });
      return nb::cast(nb::ndarray<nb::numpy, double>(data, shape.size(),
                                                     shape.data(), owner));
    }
    if (rt::isFloat(type.dtype)) {
      auto *data = new float[count];
      std::copy(values.begin(), values.end(), data);
      nb::capsule owner(data, [](void *p) noexcept {
        delete[] static_cast<float *>(p);
      });
      return nb::cast(nb::ndarray<nb::numpy, float>(data, shape.size(),
                                                    shape.data(), owner));
    }
    auto *data = new int64_t[count];
    std::copy(values.begin(), values.end(), data);
    nb::capsule owner(data, [](void *p) noexcept {
      delete[] static_cast<int64_t *>(p);
    });
    return nb::cast(nb::ndarray<nb::numpy, int64_t>(data, shape.size(),
                                                    shape.data(), owner));
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
    d["device"] = s.deviceName;
    return d;
  }

  int64_t microbatches() const { return microbatches_; }

private:
  template <typename FeedList>
  rt::Status runStep(const FeedList &feeds, double &loss) {
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
    return trainer_->step(feed, &context, loss);
  }

  rt::TensorInfo find(const std::string &name) const {
    rt::TensorInfo info;
    check(session_->findTensor(trainer_->entry(), name, info));
    return info;
  }

  std::shared_ptr<rt::Plan> plan_;
  std::unique_ptr<rt::Session> session_;
  std::unique_ptr<rt::Trainer> trainer_;
  std::vector<const rt::Tensor *> feeds_;
  int64_t microbatches_;
};

} // namespace

#define ZCC_UNARY(method, pyname)                                              \
  .def(                                                                        \
      pyname,                                                                  \
      [](Graph &g, Tensor x, const std::string &file, int line) {             \
        return checked(g, g.method(x, at(file, line)));                        \
      },                                                                       \
      "x"_a, "file"_a, "line"_a, nb::keep_alive<0, 1>())

#define ZCC_BINARY(method, pyname)                                             \
  .def(                                                                        \
      pyname,                                                                  \
      [](Graph &g, Tensor a, Tensor b, const std::string &file, int line) {   \
        return checked(g, g.method(a, b, at(file, line)));                     \
      },                                                                       \
      "a"_a, "b"_a, "file"_a, "line"_a, nb::keep_alive<0, 1>())                \
  .def(                                                                        \
      pyname "_scalar",                                                        \
      [](Graph &g, Tensor a, double b, const std::string &file, int line) {   \
        return checked(g, g.method(a, b, at(file, line)));                     \
      },                                                                       \
      "a"_a, "b"_a, "file"_a, "line"_a, nb::keep_alive<0, 1>())

#define ZCC_REDUCE(method, pyname)                                             \
  .def(                                                                        \
      pyname,                                                                  \
      [](Graph &g, Tensor x, const Dims &dims, bool keep,                      \
         const std::string &file, int line) {                                  \
        return checked(g, g.method(x, dims, keep, at(file, line)));            \
      },                                                                       \
      "x"_a, "dims"_a, "keepdims"_a, "file"_a, "line"_a,                       \
      nb::keep_alive<0, 1>())

NB_MODULE(_zcc, m) {
  m.doc() = "zcc's native part: capture, compile, sessions";
  nb::exception<Error>(m, "Error", PyExc_ValueError);

  nb::enum_<DType>(m, "DType")
      .value("f32", DType::F32)
      .value("i32", DType::I32)
      .value("i64", DType::I64);

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

  nb::class_<Graph>(m, "Graph")
      .def(nb::init<std::string>(), "name"_a)
      .def_prop_ro("ok", &Graph::ok)
      .def_prop_ro("error",
                   [](const Graph &g) { return g.status().message(); })
      .def(
          "input",
          [](Graph &g, const std::string &name, const Dims &shape, DType dtype,
             const std::string &file, int line) {
            return checked(g, g.input(name, shape, dtype, at(file, line)));
          },
          "name"_a, "shape"_a, "dtype"_a, "file"_a, "line"_a,
          nb::keep_alive<0, 1>())
      .def(
          "label",
          [](Graph &g, const std::string &name, const Dims &shape, DType dtype,
             const std::string &file, int line) {
            return checked(g, g.label(name, shape, dtype, at(file, line)));
          },
          "name"_a, "shape"_a, "dtype"_a, "file"_a, "line"_a,
          nb::keep_alive<0, 1>())
      .def(
          "parameter",
          [](Graph &g, const std::string &name, const Dims &shape, Init init,
             const std::string &file, int line) {
            return checked(g, g.parameter(name, shape, init, at(file, line)));
          },
          "name"_a, "shape"_a, "init"_a, "file"_a, "line"_a,
          nb::keep_alive<0, 1>())
      .def(
          "step",
          [](Graph &g, const std::string &file, int line) {
            return checked(g, g.step(at(file, line)));
          },
          "file"_a, "line"_a, nb::keep_alive<0, 1>())
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
      // clang-format off
      ZCC_BINARY(add, "add")
      ZCC_BINARY(sub, "sub")
      ZCC_BINARY(mul, "mul")
      ZCC_BINARY(div, "div")
      ZCC_UNARY(neg, "neg")
      ZCC_UNARY(exp, "exp")
      ZCC_UNARY(log, "log")
      ZCC_UNARY(tanh, "tanh")
      ZCC_UNARY(sigmoid, "sigmoid")
      ZCC_UNARY(relu, "relu")
      ZCC_UNARY(gelu, "gelu")
      ZCC_UNARY(geluErf, "gelu_erf")
      ZCC_UNARY(silu, "silu")
      ZCC_UNARY(sqrt, "sqrt")
      ZCC_UNARY(rsqrt, "rsqrt")
      ZCC_REDUCE(sum, "sum")
      ZCC_REDUCE(mean, "mean")
      ZCC_REDUCE(max, "max")
      // clang-format on
      .def(
          "scale",
          [](Graph &g, Tensor x, double factor, const std::string &file,
             int line) {
            return checked(g, g.scale(x, factor, at(file, line)));
          },
          "x"_a, "factor"_a, "file"_a, "line"_a, nb::keep_alive<0, 1>())
      .def(
          "full",
          [](Graph &g, const Dims &shape, double value, DType dtype,
             const std::string &file, int line) {
            return checked(g, g.full(shape, value, dtype, at(file, line)));
          },
          "shape"_a, "value"_a, "dtype"_a, "file"_a, "line"_a,
          nb::keep_alive<0, 1>())
      .def(
          "constant",
          [](Graph &g, const Dims &shape, const std::vector<double> &values,
             DType dtype, const std::string &file, int line) {
            return checked(g,
                           g.constant(shape, values, dtype, at(file, line)));
          },
          "shape"_a, "values"_a, "dtype"_a, "file"_a, "line"_a,
          nb::keep_alive<0, 1>())
      .def(
          "causal_mask",
          [](Graph &g, int64_t size, const std::string &file, int line) {
            return checked(g, g.causalMask(size, at(file, line)));
          },
          "size"_a, "file"_a, "line"_a, nb::keep_alive<0, 1>())
      .def(
          "broadcast_in_dim",
          [](Graph &g, Tensor x, const Dims &shape, const Dims &dims,
             const std::string &file, int line) {
            return checked(g, g.broadcastInDim(x, shape, dims, at(file, line)));
          },
          "x"_a, "shape"_a, "dims"_a, "file"_a, "line"_a,
          nb::keep_alive<0, 1>())
      .def(
          "broadcast_to",
          [](Graph &g, Tensor x, const Dims &shape, const std::string &file,
             int line) {
            return checked(g, g.broadcastTo(x, shape, at(file, line)));
          },
          "x"_a, "shape"_a, "file"_a, "line"_a, nb::keep_alive<0, 1>())
      .def(
          "reshape",
          [](Graph &g, Tensor x, const Dims &shape, const std::string &file,
             int line) {
            return checked(g, g.reshape(x, shape, at(file, line)));
          },
          "x"_a, "shape"_a, "file"_a, "line"_a, nb::keep_alive<0, 1>())
      .def(
          "transpose",
          [](Graph &g, Tensor x, const Dims &perm, const std::string &file,
             int line) {
            return checked(g, g.transpose(x, perm, at(file, line)));
          },
          "x"_a, "perm"_a, "file"_a, "line"_a, nb::keep_alive<0, 1>())
      .def(
          "swap_axes",
          [](Graph &g, Tensor x, int64_t a, int64_t b, const std::string &file,
             int line) {
            return checked(g, g.swapAxes(x, a, b, at(file, line)));
          },
          "x"_a, "a"_a, "b"_a, "file"_a, "line"_a, nb::keep_alive<0, 1>())
      .def(
          "slice",
          [](Graph &g, Tensor x, const Dims &start, const Dims &limit,
             const Dims &strides, const std::string &file, int line) {
            return checked(g,
                           g.slice(x, start, limit, strides, at(file, line)));
          },
          "x"_a, "start"_a, "limit"_a, "strides"_a, "file"_a, "line"_a,
          nb::keep_alive<0, 1>())
      .def(
          "slice_dim",
          [](Graph &g, Tensor x, int64_t dim, int64_t begin, int64_t end,
             const std::string &file, int line) {
            return checked(g, g.sliceDim(x, dim, begin, end, at(file, line)));
          },
          "x"_a, "dim"_a, "begin"_a, "end"_a, "file"_a, "line"_a,
          nb::keep_alive<0, 1>())
      .def(
          "concat",
          [](Graph &g, const std::vector<Tensor> &inputs, int64_t dim,
             const std::string &file, int line) {
            return checked(g, g.concat(inputs, dim, at(file, line)));
          },
          "inputs"_a, "dim"_a, "file"_a, "line"_a, nb::keep_alive<0, 1>())
      .def(
          "matmul",
          [](Graph &g, Tensor a, Tensor b, bool ta, bool tb,
             const std::string &file, int line) {
            return checked(g, g.matmul(a, b, ta, tb, at(file, line)));
          },
          "a"_a, "b"_a, "transpose_a"_a, "transpose_b"_a, "file"_a, "line"_a,
          nb::keep_alive<0, 1>())
      .def(
          "softmax",
          [](Graph &g, Tensor x, int64_t axis, const std::string &file,
             int line) {
            return checked(g, g.softmax(x, axis, at(file, line)));
          },
          "x"_a, "axis"_a, "file"_a, "line"_a, nb::keep_alive<0, 1>())
      .def(
          "log_softmax",
          [](Graph &g, Tensor x, int64_t axis, const std::string &file,
             int line) {
            return checked(g, g.logSoftmax(x, axis, at(file, line)));
          },
          "x"_a, "axis"_a, "file"_a, "line"_a, nb::keep_alive<0, 1>())
      .def(
          "layer_norm",
          [](Graph &g, Tensor x, Tensor gamma, Tensor beta, double eps,
             const std::string &file, int line) {
            return checked(g, g.layerNorm(x, gamma, beta, eps, at(file, line)));
          },
          "x"_a, "gamma"_a, "beta"_a, "eps"_a, "file"_a, "line"_a,
          nb::keep_alive<0, 1>())
      .def(
          "rms_norm",
          [](Graph &g, Tensor x, Tensor gamma, double eps,
             const std::string &file, int line) {
            return checked(g, g.rmsNorm(x, gamma, eps, at(file, line)));
          },
          "x"_a, "gamma"_a, "eps"_a, "file"_a, "line"_a,
          nb::keep_alive<0, 1>())
      .def(
          "embedding",
          [](Graph &g, Tensor table, Tensor indices, const std::string &file,
             int line) {
            return checked(g, g.embedding(table, indices, at(file, line)));
          },
          "table"_a, "indices"_a, "file"_a, "line"_a, nb::keep_alive<0, 1>())
      .def(
          "softmax_cross_entropy",
          [](Graph &g, Tensor logits, Tensor labels, const std::string &file,
             int line) {
            return checked(g,
                           g.softmaxCrossEntropy(logits, labels, at(file, line)));
          },
          "logits"_a, "labels"_a, "file"_a, "line"_a, nb::keep_alive<0, 1>())
      .def(
          "mse",
          [](Graph &g, Tensor prediction, Tensor target,
             const std::string &file, int line) {
            return checked(g, g.mse(prediction, target, at(file, line)));
          },
          "prediction"_a, "target"_a, "file"_a, "line"_a,
          nb::keep_alive<0, 1>())
      .def(
          "dropout",
          [](Graph &g, Tensor x, double rate, int64_t seed,
             const std::string &file, int line) {
            return checked(g, g.dropout(x, rate, seed, at(file, line)));
          },
          "x"_a, "rate"_a, "seed"_a, "file"_a, "line"_a,
          nb::keep_alive<0, 1>())
      .def(
          "finish",
          [](Graph &g, Tensor loss, const std::string &file, int line) {
            check(g.finish(loss, at(file, line)));
          },
          "loss"_a, "file"_a, "line"_a)
      .def_prop_ro("finished", &Graph::finished)
      .def("str", &Graph::str, "locations"_a = false)
      .def("input_names", &Graph::inputNames)
      .def("label_names", &Graph::labelNames)
      .def("parameter_names", &Graph::parameterNames)
      .def(
          "compile",
          [](const Graph &g, const zcc::CompileOptions &options, bool ir) {
            PyPlan plan{std::make_shared<rt::Plan>()};
            std::string planned;
            {
              nb::gil_scoped_release release;
              check(g.compile(options, *plan.plan, ir ? &planned : nullptr));
            }
            return std::make_pair(plan, planned);
          },
          "options"_a, "planned_ir"_a = false);

  nb::class_<zcc::CompileOptions>(m, "CompileOptions")
      .def(nb::init<>())
      .def_rw("optimizer", &zcc::CompileOptions::optimizer)
      .def_rw("lr", &zcc::CompileOptions::lr)
      .def_rw("momentum", &zcc::CompileOptions::momentum)
      .def_rw("nesterov", &zcc::CompileOptions::nesterov)
      .def_rw("weight_decay", &zcc::CompileOptions::weightDecay)
      .def_rw("beta1", &zcc::CompileOptions::beta1)
      .def_rw("beta2", &zcc::CompileOptions::beta2)
      .def_rw("eps", &zcc::CompileOptions::eps)
      .def_rw("accumulate", &zcc::CompileOptions::accumulate)
      .def_rw("grad_scale", &zcc::CompileOptions::gradScale)
      .def_rw("alignment", &zcc::CompileOptions::alignment)
      .def_rw("algorithm", &zcc::CompileOptions::algorithm)
      .def_rw("matmul_workspace", &zcc::CompileOptions::matmulWorkspace);

  m.def(
      "compile_source",
      [](const std::string &text, const std::string &name,
         const zcc::CompileOptions &options) {
        PyPlan plan{std::make_shared<rt::Plan>()};
        nb::gil_scoped_release release;
        check(zcc::compileSource(text, name, options, *plan.plan));
        return plan;
      },
      "text"_a, "name"_a, "options"_a);

  nb::class_<PyPlan>(m, "Plan")
      .def("report",
           [](const PyPlan &p) { return rt::formatPlanReport(*p.plan); })
      .def("memory_analysis",
           [](const PyPlan &p) { return memoryAnalysis(*p.plan); })
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
                    const std::string &, uint64_t, int, int64_t>(),
           "plan"_a, "device"_a, "mode"_a, "precision"_a, "seed"_a,
           "threads"_a, "microbatches"_a)
      .def("feeds", &PySession::feeds)
      .def("step", &PySession::step, "arrays"_a)
      .def("read", &PySession::read, "name"_a)
      .def("write", &PySession::write, "name"_a, "array"_a)
      .def("save", &PySession::save, "path"_a)
      .def("load", &PySession::load, "path"_a)
      .def("initialize", &PySession::initialize, "seed"_a)
      .def("stats", &PySession::stats)
      .def_prop_ro("microbatches", &PySession::microbatches);
}
