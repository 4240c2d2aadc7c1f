//===- NoCuda.cpp - createCudaBackend in a build without CUDA -------------===//

#include "Executors/Device/DeviceExecutor.h"

zcc::runtime::Status
zcc::runtime::device::createCudaBackend(int, LaunchMode, bool, Communicator *,
                                        std::unique_ptr<Backend> &) {
  return makeError(StatusCode::Unsupported,
                   "this zcc runtime was built without CUDA (configure with "
                   "-DZCC_ENABLE_CUDA=ON where nvcc is installed)");
}
