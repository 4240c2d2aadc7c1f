//===- CudaDnn.h - attention on cuDNN's fused SDPA ---------------*- C++ -*-===//
//
// The CUDA backend's lowering of zt.attention and zt.attention_grad with bf16
// operands to cuDNN's fused scaled-dot-product attention (flash attention:
// the probabilities never stored; the logsumexp kept for the gradient; a
// deterministic backward), through cudnn-frontend's graph API. cuDNN is
// loaded with dlopen the first time a plan has such a launch, never linked.
// A launch cuDNN cannot take (a mask or dropout: zcc draws its own Philox
// stream; f32; a shape no engine supports; no cuDNN) runs on the reference
// kernels, and the summary says which and why.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDADNN_H
#define ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDADNN_H

#include "Kernels/DeviceProgram.h"

#include "zcc/Runtime/Plan/Plan.h"

#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace zcc::runtime::device {

class CudaDnn {
public:
  /// Device memory for cuDNN's workspaces, allocated at load.
  using Allocate = std::function<Status(uint64_t bytes, uint8_t *&out)>;

  CudaDnn();
  ~CudaDnn();
  CudaDnn(const CudaDnn &) = delete;
  CudaDnn &operator=(const CudaDnn &) = delete;

  /// Lowers launch `index` of `entry` (attention or attention_grad) to a
  /// cuDNN call appended to `out`, returning true; or returns false (the
  /// caller runs the reference kernels), having noted why. An error only
  /// when the device memory for the workspace cannot be had.
  Status lowerAttention(const Entry &entry, size_t index,
                        const EntryMemory &memory, const Allocate &allocate,
                        std::vector<Step> &out, bool &lowered);

  /// "attention on cuDNN 9.19.0: 24 launches; reference kernels: 2 (a
  /// mask: ...)", or empty when the plan has no bf16 attention.
  std::string summary() const;

private:
  struct State;
  std::unique_ptr<State> state;
};

} // namespace zcc::runtime::device

#endif // ZCC_LIB_RUNTIME_EXECUTORS_CUDA_CUDADNN_H
