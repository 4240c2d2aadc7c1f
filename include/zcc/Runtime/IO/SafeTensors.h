//===- SafeTensors.h - safetensors checkpoints ------------------*- C++ -*-===//
//
// Checkpoints are safetensors files: an 8-byte little-endian header length,
// a JSON header naming each tensor's dtype, shape and byte range, then the
// tensor data. zcc reads and writes the F32, I32 and I64 dtypes; any other
// dtype is refused by name rather than converted.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_SAFETENSORS_H
#define ZCC_RUNTIME_SAFETENSORS_H

#include "zcc/Runtime/IO/HostTensor.h"
#include "zcc/Runtime/Status.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zcc::runtime {

/// Largest JSON header a reader accepts (the reference implementation's
/// limit): a corrupt length must not turn into a huge allocation.
inline constexpr uint64_t kSafeTensorsMaxHeaderBytes = 100'000'000;

/// Writes `tensors` (data in the given order) and `metadata` (the header's
/// "__metadata__", left out when empty) to `path`. The file is written to
/// `path + ".tmp"`, flushed to disk and renamed over `path`, so a failed
/// write leaves any previous checkpoint at `path` intact. The same input
/// always gives the same bytes. Tensor names must be non-empty, unique,
/// valid UTF-8 and not "__metadata__"; each view's byte count must match its
/// shape.
Status writeSafeTensors(
    const std::string &path, const std::vector<HostTensorView> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata);

/// Reads every tensor of `path` into `out_tensors`, in the order of their
/// data in the file (the order they were written in), and the header's
/// "__metadata__" into `out_metadata` when it is not null. The file is
/// validated before any data is read: header length and JSON, dtypes, shapes
/// against byte ranges, ranges that must tile the data section exactly,
/// duplicate names. On error the outputs are left unchanged.
Status
readSafeTensors(const std::string &path, std::vector<HostTensor> &out_tensors,
                std::vector<std::pair<std::string, std::string>> *out_metadata);

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_SAFETENSORS_H
