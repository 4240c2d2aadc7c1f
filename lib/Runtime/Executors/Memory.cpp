//===- Memory.cpp - counted, aligned host allocations ---------------------===//

#include "Executors/Memory.h"

#include <cstdlib>
#include <cstring>

using namespace zcc::runtime;

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
