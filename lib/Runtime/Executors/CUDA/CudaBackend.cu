//===- CudaBackend.cu - the CUDA executor: graphs, kernels, cuBLAS ---------===//
//
// Each entry's program (DeviceProgram.h) is captured once, at load, into a
// CUDA graph on a private stream and instantiated; a step is one
// cudaGraphLaunch and a wait. In eager mode the same launches are issued one
// by one every step instead, for comparison. Matmuls go to cuBLAS with the
// entry's planned workspace (cublasSetWorkspace), so cuBLAS allocates
// nothing during capture or replay. A data-parallel plan's bucket
// reductions are NCCL all-reduces captured in the same graph (NCCL supports
// capture since 2.9.6), on a communicator made at load.
//
//===----------------------------------------------------------------------===//

#include "Executors/Device/DeviceExecutor.h"
#include "zcc/Runtime/Plan/PlanFile.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#ifdef ZCC_HAVE_NCCL
#include <dlfcn.h>
#include <nccl.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace zcc::runtime;
using namespace zcc::runtime::device;

namespace {

std::string describe(cudaError_t status, const char *what) {
  return std::string(what) + ": " + cudaGetErrorName(status) + " (" +
         cudaGetErrorString(status) + ")";
}

std::string describe(cublasStatus_t status, const char *what) {
  return std::string(what) + ": " + cublasGetStatusName(status) + " (" +
         cublasGetStatusString(status) + ")";
}

#define ZRT_CUDA(expr, what)                                                   \
  do {                                                                         \
    cudaError_t zrtStatus = (expr);                                            \
    if (zrtStatus != cudaSuccess)                                              \
      return makeError(StatusCode::ExecutionError, describe(zrtStatus, what)); \
  } while (false)

#ifdef ZCC_HAVE_NCCL
/// NCCL's entry points, loaded (dlopen) when a plan needs them rather than
/// linked: a process that also loads PyTorch (the Python package) must use
/// one NCCL, the one loaded first, and a link-time dependency on the
/// toolkit's would shadow PyTorch's own.
struct NcclApi {
  decltype(&ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&ncclCommInitRank) commInitRank = nullptr;
  decltype(&ncclCommDestroy) commDestroy = nullptr;
  decltype(&ncclAllReduce) allReduce = nullptr;
  decltype(&ncclReduceScatter) reduceScatter = nullptr;
  decltype(&ncclAllGather) allGather = nullptr;
  decltype(&ncclGetErrorString) getErrorString = nullptr;
  decltype(&ncclGetVersion) getVersion = nullptr;
};

/// The process's NCCL (libnccl.so.2 on the library path, or already
/// loaded), or the reason there is none.
Status loadNccl(const NcclApi *&out) {
  static NcclApi api;
  static std::string failure;
  static bool tried = false;
  if (!tried) {
    tried = true;
    void *library = dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
    if (!library) {
      const char *why = dlerror();
      failure = std::string("cannot load NCCL (libnccl.so.2): ") +
                (why ? why : "not found") +
                "; put NCCL's lib directory on LD_LIBRARY_PATH";
    } else {
      auto bind = [&](auto &slot, const char *name) {
        slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(
            dlsym(library, name));
        if (!slot && failure.empty())
          failure = std::string("NCCL (libnccl.so.2) has no ") + name;
      };
      bind(api.getUniqueId, "ncclGetUniqueId");
      bind(api.commInitRank, "ncclCommInitRank");
      bind(api.commDestroy, "ncclCommDestroy");
      bind(api.allReduce, "ncclAllReduce");
      bind(api.reduceScatter, "ncclReduceScatter");
      bind(api.allGather, "ncclAllGather");
      bind(api.getErrorString, "ncclGetErrorString");
      bind(api.getVersion, "ncclGetVersion");
    }
  }
  if (!failure.empty())
    return makeError(StatusCode::Unsupported, failure);
  out = &api;
  return Status::ok();
}
#endif

//===----------------------------------------------------------------------===//
// Kernels: the functors of DeviceKernels.h over a grid
//===----------------------------------------------------------------------===//

/// The block's combination of every thread's `value` in a fixed order (a
/// butterfly within each warp, then the warps in order): every thread gets
/// the same bits, run after run. All threads of the block must call it.
template <typename T, typename Op> __device__ T blockReduce(T value, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1)
    value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  __shared__ T partial[32];
  int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  int warps = blockDim.x >> 5;
  __syncthreads(); // the previous reduction has read `partial`
  if (lane == 0)
    partial[warp] = value;
  __syncthreads();
  T result = partial[0];
  for (int w = 1; w < warps; ++w)
    result = op(result, partial[w]);
  return result;
}

