//===- NpzFuzzer.cpp - libFuzzer: the .npz and .npy readers ---------------===//
//
// Any bytes, as an .npz archive and as one .npy array: an array or a
// status, never a crash, an out-of-bounds read or a huge allocation.
//
//===----------------------------------------------------------------------===//

#include "FuzzInputs.h"

#include "zcc/Runtime/IO/Npz.h"

using namespace zcc::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MemoryFile file(data, size);
  std::vector<HostTensor> tensors;
  if (readNpz(file.path(), tensors).isOk())
    checkTensors(tensors);
  HostTensor one;
  if (readNpy(file.path(), one).isOk())
    checkTensors({one});
  return 0;
}
