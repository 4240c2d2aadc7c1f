//===- CudaDnn.cpp - attention on cuDNN's fused SDPA ----------------------===//

#include "Executors/CUDA/CudaDnn.h"

#include "zcc/Runtime/Plan/KernelRules.h"

#include <cstdlib>
#include <dlfcn.h>
#include <exception>
#include <map>
#include <tuple>
#include <unordered_map>

#ifdef ZCC_HAVE_CUDNN
// cuDNN is loaded with dlopen (cudnn_dlhandle), as cuBLAS and NCCL are.
#define NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING
#define CUDNN_FRONTEND_SKIP_JSON_LIB
#include <cudnn_frontend.h>

namespace cudnn_frontend {
void *cudnn_dlhandle = nullptr;
} // namespace cudnn_frontend
#endif

#ifndef ZCC_CUDNN_SONAME
#define ZCC_CUDNN_SONAME "libcudnn.so.9"
#endif
#ifndef ZCC_CUDNN_FALLBACK
#define ZCC_CUDNN_FALLBACK ""
#endif

using namespace zcc::runtime;
using namespace zcc::runtime::device;

#ifdef ZCC_HAVE_CUDNN
namespace fe = cudnn_frontend;

namespace {

// The graphs' tensors, by uid.
enum : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

/// What a graph is built for: launches alike share one.
struct SdpaKey {
  bool grad = false, causal = false;
  int64_t b = 0, hq = 0, hk = 0, s = 0, t = 0, d = 0, dv = 0;
  double scale = 0;
  /// Each tensor's steps [b, h, s, d] by uid (the plan's views: heads read
  /// from a fused projection, results written in the next product's layout).
  std::map<int64_t, std::vector<int64_t>> steps;
  bool operator<(const SdpaKey &o) const {
    return std::tie(grad, causal, b, hq, hk, s, t, d, dv, scale, steps) <
           std::tie(o.grad, o.causal, o.b, o.hq, o.hk, o.s, o.t, o.d, o.dv,
                    o.scale, o.steps);
  }
};

struct SdpaGraph {
  std::shared_ptr<fe::graph::Graph> graph;
  int64_t workspaceBytes = 0;
  std::string failure; // why it could not be built (then no graph)
};

std::vector<int64_t> contiguous(const std::vector<int64_t> &dim) {
  std::vector<int64_t> stride(dim.size(), 1);
  for (size_t i = dim.size() - 1; i-- > 0;)
    stride[i] = stride[i + 1] * dim[i + 1];
  return stride;
}

/// One launch's cuDNN call: the graph, its tensors' addresses, the workspace.
class SdpaCall final : public LibraryCall {
public:
  SdpaCall(cudnnHandle_t handle, std::shared_ptr<fe::graph::Graph> graph,
           std::unordered_map<int64_t, void *> pack, void *workspace,
           std::string what)
      : handle(handle), graph(std::move(graph)), pack(std::move(pack)),
        workspace(workspace), what(std::move(what)) {}

  Status issue(void *stream) const override {
    try {
      cudnnStatus_t bound =
          fe::detail::set_stream(handle, static_cast<cudaStream_t>(stream));
      if (bound != CUDNN_STATUS_SUCCESS)
        return makeError(StatusCode::ExecutionError, "cudnnSetStream failed (",
                         static_cast<int>(bound), ")");
      fe::error_t done = graph->execute(handle, pack, workspace);
      if (done.is_bad())
        return makeError(StatusCode::ExecutionError, done.get_message());
    } catch (const std::exception &e) {
      return makeError(StatusCode::ExecutionError, e.what());
    }
    return Status::ok();
  }
  std::string describe() const override { return what; }

private:
  cudnnHandle_t handle;
  std::shared_ptr<fe::graph::Graph> graph;
  mutable std::unordered_map<int64_t, void *> pack; // execute takes it by &
  void *workspace;
  std::string what;
};

} // namespace

struct CudaDnn::State {
  bool tried = false;
  std::string unavailable; // why cuDNN cannot be used at all
  std::string version;
  cudnnHandle_t handle = nullptr;
  std::map<SdpaKey, SdpaGraph> graphs;
  std::vector<std::unique_ptr<SdpaCall>> calls;
  uint8_t *workspace = nullptr;
  uint64_t workspaceBytes = 0;
  int64_t lowered = 0;
  std::map<std::string, int64_t> declined; // reason -> launches

