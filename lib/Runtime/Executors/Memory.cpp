//===- Memory.cpp - counted, aligned host allocations ---------------------===//

#include "Executors/Memory.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

using namespace zcc::runtime;

bool zcc::runtime::availableHostMemory(uint64_t &bytes, const char *&source) {
  if (std::FILE *meminfo = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    bool found = false;
    while (!found && std::fgets(line, sizeof(line), meminfo)) {
      unsigned long long kib = 0;
      if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
        bytes = static_cast<uint64_t>(kib) * 1024;
        source = "MemAvailable in /proc/meminfo";
        found = true;
      }
    }
    std::fclose(meminfo);
    if (found)
      return true;
  }
  long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0)
    return false;
  bytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  source = "free pages (sysconf)";
  return true;
}

CountedAllocator::~CountedAllocator() {
  for (void *block : blocks)
    std::free(block);
}

Status CountedAllocator::allocate(size_t bytes, size_t alignment,
                                  const char *what, uint8_t *&out) {
  if (alignment < sizeof(void *))
    alignment = sizeof(void *);
  // aligned_alloc needs a size that is a multiple of the alignment.
  size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  if (rounded == 0)
    rounded = alignment;
  if (rounded < bytes)
    return makeError(StatusCode::OutOfMemory, what, ": ", bytes,
                     " bytes cannot be allocated (size overflow)");
  void *block = std::aligned_alloc(alignment, rounded);
  if (!block)
    return makeError(StatusCode::OutOfMemory, what, ": allocating ", bytes,
                     " bytes failed (", bytes_,
                     " bytes already held by this "
                     "session)");
  std::memset(block, 0, rounded);
  blocks.push_back(block);
  ++count_;
  bytes_ += rounded;
  out = static_cast<uint8_t *>(block);
  return Status::ok();
}
