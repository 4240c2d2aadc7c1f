//===- Plan.h - a loaded memory plan: regions, tensors, launches -*- C++
//-*-===//
//
// The in-memory form of a `.zplan` file (docs/plan-format.md). The runtime
// owns it: the compiler fills one of these and serializes it with
// PlanFile.h, the loader parses and validates it, executors run it. No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_PLAN_H
#define ZCC_RUNTIME_PLAN_H

#include "zcc/Runtime/Plan/Launch.h"
#include "zcc/Runtime/Plan/PlanEnums.h"
#include "zcc/Runtime/Plan/zplan_enums_generated.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zcc::runtime {

/// The plan file's format version. A reader accepts exactly this major
/// version; a new field that old readers may ignore does not bump it.
inline constexpr uint32_t kPlanFormatVersion = 1;

// The enums are the schema's (zplan_enums.fbs), as flatc generates them.
using DType = fb::DType;
using Region = fb::Region;
using EntryKind = fb::EntryKind;
using TensorRole = fb::TensorRole;
using InitKind = fb::InitKind;

const char *dtypeName(DType dtype);
int64_t dtypeBytes(DType dtype);
/// f32: the element type of every float tensor a session reads or writes.
inline bool isFloat(DType dtype) { return dtype == DType::F32; }
/// Either float type (f32, or bf16 in the arena).
inline bool isAnyFloat(DType dtype) {
  return dtype == DType::F32 || dtype == DType::BF16;
}
/// i32 or i64.
inline bool isIntegerDType(DType dtype) {
  return dtype == DType::I32 || dtype == DType::I64;
}
// regionName, entryKindName, tensorRoleName, phaseName and their parsers:
// PlanEnums.h, the one list of the names.

/// `first`/`second`: (value), (mean, std) or (low, high) by kind.
struct Initializer {
  InitKind kind = InitKind::Zeros;
  double first = 0;
  double second = 0;
};

struct TensorType {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t numElements() const;
  int64_t bytes() const { return numElements() * dtypeBytes(dtype); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
};
/// "32x784xf32" (MLIR's spelling, so messages match the compiler's).
std::string typeString(const TensorType &type);

/// A parameter, optimizer state or accumulator: one place in the persistent
/// region shared by every entry, filled once from its initializer.
struct PersistentTensor {
  std::string name;
  TensorType type;
  uint64_t offset = 0;
  Initializer init;
};

/// Bytes of one region an entry uses. Several tensors may share a buffer
/// (a reshape is a view of its operand's bytes).
struct Buffer {
  Region region = Region::Arena;
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct Tensor {
  std::string name; // empty for unnamed arena values
  TensorType type;
  uint32_t buffer = 0;
  TensorRole role = TensorRole::None;
  /// Empty: row-major in its buffer. Else one step per dimension, in
  /// elements: a broadcast read through strides (0 along a repeated
  /// dimension), which element kernels read, or a view that attention's
  /// kernels read and write (kernelTakesView: heads of a fused projection,
  /// an output written in the layout its reader wants).
  std::vector<int64_t> strides;
  /// A view's first element, in elements from its buffer's start.
  int64_t offset = 0;

  bool isStrided() const { return !strides.empty(); }
};

struct Entry {
  std::string name;
  EntryKind kind = EntryKind::TrainStep;
  uint64_t arenaSize = 0;   // bytes this entry's arena buffers need
  uint64_t lowerBound = 0;  // peak of live arena bytes, alignment counted
  uint64_t noReuseSize = 0; // bytes with every buffer its own place
  uint64_t inputSize = 0;
  uint64_t outputSize = 0;
  std::vector<Buffer> buffers;
  std::vector<Tensor> tensors;
  std::vector<Launch> launches;
  /// The entry's workspace: an arena buffer no tensor uses, live for the
  /// whole entry, that device executors give to cuBLAS and to kernels that
  /// need scratch (row statistics, per-row losses); -1 when there is none.
  /// The CPU executor does not use it. Sized by addWorkspaces (KernelRules.h).
  int32_t workspace = -1;

  /// Index of the tensor called `name` in `region`, or -1.
  int findTensor(std::string_view name, Region region) const;
  /// Per launch, the arena buffers it is the last to use (derived from the
  /// launch list): what poison mode clobbers after it.
  std::vector<std::vector<uint32_t>> arenaBuffersDyingAfter() const;
};

/// ZeRO-1: a persistent tensor holding this rank's shard of several
/// parameters' optimizer state (flattened, concatenated at `offsets`, zero
/// padded to `ranks` equal shards). A checkpoint holds it per parameter, as
/// `<parameter><suffix>`, the name unsharded training gives that state.
struct ShardedState {
  std::string name;
  std::string suffix;
  uint32_t ranks = 1;
  std::vector<std::string> params;
  std::vector<uint64_t> offsets;
};

struct Plan {
  uint64_t alignment = 256;
  uint64_t arenaSize = 0; // the largest entry arena: one allocation serves all
  uint64_t persistentSize = 0;
  uint64_t constantSize = 0;
  std::vector<PersistentTensor> persistent;
  std::vector<uint8_t> constants; // constantSize bytes
  std::vector<Entry> entries;
  /// Free text: the tool and options that made the plan, for reports.
  std::string producer;
  /// ZeRO-1's sharded optimizer state; empty otherwise.
  std::vector<ShardedState> sharded;

  int findEntry(std::string_view name) const;
  /// The ranks a ZeRO-1 plan's shards are for (its sharded state and its
  /// reduce_scatter, all_gather and shard launches); 0 when any number of
  /// ranks runs it.
  uint32_t worldSize() const;
  /// Whether some launch communicates between ranks (kernelCommunicates).
  bool communicates() const;
  /// The sharded state covering `name` (a parameter's name plus a state
  /// suffix, as checkpoints name it), with the parameter's index in it.
  const ShardedState *findShardedState(std::string_view name,
                                       size_t &param) const;
  int findPersistent(std::string_view name) const;
};

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_PLAN_H
