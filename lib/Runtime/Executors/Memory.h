//===- Memory.h - the runtime's only way to allocate -------------*- C++
//-*-===//
//
// Every region and buffer a session uses comes from here, and every call is
// counted: the count after load is the number the "zero allocations per
// step" guarantee is checked against.
//
//===----------------------------------------------------------------------===//

#ifndef ZCC_LIB_RUNTIME_MEMORY_H
#define ZCC_LIB_RUNTIME_MEMORY_H

#include "zcc/Runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace zcc::runtime {

/// The host memory a new allocation can take without swapping, as the OS
/// reports it: MemAvailable in /proc/meminfo (Linux), else the free pages;
/// `source` names which. False when neither can be read.
bool availableHostMemory(uint64_t &bytes, const char *&source);

class CountedAllocator {
public:
  CountedAllocator() = default;
  CountedAllocator(const CountedAllocator &) = delete;
  CountedAllocator &operator=(const CountedAllocator &) = delete;
  ~CountedAllocator();

  /// `bytes` bytes aligned to `alignment` (a power of two), zero-filled;
  /// owned by the allocator until it is destroyed. A zero-byte request gets
  /// a distinct valid pointer. `what` names the region in the error.
  Status allocate(size_t bytes, size_t alignment, const char *what,
                  uint8_t *&out);

  uint64_t count() const { return count_; }
  uint64_t bytes() const { return bytes_; }

private:
  std::vector<void *> blocks;
  uint64_t count_ = 0;
  uint64_t bytes_ = 0;
};

} // namespace zcc::runtime

#endif // ZCC_LIB_RUNTIME_MEMORY_H
