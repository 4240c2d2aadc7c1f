//===- CpuKernels.h - reference kernels of the CPU executor -----*- C++ -*-===//
//
// One function per kernel of Kernels.h, over host memory. Float tensors hold
// `T`: float for the plan's f32, or double when the executor runs in the f64
// reference precision used by gradient checks. Integer tensors (labels,
// indices: i32 or i64; the step: i64) are stored as the plan says.
// Kernels never allocate (the step must not) and are deterministic: the
// same inputs give bit-identical outputs, whatever the buffers' addresses.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_RUNTIME_CPU_CPUKERNELS_H
#define ZCC_LIB_RUNTIME_CPU_CPUKERNELS_H

#include "zcc/Runtime/Kernels.h"
#include "zcc/Runtime/Plan.h"
#include "zcc/Runtime/Status.h"

#include <cstddef>

namespace zcc::runtime::cpu {

struct Operand {
  void *data = nullptr;
  const TensorType *type = nullptr;
};

/// One launch, already checked by checkLaunch: operand counts, dtypes,
/// shapes and parameters are valid. Outputs may alias inputs only where
/// kernelAllowsInPlace says so, and then exactly (same buffer).
struct KernelCall {
  KernelId id = KernelId::Copy;
  const Launch *launch = nullptr;
  const Operand *inputs = nullptr;
  size_t numInputs = 0;
  const Operand *outputs = nullptr;
  size_t numOutputs = 0;
};

/// Runs one launch. Fails (ExecutionError, naming the kernel, the operand and
/// the position) only on bad data: an embedding index or a label outside its
/// range. Never reads or writes outside the operands.
template <typename T> Status runKernel(const KernelCall &call);

extern template Status runKernel<float>(const KernelCall &call);
extern template Status runKernel<double>(const KernelCall &call);

} // namespace zcc::runtime::cpu

#endif // ZCC_LIB_RUNTIME_CPU_CPUKERNELS_H
