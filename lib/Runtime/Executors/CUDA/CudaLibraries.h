//===- CudaLibraries.h - the GPU libraries, loaded when needed ---*- C++ -*-===//
//
// cuBLAS and NCCL are loaded (dlopen) when a CUDA executor opens, never
// linked: a binary of the runtime runs on a machine with no GPU library at
// all (the CPU and emulator executors need none), and a process that also
// loads PyTorch uses one NCCL, the one loaded first. The CUDA runtime itself
// is linked statically; it finds the driver the same way. Each table holds
// the entry points this runtime calls, bound by their exported names.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDALIBRARIES_H
#define ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDALIBRARIES_H

#include "zcc/Runtime/Status.h"

#include <cublas_v2.h>
#ifdef ZCC_HAVE_NCCL
#include <nccl.h>
#endif

#include <string>

namespace zcc::runtime::device {

struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) setStream = nullptr;
  decltype(&cublasSetWorkspace_v2) setWorkspace = nullptr;
  decltype(&cublasSetMathMode) setMathMode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasSgemmStridedBatched) sgemmStridedBatched = nullptr;
  // C++ sees an inline overload too: the exported one, by its signature.
  cublasStatus_t (*gemmStridedBatchedEx)(
      cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
      const void *, const void *, cudaDataType, int, long long, const void *,
      cudaDataType, int, long long, const void *, void *, cudaDataType, int,
      long long, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  decltype(&cublasGetStatusName) statusName = nullptr;
  decltype(&cublasGetStatusString) statusString = nullptr;
  decltype(&cublasGetProperty) property = nullptr;
  /// "cuBLAS 13.0.2 (libcublas.so.13)".
  std::string version;
};

/// The process's cuBLAS (the toolkit's major version, on the library path
/// or already loaded), or the reason there is none; loaded once.
Status loadCublas(const CublasApi *&out);

#ifdef ZCC_HAVE_NCCL
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
/// loaded), or the reason there is none; loaded once.
Status loadNccl(const NcclApi *&out);
#endif

} // namespace zcc::runtime::device

#endif // ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDALIBRARIES_H
