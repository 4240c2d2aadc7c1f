//===- CudaBlas.h - the CUDA executor's products on cuBLAS -------*- C++ -*-===//
//
// A cuBLAS handle (the library loaded with dlopen, CudaLibraries.h) bound to
// the stream a product is issued on, with the entry's planned workspace, so
// that cuBLAS allocates nothing during capture or replay.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDABLAS_H
#define ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDABLAS_H

#include "Executors/CUDA/CudaLibraries.h"
#include "Kernels/DeviceProgram.h"

#include <cuda_runtime.h>

#include <string>

namespace zcc::runtime::device {

class CudaBlas {
public:
  CudaBlas() = default;
  CudaBlas(const CudaBlas &) = delete;
  CudaBlas &operator=(const CudaBlas &) = delete;
  ~CudaBlas() { close(); }
  /// Destroys the handle (before its stream goes); idempotent.
  void close();

  /// Loads cuBLAS and makes its handle on `stream`, f32 math (no TF32).
  Status open(cudaStream_t stream);
  /// "cuBLAS 13.0.2 (libcublas.so.13)".
  const std::string &version() const { return api->version; }

  /// The handle on `stream` with `workspace` (setting a stream drops a
  /// user workspace, so both at once). The errors below are text, empty
  /// when the call succeeded: the launcher keeps the first.
  std::string bind(cudaStream_t stream, void *workspace, uint64_t bytes);
  std::string setWorkspace(void *workspace, uint64_t bytes);
  /// A product on the bound stream: f32, or bf16 operands summed in f32.
  std::string run(const Gemm &g);
  std::string run(const GemmBf16 &g);

private:
  std::string check(cublasStatus_t status, const char *what) const;

  const CublasApi *api = nullptr;
  cublasHandle_t handle = nullptr;
};

} // namespace zcc::runtime::device

#endif // ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDABLAS_H
