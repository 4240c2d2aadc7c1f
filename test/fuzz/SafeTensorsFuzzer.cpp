//===- SafeTensorsFuzzer.cpp - libFuzzer: the safetensors reader ----------===//
//
// Any bytes: readSafeTensors returns tensors or a status; the tensors it
// accepts have byte counts their shapes and dtypes state, and write back.
//
//===----------------------------------------------------------------------===//

#include "FuzzInputs.h"

#include "zcc/Runtime/IO/SafeTensors.h"

using namespace zcc::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MemoryFile file(data, size);
  std::vector<HostTensor> tensors;
  std::vector<std::pair<std::string, std::string>> metadata;
  if (!readSafeTensors(file.path(), tensors, &metadata).isOk())
    return 0;
  checkTensors(tensors);
  return 0;
}
