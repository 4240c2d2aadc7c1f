//===- Npz.h - NumPy .npy and .npz data files -------------------*- C++ -*-===//
//
// Training data arrives as NumPy files: a `.npy` holds one array, a `.npz`
// (np.savez / np.savez_compressed) is a zip archive of `.npy` members.
// zcc reads little-endian C-order float32, int32 and int64 arrays ('<f4',
// '<i4', '<i8'); any other dtype is refused by name with the fix (astype).
//
// Supported: .npy format versions 1.0, 2.0 and 3.0; zip members stored or
// deflated, with zip64 sizes and offsets (as numpy writes them); each
// member's CRC-32 is checked. Not supported, refused with a message:
// multi-disk and encrypted archives, other compression methods, members
// that are not `.npy` files, object/structured/Fortran-order arrays.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_RUNTIME_NPZ_H
#define ZCC_RUNTIME_NPZ_H

#include "zcc/Runtime/IO/HostTensor.h"
#include "zcc/Runtime/Status.h"

#include <string>
#include <vector>

namespace zcc::runtime {

/// Reads every array of the archive `path` into `out_tensors`, in the order
/// of the archive's central directory (the order np.savez wrote them); each
/// is named after its member without the `.npy` suffix. The archive is
/// validated before anything is allocated for it and no read leaves the
/// file's bounds. On error `out_tensors` is left unchanged.
Status readNpz(const std::string &path, std::vector<HostTensor> &out_tensors);

/// Reads the single array of the `.npy` file `path` into `out_tensor`, named
/// after the file's stem ("data/x.npy" -> "x"). On error `out_tensor` is
/// left unchanged.
Status readNpy(const std::string &path, HostTensor &out_tensor);

} // namespace zcc::runtime

#endif // ZCC_RUNTIME_NPZ_H
