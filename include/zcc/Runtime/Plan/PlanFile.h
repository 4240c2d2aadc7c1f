//===- PlanFile.h - the .zplan file: write, read, verify --------*- C++ -*-===//
//
// The format is flatbuffers (include/zcc/Runtime/Plan/zplan.fbs): a PlanFile
// envelope with the format version and an FNV-1a checksum around the Plan
// body. Reading goes envelope -> version -> checksum -> flatbuffers verifier
// -> decode -> validatePlan, so a truncated, flipped or foreign file is an
// error naming the first check that failed, never a crash.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_PLANFILE_H
#define ZCC_RUNTIME_PLANFILE_H

#include "zcc/Runtime/Plan/Plan.h"
#include "zcc/Runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zcc::runtime {

/// The file's bytes. Deterministic: the same plan gives the same bytes.
std::vector<uint8_t> serializePlan(const Plan &plan);

/// Parses and fully validates a plan held in memory.
Status parsePlan(const uint8_t *data, size_t size, Plan &out);

/// Reads and fully validates `path`.
Status loadPlanFile(const std::string &path, Plan &out);

/// Writes `path` through a temporary file and a rename, so an existing plan
/// is never left half-written.
Status savePlanFile(const std::string &path, const Plan &plan);

/// The semantic checks a loaded plan must pass before anything runs
/// (PlanValidator.cpp): regions and bounds, persistent tensors, every
/// launch against its kernel's rules, buffer lifetimes derived from the
/// launches, and the independent overlap checker over each entry's arena.
Status validatePlan(const Plan &plan);

/// The envelope alone: wraps a serialized Plan body (a flatbuffer) with the
/// format version and its checksum, size-prefixed so a truncated file is
/// always detected.
std::vector<uint8_t> sealPlanBody(const uint8_t *body, size_t size);

/// Where the Plan body lies in a file whose envelope verifies (for tools and
/// tests that inspect or mutate bodies).
Status locatePlanBody(const uint8_t *data, size_t size, size_t &out_offset,
                      size_t &out_size);

/// FNV-1a, 64 bit: the plan body's checksum.
uint64_t fnv1a64(const uint8_t *data, size_t size);

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_PLANFILE_H
