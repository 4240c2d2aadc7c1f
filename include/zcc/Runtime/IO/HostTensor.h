//===- HostTensor.h - named tensors in host memory --------------*- C++ -*-===//
//
// What tensor files (safetensors checkpoints, .npy/.npz data) read into and
// write from. Bytes are little-endian and densely packed in C order, the
// layout every supported file format stores, so reading is a copy.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_HOSTTENSOR_H
#define ZCC_RUNTIME_HOSTTENSOR_H

#include "zcc/Runtime/Plan/Plan.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace zcc::runtime {

/// A tensor that owns its bytes: shape product x dtypeBytes(dtype) of them.
struct HostTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

/// A read-only view of a tensor owned elsewhere (a session's persistent
/// region, a HostTensor); `data` must stay valid while the view is used.
struct HostTensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void *data = nullptr;
  size_t bytes = 0;
};

inline HostTensorView viewOf(const HostTensor &tensor) {
  return HostTensorView{tensor.name, tensor.dtype, tensor.shape,
                        tensor.bytes.data(), tensor.bytes.size()};
}

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_HOSTTENSOR_H