/// A thread block as a group: lanes stride over a row together.
struct BlockGroup {
  int64_t lane;
  int64_t lanes;
  template <typename T, typename Op>
  __host__ __device__ T reduce(T value, Op op) const {
#ifdef __CUDA_ARCH__
    return blockReduce(value, op);
#else
    return value; // never called on the host
#endif
  }
};

template <typename F> __global__ void elementKernel(F f) {
  if (f.abort && *f.abort)
    return;
  runElements(f, static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x,
              f.count, static_cast<int64_t>(gridDim.x) * blockDim.x);
}

template <typename F> __global__ void groupKernel(F f) {
  if (f.abort && *f.abort)
    return;
  BlockGroup group{static_cast<int64_t>(threadIdx.x),
                   static_cast<int64_t>(blockDim.x)};
  for (int64_t g = blockIdx.x; g < f.count; g += gridDim.x)
    f(g, group);
}

constexpr int kElementThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 16;

/// Issues steps on a stream (captured into a graph, or run eagerly),
/// remembering the first error.
struct CudaLauncher {
  cudaStream_t stream;
  cublasHandle_t blas;
  std::string error;
  /// The stream cuBLAS is bound to (capture moves between streams).
  cudaStream_t blasStream = nullptr;

  void note(cudaError_t status, const char *what) {
    if (status != cudaSuccess && error.empty())
      error = describe(status, what);
  }
  void note(cublasStatus_t status, const char *what) {
    if (status != CUBLAS_STATUS_SUCCESS && error.empty())
      error = describe(status, what);
  }

  template <typename F> void operator()(const F &f) {
    if (f.count <= 0)
      return;
    if constexpr (F::kGrouped) {
      unsigned blocks = static_cast<unsigned>(std::min(f.count, kMaxBlocks));
      groupKernel<F><<<blocks, f.groupThreads, 0, stream>>>(f);
    } else {
      int64_t needed = (f.count + kElementThreads - 1) / kElementThreads;
      unsigned blocks = static_cast<unsigned>(std::min(needed, kMaxBlocks));
      elementKernel<F><<<blocks, kElementThreads, 0, stream>>>(f);
    }
    note(cudaGetLastError(), "kernel launch");
  }

  /// cuBLAS on the step's stream with the entry's workspace.
  void useStream(void *workspace, uint64_t workspaceBytes) {
    if (blasStream != stream) {
      // cublasSetStream drops the user workspace: give it back at once.
      note(cublasSetStream(blas, stream), "cublasSetStream");
      note(cublasSetWorkspace(blas, workspace, workspaceBytes),
           "cublasSetWorkspace");
      blasStream = stream;
    }
  }

