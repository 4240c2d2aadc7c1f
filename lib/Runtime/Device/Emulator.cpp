//===- Emulator.cpp - the CUDA executor's kernels, run on the host --------===//
//
// Host memory stands in for the device, a plain loop for each kernel launch
// and one lane for each group. Products go through BLAS with the column-major
// arguments the CUDA executor hands cuBLAS, so that mapping is tested too.
//
//===----------------------------------------------------------------------===//

#include "DeviceExecutor.h"

#include "../Memory.h"

#include <cblas.h>

#include <cstring>
#include <vector>

using namespace zcc::runtime;
using namespace zcc::runtime::device;

namespace {

/// One lane: reductions are the lane's own value, rows are visited in order.
struct HostGroup {
  int64_t lane = 0;
  int64_t lanes = 1;
  template <typename T, typename Op> T reduce(T value, Op) const {
    return value;
  }
};

/// The GPU's group of `lanes` threads, emulated by replay: every lane runs
/// the functor up to its next reduction, where it stops (an exception);
/// once the last lane gets there, the lanes' values are combined in the
/// GPU's order (a butterfly within each warp of 32, then the warps in
/// order, as CudaBackend.cu's blockReduce), and the round starts again with
/// one more result known. Group kernels write only after their reductions,
/// so the final round, which runs through, writes every result.
struct ReplayGroup {
  struct Stop {};
  int64_t lane = 0;
  int64_t lanes = 32;
  std::vector<uint64_t> *known = nullptr;    // combined results so far
  std::vector<uint64_t> *captured = nullptr; // this round, per lane
  size_t next = 0;

  template <typename T, typename Op> T reduce(T value, Op op) {
    static_assert(sizeof(T) <= sizeof(uint64_t));
    if (next < known->size()) {
      T result;
      std::memcpy(&result, &(*known)[next++], sizeof(T));
      return result;
    }
    std::memcpy(&(*captured)[lane], &value, sizeof(T));
    if (lane + 1 == lanes) {
      std::vector<T> v(static_cast<size_t>(lanes));
      for (int64_t i = 0; i < lanes; ++i)
        std::memcpy(&v[i], &(*captured)[i], sizeof(T));
      for (int offset = 16; offset > 0; offset >>= 1) {
        std::vector<T> before = v;
        for (int64_t i = 0; i < lanes; ++i)
          v[i] = op(before[i], before[i ^ offset]);
      }
      T result = v[0];
      for (int64_t w = 1; w < lanes / 32; ++w)
        result = op(result, v[w * 32]);
      uint64_t bits = 0;
      std::memcpy(&bits, &result, sizeof(T));
      known->push_back(bits);
    }
    throw Stop{};
  }
};

struct HostLauncher {
  bool gpuGroups = false;

  template <typename F> void operator()(const F &f) const {
    if (f.abort && *f.abort)
      return;
    if constexpr (F::kGrouped) {
      if (gpuGroups) {
        for (int64_t g = 0; g < f.count; ++g)
          replay(f, g);
        return;
      }
      HostGroup group;
      for (int64_t g = 0; g < f.count; ++g)
        f(g, group);
    } else {
      for (int64_t i = 0; i < f.count; ++i)
        f(i);
    }
  }

  template <typename F> void replay(const F &f, int64_t g) const {
    std::vector<uint64_t> known, captured(static_cast<size_t>(f.groupThreads));
    while (true) {
      bool finished = true;
      for (int64_t lane = 0; lane < f.groupThreads; ++lane) {
        ReplayGroup group{lane, f.groupThreads, &known, &captured};
        try {
          f(g, group);
        } catch (const ReplayGroup::Stop &) {
          finished = false;
        }
      }
      if (finished)
        return;
    }
  }

  void operator()(const Gemm &g) const {
    for (int32_t i = 0; i < g.batch; ++i)
      cblas_sgemm(CblasColMajor, g.transA ? CblasTrans : CblasNoTrans,
                  g.transB ? CblasTrans : CblasNoTrans, g.m, g.n, g.k, 1.0f,
                  g.a + i * g.strideA, g.lda, g.b + i * g.strideB, g.ldb, 0.0f,
                  g.c + i * g.strideC, g.ldc);
  }
  void operator()(const Memset &m) const {
    std::memset(m.data, m.value, m.bytes);
  }
  void operator()(const CopyIn &c) const {
    std::memcpy(c.device, c.host, c.bytes);
  }
  void operator()(const CopyOut &c) const {
    std::memcpy(c.host, c.device, c.bytes);
  }
};

class EmulatorBackend final : public Backend {
public:
  explicit EmulatorBackend(bool gpuGroups) : gpuGroups(gpuGroups) {}
  std::string name() const override {
    return "the emulator (CUDA kernels on the host)";
  }
  Status memoryInfo(uint64_t &freeBytes, uint64_t &totalBytes) override {
    // Host memory: the allocation itself is the check.
    freeBytes = totalBytes = ~uint64_t(0);
    return Status::ok();
  }
  Status allocateDevice(uint64_t bytes, const char *what,
                        uint8_t *&out) override {
    ZRT_RETURN_IF_ERROR(allocator.allocate(bytes, 256, what, out));
    device += bytes;
    return Status::ok();
  }
  Status allocateHost(uint64_t bytes, const char *what,
                      uint8_t *&out) override {
    return allocator.allocate(bytes, 256, what, out);
  }
  Status copyToDevice(void *to, const void *from, uint64_t bytes) override {
    std::memcpy(to, from, bytes);
    return Status::ok();
  }
  Status copyToHost(void *to, const void *from, uint64_t bytes) override {
    std::memcpy(to, from, bytes);
    return Status::ok();
  }
  // In list order, which respects every edge.
  Status prepare(size_t entry, std::vector<Step> steps,
                 std::vector<std::vector<uint32_t>>) override {
    if (programs.size() <= entry)
      programs.resize(entry + 1);
    programs[entry] = std::move(steps);
    return Status::ok();
  }
  Status run(size_t entry) override {
    HostLauncher launcher{gpuGroups};
    runSteps(programs[entry], launcher);
    return Status::ok();
  }
  uint64_t allocations() const override { return allocator.count(); }
  uint64_t bytesAllocated() const override { return allocator.bytes(); }
  uint64_t deviceBytes() const override { return device; }

private:
  bool gpuGroups;
  CountedAllocator allocator;
  std::vector<std::vector<Step>> programs;
  uint64_t device = 0;
};

} // namespace

std::unique_ptr<Backend>
zcc::runtime::device::createEmulatorBackend(bool gpuGroups) {
  return std::make_unique<EmulatorBackend>(gpuGroups);
}
