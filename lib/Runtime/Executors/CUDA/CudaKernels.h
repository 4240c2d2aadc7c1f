//===- CudaKernels.h - launching the kernels of DeviceKernels.h -*- C++ -*-===//
//
// The CUDA backend launches each step's functor through launchKernel, which
// CudaKernels.cuh defines and its shares (CudaKernels0.cu, ...) instantiate:
// the kernels are compiled in several files at once rather than in one
// long one (CudaBackend.cu only declares it).
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDAKERNELS_H
#define ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDAKERNELS_H

#include "Kernels/DeviceProgram.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace zcc::runtime::device::cuda {

/// Files the step kinds' kernels are compiled in (CudaKernels<k>.cu): step
/// kind I of `Step` in file I % kKernelShares.
inline constexpr size_t kKernelShares = 4;

/// Launches `f` (a functor of DeviceKernels.h with a positive count) over
/// its grid on `stream`; the launch's error.
template <typename F> cudaError_t launchKernel(const F &f, cudaStream_t stream);

} // namespace zcc::runtime::device::cuda

#endif // ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDAKERNELS_H