  /// Loads cuDNN and makes the handle, once.
  bool open() {
    if (tried)
      return unavailable.empty();
    tried = true;
    if (const char *env = std::getenv("ZCC_CUDNN"); env && *env == '0') {
      unavailable = "ZCC_CUDNN=0";
      return false;
    }
    void *library = dlopen(ZCC_CUDNN_SONAME, RTLD_NOW | RTLD_GLOBAL);
    if (!library && *ZCC_CUDNN_FALLBACK)
      library = dlopen(ZCC_CUDNN_FALLBACK, RTLD_NOW | RTLD_GLOBAL);
    if (!library) {
      const char *why = dlerror();
      unavailable = std::string("cannot load cuDNN (") + ZCC_CUDNN_SONAME +
                    "): " + (why ? why : "not found") +
                    "; put cuDNN's lib directory on LD_LIBRARY_PATH";
      return false;
    }
    fe::cudnn_dlhandle = library;
    try {
      size_t v = fe::detail::get_backend_version();
      version = std::to_string(v / 10000) + "." +
                std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
      cudnnStatus_t made = fe::detail::create_handle(&handle);
      if (made != CUDNN_STATUS_SUCCESS) {
        unavailable = "cudnnCreate failed (" +
                      std::to_string(static_cast<int>(made)) + ")";
        handle = nullptr;
        return false;
      }
    } catch (const std::exception &e) {
      unavailable = std::string("cuDNN: ") + e.what();
      return false;
    }
    return true;
  }

  /// The graph for `key`, built the first time it is asked for.
  const SdpaGraph &graphFor(const SdpaKey &key) {
    auto found = graphs.find(key);
    if (found != graphs.end())
      return found->second;
    SdpaGraph &made = graphs[key];
    try {
      build(key, made);
    } catch (const std::exception &e) {
      made.graph.reset();
      made.failure = e.what();
    }
    return made;
  }