  void operator()(const Gemm &g) {
    useStream(g.workspace, g.workspaceBytes);
    const float one = 1.0f, beta = g.beta;
    cublasOperation_t ta = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (g.batch == 1)
      note(cublasSgemm(blas, ta, tb, g.m, g.n, g.k, &one, g.a, g.lda, g.b,
                       g.ldb, &beta, g.c, g.ldc),
           "cublasSgemm");
    else
      note(cublasSgemmStridedBatched(blas, ta, tb, g.m, g.n, g.k, &one, g.a,
                                     g.lda, g.strideA, g.b, g.ldb, g.strideB,
                                     &beta, g.c, g.ldc, g.strideC, g.batch),
           "cublasSgemmStridedBatched");
  }
  /// bf16 operands on the tensor cores, accumulated in f32.
  void operator()(const GemmBf16 &g) {
    useStream(g.workspace, g.workspaceBytes);
    const float one = 1.0f, beta = g.beta;
    cublasOperation_t ta = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    cudaDataType_t ctype = g.cBf16 ? CUDA_R_16BF : CUDA_R_32F;
    note(cublasGemmStridedBatchedEx(
             blas, ta, tb, g.m, g.n, g.k, &one, g.a, CUDA_R_16BF, g.lda,
             g.strideA, g.b, CUDA_R_16BF, g.ldb, g.strideB, &beta, g.c, ctype,
             g.ldc, g.strideC, g.batch, CUBLAS_COMPUTE_32F,
             CUBLAS_GEMM_DEFAULT),
         "cublasGemmStridedBatchedEx (bf16)");
  }
  /// A call the backend lowered a launch to (Backend::lower).
  void operator()(const BackendCall &c) {
    Status issued = c.call->issue(stream);
    if (!issued.isOk() && error.empty())
      error = c.call->describe() + ": " + issued.message();
  }
  void operator()(const Memset &m) {
    if (m.bytes)
      note(cudaMemsetAsync(m.data, m.value, m.bytes, stream), "cudaMemsetAsync");
  }
  void operator()(const CopyIn &c) {
    if (c.bytes)
      note(cudaMemcpyAsync(c.device, c.host, c.bytes, cudaMemcpyHostToDevice,
                           stream),
           "cudaMemcpyAsync (inputs)");
  }
  void operator()(const CopyOut &c) {
    if (c.bytes)
      note(cudaMemcpyAsync(c.host, c.device, c.bytes, cudaMemcpyDeviceToHost,
                           stream),
           "cudaMemcpyAsync (outputs)");
  }
  void operator()(const Collective &collective) {
    using Kind = CollectiveCall::Kind;
    const CollectiveCall &c = collective.call;
#ifdef ZCC_HAVE_NCCL
    if (nccl) {
      ncclDataType_t type = collective.wide() ? ncclDouble : ncclFloat;
      // ncclAvg: the sum over the ranks divided by their number.
      ncclRedOp_t op = c.mean ? ncclAvg : ncclSum;
      ncclResult_t r = ncclSuccess;
      switch (c.kind) {
      case Kind::AllReduce:
        r = ncclApi->allReduce(c.data, c.data, c.count, type, op, nccl, stream);
        break;
      case Kind::ReduceScatter:
        r = ncclApi->reduceScatter(c.source, c.data, c.count, type, op, nccl,
                                   stream);
        break;
      case Kind::AllGather:
        r = ncclApi->allGather(c.source, c.data, c.count, type, nccl, stream);
        break;
      }
      if (r != ncclSuccess && error.empty())
        error = std::string("NCCL collective: ") + ncclApi->getErrorString(r);
      return;
    }
#endif
    // No communicator: one rank, whose sum and mean are its own values and
    // whose shard is the whole. Several ranks without NCCL fail at load
    // (openNccl).
    Communicator *comm = collective.communicator;
    if (comm && comm->size() > 1 && error.empty())
      error = "a collective over " + std::to_string(comm->size()) +
              " ranks without an NCCL communicator";
    if (c.kind != Kind::AllReduce && c.count)
      note(cudaMemcpyAsync(c.data, c.source, collective.bytes(),
                           cudaMemcpyDeviceToDevice, stream),
           "cudaMemcpyAsync (one rank's shard)");
  }

#ifdef ZCC_HAVE_NCCL
  ncclComm_t nccl = nullptr;
  const NcclApi *ncclApi = nullptr;
#endif
};

//===----------------------------------------------------------------------===//
// The backend
//===----------------------------------------------------------------------===//

/// Streams a graph's independent branches are captured on, the entry's
/// own stream included; ZCC_CUDA_GRAPH_STREAMS (1 to 16) overrides it, 1
/// giving one linear chain (for comparison).
constexpr size_t kCaptureStreams = 4;

