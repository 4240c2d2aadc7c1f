//===- FuzzInputs.h - what the tensor file harnesses share -------*- C++ -*-===//
//
// The safetensors and .npz readers take a path (they read by offset, never
// the whole file): each input is written to an in-memory file (memfd) and
// opened through /proc/self/fd. A tensor a reader accepts must hold the
// bytes its shape and dtype state.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_TEST_FUZZ_FUZZINPUTS_H
#define ZCC_TEST_FUZZ_FUZZINPUTS_H

#include "zcc/Runtime/IO/HostTensor.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

class MemoryFile {
public:
  MemoryFile(const uint8_t *data, size_t size) {
    fd = memfd_create("zcc-fuzz", 0);
    if (fd < 0)
      std::abort();
    for (size_t done = 0; done < size;) {
      ssize_t n = write(fd, data + done, size - done);
      if (n <= 0)
        std::abort();
      done += static_cast<size_t>(n);
    }
  }
  ~MemoryFile() { close(fd); }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd); }

private:
  int fd = -1;
};

/// Aborts (a finding) unless every tensor's bytes match its shape.
inline void checkTensors(const std::vector<zcc::runtime::HostTensor> &tensors) {
  for (const zcc::runtime::HostTensor &t : tensors) {
    int64_t count = 1;
    for (int64_t d : t.shape)
      count *= d;
    if (static_cast<uint64_t>(count * zcc::runtime::dtypeBytes(t.dtype)) !=
        t.bytes.size())
      std::abort();
  }
}

#endif // ZCC_TEST_FUZZ_FUZZINPUTS_H
