//===- CudaKernels.cuh - the grids of DeviceKernels.h's functors -*- C++ -*-===//
//
// Included by each share file (CudaKernels<k>.cu, which defines
// ZCC_KERNEL_SHARE): the kernels, launchKernel, and that file's share of
// the step kinds' instantiations.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDAKERNELS_CUH
#define ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDAKERNELS_CUH

#include "Executors/CUDA/CudaKernels.h"

#include <algorithm>
#include <array>
#include <type_traits>
#include <utility>
#include <variant>

namespace zcc::runtime::device::cuda {
namespace {

/// A warp's combination of its lanes' `value`: a butterfly, then lane 0's
/// result for all (lanes would otherwise hold sums in different orders).
template <typename T, typename Op> __device__ T warpReduce(T value, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1)
    value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return __shfl_sync(0xffffffffu, value, 0);
}

/// The block's combination of every thread's `value` in a fixed order (each
/// warp's, then the warps in order): every thread gets the same bits, run
/// after run. All threads of the block must call it.
template <typename T, typename Op> __device__ T blockReduce(T value, Op op) {
  value = warpReduce(value, op);
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

/// Groups of one warp each in a thread block.
constexpr int kWarpGroups = 8;

/// A group of threads over a row, its lanes striding over it together: a
/// thread block (blockReduce), or with `kWarp` one warp of a block holding
/// kWarpGroups of them, each on its own rows, so a short row (a norm's 768
/// elements) does not leave a whole block waiting on its barriers. A warp
/// reduces as blockReduce does with one warp, so a 32-lane group's bits do
/// not depend on the packing; __syncwarp orders the lanes' memory as
/// blockReduce's barriers do, and no block barrier is used, as the block's
/// warps run different rows.
template <bool kWarp> struct ThreadGroup {
  int64_t lane;
  int64_t lanes;
  template <typename T, typename Op>
  __host__ __device__ T reduce(T value, Op op) const {
#ifdef __CUDA_ARCH__
    if constexpr (kWarp) {
      __syncwarp();
      return warpReduce(value, op);
    } else {
      return blockReduce(value, op);
    }
#else
    return value; // never called on the host
#endif
  }
};

template <typename F> __global__ void warpGroupKernel(F f) {
  if (f.abort && *f.abort)
    return;
  ThreadGroup<true> group{static_cast<int64_t>(threadIdx.x & 31), 32};
  int64_t first = static_cast<int64_t>(blockIdx.x) * kWarpGroups +
                  (threadIdx.x >> 5);
  for (int64_t g = first; g < f.count;
       g += static_cast<int64_t>(gridDim.x) * kWarpGroups)
    f(g, group);
}

template <typename F> __global__ void elementKernel(F f) {
  if (f.abort && *f.abort)
    return;
  runElements(f, static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x,
              f.count, static_cast<int64_t>(gridDim.x) * blockDim.x);
}

constexpr int kElementThreads = 256;

/// At most 128 registers: two blocks per SM at least. A fused program's
/// run holds its operands' runs in registers (136 unbounded; 64 spills).
template <typename F>
__global__ void __launch_bounds__(kElementThreads, 2) runKernel(F f) {
  if (f.abort && *f.abort)
    return;
  runElementRuns(f, static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x,
                 static_cast<int64_t>(gridDim.x) * blockDim.x);
}

template <typename F> __global__ void groupKernel(F f) {
  if (f.abort && *f.abort)
    return;
  ThreadGroup<false> group{static_cast<int64_t>(threadIdx.x),
                           static_cast<int64_t>(blockDim.x)};
  for (int64_t g = blockIdx.x; g < f.count; g += gridDim.x)
    f(g, group);
}

constexpr int64_t kMaxBlocks = 1 << 16;

} // namespace

template <typename F> cudaError_t launchKernel(const F &f, cudaStream_t stream) {
  if constexpr (F::kGrouped) {
    if (f.groupThreads == 32) {
      int64_t needed = (f.count + kWarpGroups - 1) / kWarpGroups;
      unsigned blocks = static_cast<unsigned>(std::min(needed, kMaxBlocks));
      warpGroupKernel<F><<<blocks, 32 * kWarpGroups, 0, stream>>>(f);
    } else {
      unsigned blocks = static_cast<unsigned>(std::min(f.count, kMaxBlocks));
      groupKernel<F><<<blocks, f.groupThreads, 0, stream>>>(f);
    }
  } else if constexpr (HasRuns<F>::value) {
    int64_t needed = (runThreads(f.count) + kElementThreads - 1) / kElementThreads;
    unsigned blocks = static_cast<unsigned>(std::min(needed, kMaxBlocks));
    runKernel<F><<<blocks, kElementThreads, 0, stream>>>(f);
  } else {
    int64_t needed = (f.count + kElementThreads - 1) / kElementThreads;
    unsigned blocks = static_cast<unsigned>(std::min(needed, kMaxBlocks));
    elementKernel<F><<<blocks, kElementThreads, 0, stream>>>(f);
  }
  return cudaGetLastError();
}

#ifdef ZCC_KERNEL_SHARE
namespace {
/// Step kind I's launcher when it is a kernel of this file's share.
template <size_t I> const void *shareEntry() {
  using F = std::variant_alternative_t<I, Step>;
  if constexpr (std::is_base_of_v<Functor, F> &&
                I % kKernelShares == ZCC_KERNEL_SHARE)
    return reinterpret_cast<const void *>(&launchKernel<F>);
  else
    return nullptr;
}
template <size_t... I>
std::array<const void *, sizeof...(I)> shareEntries(std::index_sequence<I...>) {
  return {shareEntry<I>()...};
}
} // namespace

#define ZCC_SHARE_NAME_(k) kernelShare##k
#define ZCC_SHARE_NAME(k) ZCC_SHARE_NAME_(k)
/// Called by no one: being emitted, it emits this share's launchers.
std::array<const void *, std::variant_size_v<Step>> ZCC_SHARE_NAME(
    ZCC_KERNEL_SHARE)() {
  return shareEntries(std::make_index_sequence<std::variant_size_v<Step>>{});
}
#endif

} // namespace zcc::runtime::device::cuda

#endif // ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDAKERNELS_CUH