  void build(const SdpaKey &k, SdpaGraph &out) {
    auto graph = std::make_shared<fe::graph::Graph>();
    graph->set_io_data_type(fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    auto stepsOf = [&](int64_t uid, const std::vector<int64_t> &dim) {
      auto found = k.steps.find(uid);
      return found != k.steps.end() ? found->second : contiguous(dim);
    };
    auto tensor = [&](const char *name, int64_t uid,
                      std::vector<int64_t> dim) {
      std::vector<int64_t> stride = stepsOf(uid, dim);
      return graph->tensor(fe::graph::Tensor_attributes()
                               .set_name(name)
                               .set_uid(uid)
                               .set_dim(dim)
                               .set_stride(stride));
    };
    auto output = [&](const std::shared_ptr<fe::graph::Tensor_attributes> &t,
                      int64_t uid, std::vector<int64_t> dim) {
      t->set_output(true).set_uid(uid).set_dim(dim).set_stride(
          stepsOf(uid, dim));
    };
    auto q = tensor("q", kQ, {k.b, k.hq, k.s, k.d});
    auto key = tensor("k", kK, {k.b, k.hk, k.t, k.d});
    auto v = tensor("v", kV, {k.b, k.hk, k.t, k.dv});
    float scale = static_cast<float>(k.scale);
    if (!k.grad) {
      auto options = fe::graph::SDPA_attributes()
                         .set_name("attention")
                         .set_generate_stats(true)
                         .set_attn_scale(scale);
      if (k.causal)
        options.set_causal_mask(true);
      auto [o, stats] = graph->sdpa(q, key, v, options);
      output(o, kO, {k.b, k.hq, k.s, k.dv});
      output(stats, kStats, {k.b, k.hq, k.s, 1});
      stats->set_data_type(fe::DataType_t::FLOAT);
    } else {
      auto o = tensor("o", kO, {k.b, k.hq, k.s, k.dv});
      auto dO = tensor("do", kDO, {k.b, k.hq, k.s, k.dv});
      auto stats = tensor("stats", kStats, {k.b, k.hq, k.s, 1});
      stats->set_data_type(fe::DataType_t::FLOAT);
      // Deterministic: the plan's runs are bit for bit the same.
      auto options = fe::graph::SDPA_backward_attributes()
                         .set_name("attention_grad")
                         .set_attn_scale(scale)
                         .set_deterministic_algorithm(true);
      if (k.causal)
        options.set_causal_mask(true);
      auto [dq, dk, dv] = graph->sdpa_backward(q, key, v, o, dO, stats, options);
      output(dq, kDQ, {k.b, k.hq, k.s, k.d});
      output(dk, kDK, {k.b, k.hk, k.t, k.d});
      output(dv, kDV, {k.b, k.hk, k.t, k.dv});
    }
    fe::error_t built = graph->build(handle, {fe::HeurMode_t::A});
    if (built.is_bad()) {
      out.failure = built.get_message();
      return;
    }
    int64_t bytes = 0;
    fe::error_t sized = graph->get_workspace_size(bytes);
    if (sized.is_bad()) {
      out.failure = sized.get_message();
      return;
    }
    out.graph = std::move(graph);
    out.workspaceBytes = bytes;
  }
};

CudaDnn::CudaDnn() : state(std::make_unique<State>()) {}

CudaDnn::~CudaDnn() {
  if (state && state->handle) {
    try {
      state->calls.clear();
      state->graphs.clear();
      fe::detail::destroy_handle(state->handle);
    } catch (...) {
    }
  }
}

Status CudaDnn::lowerAttention(const Entry &entry, size_t index,
                               const EntryMemory &memory,
                               const Allocate &allocate,
                               std::vector<Step> &out, bool &lowered) {
  lowered = false;
  const Launch &launch = entry.launches[index];
  bool grad = launch.kernel == KernelId::AttentionGrad;
  if (!grad && launch.kernel != KernelId::Attention)
    return Status::ok();
  const TensorType &query = entry.tensors[launch.inputs[0]].type;
  if (query.dtype != DType::BF16) // f32 stays on the reference kernels
    return Status::ok();
  State &s = *state;
  auto decline = [&](const std::string &why) {
    ++s.declined[why];
    return Status::ok();
  };
  if (!s.open())
    return decline(s.unavailable);
  if (launch.params.dropout.has_value())
    return decline("dropout (zcc draws its own Philox stream, which cuDNN's "
                   "dropout does not reproduce)");
  if (launch.inputs.size() > (grad ? 6u : 3u))
    return decline("a mask");

  // [B..., S, D] as cuDNN's [b, h, s, d]: the last batch dimension the
  // heads (the key heads fewer for grouped-query attention), the ones
  // before it the batch.
  const TensorType &keyType = entry.tensors[launch.inputs[1]].type;
  const TensorType &valueType = entry.tensors[launch.inputs[2]].type;
  size_t rank = query.shape.size();
  AttentionShape a = attentionShape(entry, launch);
  SdpaKey key;
  key.grad = grad;
  key.causal = launch.params.causal;
  key.scale = launch.params.scale;
  key.s = a.queries;
  key.t = a.keys;
  key.d = a.head;
  key.dv = a.valueHead;
  if (rank >= 4) {
    key.hq = query.shape[rank - 3];
    key.hk = keyType.shape[rank - 3];
    key.b = key.hq ? a.batch / key.hq : 0;
  } else {
    key.b = 1;
    key.hq = a.batch;
    key.hk = shapeProduct(valueType.shape, 0, rank - 2);
  }
  if (a.batch == 0 || key.s == 0 || key.t == 0)
    return decline("an empty tensor");
  if (key.d % 8 || key.dv % 8)
    return decline("a head size not a multiple of 8");

  // Each tensor's steps, read from the plan (a view's, or row-major).
  auto steps = [&](int64_t uid, uint32_t tensor, int64_t heads, int64_t rows) {
    HeadLayout l;
    (void)headLayout(entry.tensors[tensor], l); // checked at load
    // A dimension of one takes the step row-major order would give it.
    if (heads == 1)
      l.head = rows * l.row;
    if (key.b == 1)
      l.outer = heads * l.head;
    key.steps[uid] = {l.outer, l.head, l.row, 1};
  };
  steps(kQ, launch.inputs[0], key.hq, key.s);
  steps(kK, launch.inputs[1], key.hk, key.t);
  steps(kV, launch.inputs[2], key.hk, key.t);
  if (!grad) {
    steps(kO, launch.outputs[0], key.hq, key.s);
  } else {
    steps(kO, launch.inputs[3], key.hq, key.s);
    steps(kDO, launch.inputs[5], key.hq, key.s);
    steps(kDQ, launch.outputs[0], key.hq, key.s);
    steps(kDK, launch.outputs[1], key.hk, key.t);
    steps(kDV, launch.outputs[2], key.hk, key.t);
  }

  const SdpaGraph &g = s.graphFor(key);
  if (!g.graph)
    return decline("no cuDNN engine for the shape: " + g.failure);
  uint64_t need = static_cast<uint64_t>(g.workspaceBytes);
  if (need > s.workspaceBytes) {
    // Calls made earlier keep the smaller one: attention's launches use
    // the entry's workspace, so they never run at once.
    ZRT_RETURN_IF_ERROR(allocate(need, s.workspace));
    s.workspaceBytes = need;
  }
  auto at = [&](uint32_t tensor) -> void * {
    const Tensor &t = entry.tensors[tensor]; // bf16: 2 bytes an element
    return static_cast<uint8_t *>(memory.buffers[t.buffer]) +
           t.offset * dtypeBytes(t.type.dtype);
  };
  std::unordered_map<int64_t, void *> pack;
  pack[kQ] = at(launch.inputs[0]);
  pack[kK] = at(launch.inputs[1]);
  pack[kV] = at(launch.inputs[2]);
  if (!grad) {
    pack[kO] = at(launch.outputs[0]);
    pack[kStats] = at(launch.outputs[1]);
  } else {
    pack[kO] = at(launch.inputs[3]);
    pack[kStats] = at(launch.inputs[4]);
    pack[kDO] = at(launch.inputs[5]);
    pack[kDQ] = at(launch.outputs[0]);
    pack[kDK] = at(launch.outputs[1]);
    pack[kDV] = at(launch.outputs[2]);
  }
  std::string what = std::string("cuDNN ") + s.version + " SDPA " +
                     (grad ? "backward" : "forward") + " (bf16" +
                     (key.causal ? ", causal" : "") + ")";
  s.calls.push_back(std::make_unique<SdpaCall>(
      s.handle, g.graph, std::move(pack), need ? s.workspace : nullptr, what));
  BackendCall call;
  call.call = s.calls.back().get();
  call.usesWorkspace = true;
  out.push_back(call);
  ++s.lowered;
  lowered = true;
  return Status::ok();
}

std::string CudaDnn::summary() const {
  const State &s = *state;
  if (!s.lowered && s.declined.empty())
    return {};
  std::string text;
  if (s.lowered)
    text = "attention on cuDNN " + s.version + " SDPA: " +
           std::to_string(s.lowered) + " launches";
  for (const auto &[why, count] : s.declined)
    text += (text.empty() ? "" : "; ") + std::string("bf16 attention on the "
                                                     "reference kernels: ") +
            std::to_string(count) + " (" + why + ")";
  return text;
}

#else // no cuDNN headers at build time

struct CudaDnn::State {
  int64_t declined = 0;
};

CudaDnn::CudaDnn() : state(std::make_unique<State>()) {}
CudaDnn::~CudaDnn() = default;

Status CudaDnn::lowerAttention(const Entry &entry, size_t index,
                               const EntryMemory &, const Allocate &,
                               std::vector<Step> &, bool &lowered) {
  lowered = false;
  const Launch &launch = entry.launches[index];
  if ((launch.kernel == KernelId::Attention ||
       launch.kernel == KernelId::AttentionGrad) &&
      entry.tensors[launch.inputs[0]].type.dtype == DType::BF16)
    ++state->declined;
  return Status::ok();
}

std::string CudaDnn::summary() const {
  if (!state->declined)
    return {};
  return "bf16 attention on the reference kernels: " +
         std::to_string(state->declined) +
         " (this runtime was built without cudnn-frontend's headers)";
}

#endif
