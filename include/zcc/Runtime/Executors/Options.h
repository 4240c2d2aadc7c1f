//===- Options.h - how a session runs its plan -------------------*- C++ -*-===//
//
// The options a session hands its executor: the execution mode, the
// precision, the device and how it issues launches. Below the session
// (Session.h includes this), so an executor needs nothing of the session.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_EXECUTORS_OPTIONS_H
#define ZCC_RUNTIME_EXECUTORS_OPTIONS_H

#include "zcc/Runtime/Communicator.h"

#include <cstdint>
#include <memory>
#include <string_view>

namespace zcc::runtime {

enum class ExecutionMode {
  /// Buffers at their planned arena offsets (what production runs).
  Planned,
  /// Every arena buffer its own allocation: the no-reuse reference.
  NoReuse,
  /// Planned, and after each buffer's last use its bytes become NaN (and the
  /// whole arena before each step), so a read of a dead value cannot pass
  /// unnoticed.
  Poison,
};
const char *executionModeName(ExecutionMode mode);

enum class Precision {
  F32, // the plan's own types
  /// Float tensors computed in double, in the same layout scaled by two:
  /// the reference for finite-difference gradient checks.
  F64,
};

/// Where the launches run.
enum class DeviceKind {
  Cpu,  // the reference kernels over host memory
  Cuda, // an NVIDIA GPU: one CUDA graph per entry
  /// The CUDA executor's kernels and memory layout run on the host, one lane
  /// per group: tests the device path on machines without a GPU.
  Emulator,
};
const char *deviceKindName(DeviceKind kind);

/// How the CUDA executor issues an entry's kernels.
enum class LaunchMode {
  Graph, // captured once at load into a CUDA graph; one cudaGraphLaunch a step
  Eager, // the same kernels issued one by one on a stream every step
};
const char *launchModeName(LaunchMode mode);
const char *precisionName(Precision precision); // "f32", "f64"

/// The inverses of the *Name functions, for command lines and bindings:
/// false when `name` names none.
bool parseExecutionMode(std::string_view name, ExecutionMode &out);
bool parsePrecision(std::string_view name, Precision &out);
bool parseDeviceKind(std::string_view name, DeviceKind &out);
bool parseLaunchMode(std::string_view name, LaunchMode &out);

/// The share of the host's available memory a CPU session may hold.
inline constexpr double kDefaultHostMemoryFraction = 0.75;

struct SessionOptions {
  ExecutionMode mode = ExecutionMode::Planned;
  Precision precision = Precision::F32;
  /// Seeds the parameter initializers.
  uint64_t seed = 0;
  DeviceKind device = DeviceKind::Cpu;
  LaunchMode launch = LaunchMode::Graph;
  /// The CUDA device; -1: the rank's place among the job's ranks on its
  /// host (one GPU per rank), device 0 for a process alone.
  int deviceOrdinal = -1;
  /// Emulator: run each group kernel with the GPU's threads per group and
  /// its reduction order instead of one lane (slow; for tests).
  bool emulateGpuGroups = false;
  /// CPU executor: threads for the kernels, the caller's included (0: one
  /// per hardware thread). Results are the same for any number.
  int threads = 0;
  /// CPU executor: a plan needing more than this fraction of the memory the
  /// OS reports available fails at load (0 < f <= 1).
  double hostMemoryFraction = kDefaultHostMemoryFraction;
  /// The ranks of a data-parallel job (docs/distributed.md): a plan's
  /// all_reduce launches reduce over them, and the session checks at load
  /// that every rank runs the same plan and starts from rank 0's
  /// parameters. Null: a job of one rank.
  std::shared_ptr<Communicator> communicator;
};

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_EXECUTORS_OPTIONS_H