size_t captureStreams() {
  const char *text = std::getenv("ZCC_CUDA_GRAPH_STREAMS");
  if (!text || !*text)
    return kCaptureStreams;
  long value = std::strtol(text, nullptr, 10);
  return static_cast<size_t>(std::clamp(value, 1L, 16L));
}

struct EntryProgram {
  std::vector<Step> steps;
  std::vector<cudaEvent_t> done; // per step, while capturing
  void *workspace = nullptr;
  uint64_t workspaceBytes = 0;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
};

class CudaBackend final : public Backend {
public:
  CudaBackend(int ordinal, LaunchMode launch) : ordinal(ordinal), mode(launch) {}
  ~CudaBackend() override {
    for (EntryProgram &p : programs) {
      for (cudaEvent_t event : p.done)
        cudaEventDestroy(event);
      if (p.exec)
        cudaGraphExecDestroy(p.exec);
      if (p.graph)
        cudaGraphDestroy(p.graph);
    }
    if (blas)
      cublasDestroy(blas);
#ifdef ZCC_HAVE_NCCL
    if (nccl)
      ncclApi->commDestroy(nccl);
#endif
    for (cudaStream_t branch : branches)
      cudaStreamDestroy(branch);
    if (stepDone)
      cudaEventDestroy(stepDone);
    if (stream)
      cudaStreamDestroy(stream);
    for (void *p : deviceBlocks)
      cudaFree(p);
    for (void *p : hostBlocks)
      cudaFreeHost(p);
  }

  /// The NCCL communicator of the job's ranks (`comm`, or this process
  /// alone), one GPU each: rank 0's unique id goes to the others through
  /// `comm`.
  Status openNccl(Communicator *comm) {
    if (comm && comm->size() > 1) {
      ZRT_RETURN_IF_ERROR(
          checkOneRankPerDevice(*comm, uuid, visible, deviceName));
      job = comm;
    }
#ifdef ZCC_HAVE_NCCL
    int rank = comm ? comm->rank() : 0, ranks = comm ? comm->size() : 1;
    Status loaded = loadNccl(ncclApi);
    // Every rank takes part in the broadcast below, loaded or not.
    ncclUniqueId id{};
    if (rank == 0 && loaded.isOk()) {
      ncclResult_t r = ncclApi->getUniqueId(&id);
      if (r != ncclSuccess)
        return makeError(StatusCode::ExecutionError, "ncclGetUniqueId: ",
                         ncclApi->getErrorString(r));
    }
    if (comm)
      comm->broadcast(&id, sizeof(id));
    if (!loaded.isOk()) {
      // One rank needs no communication: the collectives run as copies.
      ncclApi = nullptr;
      return ranks == 1 ? Status::ok() : loaded;
    }
    ncclResult_t r = ncclApi->commInitRank(&nccl, ranks, id, rank);
    if (r != ncclSuccess)
      return makeError(StatusCode::ExecutionError, "ncclCommInitRank (rank ",
                       rank, " of ", ranks,
                       "): ", ncclApi->getErrorString(r));
    int version = 0;
    ncclApi->getVersion(&version);
    deviceName += ", NCCL " + std::to_string(version / 10000) + "." +
                  std::to_string(version / 100 % 100) + "." +
                  std::to_string(version % 100) + " over " +
                  std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks");
    return Status::ok();
#else
    // One rank needs no communication; several need NCCL.
    if (!comm || comm->size() == 1)
      return Status::ok();
    return makeError(StatusCode::Unsupported,
                     "this plan reduces gradients over the ", comm->size(),
                     " ranks of a data-parallel job, and this runtime's CUDA "
                     "executor was built without NCCL (configure where "
                     "nccl.h and libnccl are found, or -DNCCL_ROOT=)");
#endif
  }

