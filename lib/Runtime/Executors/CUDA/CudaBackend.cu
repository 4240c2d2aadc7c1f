//===- CudaBackend.cu - the CUDA executor: kernels and graphs -------------===//
//
// Each entry's program (DeviceProgram.h) is captured once, at load, into a
// CUDA graph on a private stream and instantiated; a step is one
// cudaGraphLaunch and a wait. In eager mode the same launches are issued one
// by one every step instead, for comparison. The parts: the kernels and the
// graphs here; products on cuBLAS (CudaBlas.h); collectives on NCCL
// (CudaNccl.h); the libraries loaded when a backend opens
// (CudaLibraries.h); a backend's own library calls through Backend::lower.
//
//===----------------------------------------------------------------------===//

#include "Executors/CUDA/CudaBlas.h"
#include "Executors/CUDA/CudaDnn.h"
#include "Executors/CUDA/CudaKernels.h"
#include "Executors/CUDA/CudaNccl.h"
#include "Executors/Device/DeviceExecutor.h"
#include "zcc/Runtime/Plan/PlanFile.h"

#include <cuda_runtime.h>

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

/// A kernel of this build, to ask whether the device can run its code.
__global__ void imageProbe() {}

#define ZRT_CUDA(expr, what)                                                   \
  do {                                                                         \
    cudaError_t zrtStatus = (expr);                                            \
    if (zrtStatus != cudaSuccess)                                              \
      return makeError(StatusCode::ExecutionError, describe(zrtStatus, what)); \
  } while (false)

/// Issues steps on a stream (captured into a graph, or run eagerly),
/// remembering the first error.
struct CudaLauncher {
  cudaStream_t stream;
  CudaBlas *blas;
  const CudaNccl *nccl;
  std::string error;
  /// The stream cuBLAS is bound to (capture moves between streams).
  cudaStream_t blasStream = nullptr;

  void note(cudaError_t status, const char *what) {
    if (status != cudaSuccess && error.empty())
      error = describe(status, what);
  }
  void note(const std::string &failure) {
    if (!failure.empty() && error.empty())
      error = failure;
  }

  /// A kernel of DeviceKernels.h over its grid (CudaKernels.cuh).
  template <typename F> void operator()(const F &f) {
    if (f.count > 0)
      note(cuda::launchKernel(f, stream), "kernel launch");
  }

  /// cuBLAS on the step's stream with the entry's workspace.
  void useStream(void *workspace, uint64_t workspaceBytes) {
    if (blasStream != stream) {
      note(blas->bind(stream, workspace, workspaceBytes));
      blasStream = stream;
    }
  }
  void operator()(const Gemm &g) {
    useStream(g.workspace, g.workspaceBytes);
    note(blas->run(g));
  }
  /// bf16 operands on the tensor cores, accumulated in f32.
  void operator()(const GemmBf16 &g) {
    useStream(g.workspace, g.workspaceBytes);
    note(blas->run(g));
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
    note(nccl->issue(collective, stream));
  }
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
    blas.close();
    nccl.close();
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
    ZRT_RETURN_IF_ERROR(nccl.open(comm));
    deviceName += nccl.description();
    return Status::ok();
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
        cudaFuncGetAttributes(&attributes, imageProbe);
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
    ZRT_RETURN_IF_ERROR(blas.open(stream));
    return Status::ok();
  }

  /// The device, and where bf16 attention runs (cuDNN, or why not).
  std::string name() const override {
    std::string lowering = dnn.summary();
    return lowering.empty() ? deviceName : deviceName + "; " + lowering;
  }

  bool forGpu() const override { return true; }

  Status lower(const Entry &entry, size_t index, const EntryMemory &memory,
               std::vector<Step> &out) override {
    bool lowered = false;
    ZRT_RETURN_IF_ERROR(dnn.lowerAttention(
        entry, index, memory,
        [this](uint64_t bytes, uint8_t *&at) {
          return allocateDevice(bytes, "cuDNN's workspace", at);
        },
        out, lowered));
    return lowered ? Status::ok() : appendLaunch(entry, index, memory, out);
  }

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
    // On the step's stream, and waited for: the legacy stream's cudaMemset
    // and pageable cudaMemcpy are not ordered with a non-blocking stream
    // (a copy to the device may return before its bytes land), so the
    // first kernels could read what the memory held before.
    ZRT_CUDA(cudaMemsetAsync(p, 0, std::max<uint64_t>(bytes, 256), stream),
             "cudaMemsetAsync");
    ZRT_CUDA(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
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

  // Copies on the step's stream, waited for (see allocateDevice).
  Status copyToDevice(void *to, const void *from, uint64_t bytes) override {
    if (bytes) {
      ZRT_CUDA(cudaMemcpyAsync(to, from, bytes, cudaMemcpyHostToDevice, stream),
               "cudaMemcpyAsync to the device");
      ZRT_CUDA(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }
    return Status::ok();
  }
  Status copyToHost(void *to, const void *from, uint64_t bytes) override {
    if (bytes) {
      ZRT_CUDA(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToHost, stream),
               "cudaMemcpyAsync to the host");
      ZRT_CUDA(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }
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
    std::string bound = blas.bind(stream, p.workspace, p.workspaceBytes);
    if (!bound.empty())
      return makeError(StatusCode::ExecutionError, bound);
    return Status::ok();
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

  CudaLauncher makeLauncher() { return CudaLauncher{stream, &blas, &nccl, {}, stream}; }

  Status useWorkspace(const EntryProgram &p) {
    std::string error = blas.setWorkspace(p.workspace, p.workspaceBytes);
    if (!error.empty())
      return makeError(StatusCode::ExecutionError, error);
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
  CudaBlas blas;
  CudaDnn dnn;
  CudaNccl nccl;
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
