//===- CudaNccl.h - the CUDA executor's collectives on NCCL ------*- C++ -*-===//
//
// A data-parallel plan's bucket reductions are NCCL collectives captured in
// the step's graph (NCCL supports capture since 2.9.6), on a communicator
// made at load; NCCL is loaded with dlopen (CudaLibraries.h). A job of one
// rank needs no NCCL: its collectives are the identity, or copies.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDANCCL_H
#define ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDANCCL_H

#include "Executors/CUDA/CudaLibraries.h"
#include "Kernels/DeviceProgram.h"

#include <cuda_runtime.h>

#include <string>

namespace zcc::runtime::device {

class CudaNccl {
public:
  CudaNccl() = default;
  CudaNccl(const CudaNccl &) = delete;
  CudaNccl &operator=(const CudaNccl &) = delete;
  ~CudaNccl() { close(); }
  /// Destroys the communicator; idempotent.
  void close();

  /// Joins the NCCL communicator of `comm`'s ranks (this process alone when
  /// null), one GPU each: rank 0's unique id goes to the others through
  /// `comm`. Every rank calls it. Without NCCL, one rank goes on (its
  /// collectives are copies) and several fail, saying why.
  Status open(Communicator *comm);
  /// ", NCCL 2.21.5 over 2 ranks", or empty without a communicator.
  const std::string &description() const { return described; }

  /// Issues `collective` on `stream`; an error text, empty when fine.
  std::string issue(const Collective &collective, cudaStream_t stream) const;

private:
#ifdef ZCC_HAVE_NCCL
  ncclComm_t comm = nullptr;
  const NcclApi *api = nullptr;
#endif
  std::string described;
};

} // namespace zcc::runtime::device

#endif // ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDANCCL_H