  Status open(const Communicator *comm) {
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      return makeError(StatusCode::Unsupported,
                       "no usable CUDA device: ",
                       describe(status, "cudaGetDeviceCount"));
    }
    if (count == 0)
      return makeError(StatusCode::Unsupported,
                       "no usable CUDA device: cudaGetDeviceCount found none");
    visible = count;
    ZRT_RETURN_IF_ERROR(chooseCudaDevice(ordinal, comm, count, ordinal));
    ZRT_CUDA(cudaSetDevice(ordinal), "cudaSetDevice");
    cudaDeviceProp props{};
    ZRT_CUDA(cudaGetDeviceProperties(&props, ordinal),
             "cudaGetDeviceProperties");
    uuid = fnv1a64(reinterpret_cast<const uint8_t *>(props.uuid.bytes),
                   sizeof(props.uuid.bytes));
    deviceName = std::string(props.name) + " (device " +
                 std::to_string(ordinal) + ", sm_" +
                 std::to_string(props.major) + std::to_string(props.minor) +
                 ")";
    // A build for another architecture has no code this device can run.
    cudaFuncAttributes attributes{};
    cudaError_t image =
        cudaFuncGetAttributes(&attributes, elementKernel<Fill>);
    if (image != cudaSuccess) {
      (void)cudaGetLastError();
      return makeError(StatusCode::Unsupported, deviceName,
                       " cannot run this build's kernels (",
                       describe(image, "cudaFuncGetAttributes"),
                       "): configure with -DCMAKE_CUDA_ARCHITECTURES=",
                       props.major, props.minor);
    }
    ZRT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
             "cudaStreamCreate");
    ZRT_CUDA(cudaEventCreateWithFlags(&stepDone, cudaEventDisableTiming),
             "cudaEventCreate");
    if (mode == LaunchMode::Graph)
      for (size_t i = 1, n = captureStreams(); i < n; ++i) {
        cudaStream_t branch = nullptr;
        ZRT_CUDA(cudaStreamCreateWithFlags(&branch, cudaStreamNonBlocking),
                 "cudaStreamCreate");
        branches.push_back(branch);
      }
    cublasStatus_t b = cublasCreate(&blas);
    if (b != CUBLAS_STATUS_SUCCESS)
      return makeError(StatusCode::ExecutionError,
                       describe(b, "cublasCreate"));
    b = cublasSetStream(blas, stream);
    if (b == CUBLAS_STATUS_SUCCESS)
      b = cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH); // f32, no TF32
    if (b != CUBLAS_STATUS_SUCCESS)
      return makeError(StatusCode::ExecutionError,
                       describe(b, "cublasSetStream"));
    return Status::ok();
  }

  std::string name() const override { return deviceName; }

  Status memoryInfo(uint64_t &freeBytes, uint64_t &totalBytes) override {
    size_t f = 0, t = 0;
    ZRT_CUDA(cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
    freeBytes = f;
    totalBytes = t;
    return Status::ok();
  }

  Status allocateDevice(uint64_t bytes, const char *what,
                        uint8_t *&out) override {
    void *p = nullptr;
    cudaError_t status = cudaMalloc(&p, std::max<uint64_t>(bytes, 256));
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      return makeError(StatusCode::OutOfMemory, "cannot allocate ", bytes,
                       " bytes of device memory for the ", what, " on ",
                       deviceName, ": ", describe(status, "cudaMalloc"));
    }
    deviceBlocks.push_back(p);
    ZRT_CUDA(cudaMemset(p, 0, std::max<uint64_t>(bytes, 256)), "cudaMemset");
    ++count;
    allocated += bytes;
    device += bytes;
    out = static_cast<uint8_t *>(p);
    return Status::ok();
  }

  Status allocateHost(uint64_t bytes, const char *what,
                      uint8_t *&out) override {
    void *p = nullptr;
    uint64_t size = std::max<uint64_t>(bytes, 256);
    cudaError_t status = cudaHostAlloc(&p, size, cudaHostAllocDefault);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      return makeError(StatusCode::OutOfMemory, "cannot allocate ", bytes,
                       " bytes of pinned host memory for the ", what, ": ",
                       describe(status, "cudaHostAlloc"));
    }
    hostBlocks.push_back(p);
    std::memset(p, 0, size);
    ++count;
    allocated += bytes;
    out = static_cast<uint8_t *>(p);
    return Status::ok();
  }

  Status copyToDevice(void *to, const void *from, uint64_t bytes) override {
    if (bytes)
      ZRT_CUDA(cudaMemcpy(to, from, bytes, cudaMemcpyHostToDevice),
               "cudaMemcpy to the device");
    return Status::ok();
  }
  Status copyToHost(void *to, const void *from, uint64_t bytes) override {
    if (bytes)
      ZRT_CUDA(cudaMemcpy(to, from, bytes, cudaMemcpyDeviceToHost),
               "cudaMemcpy to the host");
    return Status::ok();
  }

  Status prepare(size_t entry, std::vector<Step> steps,
                 const StepOrder &order) override {
    if (programs.size() <= entry)
      programs.resize(entry + 1);
    EntryProgram &p = programs[entry];
    p.steps = std::move(steps);
    for (const Step &step : p.steps)
      if (const GemmShape *g = productOf(step)) {
        p.workspace = g->workspace;
        p.workspaceBytes = g->workspaceBytes;
      }
    if (mode == LaunchMode::Eager)
      return Status::ok();
    // Capture once; cuBLAS must see the entry's workspace before capture or
    // it would allocate its own while capturing.
    ZRT_RETURN_IF_ERROR(useWorkspace(p));
    p.done.assign(p.steps.size(), nullptr);
    for (cudaEvent_t &event : p.done)
      ZRT_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
               "cudaEventCreate");
    ZRT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
             "cudaStreamBeginCapture");
    CudaLauncher launcher = makeLauncher();
    captureBranches(p, order, launcher);
    cudaError_t ended = cudaStreamEndCapture(stream, &p.graph);
    if (!launcher.error.empty())
      return makeError(StatusCode::ExecutionError, "capturing entry ", entry,
                       ": ", launcher.error);
    ZRT_CUDA(ended, "cudaStreamEndCapture");
    ZRT_CUDA(cudaGraphInstantiate(&p.exec, p.graph, 0), "cudaGraphInstantiate");
    ZRT_CUDA(cudaGraphUpload(p.exec, stream), "cudaGraphUpload");
    ZRT_CUDA(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    // Later captures and eager use start from the entry's own stream.
    if (cublasSetStream(blas, stream) != CUBLAS_STATUS_SUCCESS)
      return makeError(StatusCode::ExecutionError, "cublasSetStream failed");
    return useWorkspace(p);
  }

  Status run(size_t entry) override {
    EntryProgram &p = programs[entry];
    auto start = std::chrono::steady_clock::now();
    if (mode == LaunchMode::Graph) {
      ZRT_CUDA(cudaGraphLaunch(p.exec, stream), "cudaGraphLaunch");
    } else {
      ZRT_RETURN_IF_ERROR(useWorkspace(p));
      CudaLauncher launcher = makeLauncher();
      runSteps(p.steps, launcher);
      if (!launcher.error.empty())
        return makeError(StatusCode::ExecutionError, launcher.error);
    }
    issued += std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            start)
                  .count();
    if (!job) {
      ZRT_CUDA(cudaStreamSynchronize(stream), "the step");
      return Status::ok();
    }
    // A rank that hangs would hold NCCL's kernels, and a synchronize, here
    // forever: the job's deadline bounds the wait and names that rank.
    ZRT_CUDA(cudaEventRecord(stepDone, stream), "cudaEventRecord");
    cudaError_t result = cudaSuccess;
    job->await(
        [&] {
          result = cudaEventQuery(stepDone);
          return result != cudaErrorNotReady;
        },
        "a step's NCCL collectives");
    ZRT_CUDA(result, "the step");
    return Status::ok();
  }

  uint64_t allocations() const override { return count; }
  uint64_t bytesAllocated() const override { return allocated; }
  uint64_t deviceBytes() const override { return device; }
  double issueSeconds() const override { return issued; }

private:
  /// Issues the steps on up to captureStreams() streams so that the captured
  /// graph's edges are the steps' dependencies: a step goes on the stream of
  /// its latest dependency when that is the stream's last step, else on a
  /// stream whose last step it already follows, else on a fresh stream,
  /// else on the stream idle longest; it waits for the events of the
  /// dependencies its stream does not already order. A step with none goes
  /// on the entry's stream, the capture's origin. Every stream joins the
  /// origin at the end.
  void captureBranches(EntryProgram &p, const StepOrder &order,
                       CudaLauncher &launcher) {
    std::vector<cudaStream_t> streams{stream};
    streams.insert(streams.end(), branches.begin(), branches.end());
    // The last step on each stream; a branch stream is in the capture once
    // it has one, the origin from the start.
    std::vector<int64_t> last(streams.size(), -1);
    auto open = [&](size_t s) { return s == 0 || last[s] >= 0; };
    for (size_t i = 0; i < p.steps.size() && launcher.error.empty(); ++i) {
      const std::vector<uint32_t> &after = order.after[i];
      size_t chosen = 0;
      bool found = after.empty();
      for (size_t s = 0; s < streams.size() && !found; ++s)
        if (last[s] >= 0 && last[s] == after.front())
          chosen = s, found = true;
      for (size_t s = 0; s < streams.size() && !found; ++s)
        if (open(s) && (last[s] < 0 || order.follows(i, last[s])))
          chosen = s, found = true;
      for (size_t s = 0; s < streams.size() && !found; ++s)
        if (!open(s))
          chosen = s, found = true;
      if (!found) {
        chosen = 0;
        for (size_t s = 1; s < streams.size(); ++s)
          if (last[s] < last[chosen])
            chosen = s;
      }
      for (uint32_t d : after)
        if (static_cast<int64_t>(d) != last[chosen])
          launcher.note(cudaStreamWaitEvent(streams[chosen], p.done[d], 0),
                        "cudaStreamWaitEvent");
      launcher.stream = streams[chosen];
      std::visit(launcher, p.steps[i]);
      launcher.note(cudaEventRecord(p.done[i], streams[chosen]),
                    "cudaEventRecord");
      last[chosen] = static_cast<int64_t>(i);
    }
    for (size_t s = 1; s < streams.size(); ++s)
      if (last[s] >= 0)
        launcher.note(cudaStreamWaitEvent(stream, p.done[last[s]], 0),
                      "cudaStreamWaitEvent");
    launcher.stream = stream;
  }

  CudaLauncher makeLauncher() {
    CudaLauncher launcher{stream, blas, {}, stream};
#ifdef ZCC_HAVE_NCCL
    launcher.nccl = nccl;
    launcher.ncclApi = ncclApi;
#endif
    return launcher;
  }

  Status useWorkspace(const EntryProgram &p) {
    cublasStatus_t status =
        cublasSetWorkspace(blas, p.workspace, p.workspaceBytes);
    if (status != CUBLAS_STATUS_SUCCESS)
      return makeError(StatusCode::ExecutionError,
                       describe(status, "cublasSetWorkspace"));
    return Status::ok();
  }

  int ordinal;
  LaunchMode mode;
  std::string deviceName;
  uint64_t uuid = 0; // a hash of the device's UUID: one GPU on any host
  Communicator *job = nullptr; // the ranks, when there are several
  cudaEvent_t stepDone = nullptr;
  int visible = 0;   // the devices this process sees
  cudaStream_t stream = nullptr;
  std::vector<cudaStream_t> branches; // graph capture's other streams
  cublasHandle_t blas = nullptr;
#ifdef ZCC_HAVE_NCCL
  ncclComm_t nccl = nullptr;
  const NcclApi *ncclApi = nullptr;
#endif
  std::vector<EntryProgram> programs;
  std::vector<void *> deviceBlocks, hostBlocks;
  uint64_t count = 0, allocated = 0, device = 0;
  double issued = 0;
};

} // namespace

Status zcc::runtime::device::createCudaBackend(int ordinal, LaunchMode launch,
                                               bool collectives,
                                               Communicator *comm,
                                               std::unique_ptr<Backend> &out) {
  auto backend = std::make_unique<CudaBackend>(ordinal, launch);
  ZRT_RETURN_IF_ERROR(backend->open(comm));
  if (collectives)
    ZRT_RETURN_IF_ERROR(backend->openNccl(comm));
  out = std::move(backend);
  return Status::ok();
}
